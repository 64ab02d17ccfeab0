//! The RDMA header: a zero-copy view ([`RdmaPacket`]) and a builder ([`RdmaRepr`]).
//!
//! Every packet is a fixed 48-byte header followed by `payload length` bytes; the layout
//! is the table in the crate documentation. All fields are big-endian. The CRC32C
//! (Castagnoli) covers bytes 0..44 of the header and the payload; it is checked before
//! anything else reads the packet, so nothing unverified ever reaches memory.

use std::fmt;

/// Length of the fixed header.
pub const HEADER_LEN: usize = 48;
/// First two bytes of every packet: ASCII "LR".
pub const MAGIC: u16 = 0x4c52;
/// The only version this crate speaks.
pub const VERSION: u8 = 2;

/// Flag: the operation is tracked by the receiver's registration table.
pub const FLAG_REGISTERED: u8 = 0x01;
/// Flag: the operation is one segment of a large transfer.
pub const FLAG_SEGMENT: u8 = 0x02;
/// Flag: the operation is the last segment of a large transfer.
pub const FLAG_LAST_SEGMENT: u8 = 0x04;
/// All defined flags; other bits must be zero.
pub const FLAGS_ALL: u8 = FLAG_REGISTERED | FLAG_SEGMENT | FLAG_LAST_SEGMENT;

mod off {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 2;
    pub const TYPE: usize = 3;
    pub const FLAGS: usize = 4;
    pub const REASON: usize = 5;
    pub const PAYLOAD_LEN: usize = 6;
    pub const OP_ID: usize = 8;
    pub const INDEX: usize = 16;
    pub const COUNT: usize = 20;
    pub const KEY: usize = 24;
    pub const OP_LEN: usize = 28;
    pub const OFFSET: usize = 32;
    pub const STRIDE: usize = 40;
    pub const SPAN: usize = 42;
    pub const CRC: usize = 44;
}

/// Why a buffer is not a valid RDMA packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RdmaWireError {
    /// Shorter than the header or than header + payload length.
    #[error("packet truncated")]
    Truncated,
    /// The magic number is not "LR".
    #[error("bad magic number")]
    BadMagic,
    /// A version this crate does not speak.
    #[error("unsupported version")]
    BadVersion,
    /// An unknown packet type.
    #[error("unknown packet type")]
    BadType,
    /// Undefined flag bits are set, or a packet other than an ACK has a nonzero span.
    #[error("undefined flags set, or a span on a packet that is not an ACK")]
    BadFlags,
    /// A NACK with an unknown reason, or a reason on a packet that is not a NACK.
    #[error("bad NACK reason")]
    BadReason,
    /// The CRC32C over header and payload does not match.
    #[error("CRC32C mismatch")]
    BadCrc,
    /// The builder was given a buffer too small for header + payload, or a payload over 65535 bytes.
    #[error("buffer too small or payload too long")]
    TooLong,
}

impl RdmaWireError {
    /// A short snake_case name, used as a drop-counter key.
    pub fn reason(&self) -> &'static str {
        match self {
            RdmaWireError::Truncated => "truncated",
            RdmaWireError::BadMagic => "bad_magic",
            RdmaWireError::BadVersion => "bad_version",
            RdmaWireError::BadType => "bad_type",
            RdmaWireError::BadFlags => "bad_flags",
            RdmaWireError::BadReason => "bad_reason",
            RdmaWireError::BadCrc => "bad_crc",
            RdmaWireError::TooLong => "too_long",
        }
    }
}

/// The kind of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Data packet that registers its operation at the receiver (the first packet of a
    /// registered op, index 0, also when retransmitted).
    RegisterFirst,
    /// Data packet.
    Data,
    /// Positive acknowledgement of packet `index` of op `op_id` (index == count acknowledges
    /// the op's Notify).
    Ack,
    /// Negative acknowledgement, with a reason.
    Nack(NackReason),
    /// Completion notification of an unregistered op, sent after its last ACK (index == count).
    Notify,
}

impl PacketType {
    fn code(self) -> u8 {
        match self {
            PacketType::RegisterFirst => 1,
            PacketType::Data => 2,
            PacketType::Ack => 3,
            PacketType::Nack(_) => 4,
            PacketType::Notify => 5,
        }
    }
}

