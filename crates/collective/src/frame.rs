//! Framing of messages on a TCP byte stream: a 24-byte header, then the payload.
//!
//! ```text
//! 0      2    3    4        8        12       16               24
//! | magic | ver| kind| tag    | step   | rsvd   | length (u64)   | payload ...
//! ```
//! All fields little-endian. `kind` says what `tag` means: a [`Kind::Hello`] carries the
//! sender's rank in `tag` and the world size in `step`; [`Kind::P2p`] carries the user's tag;
//! [`Kind::Coll`] carries the collective's sequence number and `step` its protocol step.
//! A [`Parser`] turns the bytes of one connection into [`Msg`]s; anything malformed is a
//! [`FrameError`], never a panic.

use crate::dtype::{to_bytes_in, Element};
use crate::pipe::{PipeRead, ShmPipe};
use crate::pool::BufPool;
use link::Link;
use net::{NetError, Recv, Stack, TcpHandle};
use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// Header length in bytes.
pub const HEADER_LEN: usize = 24;
const MAGIC: u16 = 0x434c; // "LC" little-endian
const VERSION: u8 = 1;

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// First message on a connection: who the sender is.
    Hello,
    /// Point-to-point message with a user tag.
    P2p,
    /// Message of a collective operation.
    Coll,
    /// Rank 0's table of every rank's address (bootstrap through rank 0).
    Table,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Hello => 0,
            Kind::P2p => 1,
            Kind::Coll => 2,
            Kind::Table => 3,
        }
    }
}

/// One received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    /// What it is.
    pub kind: Kind,
    /// User tag, collective sequence number, or the sender's rank (hello).
    pub tag: u32,
    /// Protocol step (hello: world size).
    pub step: u32,
    /// The payload.
    pub payload: Vec<u8>,
}

/// Malformed input on a connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The header does not start with the magic number and version.
    #[error("bad magic or version in a message header")]
    BadMagic,
    /// Unknown message kind.
    #[error("unknown message kind {0}")]
    BadKind(u8),
    /// Length beyond the configured maximum.
    #[error("message of {len} bytes exceeds the maximum of {max}")]
    TooLong {
        /// Announced length.
        len: u64,
        /// Largest accepted.
        max: usize,
    },
}

/// `v` (emptied) holding the header of a message of `len` payload bytes, with room for them.
fn header(mut v: Vec<u8>, kind: Kind, tag: u32, step: u32, len: usize) -> Vec<u8> {
    v.clear();
    v.reserve(HEADER_LEN + len);
    v.extend_from_slice(&header_bytes(kind, tag, step, len));
    v
}

/// The header of a message of `len` payload bytes, alone (a sender that writes the payload
/// straight from the caller's memory sends it first).
pub fn header_bytes(kind: Kind, tag: u32, step: u32, len: usize) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..2].copy_from_slice(&MAGIC.to_le_bytes());
    h[2] = VERSION;
    h[3] = kind.code();
    h[4..8].copy_from_slice(&tag.to_le_bytes());
    h[8..12].copy_from_slice(&step.to_le_bytes());
    h[16..24].copy_from_slice(&(len as u64).to_le_bytes());
    h
}

/// Builds one framed message: header and payload in one buffer.
pub fn encode(kind: Kind, tag: u32, step: u32, payload: &[u8]) -> Vec<u8> {
    encode_in(Vec::new(), kind, tag, step, payload)
}

/// [`encode`] into `buf` (its contents are replaced; a pooled buffer saves the allocation).
pub fn encode_in(buf: Vec<u8>, kind: Kind, tag: u32, step: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = header(buf, kind, tag, step, payload.len());
    v.extend_from_slice(payload);
    v
}

/// [`encode_in`] of a payload of elements (little-endian on the wire), copied once.
pub fn encode_elems_in<T: Element>(buf: Vec<u8>, kind: Kind, tag: u32, step: u32, data: &[T]) -> Vec<u8> {
    let v = header(buf, kind, tag, step, std::mem::size_of_val(data));
    to_bytes_in(v, data)
}

/// A hello's payload: the sender's listening address (as [`encode_addrs`]), then its host
/// name if it gives one (UTF-8), which tells the receiver whether both share a machine.
pub fn encode_hello(addr: SocketAddr, host: Option<&str>) -> Vec<u8> {
    let mut v = encode_addrs(&[addr]);
    v.extend_from_slice(host.unwrap_or_default().as_bytes());
    v
}

/// Parses what [`encode_hello`] produced: the address and the host name (`None` if empty);
/// `None` if there is no address.
pub fn decode_hello(b: &[u8]) -> Option<(SocketAddr, Option<String>)> {
    let (addr, used) = decode_addr(b)?;
    let host = std::str::from_utf8(&b[used..]).ok()?;
    Some((addr, (!host.is_empty()).then(|| host.to_string())))
}

