//! Initial sequence numbers per RFC 6528: ISN = M + F(4-tuple, secret), with M a 4 µs clock
//! and F a keyed hash (SipHash-2-4, written here from its specification).

use super::lookup::FourTuple;
use link::Instant;
use std::net::Ipv4Addr;

/// SipHash-2-4 of `data` under the 128-bit key `k`.
pub fn siphash24(k: [u64; 2], data: &[u8]) -> u64 {
    let mut v = [
        k[0] ^ 0x736f_6d65_7073_6575,
        k[1] ^ 0x646f_7261_6e64_6f6d,
        k[0] ^ 0x6c79_6765_6e65_7261,
        k[1] ^ 0x7465_6462_7974_6573,
    ];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let rest = chunks.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
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
