//! ARP for Ethernet hardware addresses and IPv4 protocol addresses (RFC 826).

use crate::addr::MacAddr;
use crate::error::WireError;
use crate::field::{get_ipv4, get_mac, get_u16, set_ipv4, set_mac, set_u16};
use std::net::Ipv4Addr;

/// Hardware type for Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Protocol type for IPv4.
pub const PTYPE_IPV4: u16 = 0x0800;

/// The ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOp {
    /// Who has `target_ip`? (op 1)
    Request,
    /// `sender_ip` is at `sender_mac` (op 2).
    Reply,
    /// Any other operation code.
    Other(u16),
}

impl ArpOp {
    /// Decodes an operation code.
    pub fn from_u16(op: u16) -> ArpOp {
        match op {
            1 => ArpOp::Request,
            2 => ArpOp::Reply,
            n => ArpOp::Other(n),
        }
    }

    /// Encodes this operation as its code.
    pub fn to_u16(self) -> u16 {
        match self {
            ArpOp::Request => 1,
            ArpOp::Reply => 2,
            ArpOp::Other(n) => n,
        }
    }
}

/// A zero-copy view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        ArpPacket { buf }
    }

    /// Wraps `buf` after checking length (>= 28, else `Truncated`) and that it
    /// is Ethernet/IPv4 ARP (else `Unsupported`). Trailing bytes are allowed.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < ArpRepr::LEN {
            return Err(WireError::Truncated);
        }
        if get_u16(b, 0) != HTYPE_ETHERNET || get_u16(b, 2) != PTYPE_IPV4 || b[4] != 6 || b[5] != 4 {
            return Err(WireError::Unsupported);
        }
        Ok(ArpPacket { buf })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// The operation.
    pub fn op(&self) -> ArpOp {
        ArpOp::from_u16(get_u16(self.buf.as_ref(), 6))
    }

    /// Sender hardware address.
    pub fn sender_mac(&self) -> MacAddr {
        get_mac(self.buf.as_ref(), 8)
    }

    /// Sender protocol address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        get_ipv4(self.buf.as_ref(), 14)
    }

    /// Target hardware address.
    pub fn target_mac(&self) -> MacAddr {
        get_mac(self.buf.as_ref(), 18)
    }

    /// Target protocol address.
    pub fn target_ip(&self) -> Ipv4Addr {
        get_ipv4(self.buf.as_ref(), 24)
    }
}

/// A high-level description of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// The operation.
    pub op: ArpOp,
    /// Sender hardware address.
    pub sender_mac: MacAddr,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (zero in a request).
    pub target_mac: MacAddr,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Length of an Ethernet/IPv4 ARP packet.
    pub const LEN: usize = 28;

    /// Parses an ARP packet (see [`ArpPacket::new_checked`] for the errors).
    pub fn parse(buf: &[u8]) -> Result<ArpRepr, WireError> {
        let p = ArpPacket::new_checked(buf)?;
        Ok(ArpRepr {
            op: p.op(),
            sender_mac: p.sender_mac(),
            sender_ip: p.sender_ip(),
            target_mac: p.target_mac(),
            target_ip: p.target_ip(),
        })
    }

    /// Writes the 28-byte packet at the start of `buf`; returns 28.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < Self::LEN {
            return Err(WireError::Truncated);
        }
        set_u16(buf, 0, HTYPE_ETHERNET);
        set_u16(buf, 2, PTYPE_IPV4);
        buf[4] = 6;
        buf[5] = 4;
        set_u16(buf, 6, self.op.to_u16());
        set_mac(buf, 8, self.sender_mac);
        set_ipv4(buf, 14, self.sender_ip);
        set_mac(buf, 18, self.target_mac);
        set_ipv4(buf, 24, self.target_ip);
        Ok(Self::LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // ARP payloads of a Linux `arping` exchange (Ethernet header stripped):
    // 10.0.0.1 (52:54:00:12:34:56) asks for 10.0.0.2, which replies from 52:54:00:ab:cd:ef.
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
    ];
    const REPLY: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef, 0x0a, 0x00, 0x00, 0x02,
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00, 0x00, 0x01,
    ];

    #[test]
    fn golden_request() {
        let r = ArpRepr::parse(&REQUEST).unwrap();
        assert_eq!(
            r,
            ArpRepr {
                op: ArpOp::Request,
                sender_mac: MacAddr([0x52, 0x54, 0, 0x12, 0x34, 0x56]),
                sender_ip: Ipv4Addr::new(10, 0, 0, 1),
                target_mac: MacAddr::ZERO,
                target_ip: Ipv4Addr::new(10, 0, 0, 2),
            }
        );
        let mut out = [0u8; 28];
        assert_eq!(r.emit(&mut out), Ok(28));
        assert_eq!(out, REQUEST);
    }

    #[test]
    fn golden_reply() {
        let p = ArpPacket::new_checked(&REPLY[..]).unwrap();
        assert_eq!(p.op(), ArpOp::Reply);
        assert_eq!(p.sender_mac(), MacAddr([0x52, 0x54, 0, 0xab, 0xcd, 0xef]));
        assert_eq!(p.sender_ip(), Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(p.target_mac(), MacAddr([0x52, 0x54, 0, 0x12, 0x34, 0x56]));
        assert_eq!(p.target_ip(), Ipv4Addr::new(10, 0, 0, 1));
        let mut out = [0u8; 28];
        ArpRepr::parse(&REPLY).unwrap().emit(&mut out).unwrap();
        assert_eq!(out, REPLY);
    }

    #[test]
    fn padded_frame_is_accepted() {
        let mut padded = [0u8; 46];
        padded[..28].copy_from_slice(&REQUEST);
        assert!(ArpRepr::parse(&padded).is_ok());
    }

    #[test]
    fn rejects() {
        assert_eq!(ArpRepr::parse(&REQUEST[..27]), Err(WireError::Truncated));
        for (i, v) in [(1, 6u8), (3, 0xdd), (4, 8), (5, 16)] {
            let mut b = REQUEST;
            b[i] = v;
            assert_eq!(ArpRepr::parse(&b), Err(WireError::Unsupported));
        }
        assert_eq!(ArpRepr::parse(&REQUEST).unwrap().emit(&mut [0u8; 27]), Err(WireError::Truncated));
    }

    proptest! {
        #[test]
        fn roundtrip(op in any::<u16>(), sm in any::<[u8; 6]>(), si in any::<u32>(),
                     tm in any::<[u8; 6]>(), ti in any::<u32>()) {
            let r = ArpRepr {
                op: ArpOp::from_u16(op),
                sender_mac: MacAddr(sm),
                sender_ip: si.into(),
                target_mac: MacAddr(tm),
                target_ip: ti.into(),
            };
            let mut buf = [0u8; 28];
            prop_assert_eq!(r.emit(&mut buf), Ok(28));
            prop_assert_eq!(ArpRepr::parse(&buf), Ok(r));
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40), valid_hdr in any::<bool>()) {
            let mut data = data;
            if valid_hdr && data.len() >= 6 {
                data[..6].copy_from_slice(&REQUEST[..6]);
            }
            let _ = ArpRepr::parse(&data);
        }
    }
}
