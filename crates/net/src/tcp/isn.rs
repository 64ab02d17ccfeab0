//! Initial sequence numbers per RFC 6528: ISN = M + F(4-tuple, secret), with M a 4 µs clock
//! and F a keyed hash (SipHash-2-4, from the `siphasher` crate).

use super::lookup::FourTuple;
use link::Instant;
use std::net::IpAddr;

/// SipHash-2-4 of `data` under the 128-bit key `k`, from the `siphasher` crate. Measured
/// against the hand-written version it replaced (medians of 5 alternated runs of 2·10⁷
/// hashes, loaded machine): 23 ns vs 36 ns for the ISN's 12 bytes, 39 ns vs 47 ns for a
/// SYN cookie's 25 bytes.
#[inline]
pub fn siphash24(k: [u64; 2], data: &[u8]) -> u64 {
    siphasher::sip::SipHasher24::new_with_keys(k[0], k[1]).hash(data)
}

/// Generates initial sequence numbers from a secret key.
#[derive(Debug, Clone)]
pub struct IsnGenerator {
    key: [u64; 2],
}

impl IsnGenerator {
    /// A generator with secret `key`.
    pub fn new(key: [u64; 2]) -> Self {
        IsnGenerator { key }
    }

    /// The ISN for the connection of tuple `t` at time `now`.
    pub fn isn(&self, t: &FourTuple, now: Instant) -> u32 {
        let m = (now.as_nanos() / 4_000) as u32;
        let f = if let (IpAddr::V4(local), IpAddr::V4(remote)) = (t.local_ip, t.remote_ip) {
            // IPv4, the common case, with the 12 bytes of `tuple_bytes` built in place.
            let mut d = [0u8; 12];
            d[..4].copy_from_slice(&local.octets());
            d[4..6].copy_from_slice(&t.local_port.to_be_bytes());
            d[6..10].copy_from_slice(&remote.octets());
            d[10..].copy_from_slice(&t.remote_port.to_be_bytes());
            siphash24(self.key, &d)
        } else {
            let mut d = [0u8; 36];
            let n = tuple_bytes(t, &mut d);
            siphash24(self.key, &d[..n])
        };
        m.wrapping_add(f as u32)
    }
}

/// The tuple's addresses and ports as bytes for a keyed hash (ours first): 12 bytes for IPv4,
/// 36 for IPv6. Returns the length written.
pub(crate) fn tuple_bytes(t: &FourTuple, d: &mut [u8; 36]) -> usize {
    let a = put_ip(t.local_ip, d, 0);
    d[a..a + 2].copy_from_slice(&t.local_port.to_be_bytes());
    let b = put_ip(t.remote_ip, d, a + 2);
    d[b..b + 2].copy_from_slice(&t.remote_port.to_be_bytes());
    b + 2
}

/// Write `ip`'s octets at `d[at..]`; returns where they end.
fn put_ip(ip: IpAddr, d: &mut [u8; 36], at: usize) -> usize {
    match ip {
        IpAddr::V4(v4) => {
            d[at..at + 4].copy_from_slice(&v4.octets());
            at + 4
        }
        IpAddr::V6(v6) => {
            d[at..at + 16].copy_from_slice(&v6.octets());
            at + 16
        }
    }
}

/// 16 random bytes for a secret key, from the kernel (falls back to the clock if unavailable).
pub fn random_key() -> [u64; 2] {
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).is_ok();
    if !ok {
        let t = Instant::now().as_nanos();
        return [t ^ 0x5851_f42d_4c95_7f2d, t.rotate_left(29) ^ std::process::id() as u64];
    }
    [u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])), u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siphash_matches_the_reference_vector() {
        // Reference implementation's test vector: key 00..0f, message 00..0e (15 bytes).
        let key = [u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]), u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15])];
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(key, &msg), 0xa129_ca61_49be_45e5);
        assert_eq!(siphash24(key, &[]), 0x726f_db47_dd0e_0e31);
    }

    #[test]
    fn isn_depends_on_tuple_and_advances_with_time() {
        let g = IsnGenerator::new([1, 2]);
        let me = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
        let t = FourTuple::new(me, 1, "10.0.0.2:2".parse().unwrap());
        let u = FourTuple { remote_port: 3, ..t };
        assert_ne!(g.isn(&t, Instant::ZERO), g.isn(&u, Instant::ZERO));
        assert_eq!(g.isn(&t, Instant::from_micros(400)).wrapping_sub(g.isn(&t, Instant::ZERO)), 100);
        let v6 = FourTuple::new("fd77::2".parse().unwrap(), 1, "[fd77::1]:2".parse().unwrap());
        let other = FourTuple { local_ip: "fd77::3".parse().unwrap(), ..v6 };
        assert_ne!(g.isn(&v6, Instant::ZERO), g.isn(&other, Instant::ZERO));
    }

    #[test]
    fn ipv4_isn_hashes_the_same_bytes_as_tuple_bytes() {
        let g = IsnGenerator::new([7, 9]);
        let t = FourTuple::new(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1)), 4321, "10.0.0.2:80".parse().unwrap());
        let mut d = [0u8; 36];
        let n = tuple_bytes(&t, &mut d);
        assert_eq!(n, 12);
        assert_eq!(g.isn(&t, Instant::ZERO), siphash24([7, 9], &d[..n]) as u32);
    }
}
