//! Hashers for the stack's maps, cheaper than the standard SipHash, which showed up in every
//! poll of a busy-polling service.
//!
//! - [`IntMap`], for small integer keys the application chooses (listening ports, write ids):
//!   rustc's Fx hash (the `rustc-hash` crate: one multiply per word), unkeyed, so never for keys
//!   a peer picks. Against the hand-written multiply hasher it replaced: 1.1 ns vs 1.9 ns per
//!   u16 key (medians of 5 alternated runs, loaded machine).
//! - [`KeyedMap`], for keys a peer picks (IPv6 session tuples, neighbour and path-MTU
//!   addresses): `foldhash`'s fast hasher (the one `hashbrown` uses by default), seeded at
//!   random per process and per map, so a peer cannot aim collisions at a bucket without
//!   knowing the seed. SipHash cost about 640 instructions per IPv6 session lookup (a 36-byte
//!   tuple); this is several times less.

use std::collections::HashMap;

/// The hasher (rustc's Fx hash).
pub type IntHasher = rustc_hash::FxHasher;

/// A `HashMap` with [`IntHasher`].
pub type IntMap<K, V> = HashMap<K, V, rustc_hash::FxBuildHasher>;

/// A `HashMap` for keys a peer picks: `foldhash`, randomly seeded (see the module docs).
pub type KeyedMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn consecutive_ports_spread_over_buckets_and_the_map_works() {
        let b = rustc_hash::FxBuildHasher;
        let low: std::collections::HashSet<u64> = (0u16..1024).map(|p| b.hash_one(p) & 1023).collect();
        assert!(low.len() > 600, "only {} of 1024 low-bit patterns", low.len());
        let mut m: IntMap<u16, u32> = IntMap::default();
        for p in 0..5000u16 {
            m.insert(p, u32::from(p) * 3);
        }
        assert!((0..5000u16).all(|p| m[&p] == u32::from(p) * 3));
    }
}
