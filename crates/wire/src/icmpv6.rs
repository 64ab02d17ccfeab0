//! ICMPv6 messages (RFC 4443): echo and the four errors. Neighbor Discovery (types
//! 133–137) is decoded by [`crate::ndp`] from the same view. The checksum covers the IPv6
//! pseudo header, so verifying and filling take the addresses.

use crate::checksum::{transport_checksum, PseudoHeader};
use crate::error::WireError;
use crate::field::{get_u16, get_u32, set_u16};
use crate::ipv6::next_header;
use std::net::Ipv6Addr;

/// ICMPv6 message type numbers.
pub mod icmpv6_type {
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 1;
    /// Packet too big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 4;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Router solicitation (RFC 4861).
    pub const ROUTER_SOLICIT: u8 = 133;
    /// Router advertisement (RFC 4861).
    pub const ROUTER_ADVERT: u8 = 134;
    /// Neighbor solicitation (RFC 4861).
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    /// Neighbor advertisement (RFC 4861).
    pub const NEIGHBOR_ADVERT: u8 = 136;
    /// Redirect (RFC 4861).
    pub const REDIRECT: u8 = 137;
}

/// Codes of destination unreachable (RFC 4443 section 3.1).
pub mod unreach6_code {
    /// No route to destination.
    pub const NO_ROUTE: u8 = 0;
    /// Communication administratively prohibited.
    pub const PROHIBITED: u8 = 1;
    /// Address unreachable.
    pub const ADDRESS: u8 = 3;
    /// Port unreachable.
    pub const PORT: u8 = 4;
}

/// Length of the ICMPv6 header: type, code, checksum and 4 message-specific bytes.
pub const HEADER_LEN: usize = 8;

/// How much of an invoking packet an error quotes: as much as fits in the minimum MTU
/// (RFC 4443 section 2.4 (c)): 1280 - 40 (IPv6) - 8 (ICMPv6).
pub const MAX_QUOTE: usize = crate::ipv6::MIN_MTU - 40 - HEADER_LEN;

/// The meaning of an ICMPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Message {
    /// Echo request (128).
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq: u16,
    },
    /// Echo reply (129).
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq: u16,
    },
    /// Destination unreachable (1); see [`unreach6_code`].
    DestUnreachable {
        /// Reason code.
        code: u8,
    },
    /// Packet too big (2): the MTU of the next hop.
    PacketTooBig {
        /// The next hop's MTU.
        mtu: u32,
    },
    /// Time exceeded (3): 0 hop limit, 1 reassembly time.
    TimeExceeded {
        /// Reason code.
        code: u8,
    },
    /// Parameter problem (4): 0 erroneous header field, 1 unrecognised next header,
    /// 2 unrecognised option, 3 incomplete header chain (RFC 7112).
    ParameterProblem {
        /// Reason code.
        code: u8,
        /// Offset in the invoking packet of the offending octet.
        pointer: u32,
    },
    /// Anything else, Neighbor Discovery included (see [`crate::ndp`]).
    Other {
        /// Message type.
        msg_type: u8,
        /// Message code.
        code: u8,
    },
}

impl Icmpv6Message {
    /// Decodes type, code and the 4 message-specific bytes.
    pub fn from_header(msg_type: u8, code: u8, rest: [u8; 4]) -> Icmpv6Message {
        let word = u32::from_be_bytes(rest);
        let (ident, seq) = ((word >> 16) as u16, word as u16);
        match (msg_type, code) {
            (icmpv6_type::ECHO_REQUEST, 0) => Icmpv6Message::EchoRequest { ident, seq },
            (icmpv6_type::ECHO_REPLY, 0) => Icmpv6Message::EchoReply { ident, seq },
            (icmpv6_type::DEST_UNREACHABLE, code) => Icmpv6Message::DestUnreachable { code },
            (icmpv6_type::PACKET_TOO_BIG, 0) => Icmpv6Message::PacketTooBig { mtu: word },
            (icmpv6_type::TIME_EXCEEDED, code) => Icmpv6Message::TimeExceeded { code },
            (icmpv6_type::PARAMETER_PROBLEM, code) => Icmpv6Message::ParameterProblem { code, pointer: word },
            (msg_type, code) => Icmpv6Message::Other { msg_type, code },
        }
    }

