//! The receive engine (RFC 9293 section 3.10.7): demultiplexing a segment to its session,
//! passive opens, the SYN-SENT and synchronized-state processing (PAWS, sequence check, RST
//! and SYN handling with RFC 5961 challenge ACKs, ACK processing with fast retransmit and
//! recovery, data and out-of-order reassembly, FIN).

use super::clock::ts_clock;
use super::conn::{RxSar, TxSar};
use super::engine::TcpEngine;
use super::lookup::FourTuple;
use super::tcb::recovery::start_recovery;
use super::seq::{dist, ge, gt, le, lt, Seq};
use super::sink::SegmentSink;
use super::tcb::SessionId;
use super::timer::TimerKind;
use super::{TcpError, TcpHandle, TcpState};
use crate::counters::Counter;
use link::Instant;
use std::net::Ipv4Addr;
use wire::tcp::flags::{ACK, FIN, RST, SYN};
use wire::{TcpRepr, TcpSegment};

/// What happened to a received segment: processed, or dropped for a reason.
pub type Verdict = Result<(), Counter>;

/// Window scaling (RFC 7323 2.2) is on only if both sides offered it; shifts of at most 14.
pub(super) fn agree_window_scale(rx: &mut RxSar, tx: &mut TxSar, ours: Option<u8>, theirs: Option<u8>) {
    match (ours, theirs) {
        (Some(ours), Some(theirs)) => {
            rx.ws_ok = true;
            rx.rcv_shift = ours.min(14);
            tx.snd_shift = theirs.min(14);
        }
        _ => {
            rx.ws_ok = false;
            rx.rcv_shift = 0;
            tx.snd_shift = 0;
        }
    }
}

impl TcpEngine {
    /// Process one TCP segment (`l4`: header and payload) from `src` to `dst` (our address).
    pub(crate) fn on_segment<S: SegmentSink>(
        &mut self,
        out: &mut S,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        l4: &[u8],
    ) -> Verdict {
        let seg = match TcpSegment::new_checked(l4) {
            Ok(s) => s,
            Err(_) => return Err(Counter::rx_drop_tcp_malformed),
        };
        if !seg.verify_checksum(src, dst) {
            return Err(Counter::rx_drop_tcp_bad_checksum);
        }
        let repr = match TcpRepr::parse(&seg) {
            Ok(r) => r,
            Err(_) => return Err(Counter::rx_drop_tcp_bad_options),
        };
        if repr.src_port == 0 || repr.dst_port == 0 {
            return Err(Counter::rx_drop_tcp_malformed);
        }
        out.counters().bump(Counter::tcp_rx_segments);
        let payload = seg.payload();
        let tuple = FourTuple { local_port: repr.dst_port, remote_ip: src, remote_port: repr.src_port };
        let mut found = self.lookup.get(&tuple);
        if let Some(sid) = found {
            if self.state[sid as usize].state == TcpState::TimeWait
                && repr.flags & (SYN | ACK | RST | FIN) == SYN
                && self.listeners.contains_key(&tuple.local_port)
                && self.time_wait_allows_syn(sid, &repr)
            {
                // RFC 6191: the old incarnation gives way to the new one.
                self.finish(sid, None);
                out.counters().bump(Counter::tcp_time_wait_reused);
                found = None;
            }
        }
        let verdict = match found {
            Some(sid) => {
                let v = if self.state[sid as usize].state == TcpState::SynSent {
                    self.on_syn_sent(out, sid, &repr)
                } else {
                    let v = self.on_synchronized(out, sid, &repr, payload);
                    if v == Err(Counter::rx_drop_tcp_unacceptable_ack) {
                        // RFC 9293 3.10.7.4: in SYN-RECEIVED an ACK for something we never
                        // sent is answered with <SEQ=SEG.ACK><CTL=RST>; the session stays.
                        let tuple = self.state[sid as usize].tuple;
                        self.send_reset(out, tuple.remote_ip, tuple, repr.seq, repr.ack, repr.flags, 0);
                    }
                    v
                };
                self.activity.mark(sid);
                if self.state[sid as usize].in_use {
                    self.touch_keepalive(sid, out.now());
                    self.mark_dirty(sid);
                    // An ACK due while data waits out of order is a duplicate ACK the sender
                    // counts (RFC 5681 3.2, 4.2: one, at once, per out-of-order segment): it
                    // cannot wait to be merged at the end of the batch.
                    if self.rx[sid as usize].ack_now && !self.bufs[sid as usize].asm.is_empty() {
                        self.output(out, sid, out.now());
                    }
                }
                v
            }
            None => self.on_no_session(out, tuple, &repr, payload),
        };
        if self.time_wait_reclaimed > 0 {
            out.counters().add(Counter::tcp_time_wait_reclaimed, std::mem::take(&mut self.time_wait_reclaimed));
        }
        // Sessions marked dirty send at the end of the poll's receive batch, so one ACK can
        // cover several segments of the batch.
        verdict
    }

