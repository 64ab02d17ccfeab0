//! ICMPv4 messages (RFC 792): echo, destination unreachable, time exceeded.

use crate::checksum::checksum;
use crate::error::WireError;
use crate::field::{get_u16, set_u16};

/// ICMP message type numbers.
pub mod icmp_type {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 3;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 12;
}

/// Codes of the destination-unreachable message.
pub mod unreach_code {
    /// Network unreachable.
    pub const NET: u8 = 0;
    /// Host unreachable.
    pub const HOST: u8 = 1;
    /// Protocol unreachable.
    pub const PROTOCOL: u8 = 2;
    /// Port unreachable.
    pub const PORT: u8 = 3;
    /// Fragmentation needed and DF set.
    pub const FRAG_NEEDED: u8 = 4;
}

/// Length of the ICMP header (type, code, checksum, 4 type-specific bytes).
pub const HEADER_LEN: usize = 8;

/// The meaning of an ICMP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IcmpMessage {
    /// Echo request (type 8, code 0).
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq: u16,
    },
    /// Echo reply (type 0, code 0).
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq: u16,
    },
    /// Destination unreachable (type 3); see [`unreach_code`].
    DestUnreachable {
        /// Reason code.
        code: u8,
        /// Next-hop MTU of a "fragmentation needed" message (RFC 1191; 0 if not given).
        next_hop_mtu: u16,
    },
    /// Time exceeded (type 11): 0 = TTL exceeded in transit, 1 = reassembly.
    TimeExceeded {
        /// Reason code.
        code: u8,
    },
    /// Parameter problem (type 12, RFC 792): code 0 with `pointer` at the octet of the
    /// quoted header where the error was found.
    ParameterProblem {
        /// Reason code (0: the pointer indicates the error).
        code: u8,
        /// Offset of the offending octet in the quoted IPv4 header.
        pointer: u8,
    },
    /// Anything else (including echo with a non-zero code); its 4 type-specific bytes are not kept.
    Other {
        /// Message type.
        icmp_type: u8,
        /// Message code.
        code: u8,
    },
}

impl IcmpMessage {
    /// Decodes type, code and the 4 type-specific bytes (`rest`) of a header.
    pub fn from_header(icmp_type: u8, code: u8, rest: [u8; 4]) -> IcmpMessage {
        let ident = u16::from_be_bytes([rest[0], rest[1]]);
        let seq = u16::from_be_bytes([rest[2], rest[3]]);
        match (icmp_type, code) {
            (icmp_type::ECHO_REQUEST, 0) => IcmpMessage::EchoRequest { ident, seq },
            (icmp_type::ECHO_REPLY, 0) => IcmpMessage::EchoReply { ident, seq },
            (icmp_type::DEST_UNREACHABLE, code) => IcmpMessage::DestUnreachable { code, next_hop_mtu: seq },
            (icmp_type::TIME_EXCEEDED, code) => IcmpMessage::TimeExceeded { code },
            (icmp_type::PARAMETER_PROBLEM, code) => IcmpMessage::ParameterProblem { code, pointer: rest[0] },
            (icmp_type, code) => IcmpMessage::Other { icmp_type, code },
        }
    }

    /// Encodes this message as (type, code, 4 type-specific bytes).
    pub fn to_header(&self) -> (u8, u8, [u8; 4]) {
        let echo = |ident: u16, seq: u16| {
            let (i, s) = (ident.to_be_bytes(), seq.to_be_bytes());
            [i[0], i[1], s[0], s[1]]
        };
        match *self {
            IcmpMessage::EchoRequest { ident, seq } => (icmp_type::ECHO_REQUEST, 0, echo(ident, seq)),
            IcmpMessage::EchoReply { ident, seq } => (icmp_type::ECHO_REPLY, 0, echo(ident, seq)),
            IcmpMessage::DestUnreachable { code, next_hop_mtu } => {
                let m = next_hop_mtu.to_be_bytes();
                (icmp_type::DEST_UNREACHABLE, code, [0, 0, m[0], m[1]])
            }
            IcmpMessage::TimeExceeded { code } => (icmp_type::TIME_EXCEEDED, code, [0; 4]),
            IcmpMessage::ParameterProblem { code, pointer } => (icmp_type::PARAMETER_PROBLEM, code, [pointer, 0, 0, 0]),
            IcmpMessage::Other { icmp_type, code } => (icmp_type, code, [0; 4]),
        }
    }
}

