//! Configuration of a stack: a plain struct with defaults and builder methods.

use crate::error::ConfigError;
use std::net::Ipv4Addr;
use std::time::Duration;
use wire::MacAddr;

/// How a stack is configured. Build with [`Config::host`] or [`Config::parse_host`], then
/// adjust with the builder methods or by setting fields.
#[derive(Debug, Clone)]
pub struct Config {
    /// Our MAC address (default: locally administered `02:00:` + the IPv4 address).
    pub mac: MacAddr,
    /// Our IPv4 address.
    pub ip: Ipv4Addr,
    /// Prefix length of our subnet.
    pub prefix_len: u8,
    /// Next hop for destinations outside the subnet.
    pub gateway: Option<Ipv4Addr>,
    /// IP MTU of the link (Ethernet payload size).
    pub mtu: usize,
    /// TTL of packets we originate.
    pub ttl: u8,
    /// Frames moved per link call.
    pub batch: usize,
    /// How long a learned ARP entry stays valid.
    pub arp_ttl: Duration,
    /// Interval between ARP requests for an unresolved address.
    pub arp_retry: Duration,
    /// ARP requests sent for one address before its waiting packets are dropped.
    pub arp_max_tries: u32,
    /// Capacity of the ARP cache.
    pub arp_cache_size: usize,
    /// Packets that may wait for ARP resolution at once.
    pub arp_max_pending: usize,
    /// Announce our address with a gratuitous ARP at start-up (as Limago does).
    pub gratuitous_arp: bool,
    /// Datagrams a UDP or raw socket queues before dropping.
    pub socket_rx_queue: usize,
    /// Bytes a UDP socket's receive queue holds at most (at least one 64 KiB datagram); the
    /// queue grows to it on demand, charged to the stack's memory budget (`tcp.mem_limit`).
    pub socket_rx_bytes: usize,
    /// UDP sockets bound at once at most (a bind beyond is refused).
    pub udp_max_sockets: usize,
    /// IPv4 reassembly limits: timeout, memory in all and per source, datagrams at once.
    pub reasm: crate::reasm::ReasmLimits,
    /// ICMP error messages sent per second at most (0: unlimited).
    pub icmp_error_rate: u32,
    /// First port of the ephemeral range.
    pub ephemeral_first: u16,
    /// Verify UDP checksums on receive.
    pub verify_udp_checksum: bool,
    /// TCP settings.
    pub tcp: crate::tcp::TcpConfig,
    /// IPv6 addresses, default router and Neighbor Discovery (off without an address).
    pub ipv6: crate::ipv6::config::Ipv6Config,
}

impl Config {
    /// A host with address and prefix from `"a.b.c.d/len"` (or `"a.b.c.d"`, meaning /24).
    ///
    /// # Panics
    /// If the string is not a valid address; use [`Config::parse_host`] for untrusted input.
    pub fn host(cidr: &str) -> Config {
        Config::parse_host(cidr).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A host with address and prefix from `"a.b.c.d/len"` (or `"a.b.c.d"`, meaning /24).
    pub fn parse_host(cidr: &str) -> Result<Config, ConfigError> {
        let bad = || ConfigError::BadAddress(cidr.to_string());
        let (ip, prefix_len) = match cidr.split_once('/') {
            Some((ip, len)) => (ip, len.parse::<u8>().map_err(|_| bad())?),
            None => (cidr, 24),
        };
        let ip: Ipv4Addr = ip.trim().parse().map_err(|_| bad())?;
        if prefix_len > 32 || ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Err(bad());
        }
        let o = ip.octets();
        Ok(Config {
            mac: MacAddr([0x02, 0x00, o[0], o[1], o[2], o[3]]),
            ip,
            prefix_len,
            gateway: None,
            mtu: 1500,
            ttl: 64,
            batch: 32,
            arp_ttl: Duration::from_secs(60),
            arp_retry: Duration::from_millis(500),
            arp_max_tries: 4,
            arp_cache_size: 1024,
            arp_max_pending: 256,
            gratuitous_arp: true,
            socket_rx_queue: 512,
            socket_rx_bytes: 1 << 20,
            udp_max_sockets: 4096,
            reasm: crate::reasm::ReasmLimits::default(),
            icmp_error_rate: 1000,
            ephemeral_first: 49152,
            verify_udp_checksum: true,
            tcp: crate::tcp::TcpConfig::default(),
            ipv6: crate::ipv6::config::Ipv6Config::default(),
        })
    }

