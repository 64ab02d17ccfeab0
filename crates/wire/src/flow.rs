//! Which of `n` shards (one stack per core) owns a flow: a symmetric hash of the two
//! endpoints, so both directions of a connection, and both hosts of a pair running the same
//! number of shards, agree without talking. The receive side steers frames with
//! [`shard_of_frame`]; a stack opening a connection picks a source port whose flow hashes to
//! itself ([`shard_of`]), as mTCP and F-Stack do with the NIC's RSS key.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The shard of the flow between `(a_ip, a_port)` and `(b_ip, b_port)`, in `0..n` (either
/// endpoint may be given first; `n == 0` counts as 1).
pub fn shard_of(a_ip: Ipv4Addr, a_port: u16, b_ip: Ipv4Addr, b_port: u16, n: u16) -> u16 {
    let a = (u64::from(u32::from(a_ip)) << 16) | u64::from(a_port);
    let b = (u64::from(u32::from(b_ip)) << 16) | u64::from(b_port);
    mix_pair(a, b, n)
}

/// [`shard_of`] for an IPv6 flow.
pub fn shard_of6(a_ip: Ipv6Addr, a_port: u16, b_ip: Ipv6Addr, b_port: u16, n: u16) -> u16 {
    mix_pair(fold6(a_ip, a_port), fold6(b_ip, b_port), n)
}

/// An IPv6 endpoint folded into 64 bits: the address's two halves mixed, the port beside.
fn fold6(ip: Ipv6Addr, port: u16) -> u64 {
    let bits = ip.to_bits();
    let folded = (bits >> 64) as u64 ^ (bits as u64).rotate_left(17);
    (folded << 16) ^ (folded >> 48) ^ u64::from(port)
}

/// The shard in `0..n` of the unordered pair of endpoint keys `a` and `b`.
fn mix_pair(a: u64, b: u64, n: u16) -> u16 {
    if n <= 1 {
        return 0;
    }
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

/// The shard of a received frame: TCP and UDP by their four-tuple, fragments and other
/// protocols by the two addresses (ports 0), ARP and IPv6 Neighbor Discovery to all (each
/// shard keeps its own neighbour cache), anything else to shard 0.
pub fn shard_of_frame(frame: &[u8], n: u16) -> FrameShard {
    if n <= 1 || frame.len() < 14 {
        return FrameShard::One(0);
    }
    let ip = &frame[14..];
    match u16::from_be_bytes([frame[12], frame[13]]) {
        0x0806 => FrameShard::All,
        0x0800 if ip.len() >= 20 => {
            let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
            let (sp, dp) = ports4(ip).unwrap_or((0, 0));
            FrameShard::One(shard_of(src, sp, dst, dp, n))
        }
        0x86dd if ip.len() >= 40 => {
            let addr = |at: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&ip[at..at + 16]).unwrap_or([0; 16]));
            match upper6(ip) {
                Upper6::NeighborDiscovery => FrameShard::All,
                Upper6::Ported(sp, dp) => FrameShard::One(shard_of6(addr(8), sp, addr(24), dp, n)),
                Upper6::Other => FrameShard::One(shard_of6(addr(8), 0, addr(24), 0, n)),
            }
        }
        _ => FrameShard::One(0),
    }
}

/// The source and destination ports of an unfragmented TCP or UDP frame of either family
/// (IPv6 through up to four hop-by-hop, routing or destination-options headers).
pub fn ports_of_frame(frame: &[u8]) -> Option<(u16, u16)> {
    if frame.len() < 14 {
        return None;
    }
    let ip = &frame[14..];
    match u16::from_be_bytes([frame[12], frame[13]]) {
        0x0800 => ports4(ip),
        0x86dd => match upper6(ip) {
            Upper6::Ported(sp, dp) => Some((sp, dp)),
            _ => None,
        },
        _ => None,
    }
}

/// The ports of an unfragmented IPv4 TCP or UDP packet.
fn ports4(ip: &[u8]) -> Option<(u16, u16)> {
    if ip.len() < 20 || !matches!(ip[9], 6 | 17) {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    if fragment || ihl < 20 || ip.len() < ihl + 4 {
        return None;
    }
    Some((u16::from_be_bytes([ip[ihl], ip[ihl + 1]]), u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]])))
}

