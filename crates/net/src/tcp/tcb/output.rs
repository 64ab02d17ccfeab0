//! One connection's output: what it sends now (SYN, SYN-ACK, data within the congestion and
//! receive windows, retransmissions in loss recovery, FIN, window probes, ACKs). It decides
//! each segment and yields it as a [`Transmit`] to the [`Emit`] the engine gives; the engine
//! writes it in place in the link's batch.

use super::super::clock::ts_clock;
use super::super::seq::{dist, gt, le, lt, max, Seq, SeqRange};
use super::super::timer::TimerKind;
use super::super::TcpState;
use super::transmit::{Emit, Transmit};
use super::{Ctx, TcbMut};
use crate::counters::Counter;
use link::Instant;
use wire::tcp::flags::{ACK, FIN, PSH, RST, SYN};
use wire::{TcpOptions, TcpRepr};

/// One segment to build.
struct Seg {
    seq: Seq,
    flags: u8,
    /// Offset of the payload in the send ring (from `snd_una`).
    data_off: usize,
    len: usize,
}

impl TcbMut<'_> {
    /// Send whatever the connection may send now.
    pub(crate) fn output<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) {
        let s = *self.state;
        if !s.in_use {
            return;
        }
        match s.state {
            TcpState::SynSent | TcpState::SynReceived => return self.output_handshake(ctx, out, now),
            TcpState::Closed => return,
            TcpState::TimeWait => {
                if self.rx.ack_now {
                    let seq = self.tx.snd_nxt;
                    if !self.send_control(ctx, out, seq, ACK) {
                        ctx.dirty.mark(self.sid.0); // the link is full: the ACK goes at the next flush
                    }
                }
                return;
            }
            _ => {}
        }
        let mut sent_any = false;
        if self.tx.tlp_due {
            sent_any |= self.send_loss_probe(ctx, out, now);
        }
        let snd_max_before = self.tx.snd_max;
        if self.tx.retx_front {
            sent_any |= self.retransmit_front(ctx, out);
        }
        if self.tx.recover.is_some() && self.rx.sack_ok {
            sent_any |= self.output_sack_recovery(ctx, out, now);
        }
        sent_any |= self.output_new_data(ctx, out, now);
        sent_any |= self.output_probe(ctx, out, now);
        let rx = &mut *self.rx;
        if !sent_any && rx.ack_now {
            let seq = self.tx.snd_nxt;
            if !self.send_control(ctx, out, seq, ACK) {
                ctx.dirty.mark(self.sid.0); // the link is full: the ACK (or window update) waits
            }
        }
        let tx = &*self.tx;
        // In persist mode the persist timer replaces the retransmission timer (the probe byte
        // must not time the connection out while the peer answers, RFC 1122 4.2.2.17).
        if tx.snd_una != tx.snd_max && ctx.timers.deadline(self.sid.0, TimerKind::Persist).is_none() {
            if gt(tx.snd_max, snd_max_before) && !tx.tlp_due && tx.tlp_high.is_none() {
                // New data went out: a loss probe is scheduled anew (RFC 8985 7.2).
                self.arm_loss_timer(ctx, now);
            } else {
                let rto = tx.rto();
                ctx.timers.arm_if_idle(self.sid.0, TimerKind::Retransmit, now + rto);
            }
        }
    }

    /// Send the due tail loss probe (see `tlp`). Returns true if it went out.
    fn send_loss_probe<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> bool {
        let data_end = self.data_end();
        let Some((seq, len, retransmission)) = self.probe_segment(data_end) else {
            self.tx.tlp_due = false;
            return false;
        };
        let flags = if seq + len as u32 == data_end { ACK | PSH } else { ACK };
        let data_off = dist(self.tx.snd_una, seq) as usize;
        if !self.emit(ctx, out, Seg { seq, flags, data_off, len }, now) {
            ctx.dirty.mark(self.sid.0);
            return false;
        }
        if retransmission {
            out.counters().bump(Counter::tcp_retransmits);
        }
        self.after_send(ctx, seq, len, false, now);
        self.probe_sent(out, retransmission);
        true
    }

    fn output_handshake<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) {
        let st = self.state.state;
        let tx = &*self.tx;
        if tx.snd_nxt != tx.iss {
            if self.rx.ack_now && st == TcpState::SynReceived {
                // A duplicate SYN: repeat the SYN-ACK.
                let iss = tx.iss;
                self.emit(ctx, out, Seg { seq: iss, flags: SYN | ACK, data_off: 0, len: 0 }, now);
            }
            return;
        }
        let flags = if st == TcpState::SynSent { SYN } else { SYN | ACK };
        let iss = tx.iss;
        let resend = tx.retries > 0;
        if self.emit(ctx, out, Seg { seq: iss, flags, data_off: 0, len: 0 }, now) {
            let tx = &mut *self.tx;
            if resend {
                tx.retransmits += 1;
            }
            tx.snd_nxt = iss + 1;
            tx.snd_max = max(tx.snd_max, tx.snd_nxt);
            if tx.retries == 0 {
                tx.timed = Some((iss, now));
            }
            let rto = tx.rto();
            ctx.timers.arm_if_idle(self.sid.0, TimerKind::Retransmit, now + rto);
        } else {
            ctx.dirty.mark(self.sid.0);
        }
    }

    /// Sequence number just past the last byte of data queued (ring and transfers).
    fn data_end(&self) -> Seq {
        let tx = &*self.tx;
        tx.snd_una + self.bufs.tx.len() as u32
    }

    /// Sender silly-window avoidance (RFC 9293 3.8.6.2.1, MUST-38): a segment shorter than
    /// the MSS that the window cuts short of the queued data waits until it reaches half the
    /// largest window the peer offered. While data is in flight the ACKs bring the wider
    /// window; with nothing in flight the override timer (the persist timer, one RTO) lets it
    /// go. Returns true to hold.
    fn sws_holds(&mut self, ctx: &mut Ctx, len: usize, avail: usize, now: Instant) -> bool {
        let tx = &mut *self.tx;
        let window_cut = len < tx.mss as usize && len < avail && len < (tx.max_snd_wnd / 2) as usize;
        tx.sws_hold = window_cut && tx.probes == 0;
        if tx.sws_hold && tx.snd_una == tx.snd_max {
            let rto = tx.rtt.rto();
            ctx.timers.arm_if_idle(self.sid.0, TimerKind::Persist, now + rto);
        }
        tx.sws_hold
    }

    fn output_new_data<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> bool {
        let data_end = self.data_end();
        let mut sent_any = false;
        self.tx.sws_hold = false;
        loop {
            let tx = &*self.tx;
            let in_recovery_sack = tx.recover.is_some() && self.rx.sack_ok;
            let wnd = tx.snd_wnd.min(if in_recovery_sack { u32::MAX } else { tx.cc.cwnd });
            let wnd_end = tx.snd_una + wnd;
            let fin_due = tx.fin_queued && tx.fin_seq.is_none();
            if !lt(tx.snd_nxt, data_end) {
                if fin_due && tx.snd_nxt == data_end && (le(tx.snd_nxt, wnd_end) || tx.snd_wnd == 0) {
                    let seq = tx.snd_nxt;
                    if !self.emit(ctx, out, Seg { seq, flags: FIN | ACK, data_off: 0, len: 0 }, now) {
                        ctx.dirty.mark(self.sid.0);
                        return sent_any;
                    }
                    self.after_send(ctx, seq, 0, true, now);
                    sent_any = true;
                }
                return sent_any;
            }
            if in_recovery_sack && self.tx.pipe() + tx.mss as u32 > tx.cc.cwnd {
                return sent_any;
            }
            if !lt(tx.snd_nxt, wnd_end) {
                return sent_any;
            }
            if lt(tx.snd_nxt, tx.snd_max) {
                // Resending after a timeout: skip what the peer SACKed.
                if let Some(end) = tx.sb.sacked_run_end(tx.snd_nxt) {
                    let tx = &mut *self.tx;
                    tx.snd_nxt = if lt(end, tx.snd_max) { end } else { tx.snd_max };
                    continue;
                }
            }
            let avail = dist(tx.snd_nxt, data_end) as usize;
            let room = dist(tx.snd_nxt, wnd_end) as usize;
            let mut len = avail.min(room).min(tx.mss as usize);
            if let Some(next) = tx.sb.next_sacked_start(tx.snd_nxt).filter(|_| lt(tx.snd_nxt, tx.snd_max)) {
                len = len.min(dist(tx.snd_nxt, next) as usize);
            }
            // Nagle and silly-window avoidance hold back new data only: a resend after a
            // timeout may be cut short by a SACKed range and must go anyway.
            let resend = lt(tx.snd_nxt, tx.snd_max);
            if !resend && ctx.cfg.nagle && len < tx.mss as usize && tx.snd_una != tx.snd_max {
                return sent_any;
            }
            let seq = tx.snd_nxt;
            if !resend && self.sws_holds(ctx, len, avail, now) {
                return sent_any;
            }
            let last = seq + len as u32 == data_end;
            let mut flags = ACK;
            if last {
                flags |= PSH;
                if fin_due {
                    flags |= FIN;
                }
            }
            let data_off = dist(self.tx.snd_una, seq) as usize;
            if !self.emit(ctx, out, Seg { seq, flags, data_off, len }, now) {
                ctx.dirty.mark(self.sid.0);
                return sent_any;
            }
            self.after_send(ctx, seq, len, flags & FIN != 0, now);
            sent_any = true;
        }
    }

    /// Bookkeeping after a data or FIN segment at `seq` went out.
    fn after_send(&mut self, ctx: &mut Ctx, seq: Seq, len: usize, fin: bool, now: Instant) {
        let tx = &mut *self.tx;
        let retransmission = lt(seq, tx.snd_max);
        if retransmission {
            tx.retransmits += 1;
            tx.timed = None;
        } else if tx.timed.is_none() && len > 0 {
            tx.timed = Some((seq, now));
        }
        let mut next = seq + len as u32;
        if fin {
            tx.fin_seq = Some(next);
            next += 1;
        }
        if gt(next, tx.snd_nxt) {
            tx.snd_nxt = next;
        }
        tx.snd_max = max(tx.snd_max, tx.snd_nxt);
        let rto = tx.rto();
        ctx.timers.arm_if_idle(self.sid.0, TimerKind::Retransmit, now + rto);
    }

    /// Retransmit the first unacknowledged segment (fast retransmit, NewReno partial ACK).
    fn retransmit_front<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E) -> bool {
        let now = out.now();
        let data_end = self.data_end();
        let tx = &mut *self.tx;
        tx.retx_front = false;
        let seq = tx.snd_una;
        // Only data sent before: a full MSS from `snd_una` may reach into data never sent
        // and beyond the peer's window when the original segments were small.
        let len = (dist(seq, data_end) as usize).min(tx.mss as usize).min(dist(seq, tx.snd_max) as usize);
        let fin = tx.fin_seq == Some(seq + len as u32);
        if len == 0 && !fin {
            return false;
        }
        let mut flags = ACK;
        if fin {
            flags |= FIN;
        }
        if !self.emit(ctx, out, Seg { seq, flags, data_off: 0, len }, now) {
            self.tx.retx_front = true;
            ctx.dirty.mark(self.sid.0);
            return false;
        }
        let tx = &mut *self.tx;
        tx.retransmits += 1;
        tx.timed = None;
        tx.retx_high = max(tx.retx_high, seq + len as u32);
        out.counters().bump(Counter::tcp_retransmits);
        true
    }

    /// Loss recovery with SACK: retransmit what RACK marked lost while PRR's window has room.
    fn output_sack_recovery<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> bool {
        let mut sent_any = false;
        loop {
            let tx = &*self.tx;
            if self.tx.pipe() + tx.mss as u32 > tx.cc.cwnd {
                return sent_any;
            }
            // What RACK marked lost, in sequence order.
            let Some(SeqRange { start: s, end: e }) = tx.rack.next_lost(&tx.sb, tx.snd_una) else {
                return sent_any;
            };
            let data_off = dist(tx.snd_una, s) as usize;
            let len = dist(s, e) as usize;
            if !self.emit(ctx, out, Seg { seq: s, flags: ACK, data_off, len }, now) {
                ctx.dirty.mark(self.sid.0);
                return sent_any;
            }
            let tx = &mut *self.tx;
            tx.retx_high = e;
            tx.retransmits += 1;
            tx.timed = None;
            out.counters().bump(Counter::tcp_retransmits);
            sent_any = true;
            if s == tx.snd_una {
                // The head went again: its ACK is one RTT away from now, so the timer
                // restarts (as Linux does), or a recovery that took a while to find the loss
                // would time out just before the repair arrives.
                let rto = tx.rto();
                ctx.timers.arm(self.sid.0, TimerKind::Retransmit, now + rto);
            }
        }
    }

    /// Zero-window probing: when the peer's window is closed and data waits, arm the persist
    /// timer; when it fires, send one byte beyond the window.
    fn output_probe<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> bool {
        let data_end = self.data_end();
        let tx = &*self.tx;
        let waiting = lt(tx.snd_nxt, data_end) || (tx.fin_queued && tx.fin_seq.is_none());
        if tx.snd_wnd != 0 || !waiting {
            let tx = &mut *self.tx;
            tx.probes = 0;
            tx.zero_window_since = None;
            if !tx.sws_hold {
                ctx.timers.cancel(self.sid.0, TimerKind::Persist);
            }
            return false;
        }
        // Data sent before the window closed is left to the retransmission timer; when it
        // expires, `snd_nxt` is pulled back to `snd_una` and probing starts.
        if tx.snd_una != tx.snd_nxt && tx.probes == 0 {
            return false;
        }
        // Exponential backoff up to the maximum RTO (as Linux's `tcp_probe0_when`).
        let interval = tx.rtt.rto().saturating_mul(1u32 << tx.probes.min(20)).min(ctx.cfg.max_rto);
        if tx.probes == 0 && tx.zero_window_since.is_none() {
            self.tx.zero_window_since = Some(now);
        }
        let tx = &*self.tx;
        // The timer fires at the zero-window limit at the latest, which ends the connection.
        let interval = match (tx.zero_window_since, ctx.cfg.zero_window_limit) {
            (Some(since), Some(limit)) => interval.min((since + limit).saturating_since(now)),
            _ => interval,
        };
        if tx.probes == 0 || ctx.timers.deadline(self.sid.0, TimerKind::Persist).is_some() {
            ctx.timers.arm_if_idle(self.sid.0, TimerKind::Persist, now + interval);
            ctx.timers.cancel(self.sid.0, TimerKind::Retransmit);
            return false;
        }
        // The persist timer fired (probes > 0 and no deadline armed): probe with one byte.
        let seq = tx.snd_nxt;
        let (len, flags) = if lt(seq, data_end) { (1, ACK) } else { (0, FIN | ACK) };
        let data_off = dist(tx.snd_una, seq) as usize;
        if self.emit(ctx, out, Seg { seq, flags, data_off, len }, now) {
            out.counters().bump(Counter::tcp_window_probes);
            if len == 0 {
                self.after_send(ctx, seq, len, true, now);
            } else {
                // The probe byte does not advance `snd_nxt` (as in BSD): every probe carries
                // the same first unacknowledged byte, and sending resumes with it once the
                // window opens.
                let tx = &mut *self.tx;
                tx.snd_max = max(tx.snd_max, seq + 1);
            }
            ctx.timers.cancel(self.sid.0, TimerKind::Retransmit);
        }
        ctx.timers.arm(self.sid.0, TimerKind::Persist, now + interval);
        true
    }

    /// Send a segment without data (ACK, keep-alive) with sequence number `seq`.
    pub(crate) fn send_control<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, seq: Seq, flags: u8) -> bool {
        let now = out.now();
        self.emit(ctx, out, Seg { seq, flags, data_off: 0, len: 0 }, now)
    }

    /// Options for a segment of this connection.
    fn options_for(&self, ctx: &Ctx, flags: u8, now: Instant) -> TcpOptions {
        let rx = &*self.rx;
        let st = self.state.state;
        let mut o = TcpOptions::default();
        let tsval = ts_clock(now);
        if flags & SYN != 0 {
            o.mss = Some(ctx.local_mss);
            let passive = st == TcpState::SynReceived;
            if let Some(ws) = ctx.cfg.window_scale {
                if !passive || rx.ws_ok {
                    o.window_scale = Some(ws.min(14));
                }
            }
            if ctx.cfg.sack && (!passive || rx.sack_ok) {
                o.sack_permitted = true;
            }
            if ctx.cfg.timestamps && (!passive || rx.ts_ok) {
                o.timestamps = Some((tsval, if passive { rx.ts_recent } else { 0 }));
            }
            return o;
        }
        if rx.ts_ok {
            o.timestamps = Some((tsval, rx.ts_recent));
        }
        if rx.sack_ok && flags & ACK != 0 {
            let b = &self.bufs.asm;
            let max_blocks = if rx.ts_ok { 3 } else { 4 };
            let dsack = rx.dsack.is_some() as usize;
            if !b.is_empty() {
                o.sack_blocks = b.sack_blocks(rx.rcv_nxt, max_blocks - dsack).map(|r| r.map(SeqRange::block));
            }
            if let Some(d) = rx.dsack {
                // The D-SACK block goes first (RFC 2883 section 4).
                o.sack_blocks.copy_within(0..3, 1);
                o.sack_blocks[0] = Some(d.block());
            }
        }
        o
    }

    /// The window field to advertise now (never moving the right edge left), updating `rcv_adv`.
    fn advertise(&mut self, ctx: &mut Ctx, syn: bool) -> u16 {
        let ring = &self.bufs.rx;
        // A session in TIME-WAIT may have parked its buffers: it goes on showing the window of
        // an empty buffer (it accepts no data any more either way).
        let parked = ring.capacity() == 0 && self.state.state == TcpState::TimeWait;
        let free = if parked { ctx.cfg.rx_buffer as u32 } else { ring.free() as u32 };
        let rx = &mut *self.rx;
        if syn {
            let w = free.min(65535);
            rx.rcv_adv = rx.rcv_nxt + w;
            return w as u16;
        }
        let shift = rx.rcv_shift as u32;
        let promised = rx.rcv_nxt.bytes_to(rx.rcv_adv);
        let wnd = free.max(promised);
        // Round down: rounding up promised up to 2^shift - 1 bytes the buffer does not have,
        // and re-rounding that promise on every ACK made the right edge creep further past
        // the buffer. Rounding down may retract the edge by less than one scale unit, which
        // RFC 7323 2.4 allows for; the buffer still holds everything promised before.
        let field = (wnd >> shift).min(65535);
        // Segments are accepted up to the highest right edge ever advertised (RFC 7323 2.4):
        // rounding down may retract the edge by less than one scale unit, and a peer that
        // already sent up to the old edge must not be stranded out of the window.
        let edge = rx.rcv_nxt + (field << shift);
        if edge > rx.rcv_adv {
            rx.rcv_adv = edge;
        }
        field as u16
    }

    /// Decide one segment's header (options, window, acknowledgment) and yield it; after it
    /// went, what an ACK settles. Returns false if the link is full.
    fn emit<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, seg: Seg, now: Instant) -> bool {
        let syn = seg.flags & SYN != 0;
        let mut options = self.options_for(ctx, seg.flags, now);
        if 20 + options.emitted_len() + 20 + seg.len > out.ip_mtu() {
            // SACK blocks do not fit beside a full-sized data segment: leave them out.
            options.sack_blocks = [None; 4];
        }
        let window = self.advertise(ctx, syn);
        let rx = &*self.rx;
        let ack = if seg.flags & ACK != 0 { rx.rcv_nxt.0 } else { 0 };
        let tuple = &self.state.tuple;
        let repr = TcpRepr {
            src_port: tuple.local_port,
            dst_port: tuple.remote_port,
            seq: seg.seq.0,
            ack,
            flags: seg.flags,
            window,
            urgent: 0,
            options,
        };
        let t = Transmit { tuple, repr, queue: &self.bufs.tx, data_off: seg.data_off, len: seg.len };
        let sent = out.emit(&t);
        let first_block = t.repr.options.sack_blocks[0];
        if sent {
            out.counters().bump(Counter::tcp_tx_segments);
            if seg.len > 0 {
                self.on_data_sent(seg.seq, seg.len, now);
            }
            if seg.flags & ACK != 0 {
                let rx = &mut *self.rx;
                if rx.dsack.is_some() && first_block == rx.dsack.map(SeqRange::block) {
                    rx.dsack = None;
                    rx.dsacks_sent += 1;
                    out.counters().bump(Counter::tcp_dsacks_sent);
                }
                if rx.challenge_pending {
                    rx.challenge_pending = false;
                    out.counters().bump(Counter::tcp_challenge_acks);
                }
                rx.last_ack_sent = Seq(ack);
                rx.ack_now = false;
                rx.segs_unacked = 0;
                ctx.timers.cancel(self.sid.0, TimerKind::DelayedAck);
            }
        }
        sent
    }

    /// Send a reset on an existing connection (abort).
    pub(crate) fn send_abort_reset<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E) {
        let st = *self.state;
        if !st.state.is_synchronized() && st.state != TcpState::SynReceived {
            return;
        }
        let seq = self.tx.snd_nxt;
        if self.send_control(ctx, out, seq, RST | ACK) {
            out.counters().bump(Counter::tcp_resets_sent);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The view's output alone (see `unit`): rows in, the segments it yields out, no engine,
    //! no sink, no link.
    use super::super::super::seq::Seq;
    use super::super::super::timer::TimerKind;
    use super::super::super::{TcpConfig, TcpError, TcpState};
    use super::super::unit::{seg, World, ISS, MSS, PEER_ISS};
    use crate::counters::Counter;
    use std::time::Duration;
    use wire::tcp::flags::{ACK, FIN, PSH, RST, SYN};
    use wire::TcpRepr;

    const M: usize = MSS as usize;

    /// `n` bytes that tell their offsets apart.
    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    /// Sequence number of our byte at offset `off` from the first data byte.
    fn at(off: usize) -> u32 {
        ISS + 1 + off as u32
    }

    /// (seq, flags, payload length) of each segment.
    fn shape(segs: &[(TcpRepr, Vec<u8>)]) -> Vec<(u32, u8, usize)> {
        segs.iter().map(|(h, p)| (h.seq, h.flags, p.len())).collect()
    }

    #[test]
    fn a_syn_carries_our_options_and_starts_the_retransmission_timer() {
        let mut w = World::new(TcpConfig::default());
        (w.state.state, w.state.in_use) = (TcpState::SynSent, true);
        let segs = w.output();
        assert_eq!(shape(&segs), [(ISS, SYN, 0)]);
        let o = segs[0].0.options;
        assert_eq!((o.mss, o.window_scale, o.sack_permitted), (Some(MSS), Some(9), true));
        assert_eq!((w.tx.snd_nxt, w.tx.snd_max), (Seq(ISS + 1), Seq(ISS + 1)));
        assert!(w.shared.timers.deadline(0, TimerKind::Retransmit).is_some());
        assert!(w.output().is_empty(), "one SYN until the timer fires");
    }

    #[test]
    fn new_data_goes_in_mss_segments_up_to_the_initial_window() {
        let mut w = World::established();
        let bytes = data(20 * M);
        w.queue(&bytes);
        let segs = w.output();
        assert_eq!(segs.len(), 10, "IW = 10 segments (RFC 6928)");
        for (i, (h, p)) in segs.iter().enumerate() {
            assert_eq!((h.seq, h.ack, h.flags, p.len()), (at(i * M), PEER_ISS + 1, ACK, M));
            assert!(p[..] == bytes[i * M..(i + 1) * M], "segment {i}'s payload");
        }
        assert_eq!((w.tx.snd_nxt, w.tx.snd_max), (Seq(at(10 * M)), Seq(at(10 * M))));
        assert!(w.shared.timers.deadline(0, TimerKind::Retransmit).is_some(), "the retransmission timer runs");
        assert_eq!(w.count(Counter::tcp_tx_segments), 10);
        assert!(w.output().is_empty(), "the congestion window is full");
    }

    #[test]
    fn nagle_holds_a_short_tail_while_data_is_in_flight() {
        let mut w = World::established_with(TcpConfig { nagle: true, ..TcpConfig::default() });
        w.queue(&data(M + 100));
        assert_eq!(shape(&w.output()), [(at(0), ACK, M)], "the 100-byte tail waits for the ACK");
        let mut w = World::established();
        w.queue(&data(M + 100));
        assert_eq!(shape(&w.output()), [(at(0), ACK, M), (at(M), ACK | PSH, 100)], "without Nagle it goes");
    }

    #[test]
    fn a_window_cut_short_segment_waits_on_the_silly_window_override_timer() {
        let mut w = World::established();
        w.tx.snd_wnd = 1000;
        w.queue(&data(M));
        assert!(w.output().is_empty(), "1,000 bytes: under the MSS, cut by the window, under half the largest");
        assert!(w.tx.sws_hold);
        w.until(TimerKind::Persist);
        let (end, segs) = w.fire(TimerKind::Persist);
        assert_eq!((end, segs.len()), (None, 0), "the timer only marks the connection");
        assert_eq!(shape(&w.output()), [(at(0), ACK, 1000)], "the override lets the short segment go");
    }

    #[test]
    fn a_closed_window_is_probed_with_one_byte_when_the_persist_timer_fires() {
        let mut w = World::established();
        w.tx.snd_wnd = 0;
        w.queue(&data(100));
        assert!(w.output().is_empty());
        w.until(TimerKind::Persist);
        let (end, segs) = w.fire(TimerKind::Persist);
        assert_eq!((end, segs.len()), (None, 0));
        let segs = w.output();
        assert_eq!(shape(&segs), [(at(0), ACK, 1)]);
        assert_eq!(segs[0].1, [0], "the first unacknowledged byte");
        assert_eq!(w.tx.snd_nxt, Seq(at(0)), "the probe byte does not advance SND.NXT");
        assert_eq!(w.count(Counter::tcp_window_probes), 1);
        assert!(w.shared.timers.deadline(0, TimerKind::Persist).is_some(), "the next probe");
        assert!(w.shared.timers.deadline(0, TimerKind::Retransmit).is_none(), "persist replaces the RTO");
    }

    #[test]
    fn after_a_retransmission_timeout_the_front_goes_again_in_a_window_of_one_segment() {
        let mut w = World::established();
        let bytes = data(3 * M);
        w.queue(&bytes);
        assert_eq!(w.output().len(), 3);
        w.until(TimerKind::Retransmit);
        let (end, segs) = w.fire(TimerKind::Retransmit);
        assert_eq!((end, segs.len()), (None, 0));
        assert_eq!(w.count(Counter::tcp_rto_fired), 1);
        let segs = w.output();
        assert_eq!(shape(&segs), [(at(0), ACK, M)], "cwnd is one segment after a timeout (RFC 5681 3.1)");
        assert!(segs[0].1[..] == bytes[..M]);
        assert_eq!((w.tx.retransmits, w.tx.snd_nxt), (1, Seq(at(M))));
    }

    #[test]
    fn a_fast_retransmit_resends_the_front_alone() {
        let mut w = World::established();
        w.queue(&data(3 * M));
        assert_eq!(w.output().len(), 3);
        w.tx.retx_front = true;
        assert_eq!(shape(&w.output()), [(at(0), ACK, M)]);
        assert_eq!((w.tx.retx_front, w.tx.retransmits, w.count(Counter::tcp_retransmits)), (false, 1, 1));
    }

    #[test]
    fn a_fin_rides_on_the_last_data_segment_and_takes_a_sequence_number() {
        let mut w = World::established();
        w.queue(&data(100));
        w.tx.fin_queued = true;
        assert_eq!(shape(&w.output()), [(at(0), ACK | PSH | FIN, 100)]);
        assert_eq!((w.tx.fin_seq, w.tx.snd_nxt), (Some(Seq(at(100))), Seq(at(101))));
        assert!(w.output().is_empty(), "the FIN goes once");
    }

    #[test]
    fn a_loss_probe_with_no_new_data_resends_the_last_segment() {
        let mut w = World::established();
        w.rx.sack_ok = true;
        w.tx.rtt.sample(Duration::from_millis(1));
        w.queue(&data(2 * M));
        assert_eq!(w.output().len(), 2);
        assert!(w.tx.tlp_armed, "an RTT and SACK: the timer runs as a probe timeout");
        w.until(TimerKind::Retransmit);
        let (end, segs) = w.fire(TimerKind::Retransmit);
        assert_eq!((end, segs.len()), (None, 0));
        assert_eq!(shape(&w.output()), [(at(M), ACK | PSH, M)]);
        assert_eq!((w.tx.tlp_probes, w.tx.tlp_high), (1, Some(Seq(at(2 * M)))));
        assert_eq!((w.count(Counter::tcp_tlp_probes), w.count(Counter::tcp_retransmits)), (1, 1));
    }

    #[test]
    fn sack_recovery_resends_the_holes_in_order_and_nothing_the_peer_holds() {
        let mut w = World::established();
        w.rx.sack_ok = true;
        w.tx.snd_wnd = 60_000;
        let bytes = data(10 * M);
        w.queue(&bytes[..3 * M]);
        assert_eq!(w.output().len(), 3);
        w.advance(Duration::from_millis(1));
        w.queue(&bytes[3 * M..]);
        assert_eq!(w.output().len(), 7);
        w.advance(Duration::from_millis(10));
        // The peer holds the last seven segments: the first three are holes.
        let mut ack = TcpRepr { window: 60_000, ..seg(PEER_ISS + 1, at(0), ACK) };
        ack.options.sack_blocks[0] = Some((at(3 * M), at(10 * M)));
        let (v, _) = w.input(&ack, &[]);
        assert_eq!(v, Ok(()));
        assert!(w.tx.recover.is_some(), "RACK found the holes lost");
        let segs = w.output();
        assert_eq!(shape(&segs), [(at(0), ACK, M), (at(M), ACK, M), (at(2 * M), ACK, M)]);
        for (i, (_, p)) in segs.iter().enumerate() {
            assert!(p[..] == bytes[i * M..(i + 1) * M], "hole {i}'s payload");
        }
        assert_eq!(w.count(Counter::tcp_retransmits), 3);
        assert!(w.output().is_empty(), "every hole went once");
    }

    #[test]
    fn a_keep_alive_probe_carries_snd_nxt_minus_one_and_nine_unanswered_end_the_connection() {
        let idle = Duration::from_secs(10);
        let mut w = World::established_with(TcpConfig { keepalive: Some(idle), ..TcpConfig::default() });
        for n in 1..=9 {
            let (end, segs) = w.fire(TimerKind::Keepalive);
            assert_eq!(end, None);
            assert_eq!(shape(&segs), [(ISS, ACK, 0)], "probe {n}: SEG.SEQ = SND.NXT - 1 (RFC 9293 3.8.4)");
            assert_eq!(segs[0].0.ack, PEER_ISS + 1);
            assert_eq!(w.shared.timers.deadline(0, TimerKind::Keepalive), Some(w.io.now + idle / 10));
        }
        let (end, segs) = w.fire(TimerKind::Keepalive);
        assert_eq!((end, segs.len()), (Some(Some(TcpError::TimedOut)), 0));
    }

    #[test]
    fn an_abort_sends_one_reset_at_snd_nxt_and_a_full_link_leaves_the_ack_for_the_next_flush() {
        let mut w = World::established();
        let (mut tcb, mut ctx, io) = w.view();
        tcb.send_abort_reset(&mut ctx, io);
        let segs = std::mem::take(&mut w.io.sent);
        assert_eq!(shape(&segs), [(at(0), RST | ACK, 0)]);
        assert_eq!(w.count(Counter::tcp_resets_sent), 1);
        w.rx.ack_now = true;
        w.io.room = 0;
        assert!(w.output().is_empty());
        assert_eq!((w.rx.ack_now, w.shared.dirty.pop()), (true, Some(0)), "the ACK waits, the session stays dirty");
        w.io.room = 1;
        assert_eq!(shape(&w.output()), [(at(0), ACK, 0)]);
        assert!(!w.rx.ack_now);
    }
}
