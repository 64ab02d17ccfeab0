//! The TCP header view ([`TcpSegment`]) and builder ([`TcpRepr`]).

use super::options::{TcpOptions, TcpOptionsIter};
use super::{HEADER_LEN, MAX_HEADER_LEN};
use crate::checksum::{combine, fold, ones_sum, transport_checksum, PseudoHeader};
use crate::error::WireError;
use crate::field::{get_u16, get_u32, set_u16, set_u32};
use crate::ipv4::protocol;

/// Offset of the checksum field.
const CHECKSUM_OFF: usize = 16;

/// A zero-copy view of a TCP segment; the buffer is exactly the segment (the IPv4 payload).
#[derive(Debug, Clone)]
pub struct TcpSegment<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> TcpSegment<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        TcpSegment { buf }
    }

    /// Wraps `buf` after checking the header.
    ///
    /// Errors: `Truncated` if shorter than 20 bytes, `BadHeaderLen` if the
    /// data offset is below 5 or the header runs past the buffer. Options are
    /// checked lazily by [`Self::options`].
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = usize::from(b[12] >> 4) * 4;
        if hl < HEADER_LEN || hl > b.len() {
            return Err(WireError::BadHeaderLen);
        }
        Ok(TcpSegment { buf })
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

    /// Sequence number.
    pub fn seq(&self) -> u32 {
        get_u32(self.buf.as_ref(), 4)
    }

    /// Acknowledgment number.
    pub fn ack(&self) -> u32 {
        get_u32(self.buf.as_ref(), 8)
    }

    /// Header length in bytes (data offset * 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buf.as_ref()[12] >> 4) * 4
    }

    /// Flag byte (see [`super::flags`]).
    pub fn flags(&self) -> u8 {
        self.buf.as_ref()[13]
    }

    /// Receive window (unscaled).
    pub fn window(&self) -> u16 {
        get_u16(self.buf.as_ref(), 14)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        get_u16(self.buf.as_ref(), CHECKSUM_OFF)
    }

    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        get_u16(self.buf.as_ref(), 18)
    }

    /// Iterator over the options area.
    pub fn options(&self) -> TcpOptionsIter<'_> {
        TcpOptionsIter::new(self.options_bytes())
    }

    /// The options area: the bytes between the fixed header and the payload.
    pub fn options_bytes(&self) -> &[u8] {
        let hl = self.header_len();
        self.buf.as_ref().get(HEADER_LEN..hl).unwrap_or(&[])
    }

    /// The payload (everything after the header).
    pub fn payload(&self) -> &[u8] {
        self.buf.as_ref().get(self.header_len()..).unwrap_or(&[])
    }

    /// True if the checksum over pseudo header + whole segment is correct.
    pub fn verify_checksum<A: PseudoHeader>(&self, src: A, dst: A) -> bool {
        transport_checksum(src, dst, protocol::TCP, self.buf.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpSegment<T> {
    /// Sets the source port (checksum not updated).
    pub fn set_src_port(&mut self, port: u16) {
        set_u16(self.buf.as_mut(), 0, port);
    }

    /// Sets the destination port (checksum not updated).
    pub fn set_dst_port(&mut self, port: u16) {
        set_u16(self.buf.as_mut(), 2, port);
    }

    /// Sets the sequence number (checksum not updated).
    pub fn set_seq(&mut self, seq: u32) {
        set_u32(self.buf.as_mut(), 4, seq);
    }

    /// Sets the acknowledgment number (checksum not updated).
    pub fn set_ack(&mut self, ack: u32) {
        set_u32(self.buf.as_mut(), 8, ack);
    }

    /// Sets the window (checksum not updated).
    pub fn set_window(&mut self, window: u16) {
        set_u16(self.buf.as_mut(), 14, window);
    }

    /// Sets the flag byte (checksum not updated).
    pub fn set_flags(&mut self, flags: u8) {
        self.buf.as_mut()[13] = flags;
    }

    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        self.buf.as_mut().get_mut(hl..).unwrap_or(&mut [])
    }

    /// Recomputes and stores the checksum over pseudo header + whole segment.
    pub fn fill_checksum<A: PseudoHeader>(&mut self, src: A, dst: A) {
        let b = self.buf.as_mut();
        set_u16(b, CHECKSUM_OFF, 0);
        let c = transport_checksum(src, dst, protocol::TCP, b);
        set_u16(b, CHECKSUM_OFF, c);
    }
}

/// A high-level description of a TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flag byte (see [`super::flags`]).
    pub flags: u8,
    /// Receive window (unscaled).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// Options.
    pub options: TcpOptions,
}

