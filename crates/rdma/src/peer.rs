//! Who a packet comes from or goes to, and which transport carries it.

use std::fmt;
use std::net::SocketAddr;
use wire::MacAddr;

/// The default UDP port of RDMA nodes.
/// (Not 4791: that is RoCEv2's, and capture tools would decode our packets as InfiniBand.)
pub const DEFAULT_UDP_PORT: u16 = 18791;
/// The default EtherType of RDMA over raw Ethernet (IEEE 802 local experimental 1).
pub const DEFAULT_ETHERTYPE: u16 = 0x88b5;

/// A node's address on the transport it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A UDP socket address of either family (routable).
    Udp(SocketAddr),
    /// A MAC address on the local Ethernet segment.
    Eth(MacAddr),
}

impl Peer {
    /// The address packed into one integer, distinct for distinct IPv4 and Ethernet peers;
    /// an IPv6 address is folded into it (it is a hash: equality still compares addresses).
    fn packed(&self) -> u64 {
        match self {
            Peer::Udp(SocketAddr::V4(a)) => 1 << 63 | u64::from(a.ip().to_bits()) << 16 | u64::from(a.port()),
            Peer::Udp(SocketAddr::V6(a)) => {
                let ip = a.ip().to_bits();
                3 << 62 ^ (ip as u64) ^ ((ip >> 64) as u64).rotate_left(16) ^ u64::from(a.port()) << 40
            }
            Peer::Eth(m) => m.0.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b)),
        }
    }
}

/// Hashes the packed address in one write: the receiver's tables hash (peer, op id) for
/// every packet, and the derived hash fed the keyed hasher field by field.
impl std::hash::Hash for Peer {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.packed());
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Udp(a) => write!(f, "udp:{a}"),
            Peer::Eth(m) => write!(f, "eth:{m}"),
        }
    }
}

/// How a node's packets travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// In UDP datagrams to and from this local port.
    Udp {
        /// The local port (peers address it).
        port: u16,
    },
    /// In Ethernet frames of this EtherType.
    Eth {
        /// The EtherType (at least 0x0600, not IPv4/ARP/VLAN).
        ethertype: u16,
    },
}

/// How many bytes longer an IPv6 header is than an IPv4 one (40 against 20).
pub const IPV6_EXTRA_HEADER: usize = 20;

impl Default for Transport {
    fn default() -> Self {
        Transport::Udp { port: DEFAULT_UDP_PORT }
    }
}

impl Transport {
    /// Bytes the transport's headers take from the link MTU (IPv4 + UDP, or none). Packets to
    /// IPv6 peers carry [`IPV6_EXTRA_HEADER`] payload bytes fewer.
    pub fn overhead(&self) -> usize {
        match self {
            Transport::Udp { .. } => 28,
            Transport::Eth { .. } => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_addresses_are_distinct_per_peer() {
        let u = |a: [u8; 4], p| Peer::Udp(std::net::SocketAddrV4::new(a.into(), p).into());
        let peers = [
            u([10, 0, 0, 1], 1),
            u([10, 0, 0, 1], 2),
            u([10, 0, 0, 2], 1),
            u([0, 0, 0, 0], 0),
            Peer::Eth(MacAddr([0, 0, 0, 0, 0, 0])),
            Peer::Eth(MacAddr([0, 0, 10, 0, 0, 1])),
            Peer::Eth(MacAddr([0xff; 6])),
            Peer::Udp("[fd77::1]:1".parse().unwrap()),
            Peer::Udp("[fd77::2]:1".parse().unwrap()),
            Peer::Udp("[fd77::1]:2".parse().unwrap()),
        ];
        let packed: std::collections::HashSet<u64> = peers.iter().map(Peer::packed).collect();
        assert_eq!(packed.len(), peers.len());
    }
}
