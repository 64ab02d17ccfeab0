//! Which of `n` shards (one stack per core) owns a flow: a symmetric hash of the two
//! endpoints, so both directions of a connection, and both hosts of a pair running the same
//! number of shards, agree without talking. The receive side steers frames with
//! [`shard_of_frame`]; a stack opening a connection picks a source port whose flow hashes to
//! itself ([`shard_of`]), as mTCP and F-Stack do with the NIC's RSS key.

use std::net::Ipv4Addr;

/// The shard of the flow between `(a_ip, a_port)` and `(b_ip, b_port)`, in `0..n` (either
/// endpoint may be given first; `n == 0` counts as 1).
pub fn shard_of(a_ip: Ipv4Addr, a_port: u16, b_ip: Ipv4Addr, b_port: u16, n: u16) -> u16 {
    if n <= 1 {
        return 0;
    }
    let a = (u64::from(u32::from(a_ip)) << 16) | u64::from(a_port);
    let b = (u64::from(u32::from(b_ip)) << 16) | u64::from(b_port);
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    // A multiply-xorshift mix of the ordered pair (good spread, a few instructions).
    let mut x = lo.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ hi.rotate_left(29);
    x ^= x >> 32;
    x = x.wrapping_mul(0xd6e8_feb8_6659_fd93);
    x ^= x >> 32;
    ((x as u32 as u64 * u64::from(n)) >> 32) as u16
}

/// Where a received Ethernet frame goes among `n` shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameShard {
    /// One shard owns it.
    One(u16),
    /// Every shard needs it (ARP: each shard keeps its own neighbour cache).
    All,
}

/// The shard of a received frame: TCP and UDP by their four-tuple, IPv4 fragments and other
/// IPv4 protocols by the two addresses (ports 0), ARP to all, anything else to shard 0.
pub fn shard_of_frame(frame: &[u8], n: u16) -> FrameShard {
    if n <= 1 || frame.len() < 14 {
        return FrameShard::One(0);
    }
    match u16::from_be_bytes([frame[12], frame[13]]) {
        0x0806 => FrameShard::All,
        0x0800 => {
            let ip = &frame[14..];
            if ip.len() < 20 {
                return FrameShard::One(0);
            }
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
            let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            let ported = matches!(ip[9], 6 | 17) && !fragment && ip.len() >= ihl + 4 && ihl >= 20;
            let (sp, dp) = if ported {
                (u16::from_be_bytes([ip[ihl], ip[ihl + 1]]), u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]))
            } else {
                (0, 0)
            };
            FrameShard::One(shard_of(src, sp, dst, dp, n))
        }
        _ => FrameShard::One(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_in_range_and_spread() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut counts = [0u32; 4];
        for p in 40000..44000u16 {
            let s = shard_of(a, p, b, 80, 4);
            assert_eq!(s, shard_of(b, 80, a, p, 4));
            counts[s as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        assert_eq!(shard_of(a, 1, b, 2, 1), 0);
        assert_eq!(shard_of(a, 1, b, 2, 0), 0);
    }

    #[test]
    fn frames_are_steered_by_their_flow() {
        let mut f = vec![0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = 6;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&40001u16.to_be_bytes());
        f[36..38].copy_from_slice(&80u16.to_be_bytes());
        let want = shard_of(Ipv4Addr::new(10, 0, 0, 1), 40001, Ipv4Addr::new(10, 0, 0, 2), 80, 2);
        assert_eq!(shard_of_frame(&f, 2), FrameShard::One(want));
        f[20] = 0x20; // more fragments: by addresses only
        let by_ip = shard_of(Ipv4Addr::new(10, 0, 0, 1), 0, Ipv4Addr::new(10, 0, 0, 2), 0, 2);
        assert_eq!(shard_of_frame(&f, 2), FrameShard::One(by_ip));
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(shard_of_frame(&f, 2), FrameShard::All);
        assert_eq!(shard_of_frame(&f[..10], 2), FrameShard::One(0));
    }
}