/// Why a receiver refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NackReason {
    /// No region was ever registered under this key.
    UnknownKey,
    /// The region was registered but has been deregistered.
    Deregistered,
    /// The write does not lie inside the region.
    OutOfBounds,
    /// The registration table has no free entry (transient: retry).
    TableFull,
    /// The escape channel is full (transient: retry).
    EscapeFull,
    /// A registered op has more packets than the mask is wide.
    TooManyPackets,
    /// The header fields contradict each other (lengths, index, stride) or the table entry.
    Malformed,
    /// The receiver's notification queue is full: the application is not taking its
    /// completions (transient: retry).
    QueueFull,
}

impl NackReason {
    /// Every reason, in code order.
    pub const ALL: [NackReason; 8] = [
        NackReason::UnknownKey,
        NackReason::Deregistered,
        NackReason::OutOfBounds,
        NackReason::TableFull,
        NackReason::EscapeFull,
        NackReason::TooManyPackets,
        NackReason::Malformed,
        NackReason::QueueFull,
    ];

    /// The wire code (1..=8).
    pub fn code(self) -> u8 {
        match self {
            NackReason::UnknownKey => 1,
            NackReason::Deregistered => 2,
            NackReason::OutOfBounds => 3,
            NackReason::TableFull => 4,
            NackReason::EscapeFull => 5,
            NackReason::TooManyPackets => 6,
            NackReason::Malformed => 7,
            NackReason::QueueFull => 8,
        }
    }

    /// The reason for a wire code.
    pub fn from_code(c: u8) -> Option<NackReason> {
        NackReason::ALL.get(usize::from(c).wrapping_sub(1)).copied()
    }

    /// True for conditions that go away by themselves (full tables): the sender retries
    /// after a backoff; for the others it gives up at once.
    pub fn is_transient(self) -> bool {
        matches!(self, NackReason::TableFull | NackReason::EscapeFull | NackReason::QueueFull)
    }

    /// snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            NackReason::UnknownKey => "unknown_key",
            NackReason::Deregistered => "deregistered",
            NackReason::OutOfBounds => "out_of_bounds",
            NackReason::TableFull => "table_full",
            NackReason::EscapeFull => "escape_full",
            NackReason::TooManyPackets => "too_many_packets",
            NackReason::Malformed => "malformed",
            NackReason::QueueFull => "queue_full",
        }
    }
}

impl fmt::Display for NackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
#[inline]
fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// The CRC32C of a packet: header bytes 0..44, then the payload, in one pass with the CPU's
/// `crc32` instruction on three streams at once (see `crc`).
pub fn packet_crc(header: &[u8], payload: &[u8]) -> u32 {
    crate::crc::crc32c_two(&header[..off::CRC], payload)
}