    /// Encodes this message as (type, code, 4 message-specific bytes).
    pub fn to_header(&self) -> (u8, u8, [u8; 4]) {
        let pair = |a: u16, b: u16| ((u32::from(a) << 16) | u32::from(b)).to_be_bytes();
        match *self {
            Icmpv6Message::EchoRequest { ident, seq } => (icmpv6_type::ECHO_REQUEST, 0, pair(ident, seq)),
            Icmpv6Message::EchoReply { ident, seq } => (icmpv6_type::ECHO_REPLY, 0, pair(ident, seq)),
            Icmpv6Message::DestUnreachable { code } => (icmpv6_type::DEST_UNREACHABLE, code, [0; 4]),
            Icmpv6Message::PacketTooBig { mtu } => (icmpv6_type::PACKET_TOO_BIG, 0, mtu.to_be_bytes()),
            Icmpv6Message::TimeExceeded { code } => (icmpv6_type::TIME_EXCEEDED, code, [0; 4]),
            Icmpv6Message::ParameterProblem { code, pointer } => {
                (icmpv6_type::PARAMETER_PROBLEM, code, pointer.to_be_bytes())
            }
            Icmpv6Message::Other { msg_type, code } => (msg_type, code, [0; 4]),
        }
    }

    /// True for the error messages (types below 128, RFC 4443 section 2.1), which must never
    /// be answered with another error.
    pub fn is_error(&self) -> bool {
        match *self {
            Icmpv6Message::Other { msg_type, .. } => msg_type < 128,
            Icmpv6Message::EchoRequest { .. } | Icmpv6Message::EchoReply { .. } => false,
            _ => true,
        }
    }
}

/// A zero-copy view of an ICMPv6 message (the upper-layer part of an IPv6 packet).
#[derive(Debug, Clone)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        Icmpv6Packet { buf }
    }

    /// Wraps `buf` after checking it holds the 8-byte header (else `Truncated`).
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        if buf.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Icmpv6Packet { buf })
    }

    /// Message type.
    pub fn msg_type(&self) -> u8 {
        self.buf.as_ref()[0]
    }

    /// Message code.
    pub fn code(&self) -> u8 {
        self.buf.as_ref()[1]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        get_u16(self.buf.as_ref(), 2)
    }

    /// The 4 message-specific bytes as one word.
    pub fn word(&self) -> u32 {
        get_u32(self.buf.as_ref(), 4)
    }

    /// True if the checksum over pseudo header and message is correct.
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        transport_checksum(src, dst, next_header::ICMPV6, self.buf.as_ref()) == 0
    }

    /// The decoded header.
    pub fn message(&self) -> Icmpv6Message {
        let b = self.buf.as_ref();
        Icmpv6Message::from_header(b[0], b[1], [b[4], b[5], b[6], b[7]])
    }

    /// The whole message.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Bytes after the 8-byte header: the echo payload or the quoted invoking packet.
    pub fn data(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Recomputes and stores the checksum.
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        fill(self.buf.as_mut(), src, dst);
    }
}

/// Zeroes, computes and stores the ICMPv6 checksum of the message `b`.
pub(crate) fn fill<A: PseudoHeader>(b: &mut [u8], src: A, dst: A) {
    set_u16(b, 2, 0);
    let c = transport_checksum(src, dst, next_header::ICMPV6, b);
    set_u16(b, 2, c);
}

/// A high-level description of an echo or error message borrowing its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Icmpv6Repr<'a> {
    /// The header's meaning.
    pub message: Icmpv6Message,
    /// Echo payload, or the quoted invoking packet of an error (at most [`MAX_QUOTE`]).
    pub data: &'a [u8],
}

impl<'a> Icmpv6Repr<'a> {
    /// Bytes [`Self::emit`] writes: 8 + data length.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes the message at the start of `buf` with its checksum; returns the length.
    pub fn emit(&self, buf: &mut [u8], src: Ipv6Addr, dst: Ipv6Addr) -> Result<usize, WireError> {
        let len = self.buffer_len();
        let out = buf.get_mut(..len).ok_or(WireError::Truncated)?;
        let (t, code, rest) = self.message.to_header();
        out[0] = t;
        out[1] = code;
        out[4..HEADER_LEN].copy_from_slice(&rest);
        out[HEADER_LEN..].copy_from_slice(self.data);
        fill(out, src, dst);
        Ok(len)
    }

