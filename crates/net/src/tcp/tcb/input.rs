//! One connection's input (RFC 9293 section 3.10.7 from SYN-SENT on): PAWS, the sequence
//! check, RST and SYN handling with RFC 5961 challenge ACKs, ACK processing with fast
//! retransmit and recovery, data and out-of-order reassembly, FIN. What only the engine can
//! do (free the session, queue it on its listener or for TIME-WAIT reclaim, answer with a
//! reset) is returned in [`After`] for the engine to carry io.

use super::super::clock::ts_clock;
use super::super::seq::{dist, ge, gt, le, lt, Seq, SeqRange};
use super::super::sink::Meter;
use super::super::timer::TimerKind;
use super::super::{TcpError, TcpHandle, TcpState};
use super::recovery::start_recovery;
use super::{Ctx, TcbMut};
use crate::counters::Counter;
use link::Instant;
use wire::tcp::flags::{ACK, FIN, RST, SYN};
use wire::TcpRepr;

/// What happened to a received segment: processed, or dropped for a reason.
pub type Verdict = Result<(), Counter>;

/// How a connection ends, for the engine to carry io.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Ended (with an error if abnormally): freed if the application released it (or a
    /// listener still holds it), else kept in CLOSED for the application to see.
    Finish(Option<TcpError>),
    /// A passive open reset in SYN-RECEIVED: freed at once.
    Free,
}

/// What the engine does after the connection took a segment (decided by the view, done by
/// the engine, in this order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct After {
    /// Answer the segment with a reset (RFC 9293 3.10.7.3-4: an ACK of something never sent).
    pub reset: bool,
    /// A passive open reached ESTABLISHED: move it to this listener's accept queue.
    pub accept_queue: Option<u16>,
    /// The connection entered TIME-WAIT: queue it for reclaim, park its buffers if done.
    pub time_wait: bool,
    /// The connection ended.
    pub end: Option<End>,
}

