//! The neighbour cache of Neighbor Discovery (RFC 4861 section 7.3): IPv6 -> MAC with the
//! reachability states INCOMPLETE, REACHABLE, STALE, DELAY and PROBE, bounded in size.
//!
//! The cache only decides; the caller sends what [`NdAction`]s ask for. What a neighbour
//! flood can make it hold is bounded by `NdpConfig::cache_size`: a new entry beyond it evicts
//! the entry used least recently (an unresolved one only when nothing else is left).

use super::config::NdpConfig;
use crate::int_hash::KeyedMap;
use link::Instant;
use std::net::Ipv6Addr;
use std::time::Duration;
use wire::MacAddr;

/// How long an unused STALE entry is kept before it is forgotten (Linux's gc_stale_time).
const STALE_LIFETIME: Duration = Duration::from_secs(60);

/// The reachability state of a neighbour (RFC 4861 section 7.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborState {
    /// Resolution under way: solicitations sent, no link-layer address yet.
    Incomplete,
    /// Confirmed reachable recently.
    Reachable,
    /// Not confirmed recently; usable, confirmed when traffic goes to it.
    Stale,
    /// Used while stale: a probe follows unless something confirms it first.
    Delay,
    /// Being probed with unicast solicitations.
    Probe,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    mac: MacAddr,
    state: NeighborState,
    /// When the state's timer fires (retransmit, REACHABLE -> STALE, DELAY -> PROBE, GC).
    deadline: Instant,
    /// Solicitations sent in INCOMPLETE or PROBE.
    tries: u32,
    /// Last use or update, for eviction.
    touched: Instant,
    router: bool,
}

/// What the cache asks the caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdAction {
    /// Multicast a solicitation for the address (to its solicited-node group).
    SolicitMulticast(Ipv6Addr),
    /// Unicast a solicitation to the neighbour at the MAC.
    SolicitUnicast(Ipv6Addr, MacAddr),
    /// Resolution failed: drop the packets waiting for the address.
    GiveUp(Ipv6Addr),
}

/// The result of an advertisement for a cached neighbour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvertOutcome {
    /// Nothing cached for the target: the advertisement is ignored (RFC 4861 7.2.5).
    NoEntry,
    /// The entry was updated or confirmed.
    Updated,
    /// An unresolved neighbour is now known: send what waits for it.
    Resolved(MacAddr),
}

/// Neighbour cache of one interface.
#[derive(Debug)]
pub struct NeighborCache {
    entries: KeyedMap<Ipv6Addr, Entry>,
    capacity: usize,
    /// No deadline of any entry is earlier than this (a lower bound, tightened by `due`).
    next_due: Option<Instant>,
    /// Entries evicted to make room.
    pub evicted: u64,
}