    /// Take the peer's SYN: initial receive sequence and the options both sides agree on.
    pub(super) fn accept_syn(&mut self, sid: u32, repr: &TcpRepr) {
        let o = &repr.options;
        let rx = &mut self.rx[sid as usize];
        let tx = &mut self.tx[sid as usize];
        rx.irs = Seq(repr.seq);
        rx.rcv_nxt = rx.irs + 1;
        rx.rcv_adv = rx.rcv_nxt;
        rx.tune_mark = rx.rcv_nxt;
        agree_window_scale(rx, tx, self.cfg.window_scale, o.window_scale);
        rx.sack_ok = self.cfg.sack && o.sack_permitted;
        rx.ts_ok = self.cfg.timestamps && o.timestamps.is_some();
        if let Some((tsval, _)) = o.timestamps {
            rx.ts_recent = tsval;
        }
        let peer_mss = o.mss.unwrap_or(536).max(64);
        let overhead = if rx.ts_ok { 12 } else { 0 };
        tx.mss = peer_mss.min(self.local_mss) - overhead;
        tx.cc.set_mss(tx.mss as u32);
        tx.snd_wnd = repr.window as u32;
        tx.max_snd_wnd = tx.snd_wnd;
        tx.snd_wl1 = Seq(repr.seq);
        tx.snd_wl2 = Seq(repr.ack);
    }

    /// RFC 9293 3.10.7.3: our SYN is out.
    fn on_syn_sent<S: SegmentSink>(&mut self, out: &mut S, sid: u32, repr: &TcpRepr) -> Verdict {
        let tx = &self.tx[sid as usize];
        let has_ack = repr.flags & ACK != 0;
        if has_ack && (le(repr.ack, tx.iss) || gt(repr.ack, tx.snd_max)) {
            if repr.flags & RST == 0 {
                let tuple = self.state[sid as usize].tuple;
                self.send_reset(out, tuple.remote_ip, tuple, repr.seq, repr.ack, repr.flags, 0);
            }
            return Err(Counter::rx_drop_tcp_bad_ack);
        }
        if repr.flags & RST != 0 {
            if has_ack {
                out.counters().bump(Counter::tcp_resets_received);
                self.finish(sid, Some(TcpError::Refused));
                return Ok(());
            }
            return Err(Counter::rx_drop_tcp_rst_ignored);
        }
        if repr.flags & SYN == 0 {
            return Err(Counter::rx_drop_tcp_no_ack);
        }
        self.accept_syn(sid, repr);
        if has_ack {
            self.ack_advances(out, sid, repr);
            self.state[sid as usize].state = TcpState::Established;
            let (mut tcb, mut ctx) = self.tcb(sid);
            tcb.arm_loss_timer(&mut ctx, out.now());
            out.counters().bump(Counter::tcp_active_opens);
        } else {
            // Simultaneous open: answer with SYN-ACK carrying the same ISS.
            self.state[sid as usize].state = TcpState::SynReceived;
            let tx = &mut self.tx[sid as usize];
            tx.snd_nxt = tx.iss;
        }
        self.rx[sid as usize].ack_now = true;
        Ok(())
    }

