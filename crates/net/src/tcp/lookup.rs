//! Session lookup: from a connection's 4-tuple to its session id. IPv4 tuples go to a cuckoo
//! hash with two hash functions over 4-way buckets and a small stash (Limago's CuckooCAM),
//! sized at start-up, a full table reported to the caller, never a crash. IPv6 tuples (36
//! bytes, too wide for the cuckoo's one-word keys) go to a hash map with a randomly seeded
//! hasher ([`KeyedMap`]), so peers cannot aim collisions at it; the session table's size
//! bounds it.

use crate::int_hash::KeyedMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// How much longer an IPv6 header is than an IPv4 one without options (IPv6 connections'
/// MSS is that much smaller).
pub(crate) const IPV6_EXTRA: usize = 20;

/// A connection's 4-tuple: our address and port, the peer's address and port. Both
/// addresses are of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// Our port.
    pub local_port: u16,
    /// The peer's address.
    pub remote_ip: IpAddr,
    /// The peer's port.
    pub remote_port: u16,
    /// Our address (IPv4: the host's; IPv6: the one the peer wrote to, or the one chosen
    /// for it on an active open).
    pub local_ip: IpAddr,
}

impl Default for FourTuple {
    fn default() -> Self {
        FourTuple::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0, SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0))
    }
}

impl FourTuple {
    /// The tuple from `local_ip:local_port` to `remote`.
    pub fn new(local_ip: IpAddr, local_port: u16, remote: SocketAddr) -> Self {
        FourTuple { local_port, remote_ip: remote.ip(), remote_port: remote.port(), local_ip }
    }

    /// The peer's address and port.
    pub fn remote(&self) -> SocketAddr {
        SocketAddr::new(self.remote_ip, self.remote_port)
    }

    /// True for an IPv6 connection.
    #[inline]
    pub fn is_v6(&self) -> bool {
        self.remote_ip.is_ipv6()
    }

    /// An IPv4 tuple packed into one key (the host has one IPv4 address, so ours is left
    /// out); IPv6 tuples have no such key.
    #[inline]
    pub fn key(&self) -> u64 {
        let remote = match self.remote_ip {
            IpAddr::V4(a) => a,
            IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
        };
        v4_key(remote, self.remote_port, self.local_port)
    }
}

/// An address of one family as the receive path takes it: generic so that IPv4's path does
/// no family checks (no `IpAddr` matches in the checksum or the lookup).
pub trait SegAddr: wire::checksum::PseudoHeader + Into<IpAddr> {
    /// The session of the segment from `remote:remote_port` to `local:local_port`.
    fn find(lookup: &SessionLookup, local: Self, local_port: u16, remote: Self, remote_port: u16) -> Option<u32>;
}

impl SegAddr for Ipv4Addr {
    #[inline]
    fn find(lookup: &SessionLookup, _local: Self, local_port: u16, remote: Self, remote_port: u16) -> Option<u32> {
        lookup.v4.get_key(v4_key(remote, remote_port, local_port))
    }
}

impl SegAddr for Ipv6Addr {
    #[inline]
    fn find(lookup: &SessionLookup, local: Self, local_port: u16, remote: Self, remote_port: u16) -> Option<u32> {
        let t = FourTuple { local_port, remote_ip: remote.into(), remote_port, local_ip: local.into() };
        lookup.v6.get(&t).copied()
    }
}

/// The cuckoo key of the IPv4 tuple from `local_port` to `remote:remote_port`.
#[inline]
fn v4_key(remote: Ipv4Addr, remote_port: u16, local_port: u16) -> u64 {
    (u32::from(remote) as u64) << 32 | (remote_port as u64) << 16 | local_port as u64
}

/// Session ids by 4-tuple, for both families.
#[derive(Debug)]
pub struct SessionLookup {
    v4: CuckooTable,
    v6: KeyedMap<FourTuple, u32>,
}

impl SessionLookup {
    /// Room for `capacity` IPv4 sessions (the cuckoo's buckets hashed with `seed`).
    pub fn new(capacity: usize, seed: u64) -> Self {
        SessionLookup { v4: CuckooTable::new(capacity, seed), v6: KeyedMap::default() }
    }

    /// Bytes of memory the lookup occupies.
    pub fn memory_bytes(&self) -> usize {
        self.v4.memory_bytes() + self.v6.capacity() * (std::mem::size_of::<(FourTuple, u32)>() + 1)
    }

