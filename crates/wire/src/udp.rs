//! UDP datagrams (RFC 768) over IPv4.

use crate::checksum::{combine, fold, ones_sum, transport_checksum, PseudoHeader};
use crate::error::WireError;
use crate::field::{get_u16, set_u16};
use crate::ipv4::protocol;

/// A zero-copy view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        UdpPacket { buf }
    }

    /// Wraps `buf` (the IPv4 payload) after checking the header.
    ///
    /// Errors: `Truncated` if shorter than 8 bytes or than the length field,
    /// `BadLength` if the length field is below 8. Bytes past the length field
    /// are ignored.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < UdpRepr::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = usize::from(get_u16(b, 4));
        if len < UdpRepr::HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if len > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(UdpPacket { buf })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        get_u16(self.buf.as_ref(), 0)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        get_u16(self.buf.as_ref(), 2)
    }

    /// Length field (header + payload).
    pub fn len(&self) -> u16 {
        get_u16(self.buf.as_ref(), 4)
    }

    /// True if the datagram has no payload.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= UdpRepr::HEADER_LEN
    }

    /// Checksum field (0 = not computed).
    pub fn checksum(&self) -> u16 {
        get_u16(self.buf.as_ref(), 6)
    }

    /// The payload, cut at the length field.
    pub fn payload(&self) -> &[u8] {
        let len = usize::from(self.len());
        self.buf.as_ref().get(UdpRepr::HEADER_LEN..len).unwrap_or(&[])
    }

    /// True if the checksum is correct for this pseudo header, or absent (0) over IPv4;
    /// over IPv6 a checksum of 0 is invalid (RFC 8200 section 8.1).
    pub fn verify_checksum<A: PseudoHeader>(&self, src: A, dst: A) -> bool {
        if self.checksum() == 0 {
            return A::UDP_CHECKSUM_OPTIONAL;
        }
        match self.buf.as_ref().get(..usize::from(self.len())) {
            Some(d) => transport_checksum(src, dst, protocol::UDP, d) == 0,
            None => false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Mutable payload, cut at the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        self.buf.as_mut().get_mut(UdpRepr::HEADER_LEN..len).unwrap_or(&mut [])
    }

    /// Recomputes and stores the checksum (a 0 result is sent as 0xffff).
    pub fn fill_checksum<A: PseudoHeader>(&mut self, src: A, dst: A) {
        let len = usize::from(self.len());
        let b = self.buf.as_mut();
        set_u16(b, 6, 0);
        if let Some(d) = b.get(..len) {
            let c = nonzero(transport_checksum(src, dst, protocol::UDP, d));
            set_u16(b, 6, c);
        }
    }
}

/// UDP transmits a computed checksum of 0 as 0xffff (0 means "none").
#[inline]
fn nonzero(c: u16) -> u16 {
    if c == 0 {
        0xffff
    } else {
        c
    }
}

