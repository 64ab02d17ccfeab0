//! IPv6 fixed headers (RFC 8200 section 3). Extension headers are walked by
//! [`crate::ipv6_ext`]; the upper-layer checksums take IPv6 addresses through
//! [`crate::checksum::PseudoHeader`].

use crate::error::WireError;
use crate::field::{get_u16, set_u16};
use std::net::Ipv6Addr;

/// Next-header values of IPv6 (shared with IPv4's protocol numbers).
pub mod next_header {
    /// Hop-by-hop options (RFC 8200 section 4.3).
    pub const HOP_BY_HOP: u8 = 0;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// Routing header (RFC 8200 section 4.4).
    pub const ROUTING: u8 = 43;
    /// Fragment header (RFC 8200 section 4.5).
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating security payload.
    pub const ESP: u8 = 50;
    /// Authentication header.
    pub const AUTH: u8 = 51;
    /// ICMPv6 (RFC 4443).
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NO_NEXT: u8 = 59;
    /// Destination options (RFC 8200 section 4.6).
    pub const DEST_OPTS: u8 = 60;
    /// Mobility header (RFC 6275).
    pub const MOBILITY: u8 = 135;
}

/// The smallest link MTU IPv6 allows (RFC 8200 section 5).
pub const MIN_MTU: usize = 1280;

/// A zero-copy view of an IPv6 packet.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        Ipv6Packet { buf }
    }

    /// Wraps `buf` after validating the fixed header.
    ///
    /// Errors: `Truncated` (shorter than 40 bytes, or than 40 + payload length),
    /// `BadVersion` (not 6), `Unsupported` (payload length 0 with a hop-by-hop header: a
    /// jumbogram, RFC 2675). The buffer may be longer than the packet (Ethernet padding);
    /// [`Self::payload`] stops at the payload length.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < Ipv6Repr::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::BadVersion);
        }
        let plen = usize::from(get_u16(b, 4));
        if plen == 0 && b[6] == next_header::HOP_BY_HOP && b.len() > Ipv6Repr::HEADER_LEN {
            return Err(WireError::Unsupported);
        }
        if Ipv6Repr::HEADER_LEN + plen > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Ipv6Packet { buf })
    }

    /// The whole buffer (Ethernet padding included, if any).
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// Traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        let b = self.buf.as_ref();
        (b[0] << 4) | (b[1] >> 4)
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        let b = self.buf.as_ref();
        (u32::from(b[1] & 0x0f) << 16) | u32::from(get_u16(b, 2))
    }

    /// Payload length: everything after the fixed header, extension headers included.
    pub fn payload_len(&self) -> u16 {
        get_u16(self.buf.as_ref(), 4)
    }

    /// The header that follows the fixed one.
    pub fn next_header(&self) -> u8 {
        self.buf.as_ref()[6]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buf.as_ref()[7]
    }

    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        get_ipv6(self.buf.as_ref(), 8)
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        get_ipv6(self.buf.as_ref(), 24)
    }

    /// The payload (extension headers and upper layer), cut at the payload length.
    pub fn payload(&self) -> &[u8] {
        let end = Ipv6Repr::HEADER_LEN + usize::from(self.payload_len());
        &self.buf.as_ref()[Ipv6Repr::HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets the hop limit (IPv6 has no header checksum to update).
    pub fn set_hop_limit(&mut self, hops: u8) {
        self.buf.as_mut()[7] = hops;
    }

    /// Mutable payload, cut at the payload length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = Ipv6Repr::HEADER_LEN + usize::from(self.payload_len());
        &mut self.buf.as_mut()[Ipv6Repr::HEADER_LEN..end]
    }
}

/// Reads an IPv6 address at `off`.
#[inline]
pub(crate) fn get_ipv6(b: &[u8], off: usize) -> Ipv6Addr {
    let o: [u8; 16] = b[off..off + 16].try_into().expect("a slice of sixteen bytes");
    Ipv6Addr::from(o)
}

/// Writes an IPv6 address at `off`.
#[inline]
pub(crate) fn set_ipv6(b: &mut [u8], off: usize, a: Ipv6Addr) {
    b[off..off + 16].copy_from_slice(&a.octets());
}

