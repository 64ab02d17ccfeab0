//! Initial sequence numbers per RFC 6528: ISN = M + F(4-tuple, secret), with M a 4 µs clock
//! and F a keyed hash (SipHash-2-4, from the `siphasher` crate).

use super::lookup::FourTuple;
use link::Instant;
use std::net::Ipv4Addr;

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

    /// The ISN for a connection from `local` to the tuple's peer at time `now`.
    pub fn isn(&self, local: Ipv4Addr, t: &FourTuple, now: Instant) -> u32 {
        let mut d = [0u8; 12];
        d[..4].copy_from_slice(&local.octets());
        d[4..6].copy_from_slice(&t.local_port.to_be_bytes());
        d[6..10].copy_from_slice(&t.remote_ip.octets());
        d[10..12].copy_from_slice(&t.remote_port.to_be_bytes());
        let m = (now.as_nanos() / 4_000) as u32;
        m.wrapping_add(siphash24(self.key, &d) as u32)
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
        let t = FourTuple { local_port: 1, remote_ip: Ipv4Addr::new(10, 0, 0, 2), remote_port: 2 };
        let u = FourTuple { remote_port: 3, ..t };
        let me = Ipv4Addr::new(10, 0, 0, 1);
        assert_ne!(g.isn(me, &t, Instant::ZERO), g.isn(me, &u, Instant::ZERO));
        assert_eq!(g.isn(me, &t, Instant::from_micros(400)).wrapping_sub(g.isn(me, &t, Instant::ZERO)), 100);
    }
}
