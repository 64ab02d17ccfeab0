//! The transmit engine: decides what each session sends (SYN, SYN-ACK, data within the
//! congestion and receive windows, retransmissions in loss recovery, FIN, window probes,
//! ACKs) and builds the segments in place in the link's batch.

use super::clock::ts_clock;
use super::engine::TcpEngine;
use super::lookup::FourTuple;
use super::seq::{dist, gt, le, lt, max, Seq};
use super::sink::SegmentSink;
use super::timer::TimerKind;
use super::TcpState;
use crate::counters::Counter;
use link::Instant;
use std::net::Ipv4Addr;
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

impl TcpEngine {
    /// Run the output of every session marked as having something to send when the flush
    /// starts (sessions marked again meanwhile wait for the next flush). When the link is
    /// full the rest stay queued, in order, for the next poll.
    pub(crate) fn flush_dirty<S: SegmentSink>(&mut self, out: &mut S, now: Instant) {
        for _ in 0..self.dirty.len() {
            if !out.has_room() {
                break;
            }
            let Some(sid) = self.pop_dirty() else { break };
            self.output(out, sid, now);
        }
    }

    /// Send whatever session `sid` may send now.
    pub(crate) fn output<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) {
        let s = self.state[sid as usize];
        if !s.in_use {
            return;
        }
        match s.state {
            TcpState::SynSent | TcpState::SynReceived => return self.output_handshake(out, sid, now),
            TcpState::Closed => return,
            TcpState::TimeWait => {
                if self.rx[sid as usize].ack_now {
                    let seq = self.tx[sid as usize].snd_nxt;
                    if !self.send_control(out, sid, seq, ACK) {
                        self.mark_dirty(sid); // the link is full: the ACK goes at the next flush
                    }
                }
                return;
            }
            _ => {}
        }
        let mut sent_any = false;
        if self.tx[sid as usize].tlp_due {
            sent_any |= self.send_loss_probe(out, sid, now);
        }
        let snd_max_before = self.tx[sid as usize].snd_max;
        if self.tx[sid as usize].retx_front {
            sent_any |= self.retransmit_front(out, sid);
        }
        if self.tx[sid as usize].recover.is_some() && self.rx[sid as usize].sack_ok {
            sent_any |= self.output_sack_recovery(out, sid, now);
        }
        sent_any |= self.output_new_data(out, sid, now);
        sent_any |= self.output_probe(out, sid, now);
        let rx = &mut self.rx[sid as usize];
        if !sent_any && rx.ack_now {
            let seq = self.tx[sid as usize].snd_nxt;
            if !self.send_control(out, sid, seq, ACK) {
                self.mark_dirty(sid); // the link is full: the ACK (or window update) waits
            }
        }
        let tx = &self.tx[sid as usize];
        // In persist mode the persist timer replaces the retransmission timer (the probe byte
        // must not time the connection out while the peer answers, RFC 1122 4.2.2.17).
        if tx.snd_una != tx.snd_max && self.timers.deadline(sid, TimerKind::Persist).is_none() {
            if gt(tx.snd_max, snd_max_before) && !tx.tlp_due && tx.tlp_high.is_none() {
                // New data went out: a loss probe is scheduled anew (RFC 8985 7.2).
                self.arm_loss_timer(sid, now);
            } else {
                let rto = tx.rto();
                self.timers.arm_if_idle(sid, TimerKind::Retransmit, now + rto);
            }
        }
    }

    /// Send the due tail loss probe (see `tlp`). Returns true if it went out.
    fn send_loss_probe<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) -> bool {
        let data_end = self.data_end(sid);
        let Some((seq, len, retransmission)) = self.probe_segment(sid, data_end) else {
            self.tx[sid as usize].tlp_due = false;
            return false;
        };
        let flags = if seq + len as u32 == data_end { ACK | PSH } else { ACK };
        let data_off = dist(self.tx[sid as usize].snd_una, seq) as usize;
        if !self.emit(out, sid, Seg { seq, flags, data_off, len }, now) {
            self.mark_dirty(sid);
            return false;
        }
        if retransmission {
            out.counters().bump(Counter::tcp_retransmits);
        }
        self.after_send(sid, seq, len, false, now);
        self.probe_sent(out, sid, retransmission);
        true
    }

    fn output_handshake<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) {
        let st = self.state[sid as usize].state;
        let tx = &self.tx[sid as usize];
        if tx.snd_nxt != tx.iss {
            if self.rx[sid as usize].ack_now && st == TcpState::SynReceived {
                // A duplicate SYN: repeat the SYN-ACK.
                let iss = tx.iss;
                self.emit(out, sid, Seg { seq: iss, flags: SYN | ACK, data_off: 0, len: 0 }, now);
            }
            return;
        }
        let flags = if st == TcpState::SynSent { SYN } else { SYN | ACK };
        let iss = tx.iss;
        let resend = tx.retries > 0;
        if self.emit(out, sid, Seg { seq: iss, flags, data_off: 0, len: 0 }, now) {
            let tx = &mut self.tx[sid as usize];
            if resend {
                tx.retransmits += 1;
            }
            tx.snd_nxt = iss + 1;
            tx.snd_max = max(tx.snd_max, tx.snd_nxt);
            if tx.retries == 0 {
                tx.timed = Some((iss, now));
            }
            let rto = tx.rto();
            self.timers.arm_if_idle(sid, TimerKind::Retransmit, now + rto);
        } else {
            self.mark_dirty(sid);
        }
    }

    /// Sequence number just past the last byte of data queued (ring and transfers).
    fn data_end(&self, sid: u32) -> Seq {
        let tx = &self.tx[sid as usize];
        tx.snd_una + self.bufs[sid as usize].tx.len() as u32
    }

    /// Sender silly-window avoidance (RFC 9293 3.8.6.2.1, MUST-38): a segment shorter than
    /// the MSS that the window cuts short of the queued data waits until it reaches half the
    /// largest window the peer offered. While data is in flight the ACKs bring the wider
    /// window; with nothing in flight the override timer (the persist timer, one RTO) lets it
    /// go. Returns true to hold.
    fn sws_holds(&mut self, sid: u32, len: usize, avail: usize, now: Instant) -> bool {
        let tx = &mut self.tx[sid as usize];
        let window_cut = len < tx.mss as usize && len < avail && len < (tx.max_snd_wnd / 2) as usize;
        tx.sws_hold = window_cut && tx.probes == 0;
        if tx.sws_hold && tx.snd_una == tx.snd_max {
            let rto = tx.rtt.rto();
            self.timers.arm_if_idle(sid, TimerKind::Persist, now + rto);
        }
        tx.sws_hold
    }

    fn output_new_data<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) -> bool {
        let data_end = self.data_end(sid);
        let mut sent_any = false;
        self.tx[sid as usize].sws_hold = false;
        loop {
            let tx = &self.tx[sid as usize];
            let in_recovery_sack = tx.recover.is_some() && self.rx[sid as usize].sack_ok;
            let wnd = tx.snd_wnd.min(if in_recovery_sack { u32::MAX } else { tx.cc.cwnd });
            let wnd_end = tx.snd_una + wnd;
            let fin_due = tx.fin_queued && tx.fin_seq.is_none();
            if !lt(tx.snd_nxt, data_end) {
                if fin_due && tx.snd_nxt == data_end && (le(tx.snd_nxt, wnd_end) || tx.snd_wnd == 0) {
                    let seq = tx.snd_nxt;
                    if !self.emit(out, sid, Seg { seq, flags: FIN | ACK, data_off: 0, len: 0 }, now) {
                        self.mark_dirty(sid);
                        return sent_any;
                    }
                    self.after_send(sid, seq, 0, true, now);
                    sent_any = true;
                }
                return sent_any;
            }
            if in_recovery_sack && self.tx[sid as usize].pipe() + tx.mss as u32 > tx.cc.cwnd {
                return sent_any;
            }
            if !lt(tx.snd_nxt, wnd_end) {
                return sent_any;
            }
            if lt(tx.snd_nxt, tx.snd_max) {
                // Resending after a timeout: skip what the peer SACKed.
                if let Some(end) = tx.sb.sacked_run_end(tx.snd_nxt) {
                    let tx = &mut self.tx[sid as usize];
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
            if !resend && self.cfg.nagle && len < tx.mss as usize && tx.snd_una != tx.snd_max {
                return sent_any;
            }
            let seq = tx.snd_nxt;
            if !resend && self.sws_holds(sid, len, avail, now) {
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
            let data_off = dist(self.tx[sid as usize].snd_una, seq) as usize;
            if !self.emit(out, sid, Seg { seq, flags, data_off, len }, now) {
                self.mark_dirty(sid);
                return sent_any;
            }
            self.after_send(sid, seq, len, flags & FIN != 0, now);
            sent_any = true;
        }
    }

    /// Bookkeeping after a data or FIN segment at `seq` went out.
    fn after_send(&mut self, sid: u32, seq: Seq, len: usize, fin: bool, now: Instant) {
        let tx = &mut self.tx[sid as usize];
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
        self.timers.arm_if_idle(sid, TimerKind::Retransmit, now + rto);
    }

    /// Retransmit the first unacknowledged segment (fast retransmit, NewReno partial ACK).
    fn retransmit_front<S: SegmentSink>(&mut self, out: &mut S, sid: u32) -> bool {
        let now = out.now();
        let data_end = self.data_end(sid);
        let tx = &mut self.tx[sid as usize];
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
        if !self.emit(out, sid, Seg { seq, flags, data_off: 0, len }, now) {
            self.tx[sid as usize].retx_front = true;
            self.mark_dirty(sid);
            return false;
        }
        let tx = &mut self.tx[sid as usize];
        tx.retransmits += 1;
        tx.timed = None;
        tx.retx_high = max(tx.retx_high, seq + len as u32);
        out.counters().bump(Counter::tcp_retransmits);
        true
    }

    /// Loss recovery with SACK: retransmit what RACK marked lost while PRR's window has room.
    fn output_sack_recovery<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) -> bool {
        let mut sent_any = false;
        loop {
            let tx = &self.tx[sid as usize];
            if self.tx[sid as usize].pipe() + tx.mss as u32 > tx.cc.cwnd {
                return sent_any;
            }
            // What RACK marked lost, in sequence order.
            let Some((s, e)) = tx.rack.next_lost(&tx.sb, tx.snd_una) else {
                return sent_any;
            };
            let data_off = dist(tx.snd_una, s) as usize;
            let len = dist(s, e) as usize;
            if !self.emit(out, sid, Seg { seq: s, flags: ACK, data_off, len }, now) {
                self.mark_dirty(sid);
                return sent_any;
            }
            let tx = &mut self.tx[sid as usize];
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
                self.timers.arm(sid, TimerKind::Retransmit, now + rto);
            }
        }
    }

    /// Zero-window probing: when the peer's window is closed and data waits, arm the persist
    /// timer; when it fires, send one byte beyond the window.
    fn output_probe<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) -> bool {
        let data_end = self.data_end(sid);
        let tx = &self.tx[sid as usize];
        let waiting = lt(tx.snd_nxt, data_end) || (tx.fin_queued && tx.fin_seq.is_none());
        if tx.snd_wnd != 0 || !waiting {
            let tx = &mut self.tx[sid as usize];
            tx.probes = 0;
            tx.zero_window_since = None;
            if !tx.sws_hold {
                self.timers.cancel(sid, TimerKind::Persist);
            }
            return false;
        }
        // Data sent before the window closed is left to the retransmission timer; when it
        // expires, `snd_nxt` is pulled back to `snd_una` and probing starts.
        if tx.snd_una != tx.snd_nxt && tx.probes == 0 {
            return false;
        }
        // Exponential backoff up to the maximum RTO (as Linux's `tcp_probe0_when`).
        let interval = tx.rtt.rto().saturating_mul(1u32 << tx.probes.min(20)).min(self.cfg.max_rto);
        if tx.probes == 0 && tx.zero_window_since.is_none() {
            self.tx[sid as usize].zero_window_since = Some(now);
        }
        let tx = &self.tx[sid as usize];
        // The timer fires at the zero-window limit at the latest, which ends the connection.
        let interval = match (tx.zero_window_since, self.cfg.zero_window_limit) {
            (Some(since), Some(limit)) => interval.min((since + limit).saturating_since(now)),
            _ => interval,
        };
        if tx.probes == 0 || self.timers.deadline(sid, TimerKind::Persist).is_some() {
            self.timers.arm_if_idle(sid, TimerKind::Persist, now + interval);
            self.timers.cancel(sid, TimerKind::Retransmit);
            return false;
        }
        // The persist timer fired (probes > 0 and no deadline armed): probe with one byte.
        let seq = tx.snd_nxt;
        let (len, flags) = if lt(seq, data_end) { (1, ACK) } else { (0, FIN | ACK) };
        let data_off = dist(tx.snd_una, seq) as usize;
        if self.emit(out, sid, Seg { seq, flags, data_off, len }, now) {
            out.counters().bump(Counter::tcp_window_probes);
            if len == 0 {
                self.after_send(sid, seq, len, true, now);
            } else {
                // The probe byte does not advance `snd_nxt` (as in BSD): every probe carries
                // the same first unacknowledged byte, and sending resumes with it once the
                // window opens.
                let tx = &mut self.tx[sid as usize];
                tx.snd_max = max(tx.snd_max, seq + 1);
            }
            self.timers.cancel(sid, TimerKind::Retransmit);
        }
        self.timers.arm(sid, TimerKind::Persist, now + interval);
        true
    }

    /// Send a segment without data (ACK, keep-alive) with sequence number `seq`.
    pub(crate) fn send_control<S: SegmentSink>(&mut self, out: &mut S, sid: u32, seq: Seq, flags: u8) -> bool {
        let now = out.now();
        self.emit(out, sid, Seg { seq, flags, data_off: 0, len: 0 }, now)
    }

    /// Options for a segment of session `sid`.
    fn options_for(&self, sid: u32, flags: u8, now: Instant) -> TcpOptions {
        let rx = &self.rx[sid as usize];
        let st = self.state[sid as usize].state;
        let mut o = TcpOptions::default();
        let tsval = ts_clock(now);
        if flags & SYN != 0 {
            o.mss = Some(self.local_mss);
            let passive = st == TcpState::SynReceived;
            if let Some(ws) = self.cfg.window_scale {
                if !passive || rx.ws_ok {
                    o.window_scale = Some(ws.min(14));
                }
            }
            if self.cfg.sack && (!passive || rx.sack_ok) {
                o.sack_permitted = true;
            }
            if self.cfg.timestamps && (!passive || rx.ts_ok) {
                o.timestamps = Some((tsval, if passive { rx.ts_recent } else { 0 }));
            }
            return o;
        }
        if rx.ts_ok {
            o.timestamps = Some((tsval, rx.ts_recent));
        }
        if rx.sack_ok && flags & ACK != 0 {
            let b = &self.bufs[sid as usize].asm;
            let max_blocks = if rx.ts_ok { 3 } else { 4 };
            let dsack = rx.dsack.is_some() as usize;
            if !b.is_empty() {
                o.sack_blocks = b.sack_blocks(rx.rcv_nxt.0, max_blocks - dsack);
            }
            if let Some(d) = rx.dsack {
                // The D-SACK block goes first (RFC 2883 section 4).
                o.sack_blocks.copy_within(0..3, 1);
                o.sack_blocks[0] = Some(d);
            }
        }
        o
    }

    /// The window field to advertise now (never moving the right edge left), updating `rcv_adv`.
    fn advertise(&mut self, sid: u32, syn: bool) -> u16 {
        let ring = &self.bufs[sid as usize].rx;
        // A session in TIME-WAIT may have parked its buffers: it goes on showing the window of
        // an empty buffer (it accepts no data any more either way).
        let parked = ring.capacity() == 0 && self.state[sid as usize].state == TcpState::TimeWait;
        let free = if parked { self.cfg.rx_buffer as u32 } else { ring.free() as u32 };
        let rx = &mut self.rx[sid as usize];
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

    /// Build and emit one segment of session `sid`. Returns false if the link is full.
    fn emit<S: SegmentSink>(&mut self, out: &mut S, sid: u32, seg: Seg, now: Instant) -> bool {
        let syn = seg.flags & SYN != 0;
        let mut options = self.options_for(sid, seg.flags, now);
        if 20 + options.emitted_len() + 20 + seg.len > out.mtu() {
            // SACK blocks do not fit beside a full-sized data segment: leave them out.
            options.sack_blocks = [None; 4];
        }
        let window = self.advertise(sid, syn);
        let tuple = self.state[sid as usize].tuple;
        let rx = &self.rx[sid as usize];
        let ack = if seg.flags & ACK != 0 { rx.rcv_nxt.0 } else { 0 };
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
        let queue = &self.bufs[sid as usize].tx;
        let hl = repr.header_len();
        let sent = out.send_segment(tuple.remote_ip, hl + seg.len, |buf, src, dst| {
            // One pass over the payload: copied into the frame and summed for the checksum, so
            // the frame (in the link's memory, which the peer reads next) is never read back.
            let (copied, sum) = queue.copy_out_summed(seg.data_off, &mut buf[hl..hl + seg.len]);
            debug_assert_eq!(copied, seg.len);
            let _ = repr.emit_summed(buf, src, dst, seg.len, sum);
        });
        if sent {
            out.counters().bump(Counter::tcp_tx_segments);
            if seg.len > 0 {
                self.on_data_sent(sid, seg.seq, seg.len, now);
            }
            if seg.flags & ACK != 0 {
                let rx = &mut self.rx[sid as usize];
                if rx.dsack.is_some() && repr.options.sack_blocks[0] == rx.dsack {
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
                self.timers.cancel(sid, TimerKind::DelayedAck);
            }
        }
        sent
    }

    /// Answer a segment that belongs to no connection with a reset (RFC 9293 3.10.7.1).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_reset<S: SegmentSink>(
        &mut self,
        out: &mut S,
        to: Ipv4Addr,
        tuple: FourTuple,
        seg_seq: u32,
        seg_ack: u32,
        seg_flags: u8,
        seg_len: u32,
    ) {
        if seg_flags & RST != 0 {
            return;
        }
        let (seq, ack, flags) = if seg_flags & ACK != 0 {
            (seg_ack, 0, RST)
        } else {
            let syn_fin = (seg_flags & SYN != 0) as u32 + (seg_flags & FIN != 0) as u32;
            (0, seg_seq.wrapping_add(seg_len + syn_fin), RST | ACK)
        };
        let repr = TcpRepr {
            src_port: tuple.local_port,
            dst_port: tuple.remote_port,
            seq,
            ack,
            flags,
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
        };
        if out.send_segment(to, repr.header_len(), |buf, s, d| {
            let _ = repr.emit(buf, s, d, 0);
        }) {
            out.counters().bump(Counter::tcp_resets_sent);
        }
    }

    /// Send a reset on an existing connection (abort).
    pub(crate) fn send_abort_reset<S: SegmentSink>(&mut self, out: &mut S, sid: u32) {
        let st = self.state[sid as usize];
        if !st.state.is_synchronized() && st.state != TcpState::SynReceived {
            return;
        }
        let seq = self.tx[sid as usize].snd_nxt;
        if self.send_control(out, sid, seq, RST | ACK) {
            out.counters().bump(Counter::tcp_resets_sent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sink::recorder::{Recorder, LOCAL, PEER};
    use super::super::unit_util::*;
    use wire::tcp::flags::ACK;

    #[test]
    fn new_data_goes_in_full_segments_up_to_the_initial_window() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        e.bufs[sid as usize].tx.enqueue(&[9u8; 100_000]);
        e.mark_dirty(sid);
        let segs = flush(&mut e, &mut out);
        assert_eq!(segs.len(), 10, "IW = 10 segments (RFC 6928)");
        for (i, (h, p)) in segs.iter().enumerate() {
            assert_eq!((h.seq, p.len()), (our + i as u32 * MSS as u32, MSS as usize));
        }
        // Their ACK doubles the window (slow start): twenty more.
        let ack = from_peer(PEER_ISS + 1, our + 10 * MSS as u32, ACK, 1000, Default::default(), &[]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &ack), Ok(()));
        assert_eq!(flush(&mut e, &mut out).len(), 20);
    }

    #[test]
    fn the_peer_window_bounds_what_is_sent() {
        let mut e = engine();
        let mut out = Recorder::new();
        // 20 << 7 = 2,560 bytes offered.
        let (sid, our) = established(&mut e, &mut out, 20);
        e.bufs[sid as usize].tx.enqueue(&[9u8; 100_000]);
        e.mark_dirty(sid);
        let segs = flush(&mut e, &mut out);
        let sent: usize = segs.iter().map(|(_, p)| p.len()).sum();
        assert!(sent <= 2560, "{sent} bytes sent into a 2,560-byte window");
        assert_eq!((segs[0].0.seq, segs[0].1.len()), (our, MSS as usize));
    }

    #[test]
    fn a_failed_send_counts_as_lost_and_the_retransmission_timer_covers_it() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        out.failing = true;
        e.bufs[sid as usize].tx.enqueue(&[9u8; 1000]);
        e.mark_dirty(sid);
        flush(&mut e, &mut out);
        assert_eq!(out.failures, 1);
        assert_eq!(e.tx[sid as usize].snd_max.0, our + 1000, "as if sent");
        out.failing = false;
        let deadline = e.next_deadline().expect("the retransmission (or probe) timer");
        out.now = deadline;
        e.on_timers(&mut out, deadline);
        let again = out.take();
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].0.seq, again[0].1.len()), (our, 1000), "sent again");
    }
}