impl TcbMut<'_> {
    /// Take one segment (already demultiplexed to this connection, which is not in LISTEN):
    /// what it changed stays in the connection (an ACK due, data in the ring, timers armed);
    /// what the engine must do is returned.
    pub(crate) fn input<M: Meter>(
        &mut self,
        ctx: &mut Ctx,
        io: &mut M,
        repr: &TcpRepr,
        payload: &[u8],
    ) -> (Verdict, After) {
        let mut after = After::default();
        let v = if self.state.state == TcpState::SynSent {
            self.on_syn_sent(ctx, io, repr, &mut after)
        } else {
            let v = self.on_synchronized(ctx, io, repr, payload, &mut after);
            // RFC 9293 3.10.7.4: in SYN-RECEIVED an ACK for something we never sent is
            // answered with <SEQ=SEG.ACK><CTL=RST>; the session stays.
            after.reset |= v == Err(Counter::rx_drop_tcp_unacceptable_ack);
            v
        };
        (v, after)
    }

    /// After a segment (and what the engine did for it): a connection still in use restarts
    /// its keep-alive and is queued to send. Returns true if its output must run at once (the
    /// engine runs it): an ACK due while data waits out of order is a duplicate ACK the sender
    /// counts (RFC 5681 3.2, 4.2: one, at once, per out-of-order segment) and cannot wait to
    /// be merged at the end of the batch.
    #[inline]
    #[must_use]
    pub(crate) fn settle(&mut self, ctx: &mut Ctx, now: Instant) -> bool {
        if !self.state.in_use {
            return false;
        }
        self.touch_keepalive(ctx, now);
        ctx.dirty.mark(self.sid.0);
        self.rx.ack_now && !self.bufs.asm.is_empty()
    }

    /// Re-arm keep-alive after activity.
    #[inline]
    pub(crate) fn touch_keepalive(&mut self, ctx: &mut Ctx, now: Instant) {
        if let Some(idle) = ctx.cfg.keepalive {
            self.tx.keepalives = 0;
            ctx.timers.arm(self.sid.0, TimerKind::Keepalive, now + idle);
        }
    }

    /// Enter TIME-WAIT: 2 MSL on the linger timer (the engine queues the session for reclaim).
    fn enter_time_wait(&mut self, ctx: &mut Ctx, now: Instant, after: &mut After) {
        self.state.state = TcpState::TimeWait;
        ctx.timers.cancel(self.sid.0, TimerKind::Retransmit);
        ctx.timers.arm(self.sid.0, TimerKind::Linger, now + ctx.cfg.time_wait);
        after.time_wait = true;
    }

    /// RFC 9293 3.10.7.3: our SYN is io.
    fn on_syn_sent<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M, repr: &TcpRepr, after: &mut After) -> Verdict {
        let tx = &*self.tx;
        let has_ack = repr.flags & ACK != 0;
        if has_ack && (le(repr.ack, tx.iss) || gt(repr.ack, tx.snd_max)) {
            after.reset = repr.flags & RST == 0;
            return Err(Counter::rx_drop_tcp_bad_ack);
        }
        if repr.flags & RST != 0 {
            if has_ack {
                io.counters().bump(Counter::tcp_resets_received);
                after.end = Some(End::Finish(Some(TcpError::Refused)));
                return Ok(());
            }
            return Err(Counter::rx_drop_tcp_rst_ignored);
        }
        if repr.flags & SYN == 0 {
            return Err(Counter::rx_drop_tcp_no_ack);
        }
        self.accept_syn(ctx, repr);
        if has_ack {
            self.ack_advances(ctx, io, repr);
            self.state.state = TcpState::Established;
            self.arm_loss_timer(ctx, io.now());
            io.counters().bump(Counter::tcp_active_opens);
        } else {
            // Simultaneous open: answer with SYN-ACK carrying the same ISS.
            self.state.state = TcpState::SynReceived;
            let tx = &mut *self.tx;
            tx.snd_nxt = tx.iss;
        }
        self.rx.ack_now = true;
        Ok(())
    }

    /// RFC 9293 3.10.7.4: every state from SYN-RECEIVED on.
    fn on_synchronized<M: Meter>(
        &mut self,
        ctx: &mut Ctx,
        io: &mut M,
        repr: &TcpRepr,
        payload: &[u8],
        after: &mut After,
    ) -> Verdict {
        let now = io.now();
        // Simultaneous open (RFC 9293 figure 8): in SYN-RECEIVED, the peer's SYN-ACK repeats
        // the SYN we already took. Drop that SYN and process the rest as the ACK of ours (as
        // BSD and Linux do); otherwise it fails the sequence check and both sides keep
        // answering each other's SYN-ACK with their own.
        let mut trimmed = *repr;
        if self.state.state == TcpState::SynReceived
            && repr.flags & (SYN | ACK | RST) == SYN | ACK
            && Seq(repr.seq) == self.rx.irs
        {
            trimmed.flags &= !SYN;
            trimmed.seq = (Seq(repr.seq) + 1).0;
        }
        let repr = &trimmed;
        let (ts_ok, ts_recent) = (self.rx.ts_ok, self.rx.ts_recent);
        let tsval = repr.options.timestamps.map(|t| t.0);
        // PAWS (RFC 7323 5.3).
        if ts_ok && repr.flags & RST == 0 {
            if let Some(v) = tsval {
                if lt(v, ts_recent) {
                    let rx = &mut *self.rx;
                    rx.ack_now = true;
                    let seq = Seq(repr.seq);
                    if rx.sack_ok && !payload.is_empty() && seq < rx.rcv_nxt {
                        // A late original of data already received (its retransmission
                        // moved TS.Recent on): still report the duplicate with a D-SACK, as
                        // Linux does, or the sender cannot tell its recovery was spurious.
                        let end = seq + payload.len() as u32;
                        rx.dsack = Some(SeqRange { start: seq, end: if end > rx.rcv_nxt { rx.rcv_nxt } else { end } });
                    }
                    return Err(Counter::rx_drop_tcp_paws);
                }
            }
        }
        let len = payload.len() as u32 + (repr.flags & SYN != 0) as u32 + (repr.flags & FIN != 0) as u32;
        let seq = Seq(repr.seq);
        if !self.acceptable(seq, len) {
            if repr.flags & RST == 0 {
                let rx = &mut *self.rx;
                rx.ack_now = true;
                if rx.sack_ok && !payload.is_empty() && seq < rx.rcv_nxt {
                    // Data entirely below RCV.NXT: a duplicate, reported with D-SACK (RFC 2883).
                    let end = seq + payload.len() as u32;
                    rx.dsack = Some(SeqRange { start: seq, end: if end > rx.rcv_nxt { rx.rcv_nxt } else { end } });
                }
                // A retransmitted FIN in TIME-WAIT: re-ACK it and restart the 2 MSL timer
                // (RFC 9293 3.10.7.4; it never passes the sequence check, so `on_fin` does not
                // see it).
                if self.state.state == TcpState::TimeWait && repr.flags & FIN != 0 && seq + len == self.rx.rcv_nxt {
                    ctx.timers.arm(self.sid.0, TimerKind::Linger, now + ctx.cfg.time_wait);
                }
            }
            return Err(Counter::rx_drop_tcp_out_of_window);
        }
        if repr.flags & RST != 0 {
            return self.on_rst(ctx, io, seq, after);
        }
        if repr.flags & SYN != 0 {
            if self.state.state == TcpState::SynReceived && seq == self.rx.irs {
                self.rx.ack_now = true;
                return Err(Counter::rx_drop_tcp_duplicate_syn);
            }
            self.challenge_ack(ctx, io);
            return Err(Counter::rx_drop_tcp_syn_challenged);
        }
        if repr.flags & ACK == 0 {
            return Err(Counter::rx_drop_tcp_no_ack);
        }
        // TS.Recent update (RFC 7323 4.3): the segment covers the last ACK we sent, so that
        // a delayed ACK echoes the earliest segment it acknowledges.
        if let (true, Some(v)) = (ts_ok, tsval) {
            if seq <= self.rx.last_ack_sent {
                self.rx.ts_recent = v;
            }
        }
        if let (true, Some((_, ecr)), false) = (ts_ok, repr.options.timestamps, payload.is_empty()) {
            self.sample_rcv_rtt(ctx.cfg, ecr, now);
        }
        if self.state.state == TcpState::SynReceived {
            let tx = &*self.tx;
            if !(lt(tx.snd_una, repr.ack) && le(repr.ack, tx.snd_max)) {
                return Err(Counter::rx_drop_tcp_unacceptable_ack);
            }
            self.establish_passive(io, after);
        }
        self.on_ack(ctx, io, repr, payload.len() as u32, now, after)?;
        if after.end.is_some() && (self.state.released || self.state.listener.is_some()) {
            return Ok(()); // the engine frees the session
        }
        let mut verdict = Ok(());
        if !payload.is_empty() {
            verdict = self.on_data(ctx, io, seq, payload, now);
        }
        if repr.flags & FIN != 0 {
            self.on_fin(ctx, seq + payload.len() as u32, now, after);
        }
        verdict
    }

    /// RFC 9293 sequence acceptability test against the window we advertised.
    fn acceptable(&self, seq: Seq, len: u32) -> bool {
        let rx = &*self.rx;
        let wnd = rx.rcv_nxt.bytes_to(rx.rcv_adv);
        let in_wnd = |s: Seq| rx.rcv_nxt <= s && s < rx.rcv_nxt + wnd;
        match (len, wnd) {
            (0, 0) => seq == rx.rcv_nxt,
            (0, _) => in_wnd(seq),
            // RFC 9293 3.10.7.4: with a zero window, "special allowance should be made to
            // accept valid ACKs": a segment at RCV.NXT is processed for its ACK (and RST);
            // its payload finds no room and is dropped (and counted) in `on_data`.
            (_, 0) => seq == rx.rcv_nxt,
            _ => in_wnd(seq) || in_wnd(seq + (len - 1)),
        }
    }

    /// RST in window: exact match resets, anything else gets a challenge ACK (RFC 5961 3).
    fn on_rst<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M, seq: Seq, after: &mut After) -> Verdict {
        if seq != self.rx.rcv_nxt {
            self.challenge_ack(ctx, io);
            return Err(Counter::rx_drop_tcp_rst_challenged);
        }
        io.counters().bump(Counter::tcp_resets_received);
        let s = &*self.state;
        after.end = Some(if s.state == TcpState::SynReceived && s.listener.is_some() {
            End::Free
        } else {
            End::Finish(if s.state == TcpState::TimeWait { None } else { Some(TcpError::Reset) })
        });
        Ok(())
    }

    /// Call for a challenge ACK: it goes out with the next output unless one is already
    /// waiting on this connection or the rate limit is spent (then it is counted suppressed;
    /// one that goes out is counted sent by `emit`).
    fn challenge_ack<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M) {
        let rx = &mut *self.rx;
        if !rx.challenge_pending && ctx.challenge.allow(io.now()) {
            rx.challenge_pending = true;
            rx.ack_now = true;
        } else {
            io.counters().bump(Counter::tcp_challenge_acks_suppressed);
        }
    }

    /// SYN-RECEIVED -> ESTABLISHED: the engine hands the connection to its listener's accept queue.
    fn establish_passive<M: Meter>(&mut self, io: &mut M, after: &mut After) {
        self.state.state = TcpState::Established;
        after.accept_queue = self.state.listener;
        io.counters().bump(Counter::tcp_established_passive);
    }

    /// ACK processing: window update, new data acknowledged, duplicate ACKs and recovery.
    fn on_ack<M: Meter>(
        &mut self,
        ctx: &mut Ctx,
        io: &mut M,
        repr: &TcpRepr,
        seg_len: u32,
        now: Instant,
        after: &mut After,
    ) -> Verdict {
        let tx = &*self.tx;
        if gt(repr.ack, tx.snd_max) {
            self.rx.ack_now = true;
            return Err(Counter::rx_drop_tcp_ack_unsent);
        }
        if lt(repr.ack, tx.snd_una - (tx.max_snd_wnd.max(1))) {
            self.challenge_ack(ctx, io);
            return Err(Counter::rx_drop_tcp_ack_too_old);
        }
        let window = (repr.window as u32) << tx.snd_shift;
        let window_changed = window != tx.snd_wnd;
        let mut dsack_of_probe = false;
        let sack_ok = self.rx.sack_ok;
        let una_before = self.tx.snd_una;
        let sacked_before = self.tx.sb.sacked;
        let mut newly_sacked = Vec::new();
        if sack_ok {
            let blocks = &repr.options.sack_blocks;
            if let Some((s, e)) = blocks[0] {
                // A first block below the cumulative ACK, or inside the second block, is a
                // D-SACK (RFC 2883 section 4).
                let inside_next = blocks[1].is_some_and(|(s2, e2)| le(s2, s) && le(e, e2));
                if lt(s, e) && (le(e, repr.ack) || inside_next) {
                    io.counters().bump(Counter::tcp_dsacks_received);
                    let tx = &*self.tx;
                    dsack_of_probe = tx.tlp_retx && tx.tlp_high == Some(Seq(e));
                    self.on_dsack(io, SeqRange::new(s, e));
                }
            }
            let tx = &mut *self.tx;
            // The common case, no SACK information on either side, costs nothing here.
            if blocks.iter().any(Option::is_some) || !tx.sb.is_empty() {
                ctx.sack_before.clear();
                ctx.sack_before.extend_from_slice(tx.sb.ranges());
                tx.sb.update(tx.snd_una, tx.snd_max, &repr.options.sack_blocks);
                newly_sacked = tx.sb.newly_sacked(ctx.sack_before);
            }
        }
        if gt(repr.ack, self.tx.snd_una) {
            self.ack_advances(ctx, io, repr);
            self.probe_episode_acked(io, repr.ack, dsack_of_probe);
            let now = io.now();
            self.arm_loss_timer(ctx, now);
        } else if Seq(repr.ack) == self.tx.snd_una
            && seg_len == 0
            && !window_changed
            && window != 0
            && repr.flags & FIN == 0
        {
            // Not while the window is closed: those ACKs answer window probes, and nothing
            // may be retransmitted into a zero window anyway.
            self.duplicate_ack(io);
        }
        if sack_ok && self.state.state.is_synchronized() {
            let ecr = self.rx.ts_ok.then(|| repr.options.timestamps.map(|t| t.1)).flatten();
            let tx = &mut *self.tx;
            tx.rack.on_ack(tx.snd_una, &newly_sacked, ecr, now);
            let tx = &*self.tx;
            if !tx.sb.is_empty() || tx.recover.is_some() {
                self.detect_losses(ctx, io, now, false);
            }
            let tx = &*self.tx;
            let sacked: u32 = newly_sacked.iter().map(|r| r.len()).sum();
            // DeliveredData (RFC 6937): the cumulative advance plus the change in SACKed
            // bytes, so data SACKed earlier and now cumulatively acknowledged counts once.
            let delivered = (dist(una_before, tx.snd_una) + tx.sb.sacked).saturating_sub(sacked_before);
            if tx.recover.is_some() && gt(tx.snd_una, una_before) || sacked > 0 {
                self.prr_on_ack(delivered);
            }
        }
        let tx = &mut *self.tx;
        // Only an ACK at or beyond SND.UNA carries a usable window (RFC 9293 3.10.7.4): the
        // window is relative to SEG.ACK, but `snd_wnd` is used from `snd_una`.
        if le(tx.snd_una, repr.ack)
            && (lt(tx.snd_wl1, repr.seq) || (tx.snd_wl1 == Seq(repr.seq) && le(tx.snd_wl2, repr.ack)))
        {
            tx.snd_wnd = window;
            tx.max_snd_wnd = tx.max_snd_wnd.max(window);
            tx.snd_wl1 = Seq(repr.seq);
            tx.snd_wl2 = Seq(repr.ack);
        }
        self.our_fin_acked(ctx, now, after);
        Ok(())
    }

    /// `SND.UNA < SEG.ACK`: release acknowledged data, sample RTT, grow the window, leave or
    /// continue recovery.
    fn ack_advances<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M, repr: &TcpRepr) {
        let now = io.now();
        let state = self.state.state;
        let tx = &mut *self.tx;
        let mut acked = dist(tx.snd_una, repr.ack);
        if !state.is_synchronized() || tx.snd_una == tx.iss {
            acked = acked.saturating_sub(1); // the SYN
        }
        let queue = &mut self.bufs.tx;
        let data_acked = (acked as usize).min(queue.len());
        queue.consume(data_acked);
        ctx.tx_storage.park(&mut queue.ring); // all acknowledged: the storage serves other sessions
        tx.bytes_acked += data_acked as u64;
        let flight = dist(tx.snd_una, tx.snd_max);
        tx.snd_una = Seq(repr.ack);
        if lt(tx.snd_nxt, tx.snd_una) {
            tx.snd_nxt = tx.snd_una;
        }
        if lt(tx.retx_high, tx.snd_una) {
            tx.retx_high = tx.snd_una;
        }
        // RTT: the timed segment (Karn), else the echoed timestamp.
        match tx.timed {
            Some((seq, sent)) if gt(repr.ack, seq) => {
                tx.rtt.sample(now - sent);
                tx.timed = None;
            }
            _ => {
                if let (true, Some((_, ecr))) = (self.rx.ts_ok, repr.options.timestamps) {
                    let ms = ts_clock(now).wrapping_sub(ecr);
                    if ecr != 0 && ms > 0 && ms < 60_000 {
                        tx.rtt.sample(std::time::Duration::from_millis(ms as u64));
                    }
                }
            }
        }
        tx.retries = 0;
        tx.probes = 0;
        let srtt = tx.rtt.srtt();
        match tx.recover {
            Some(point) if ge(tx.snd_una, point) => {
                tx.recover = None;
                tx.tail_recovery = false;
                tx.cc.on_recovery_end();
                tx.dupacks = 0;
                tx.rack.on_recovery_end();
            }
            Some(_) => {
                if !self.rx.sack_ok {
                    // NewReno partial ACK (RFC 6582): retransmit the next hole, deflate.
                    tx.retx_front = true;
                    tx.cc.deflate_for_partial_ack(acked);
                }
            }
            None => {
                tx.dupacks = 0;
                // Grow only a window the flight actually used (RFC 7661's point): an
                // application- or receiver-limited sender keeps its cwnd.
                if state.is_synchronized() && data_acked > 0 && tx.cc.was_limited(flight) {
                    tx.cc.on_ack(data_acked as u32, now, srtt);
                }
            }
        }
        if self.tx.rto_undo.is_some() {
            let ecr = self.rx.ts_ok.then(|| repr.options.timestamps.map(|t| t.1)).flatten();
            self.check_spurious_rto(io, ecr);
        }
        if data_acked > 0 && self.autotune_tx(ctx.cfg, ctx.mem) {
            io.counters().bump(Counter::tcp_tx_buffer_grown);
        }
        // The caller restarts the retransmission (or probe) timer: `arm_loss_timer`.
    }

    /// A duplicate ACK: count it; the third (or SACK evidence of loss) starts fast
    /// retransmit and recovery (RFC 5681 3.2, RFC 6675 5).
    fn duplicate_ack<M: Meter>(&mut self, io: &mut M) {
        let sack_ok = self.rx.sack_ok;
        let dup_thresh = self.tx.reordering;
        let tx = &mut *self.tx;
        if tx.snd_una == tx.snd_max {
            return;
        }
        tx.dupacks += 1;
        io.counters().bump(Counter::tcp_dup_acks);
        if sack_ok && tx.tlp_high.is_some() && self.probe_sacked(io) {
            return;
        }
        if sack_ok {
            // With SACK, RACK decides what is lost (`detect_losses`, after the scoreboard).
            return;
        }
        let tx = &mut *self.tx;
        if tx.recover.is_none() && tx.dupacks >= dup_thresh {
            start_recovery(tx, false, io.now());
            tx.cc.on_fast_retransmit_without_sack();
            io.counters().bump(Counter::tcp_fast_retransmits);
        } else if tx.recover.is_some() {
            tx.cc.inflate_for_duplicate();
        }
    }

    /// State changes once our FIN is acknowledged.
    fn our_fin_acked(&mut self, ctx: &mut Ctx, now: Instant, after: &mut After) {
        let tx = &*self.tx;
        let Some(f) = tx.fin_seq else { return };
        if !gt(tx.snd_una, f) {
            return;
        }
        let linger = ctx.cfg.time_wait;
        match self.state.state {
            TcpState::FinWait1 => {
                self.state.state = TcpState::FinWait2;
                if self.state.released {
                    ctx.timers.arm(self.sid.0, TimerKind::Linger, now + linger);
                }
            }
            TcpState::Closing => self.enter_time_wait(ctx, now, after),
            TcpState::LastAck => {
                // Closed now for the rest of the segment; the engine ends the session.
                self.state.state = TcpState::Closed;
                after.end = Some(End::Finish(None));
            }
            _ => {}
        }
    }

    /// Payload: in-order data is appended, out-of-order data is stored ahead and tracked.
    fn on_data<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M, seq: Seq, payload: &[u8], now: Instant) -> Verdict {
        if !self.state.state.can_receive() {
            return Err(Counter::rx_drop_tcp_data_after_fin);
        }
        let rx = &mut *self.rx;
        let b = &mut *self.bufs;
        let (mut start, mut data) = (seq, payload);
        if start < rx.rcv_nxt {
            let skip = start.bytes_to(rx.rcv_nxt) as usize;
            if rx.sack_ok {
                // RFC 2883: tell the sender which of its bytes came twice.
                rx.dsack = Some(SeqRange { start, end: start + skip.min(data.len()) as u32 });
                rx.ack_now = true;
            }
            if skip >= data.len() {
                rx.ack_now = true;
                return Ok(());
            }
            data = &data[skip..];
            start = rx.rcv_nxt;
        }
        // Trim what lies beyond the right edge of the window we offered (RFC 9293 3.10.7.4),
        // on every path, the RX bypass included: the peer may not send past it.
        let room = start.bytes_to(rx.rcv_adv) as usize;
        if data.len() > room {
            io.counters().bump(Counter::tcp_rx_trimmed);
            rx.ack_now = true;
            if room == 0 {
                return Err(Counter::rx_drop_tcp_rx_buffer_full);
            }
            data = &data[..room];
        }
        let off = rx.rcv_nxt.bytes_to(start) as usize;
        let had_holes = !b.asm.is_empty();
        if rx.sack_ok && had_holes && b.asm.covers(off as u32, (off + data.len()) as u32) {
            // A duplicate of out-of-order data already held (RFC 2883 section 4.1.2).
            rx.dsack = Some(SeqRange { start, end: start + data.len() as u32 });
            rx.ack_now = true;
            return Ok(());
        }
        if rx.bypass && off == 0 && !had_holes && b.rx.is_empty() {
            // RX bypass, in order: straight from the frame to the application.
            let h = TcpHandle { id: self.sid.0, gen: self.state.gen };
            ctx.bypass.deliver(h, data);
            rx.rcv_nxt += data.len() as u32;
            rx.bytes_received += data.len() as u64;
        } else {
            if !ctx.rx_storage.unpark(&mut b.rx, ctx.mem, ctx.cfg.buffer_min) {
                rx.ack_now = true;
                return Err(Counter::rx_drop_tcp_mem_limit);
            }
            let written = b.rx.write_at(off, data);
            if written == 0 {
                rx.ack_now = true;
                return Err(Counter::rx_drop_tcp_rx_buffer_full);
            }
            let ready = if b.asm.add(off as u32, (off + written) as u32) {
                b.asm.take_front() as usize
            } else if off == 0 {
                // In-order data needs no range: with every range in use it still goes in (or
                // a full map of holes could never be filled).
                b.asm.shift(written as u32);
                written + b.asm.take_front() as usize
            } else {
                rx.ack_now = true;
                return Err(Counter::rx_drop_tcp_ooo_full);
            };
            if ready > 0 {
                b.rx.commit(ready);
                rx.rcv_nxt += ready as u32;
                rx.bytes_received += ready as u64;
                if rx.bypass {
                    // A hole filled: hand over everything now in order.
                    let h = TcpHandle { id: self.sid.0, gen: self.state.gen };
                    let (a, z) = b.rx.peek(0, usize::MAX);
                    ctx.bypass.deliver(h, a);
                    ctx.bypass.deliver(h, z);
                    b.rx.consume(a.len() + z.len());
                    if b.asm.is_empty() {
                        ctx.rx_storage.park(&mut b.rx);
                    }
                }
            }
        }
        if off == 0 && !rx.bypass && self.autotune_rx(ctx.cfg, ctx.mem, now) {
            io.counters().bump(Counter::tcp_rx_buffer_grown);
        }
        let rx = &mut *self.rx;
        if off > 0 || had_holes {
            // Out of order, or a hole just filled: acknowledge at once (RFC 5681 4.2).
            rx.ack_now = true;
            io.counters().bump(Counter::tcp_out_of_order);
        } else {
            rx.segs_unacked += 1;
            if rx.segs_unacked >= 2 || ctx.cfg.delayed_ack.is_zero() {
                rx.ack_now = true;
            } else {
                let at = now + ctx.cfg.delayed_ack;
                ctx.timers.arm_if_idle(self.sid.0, TimerKind::DelayedAck, at);
            }
        }
        Ok(())
    }

    /// The peer's FIN at `fin_seq` (after its data): accept it if it is the next byte.
    fn on_fin(&mut self, ctx: &mut Ctx, fin_seq: Seq, now: Instant, after: &mut After) {
        let rx = &mut *self.rx;
        if rx.fin_received {
            rx.ack_now = true;
            if self.state.state == TcpState::TimeWait {
                ctx.timers.arm(self.sid.0, TimerKind::Linger, now + ctx.cfg.time_wait);
            }
            return;
        }
        if fin_seq != rx.rcv_nxt {
            return;
        }
        rx.rcv_nxt += 1;
        rx.fin_received = true;
        rx.ack_now = true;
        let tx = &*self.tx;
        let fin_acked = tx.fin_seq.is_some_and(|f| gt(tx.snd_una, f));
        let next = match self.state.state {
            TcpState::Established | TcpState::SynReceived => TcpState::CloseWait,
            TcpState::FinWait1 if fin_acked => TcpState::TimeWait,
            TcpState::FinWait1 => TcpState::Closing,
            TcpState::FinWait2 => TcpState::TimeWait,
            other => other,
        };
        if next == TcpState::TimeWait {
            self.enter_time_wait(ctx, now, after);
        } else {
            self.state.state = next;
        }
    }
}

