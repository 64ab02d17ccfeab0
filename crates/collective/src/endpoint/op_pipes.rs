//! An operation's messages straight between its buffers and the shared-memory pipes, with no
//! message buffer on either side (the pipe's ring is the only copy the transport needs).
//!
//! - **Sending:** a step's message to a peer with a pipe is written from the operation's input
//!   or working buffer as the ring has room ([`PipeSend`]). The step ends only once its
//!   messages are written, and a receive or local move into a range still being sent waits
//!   for that send, so the bytes cannot change under it. A message starts only when nothing
//!   queued for the pipe is ahead of it, and once started it holds the pipe (`streaming`).
//! - **Receiving:** a receive whose message has not arrived claims the next message of its
//!   kind, tag, step and length from the peer's pipe; the parser stops after that header,
//!   and the payload is copied or reduced from the ring into the working buffer as it
//!   arrives (an element split by the ring's end waits in [`Op::carry`]). Messages that
//!   arrived before the claim are taken from the inbox first, so the order per peer holds.
//!
//! An operation that ends with a claimed header unread gives it back to the parser; one that
//! fails in the middle of a message loses that peer (its stream holds part of a message).

use super::direct::write_framed;
use super::*;
use crate::dtype::DType;
use crate::frame::HEADER_LEN;
use std::ops::Range;

/// Reduces `src`, the bytes from offset `done` on of a message, into `dst` (the message's
/// range of the working buffer); an element split between calls waits in `carry`.
fn reduce_streamed(dt: DType, rop: ReduceOp, dst: &mut [u8], done: usize, carry: &mut ([u8; 16], usize), src: &[u8]) {
    let es = dt.size();
    let mut src = src;
    let mut at = done - carry.1;
    if carry.1 > 0 {
        let k = (es - carry.1).min(src.len());
        carry.0[carry.1..carry.1 + k].copy_from_slice(&src[..k]);
        carry.1 += k;
        src = &src[k..];
        if carry.1 < es {
            return;
        }
        reduce_bytes(dt, rop, &mut dst[at..at + es], &carry.0[..es]);
        at += es;
        carry.1 = 0;
    }
    let whole = src.len() / es * es;
    reduce_bytes(dt, rop, &mut dst[at..at + whole], &src[..whole]);
    let rest = &src[whole..];
    carry.0[..rest.len()].copy_from_slice(rest);
    carry.1 = rest.len();
}

/// Whether a message still being written from the working buffer covers part of `r`.
pub(super) fn sending_from(sends: &VecDeque<PipeSend>, r: &Range<usize>) -> bool {
    sends.iter().any(|d| d.buf == Buf::Work && d.range.start < r.end && r.start < d.range.end)
}

impl Endpoint {
    /// Posts a step's message to `peer`: straight from the operation's buffer into the pipe
    /// when there is one, else copied into a framed message queued for the connection.
    pub(super) fn post_send(&mut self, op: &mut Op, peer: usize, buf: Buf, range: &Range<usize>, wire: u32) {
        let src: &[u8] = if buf == Buf::Input { &op.input } else { &op.work };
        let bytes = src.get(range.clone()).unwrap_or(&[]);
        if self.live_pipe(peer) {
            let hdr = crate::frame::header_bytes(op.kind, op.tag, wire, bytes.len());
            let range = range.start..range.start + bytes.len();
            op.pipe_sends.push_back(PipeSend { peer, hdr, buf, range, off: 0 });
            self.peers[peer].queued_direct += 1;
            return;
        }
        self.staged(bytes.len());
        let m = self.pool.take(HEADER_LEN + bytes.len());
        self.peers[peer].queue(encode_in(m, op.kind, op.tag, wire, bytes));
    }

    /// Writes the operation's pending pipe messages as far as the rings have room, each peer's
    /// in order; a lost peer fails the operation. A peer whose pipe an earlier operation could
    /// not finish writing to this round (`pipe_busy`, cleared by `advance_ops`)
    /// takes nothing from later ones, so messages enter a pipe in the order they were posted.
    pub(super) fn write_pipe_sends(&mut self, op: &mut Op) -> Result<(), CollectiveError> {
        let mut i = 0;
        while let Some(d) = op.pipe_sends.get_mut(i) {
            if self.pipe_busy[d.peer] {
                i += 1;
                continue;
            }
            let p = &mut self.peers[d.peer];
            let lost = || CollectiveError::PeerLost {
                op: op.name,
                step: op.step,
                rank: d.peer,
                reason: p.lost.clone().unwrap_or_else(|| "the shared-memory pipe is gone".into()),
            };
            if p.lost.is_some() || p.pipe.is_none() {
                return Err(lost());
            }
            if d.off == 0 && (p.streaming || !p.pipe_out.is_empty() || p.pipe_off != 0) {
                self.pipe_busy[d.peer] = true;
                i += 1;
                continue;
            }
            let src: &[u8] = if d.buf == Buf::Input { &op.input } else { &op.work };
            let data = &src[d.range.clone()];
            let pipe = p.pipe.as_mut().expect("checked above");
            let wrote = write_framed(pipe, &d.hdr, data, &mut d.off);
            if wrote > 0 {
                self.streamed += wrote as u64;
                if let Some(b) = &p.bell {
                    b.ring();
                }
            }
            if d.off == HEADER_LEN + data.len() {
                p.streaming = false;
                p.queued_direct -= 1;
                self.counters.msgs_sent += 1;
                self.counters.bytes_sent += data.len() as u64;
                self.counters.direct_sends += 1;
                op.pipe_sends.remove(i);
            } else {
                p.streaming = d.off > 0;
                self.pipe_busy[d.peer] = true;
                i += 1;
            }
        }
        Ok(())
    }