    /// RFC 9293 3.10.7.4: every state from SYN-RECEIVED on.
    pub(super) fn on_synchronized<S: SegmentSink>(
        &mut self,
        out: &mut S,
        sid: u32,
        repr: &TcpRepr,
        payload: &[u8],
    ) -> Verdict {
        let now = out.now();
        // Simultaneous open (RFC 9293 figure 8): in SYN-RECEIVED, the peer's SYN-ACK repeats
        // the SYN we already took. Drop that SYN and process the rest as the ACK of ours (as
        // BSD and Linux do); otherwise it fails the sequence check and both sides keep
        // answering each other's SYN-ACK with their own.
        let mut trimmed = *repr;
        if self.state[sid as usize].state == TcpState::SynReceived
            && repr.flags & (SYN | ACK | RST) == SYN | ACK
            && Seq(repr.seq) == self.rx[sid as usize].irs
        {
            trimmed.flags &= !SYN;
            trimmed.seq = repr.seq.wrapping_add(1);
        }
        let repr = &trimmed;
        let (ts_ok, ts_recent) = (self.rx[sid as usize].ts_ok, self.rx[sid as usize].ts_recent);
        let tsval = repr.options.timestamps.map(|t| t.0);
        // PAWS (RFC 7323 5.3).
        if ts_ok && repr.flags & RST == 0 {
            if let Some(v) = tsval {
                if lt(v, ts_recent) {
                    let rx = &mut self.rx[sid as usize];
                    rx.ack_now = true;
                    let seq = Seq(repr.seq);
                    if rx.sack_ok && !payload.is_empty() && seq < rx.rcv_nxt {
                        // A late original of data already received (its retransmission
                        // moved TS.Recent on): still report the duplicate with a D-SACK, as
                        // Linux does, or the sender cannot tell its recovery was spurious.
                        let end = seq + payload.len() as u32;
                        rx.dsack = Some((seq.0, if end > rx.rcv_nxt { rx.rcv_nxt.0 } else { end.0 }));
                    }
                    return Err(Counter::rx_drop_tcp_paws);
                }
            }
        }
        let len = payload.len() as u32 + (repr.flags & SYN != 0) as u32 + (repr.flags & FIN != 0) as u32;
        let seq = Seq(repr.seq);
        if !self.acceptable(sid, seq, len) {
            if repr.flags & RST == 0 {
                let rx = &mut self.rx[sid as usize];
                rx.ack_now = true;
                if rx.sack_ok && !payload.is_empty() && seq < rx.rcv_nxt {
                    // Data entirely below RCV.NXT: a duplicate, reported with D-SACK (RFC 2883).
                    let end = seq + payload.len() as u32;
                    rx.dsack = Some((seq.0, if end > rx.rcv_nxt { rx.rcv_nxt.0 } else { end.0 }));
                }
                // A retransmitted FIN in TIME-WAIT: re-ACK it and restart the 2 MSL timer
                // (RFC 9293 3.10.7.4; it never passes the sequence check, so `on_fin` does not
                // see it).
                if self.state[sid as usize].state == TcpState::TimeWait
                    && repr.flags & FIN != 0
                    && seq + len == self.rx[sid as usize].rcv_nxt
                {
                    self.timers.arm(sid, TimerKind::Linger, now + self.cfg.time_wait);
                }
            }
            return Err(Counter::rx_drop_tcp_out_of_window);
        }
        if repr.flags & RST != 0 {
            return self.on_rst(out, sid, seq);
        }
        if repr.flags & SYN != 0 {
            if self.state[sid as usize].state == TcpState::SynReceived && seq == self.rx[sid as usize].irs {
                self.rx[sid as usize].ack_now = true;
                return Err(Counter::rx_drop_tcp_duplicate_syn);
            }
            self.challenge_ack(out, sid);
            return Err(Counter::rx_drop_tcp_syn_challenged);
        }
        if repr.flags & ACK == 0 {
            return Err(Counter::rx_drop_tcp_no_ack);
        }
        // TS.Recent update (RFC 7323 4.3): the segment covers the last ACK we sent, so that
        // a delayed ACK echoes the earliest segment it acknowledges.
        if let (true, Some(v)) = (ts_ok, tsval) {
            if seq <= self.rx[sid as usize].last_ack_sent {
                self.rx[sid as usize].ts_recent = v;
            }
        }
        if let (true, Some((_, ecr)), false) = (ts_ok, repr.options.timestamps, payload.is_empty()) {
            let (mut tcb, ctx) = self.tcb(SessionId(sid));
            tcb.sample_rcv_rtt(ctx.cfg, ecr, now);
        }
        if self.state[sid as usize].state == TcpState::SynReceived {
            let tx = &self.tx[sid as usize];
            if !(lt(tx.snd_una, repr.ack) && le(repr.ack, tx.snd_max)) {
                return Err(Counter::rx_drop_tcp_unacceptable_ack);
            }
            self.establish_passive(out, sid);
        }
        self.on_ack(out, sid, repr, payload.len() as u32, now)?;
        if !self.state[sid as usize].in_use {
            return Ok(());
        }
        let mut verdict = Ok(());
        if !payload.is_empty() {
            verdict = self.on_data(out, sid, seq, payload, now);
        }
        if repr.flags & FIN != 0 {
            self.on_fin(sid, seq + payload.len() as u32, now);
        }
        verdict
    }