/// Addresses as payload, each a family byte (4 or 6), the address (4 or 16 bytes) and the
/// port (2 bytes, little-endian).
pub fn encode_addrs(addrs: &[SocketAddr]) -> Vec<u8> {
    let mut v = Vec::with_capacity(addrs.len() * 19);
    for a in addrs {
        match a {
            SocketAddr::V4(a) => {
                v.push(4);
                v.extend_from_slice(&a.ip().octets());
            }
            SocketAddr::V6(a) => {
                v.push(6);
                v.extend_from_slice(&a.ip().octets());
            }
        }
        v.extend_from_slice(&a.port().to_le_bytes());
    }
    v
}

/// The first address of `b` (as [`encode_addrs`] writes it) and the bytes it took.
fn decode_addr(b: &[u8]) -> Option<(SocketAddr, usize)> {
    let len = match b.first()? {
        4 => 4,
        6 => 16,
        _ => return None,
    };
    let ip = b.get(1..1 + len)?;
    let port = u16::from_le_bytes(b.get(1 + len..3 + len)?.try_into().ok()?);
    let ip: std::net::IpAddr = match len {
        4 => Ipv4Addr::from(<[u8; 4]>::try_from(ip).ok()?).into(),
        _ => Ipv6Addr::from(<[u8; 16]>::try_from(ip).ok()?).into(),
    };
    Some((SocketAddr::new(ip, port), 3 + len))
}

/// Parses what [`encode_addrs`] produced; `None` if it is not a whole number of addresses.
pub fn decode_addrs(mut b: &[u8]) -> Option<Vec<SocketAddr>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (a, used) = decode_addr(b)?;
        out.push(a);
        b = &b[used..];
    }
    Some(out)
}

/// Parses a header: (kind, tag, step, length).
pub fn decode_header(h: &[u8; HEADER_LEN], max: usize) -> Result<(Kind, u32, u32, usize), FrameError> {
    let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    if u16::from_le_bytes([h[0], h[1]]) != MAGIC || h[2] != VERSION {
        return Err(FrameError::BadMagic);
    }
    let kind = match h[3] {
        0 => Kind::Hello,
        1 => Kind::P2p,
        2 => Kind::Coll,
        3 => Kind::Table,
        k => return Err(FrameError::BadKind(k)),
    };
    let mut l = [0u8; 8];
    l.copy_from_slice(&h[16..24]);
    let len = u64::from_le_bytes(l);
    if len > max as u64 {
        return Err(FrameError::TooLong { len, max });
    }
    Ok((kind, word(4), word(8), len as usize))
}

/// Why a connection stopped yielding messages.
#[derive(Debug)]
pub enum PumpEnd {
    /// No more bytes for now.
    WouldBlock,
    /// The peer closed its direction (after everything was read).
    Eof,
    /// The header the caller asked to hold ([`Parser::pump_until`]) was read: its payload is
    /// next in the stream, for the caller to read where it wants it.
    Held,
}

/// Failure while reading a connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PumpError {
    /// The bytes broke the framing.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The connection failed.
    #[error(transparent)]
    Net(#[from] NetError),
}

net::from_operation_errors!(PumpError; with_link);

/// Reassembles messages from one connection's byte stream.
#[derive(Debug, Default)]
pub struct Parser {
    hdr: [u8; HEADER_LEN],
    have: usize,
    /// The message being received and the payload length still missing.
    cur: Option<(Msg, usize)>,
}

impl Parser {
    /// The message being reassembled, if any: (kind, tag, step, bytes still missing).
    pub fn partial(&self) -> Option<(Kind, u32, u32, usize)> {
        self.cur.as_ref().map(|(m, missing)| (m.kind, m.tag, m.step, *missing))
    }

    /// Takes back a message whose header [`Parser::pump_until`] held and whose payload
    /// nobody read: the next pump reassembles it as any other.
    pub fn resume_held(&mut self, (kind, tag, step, len): (Kind, u32, u32, usize), pool: &mut BufPool) {
        let msg = Msg { kind, tag, step, payload: pool.take_or_new(len, len.min(16 << 20)) };
        self.cur = Some((msg, len));
    }

