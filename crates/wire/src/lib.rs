//! wire: zero-copy packet views and builders (Ethernet, ARP, IPv4, ICMP, IPv6 with its
//! extension headers, ICMPv6, Neighbor Discovery, UDP, TCP) and Internet checksums. No state, no allocation in views, and
//! no panics on untrusted input: every parser returns a [`WireError`].
//!
//! Each header has a *view* (`XxxPacket<T: AsRef<[u8]>>`, checked with
//! `new_checked`) that reads and patches fields in place, and a *repr*
//! (`XxxRepr`) that describes a header and `emit`s it into a buffer.
//!
//! # Build a UDP datagram in a frame, then parse it back
//!
//! ```
//! use std::net::Ipv4Addr;
//! use wire::{ethertype, protocol, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, MacAddr};
//! use wire::{UdpPacket, UdpRepr};
//!
//! let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
//! let payload = b"hello";
//! let mut frame = [0u8; 64];
//!
//! let eth = EthernetRepr {
//!     src: MacAddr([2, 0, 0, 0, 0, 1]),
//!     dst: MacAddr::BROADCAST,
//!     ethertype: ethertype::IPV4,
//!     vlan: None,
//! };
//! let udp_len = UdpRepr::HEADER_LEN + payload.len();
//! let ip = Ipv4Repr {
//!     src,
//!     dst,
//!     protocol: protocol::UDP,
//!     payload_len: udp_len,
//!     ttl: 64,
//!     ident: 1,
//!     dont_frag: true,
//!     dscp_ecn: 0,
//! };
//! let eh = eth.emit(&mut frame)?;
//! let ih = ip.emit(&mut frame[eh..])?;
//! let l4 = &mut frame[eh + ih..eh + ih + udp_len];
//! l4[UdpRepr::HEADER_LEN..].copy_from_slice(payload);
//! UdpRepr { src_port: 4000, dst_port: 7 }.emit(l4, src, dst, payload.len())?;
//!
//! // Parsing checks lengths (and never panics on bad input).
//! let f = EthernetFrame::new_checked(&frame[..])?;
//! assert_eq!(f.ethertype(), ethertype::IPV4);
//! let p = Ipv4Packet::new_checked(f.payload())?;
//! assert!(p.verify_checksum());
//! assert_eq!((p.src(), p.protocol()), (src, protocol::UDP));
//! let u = UdpPacket::new_checked(p.payload())?;
//! assert!(u.verify_checksum(src, dst));
//! assert_eq!((u.dst_port(), u.payload()), (7, &payload[..]));
//! # Ok::<(), wire::WireError>(())
//! ```

#![warn(missing_docs)]

pub mod addr;
pub mod arp;
pub mod checksum;
pub mod error;
pub mod ethernet;
mod field;
pub mod flow;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv4_options;
pub mod ipv6;
pub mod ipv6_ext;
pub mod ndp;
pub mod tcp;
pub mod udp;

pub use addr::{MacAddr, ParseMacError};
pub use arp::{ArpOp, ArpPacket, ArpRepr};
pub use error::WireError;
pub use ethernet::{ethertype, EthernetFrame, EthernetRepr, VlanTag, ETH_HEADER_LEN};
pub use icmp::{unreach_code, IcmpMessage, IcmpPacket, IcmpRepr};
pub use icmpv6::{Icmpv6Message, Icmpv6Packet, Icmpv6Repr};
pub use ipv4::{protocol, Ipv4Packet, Ipv4Repr};
pub use ipv6::{next_header, Ipv6AddrKind, Ipv6Packet, Ipv6Repr};
pub use ipv6_ext::{Chain, ChainError, ChainLimits, FragmentHeader};
pub use ndp::{NdpError, NdpMessage, NdpOption, NdpOptions, PrefixInfo};
pub use tcp::{flags, TcpOption, TcpOptions, TcpOptionsIter, TcpRepr, TcpSegment};
pub use udp::{UdpPacket, UdpRepr};