#[cfg(test)]
mod tests {
    //! The view's input alone (see `unit`): a segment in, the decision out.
    use super::super::super::ringbuf::RingBuf;
    use super::super::super::seq::{Seq, SeqRange};
    use super::super::super::timer::TimerKind;
    use super::super::super::{TcpError, TcpState};
    use super::super::unit::{seg, World, ISS, PEER_ISS, WINDOW};
    use super::{After, End};
    use crate::counters::Counter;
    use wire::tcp::flags::{ACK, FIN, RST, SYN};
    use wire::TcpRepr;

    #[test]
    fn in_order_data_is_taken_and_its_ack_delayed_the_second_segment_acks_at_once() {
        let mut w = World::established();
        let (v, after) = w.input(&seg(PEER_ISS + 1, ISS + 1, ACK), &[7u8; 100]);
        assert_eq!((v, after), (Ok(()), After::default()), "nothing for the engine to do");
        assert_eq!((w.rx.rcv_nxt, w.bufs.rx.len()), (Seq(PEER_ISS + 101), 100));
        assert!(!w.rx.ack_now, "one segment: the ACK waits");
        assert!(w.shared.timers.deadline(0, TimerKind::DelayedAck).is_some(), "on the delayed-ACK timer");
        let (v, _) = w.input(&seg(PEER_ISS + 101, ISS + 1, ACK), &[8u8; 100]);
        assert_eq!(v, Ok(()));
        assert!(w.rx.ack_now, "every second full segment is acknowledged at once (RFC 5681 4.2)");
    }