/// What an IPv6 packet carries, as far as steering cares.
enum Upper6 {
    /// TCP or UDP, unfragmented, with these ports.
    Ported(u16, u16),
    /// A Neighbor Discovery message (router/neighbour solicitation or advertisement, redirect).
    NeighborDiscovery,
    /// Anything else (fragments, ICMPv6 other than ND, other protocols, long header chains).
    Other,
}

/// Walk the IPv6 header chain of `ip` (at most four extension headers) to its upper layer.
fn upper6(ip: &[u8]) -> Upper6 {
    if ip.len() < 40 {
        return Upper6::Other;
    }
    let (mut next, mut at) = (ip[6], 40);
    for _ in 0..=4 {
        match next {
            6 | 17 if ip.len() >= at + 4 => {
                let port = |i: usize| u16::from_be_bytes([ip[i], ip[i + 1]]);
                return Upper6::Ported(port(at), port(at + 2));
            }
            58 if ip.len() > at && (133..=137).contains(&ip[at]) => return Upper6::NeighborDiscovery,
            0 | 43 | 60 if ip.len() >= at + 2 => {
                next = ip[at];
                at += (usize::from(ip[at + 1]) + 1) * 8;
            }
            _ => return Upper6::Other,
        }
    }
    Upper6::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that `shard(port, reversed)` (4 shards, a flow from `port` to 80, or its reverse
    /// direction) is the same both ways and spreads 4,000 ports evenly.
    fn assert_symmetric_and_spread(shard: impl Fn(u16, bool) -> u16) {
        let mut counts = [0u32; 4];
        for p in 40000..44000u16 {
            let s = shard(p, false);
            assert_eq!(s, shard(p, true));
            counts[s as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
    }

    #[test]
    fn symmetric_in_range_and_spread() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        assert_symmetric_and_spread(|p, rev| if rev { shard_of(b, 80, a, p, 4) } else { shard_of(a, p, b, 80, 4) });
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

    /// An IPv6 frame from fd00::1 to fd00::2 carrying `next` then `upper`.
    fn frame6(next: u8, upper: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[20] = next;
        f[22..38].copy_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        f[38..54].copy_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(upper);
        f
    }

    #[test]
    fn ipv6_flows_are_steered_by_their_four_tuple_and_neighbor_discovery_goes_to_all() {
        let (a, b): (Ipv6Addr, Ipv6Addr) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
        assert_symmetric_and_spread(|p, rev| if rev { shard_of6(b, 80, a, p, 4) } else { shard_of6(a, p, b, 80, 4) });
        let tcp = [&40001u16.to_be_bytes()[..], &80u16.to_be_bytes(), &[0; 16]].concat();
        let want = FrameShard::One(shard_of6(a, 40001, b, 80, 4));
        assert_eq!(shard_of_frame(&frame6(6, &tcp), 4), want);
        assert_eq!(ports_of_frame(&frame6(17, &tcp)), Some((40001, 80)));
        // Behind a hop-by-hop header (8 bytes) the same flow.
        let hbh = [&[6u8, 0, 1, 4, 0, 0, 0, 0][..], &tcp].concat();
        assert_eq!(shard_of_frame(&frame6(0, &hbh), 4), want);
        // A fragment: by the addresses only.
        let frag = [&[6u8, 0, 0, 1, 0, 0, 0, 9][..], &tcp].concat();
        assert_eq!(shard_of_frame(&frame6(44, &frag), 4), FrameShard::One(shard_of6(a, 0, b, 0, 4)));
        assert_eq!(ports_of_frame(&frame6(44, &frag)), None);
        for nd in 133..=137u8 {
            assert_eq!(shard_of_frame(&frame6(58, &[nd, 0, 0, 0]), 4), FrameShard::All);
        }
        assert_eq!(shard_of_frame(&frame6(58, &[128, 0, 0, 0]), 4), FrameShard::One(shard_of6(a, 0, b, 0, 4)));
        // Truncated: never a panic.
        for len in 0..frame6(0, &hbh).len() {
            let _ = shard_of_frame(&frame6(0, &hbh)[..len], 4);
            let _ = ports_of_frame(&frame6(0, &hbh)[..len]);
        }
    }
}
