//! The shared-memory pipes to peers on this machine ([`Config::shm`]): creating or opening
//! them, reading messages out of them and writing queued messages into them.

use super::*;
use crate::frame::PumpError;
use std::time::Duration;

impl Endpoint {
    /// Creates the pipes to higher ranks (at once) and opens those of lower ranks (once
    /// their creator made them). A pipe that cannot be made loses its peer with the reason.
    pub(super) fn pipes_progress(&mut self) {
        let Some(job) = self.cfg.shm.as_deref() else { return };
        for (j, p) in self.peers.iter_mut().enumerate() {
            if !p.pipe_wanted || p.pipe.is_some() || p.lost.is_some() {
                continue;
            }
            let made = if self.rank < j {
                ShmPipe::create(job, self.rank, j, self.cfg.pipe_ring).map(Some)
            } else {
                ShmPipe::open(job, self.rank, j)
            };
            match made {
                Ok(Some(pipe)) => {
                    p.pipe = Some(pipe);
                    p.bell = Doorbell::open(job, j, Duration::ZERO).ok();
                }
                Ok(None) => {}
                Err(e) => p.lost = Some(format!("shared-memory pipe to rank {j}: {e}")),
            }
        }
    }

    /// Reads every pipe's complete messages into its peer's inbox (as `read_all` does for
    /// connections, with the same back-pressure), up to a claimed header.
    pub(super) fn read_pipes(&mut self) {
        for j in 0..self.peers.len() {
            self.pump_pipe(j);
        }
    }

    /// Reads `peer`'s pipe: complete messages go to its inbox, and the parser stops at the
    /// header of a claimed message ([`Peer::held`]).
    pub(super) fn pump_pipe(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        if p.pipe.is_none() || p.lost.is_some() || p.held.is_some() {
            return;
        }
        if p.inbox_full(self.cfg.max_unmatched, &mut self.counters) {
            return;
        }
        let Some(pipe) = p.pipe.as_mut() else { return };
        let before = p.inbox.len();
        let unread = pipe.unread_in();
        let hold = p.claim.map(|c| c.key());
        let r = p.pipe_parser.pump_until(pipe, self.cfg.max_message, &mut p.inbox, &mut self.pool, hold);
        if pipe.unread_in() < unread {
            // Room freed: a peer waiting to write more may sleep on its bell.
            if let Some(b) = &p.bell {
                b.ring();
            }
        }
        p.count_arrivals(before, &mut self.counters);
        match r {
            Ok(PumpEnd::WouldBlock) => {}
            Ok(PumpEnd::Held) => p.held = p.claim.map(|c| c.len),
            Ok(PumpEnd::Eof) => p.lost = Some("the peer closed its shared-memory pipe".into()),
            Err(PumpError::Frame(e)) => {
                p.lost = Some(format!("protocol violation on the shared-memory pipe: {e}"));
                self.counters.protocol_errors += 1;
                p.pipe = None;
            }
            Err(e) => p.lost = Some(e.to_string()),
        }
    }

    /// Copies queued messages into the pipes as far as their rings have room, and rings a
    /// peer's doorbell when it got bytes (it may sleep on it).
    pub(super) fn flush_pipes(&mut self) {
        for p in &mut self.peers {
            let (Some(pipe), None, false) = (p.pipe.as_mut(), &p.lost, p.streaming) else { continue };
            let mut wrote = false;
            while let Some(m) = p.pipe_out.front() {
                let n = pipe.write(&m[p.pipe_off..]);
                wrote |= n > 0;
                p.pipe_off += n;
                if p.pipe_off < m.len() {
                    break;
                }
                p.pipe_off = 0;
                super::engine::message_sent(&mut p.pipe_out, &mut self.pool, &mut self.counters);
            }
            if wrote {
                if let Some(b) = &p.bell {
                    b.ring();
                }
            }
        }
    }
}
