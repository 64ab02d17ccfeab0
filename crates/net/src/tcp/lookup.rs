//! Session lookup: a cuckoo hash from the connection 4-tuple to a session id, with two hash
//! functions over 4-way buckets and a small stash (Limago's CuckooCAM). Sized at start-up; a
//! full table is reported to the caller, never a crash.

use std::net::Ipv4Addr;

/// The part of a connection's 4-tuple that varies (the local address is the stack's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// Our port.
    pub local_port: u16,
    /// The peer's address.
    pub remote_ip: Ipv4Addr,
    /// The peer's port.
    pub remote_port: u16,
}

impl Default for FourTuple {
    fn default() -> Self {
        FourTuple { local_port: 0, remote_ip: Ipv4Addr::UNSPECIFIED, remote_port: 0 }
    }
}

impl FourTuple {
    /// The tuple packed into one key.
    #[inline]
    pub fn key(&self) -> u64 {
        (u32::from(self.remote_ip) as u64) << 32 | (self.remote_port as u64) << 16 | self.local_port as u64
    }
}

const WAYS: usize = 4;
const STASH: usize = 16;
const MAX_KICKS: usize = 256;
const FREE: u32 = u32::MAX;

/// The table is full: the key could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFull;

/// Cuckoo hash map from [`FourTuple`] keys to session ids.
#[derive(Debug)]
pub struct CuckooTable {
    keys: Box<[u64]>,
    vals: Box<[u32]>,
    mask: usize,
    stash: Vec<(u64, u32)>,
    seeds: [u64; 2],
    len: usize,
    kick_rng: u64,
}

#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl CuckooTable {
    /// A table for at least `capacity` entries (buckets sized for ~70% load), hashed with `seed`.
    pub fn new(capacity: usize, seed: u64) -> Self {
        let slots = (capacity.max(1) * 10 / 7 + WAYS).next_power_of_two();
        let buckets = (slots / WAYS).max(2);
        CuckooTable {
            keys: vec![0; buckets * WAYS].into_boxed_slice(),
            vals: vec![FREE; buckets * WAYS].into_boxed_slice(),
            mask: buckets - 1,
            stash: Vec::with_capacity(STASH),
            seeds: [mix(seed ^ 0x9e37_79b9_7f4a_7c15), mix(seed ^ 0x6a09_e667_f3bc_c909)],
            len: 0,
            kick_rng: seed | 1,
        }
    }

    #[cfg(test)]
    /// Entries stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of memory the table occupies.
    pub fn memory_bytes(&self) -> usize {
        self.keys.len() * 12 + STASH * 16
    }

    #[inline]
    fn bucket(&self, key: u64, which: usize) -> usize {
        (mix(key ^ self.seeds[which]) as usize & self.mask) * WAYS
    }

    #[inline]
    fn find_slot(&self, key: u64) -> Option<usize> {
        for which in 0..2 {
            let b = self.bucket(key, which);
            for s in b..b + WAYS {
                if self.vals[s] != FREE && self.keys[s] == key {
                    return Some(s);
                }
            }
        }
        None
    }

    /// The session id stored for `t`.
    #[inline]
    pub fn get(&self, t: &FourTuple) -> Option<u32> {
        let key = t.key();
        if let Some(s) = self.find_slot(key) {
            return Some(self.vals[s]);
        }
        self.stash.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// Store `t -> id`, replacing an existing entry for `t`.
    pub fn insert(&mut self, t: &FourTuple, id: u32) -> Result<(), TableFull> {
        let key = t.key();
        if let Some(s) = self.find_slot(key) {
            self.vals[s] = id;
            return Ok(());
        }
        if let Some(e) = self.stash.iter_mut().find(|(k, _)| *k == key) {
            e.1 = id;
            return Ok(());
        }
        for which in 0..2 {
            let b = self.bucket(key, which);
            if let Some(s) = (b..b + WAYS).find(|&s| self.vals[s] == FREE) {
                self.keys[s] = key;
                self.vals[s] = id;
                self.len += 1;
                return Ok(());
            }
        }
        self.insert_by_kicking(key, id)
    }

    /// Displace entries along a random walk; on failure the homeless entry goes to the stash,
    /// and if the stash is full every displacement is undone.
    fn insert_by_kicking(&mut self, key: u64, id: u32) -> Result<(), TableFull> {
        let mut path: Vec<usize> = Vec::with_capacity(MAX_KICKS);
        let (mut k, mut v) = (key, id);
        let mut b = self.bucket(k, 0);
        for _ in 0..MAX_KICKS {
            self.kick_rng ^= self.kick_rng << 13;
            self.kick_rng ^= self.kick_rng >> 7;
            self.kick_rng ^= self.kick_rng << 17;
            let s = b + (self.kick_rng as usize % WAYS);
            std::mem::swap(&mut self.keys[s], &mut k);
            std::mem::swap(&mut self.vals[s], &mut v);
            path.push(s);
            let (b0, b1) = (self.bucket(k, 0), self.bucket(k, 1));
            let alt = if b0 == b { b1 } else { b0 };
            if let Some(free) = (alt..alt + WAYS).find(|&s| self.vals[s] == FREE) {
                self.keys[free] = k;
                self.vals[free] = v;
                self.len += 1;
                return Ok(());
            }
            b = alt;
        }
        if self.stash.len() < STASH {
            self.stash.push((k, v));
            self.len += 1;
            return Ok(());
        }
        for &s in path.iter().rev() {
            std::mem::swap(&mut self.keys[s], &mut k);
            std::mem::swap(&mut self.vals[s], &mut v);
        }
        debug_assert_eq!((k, v), (key, id));
        Err(TableFull)
    }

    /// Remove `t`; returns its id.
    pub fn remove(&mut self, t: &FourTuple) -> Option<u32> {
        let key = t.key();
        if let Some(s) = self.find_slot(key) {
            self.len -= 1;
            return Some(std::mem::replace(&mut self.vals[s], FREE));
        }
        let pos = self.stash.iter().position(|(k, _)| *k == key)?;
        self.len -= 1;
        Some(self.stash.swap_remove(pos).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn t(i: u32) -> FourTuple {
        FourTuple {
            local_port: 80,
            remote_ip: Ipv4Addr::from(0x0a00_0000 + (i >> 8)),
            remote_port: (i & 0xff) as u16 + 1000,
        }
    }

    #[test]
    fn holds_its_capacity_and_agrees_with_a_hashmap() {
        let n = 65_536;
        let mut c = CuckooTable::new(n, 42);
        let mut reference = HashMap::new();
        for i in 0..n as u32 {
            c.insert(&t(i), i).expect("fits at the configured capacity");
            reference.insert(t(i), i);
        }
        assert_eq!(c.len(), n);
        for i in (0..n as u32).step_by(3) {
            assert_eq!(c.remove(&t(i)), reference.remove(&t(i)));
        }
        for i in 0..n as u32 + 100 {
            assert_eq!(c.get(&t(i)), reference.get(&t(i)).copied(), "key {i}");
        }
        assert_eq!(c.len(), reference.len());
    }

    #[test]
    fn full_table_is_reported_and_loses_nothing() {
        let mut c = CuckooTable::new(8, 1);
        let mut stored = vec![];
        for i in 0..10_000u32 {
            match c.insert(&t(i), i) {
                Ok(()) => stored.push(i),
                Err(TableFull) => break,
            }
        }
        assert!(stored.len() >= 8 && stored.len() < 10_000);
        for &i in &stored {
            assert_eq!(c.get(&t(i)), Some(i));
        }
    }
}
