//! IPv6 on the host's interface (RFC 8200, RFC 4861, RFC 4862): its addresses and their
//! duplicate address detection, the multicast groups it listens to, the neighbour cache with
//! the packets waiting for resolution, default routers and path MTUs.
//!
//! The receive side (`rx`) checks every packet and gives each frame one verdict, as IPv4
//! does; the transmit side (`tx`) picks a source address, resolves the next hop and builds
//! the frame through the interface's [`Egress`](crate::egress::Egress).
//!
//! IPv6 is on when the configuration has an IPv6 address (or `Ipv6Config::enabled`); the host
//! then also holds the link-local address of its MAC. Addresses are tentative until duplicate
//! address detection (one solicitation, a second by default) finds nobody else using them;
//! then an unsolicited advertisement announces them.
//!
//! UDP runs over IPv6 through the same socket table as IPv4: a socket bound to a port
//! receives both families (as a Linux socket bound to `::`), and `Stack::udp_send_to` takes
//! a `SocketAddrV6`. Received datagrams need a valid checksum (zero is refused, RFC 8200
//! 8.1: `rx_drop_udp6_zero_checksum`); one to a port nobody bound is answered with a
//! rate-limited port unreachable (not when it was sent to a group). Sent datagrams get the
//! source address chosen for their destination, wait for Neighbor Discovery in the pending
//! queue, and go out in fragments above the path MTU.

pub mod config;
pub mod neighbor;
mod router;
mod rx;
pub(crate) mod tx;

use crate::int_hash::KeyedMap;
use crate::queue::PacketQueue;
use config::{link_local_from_mac, Ipv6Cidr, Ipv6Config};
use link::Instant;
use neighbor::{NdAction, NeighborCache};
use std::net::Ipv6Addr;
use std::time::Duration;
use wire::{Ipv6AddrKind, MacAddr};

/// The all-nodes multicast group (`ff02::1`).
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// Path MTUs learned from Packet Too Big are kept this long (RFC 8201 section 4: 10 min).
const PMTU_AGE: Duration = Duration::from_secs(600);
/// Path MTU entries kept at most.
const PMTU_ENTRIES: usize = 4096;

/// Where an address of ours is in its life (RFC 4862).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrState {
    /// Duplicate address detection is under way: not used yet.
    Tentative,
    /// In use.
    Preferred,
    /// Another node uses it: never used.
    Duplicate,
}

/// How an address of ours came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrOrigin {
    /// Derived from the MAC (`fe80::/64`).
    LinkLocal,
    /// Configured.
    Static,
    /// Formed from a router's prefix (SLAAC); valid until the instant.
    Slaac(Instant),
}

/// One IPv6 address of the host.
#[derive(Debug, Clone, Copy)]
pub struct HostAddr {
    /// The address and its on-link prefix.
    pub cidr: Ipv6Cidr,
    /// Its state.
    pub state: AddrState,
    /// Where it came from.
    pub origin: AddrOrigin,
    /// Solicitations of duplicate address detection sent so far, and when the next is due.
    dad_sent: u32,
    dad_next: Instant,
}

/// What a destination address is to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DstKind {
    /// One of our usable unicast addresses.
    Unicast,
    /// A multicast group we listen to.
    Multicast,
    /// One of our addresses still under duplicate address detection.
    Tentative,
    /// Not for us.
    Other,
}

/// A packet waiting for its next hop to be resolved.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingV6 {
    next_hop: Ipv6Addr,
}

impl Default for PendingV6 {
    fn default() -> Self {
        PendingV6 { next_hop: Ipv6Addr::UNSPECIFIED }
    }
}

/// A default router learned from an advertisement.
#[derive(Debug, Clone, Copy)]
struct Router {
    addr: Ipv6Addr,
    until: Instant,
}