    /// Reads everything the connection has and appends complete messages to `out`.
    /// Payload buffers come from `pool` when it holds one large enough; a new one grows as
    /// bytes arrive, so an announced length reserves at most 16 MiB up front (the rest once
    /// more than that has arrived).
    pub fn pump<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        h: TcpHandle,
        max: usize,
        out: &mut VecDeque<Msg>,
        pool: &mut BufPool,
    ) -> Result<PumpEnd, PumpError> {
        self.pump_from(&mut TcpSource { stack, h }, max, out, pool)
    }

    /// [`Parser::pump`] from any byte stream (a TCP connection, a [`ShmPipe`]).
    pub fn pump_from<S: ByteSource>(
        &mut self,
        src: &mut S,
        max: usize,
        out: &mut VecDeque<Msg>,
        pool: &mut BufPool,
    ) -> Result<PumpEnd, PumpError> {
        self.pump_until(src, max, out, pool, None)
    }

    /// [`Parser::pump_from`] that stops after the header of the first message equal to
    /// `hold` (kind, tag, step, payload length): that header is consumed and
    /// [`PumpEnd::Held`] returned with the payload left in `src`.
    pub fn pump_until<S: ByteSource>(
        &mut self,
        src: &mut S,
        max: usize,
        out: &mut VecDeque<Msg>,
        pool: &mut BufPool,
        hold: Option<(Kind, u32, u32, usize)>,
    ) -> Result<PumpEnd, PumpError> {
        loop {
            if let Some((_, 0)) = &self.cur {
                if let Some((m, _)) = self.cur.take() {
                    out.push_back(m);
                }
                continue;
            }
            let avail = match src.peek()? {
                Some(a) if !a.is_empty() => a,
                Some(_) => return Ok(PumpEnd::WouldBlock),
                None => return Ok(PumpEnd::Eof),
            };
            if let Some((msg, missing)) = &mut self.cur {
                let take = avail.len().min(*missing);
                if msg.payload.capacity() - msg.payload.len() < take {
                    // The bytes are arriving: reserve the rest at once rather than doubling.
                    msg.payload.reserve_exact(*missing);
                }
                msg.payload.extend_from_slice(&avail[..take]);
                *missing -= take;
                src.consume(take)?;
                continue;
            }
            let take = avail.len().min(HEADER_LEN - self.have);
            self.hdr[self.have..self.have + take].copy_from_slice(&avail[..take]);
            self.have += take;
            src.consume(take)?;
            if self.have == HEADER_LEN {
                self.have = 0;
                let (kind, tag, step, len) = decode_header(&self.hdr, max)?;
                if hold == Some((kind, tag, step, len)) {
                    return Ok(PumpEnd::Held);
                }
                let msg = Msg { kind, tag, step, payload: pool.take_or_new(len, len.min(16 << 20)) };
                self.cur = Some((msg, len));
            }
        }
    }
}

/// A byte stream a [`Parser`] reads from.
pub trait ByteSource {
    /// Bytes ready to read (some or all of them; empty if none now), or `None` at the end of
    /// the stream (the peer closed it and everything was read).
    fn peek(&mut self) -> Result<Option<&[u8]>, PumpError>;
    /// Releases the first `n` bytes of what [`ByteSource::peek`] returned.
    fn consume(&mut self, n: usize) -> Result<(), PumpError>;
}

/// One TCP connection of a stack as a [`ByteSource`].
struct TcpSource<'a, L: Link> {
    stack: &'a mut Stack<L>,
    h: TcpHandle,
}

impl<L: Link> ByteSource for TcpSource<'_, L> {
    fn peek(&mut self) -> Result<Option<&[u8]>, PumpError> {
        if self.stack.tcp_recv_ready(self.h)? == 0 {
            return match self.stack.tcp_recv(self.h, &mut [])? {
                Recv::Eof => Ok(None),
                _ => Ok(Some(&[])),
            };
        }
        Ok(Some(self.stack.tcp_recv_borrow(self.h)?))
    }

    fn consume(&mut self, n: usize) -> Result<(), PumpError> {
        if n > 0 {
            self.stack.tcp_recv_consume(self.h, n)?;
        }
        Ok(())
    }
}

impl ByteSource for ShmPipe {
    fn peek(&mut self) -> Result<Option<&[u8]>, PumpError> {
        Ok(match self.read() {
            PipeRead::Data(b) => Some(b),
            PipeRead::Empty => Some(&[]),
            PipeRead::Eof => None,
        })
    }

    fn consume(&mut self, n: usize) -> Result<(), PumpError> {
        ShmPipe::consume(self, n);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_rejections() {
        let m = encode(Kind::Coll, 7, 3, b"abc");
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&m[..HEADER_LEN]);
        assert_eq!(decode_header(&h, 100).unwrap(), (Kind::Coll, 7, 3, 3));
        assert_eq!(&m[HEADER_LEN..], b"abc");
        let e = encode_elems_in(vec![9; 100], Kind::P2p, 7, 3, &[0x0102_0304i32, -1]);
        assert_eq!(e, encode(Kind::P2p, 7, 3, &[4, 3, 2, 1, 255, 255, 255, 255]));
        assert_eq!(decode_header(&h, 2), Err(FrameError::TooLong { len: 3, max: 2 }));
        let mut bad = h;
        bad[0] ^= 1;
        assert_eq!(decode_header(&bad, 100), Err(FrameError::BadMagic));
        let mut bad = h;
        bad[3] = 9;
        assert_eq!(decode_header(&bad, 100), Err(FrameError::BadKind(9)));
        let a: Vec<SocketAddr> =
            vec!["10.0.0.1:7470".parse().unwrap(), "[fd09::1]:7470".parse().unwrap(), "192.168.3.4:1".parse().unwrap()];
        assert_eq!(decode_addrs(&encode_addrs(&a)), Some(a.clone()));
        assert_eq!(decode_addrs(&[1, 2, 3]), None);
        let e = encode_addrs(&a);
        for cut in 1..e.len() {
            if ![7, 26].contains(&cut) {
                assert_eq!(decode_addrs(&e[..cut]), None, "cut at {cut}");
            }
        }
        let hello = encode_hello(a[1], Some("node7"));
        assert_eq!(decode_hello(&hello), Some((a[1], Some("node7".into()))));
        assert_eq!(decode_hello(&encode_hello(a[0], None)), Some((a[0], None)));
    }
}