/// A zero-copy, verified view of an RDMA packet.
#[derive(Debug, Clone)]
pub struct RdmaPacket<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> RdmaPacket<T> {
    /// Wraps `buf` after checking magic, version, type, flags, reason, lengths and the CRC.
    /// Bytes past header + payload length (Ethernet padding) are ignored.
    pub fn new_checked(buf: T) -> Result<Self, RdmaWireError> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(RdmaWireError::Truncated);
        }
        if be16(b, off::MAGIC) != MAGIC {
            return Err(RdmaWireError::BadMagic);
        }
        if b[off::VERSION] != VERSION {
            return Err(RdmaWireError::BadVersion);
        }
        let ty = b[off::TYPE];
        if !(1..=5).contains(&ty) {
            return Err(RdmaWireError::BadType);
        }
        if b[off::FLAGS] & !FLAGS_ALL != 0 || (ty != 3 && be16(b, off::SPAN) != 0) {
            return Err(RdmaWireError::BadFlags);
        }
        let reason = b[off::REASON];
        if (ty == 4) != (reason != 0) || (ty == 4 && NackReason::from_code(reason).is_none()) {
            return Err(RdmaWireError::BadReason);
        }
        let plen = usize::from(be16(b, off::PAYLOAD_LEN));
        if b.len() < HEADER_LEN + plen {
            return Err(RdmaWireError::Truncated);
        }
        if packet_crc(b, &b[HEADER_LEN..HEADER_LEN + plen]) != be32(b, off::CRC) {
            return Err(RdmaWireError::BadCrc);
        }
        Ok(RdmaPacket { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }

    /// Returns the underlying buffer (including any trailing padding).
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// Packet type (with the NACK reason).
    pub fn packet_type(&self) -> PacketType {
        match self.b()[off::TYPE] {
            1 => PacketType::RegisterFirst,
            2 => PacketType::Data,
            3 => PacketType::Ack,
            4 => PacketType::Nack(NackReason::from_code(self.b()[off::REASON]).unwrap_or(NackReason::Malformed)),
            _ => PacketType::Notify,
        }
    }

    /// Flag bits (`FLAG_*`).
    pub fn flags(&self) -> u8 {
        self.b()[off::FLAGS]
    }

    /// Operation id.
    pub fn op_id(&self) -> u64 {
        be64(self.b(), off::OP_ID)
    }

    /// Index of this packet within the op.
    pub fn index(&self) -> u32 {
        be32(self.b(), off::INDEX)
    }

    /// Number of data packets of the op.
    pub fn count(&self) -> u32 {
        be32(self.b(), off::COUNT)
    }

    /// Key of the target region.
    pub fn key(&self) -> u32 {
        be32(self.b(), off::KEY)
    }

    /// Bytes of the whole op.
    pub fn op_len(&self) -> u32 {
        be32(self.b(), off::OP_LEN)
    }

    /// Offset in the region of the op's first byte.
    pub fn offset(&self) -> u64 {
        be64(self.b(), off::OFFSET)
    }

    /// Payload bytes of every packet but the last.
    pub fn stride(&self) -> u16 {
        be16(self.b(), off::STRIDE)
    }

    /// ACK span: the packets `index .. index + span` are acknowledged (0 counts as 1); 0 on
    /// every other type.
    pub fn span(&self) -> u16 {
        be16(self.b(), off::SPAN)
    }

    /// The payload.
    pub fn payload(&self) -> &[u8] {
        let plen = usize::from(be16(self.b(), off::PAYLOAD_LEN));
        &self.b()[HEADER_LEN..HEADER_LEN + plen]
    }

    /// The header fields as a [`RdmaRepr`].
    pub fn repr(&self) -> RdmaRepr {
        RdmaRepr {
            ty: self.packet_type(),
            flags: self.flags(),
            op_id: self.op_id(),
            index: self.index(),
            count: self.count(),
            key: self.key(),
            op_len: self.op_len(),
            offset: self.offset(),
            stride: self.stride(),
            span: self.span(),
        }
    }
}

/// The header fields of a packet, for building one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaRepr {
    /// Type (and NACK reason).
    pub ty: PacketType,
    /// Flag bits (`FLAG_*`).
    pub flags: u8,
    /// Operation id.
    pub op_id: u64,
    /// Packet index within the op.
    pub index: u32,
    /// Data packets in the op.
    pub count: u32,
    /// Region key.
    pub key: u32,
    /// Bytes of the whole op.
    pub op_len: u32,
    /// Region offset of the op's first byte.
    pub offset: u64,
    /// Payload bytes per packet except the last.
    pub stride: u16,
    /// ACK only: packets acknowledged from `index` on (a run of one op's packets answered
    /// at once; 0 counts as 1). 0 on every other type.
    pub span: u16,
}