/// The IPv6 state of one interface.
#[derive(Debug)]
pub(crate) struct Ipv6Host {
    pub cfg: Ipv6Config,
    mac: MacAddr,
    /// The link's IP MTU.
    link_mtu: usize,
    /// The IP MTU in use: the link's, or lower if a router's MTU option said so.
    mtu: usize,
    addrs: Vec<HostAddr>,
    pub neighbors: NeighborCache,
    pending: PacketQueue<PendingV6>,
    routers: Vec<Router>,
    pmtu: KeyedMap<Ipv6Addr, (u16, Instant)>,
    actions: Vec<NdAction>,
    /// Identification of the next datagram we fragment.
    frag_ident: u32,
    /// Scratch for a datagram sent in fragments.
    frag_scratch: Vec<u8>,
    /// Addresses not formed because `max_slaac_addrs` were formed already.
    pub slaac_refused: u64,
    /// No timer of the host (DAD, router and SLAAC lifetimes) is due before this; the
    /// neighbour cache keeps its own. Lets a poll skip the timers in a few instructions.
    timers_from: Instant,
}

impl Ipv6Host {
    /// The IPv6 state for `cfg` on an interface with `mac` and IP MTU `mtu`.
    pub fn new(cfg: &Ipv6Config, mac: MacAddr, mtu: usize) -> Self {
        let mut addrs = Vec::new();
        if cfg.is_on() {
            let ll = Ipv6Cidr { addr: link_local_from_mac(mac), prefix_len: 64 };
            addrs.push(HostAddr::new(ll, AddrOrigin::LinkLocal, cfg.ndp.dad_transmits));
            for c in &cfg.addrs {
                if !addrs.iter().any(|a| a.cidr.addr == c.addr) {
                    addrs.push(HostAddr::new(*c, AddrOrigin::Static, cfg.ndp.dad_transmits));
                }
            }
        }
        let max_frame = mtu + 18;
        Ipv6Host {
            mac,
            link_mtu: mtu,
            mtu,
            addrs,
            neighbors: NeighborCache::new(cfg.ndp.cache_size),
            pending: PacketQueue::new(cfg.ndp.max_pending.max(1), max_frame),
            routers: Vec::new(),
            pmtu: KeyedMap::default(),
            actions: Vec::new(),
            frag_ident: u32::from_be_bytes([mac.0[2], mac.0[3], mac.0[4], mac.0[5]]),
            frag_scratch: Vec::new(),
            slaac_refused: 0,
            timers_from: Instant::ZERO,
            cfg: cfg.clone(),
        }
    }

    /// True if the interface speaks IPv6.
    pub fn is_on(&self) -> bool {
        !self.addrs.is_empty()
    }

    /// Our addresses, in order: link-local first.
    pub fn addrs(&self) -> &[HostAddr] {
        &self.addrs
    }

    /// Our link-local address.
    pub fn link_local(&self) -> Option<Ipv6Addr> {
        self.addrs.iter().find(|a| a.origin == AddrOrigin::LinkLocal).map(|a| a.cidr.addr)
    }

    /// What `dst` is to us.
    pub fn classify_dst(&self, dst: Ipv6Addr) -> DstKind {
        if dst.is_multicast() {
            return if self.listens_to(dst) { DstKind::Multicast } else { DstKind::Other };
        }
        match self.addrs.iter().find(|a| a.cidr.addr == dst).map(|a| a.state) {
            Some(AddrState::Preferred) => DstKind::Unicast,
            Some(AddrState::Tentative) => DstKind::Tentative,
            _ => DstKind::Other,
        }
    }

    /// True if `a` is one of our addresses in any state (a packet from it is looped or forged).
    pub fn is_own(&self, a: Ipv6Addr) -> bool {
        self.addrs.iter().any(|h| h.cidr.addr == a && h.state != AddrState::Duplicate)
    }

    /// The state of our address `a`, if it is one.
    pub fn own_state(&self, a: Ipv6Addr) -> Option<AddrState> {
        self.addrs.iter().find(|h| h.cidr.addr == a).map(|h| h.state)
    }