/// A zero-copy view of an ICMP message.
#[derive(Debug, Clone)]
pub struct IcmpPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        IcmpPacket { buf }
    }

    /// Wraps `buf` after checking it holds the 8-byte header (else `Truncated`).
    ///
    /// The buffer is the whole ICMP message (the IPv4 payload).
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        if buf.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(IcmpPacket { buf })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
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

    /// True if the checksum over the whole message is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum(self.buf.as_ref()) == 0
    }

    /// The decoded message.
    pub fn message(&self) -> IcmpMessage {
        let b = self.buf.as_ref();
        IcmpMessage::from_header(b[0], b[1], [b[4], b[5], b[6], b[7]])
    }

    /// Bytes after the 8-byte header: echo payload or the quoted datagram.
    pub fn data(&self) -> &[u8] {
        self.buf.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Recomputes and stores the checksum over the whole message.
    pub fn fill_checksum(&mut self) {
        let b = self.buf.as_mut();
        set_u16(b, 2, 0);
        let c = checksum(b);
        set_u16(b, 2, c);
    }

    /// Mutable bytes after the 8-byte header.
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.buf.as_mut().get_mut(HEADER_LEN..).unwrap_or(&mut [])
    }
}

/// A high-level description of an ICMP message borrowing its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpRepr<'a> {
    /// The header's meaning.
    pub message: IcmpMessage,
    /// Echo payload, or for errors the quoted IP header + first 8 payload bytes.
    pub data: &'a [u8],
}

