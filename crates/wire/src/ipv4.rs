//! IPv4 headers (RFC 791).

use crate::checksum::{checksum, update16};
use crate::error::WireError;
use crate::field::{get_ipv4, get_u16, set_ipv4, set_u16};
use std::net::Ipv4Addr;

/// IP protocol numbers carried in the IPv4 `protocol` field.
pub mod protocol {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
}

/// "Don't fragment" bit in the flags/fragment-offset word.
const FLAG_DF: u16 = 0x4000;
/// "More fragments" bit in the flags/fragment-offset word.
const FLAG_MF: u16 = 0x2000;
/// Fragment offset mask (in 8-byte units).
const FRAG_MASK: u16 = 0x1fff;
/// Offset of the checksum field.
const CHECKSUM_OFF: usize = 10;

/// A zero-copy view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        Ipv4Packet { buf }
    }

    /// Wraps `buf` after validating the header.
    ///
    /// Errors: `Truncated` (buffer shorter than 20 bytes, than the header, or
    /// than `total_len`), `BadVersion` (not 4), `BadHeaderLen` (IHL < 5),
    /// `BadTotalLen` (`total_len` < header length). The buffer may be longer
    /// than `total_len` (Ethernet padding); [`Self::payload`] stops at `total_len`.
    /// The checksum is not verified here (see [`Self::verify_checksum`]).
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < Ipv4Repr::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 4 {
            return Err(WireError::BadVersion);
        }
        let hl = usize::from(b[0] & 0x0f) * 4;
        if hl < Ipv4Repr::HEADER_LEN {
            return Err(WireError::BadHeaderLen);
        }
        if hl > b.len() {
            return Err(WireError::Truncated);
        }
        let total = usize::from(get_u16(b, 2));
        if total < hl {
            return Err(WireError::BadTotalLen);
        }
        if total > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Ipv4Packet { buf })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// IP version (4 for a checked packet).
    pub fn version(&self) -> u8 {
        self.buf.as_ref()[0] >> 4
    }

    /// Header length in bytes (IHL * 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buf.as_ref()[0] & 0x0f) * 4
    }

    /// The DSCP/ECN byte (formerly TOS).
    pub fn dscp_ecn(&self) -> u8 {
        self.buf.as_ref()[1]
    }

    /// Total length field (header + payload) in bytes.
    pub fn total_len(&self) -> u16 {
        get_u16(self.buf.as_ref(), 2)
    }

    /// Identification field.
    pub fn ident(&self) -> u16 {
        get_u16(self.buf.as_ref(), 4)
    }

    /// The underlying bytes (the whole buffer, not only up to the total length).
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        get_u16(self.buf.as_ref(), 6) & FLAG_DF != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        get_u16(self.buf.as_ref(), 6) & FLAG_MF != 0
    }

    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (get_u16(self.buf.as_ref(), 6) & FRAG_MASK) << 3
    }

    /// True if this packet is a fragment (MF set or non-zero offset).
    pub fn is_fragment(&self) -> bool {
        get_u16(self.buf.as_ref(), 6) & (FLAG_MF | FRAG_MASK) != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buf.as_ref()[8]
    }

    /// Payload protocol (see [`protocol`]).
    pub fn protocol(&self) -> u8 {
        self.buf.as_ref()[9]
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        get_u16(self.buf.as_ref(), CHECKSUM_OFF)
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        get_ipv4(self.buf.as_ref(), 12)
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        get_ipv4(self.buf.as_ref(), 16)
    }

    /// The raw option bytes between the fixed header and the payload (not interpreted).
    pub fn options(&self) -> &[u8] {
        let hl = self.header_len();
        self.buf.as_ref().get(Ipv4Repr::HEADER_LEN..hl).unwrap_or(&[])
    }

    /// The payload, from the end of the header up to `total_len`.
    pub fn payload(&self) -> &[u8] {
        let (hl, total) = (self.header_len(), usize::from(self.total_len()));
        self.buf.as_ref().get(hl..total).unwrap_or(&[])
    }

    /// True if the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        match self.buf.as_ref().get(..self.header_len()) {
            Some(h) => checksum(h) == 0,
            None => false,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the TTL (checksum not updated).
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buf.as_mut()[8] = ttl;
    }

    /// Sets the source address (checksum not updated).
    pub fn set_src(&mut self, a: Ipv4Addr) {
        set_ipv4(self.buf.as_mut(), 12, a);
    }

    /// Sets the destination address (checksum not updated).
    pub fn set_dst(&mut self, a: Ipv4Addr) {
        set_ipv4(self.buf.as_mut(), 16, a);
    }

    /// Sets the flags/fragment-offset word: DF, MF and the offset in bytes (a multiple of 8,
    /// below 65,536). The checksum is not updated (see [`Self::fill_checksum`]).
    pub fn set_frag(&mut self, dont_frag: bool, more_frags: bool, offset: usize) {
        let mut w = ((offset >> 3) as u16) & FRAG_MASK;
        if dont_frag {
            w |= FLAG_DF;
        }
        if more_frags {
            w |= FLAG_MF;
        }
        set_u16(self.buf.as_mut(), 6, w);
    }

    /// Sets the total-length field (the checksum is not updated).
    pub fn set_total_len(&mut self, len: u16) {
        set_u16(self.buf.as_mut(), 2, len);
    }

    /// Recomputes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len();
        let b = self.buf.as_mut();
        set_u16(b, CHECKSUM_OFF, 0);
        if let Some(h) = b.get(..hl) {
            let c = checksum(h);
            set_u16(b, CHECKSUM_OFF, c);
        }
    }

    /// Mutable payload, from the end of the header up to `total_len`.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, total) = (self.header_len(), usize::from(self.total_len()));
        self.buf.as_mut().get_mut(hl..total).unwrap_or(&mut [])
    }

    /// Decrements the TTL by one and patches the checksum incrementally (RFC 1624).
    ///
    /// Returns the new TTL. A TTL of 0 is left unchanged (the caller should
    /// have dropped the packet already).
    pub fn decrement_ttl_incremental(&mut self) -> u8 {
        let b = self.buf.as_mut();
        let ttl = b[8];
        if ttl == 0 {
            return 0;
        }
        let old = get_u16(b, 8);
        b[8] = ttl - 1;
        let new = get_u16(b, 8);
        let c = update16(get_u16(b, CHECKSUM_OFF), old, new);
        set_u16(b, CHECKSUM_OFF, c);
        ttl - 1
    }
}