impl RdmaRepr {
    /// Writes header and `payload` into `buf`; returns the packet length.
    pub fn emit(&self, buf: &mut [u8], payload: &[u8]) -> Result<usize, RdmaWireError> {
        let total = HEADER_LEN + payload.len();
        if payload.len() > usize::from(u16::MAX) || buf.len() < total {
            return Err(RdmaWireError::TooLong);
        }
        let b = &mut buf[..total];
        b[off::MAGIC..off::MAGIC + 2].copy_from_slice(&MAGIC.to_be_bytes());
        b[off::VERSION] = VERSION;
        b[off::TYPE] = self.ty.code();
        b[off::FLAGS] = self.flags & FLAGS_ALL;
        b[off::REASON] = match self.ty {
            PacketType::Nack(r) => r.code(),
            _ => 0,
        };
        b[off::PAYLOAD_LEN..off::PAYLOAD_LEN + 2].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        b[off::OP_ID..off::OP_ID + 8].copy_from_slice(&self.op_id.to_be_bytes());
        b[off::INDEX..off::INDEX + 4].copy_from_slice(&self.index.to_be_bytes());
        b[off::COUNT..off::COUNT + 4].copy_from_slice(&self.count.to_be_bytes());
        b[off::KEY..off::KEY + 4].copy_from_slice(&self.key.to_be_bytes());
        b[off::OP_LEN..off::OP_LEN + 4].copy_from_slice(&self.op_len.to_be_bytes());
        b[off::OFFSET..off::OFFSET + 8].copy_from_slice(&self.offset.to_be_bytes());
        b[off::STRIDE..off::STRIDE + 2].copy_from_slice(&self.stride.to_be_bytes());
        let span = if self.ty == PacketType::Ack { self.span } else { 0 };
        b[off::SPAN..off::SPAN + 2].copy_from_slice(&span.to_be_bytes());
        b[HEADER_LEN..].copy_from_slice(payload);
        let crc = packet_crc(b, payload);
        b[off::CRC..off::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        Ok(total)
    }

    /// The ACK or NACK answering this packet (same op, index and op fields, no payload; an
    /// ACK spans this one packet).
    pub fn answer(&self, nack: Option<NackReason>) -> RdmaRepr {
        match nack {
            Some(r) => RdmaRepr { ty: PacketType::Nack(r), span: 0, ..*self },
            None => RdmaRepr { ty: PacketType::Ack, span: 1, ..*self },
        }
    }

    /// Packets this ACK acknowledges (0 for any other type).
    pub fn acked_packets(&self) -> u32 {
        if self.ty == PacketType::Ack {
            u32::from(self.span.max(1))
        } else {
            0
        }
    }

    /// Fold `next` into this ACK if it acknowledges the packets right after this one's run
    /// of the same op (same peer is the caller's part); false if it cannot be folded.
    pub fn absorb_ack(&mut self, next: &RdmaRepr) -> bool {
        let run = self.acked_packets();
        let fits = self.ty == PacketType::Ack
            && next.ty == PacketType::Ack
            && RdmaRepr { index: self.index, span: self.span, ..*next } == *self
            && self.index.checked_add(run) == Some(next.index)
            && run + next.acked_packets() <= u32::from(u16::MAX);
        if fits {
            self.span = (run + next.acked_packets()) as u16;
        }
        fits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RdmaRepr {
        RdmaRepr {
            ty: PacketType::Data,
            flags: FLAG_REGISTERED | FLAG_SEGMENT,
            op_id: 0x0102_0304_0506_0708,
            index: 3,
            count: 8,
            key: 0xdead_beef,
            op_len: 4096,
            offset: 0x10_0000_0000,
            stride: 512,
            span: 0,
        }
    }

    #[test]
    fn golden_bytes_of_a_data_packet() {
        let mut buf = [0u8; 64];
        let n = sample().emit(&mut buf, b"abcd").unwrap();
        assert_eq!(n, 52);
        let expect_hdr: [u8; 44] = [
            0x4c, 0x52, 2, 2, 0x03, 0, 0, 4, // magic, version, type, flags, reason, plen
            1, 2, 3, 4, 5, 6, 7, 8, // op id
            0, 0, 0, 3, 0, 0, 0, 8, // index, count
            0xde, 0xad, 0xbe, 0xef, 0, 0, 0x10, 0, // key, op len
            0, 0, 0, 0x10, 0, 0, 0, 0, // offset
            2, 0, 0, 0, // stride, reserved
        ];
        assert_eq!(&buf[..44], &expect_hdr);
        // CRC32C computed independently: header bytes then payload, one pass.
        let mut whole = expect_hdr.to_vec();
        whole.extend_from_slice(b"abcd");
        assert_eq!(&buf[44..48], &crc32c::crc32c(&whole).to_be_bytes());
        assert_eq!(&buf[48..52], b"abcd");
    }

    #[test]
    fn an_ack_carries_a_span_and_runs_of_acks_fold_into_one() {
        let data = sample();
        let mut ack = data.answer(None);
        assert_eq!((ack.span, ack.acked_packets(), data.answer(Some(NackReason::TableFull)).span), (1, 1, 0));
        for i in 4..8 {
            assert!(ack.absorb_ack(&RdmaRepr { index: i, ..data }.answer(None)), "packet {i} follows the run");
        }
        assert_eq!((ack.index, ack.span), (3, 5));
        // Not folded: a gap, another op, a NACK, or something other than an ACK.
        assert!(!ack.absorb_ack(&RdmaRepr { index: 9, ..data }.answer(None)));
        assert!(!ack.absorb_ack(&RdmaRepr { index: 8, op_id: 7, ..data }.answer(None)));
        assert!(!ack.absorb_ack(&RdmaRepr { index: 8, ..data }.answer(Some(NackReason::OutOfBounds))));
        let mut not_ack = data;
        assert!(!not_ack.absorb_ack(&RdmaRepr { index: 4, ..data }.answer(None)));
        let mut buf = [0u8; 48];
        ack.emit(&mut buf, &[]).unwrap();
        assert_eq!(&buf[42..44], &[0, 5]);
        let p = RdmaPacket::new_checked(&buf[..]).unwrap();
        assert_eq!((p.span(), p.repr()), (5, ack));
        // A span is only sent on an ACK; on any other type it makes the packet malformed.
        RdmaRepr { span: 9, ..data }.emit(&mut buf, &[]).unwrap_or(0);
        assert_eq!(&buf[42..44], &[0, 0]);
        let mut b = [0u8; 48];
        RdmaRepr { ty: PacketType::Data, ..ack }.emit(&mut b, &[]).unwrap();
        b[43] = 2;
        let crc = packet_crc(&b, &[]);
        b[44..48].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(RdmaPacket::new_checked(&b[..]).unwrap_err(), RdmaWireError::BadFlags);
    }

    #[test]
    fn crc32c_check_value() {
        // RFC 3720 B.4 check value for "123456789".
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn round_trip_every_type() {
        let mut types = vec![PacketType::RegisterFirst, PacketType::Data, PacketType::Ack, PacketType::Notify];
        types.extend(NackReason::ALL.iter().map(|r| PacketType::Nack(*r)));
        for ty in types {
            let r = RdmaRepr { ty, ..sample() };
            let mut buf = vec![0u8; 100];
            let n = r.emit(&mut buf, &[7; 10]).unwrap();
            // Trailing padding is ignored.
            let p = RdmaPacket::new_checked(&buf[..n + 5]).unwrap();
            assert_eq!(p.repr(), r);
            assert_eq!(p.payload(), &[7; 10]);
        }
    }

    #[test]
    fn every_error_is_reported() {
        let mut buf = vec![0u8; 100];
        let n = sample().emit(&mut buf, &[1, 2, 3]).unwrap();
        let good = buf[..n].to_vec();
        let check = |f: &dyn Fn(&mut Vec<u8>), e: RdmaWireError| {
            let mut b = good.clone();
            f(&mut b);
            assert_eq!(RdmaPacket::new_checked(&b[..]).unwrap_err(), e);
        };
        check(&|b| b.truncate(47), RdmaWireError::Truncated);
        check(&|b| b.truncate(50), RdmaWireError::Truncated);
        check(&|b| b[0] = 0, RdmaWireError::BadMagic);
        check(&|b| b[2] = 1, RdmaWireError::BadVersion);
        check(&|b| b[3] = 0, RdmaWireError::BadType);
        check(&|b| b[3] = 6, RdmaWireError::BadType);
        check(&|b| b[4] = 0x80, RdmaWireError::BadFlags);
        check(&|b| b[43] = 1, RdmaWireError::BadFlags);
        check(&|b| b[5] = 1, RdmaWireError::BadReason);
        check(
            &|b| {
                b[3] = 4;
                b[5] = 0;
            },
            RdmaWireError::BadReason,
        );
        check(
            &|b| {
                b[3] = 4;
                b[5] = 9;
            },
            RdmaWireError::BadReason,
        );
        check(&|b| b[49] ^= 1, RdmaWireError::BadCrc);
        check(&|b| b[10] ^= 1, RdmaWireError::BadCrc);
        assert_eq!(sample().emit(&mut [0u8; 50], &[0; 3]), Err(RdmaWireError::TooLong));
        assert_eq!(sample().emit(&mut vec![0u8; 70_000], &vec![0; 65_536]), Err(RdmaWireError::TooLong));
    }

    #[test]
    fn nack_codes_round_trip_and_names_are_distinct() {
        for r in NackReason::ALL {
            assert_eq!(NackReason::from_code(r.code()), Some(r));
        }
        assert_eq!(NackReason::from_code(0), None);
        assert_eq!(NackReason::from_code(9), None);
        let mut names: Vec<_> = NackReason::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 8);
        assert!(NackReason::TableFull.is_transient() && !NackReason::OutOfBounds.is_transient());
    }

    #[test]
    fn answer_keeps_fields_and_sets_type() {
        let a = sample().answer(Some(NackReason::OutOfBounds));
        assert_eq!(a.ty, PacketType::Nack(NackReason::OutOfBounds));
        assert_eq!((a.op_id, a.index, a.key), (sample().op_id, 3, 0xdead_beef));
        assert_eq!(sample().answer(None).ty, PacketType::Ack);
    }
}