    /// True if we listen to multicast group `g`: all-nodes and the solicited-node group of
    /// each address not found duplicate (tentative ones included, for DAD).
    pub fn listens_to(&self, g: Ipv6Addr) -> bool {
        g == ALL_NODES
            || self.addrs.iter().any(|a| a.state != AddrState::Duplicate && a.cidr.addr.solicited_node() == g)
    }

    /// True if a frame to `mac` may carry a group we listen to (`33:33:` + its last 32 bits).
    pub fn wants_mac(&self, mac: MacAddr) -> bool {
        self.is_on()
            && mac.0[0] == 0x33
            && mac.0[1] == 0x33
            && (mac == multicast_mac(ALL_NODES)
                || self.addrs.iter().any(|a| multicast_mac(a.cidr.addr.solicited_node()) == mac))
    }

    /// The source address for a packet to `dst` (RFC 6724, simplified): the link-local
    /// address for link-local and link-scope multicast destinations, else the usable address
    /// sharing the longest prefix with `dst`.
    pub fn source_for(&self, dst: Ipv6Addr) -> Option<Ipv6Addr> {
        let usable = self.addrs.iter().filter(|a| a.state == AddrState::Preferred);
        if dst.is_link_local() || (dst.is_multicast() && dst.segments()[0] & 0x000f <= 2) {
            return self.link_local().filter(|ll| self.own_state(*ll) == Some(AddrState::Preferred));
        }
        usable
            .filter(|a| a.origin != AddrOrigin::LinkLocal)
            .max_by_key(|a| (u128::from(a.cidr.addr) ^ u128::from(dst)).leading_zeros())
            .map(|a| a.cidr.addr)
    }

    /// The neighbour to send a packet for `dst` to: `dst` itself when it is on link
    /// (link-local, or inside one of our prefixes), else the default router.
    pub fn next_hop(&self, dst: Ipv6Addr, now: Instant) -> Option<Ipv6Addr> {
        if dst.is_link_local() || self.addrs.iter().any(|a| a.origin != AddrOrigin::LinkLocal && a.cidr.contains(dst)) {
            return Some(dst);
        }
        self.cfg.gateway.or_else(|| self.routers.iter().find(|r| r.until > now).map(|r| r.addr))
    }

    /// The path MTU towards `dst`: the link's, or lower if a Packet Too Big said so.
    pub fn path_mtu(&self, dst: Ipv6Addr, now: Instant) -> usize {
        if self.pmtu.is_empty() {
            // The usual case, and a keyed hash saved per packet.
            return self.mtu;
        }
        match self.pmtu.get(&dst) {
            Some(&(mtu, until)) if until > now => usize::from(mtu).min(self.mtu),
            _ => self.mtu,
        }
    }

    /// Lower the path MTU towards `dst` (RFC 8201), never below 1280; returns the new value
    /// if it went down.
    pub fn lower_path_mtu(&mut self, dst: Ipv6Addr, mtu: usize, now: Instant) -> Option<usize> {
        let mtu = mtu.clamp(wire::ipv6::MIN_MTU, usize::from(u16::MAX));
        if mtu >= self.path_mtu(dst, now) {
            return None;
        }
        if self.pmtu.len() >= PMTU_ENTRIES {
            self.pmtu.retain(|_, (_, until)| *until > now);
            if self.pmtu.len() >= PMTU_ENTRIES {
                self.pmtu.clear();
            }
        }
        self.pmtu.insert(dst, (mtu as u16, now + PMTU_AGE));
        Some(mtu)
    }

    /// True if a timer may be due at `now` (a poll then runs [`Ipv6Host::expire_learned`]
    /// and `on_timers`).
    #[inline]
    pub fn timers_due(&self, now: Instant) -> bool {
        now >= self.timers_from || !self.actions.is_empty() || self.neighbors.next_deadline().is_some_and(|t| t <= now)
    }