impl NeighborCache {
    /// A cache of at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        NeighborCache { entries: KeyedMap::default(), capacity: capacity.max(1), next_due: None, evicted: 0 }
    }

    /// Entries cached.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The state and MAC of `ip`, if cached (the MAC is zero while INCOMPLETE).
    pub fn get(&self, ip: Ipv6Addr) -> Option<(NeighborState, MacAddr)> {
        self.entries.get(&ip).map(|e| (e.state, e.mac))
    }

    /// Every entry as (address, MAC, state, is a router).
    pub fn entries(&self) -> impl Iterator<Item = (Ipv6Addr, MacAddr, NeighborState, bool)> + '_ {
        self.entries.iter().map(|(ip, e)| (*ip, e.mac, e.state, e.router))
    }

    /// The MAC to send to `ip` now, if known; sending to a STALE neighbour starts DELAY
    /// (RFC 4861 7.3.3).
    pub fn lookup_for_send(&mut self, ip: Ipv6Addr, now: Instant, cfg: &NdpConfig) -> Option<MacAddr> {
        let e = self.entries.get_mut(&ip)?;
        e.touched = now;
        match e.state {
            NeighborState::Incomplete => None,
            NeighborState::Stale => {
                e.state = NeighborState::Delay;
                e.deadline = now + cfg.delay_first_probe;
                let mac = e.mac;
                self.wake_at(now + cfg.delay_first_probe);
                Some(mac)
            }
            _ => Some(e.mac),
        }
    }

    /// Start resolving `ip` (a new INCOMPLETE entry); true if a solicitation should go now,
    /// false if resolution is already under way or the entry exists.
    pub fn start(&mut self, ip: Ipv6Addr, now: Instant, cfg: &NdpConfig) -> bool {
        if self.entries.contains_key(&ip) {
            return false;
        }
        self.insert(ip, MacAddr::ZERO, NeighborState::Incomplete, now + cfg.retrans_timer, now);
        if let Some(e) = self.entries.get_mut(&ip) {
            e.tries = 1;
        }
        true
    }

    /// A solicitation (or router message) from `ip` carried its link-layer address `mac`
    /// (RFC 4861 7.2.3): create or update the entry as STALE when the address is new or
    /// changed. Returns the MAC if an INCOMPLETE entry got resolved.
    pub fn on_link_addr(&mut self, ip: Ipv6Addr, mac: MacAddr, now: Instant) -> Option<MacAddr> {
        match self.entries.get_mut(&ip) {
            None => {
                self.insert(ip, mac, NeighborState::Stale, now + STALE_LIFETIME, now);
                None
            }
            Some(e) => {
                let was_incomplete = e.state == NeighborState::Incomplete;
                e.touched = now;
                if was_incomplete || e.mac != mac {
                    e.mac = mac;
                    e.state = NeighborState::Stale;
                    e.deadline = now + STALE_LIFETIME;
                    e.tries = 0;
                }
                was_incomplete.then_some(mac)
            }
        }
    }

    /// An advertisement for `target` (RFC 4861 7.2.5).
    pub fn on_advert(
        &mut self,
        target: Ipv6Addr,
        tlla: Option<MacAddr>,
        flags: AdvertFlags,
        now: Instant,
        cfg: &NdpConfig,
    ) -> AdvertOutcome {
        let Some(e) = self.entries.get_mut(&target) else { return AdvertOutcome::NoEntry };
        e.touched = now;
        if e.state == NeighborState::Incomplete {
            let Some(mac) = tlla else { return AdvertOutcome::Updated };
            e.mac = mac;
            e.router = flags.router;
            e.tries = 0;
            if flags.solicited {
                e.state = NeighborState::Reachable;
                e.deadline = now + cfg.reachable_time;
            } else {
                e.state = NeighborState::Stale;
                e.deadline = now + STALE_LIFETIME;
            }
            let d = e.deadline;
            self.wake_at(d);
            return AdvertOutcome::Resolved(mac);
        }
        let changed = tlla.is_some_and(|m| m != e.mac);
        if !flags.override_ && changed {
            // A different address without the override flag: do not take it, but the old
            // one is no longer confirmed.
            if e.state == NeighborState::Reachable {
                e.state = NeighborState::Stale;
                e.deadline = now + STALE_LIFETIME;
            }
            return AdvertOutcome::Updated;
        }
        if let Some(mac) = tlla {
            e.mac = mac;
        }
        e.router = flags.router;
        if flags.solicited {
            e.state = NeighborState::Reachable;
            e.deadline = now + cfg.reachable_time;
            e.tries = 0;
        } else if changed {
            e.state = NeighborState::Stale;
            e.deadline = now + STALE_LIFETIME;
        }
        let d = e.deadline;
        self.wake_at(d);
        AdvertOutcome::Updated
    }

    /// Forget `ip`.
    pub fn remove(&mut self, ip: Ipv6Addr) {
        self.entries.remove(&ip);
    }

    /// Run the timers due at `now`, appending what to send or give up to `out`.
    pub fn due(&mut self, now: Instant, cfg: &NdpConfig, out: &mut Vec<NdAction>) {
        if self.next_due.is_none_or(|t| t > now) {
            return;
        }
        let mut next: Option<Instant> = None;
        self.entries.retain(|ip, e| {
            if e.deadline > now {
                next = Some(next.map_or(e.deadline, |n| n.min(e.deadline)));
                return true;
            }
            let keep = match e.state {
                NeighborState::Incomplete if e.tries >= cfg.max_multicast_solicit => {
                    out.push(NdAction::GiveUp(*ip));
                    false
                }
                NeighborState::Incomplete => {
                    e.tries += 1;
                    e.deadline = now + cfg.retrans_timer;
                    out.push(NdAction::SolicitMulticast(*ip));
                    true
                }
                NeighborState::Reachable => {
                    e.state = NeighborState::Stale;
                    e.deadline = now + STALE_LIFETIME;
                    true
                }
                NeighborState::Stale => false,
                NeighborState::Delay => {
                    e.state = NeighborState::Probe;
                    e.tries = 1;
                    e.deadline = now + cfg.retrans_timer;
                    out.push(NdAction::SolicitUnicast(*ip, e.mac));
                    true
                }
                NeighborState::Probe if e.tries >= cfg.max_unicast_solicit => false,
                NeighborState::Probe => {
                    e.tries += 1;
                    e.deadline = now + cfg.retrans_timer;
                    out.push(NdAction::SolicitUnicast(*ip, e.mac));
                    true
                }
            };
            if keep {
                next = Some(next.map_or(e.deadline, |n| n.min(e.deadline)));
            }
            keep
        });
        self.next_due = next;
    }

    /// Earliest instant a timer may be due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.next_due
    }

    fn wake_at(&mut self, t: Instant) {
        self.next_due = Some(self.next_due.map_or(t, |n| n.min(t)));
    }

    fn insert(&mut self, ip: Ipv6Addr, mac: MacAddr, state: NeighborState, deadline: Instant, now: Instant) {
        if self.entries.len() >= self.capacity {
            self.evict_one();
        }
        self.entries.insert(ip, Entry { mac, state, deadline, tries: 0, touched: now, router: false });
        self.wake_at(deadline);
    }

    /// Evict the entry used least recently, resolved ones first.
    fn evict_one(&mut self) {
        let victim = self
            .entries
            .iter()
            .min_by_key(|(_, e)| (e.state == NeighborState::Incomplete, e.touched))
            .map(|(ip, _)| *ip);
        if let Some(ip) = victim {
            self.entries.remove(&ip);
            self.evicted += 1;
        }
    }
}

