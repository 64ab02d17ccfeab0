//! One connection's timers firing: retransmission timeout (or loss probe), delayed ACK,
//! zero-window probe, keep-alive, linger, reordering. A timer that ends the connection says
//! so, and the engine ends it.

use super::super::seq::le;
use super::super::timer::TimerKind;
use super::super::TcpError;
use super::transmit::Emit;
use super::{Ctx, TcbMut};
use crate::counters::Counter;
use link::Instant;

impl TcbMut<'_> {
    /// Timer `kind` of this connection fired at `now`. `Some(error)` if the connection ends
    /// (with `error` if abnormally): the engine finishes it.
    pub(crate) fn on_timer<E: Emit>(
        &mut self,
        ctx: &mut Ctx,
        out: &mut E,
        kind: TimerKind,
        now: Instant,
    ) -> Option<Option<TcpError>> {
        match kind {
            TimerKind::Retransmit => self.on_rto(ctx, out, now),
            TimerKind::DelayedAck => {
                self.rx.ack_now = true;
                ctx.dirty.mark(self.sid.0);
                None
            }
            TimerKind::Persist => self.on_persist(ctx, out, now),
            TimerKind::Keepalive => self.on_keepalive(ctx, out, now),
            TimerKind::Linger => Some(None),
            TimerKind::Reorder => {
                self.on_reorder_timeout(ctx, out, now);
                None
            }
        }
    }

    /// Retransmission timeout (RFC 6298 5.4–5.7, RFC 5681 3.1).
    fn on_rto<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> Option<Option<TcpError>> {
        if self.tx.tlp_armed {
            self.on_probe_timeout(ctx, now);
            return None;
        }
        let st = self.state.state;
        let tx = &mut *self.tx;
        if tx.snd_una == tx.snd_max {
            return None;
        }
        tx.tlp_due = false;
        tx.tlp_high = None;
        tx.tail_recovery = false;
        tx.undo = None;
        tx.retries += 1;
        let limit = if st.is_synchronized() { ctx.cfg.max_retries } else { ctx.cfg.syn_retries };
        if tx.retries > limit {
            out.counters().bump(Counter::tcp_timeouts_fatal);
            return Some(Some(TcpError::TimedOut));
        }
        out.counters().bump(Counter::tcp_rto_fired);
        tx.timeouts += 1;
        if st.is_synchronized() {
            self.mark_rto_undo(now);
        }
        let tx = &mut *self.tx;
        let flight = tx.in_flight();
        if st.is_synchronized() {
            let first_of_episode = tx.recover.is_none() && tx.retries == 1;
            tx.cc.on_timeout(flight, first_of_episode);
        }
        tx.rtt.back_off();
        tx.timed = None;
        tx.snd_nxt = tx.snd_una;
        tx.recover = None;
        tx.dupacks = 0;
        // The SACK scoreboard stays (as Linux keeps it): resending from SND.UNA skips what
        // the peer already holds.
        tx.retx_high = tx.snd_una;
        if let Some(f) = tx.fin_seq {
            if le(tx.snd_una, f) {
                tx.fin_seq = None;
            }
        }
        let rto = tx.rto();
        ctx.timers.arm(self.sid.0, TimerKind::Retransmit, now + rto);
        ctx.dirty.mark(self.sid.0);
        None
    }

    /// Zero-window probe due: the output path sends one byte beyond the window, unless the
    /// window has been closed longer than `zero_window_limit` (then the connection is reset).
    fn on_persist<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> Option<Option<TcpError>> {
        let tx = &mut *self.tx;
        let held = tx.zero_window_since.map(|t| now - t);
        if let (Some(held), Some(limit)) = (held, ctx.cfg.zero_window_limit) {
            if held >= limit {
                out.counters().bump(Counter::tcp_zero_window_aborts);
                self.send_abort_reset(ctx, out);
                return Some(Some(TcpError::TimedOut));
            }
        }
        tx.probes += 1;
        ctx.dirty.mark(self.sid.0);
        None
    }

    /// Keep-alive probe due (RFC 9293 3.8.4); nine unanswered end the connection.
    fn on_keepalive<E: Emit>(&mut self, ctx: &mut Ctx, out: &mut E, now: Instant) -> Option<Option<TcpError>> {
        let idle = ctx.cfg.keepalive?;
        let tx = &mut *self.tx;
        if !self.state.state.is_synchronized() {
            return None;
        }
        if tx.keepalives >= 9 {
            return Some(Some(TcpError::TimedOut));
        }
        tx.keepalives += 1;
        // A keep-alive carries SEG.SEQ = SND.NXT - 1 and no data (RFC 9293 3.8.4).
        let seq = tx.snd_nxt - 1;
        self.send_control(ctx, out, seq, wire::tcp::flags::ACK);
        ctx.timers.arm(self.sid.0, TimerKind::Keepalive, now + idle / 10);
        None
    }
}
