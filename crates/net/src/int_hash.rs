//! A hasher for small integer keys the application chooses (listening ports): one multiply
//! instead of SipHash, which showed up in every poll of a busy-polling service. Not for keys
//! an attacker picks (those tables keep the standard, keyed hasher).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Odd multiplier (2^64 / golden ratio): spreads consecutive keys over all bits.
const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// The hasher: the key times a 64-bit odd constant (the golden ratio), mixed so that low and high bits both vary.
#[derive(Debug, Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(K);
    }
}

/// A `HashMap` with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn consecutive_ports_spread_over_buckets_and_the_map_works() {
        let b = BuildHasherDefault::<IntHasher>::default();
        let low: std::collections::HashSet<u64> = (0u16..1024).map(|p| b.hash_one(p) & 1023).collect();
        assert!(low.len() > 600, "only {} of 1024 low-bit patterns", low.len());
        let mut m: IntMap<u16, u32> = IntMap::default();
        for p in 0..5000u16 {
            m.insert(p, u32::from(p) * 3);
        }
        assert!((0..5000u16).all(|p| m[&p] == u32::from(p) * 3));
    }
}