/// A high-level description of an IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// The header that follows.
    pub next_header: u8,
    /// Bytes after the fixed header.
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits; higher bits are ignored).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Length of the fixed header.
    pub const HEADER_LEN: usize = 40;

    /// Writes the fixed header into `buf[..40]`; returns 40.
    ///
    /// Errors: `Truncated` if `buf` is shorter than 40 bytes, `BadLength` if the payload
    /// exceeds 65,535 bytes.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let plen = u16::try_from(self.payload_len).map_err(|_| WireError::BadLength)?;
        let h = buf.get_mut(..Self::HEADER_LEN).ok_or(WireError::Truncated)?;
        let flow = self.flow_label & 0x000f_ffff;
        h[0] = 0x60 | (self.traffic_class >> 4);
        h[1] = (self.traffic_class << 4) | (flow >> 16) as u8;
        set_u16(h, 2, flow as u16);
        set_u16(h, 4, plen);
        h[6] = self.next_header;
        h[7] = self.hop_limit;
        set_ipv6(h, 8, self.src);
        set_ipv6(h, 24, self.dst);
        Ok(Self::HEADER_LEN)
    }

    /// Describes a checked packet.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Ipv6Repr {
        Ipv6Repr {
            src: p.src(),
            dst: p.dst(),
            next_header: p.next_header(),
            payload_len: usize::from(p.payload_len()),
            hop_limit: p.hop_limit(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
        }
    }
}

/// What kind of address an IPv6 address is, for the receive path's checks (RFC 4291).
pub trait Ipv6AddrKind {
    /// `fe80::/10`.
    fn is_link_local(&self) -> bool;
    /// The solicited-node multicast group of this address (`ff02::1:ffXX:XXXX`, RFC 4291
    /// section 2.7.1), which Neighbor Solicitations for it are sent to.
    fn solicited_node(&self) -> Ipv6Addr;
}

impl Ipv6AddrKind for Ipv6Addr {
    fn is_link_local(&self) -> bool {
        self.segments()[0] & 0xffc0 == 0xfe80
    }

    fn solicited_node(&self) -> Ipv6Addr {
        let o = self.octets();
        Ipv6Addr::from([0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

    fn repr(payload_len: usize) -> Ipv6Repr {
        Ipv6Repr {
            src: SRC,
            dst: DST,
            next_header: next_header::UDP,
            payload_len,
            hop_limit: 64,
            traffic_class: 0xb8,
            flow_label: 0x12345,
        }
    }

    #[test]
    fn emit_then_parse_round_trips_every_field() {
        let mut b = [0u8; 48];
        assert_eq!(repr(8).emit(&mut b).unwrap(), 40);
        // Version 6, traffic class 0xb8, flow label 0x12345, as laid out on the wire.
        assert_eq!(&b[..4], &[0x6b, 0x81, 0x23, 0x45]);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv6Repr::parse(&p), repr(8));
        assert_eq!(p.payload().len(), 8);
    }

    #[test]
    fn padding_beyond_the_payload_is_cut_off() {
        let mut b = [0u8; 60];
        repr(4).emit(&mut b).unwrap();
        assert_eq!(Ipv6Packet::new_checked(&b[..]).unwrap().payload().len(), 4);
    }

    #[test]
    fn bad_headers_are_refused_by_reason() {
        let mut b = [0u8; 48];
        repr(8).emit(&mut b).unwrap();
        assert_eq!(Ipv6Packet::new_checked(&b[..39]).unwrap_err(), WireError::Truncated);
        assert_eq!(Ipv6Packet::new_checked(&b[..47]).unwrap_err(), WireError::Truncated);
        let mut v4 = b;
        v4[0] = 0x45;
        assert_eq!(Ipv6Packet::new_checked(&v4[..]).unwrap_err(), WireError::BadVersion);
        let mut jumbo = b;
        set_u16(&mut jumbo, 4, 0);
        jumbo[6] = next_header::HOP_BY_HOP;
        assert_eq!(Ipv6Packet::new_checked(&jumbo[..]).unwrap_err(), WireError::Unsupported);
        assert_eq!(repr(70_000).emit(&mut [0u8; 40]).unwrap_err(), WireError::BadLength);
        assert_eq!(repr(0).emit(&mut [0u8; 39]).unwrap_err(), WireError::Truncated);
    }

    #[test]
    fn address_kinds() {
        let ll: Ipv6Addr = "fe80::211:22ff:fe33:4455".parse().unwrap();
        assert!(ll.is_link_local());
        assert!(!SRC.is_link_local());
        assert_eq!(ll.solicited_node(), "ff02::1:ff33:4455".parse::<Ipv6Addr>().unwrap());
    }
}