/// A high-level description of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// Length of the UDP header.
    pub const HEADER_LEN: usize = 8;

    /// Writes the header in front of a payload ALREADY at `buf[8..8 + payload_len]`
    /// and fills the checksum; returns `8 + payload_len`.
    ///
    /// Errors: `Truncated` if `buf` is too short, `BadLength` if the datagram
    /// would exceed 65535 bytes.
    pub fn emit<A: PseudoHeader>(
        &self,
        buf: &mut [u8],
        src: A,
        dst: A,
        payload_len: usize,
    ) -> Result<usize, WireError> {
        let end = payload_len.checked_add(Self::HEADER_LEN).ok_or(WireError::BadLength)?;
        let payload_sum = ones_sum(buf.get(Self::HEADER_LEN..end).ok_or(WireError::Truncated)?);
        self.emit_summed(buf, src, dst, payload_len, payload_sum)
    }

    /// [`Self::emit`] for a payload whose ones-complement sum the caller already has (taken
    /// while copying it in, [`crate::checksum::copy_with_sum`]): the payload is not read again,
    /// and the header's words are summed from their values, not read back from `buf`.
    pub fn emit_summed<A: PseudoHeader>(
        &self,
        buf: &mut [u8],
        src: A,
        dst: A,
        payload_len: usize,
        payload_sum: u64,
    ) -> Result<usize, WireError> {
        let len = self.emit_without_checksum(buf, payload_len)?;
        let len16 = len as u16; // checked by emit_without_checksum
        let header = u64::from(self.src_port) + u64::from(self.dst_port) + u64::from(len16);
        let pseudo = A::pseudo_sum(src, dst, protocol::UDP, u32::from(len16));
        let c = nonzero(!fold(combine(combine(pseudo, header), payload_sum)));
        set_u16(&mut buf[..len], 6, c);
        Ok(len)
    }

    /// As [`UdpRepr::emit`] but with checksum 0, "no checksum" (RFC 768, IPv4 only): for
    /// protocols that check their payload's integrity themselves. Receivers accept it.
    pub fn emit_without_checksum(&self, buf: &mut [u8], payload_len: usize) -> Result<usize, WireError> {
        let len = payload_len.checked_add(Self::HEADER_LEN).ok_or(WireError::BadLength)?;
        let len16 = u16::try_from(len).map_err(|_| WireError::BadLength)?;
        let d = buf.get_mut(..len).ok_or(WireError::Truncated)?;
        set_u16(d, 0, self.src_port);
        set_u16(d, 2, self.dst_port);
        set_u16(d, 4, len16);
        set_u16(d, 6, 0);
        Ok(len)
    }

    /// Describes a checked datagram.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> UdpRepr {
        UdpRepr { src_port: p.src_port(), dst_port: p.dst_port() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 10);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
    // UDP part of a DNS query for example.com (A, RD) from 54321 to 53, checksum 1984.
    const DNS: [u8; 37] = [
        0xd4, 0x31, 0x00, 0x35, 0x00, 0x25, 0x19, 0x84, 0xbe, 0xef, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00,
        0x01,
    ];

    #[test]
    fn golden_dns_query() {
        let p = UdpPacket::new_checked(&DNS[..]).unwrap();
        assert_eq!(p.src_port(), 54321);
        assert_eq!(p.dst_port(), 53);
        assert_eq!(p.len(), 37);
        assert!(!p.is_empty());
        assert_eq!(p.checksum(), 0x1984);
        assert!(p.verify_checksum(SRC, DST));
        assert!(!p.verify_checksum(SRC, Ipv4Addr::new(192, 168, 1, 2)));
        assert_eq!(p.payload(), &DNS[8..]);
        let r = UdpRepr::parse(&p);
        let mut out = [0u8; 37];
        out[8..].copy_from_slice(&DNS[8..]);
        assert_eq!(r.emit(&mut out, SRC, DST, 29), Ok(37));
        assert_eq!(out, DNS);
    }

    #[test]
    fn zero_checksum_and_padding() {
        let mut b = DNS.to_vec();
        b[6] = 0;
        b[7] = 0;
        b.extend_from_slice(&[0, 0, 0]); // trailing padding beyond the length field
        let mut p = UdpPacket::new_checked(&mut b[..]).unwrap();
        assert!(p.verify_checksum(SRC, Ipv4Addr::UNSPECIFIED));
        assert_eq!(p.payload().len(), 29);
        p.payload_mut()[0] = 0;
        p.fill_checksum(SRC, DST);
        assert!(p.verify_checksum(SRC, DST));
        assert_ne!(p.checksum(), 0);
    }

    #[test]
    fn emitted_without_checksum_carries_zero_and_verifies() {
        let r = UdpRepr { src_port: 4791, dst_port: 18791 };
        let mut buf = [0xaau8; 12];
        assert_eq!(r.emit_without_checksum(&mut buf, 4), Ok(12));
        assert_eq!(&buf[..8], &[0x12, 0xb7, 0x49, 0x67, 0, 12, 0, 0]);
        assert_eq!(&buf[8..], &[0xaa; 4], "the payload is left alone");
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.checksum()), (4791, 18791, 0));
        assert!(p.verify_checksum(SRC, DST));
        assert_eq!(r.emit_without_checksum(&mut [0u8; 9], 2), Err(WireError::Truncated));
        assert_eq!(r.emit_without_checksum(&mut vec![0u8; 70000], 65528), Err(WireError::BadLength));
    }

    #[test]
    fn zero_result_sent_as_ffff() {
        // Search for a payload word that makes the computed checksum 0.
        let r = UdpRepr { src_port: 1, dst_port: 2 };
        let src = Ipv4Addr::new(10, 0, 0, 1);
        let dst = Ipv4Addr::new(10, 0, 0, 2);
        let mut buf = [0u8; 10];
        r.emit(&mut buf, src, dst, 2).unwrap();
        let c = u16::from_be_bytes([buf[6], buf[7]]);
        // Adding the checksum value into the payload drives the sum to all-ones.
        buf[8..10].copy_from_slice(&c.to_be_bytes());
        r.emit(&mut buf, src, dst, 2).unwrap();
        assert_eq!(&buf[6..8], &[0xff, 0xff]);
        assert!(UdpPacket::new_checked(&buf[..]).unwrap().verify_checksum(src, dst));
    }

    #[test]
    fn errors() {
        assert_eq!(UdpPacket::new_checked(&DNS[..7]).err(), Some(WireError::Truncated));
        assert_eq!(UdpPacket::new_checked(&DNS[..36]).err(), Some(WireError::Truncated));
        let mut b = DNS;
        b[5] = 7;
        assert_eq!(UdpPacket::new_checked(&b[..]).err(), Some(WireError::BadLength));
        let r = UdpRepr { src_port: 1, dst_port: 2 };
        assert_eq!(r.emit(&mut [0u8; 9], SRC, DST, 2), Err(WireError::Truncated));
        let mut big = vec![0u8; 70000];
        assert_eq!(r.emit(&mut big, SRC, DST, 65528), Err(WireError::BadLength));
        assert_eq!(r.emit(&mut big, SRC, DST, 65527), Ok(65535));
    }

    proptest! {
        #[test]
        fn roundtrip(sp in any::<u16>(), dp in any::<u16>(), s in any::<u32>(), d in any::<u32>(),
                     payload in proptest::collection::vec(any::<u8>(), 0..200)) {
            let r = UdpRepr { src_port: sp, dst_port: dp };
            let (src, dst) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let mut buf = vec![0u8; 8 + payload.len()];
            buf[8..].copy_from_slice(&payload);
            prop_assert_eq!(r.emit(&mut buf, src, dst, payload.len()), Ok(8 + payload.len()));
            let p = UdpPacket::new_checked(&buf[..]).unwrap();
            prop_assert!(p.checksum() != 0);
            prop_assert!(p.verify_checksum(src, dst));
            prop_assert_eq!(UdpRepr::parse(&p), r);
            prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn emit_summed_with_the_copy_sum_writes_the_classic_checksum(
            sp in any::<u16>(), dp in any::<u16>(), s in any::<u32>(), d in any::<u32>(),
            payload in proptest::collection::vec(any::<u8>(), 0..3000),
        ) {
            let r = UdpRepr { src_port: sp, dst_port: dp };
            let (src, dst) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let mut buf = vec![0u8; 8 + payload.len()];
            let sum = crate::checksum::copy_with_sum(&mut buf[8..], &payload);
            prop_assert_eq!(r.emit_summed(&mut buf, src, dst, payload.len(), sum), Ok(8 + payload.len()));
            // The checksum as RFC 768 computes it: over the datagram with the field zeroed.
            let mut zeroed = buf.clone();
            zeroed[6..8].fill(0);
            let want = nonzero(transport_checksum(src, dst, protocol::UDP, &zeroed));
            prop_assert_eq!(get_u16(&buf, 6), want);
            prop_assert_eq!(&buf[8..], &payload[..]);
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(p) = UdpPacket::new_checked(&data[..]) {
                let _ = (p.payload().len(), p.verify_checksum(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST));
                let _ = UdpRepr::parse(&p);
            }
        }
    }
}
