//! wire: zero-copy packet views and builders (Ethernet, ARP, IPv4, ICMP,
//! UDP, TCP) and Internet checksums. No state, no allocation in views, and
//! no panics on untrusted input: every parser returns a [`WireError`].
//!
//! Each header has a *view* (`XxxPacket<T: AsRef<[u8]>>`, checked with
//! `new_checked`) that reads and patches fields in place, and a *repr*
//! (`XxxRepr`) that describes a header and `emit`s it into a buffer.

#![warn(missing_docs)]

pub mod addr;
pub mod arp;
pub mod checksum;
pub mod error;
pub mod ethernet;
mod field;
pub mod icmp;
pub mod ipv4;
pub mod tcp;
pub mod udp;

pub use addr::{MacAddr, ParseMacError};
pub use arp::{ArpOp, ArpPacket, ArpRepr};
pub use error::WireError;
pub use ethernet::{ethertype, EthernetFrame, EthernetRepr, VlanTag, ETH_HEADER_LEN};
pub use icmp::{unreach_code, IcmpMessage, IcmpPacket, IcmpRepr};
pub use ipv4::{protocol, Ipv4Packet, Ipv4Repr};
pub use tcp::{flags, TcpOption, TcpOptions, TcpOptionsIter, TcpRepr, TcpSegment};
pub use udp::{UdpPacket, UdpRepr};