    /// The session id stored for `t`.
    #[inline]
    pub fn get(&self, t: &FourTuple) -> Option<u32> {
        match t.remote_ip {
            IpAddr::V4(r) => self.v4.get_key(v4_key(r, t.remote_port, t.local_port)),
            IpAddr::V6(_) => self.get_v6(t),
        }
    }

    /// [`SessionLookup::get`] of an IPv6 tuple (out of line, so IPv4's lookups inline).
    #[inline(never)]
    fn get_v6(&self, t: &FourTuple) -> Option<u32> {
        self.v6.get(t).copied()
    }

    /// The session id of the segment from `remote:remote_port` to `local:local_port`: as
    /// [`SessionLookup::get`], without building a [`FourTuple`] for IPv4 (the receive path's
    /// lookup, monomorphised per family).
    #[inline]
    pub fn find<A: SegAddr>(&self, local: A, local_port: u16, remote: A, remote_port: u16) -> Option<u32> {
        A::find(self, local, local_port, remote, remote_port)
    }

    /// Store `t -> id`, replacing an existing entry for `t`.
    pub fn insert(&mut self, t: &FourTuple, id: u32) -> Result<(), TableFull> {
        if t.is_v6() {
            self.v6.insert(*t, id);
            return Ok(());
        }
        self.v4.insert(t, id)
    }

    /// Remove `t`; returns its id.
    #[inline]
    pub fn remove(&mut self, t: &FourTuple) -> Option<u32> {
        match t.remote_ip {
            IpAddr::V4(r) => self.v4.remove_key(v4_key(r, t.remote_port, t.local_port)),
            IpAddr::V6(_) => self.remove_v6(t),
        }
    }

    /// [`SessionLookup::remove`] of an IPv6 tuple (out of line, so IPv4's inline).
    #[inline(never)]
    fn remove_v6(&mut self, t: &FourTuple) -> Option<u32> {
        self.v6.remove(t)
    }
}

const WAYS: usize = 4;
const STASH: usize = 16;
const MAX_KICKS: usize = 256;
const FREE: u32 = u32::MAX;

/// The table is full: the key could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFull;

/// Cuckoo hash map from IPv4 [`FourTuple`] keys to session ids.
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

    /// The session id stored for `t` (the tests' way in; the lookup goes by key).
    #[cfg(test)]
    pub fn get(&self, t: &FourTuple) -> Option<u32> {
        self.get_key(t.key())
    }

    /// The session id stored under `key` (a [`FourTuple::key`]).
    #[inline]
    fn get_key(&self, key: u64) -> Option<u32> {
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

    /// Remove `t`; returns its id (the tests' way in; the engine goes by key).
    #[cfg(test)]
    pub fn remove(&mut self, t: &FourTuple) -> Option<u32> {
        self.remove_key(t.key())
    }

    /// Remove `key` (a [`FourTuple::key`]); returns its id.
    #[inline]
    fn remove_key(&mut self, key: u64) -> Option<u32> {
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
        let remote = SocketAddr::new(Ipv4Addr::from(0x0a00_0000 + (i >> 8)).into(), (i & 0xff) as u16 + 1000);
        FourTuple::new(Ipv4Addr::new(10, 9, 9, 9).into(), 80, remote)
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

    #[test]
    fn ipv6_tuples_are_kept_apart_from_ipv4_ones_and_by_our_address() {
        let mut l = SessionLookup::new(8, 3);
        let peer6: IpAddr = "fd77::1".parse().unwrap();
        let (a, b): (IpAddr, IpAddr) = ("fd77::2".parse().unwrap(), "fe80::2".parse().unwrap());
        let v6a = FourTuple::new(a, 80, SocketAddr::new(peer6, 5000));
        let v6b = FourTuple::new(b, 80, SocketAddr::new(peer6, 5000));
        l.insert(&t(7), 1).unwrap();
        l.insert(&v6a, 2).unwrap();
        l.insert(&v6b, 3).unwrap();
        assert_eq!((l.get(&t(7)), l.get(&v6a), l.get(&v6b)), (Some(1), Some(2), Some(3)));
        assert_eq!(l.remove(&v6a), Some(2));
        assert_eq!((l.get(&t(7)), l.get(&v6a), l.get(&v6b)), (Some(1), None, Some(3)));
    }
}