    /// RFC 9293 sequence acceptability test against the window we advertised.
    fn acceptable(&self, sid: u32, seq: Seq, len: u32) -> bool {
        let rx = &self.rx[sid as usize];
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
    fn on_rst<S: SegmentSink>(&mut self, out: &mut S, sid: u32, seq: Seq) -> Verdict {
        if seq != self.rx[sid as usize].rcv_nxt {
            self.challenge_ack(out, sid);
            return Err(Counter::rx_drop_tcp_rst_challenged);
        }
        out.counters().bump(Counter::tcp_resets_received);
        let s = self.state[sid as usize];
        if s.state == TcpState::SynReceived && s.listener.is_some() {
            self.free_session(sid);
        } else {
            let err = if s.state == TcpState::TimeWait { None } else { Some(TcpError::Reset) };
            self.finish(sid, err);
        }
        Ok(())
    }

    /// Call for a challenge ACK: it goes out with the next output unless one is already
    /// waiting on this connection or the rate limit is spent (then it is counted suppressed;
    /// one that goes out is counted sent by `emit`).
    fn challenge_ack<S: SegmentSink>(&mut self, out: &mut S, sid: u32) {
        let rx = &mut self.rx[sid as usize];
        if !rx.challenge_pending && self.challenge.allow(out.now()) {
            rx.challenge_pending = true;
            rx.ack_now = true;
        } else {
            out.counters().bump(Counter::tcp_challenge_acks_suppressed);
        }
    }

    /// SYN-RECEIVED -> ESTABLISHED: hand the connection to its listener's accept queue.
    fn establish_passive<S: SegmentSink>(&mut self, out: &mut S, sid: u32) {
        let s = &mut self.state[sid as usize];
        s.state = TcpState::Established;
        if let Some(l) = s.listener.and_then(|p| self.listeners.get_mut(&p)) {
            l.half_open = l.half_open.saturating_sub(1);
            l.ready.push_back(sid);
        }
        out.counters().bump(Counter::tcp_established_passive);
    }

    /// ACK processing: window update, new data acknowledged, duplicate ACKs and recovery.
    fn on_ack<S: SegmentSink>(&mut self, out: &mut S, sid: u32, repr: &TcpRepr, seg_len: u32, now: Instant) -> Verdict {
        let tx = &self.tx[sid as usize];
        if gt(repr.ack, tx.snd_max) {
            self.rx[sid as usize].ack_now = true;
            return Err(Counter::rx_drop_tcp_ack_unsent);
        }
        if lt(repr.ack, tx.snd_una - (tx.max_snd_wnd.max(1))) {
            self.challenge_ack(out, sid);
            return Err(Counter::rx_drop_tcp_ack_too_old);
        }
        let window = (repr.window as u32) << tx.snd_shift;
        let window_changed = window != tx.snd_wnd;
        let mut dsack_of_probe = false;
        let sack_ok = self.rx[sid as usize].sack_ok;
        let una_before = self.tx[sid as usize].snd_una;
        let sacked_before = self.tx[sid as usize].sb.sacked;
        let mut newly_sacked = Vec::new();
        if sack_ok {
            let blocks = &repr.options.sack_blocks;
            if let Some((s, e)) = blocks[0] {
                // A first block below the cumulative ACK, or inside the second block, is a
                // D-SACK (RFC 2883 section 4).
                let inside_next = blocks[1].is_some_and(|(s2, e2)| le(s2, s) && le(e, e2));
                if lt(s, e) && (le(e, repr.ack) || inside_next) {
                    out.counters().bump(Counter::tcp_dsacks_received);
                    let tx = &self.tx[sid as usize];
                    dsack_of_probe = tx.tlp_retx && tx.tlp_high == Some(Seq(e));
                    self.tcb(sid).0.on_dsack(out, s, e);
                }
            }
            let tx = &mut self.tx[sid as usize];
            // The common case, no SACK information on either side, costs nothing here.
            if blocks.iter().any(Option::is_some) || !tx.sb.is_empty() {
                self.sack_before.clear();
                self.sack_before.extend_from_slice(tx.sb.ranges());
                tx.sb.update(tx.snd_una, tx.snd_max, &repr.options.sack_blocks);
                newly_sacked = tx.sb.newly_sacked(&self.sack_before);
            }
        }
        if gt(repr.ack, self.tx[sid as usize].snd_una) {
            self.ack_advances(out, sid, repr);
            self.tcb(sid).0.probe_episode_acked(out, repr.ack, dsack_of_probe);
            let now = out.now();
            let (mut tcb, mut ctx) = self.tcb(sid);
            tcb.arm_loss_timer(&mut ctx, now);
        } else if Seq(repr.ack) == self.tx[sid as usize].snd_una
            && seg_len == 0
            && !window_changed
            && window != 0
            && repr.flags & FIN == 0
        {
            // Not while the window is closed: those ACKs answer window probes, and nothing
            // may be retransmitted into a zero window anyway.
            self.duplicate_ack(out, sid);
        }
        if sack_ok && self.state[sid as usize].state.is_synchronized() {
            let ecr = self.rx[sid as usize].ts_ok.then(|| repr.options.timestamps.map(|t| t.1)).flatten();
            let tx = &mut self.tx[sid as usize];
            tx.rack.on_ack(tx.snd_una, &newly_sacked, ecr, now);
            let tx = &self.tx[sid as usize];
            if !tx.sb.is_empty() || tx.recover.is_some() {
                let (mut tcb, mut ctx) = self.tcb(sid);
                tcb.detect_losses(&mut ctx, out, now, false);
            }
            let tx = &self.tx[sid as usize];
            let sacked: u32 = newly_sacked.iter().map(|&(s, e)| dist(s, e)).sum();
            // DeliveredData (RFC 6937): the cumulative advance plus the change in SACKed
            // bytes, so data SACKed earlier and now cumulatively acknowledged counts once.
            let delivered = (dist(una_before, tx.snd_una) + tx.sb.sacked).saturating_sub(sacked_before);
            if tx.recover.is_some() && gt(tx.snd_una, una_before) || sacked > 0 {
                self.tcb(sid).0.prr_on_ack(delivered);
            }
        }
        let tx = &mut self.tx[sid as usize];
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
        self.our_fin_acked(sid, now);
        Ok(())
    }

    /// `SND.UNA < SEG.ACK`: release acknowledged data, sample RTT, grow the window, leave or
    /// continue recovery.
    fn ack_advances<S: SegmentSink>(&mut self, out: &mut S, sid: u32, repr: &TcpRepr) {
        let now = out.now();
        let state = self.state[sid as usize].state;
        let tx = &mut self.tx[sid as usize];
        let mut acked = dist(tx.snd_una, repr.ack);
        if !state.is_synchronized() || tx.snd_una == tx.iss {
            acked = acked.saturating_sub(1); // the SYN
        }
        let queue = &mut self.bufs[sid as usize].tx;
        let data_acked = (acked as usize).min(queue.len());
        queue.consume(data_acked);
        self.tx_storage.park(&mut queue.ring); // all acknowledged: the storage serves other sessions
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
                if let (true, Some((_, ecr))) = (self.rx[sid as usize].ts_ok, repr.options.timestamps) {
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
                if !self.rx[sid as usize].sack_ok {
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
        if self.tx[sid as usize].rto_undo.is_some() {
            let ecr = self.rx[sid as usize].ts_ok.then(|| repr.options.timestamps.map(|t| t.1)).flatten();
            self.tcb(sid).0.check_spurious_rto(out, ecr);
        }
        if data_acked > 0 {
            let (mut tcb, ctx) = self.tcb(SessionId(sid));
            if tcb.autotune_tx(ctx.cfg, ctx.mem) {
                out.counters().bump(Counter::tcp_tx_buffer_grown);
            }
        }
        // The caller restarts the retransmission (or probe) timer: `arm_loss_timer`.
    }

    /// A duplicate ACK: count it; the third (or SACK evidence of loss) starts fast
    /// retransmit and recovery (RFC 5681 3.2, RFC 6675 5).
    fn duplicate_ack<S: SegmentSink>(&mut self, out: &mut S, sid: u32) {
        let sack_ok = self.rx[sid as usize].sack_ok;
        let dup_thresh = self.tx[sid as usize].reordering;
        let tx = &mut self.tx[sid as usize];
        if tx.snd_una == tx.snd_max {
            return;
        }
        tx.dupacks += 1;
        out.counters().bump(Counter::tcp_dup_acks);
        if sack_ok && tx.tlp_high.is_some() && self.tcb(sid).0.probe_sacked(out) {
            return;
        }
        if sack_ok {
            // With SACK, RACK decides what is lost (`detect_losses`, after the scoreboard).
            return;
        }
        let tx = &mut self.tx[sid as usize];
        if tx.recover.is_none() && tx.dupacks >= dup_thresh {
            start_recovery(tx, false, out.now());
            tx.cc.on_fast_retransmit_without_sack();
            out.counters().bump(Counter::tcp_fast_retransmits);
        } else if tx.recover.is_some() {
            tx.cc.inflate_for_duplicate();
        }
    }

    /// State changes once our FIN is acknowledged.
    fn our_fin_acked(&mut self, sid: u32, now: Instant) {
        let tx = &self.tx[sid as usize];
        let Some(f) = tx.fin_seq else { return };
        if !gt(tx.snd_una, f) {
            return;
        }
        let linger = self.cfg.time_wait;
        match self.state[sid as usize].state {
            TcpState::FinWait1 => {
                self.state[sid as usize].state = TcpState::FinWait2;
                if self.state[sid as usize].released {
                    self.timers.arm(sid, TimerKind::Linger, now + linger);
                }
            }
            TcpState::Closing => self.enter_time_wait(sid, now),
            TcpState::LastAck => self.finish(sid, None),
            _ => {}
        }
    }

    /// Payload: in-order data is appended, out-of-order data is stored ahead and tracked.
    fn on_data<S: SegmentSink>(&mut self, out: &mut S, sid: u32, seq: Seq, payload: &[u8], now: Instant) -> Verdict {
        if !self.state[sid as usize].state.can_receive() {
            return Err(Counter::rx_drop_tcp_data_after_fin);
        }
        let rx = &mut self.rx[sid as usize];
        let b = &mut self.bufs[sid as usize];
        let (mut start, mut data) = (seq, payload);
        if start < rx.rcv_nxt {
            let skip = start.bytes_to(rx.rcv_nxt) as usize;
            if rx.sack_ok {
                // RFC 2883: tell the sender which of its bytes came twice.
                rx.dsack = Some((start.0, (start + skip.min(data.len()) as u32).0));
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
            out.counters().bump(Counter::tcp_rx_trimmed);
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
            rx.dsack = Some((start.0, (start + data.len() as u32).0));
            rx.ack_now = true;
            return Ok(());
        }
        if rx.bypass && off == 0 && !had_holes && b.rx.is_empty() {
            // RX bypass, in order: straight from the frame to the application.
            let h = TcpHandle { id: sid, gen: self.state[sid as usize].gen };
            self.bypass.deliver(h, data);
            rx.rcv_nxt += data.len() as u32;
            rx.bytes_received += data.len() as u64;
        } else {
            if !self.rx_storage.unpark(&mut b.rx, &mut self.mem, self.cfg.buffer_min) {
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
                    let h = TcpHandle { id: sid, gen: self.state[sid as usize].gen };
                    let (a, z) = b.rx.peek(0, usize::MAX);
                    self.bypass.deliver(h, a);
                    self.bypass.deliver(h, z);
                    b.rx.consume(a.len() + z.len());
                    if b.asm.is_empty() {
                        self.rx_storage.park(&mut b.rx);
                    }
                }
            }
        }
        if off == 0 && !rx.bypass {
            let (mut tcb, ctx) = self.tcb(SessionId(sid));
            if tcb.autotune_rx(ctx.cfg, ctx.mem, now) {
                out.counters().bump(Counter::tcp_rx_buffer_grown);
            }
        }
        let rx = &mut self.rx[sid as usize];
        if off > 0 || had_holes {
            // Out of order, or a hole just filled: acknowledge at once (RFC 5681 4.2).
            rx.ack_now = true;
            out.counters().bump(Counter::tcp_out_of_order);
        } else {
            rx.segs_unacked += 1;
            if rx.segs_unacked >= 2 || self.cfg.delayed_ack.is_zero() {
                rx.ack_now = true;
            } else {
                let at = now + self.cfg.delayed_ack;
                self.timers.arm_if_idle(sid, TimerKind::DelayedAck, at);
            }
        }
        Ok(())
    }

    /// The peer's FIN at `fin_seq` (after its data): accept it if it is the next byte.
    fn on_fin(&mut self, sid: u32, fin_seq: Seq, now: Instant) {
        let rx = &mut self.rx[sid as usize];
        if rx.fin_received {
            rx.ack_now = true;
            if self.state[sid as usize].state == TcpState::TimeWait {
                self.timers.arm(sid, TimerKind::Linger, now + self.cfg.time_wait);
            }
            return;
        }
        if fin_seq != rx.rcv_nxt {
            return;
        }
        rx.rcv_nxt += 1;
        rx.fin_received = true;
        rx.ack_now = true;
        let tx = &self.tx[sid as usize];
        let fin_acked = tx.fin_seq.is_some_and(|f| gt(tx.snd_una, f));
        let next = match self.state[sid as usize].state {
            TcpState::Established | TcpState::SynReceived => TcpState::CloseWait,
            TcpState::FinWait1 if fin_acked => TcpState::TimeWait,
            TcpState::FinWait1 => TcpState::Closing,
            TcpState::FinWait2 => TcpState::TimeWait,
            other => other,
        };
        if next == TcpState::TimeWait {
            self.enter_time_wait(sid, now);
        } else {
            self.state[sid as usize].state = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::TcpConfig;
    use super::super::sink::recorder::{Recorder, LOCAL, PEER};
    use super::super::unit_util::*;
    use super::super::TcpState;
    use crate::counters::Counter;
    use wire::tcp::flags::{ACK, FIN, PSH};
    use wire::TcpOptions;

    const NONE: TcpOptions =
        TcpOptions { mss: None, window_scale: None, sack_permitted: false, timestamps: None, sack_blocks: [None; 4] };

    #[test]
    fn data_in_order_is_delivered_to_the_receive_buffer() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        let seg = from_peer(PEER_ISS + 1, our, ACK | PSH, 1000, NONE, &[7u8; 300]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Ok(()));
        assert_eq!(e.bufs[sid as usize].rx.len(), 300);
        assert_eq!(e.rx[sid as usize].rcv_nxt.0, PEER_ISS + 301);
    }

    #[test]
    fn a_segment_past_the_offered_window_is_trimmed_to_its_right_edge() {
        let mut e = engine_with(TcpConfig { rx_buffer: 1024, ..TcpConfig::default() });
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        let offered = e.rx[sid as usize].rcv_adv.0.wrapping_sub(PEER_ISS + 1);
        assert_eq!(offered, 1024);
        let seg = from_peer(PEER_ISS + 1, our, ACK, 1000, NONE, &[1u8; 1400]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Ok(()));
        assert_eq!(e.bufs[sid as usize].rx.len(), 1024, "only what the window offered");
        assert_eq!(e.rx[sid as usize].rcv_nxt.0, PEER_ISS + 1 + 1024);
        assert_eq!(out.counters.get(Counter::tcp_rx_trimmed), 1);
    }

    #[test]
    fn a_duplicate_below_rcv_nxt_is_reported_in_a_d_sack_block() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (_, our) = established(&mut e, &mut out, 1000);
        let seg = from_peer(PEER_ISS + 1, our, ACK, 1000, NONE, &[3u8; 500]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Ok(()));
        flush(&mut e, &mut out);
        // Counted as out of the window (RFC 9293 3.10.7.4), and answered with an ACK.
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Err(Counter::rx_drop_tcp_out_of_window));
        let acks = flush(&mut e, &mut out);
        let ack = acks.last().expect("the duplicate is answered at once").0;
        assert_eq!(ack.ack, PEER_ISS + 501);
        assert_eq!(ack.options.sack_blocks[0], Some((PEER_ISS + 1, PEER_ISS + 501)), "RFC 2883 D-SACK first");
        assert_eq!(out.counters.get(Counter::tcp_dsacks_sent), 1);
    }

    #[test]
    fn a_duplicate_above_rcv_nxt_is_reported_in_a_d_sack_block_then_the_sack_block() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (_, our) = established(&mut e, &mut out, 1000);
        let ahead = from_peer(PEER_ISS + 1001, our, ACK, 1000, NONE, &[3u8; 500]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &ahead), Ok(()));
        flush(&mut e, &mut out);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &ahead), Ok(()));
        let ack = flush(&mut e, &mut out).last().expect("answered at once").0;
        assert_eq!(ack.ack, PEER_ISS + 1);
        let range = Some((PEER_ISS + 1001, PEER_ISS + 1501));
        assert_eq!(ack.options.sack_blocks[..2], [range, range], "the D-SACK, then the block it lies in");
    }

    #[test]
    fn a_link_that_fails_every_send_does_not_cut_receive_processing_short() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        out.failing = true;
        // Out of order first (its duplicate ACK is sent at once and fails), then the hole
        // and a FIN.
        let later = from_peer(PEER_ISS + 101, our, ACK, 1000, NONE, &[2u8; 100]);
        let first = from_peer(PEER_ISS + 1, our, ACK, 1000, NONE, &[1u8; 100]);
        let fin = from_peer(PEER_ISS + 201, our, ACK | FIN, 1000, NONE, &[]);
        for seg in [&later, &first, &fin] {
            assert_eq!(e.on_segment(&mut out, PEER, LOCAL, seg), Ok(()));
        }
        flush(&mut e, &mut out);
        assert!(out.failures >= 1, "the sends were tried");
        assert_eq!(e.bufs[sid as usize].rx.len(), 200, "all data delivered in order");
        assert_eq!(e.state[sid as usize].state, TcpState::CloseWait, "the FIN was processed");
    }
}