    #[test]
    fn out_of_order_data_is_held_and_asks_for_an_immediate_duplicate_ack() {
        let mut w = World::established();
        let (v, _) = w.input(&seg(PEER_ISS + 1001, ISS + 1, ACK), &[7u8; 100]);
        assert_eq!(v, Ok(()));
        assert_eq!(w.rx.rcv_nxt, Seq(PEER_ISS + 1), "not in order");
        assert!(w.rx.ack_now && !w.bufs.asm.is_empty(), "a duplicate ACK at once, the data held");
        assert_eq!(w.count(Counter::tcp_out_of_order), 1);
    }

    #[test]
    fn a_rst_in_window_but_not_at_rcv_nxt_asks_for_a_challenge_ack_and_one_at_rcv_nxt_resets() {
        let mut w = World::established();
        let (v, after) = w.input(&seg(PEER_ISS + 11, 0, RST), &[]);
        assert_eq!((v, after.end), (Err(Counter::rx_drop_tcp_rst_challenged), None));
        assert!(w.rx.challenge_pending && w.rx.ack_now, "a challenge ACK goes with the next output (RFC 5961 3)");
        let (v, after) = w.input(&seg(PEER_ISS + 1, 0, RST), &[]);
        assert_eq!((v, after.end), (Ok(()), Some(End::Finish(Some(TcpError::Reset)))));
        assert_eq!(w.count(Counter::tcp_resets_received), 1);
    }

