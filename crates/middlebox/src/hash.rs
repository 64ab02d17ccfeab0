//! The load balancer's symmetric flow hash: both directions of a TCP/UDP conversation get the
//! same value, so a hash policy sends them to the same unit.
//!
//! IPv4 frames hash (address, port) endpoints sorted, plus the protocol; ports are used for
//! TCP and UDP when the packet is not a non-first fragment. Other frames hash the two MAC
//! addresses sorted. Any byte string is accepted: short or malformed frames hash what is there.

/// Murmur3's 64-bit finalizer: a cheap, well-mixing bijection.
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Offset of the network header and the EtherType after up to two VLAN tags.
fn l3(frame: &[u8]) -> Option<(usize, u16)> {
    let mut off = 12;
    let mut et = be16(frame, off)?;
    for _ in 0..2 {
        if et == 0x8100 || et == 0x88a8 {
            off += 4;
            et = be16(frame, off)?;
        }
    }
    Some((off + 2, et))
}

/// Symmetric 5-tuple hash of an IPv4 frame, `None` if it is not a complete IPv4 header.
fn ipv4_hash(frame: &[u8], off: usize) -> Option<u32> {
    let ip = frame.get(off..)?;
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let proto = ip[9];
    let src = be32(ip, 12)?;
    let dst = be32(ip, 16)?;
    let frag_off = be16(ip, 6)? & 0x1fff;
    let (mut sp, mut dp) = (0u16, 0u16);
    if (proto == 6 || proto == 17) && frag_off == 0 && ihl >= 20 {
        if let (Some(s), Some(d)) = (be16(ip, ihl), be16(ip, ihl + 2)) {
            (sp, dp) = (s, d);
        }
    }
    Some(mix_endpoints(src, sp, dst, dp, proto))
}

/// The hash of two sorted endpoints and a protocol (the value [`ipv4_hash`] returns).
#[inline]
fn mix_endpoints(src: u32, sp: u16, dst: u32, dp: u16, proto: u8) -> u32 {
    let a = (u64::from(src) << 16) | u64::from(sp);
    let b = (u64::from(dst) << 16) | u64::from(dp);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let h = fmix64(lo ^ fmix64(hi ^ (u64::from(proto) << 56)));
    (h ^ (h >> 32)) as u32
}

/// The common case read at fixed offsets: an untagged IPv4 frame with a 20-byte header,
/// carrying TCP or UDP, not a non-first fragment, long enough for the ports. `None` for
/// anything else (the general path then decides); the value equals the general path's.
#[inline]
fn fast_ipv4(frame: &[u8]) -> Option<u32> {
    let h: &[u8; 38] = frame.get(..38)?.try_into().ok()?;
    let frag_off = u16::from_be_bytes([h[20], h[21]]) & 0x1fff;
    if h[12] != 0x08 || h[13] != 0x00 || h[14] != 0x45 || (h[23] != 6 && h[23] != 17) || frag_off != 0 {
        return None;
    }
    let src = u32::from_be_bytes([h[26], h[27], h[28], h[29]]);
    let dst = u32::from_be_bytes([h[30], h[31], h[32], h[33]]);
    let sp = u16::from_be_bytes([h[34], h[35]]);
    let dp = u16::from_be_bytes([h[36], h[37]]);
    Some(mix_endpoints(src, sp, dst, dp, h[23]))
}

/// The symmetric flow hash of a frame.
#[inline]
pub fn flow_hash(frame: &[u8]) -> u32 {
    if let Some(h) = fast_ipv4(frame) {
        return h;
    }
    slow_hash(frame)
}

/// Every frame the fast path does not take: VLAN tags, IP options, other protocols,
/// fragments, non-IPv4 and malformed frames.
#[inline(never)]
fn slow_hash(frame: &[u8]) -> u32 {
    if let Some((off, 0x0800)) = l3(frame) {
        if let Some(h) = ipv4_hash(frame, off) {
            return h;
        }
    }
    let mac = |at: usize| -> u64 {
        frame.get(at..at + 6).map_or(0, |m| m.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    };
    let (a, b) = (mac(0), mac(6));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let h = fmix64(lo ^ fmix64(hi));
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: [u8; 4], dst: [u8; 4], sp: u16, dp: u16) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[23] = 6;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sp.to_be_bytes());
        f[36..38].copy_from_slice(&dp.to_be_bytes());
        f
    }

    #[test]
    fn symmetric_and_spread() {
        let a = tcp([10, 0, 0, 1], [10, 0, 0, 2], 1234, 80);
        let b = tcp([10, 0, 0, 2], [10, 0, 0, 1], 80, 1234);
        assert_eq!(flow_hash(&a), flow_hash(&b));
        let c = tcp([10, 0, 0, 1], [10, 0, 0, 2], 1235, 80);
        assert_ne!(flow_hash(&a), flow_hash(&c));
        // Spread over 8 buckets.
        let mut buckets = [0u32; 8];
        for p in 0..8000u16 {
            buckets[(flow_hash(&tcp([10, 0, 0, 1], [10, 0, 0, 2], 1000 + p, 80)) % 8) as usize] += 1;
        }
        assert!(buckets.iter().all(|&n| (800..1200).contains(&n)), "{buckets:?}");
    }

    #[test]
    fn fast_path_equals_the_general_path() {
        for (p, proto) in [(1u16, 6u8), (2, 17), (3, 6)] {
            let mut f = tcp([10, 0, 0, 1], [10, 0, 0, 2], 1000 + p, 80);
            f[23] = proto;
            assert!(fast_ipv4(&f).is_some());
            assert_eq!(fast_ipv4(&f), Some(slow_hash(&f)));
            // A non-first fragment hashes without ports on both paths.
            f[20] = 0x00;
            f[21] = 0x10;
            assert_eq!(fast_ipv4(&f), None);
            assert_eq!(flow_hash(&f), slow_hash(&f));
            let mut g = f.clone();
            g[34..38].copy_from_slice(&[0, 9, 0, 9]);
            assert_eq!(flow_hash(&f), flow_hash(&g));
        }
    }

    #[test]
    fn any_bytes_hash_without_panic() {
        for len in 0..80 {
            let f: Vec<u8> = (0..len as u8).collect();
            flow_hash(&f);
            let mut t = tcp([1, 2, 3, 4], [5, 6, 7, 8], 1, 2);
            t.truncate(len.min(t.len()));
            flow_hash(&t);
        }
    }
}