    /// Add an IPv6 address with its on-link prefix (`"fd77::2/64"`; a bare address means
    /// /64): the host then speaks IPv6, with the link-local address of its MAC beside it.
    pub fn ipv6_addr(mut self, cidr: &str) -> Result<Self, ConfigError> {
        let c = crate::ipv6::config::Ipv6Cidr::parse(cidr)?;
        if !self.ipv6.addrs.contains(&c) {
            self.ipv6.addrs.push(c);
        }
        Ok(self)
    }

    /// Set the MAC address.
    pub fn mac(mut self, mac: MacAddr) -> Self {
        self.mac = mac;
        self
    }

    /// Set the default gateway.
    pub fn gateway(mut self, gw: Ipv4Addr) -> Self {
        self.gateway = Some(gw);
        self
    }

    /// Set the IP MTU.
    pub fn mtu(mut self, mtu: usize) -> Self {
        self.mtu = mtu;
        self
    }

    /// Set the TCP MSS we announce.
    pub fn mss(mut self, mss: u16) -> Self {
        self.tcp.mss = mss;
        self
    }

    /// Set our TCP window-scale shift (`None` disables the option).
    pub fn window_scale(mut self, shift: Option<u8>) -> Self {
        self.tcp.window_scale = shift;
        self
    }

    /// Set the batch size.
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// The subnet mask as an address.
    pub fn netmask(&self) -> Ipv4Addr {
        let bits = if self.prefix_len == 0 { 0 } else { u32::MAX << (32 - self.prefix_len as u32) };
        Ipv4Addr::from(bits)
    }

    /// True if `addr` is in our subnet.
    pub fn on_link(&self, addr: Ipv4Addr) -> bool {
        let m = u32::from(self.netmask());
        u32::from(addr) & m == u32::from(self.ip) & m
    }

    /// The directed broadcast address of our subnet.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.ip) | !u32::from(self.netmask()))
    }

    /// True if `addr` is a broadcast address for us (limited or directed).
    pub fn is_broadcast(&self, addr: Ipv4Addr) -> bool {
        addr.is_broadcast() || (self.prefix_len < 31 && addr == self.broadcast())
    }

    /// Largest Ethernet frame this configuration sends (header and one VLAN tag included).
    pub fn max_frame(&self) -> usize {
        self.mtu + 18
    }

    /// Check the configuration for values the stack cannot work with.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(68..=9216).contains(&self.mtu) {
            return Err(ConfigError::MtuOutOfRange(self.mtu));
        }
        if self.arp_cache_size == 0 || self.socket_rx_queue == 0 {
            return Err(ConfigError::ZeroSize);
        }
        if !self.mac.is_unicast() {
            return Err(ConfigError::MacNotUnicast(self.mac));
        }
        if self.ipv6.is_on() && self.mtu < wire::ipv6::MIN_MTU {
            return Err(ConfigError::Ipv6MtuTooSmall(self.mtu));
        }
        if self.ipv6.ndp.cache_size == 0 || self.ipv6.ndp.max_pending == 0 {
            return Err(ConfigError::ZeroSize);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cidr_and_derives_subnet() {
        let c = Config::host("10.0.0.7/24");
        assert_eq!(c.ip, Ipv4Addr::new(10, 0, 0, 7));
        assert_eq!(c.netmask(), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(c.broadcast(), Ipv4Addr::new(10, 0, 0, 255));
        assert!(c.on_link(Ipv4Addr::new(10, 0, 0, 200)));
        assert!(!c.on_link(Ipv4Addr::new(10, 0, 1, 1)));
        assert_eq!(c.mac, MacAddr([2, 0, 10, 0, 0, 7]));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn rejects_bad_addresses() {
        for bad in ["", "10.0.0", "10.0.0.1/33", "255.255.255.255", "0.0.0.0", "x/24", "224.0.0.1"] {
            assert!(Config::parse_host(bad).is_err(), "{bad} accepted");
        }
        assert!(Config::host("10.0.0.1").mtu(20).validate().is_err());
    }
}