/// A high-level description of an IPv4 header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Payload protocol (see [`protocol`]).
    pub protocol: u8,
    /// Payload length in bytes (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// Identification field.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// The DSCP/ECN byte.
    pub dscp_ecn: u8,
}

impl Ipv4Repr {
    /// Length of the option-less header that [`Self::emit`] writes.
    pub const HEADER_LEN: usize = 20;

    /// Writes a 20-byte header (checksum filled) at the start of `buf`; returns 20.
    ///
    /// Errors: `Truncated` if `buf` is shorter than 20 bytes, `BadLength` if
    /// `payload_len + 20` does not fit the 16-bit total-length field.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let total = self
            .payload_len
            .checked_add(Self::HEADER_LEN)
            .and_then(|t| u16::try_from(t).ok())
            .ok_or(WireError::BadLength)?;
        let out = buf.get_mut(..Self::HEADER_LEN).ok_or(WireError::Truncated)?;
        // Built and summed on the stack, then copied: the frame may lie in memory another core
        // reads next, where reading back fresh narrow stores would wait for them to land.
        let mut header = [0u8; Self::HEADER_LEN];
        let h = &mut header[..];
        h[0] = 0x45;
        h[1] = self.dscp_ecn;
        set_u16(h, 2, total);
        set_u16(h, 4, self.ident);
        set_u16(h, 6, if self.dont_frag { FLAG_DF } else { 0 });
        h[8] = self.ttl;
        h[9] = self.protocol;
        set_u16(h, CHECKSUM_OFF, 0);
        set_ipv4(h, 12, self.src);
        set_ipv4(h, 16, self.dst);
        let c = checksum(h);
        set_u16(h, CHECKSUM_OFF, c);
        out.copy_from_slice(h);
        Ok(Self::HEADER_LEN)
    }

    /// Writes a header carrying `options` (a multiple of 4 bytes, at most 40) at the start of
    /// `buf`, checksum filled; returns the header length. `payload_len` excludes the options.
    ///
    /// Errors: `BadHeaderLen` for options of a bad length, else as [`Self::emit`].
    pub fn emit_with_options(&self, buf: &mut [u8], options: &[u8]) -> Result<usize, WireError> {
        if !options.len().is_multiple_of(4) || options.len() > 40 {
            return Err(WireError::BadHeaderLen);
        }
        let hl = Self::HEADER_LEN + options.len();
        let widened = Ipv4Repr { payload_len: self.payload_len + options.len(), ..*self };
        widened.emit(buf)?;
        let h = buf.get_mut(..hl).ok_or(WireError::Truncated)?;
        h[0] = 0x40 | (hl / 4) as u8;
        h[Self::HEADER_LEN..].copy_from_slice(options);
        set_u16(h, CHECKSUM_OFF, 0);
        let c = checksum(h);
        set_u16(h, CHECKSUM_OFF, c);
        Ok(hl)
    }

    /// Describes a checked packet (options, MF and fragment offset are not represented).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Ipv4Repr {
        Ipv4Repr {
            src: p.src(),
            dst: p.dst(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()).saturating_sub(p.header_len()),
            ttl: p.ttl(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            dscp_ecn: p.dscp_ecn(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // IPv4 header of a Linux `ping -c1 10.0.0.2` echo request (84 bytes total),
    // followed by the first 4 bytes of its ICMP header.
    const PING_HDR: [u8; 24] = [
        0x45, 0x00, 0x00, 0x54, 0x3a, 0x8c, 0x40, 0x00, 0x40, 0x01, 0xec, 0x1a, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00,
        0x00, 0x02, 0x08, 0x00, 0x00, 0x00,
    ];

    fn ping_packet() -> Vec<u8> {
        let mut v = vec![0u8; 84];
        v[..24].copy_from_slice(&PING_HDR);
        v
    }

    #[test]
    fn golden_ping_header() {
        let v = ping_packet();
        let p = Ipv4Packet::new_checked(&v[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.total_len(), 84);
        assert_eq!(p.ident(), 0x3a8c);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert!(!p.is_fragment());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), protocol::ICMP);
        assert_eq!(p.checksum(), 0xec1a);
        assert!(p.verify_checksum());
        assert_eq!(p.src(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.dst(), Ipv4Addr::new(10, 0, 0, 2));
        assert!(p.options().is_empty());
        assert_eq!(p.payload().len(), 64);
        let r = Ipv4Repr::parse(&p);
        assert_eq!(r.payload_len, 64);
        let mut out = [0u8; 20];
        assert_eq!(r.emit(&mut out), Ok(20));
        assert_eq!(out[..], PING_HDR[..20]);
    }

    #[test]
    fn padding_is_cut_and_options_skipped() {
        // 24-byte header with a Router Alert option (RFC 2113), 2-byte payload, 4 bytes of padding.
        let mut v = vec![
            0x46, 0x00, 0x00, 0x1a, 0x00, 0x01, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x01, 0xe0, 0x00,
            0x00, 0x16, 0x94, 0x04, 0x00, 0x00, 0xaa, 0xbb, 0, 0, 0, 0,
        ];
        let mut p = Ipv4Packet::new_checked(&mut v[..]).unwrap();
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        p.payload_mut()[0] = 0xcc;
        assert_eq!(p.payload(), &[0xcc, 0xbb]);
        assert_eq!(Ipv4Repr::parse(&p).payload_len, 2);
    }

    #[test]
    fn fragments() {
        let mut v = ping_packet();
        v[6] = 0x20; // MF, offset 0
        v[7] = 0x00;
        let p = Ipv4Packet::new_checked(&v[..]).unwrap();
        assert!(p.more_frags() && p.is_fragment() && !p.dont_frag());
        v[6] = 0x00;
        v[7] = 0xb9; // offset 185 * 8 = 1480
        let p = Ipv4Packet::new_checked(&v[..]).unwrap();
        assert_eq!(p.frag_offset(), 1480);
        assert!(p.is_fragment() && !p.more_frags());
    }

    #[test]
    fn errors() {
        let v = ping_packet();
        assert_eq!(Ipv4Packet::new_checked(&v[..19]).err(), Some(WireError::Truncated));
        assert_eq!(Ipv4Packet::new_checked(&v[..83]).err(), Some(WireError::Truncated));
        let mut b = v.clone();
        b[0] = 0x65;
        assert_eq!(Ipv4Packet::new_checked(&b[..]).err(), Some(WireError::BadVersion));
        b[0] = 0x44;
        assert_eq!(Ipv4Packet::new_checked(&b[..]).err(), Some(WireError::BadHeaderLen));
        b[0] = 0x4f;
        assert_eq!(Ipv4Packet::new_checked(&b[..40]).err(), Some(WireError::Truncated));
        b[0] = 0x45;
        b[2] = 0;
        b[3] = 19;
        assert_eq!(Ipv4Packet::new_checked(&b[..]).err(), Some(WireError::BadTotalLen));
        let mut c = v.clone();
        c[11] ^= 1;
        assert!(!Ipv4Packet::new_checked(&c[..]).unwrap().verify_checksum());
        let r = Ipv4Repr::parse(&Ipv4Packet::new_checked(&v[..]).unwrap());
        assert_eq!(r.emit(&mut [0u8; 19]), Err(WireError::Truncated));
        let big = Ipv4Repr { payload_len: 65516, ..r };
        assert_eq!(big.emit(&mut [0u8; 20]), Err(WireError::BadLength));
        let max = Ipv4Repr { payload_len: 65515, ..r };
        assert_eq!(max.emit(&mut [0u8; 20]), Ok(20));
    }

    #[test]
    fn setters_and_ttl() {
        let mut v = ping_packet();
        let mut p = Ipv4Packet::new_checked(&mut v[..]).unwrap();
        assert_eq!(p.decrement_ttl_incremental(), 63);
        assert!(p.verify_checksum());
        let inc = p.checksum();
        p.fill_checksum();
        assert_eq!(p.checksum(), inc);
        p.set_ttl(1);
        p.set_src(Ipv4Addr::new(192, 168, 1, 1));
        p.set_dst(Ipv4Addr::new(192, 168, 1, 2));
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(p.decrement_ttl_incremental(), 0);
        assert!(p.verify_checksum());
        assert_eq!(p.decrement_ttl_incremental(), 0);
        assert_eq!(p.src(), Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(p.dst(), Ipv4Addr::new(192, 168, 1, 2));
    }

    fn arb_repr() -> impl Strategy<Value = Ipv4Repr> {
        (any::<u32>(), any::<u32>(), any::<u8>(), 0usize..=65515, any::<u8>(), any::<u16>(), any::<bool>(), any::<u8>())
            .prop_map(|(s, d, protocol, payload_len, ttl, ident, dont_frag, dscp_ecn)| Ipv4Repr {
                src: s.into(),
                dst: d.into(),
                protocol,
                payload_len,
                ttl,
                ident,
                dont_frag,
                dscp_ecn,
            })
    }

    proptest! {
        #[test]
        fn roundtrip(r in arb_repr()) {
            let mut buf = vec![0u8; Ipv4Repr::HEADER_LEN + r.payload_len];
            prop_assert_eq!(r.emit(&mut buf), Ok(20));
            let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(p.verify_checksum());
            prop_assert_eq!(Ipv4Repr::parse(&p), r);
            prop_assert_eq!(p.payload().len(), r.payload_len);
        }

        #[test]
        fn ttl_decrement_matches_recompute(r in arb_repr()) {
            prop_assume!(r.ttl > 0);
            let mut buf = [0u8; 20];
            let r = Ipv4Repr { payload_len: 0, ..r };
            r.emit(&mut buf).unwrap();
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            p.decrement_ttl_incremental();
            let inc = p.checksum();
            p.fill_checksum();
            prop_assert_eq!(inc, p.checksum());
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..80), fix in any::<bool>()) {
            let mut data = data;
            if fix && !data.is_empty() {
                data[0] = 0x40 | (data[0] & 0x0f);
            }
            if let Ok(p) = Ipv4Packet::new_checked(&data[..]) {
                let _ = (p.options().len(), p.payload().len(), p.verify_checksum(), p.frag_offset());
                let _ = Ipv4Repr::parse(&p);
            }
        }
    }
}