    /// Parses a whole message, verifying its checksum (`BadChecksum`).
    pub fn parse(buf: &'a [u8], src: Ipv6Addr, dst: Ipv6Addr) -> Result<Icmpv6Repr<'a>, WireError> {
        let p = Icmpv6Packet::new_checked(buf)?;
        if !p.verify_checksum(src, dst) {
            return Err(WireError::BadChecksum);
        }
        Ok(Icmpv6Repr { message: p.message(), data: &buf[HEADER_LEN..] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

    #[test]
    fn golden_echo_request_from_linux_ping() {
        // `ping -6 -c1 -p 00 fd77::2` from fd77::1 with 8 bytes of zero data (ident 0x1c2b,
        // seq 1); checksum computed independently: sum of pseudo header (fd77 x2, 0002, 0001,
        // length 16, next header 58) and message words.
        let mut m = vec![128, 0, 0, 0, 0x1c, 0x2b, 0x00, 0x01];
        m.extend([0u8; 8]);
        let mut sum: u32 = 0xfd77 * 2 + 1 + 2 + 16 + 58 + 0x8000 + 0x1c2b + 1;
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let expect = !(sum as u16);
        fill(&mut m, SRC, DST);
        assert_eq!(get_u16(&m, 2), expect);
        let r = Icmpv6Repr::parse(&m, SRC, DST).unwrap();
        assert_eq!(r.message, Icmpv6Message::EchoRequest { ident: 0x1c2b, seq: 1 });
        assert_eq!(Icmpv6Repr::parse(&m, SRC, SRC), Err(WireError::BadChecksum));
    }

    #[test]
    fn errors_carry_their_fields() {
        let cases = [
            (Icmpv6Message::PacketTooBig { mtu: 1280 }, (2, 0, [0, 0, 5, 0])),
            (Icmpv6Message::ParameterProblem { code: 1, pointer: 40 }, (4, 1, [0, 0, 0, 40])),
            (Icmpv6Message::DestUnreachable { code: unreach6_code::PORT }, (1, 4, [0; 4])),
            (Icmpv6Message::TimeExceeded { code: 1 }, (3, 1, [0; 4])),
        ];
        for (m, h) in cases {
            assert_eq!(m.to_header(), h);
            assert_eq!(Icmpv6Message::from_header(h.0, h.1, h.2), m);
            assert!(m.is_error());
        }
        assert!(!Icmpv6Message::EchoReply { ident: 0, seq: 0 }.is_error());
        assert!(!Icmpv6Message::Other { msg_type: 135, code: 0 }.is_error());
        assert!(Icmpv6Message::Other { msg_type: 100, code: 0 }.is_error());
        assert_eq!(MAX_QUOTE, 1232);
    }

    proptest! {
        #[test]
        fn roundtrip(kind in 0u8..6, a in any::<u16>(), b in any::<u16>(), data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let message = match kind {
                0 => Icmpv6Message::EchoRequest { ident: a, seq: b },
                1 => Icmpv6Message::EchoReply { ident: a, seq: b },
                2 => Icmpv6Message::PacketTooBig { mtu: u32::from(a) << 8 },
                3 => Icmpv6Message::ParameterProblem { code: (b % 4) as u8, pointer: u32::from(a) },
                4 => Icmpv6Message::DestUnreachable { code: (a % 7) as u8 },
                _ => Icmpv6Message::TimeExceeded { code: (a % 2) as u8 },
            };
            let r = Icmpv6Repr { message, data: &data };
            let mut buf = vec![0u8; r.buffer_len()];
            prop_assert_eq!(r.emit(&mut buf, SRC, DST), Ok(8 + data.len()));
            prop_assert_eq!(Icmpv6Repr::parse(&buf, SRC, DST), Ok(r));
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = Icmpv6Repr::parse(&data, SRC, DST);
        }
    }
}