    #[test]
    fn a_syn_on_an_established_connection_is_challenged_not_obeyed() {
        let mut w = World::established();
        let (v, after) = w.input(&seg(PEER_ISS + 1, 0, SYN), &[]);
        assert_eq!((v, after), (Err(Counter::rx_drop_tcp_syn_challenged), After::default()));
        assert!(w.rx.challenge_pending, "RFC 5961 4: a challenge ACK, the connection stays");
        assert_eq!(w.state.state, TcpState::Established);
    }

    #[test]
    fn an_ack_of_data_never_sent_is_answered_with_an_ack_and_dropped() {
        let mut w = World::established();
        let (v, after) = w.input(&seg(PEER_ISS + 1, ISS + 500, ACK), &[]);
        assert_eq!((v, after), (Err(Counter::rx_drop_tcp_ack_unsent), After::default()));
        assert!(w.rx.ack_now);
    }

    #[test]
    fn an_unacceptable_ack_in_syn_received_asks_the_engine_for_a_reset() {
        let mut w = World::established();
        w.state.state = TcpState::SynReceived;
        w.tx.snd_una = Seq(ISS);
        let (v, after) = w.input(&seg(PEER_ISS + 1, ISS + 7, ACK), &[]);
        assert_eq!(v, Err(Counter::rx_drop_tcp_unacceptable_ack));
        assert!(after.reset, "RFC 9293 3.10.7.4: <SEQ=SEG.ACK><CTL=RST>");
        assert_eq!(w.state.state, TcpState::SynReceived, "the session stays");
    }