impl TcpRepr {
    /// Header length [`Self::emit`] writes: 20 + options, at most 60.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.emitted_len()
    }

    /// Writes the header in front of a payload ALREADY at
    /// `buf[header_len..header_len + payload_len]` and fills the checksum;
    /// returns `header_len + payload_len`.
    ///
    /// Errors: `Truncated` if `buf` is too short, `BadLength` if the segment
    /// would exceed 65535 bytes.
    pub fn emit<A: PseudoHeader>(
        &self,
        buf: &mut [u8],
        src: A,
        dst: A,
        payload_len: usize,
    ) -> Result<usize, WireError> {
        let hl = self.header_len();
        let end = hl.checked_add(payload_len).filter(|&n| n <= usize::from(u16::MAX)).ok_or(WireError::BadLength)?;
        let payload_sum = ones_sum(buf.get(hl..end).ok_or(WireError::Truncated)?);
        self.emit_summed(buf, src, dst, payload_len, payload_sum)
    }

    /// [`Self::emit`] for a payload whose ones-complement sum the caller already has (taken
    /// while copying it in, [`crate::checksum::copy_with_sum`]): only the header is summed.
    pub fn emit_summed<A: PseudoHeader>(
        &self,
        buf: &mut [u8],
        src: A,
        dst: A,
        payload_len: usize,
        payload_sum: u64,
    ) -> Result<usize, WireError> {
        self.emit_summed_addrs(buf, A::pseudo_sum(src, dst, 0, 0), payload_len, payload_sum)
    }

    /// [`Self::emit_summed`] with the pseudo header's two addresses already summed
    /// (`addr_sum`: [`PseudoHeader::pseudo_sum`] of them with protocol and length 0), so a
    /// caller that learned the family once passes no addresses down.
    pub fn emit_summed_addrs(
        &self,
        buf: &mut [u8],
        addr_sum: u64,
        payload_len: usize,
        payload_sum: u64,
    ) -> Result<usize, WireError> {
        let hl = self.header_len();
        let len = hl.checked_add(payload_len).ok_or(WireError::BadLength)?;
        if len > usize::from(u16::MAX) {
            return Err(WireError::BadLength);
        }
        let seg = buf.get_mut(..len).ok_or(WireError::Truncated)?;
        // The header is built and summed on the stack, then copied: the frame may lie in
        // memory another core reads next, where reading back fresh narrow stores would wait
        // for them to land.
        let mut header = [0u8; MAX_HEADER_LEN];
        let h = header.get_mut(..hl).ok_or(WireError::BadHeaderLen)?;
        set_u16(h, 0, self.src_port);
        set_u16(h, 2, self.dst_port);
        set_u32(h, 4, self.seq);
        set_u32(h, 8, self.ack);
        h[12] = ((hl / 4) as u8) << 4;
        h[13] = self.flags;
        set_u16(h, 14, self.window);
        set_u16(h, CHECKSUM_OFF, 0);
        set_u16(h, 18, self.urgent);
        self.options.emit(&mut h[HEADER_LEN..hl])?;
        // The header is a whole number of 32-bit words, so the payload's sum adds as it is.
        let pseudo = addr_sum + u64::from(protocol::TCP) + len as u64;
        let c = !fold(combine(combine(pseudo, ones_sum(h)), payload_sum));
        set_u16(h, CHECKSUM_OFF, c);
        seg[..hl].copy_from_slice(h);
        Ok(len)
    }

    /// Describes a checked segment; fails with `BadOption` on malformed options.
    /// The checksum is not verified here (see [`TcpSegment::verify_checksum`]).
    pub fn parse<T: AsRef<[u8]>>(seg: &TcpSegment<T>) -> Result<TcpRepr, WireError> {
        Ok(TcpRepr {
            src_port: seg.src_port(),
            dst_port: seg.dst_port(),
            seq: seg.seq(),
            ack: seg.ack(),
            flags: seg.flags(),
            window: seg.window(),
            urgent: seg.urgent(),
            options: TcpOptions::from_bytes(seg.options_bytes())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::flags;
    use super::super::options::tests::{arb_options, expected_after_roundtrip};
    use super::super::TcpOption;
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// Linux SYN 10.0.0.1:40000 -> 10.0.0.2:5001, win 64240,
    /// options [mss 1460,sackOK,TS val 2845234021 ecr 0,nop,wscale 7], checksum 13e3.
    const SYN: [u8; 40] = [
        0x9c, 0x40, 0x13, 0x89, 0x5e, 0x1c, 0x9a, 0x47, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0, 0x13, 0xe3,
        0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0xa9, 0x96, 0xd3, 0x65, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x03, 0x03, 0x07,
    ];

    /// 10.0.0.2:5001 -> 10.0.0.1:40000 [P.] with options
    /// [nop,nop,TS val 1000 ecr 2845234021,nop,nop,sack 2 {100:200}{300:400}], "hello", checksum 555d.
    const DATA_SACK: [u8; 57] = [
        0x13, 0x89, 0x9c, 0x40, 0x11, 0x22, 0x33, 0x44, 0x5e, 0x1c, 0x9a, 0x48, 0xd0, 0x18, 0x01, 0xf6, 0x55, 0x5d,
        0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0x00, 0x00, 0x03, 0xe8, 0xa9, 0x96, 0xd3, 0x65, 0x01, 0x01, 0x05, 0x12,
        0x00, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00, 0xc8, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x00, 0x01, 0x90, 0x68, 0x65,
        0x6c, 0x6c, 0x6f,
    ];

    #[test]
    fn golden_linux_syn() {
        let s = TcpSegment::new_checked(&SYN[..]).unwrap();
        assert_eq!(s.src_port(), 40000);
        assert_eq!(s.dst_port(), 5001);
        assert_eq!(s.seq(), 0x5e1c9a47);
        assert_eq!(s.ack(), 0);
        assert_eq!(s.header_len(), 40);
        assert_eq!(s.flags(), flags::SYN);
        assert_eq!(s.window(), 64240);
        assert_eq!(s.checksum(), 0x13e3);
        assert_eq!(s.urgent(), 0);
        assert!(s.payload().is_empty());
        assert!(s.verify_checksum(A, B));
        assert!(!s.verify_checksum(A, Ipv4Addr::new(10, 0, 0, 3)));
        assert_eq!(s.options().count(), 5);
        let r = TcpRepr::parse(&s).unwrap();
        assert_eq!(
            r.options,
            TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((2845234021, 0)),
                sack_blocks: [None; 4],
            }
        );
        assert_eq!(r.header_len(), 40);
        let mut out = [0u8; 40];
        assert_eq!(r.emit(&mut out, A, B, 0), Ok(40));
        assert_eq!(out, SYN);
    }

    #[test]
    fn golden_data_with_sack() {
        let s = TcpSegment::new_checked(&DATA_SACK[..]).unwrap();
        assert_eq!(s.flags(), flags::PSH | flags::ACK);
        assert_eq!(s.header_len(), 52);
        assert_eq!(s.payload(), b"hello");
        assert!(s.verify_checksum(B, A));
        let sack = s.options().find(|o| matches!(o, Ok(TcpOption::Sack(_))));
        assert_eq!(sack, Some(Ok(TcpOption::Sack([Some((100, 200)), Some((300, 400)), None, None]))));
        let r = TcpRepr::parse(&s).unwrap();
        assert_eq!(r.options.timestamps, Some((1000, 2845234021)));
        assert_eq!(r.ack, 0x5e1c9a48);
        assert_eq!(r.window, 502);
        let mut out = [0u8; 57];
        out[52..].copy_from_slice(b"hello");
        assert_eq!(r.emit(&mut out, B, A, 5), Ok(57));
        assert_eq!(out, DATA_SACK);
    }

    /// Linux writes a checksum that computes to zero as 0xffff (CSUM_MANGLED_0);
    /// both encodings of one's-complement zero must verify.
    #[test]
    fn zero_checksum_verifies_in_both_encodings() {
        let mut b = DATA_SACK;
        b[16..18].copy_from_slice(&[0, 0]);
        let c = transport_checksum(B, A, protocol::TCP, &b);
        // Fold the missing sum into the first payload word so the correct checksum becomes 0.
        let w = u32::from(u16::from_be_bytes([b[52], b[53]])) + u32::from(c);
        let w = ((w & 0xffff) + (w >> 16)) as u16;
        b[52..54].copy_from_slice(&w.to_be_bytes());
        assert!(TcpSegment::new_checked(&b[..]).unwrap().verify_checksum(B, A));
        b[16..18].copy_from_slice(&[0xff, 0xff]);
        assert!(TcpSegment::new_checked(&b[..]).unwrap().verify_checksum(B, A));
        b[16..18].copy_from_slice(&[0xff, 0xfe]);
        assert!(!TcpSegment::new_checked(&b[..]).unwrap().verify_checksum(B, A));
    }

    #[test]
    fn setters_and_checksum() {
        let mut b = DATA_SACK;
        let mut s = TcpSegment::new_checked(&mut b[..]).unwrap();
        s.set_seq(1);
        s.set_ack(2);
        s.set_window(3);
        s.set_flags(flags::FIN | flags::ACK);
        s.set_src_port(4);
        s.set_dst_port(5);
        s.payload_mut()[0] = b'j';
        assert!(!s.verify_checksum(B, A));
        s.fill_checksum(B, A);
        assert!(s.verify_checksum(B, A));
        assert_eq!((s.seq(), s.ack(), s.window(), s.flags()), (1, 2, 3, 0x11));
        assert_eq!((s.src_port(), s.dst_port()), (4, 5));
        assert_eq!(s.payload(), b"jello");
    }

    #[test]
    fn errors() {
        assert_eq!(TcpSegment::new_checked(&SYN[..19]).err(), Some(WireError::Truncated));
        assert_eq!(TcpSegment::new_checked(&SYN[..39]).err(), Some(WireError::BadHeaderLen));
        let mut b = SYN;
        b[12] = 0x40;
        assert_eq!(TcpSegment::new_checked(&b[..]).err(), Some(WireError::BadHeaderLen));
        b[12] = 0xa0;
        b[21] = 9; // MSS length runs past the option area
        let s = TcpSegment::new_checked(&b[..]).unwrap();
        assert_eq!(TcpRepr::parse(&s), Err(WireError::BadOption));
        let r = TcpRepr::parse(&TcpSegment::new_checked(&SYN[..]).unwrap()).unwrap();
        assert_eq!(r.emit(&mut [0u8; 45], A, B, 6), Err(WireError::Truncated));
        assert_eq!(r.emit(&mut [0u8; 45], A, B, usize::MAX), Err(WireError::BadLength));
        assert_eq!(r.emit(&mut [0u8; 45], A, B, 65536 - 40), Err(WireError::BadLength));
    }

    fn arb_repr() -> impl Strategy<Value = TcpRepr> {
        (any::<(u16, u16, u32, u32)>(), any::<(u8, u16, u16)>(), arb_options()).prop_map(
            |((src_port, dst_port, seq, ack), (flags, window, urgent), options)| TcpRepr {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
                urgent,
                options,
            },
        )
    }

    proptest! {
        #[test]
        fn emit_summed_with_the_copy_sum_writes_what_emit_writes(
            payload in proptest::collection::vec(any::<u8>(), 0..2000),
            seq in any::<u32>(),
            ts in any::<(u32, u32)>(),
        ) {
            let r = TcpRepr {
                src_port: 1, dst_port: 2, seq, ack: 7, flags: 0x18, window: 9, urgent: 0,
                options: TcpOptions { timestamps: Some(ts), ..TcpOptions::default() },
            };
            let hl = r.header_len();
            let mut plain = vec![0u8; hl + payload.len()];
            plain[hl..].copy_from_slice(&payload);
            r.emit(&mut plain, A, B, payload.len()).unwrap();
            let mut fused = vec![0u8; hl + payload.len()];
            let sum = crate::checksum::copy_with_sum(&mut fused[hl..], &payload);
            r.emit_summed(&mut fused, A, B, payload.len(), sum).unwrap();
            prop_assert_eq!(&fused, &plain);
            prop_assert!(TcpSegment::new_checked(&fused[..]).unwrap().verify_checksum(A, B));
        }
        #[test]
        fn roundtrip(r in arb_repr(), s in any::<u32>(), d in any::<u32>(),
                     payload in proptest::collection::vec(any::<u8>(), 0..100)) {
            let (src, dst) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let hl = r.header_len();
            let mut buf = vec![0u8; hl + payload.len()];
            buf[hl..].copy_from_slice(&payload);
            prop_assert_eq!(r.emit(&mut buf, src, dst, payload.len()), Ok(buf.len()));
            let seg = TcpSegment::new_checked(&buf[..]).unwrap();
            prop_assert!(seg.verify_checksum(src, dst));
            prop_assert_eq!(seg.header_len(), hl);
            prop_assert_eq!(seg.payload(), &payload[..]);
            let back = TcpRepr::parse(&seg).unwrap();
            prop_assert_eq!(back, TcpRepr { options: expected_after_roundtrip(&r.options), ..r });
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..80), doff in 5u8..16) {
            let mut data = data;
            if data.len() > 12 {
                data[12] = doff << 4;
            }
            if let Ok(s) = TcpSegment::new_checked(&data[..]) {
                let _ = (s.payload().len(), s.options().count(), s.verify_checksum(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST));
                let _ = TcpRepr::parse(&s);
            }
        }
    }
}