/// The flags of a Neighbor Advertisement that the cache uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdvertFlags {
    /// R: the sender is a router.
    pub router: bool,
    /// S: an answer to our solicitation.
    pub solicited: bool,
    /// O: replace a cached link-layer address.
    pub override_: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
    const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const OTHER: MacAddr = MacAddr([2, 0, 0, 0, 0, 9]);

    fn ms(t: u64) -> Instant {
        Instant::from_millis(t)
    }

    fn solicited() -> AdvertFlags {
        AdvertFlags { solicited: true, override_: true, router: false }
    }

    #[test]
    fn resolution_retries_then_gives_up() {
        let cfg = NdpConfig::default();
        let mut c = NeighborCache::new(8);
        assert!(c.start(IP, ms(0), &cfg));
        assert!(!c.start(IP, ms(0), &cfg));
        assert_eq!(c.lookup_for_send(IP, ms(0), &cfg), None);
        let mut out = vec![];
        c.due(ms(999), &cfg, &mut out);
        assert!(out.is_empty());
        c.due(ms(1000), &cfg, &mut out);
        c.due(ms(2000), &cfg, &mut out);
        assert_eq!(out, vec![NdAction::SolicitMulticast(IP); 2]);
        out.clear();
        c.due(ms(3000), &cfg, &mut out);
        assert_eq!(out, vec![NdAction::GiveUp(IP)]);
        assert!(c.is_empty());
    }

    #[test]
    fn a_solicited_advert_resolves_and_ages_through_stale_delay_probe() {
        let cfg = NdpConfig::default();
        let mut c = NeighborCache::new(8);
        c.start(IP, ms(0), &cfg);
        assert_eq!(c.on_advert(IP, Some(MAC), solicited(), ms(10), &cfg), AdvertOutcome::Resolved(MAC));
        assert_eq!(c.get(IP), Some((NeighborState::Reachable, MAC)));
        let mut out = vec![];
        c.due(ms(10) + cfg.reachable_time, &cfg, &mut out);
        assert_eq!(c.get(IP).unwrap().0, NeighborState::Stale);
        let t = ms(40_000);
        assert_eq!(c.lookup_for_send(IP, t, &cfg), Some(MAC));
        assert_eq!(c.get(IP).unwrap().0, NeighborState::Delay);
        c.due(t + cfg.delay_first_probe, &cfg, &mut out);
        assert_eq!(out, vec![NdAction::SolicitUnicast(IP, MAC)]);
        assert_eq!(c.get(IP).unwrap().0, NeighborState::Probe);
        // A solicited advertisement confirms it again.
        c.on_advert(IP, None, solicited(), t + cfg.delay_first_probe, &cfg);
        assert_eq!(c.get(IP).unwrap().0, NeighborState::Reachable);
    }

    #[test]
    fn adverts_without_override_do_not_replace_a_known_address() {
        let cfg = NdpConfig::default();
        let mut c = NeighborCache::new(8);
        c.start(IP, ms(0), &cfg);
        c.on_advert(IP, Some(MAC), solicited(), ms(1), &cfg);
        let no_override = AdvertFlags { solicited: false, override_: false, router: false };
        c.on_advert(IP, Some(OTHER), no_override, ms(2), &cfg);
        assert_eq!(c.get(IP), Some((NeighborState::Stale, MAC)));
        let overriding = AdvertFlags { solicited: false, override_: true, router: false };
        c.on_advert(IP, Some(OTHER), overriding, ms(3), &cfg);
        assert_eq!(c.get(IP), Some((NeighborState::Stale, OTHER)));
        // Unknown targets are not learned from advertisements.
        let stranger = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 7);
        assert_eq!(c.on_advert(stranger, Some(MAC), overriding, ms(4), &cfg), AdvertOutcome::NoEntry);
        assert!(c.get(stranger).is_none());
    }

    #[test]
    fn a_solicitation_flood_stays_within_the_capacity() {
        let cfg = NdpConfig::default();
        let mut c = NeighborCache::new(64);
        c.start(IP, ms(0), &cfg);
        for i in 0..10_000u16 {
            let ip = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 1, i);
            c.on_link_addr(ip, MacAddr([2, 0, 0, 0, (i >> 8) as u8, i as u8]), ms(u64::from(i)));
            assert!(c.len() <= 64);
        }
        assert_eq!(c.evicted, 10_000 + 1 - 64);
        // The entry being resolved is evicted last.
        assert_eq!(c.get(IP).map(|e| e.0), Some(NeighborState::Incomplete));
    }
}
