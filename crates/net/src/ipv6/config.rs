//! IPv6 settings of a stack: its addresses, default router and Neighbor Discovery timers.

use crate::error::ConfigError;
use std::net::Ipv6Addr;
use std::time::Duration;
use wire::MacAddr;

/// An IPv6 address with the length of its on-link prefix (`fd77::2/64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Cidr {
    /// The address.
    pub addr: Ipv6Addr,
    /// Length of the on-link prefix in bits (0 to 128).
    pub prefix_len: u8,
}

impl Ipv6Cidr {
    /// Parses `"addr/len"` (or a bare address, meaning /64) of a unicast address.
    pub fn parse(s: &str) -> Result<Ipv6Cidr, ConfigError> {
        let bad = || ConfigError::BadIpv6Address(s.to_string());
        let (addr, prefix_len) = match s.split_once('/') {
            Some((a, len)) => (a, len.trim().parse::<u8>().map_err(|_| bad())?),
            None => (s, 64),
        };
        let addr: Ipv6Addr = addr.trim().parse().map_err(|_| bad())?;
        if prefix_len > 128 || addr.is_unspecified() || addr.is_multicast() || addr.is_loopback() {
            return Err(bad());
        }
        Ok(Ipv6Cidr { addr, prefix_len })
    }

    /// True if `other` is inside this prefix.
    pub fn contains(&self, other: Ipv6Addr) -> bool {
        let bits = u32::from(self.prefix_len);
        let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
        u128::from(self.addr) & mask == u128::from(other) & mask
    }
}

impl std::fmt::Display for Ipv6Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

impl std::str::FromStr for Ipv6Cidr {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ipv6Cidr::parse(s)
    }
}

/// The link-local address a MAC gives (`fe80::/64` with the modified EUI-64 interface
/// identifier, RFC 4291 appendix A), as Linux derives it by default.
pub fn link_local_from_mac(mac: MacAddr) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::from([0xfe, 0x80, 0, 0, 0, 0, 0, 0, m[0] ^ 0x02, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
}

/// Neighbor Discovery settings (RFC 4861 section 10's constants, with Linux's defaults).
#[derive(Debug, Clone, Copy)]
pub struct NdpConfig {
    /// Neighbour cache entries at most; beyond, the entry unused longest is evicted.
    pub cache_size: usize,
    /// Packets that may wait for address resolution at once.
    pub max_pending: usize,
    /// How long a neighbour stays REACHABLE after a confirmation (ReachableTime).
    pub reachable_time: Duration,
    /// Interval between solicitations (RetransTimer).
    pub retrans_timer: Duration,
    /// Multicast solicitations sent before resolution fails (MAX_MULTICAST_SOLICIT).
    pub max_multicast_solicit: u32,
    /// Unicast probes sent to a stale neighbour before it is forgotten (MAX_UNICAST_SOLICIT).
    pub max_unicast_solicit: u32,
    /// Wait in DELAY before probing (DELAY_FIRST_PROBE_TIME).
    pub delay_first_probe: Duration,
    /// Duplicate address detection: solicitations per address (0 disables DAD).
    pub dad_transmits: u32,
    /// Learn default routers, the link MTU and (with `slaac`) addresses from Router
    /// Advertisements.
    pub accept_ra: bool,
    /// Form addresses from advertised prefixes (stateless autoconfiguration, RFC 4862).
    pub slaac: bool,
    /// Routers remembered at most (a flood of advertisements learns no more).
    pub max_routers: usize,
    /// Addresses autoconfigured at most.
    pub max_slaac_addrs: usize,
}

impl Default for NdpConfig {
    fn default() -> Self {
        NdpConfig {
            cache_size: 1024,
            max_pending: 256,
            reachable_time: Duration::from_secs(30),
            retrans_timer: Duration::from_secs(1),
            max_multicast_solicit: 3,
            max_unicast_solicit: 3,
            delay_first_probe: Duration::from_secs(5),
            dad_transmits: 1,
            accept_ra: true,
            slaac: false,
            max_routers: 8,
            max_slaac_addrs: 16,
        }
    }
}

/// The IPv6 part of a [`crate::Config`]. IPv6 is on when it has an address (or `enabled`
/// is set): the host then also has the link-local address of its MAC.
#[derive(Debug, Clone)]
pub struct Ipv6Config {
    /// Speak IPv6 even without a configured address (link-local only, plus SLAAC).
    pub enabled: bool,
    /// Static addresses with their on-link prefixes.
    pub addrs: Vec<Ipv6Cidr>,
    /// Default router for destinations off every prefix (else one learned from RAs).
    pub gateway: Option<Ipv6Addr>,
    /// Hop limit of packets we originate.
    pub hop_limit: u8,
    /// Neighbor Discovery.
    pub ndp: NdpConfig,
}

impl Default for Ipv6Config {
    fn default() -> Self {
        Ipv6Config { enabled: false, addrs: Vec::new(), gateway: None, hop_limit: 64, ndp: NdpConfig::default() }
    }
}

impl Ipv6Config {
    /// True if the stack speaks IPv6.
    pub fn is_on(&self) -> bool {
        self.enabled || !self.addrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prefixes_and_refuses_what_is_not_a_host_address() {
        let c = Ipv6Cidr::parse("fd77::2/64").unwrap();
        assert_eq!(c.addr, "fd77::2".parse::<Ipv6Addr>().unwrap());
        assert!(c.contains("fd77::1".parse().unwrap()));
        assert!(!c.contains("fd78::1".parse().unwrap()));
        assert_eq!(Ipv6Cidr::parse("2001:db8::1").unwrap().prefix_len, 64);
        for bad in ["", "::", "ff02::1/64", "::1", "fd77::2/129", "10.0.0.1/24", "fd77::2/x"] {
            assert!(Ipv6Cidr::parse(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn link_local_flips_the_universal_bit_and_inserts_fffe() {
        let ll = link_local_from_mac(MacAddr([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]));
        assert_eq!(ll, "fe80::5054:ff:fe12:3456".parse::<Ipv6Addr>().unwrap());
    }
}
