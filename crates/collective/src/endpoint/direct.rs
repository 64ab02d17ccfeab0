//! Point-to-point receives straight from a shared-memory pipe into the caller's memory (the
//! blocking [`crate::Communicator::recv_into`]): the receiver copies the payload out of the
//! ring into the caller's buffer, and no message buffer is made. (Sends straight from the
//! caller's memory are operations with a lent input, see `op_pipes`.)
//!
//! A direct receive claims the next message of its tag and length from the pipe: the parser
//! stops after that header ([`PumpEnd::Held`]) and the payload stays in the ring until the
//! receive copies it out. A message of that tag already waiting, or an earlier receive of
//! the same peer and tag still in progress, sends the receive the ordinary way.

use super::*;
use crate::frame::HEADER_LEN;

/// Writes what `pipe` has room for of `hdr` followed by `data`, from byte `*off` of the two
/// on; returns the bytes written.
pub(super) fn write_framed(pipe: &mut ShmPipe, hdr: &[u8; HEADER_LEN], data: &[u8], off: &mut usize) -> usize {
    let mut wrote = 0;
    if *off < HEADER_LEN {
        let n = pipe.write(&hdr[*off..]);
        *off += n;
        wrote += n;
    }
    if *off >= HEADER_LEN {
        let n = pipe.write(&data[*off - HEADER_LEN..]);
        *off += n;
        wrote += n;
    }
    wrote
}

/// What a step of a direct receive found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DirectRecv {
    /// The whole message is in the caller's buffer.
    Done,
    /// Bytes arrived (the message is not complete yet).
    Moved,
    /// Nothing new.
    Idle,
    /// A message of the claimed tag with another length arrived: receive it the ordinary
    /// way (which reports the mismatch).
    Fallback,
}

impl Endpoint {
    /// The pipe to `peer` if it is up and usable.
    pub(super) fn live_pipe(&self, peer: usize) -> bool {
        cfg!(target_endian = "little")
            && peer != self.rank
            && self.peers.get(peer).is_some_and(|p| p.pipe.is_some() && p.lost.is_none())
    }

    fn lost_error(&self, op: &'static str, peer: usize) -> CollectiveError {
        CollectiveError::PeerLost {
            op,
            step: 0,
            rank: peer,
            reason: self.peers[peer].lost.clone().unwrap_or_else(|| "the shared-memory pipe is gone".into()),
        }
    }

    /// Claims the next point-to-point message of `tag` and `len` bytes from `peer`'s pipe
    /// for a direct receive, if no message of that tag is already waiting and no receive of
    /// it is in progress (`false`: receive the ordinary way).
    pub(crate) fn direct_recv_begin(&mut self, peer: usize, tag: u32, len: usize) -> bool {
        if !self.live_pipe(peer) {
            return false;
        }
        let p = &self.peers[peer];
        let waiting = p.inbox.iter().any(|m| m.kind == Kind::P2p && m.tag == tag);
        let receiving = self.ops.values().any(|o| {
            o.outcome.is_none()
                && o.kind == Kind::P2p
                && o.tag == tag
                && o.sched
                    .steps
                    .iter()
                    .flat_map(|s| &s.actions)
                    .any(|a| matches!(a, Action::Recv { peer: q, .. } if *q == peer))
        });
        if waiting || receiving || p.claim.is_some() || p.held.is_some() {
            return false;
        }
        self.peers[peer].claim = Some(Claim { kind: Kind::P2p, tag, wire: 0, len, op: None });
        true
    }

    /// Copies what has arrived of the claimed message from `peer`'s pipe into `out` (its
    /// whole length), from byte `*off` on.
    pub(crate) fn direct_recv_step(
        &mut self,
        peer: usize,
        out: &mut [u8],
        off: &mut usize,
    ) -> Result<DirectRecv, CollectiveError> {
        let p = &mut self.peers[peer];
        let Some(missing) = p.held else {
            let tag = p.claim.map(|c| c.tag);
            if p.inbox.iter().any(|m| m.kind == Kind::P2p && Some(m.tag) == tag) {
                return Ok(DirectRecv::Fallback);
            }
            if p.lost.is_some() {
                return Err(self.lost_error("recv", peer));
            }
            return Ok(DirectRecv::Idle);
        };
        let Some(pipe) = p.pipe.as_mut() else { return Err(self.lost_error("recv", peer)) };
        let mut left = missing;
        while left > 0 {
            let n = match pipe.read() {
                PipeRead::Data(b) => {
                    let n = b.len().min(left);
                    out[*off..*off + n].copy_from_slice(&b[..n]);
                    n
                }
                PipeRead::Empty => break,
                PipeRead::Eof => {
                    p.lost = Some("the peer closed its shared-memory pipe in the middle of a message".into());
                    p.held = None;
                    return Err(self.lost_error("recv", peer));
                }
            };
            pipe.consume(n);
            *off += n;
            left -= n;
        }
        if left < missing {
            if let Some(b) = &p.bell {
                b.ring();
            }
        }
        if left == 0 {
            p.held = None;
            p.claim = None;
            self.counters.msgs_received += 1;
            self.counters.bytes_received += out.len() as u64;
            self.counters.direct_recvs += 1;
            return Ok(DirectRecv::Done);
        }
        p.held = Some(left);
        Ok(if left < missing { DirectRecv::Moved } else { DirectRecv::Idle })
    }

    /// Ends a direct receive from `peer`: drops its claim; one left with part of its message
    /// read loses the peer (the rest of the message is in the stream with nobody to take it).
    pub(crate) fn direct_recv_end(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        p.claim = None;
        if p.held.take().is_some() && p.lost.is_none() {
            p.lost = Some("a receive was abandoned in the middle of its message".into());
        }
    }
}