    /// After the timers ran: the earliest time one of the host's own timers can be due
    /// (the first DAD step of a tentative address, the first router or SLAAC address to
    /// expire).
    pub fn rearm_timers(&mut self) {
        let dad = self.addrs.iter().filter(|a| a.state == AddrState::Tentative).map(|a| a.dad_next);
        let slaac = self.addrs.iter().filter_map(|a| match a.origin {
            AddrOrigin::Slaac(until) => Some(until),
            _ => None,
        });
        let routers = self.routers.iter().map(|r| r.until);
        self.timers_from = dad.chain(slaac).chain(routers).min().unwrap_or(Instant::from_nanos(u64::MAX));
    }

    /// Earliest instant a timer of IPv6 needs a poll.
    pub fn next_deadline(&self) -> Option<Instant> {
        let dad = self.addrs.iter().filter(|a| a.state == AddrState::Tentative).map(|a| a.dad_next).min();
        match (dad, self.neighbors.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl HostAddr {
    fn new(cidr: Ipv6Cidr, origin: AddrOrigin, dad_transmits: u32) -> Self {
        let state = if dad_transmits == 0 { AddrState::Preferred } else { AddrState::Tentative };
        HostAddr { cidr, state, origin, dad_sent: 0, dad_next: Instant::ZERO }
    }
}

/// The Ethernet address of IPv6 multicast group `g` (RFC 2464 section 7).
pub fn multicast_mac(g: Ipv6Addr) -> MacAddr {
    let o = g.octets();
    MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(addrs: &[&str]) -> Ipv6Host {
        let cfg = Ipv6Config {
            addrs: addrs.iter().map(|a| Ipv6Cidr::parse(a).unwrap()).collect(),
            ndp: config::NdpConfig { dad_transmits: 0, ..Default::default() },
            hop_limit: 64,
            ..Default::default()
        };
        Ipv6Host::new(&cfg, MacAddr([2, 0, 0, 0, 0, 2]), 1500)
    }

    #[test]
    fn source_and_next_hop_follow_scope_and_prefix() {
        let h = host(&["fd77::2/64", "2001:db8::2/64"]);
        let ll = h.link_local().unwrap();
        assert_eq!(h.source_for("fe80::1".parse().unwrap()), Some(ll));
        assert_eq!(h.source_for(ALL_NODES), Some(ll));
        assert_eq!(h.source_for("fd77::1".parse().unwrap()), Some("fd77::2".parse().unwrap()));
        assert_eq!(h.source_for("2001:db8::9".parse().unwrap()), Some("2001:db8::2".parse().unwrap()));
        let now = Instant::ZERO;
        assert_eq!(h.next_hop("fd77::1".parse().unwrap(), now), Some("fd77::1".parse().unwrap()));
        assert_eq!(h.next_hop("2001:db9::1".parse().unwrap(), now), None);
    }

    #[test]
    fn listens_to_all_nodes_and_its_solicited_node_groups() {
        let h = host(&["fd77::2/64"]);
        assert!(h.listens_to(ALL_NODES));
        assert!(h.listens_to("ff02::1:ff00:2".parse().unwrap()));
        assert!(!h.listens_to("ff02::1:ff00:3".parse().unwrap()));
        assert!(h.wants_mac(MacAddr([0x33, 0x33, 0xff, 0, 0, 2])));
        assert!(!h.wants_mac(MacAddr([0x33, 0x33, 0xff, 0, 0, 3])));
        assert_eq!(h.classify_dst("fd77::2".parse().unwrap()), DstKind::Unicast);
        assert_eq!(h.classify_dst("fd77::3".parse().unwrap()), DstKind::Other);
    }

    #[test]
    fn path_mtu_never_goes_below_1280() {
        let mut h = host(&["fd77::2/64"]);
        let d: Ipv6Addr = "fd77::1".parse().unwrap();
        let now = Instant::ZERO;
        assert_eq!(h.lower_path_mtu(d, 600, now), Some(1280));
        assert_eq!(h.path_mtu(d, now), 1280);
        assert_eq!(h.lower_path_mtu(d, 1400, now), None);
        assert_eq!(h.path_mtu(d, now + PMTU_AGE), 1500);
    }
}
