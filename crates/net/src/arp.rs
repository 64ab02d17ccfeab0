//! The ARP cache and the resolution state of addresses being looked up.

use link::Instant;
use std::cell::Cell;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;
use wire::MacAddr;

/// Learned IPv4 -> MAC mappings with expiry, bounded in size.
#[derive(Debug)]
pub struct ArpCache {
    entries: HashMap<Ipv4Addr, (MacAddr, Instant)>,
    capacity: usize,
    ttl: Duration,
    /// The entry of the last successful lookup (most traffic goes to one next hop): spares
    /// the keyed hash of every send. Cleared whenever the entries change.
    last: Cell<Option<(Ipv4Addr, MacAddr, Instant)>>,
}

impl ArpCache {
    /// A cache of at most `capacity` entries, each valid for `ttl` after it was learned.
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        ArpCache { entries: HashMap::with_capacity(capacity), capacity, ttl, last: Cell::new(None) }
    }

    /// The MAC for `ip` if known and not expired.
    pub fn lookup(&self, ip: Ipv4Addr, now: Instant) -> Option<MacAddr> {
        if let Some((last_ip, mac, expires)) = self.last.get() {
            if last_ip == ip && now < expires {
                return Some(mac);
            }
        }
        match self.entries.get(&ip) {
            Some(&(mac, expires)) if now < expires => {
                self.last.set(Some((ip, mac, expires)));
                Some(mac)
            }
            _ => None,
        }
    }

    /// True if `ip` has an entry (expired or not).
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.entries.contains_key(&ip)
    }

    /// Learn or refresh `ip -> mac`. When full, the entry closest to expiry is evicted.
    pub fn insert(&mut self, ip: Ipv4Addr, mac: MacAddr, now: Instant) {
        self.last.set(None);
        if !self.entries.contains_key(&ip) && self.entries.len() >= self.capacity {
            self.expire(now);
            if self.entries.len() >= self.capacity {
                if let Some(oldest) = self.entries.iter().min_by_key(|(_, (_, e))| *e).map(|(ip, _)| *ip) {
                    self.entries.remove(&oldest);
                }
            }
        }
        self.entries.insert(ip, (mac, now + self.ttl));
    }

    /// Remove expired entries.
    pub fn expire(&mut self, now: Instant) {
        self.last.set(None);
        self.entries.retain(|_, (_, expires)| now < *expires);
    }

    #[cfg(test)]
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    /// True if the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries as (ip, mac, expiry).
    pub fn entries(&self) -> impl Iterator<Item = (Ipv4Addr, MacAddr, Instant)> + '_ {
        self.entries.iter().map(|(ip, (mac, e))| (*ip, *mac, *e))
    }
}

/// Addresses whose resolution is under way: how often we asked and when to ask again.
#[derive(Debug, Default)]
pub struct Resolver {
    in_flight: HashMap<Ipv4Addr, (u32, Instant)>,
}

/// What the resolver wants done for one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveAction {
    /// Send an ARP request for the address.
    Request(Ipv4Addr),
    /// Give up: drop the packets waiting for the address.
    GiveUp(Ipv4Addr),
}

impl Resolver {
    /// Start resolving `ip` unless already under way; true if a request should go out now.
    pub fn start(&mut self, ip: Ipv4Addr, now: Instant, retry: Duration) -> bool {
        if self.in_flight.contains_key(&ip) {
            return false;
        }
        self.in_flight.insert(ip, (1, now + retry));
        true
    }

    /// Resolution of `ip` finished (learned).
    pub fn done(&mut self, ip: Ipv4Addr) {
        self.in_flight.remove(&ip);
    }

    #[cfg(test)]
    /// True if nothing is being resolved.
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }

    /// Earliest time something is due.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.in_flight.is_empty() {
            return None; // the common case, checked without walking the table's groups
        }
        self.in_flight.values().map(|(_, t)| *t).min()
    }

    /// Retries and give-ups due at `now`, appended to `out`.
    pub fn due(&mut self, now: Instant, retry: Duration, max_tries: u32, out: &mut Vec<ResolveAction>) {
        self.in_flight.retain(|ip, (tries, next)| {
            if now < *next {
                return true;
            }
            if *tries >= max_tries {
                out.push(ResolveAction::GiveUp(*ip));
                return false;
            }
            *tries += 1;
            *next = now + retry;
            out.push(ResolveAction::Request(*ip));
            true
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    #[test]
    fn entries_expire() {
        let mut c = ArpCache::new(4, Duration::from_secs(1));
        c.insert(IP, MAC, Instant::ZERO);
        assert_eq!(c.lookup(IP, Instant::from_millis(999)), Some(MAC));
        assert_eq!(c.lookup(IP, Instant::from_millis(1000)), None);
        c.expire(Instant::from_millis(1000));
        assert!(c.is_empty());
    }

    #[test]
    fn full_cache_evicts_oldest() {
        let mut c = ArpCache::new(2, Duration::from_secs(10));
        c.insert(Ipv4Addr::new(10, 0, 0, 1), MAC, Instant::from_millis(1));
        c.insert(Ipv4Addr::new(10, 0, 0, 2), MAC, Instant::from_millis(2));
        c.insert(Ipv4Addr::new(10, 0, 0, 3), MAC, Instant::from_millis(3));
        assert_eq!(c.len(), 2);
        assert!(!c.contains(Ipv4Addr::new(10, 0, 0, 1)));
    }

    #[test]
    fn resolver_retries_then_gives_up() {
        let mut r = Resolver::default();
        let retry = Duration::from_millis(100);
        assert!(r.start(IP, Instant::ZERO, retry));
        assert!(!r.start(IP, Instant::ZERO, retry));
        let mut out = vec![];
        r.due(Instant::from_millis(50), retry, 2, &mut out);
        assert!(out.is_empty());
        r.due(Instant::from_millis(100), retry, 2, &mut out);
        assert_eq!(out, vec![ResolveAction::Request(IP)]);
        out.clear();
        r.due(Instant::from_millis(200), retry, 2, &mut out);
        assert_eq!(out, vec![ResolveAction::GiveUp(IP)]);
        assert!(r.is_empty());
    }
}