    #[test]
    fn the_peers_fin_moves_to_close_wait_and_a_fin_after_ours_was_acked_enters_time_wait() {
        let mut w = World::established();
        let (v, after) = w.input(&seg(PEER_ISS + 1, ISS + 1, ACK | FIN), &[]);
        assert_eq!((v, after), (Ok(()), After::default()));
        assert_eq!((w.state.state, w.rx.rcv_nxt), (TcpState::CloseWait, Seq(PEER_ISS + 2)));
        assert!(w.rx.ack_now, "the FIN is acknowledged at once");

        let mut w = World::established();
        w.state.state = TcpState::FinWait2;
        w.tx.fin_seq = Some(Seq(ISS + 1));
        w.tx.snd_una = Seq(ISS + 2);
        (w.tx.snd_nxt, w.tx.snd_max) = (Seq(ISS + 2), Seq(ISS + 2));
        let (v, after) = w.input(&seg(PEER_ISS + 1, ISS + 2, ACK | FIN), &[]);
        assert_eq!(v, Ok(()));
        assert!(after.time_wait, "the engine queues it for reclaim");
        assert_eq!(w.state.state, TcpState::TimeWait);
        assert!(w.shared.timers.deadline(0, TimerKind::Linger).is_some(), "2 MSL on the linger timer");
    }