impl<'a> IcmpRepr<'a> {
    /// Bytes [`Self::emit`] writes: 8 + data length.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes header and data at the start of `buf` with the checksum filled; returns the length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.buffer_len();
        let out = buf.get_mut(..len).ok_or(WireError::Truncated)?;
        let (t, code, rest) = self.message.to_header();
        out[0] = t;
        out[1] = code;
        set_u16(out, 2, 0);
        out[4..HEADER_LEN].copy_from_slice(&rest);
        out[HEADER_LEN..].copy_from_slice(self.data);
        let c = checksum(out);
        set_u16(out, 2, c);
        Ok(len)
    }

    /// Parses a whole ICMP message, verifying its checksum (`BadChecksum`).
    pub fn parse(buf: &'a [u8]) -> Result<IcmpRepr<'a>, WireError> {
        let p = IcmpPacket::new_checked(buf)?;
        if !p.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        Ok(IcmpRepr { message: p.message(), data: buf.get(HEADER_LEN..).unwrap_or(&[]) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Linux-style echo payload: 16-byte timeval then 0x10..0x37.
    fn echo_payload() -> Vec<u8> {
        let mut v =
            vec![0xe3, 0xc3, 0xb5, 0x69, 0x00, 0x00, 0x00, 0x00, 0x77, 0xa1, 0x0e, 0x00, 0x00, 0x00, 0x00, 0x00];
        v.extend(0x10u8..0x38);
        v
    }

    #[test]
    fn golden_echo_request_and_reply() {
        // ICMP part of `ping` request (checksum fe31) and its reply (checksum 0632).
        let data = echo_payload();
        for (hdr, msg) in [
            ([0x08, 0x00, 0xfe, 0x31, 0x1c, 0x2b, 0x00, 0x01], IcmpMessage::EchoRequest { ident: 0x1c2b, seq: 1 }),
            ([0x00, 0x00, 0x06, 0x32, 0x1c, 0x2b, 0x00, 0x01], IcmpMessage::EchoReply { ident: 0x1c2b, seq: 1 }),
        ] {
            let mut bytes = hdr.to_vec();
            bytes.extend_from_slice(&data);
            let p = IcmpPacket::new_checked(&bytes[..]).unwrap();
            assert_eq!(p.msg_type(), hdr[0]);
            assert_eq!(p.code(), 0);
            assert_eq!(p.checksum(), u16::from_be_bytes([hdr[2], hdr[3]]));
            assert!(p.verify_checksum());
            assert_eq!(p.message(), msg);
            assert_eq!(p.data(), &data[..]);
            let r = IcmpRepr::parse(&bytes).unwrap();
            assert_eq!(r, IcmpRepr { message: msg, data: &data });
            let mut out = vec![0u8; r.buffer_len()];
            assert_eq!(r.emit(&mut out), Ok(64));
            assert_eq!(out, bytes);
        }
    }

    #[test]
    fn golden_port_unreachable() {
        // Port unreachable quoting a UDP DNS query's IP header + 8 bytes (checksum 0eed).
        let bytes = [
            0x03, 0x03, 0x0e, 0xed, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x39, 0x4d, 0x21, 0x40, 0x00, 0x40, 0x11,
            0x6a, 0x37, 0xc0, 0xa8, 0x01, 0x0a, 0xc0, 0xa8, 0x01, 0x01, 0xd4, 0x31, 0x00, 0x35, 0x00, 0x25, 0x19, 0x84,
        ];
        let r = IcmpRepr::parse(&bytes).unwrap();
        assert_eq!(r.message, IcmpMessage::DestUnreachable { code: unreach_code::PORT, next_hop_mtu: 0 });
        assert_eq!(r.data.len(), 28);
        let mut out = [0u8; 36];
        assert_eq!(r.emit(&mut out), Ok(36));
        assert_eq!(out, bytes);
    }

    #[test]
    fn errors_and_mutation() {
        assert_eq!(IcmpRepr::parse(&[8, 0, 0, 0, 0, 0, 0]), Err(WireError::Truncated));
        assert_eq!(IcmpRepr::parse(&[8, 0, 0, 0, 0, 0, 0, 0]), Err(WireError::BadChecksum));
        let r = IcmpRepr { message: IcmpMessage::TimeExceeded { code: 0 }, data: &[1, 2, 3] };
        assert_eq!(r.emit(&mut [0u8; 10]), Err(WireError::Truncated));
        let mut buf = [0u8; 11];
        r.emit(&mut buf).unwrap();
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        p.data_mut()[0] = 9;
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(IcmpMessage::from_header(8, 1, [0; 4]), IcmpMessage::Other { icmp_type: 8, code: 1 });
        let pp = IcmpMessage::ParameterProblem { code: 0, pointer: 22 };
        assert_eq!(IcmpMessage::from_header(12, 0, [22, 0, 0, 0]), pp);
        assert_eq!(pp.to_header(), (12, 0, [22, 0, 0, 0]));
    }

    fn arb_message() -> impl Strategy<Value = IcmpMessage> {
        prop_oneof![
            (any::<u16>(), any::<u16>()).prop_map(|(ident, seq)| IcmpMessage::EchoRequest { ident, seq }),
            (any::<u16>(), any::<u16>()).prop_map(|(ident, seq)| IcmpMessage::EchoReply { ident, seq }),
            (any::<u8>(), any::<u16>())
                .prop_map(|(code, next_hop_mtu)| IcmpMessage::DestUnreachable { code, next_hop_mtu }),
            any::<u8>().prop_map(|code| IcmpMessage::TimeExceeded { code }),
            // Build "other" through the decoder so it is canonical.
            (any::<u8>(), any::<u8>()).prop_map(|(t, c)| IcmpMessage::from_header(t, c, [0; 4])),
        ]
    }

    proptest! {
        #[test]
        fn roundtrip(message in arb_message(), data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let r = IcmpRepr { message, data: &data };
            let mut buf = vec![0u8; r.buffer_len()];
            prop_assert_eq!(r.emit(&mut buf), Ok(8 + data.len()));
            prop_assert_eq!(IcmpRepr::parse(&buf), Ok(r));
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = IcmpRepr::parse(&data);
            if let Ok(p) = IcmpPacket::new_checked(&data[..]) {
                let _ = (p.message(), p.data().len(), p.verify_checksum());
            }
        }
    }
}