    /// The receive of `range` (`mode`, protocol step `wire`) from `peer` for operation `id`,
    /// straight out of the pipe: claims the message if nobody else holds the pipe, then
    /// copies or reduces what has arrived of it. `Ok(true)` once the whole message is in.
    pub(super) fn pull_from_pipe(
        &mut self,
        id: u64,
        op: &mut Op,
        peer: usize,
        range: &Range<usize>,
        mode: Mode,
        wire: u32,
    ) -> Result<bool, CollectiveError> {
        if !self.live_pipe(peer) {
            return Ok(false);
        }
        let claim = Claim { kind: op.kind, tag: op.tag, wire, len: range.len(), op: Some(id) };
        match self.peers[peer].claim {
            None => self.peers[peer].claim = Some(claim),
            Some(c) if c == claim => {}
            Some(_) => return Ok(false),
        }
        if self.peers[peer].held.is_none() {
            // Read up to the claimed header (earlier messages go to the inbox).
            self.pump_pipe(peer);
            if self.peers[peer].has(op.kind, op.tag, wire) {
                // An earlier message of the same kind was read whole: the caller takes it
                // (and keeps or drops the claim).
                return Ok(false);
            }
        }
        let p = &mut self.peers[peer];
        let Some(left) = p.held else { return Ok(false) };
        let done = range.len() - left;
        if mode == Mode::Copy && done == 0 && op.work.len() < range.end {
            // An own buffer still short of the range grows as the bytes arrive.
            let Some(v) = op.work.owned_mut().filter(|v| v.len() == range.start) else {
                return Err(CollectiveError::BadArgument(format!("{}: receive beyond the working buffer", op.name)));
            };
            if v.capacity() < range.end {
                let mut w = self.pool.take(range.end);
                w.extend_from_slice(v);
                self.pool.give(std::mem::replace(v, w));
            }
        } else if mode == Mode::Reduce && op.work.len() < range.end {
            return Err(CollectiveError::BadArgument(format!("{}: reduction beyond the working buffer", op.name)));
        }
        let Some(pipe) = p.pipe.as_mut() else { return Ok(false) };
        let mut got = 0;
        while got < left {
            let n = match pipe.read() {
                PipeRead::Data(b) => {
                    let n = b.len().min(left - got);
                    let at = done + got;
                    let end = range.start + at;
                    match (mode, op.work.owned_mut()) {
                        (Mode::Copy, Some(v)) if v.len() == end => v.extend_from_slice(&b[..n]),
                        (Mode::Copy, _) => op.work[end..end + n].copy_from_slice(&b[..n]),
                        (Mode::Reduce, _) => {
                            reduce_streamed(op.dtype, op.rop, &mut op.work[range.clone()], at, &mut op.carry, &b[..n])
                        }
                    }
                    n
                }
                PipeRead::Empty => break,
                PipeRead::Eof => {
                    p.lost = Some("the peer closed its shared-memory pipe in the middle of a message".into());
                    return Ok(false);
                }
            };
            pipe.consume(n);
            got += n;
        }
        if got > 0 {
            self.streamed += got as u64;
            if let Some(b) = &p.bell {
                b.ring();
            }
        }
        if got < left {
            p.held = Some(left - got);
            return Ok(false);
        }
        p.held = None;
        p.claim = None;
        self.counters.msgs_received += 1;
        self.counters.bytes_received += range.len() as u64;
        self.counters.direct_recvs += 1;
        Ok(true)
    }

    /// A receive of operation `id` from `peer` was served from the inbox: a claim it left on
    /// the pipe that holds nothing yet is dropped (one holding a message of the same kind is
    /// kept for the operation's next receive of it).
    pub(super) fn drop_idle_claim(&mut self, id: u64, peer: usize) {
        let p = &mut self.peers[peer];
        if p.held.is_none() && p.claim.is_some_and(|c| c.op == Some(id)) {
            p.claim = None;
        }
    }

    /// Operation `id` ended: its claims are dropped (a held header nobody read goes back to
    /// the parser) and its unwritten messages abandoned; a message left half-written or
    /// half-read loses its peer.
    pub(super) fn release_pipes(&mut self, id: u64, op: &mut Op) {
        for d in op.pipe_sends.drain(..) {
            let p = &mut self.peers[d.peer];
            p.queued_direct -= 1;
            if d.off > 0 {
                p.streaming = false;
                if p.lost.is_none() {
                    p.lost = Some(format!("{} failed in the middle of a message to this peer", op.name));
                }
            }
        }
        for p in &mut self.peers {
            let Some(c) = p.claim.filter(|c| c.op == Some(id)) else { continue };
            p.claim = None;
            match p.held.take() {
                Some(left) if left == c.len => p.pipe_parser.resume_held(c.key(), &mut self.pool),
                Some(_) if p.lost.is_none() => {
                    p.lost = Some(format!("{} failed in the middle of a message from this peer", op.name));
                }
                _ => {}
            }
        }
    }
}