    #[test]
    fn a_duplicate_below_rcv_nxt_is_reported_as_a_d_sack_range() {
        let mut w = World::established();
        w.rx.sack_ok = true;
        let (v, _) = w.input(&seg(PEER_ISS + 1, ISS + 1, ACK), &[1u8; 300]);
        assert_eq!(v, Ok(()));
        let (v, _) = w.input(&seg(PEER_ISS + 101, ISS + 1, ACK), &[1u8; 100]);
        assert_eq!(v, Err(Counter::rx_drop_tcp_out_of_window), "entirely below RCV.NXT");
        assert_eq!(w.rx.dsack, Some(SeqRange::new(PEER_ISS + 101, PEER_ISS + 201)));
        assert!(w.rx.ack_now);
    }

    #[test]
    fn the_third_duplicate_ack_without_sack_starts_fast_retransmit() {
        let mut w = World::established();
        w.bufs.tx.ring = RingBuf::new(WINDOW as usize);
        w.bufs.tx.enqueue(&[5u8; 10 * 1460]);
        w.tx.snd_nxt = Seq(ISS + 1) + 10 * 1460;
        w.tx.snd_max = w.tx.snd_nxt;
        w.tx.snd_wnd = 60_000;
        // The same window each time: a window update is no duplicate ACK.
        let dup = TcpRepr { window: 60_000, ..seg(PEER_ISS + 1, ISS + 1, ACK) };
        for n in 1..=3 {
            let (v, _) = w.input(&dup, &[]);
            assert_eq!(v, Ok(()));
            assert_eq!(w.tx.dupacks, n);
        }
        assert!(w.tx.recover.is_some() && w.tx.retx_front, "recovery started, the head is to go again");
        assert_eq!(w.count(Counter::tcp_fast_retransmits), 1);
        assert_eq!(w.count(Counter::tcp_dup_acks), 3);
    }
}
