//! Loss recovery with SACK, as today's Linux does it: RACK marks segments lost by time (see
//! `rack`), recovery retransmits every lost segment as the window allows, Proportional Rate
//! Reduction (RFC 6937) spreads the window reduction over the recovery round trip instead of
//! stopping transmission for half of it, and a retransmission timeout that the timestamps
//! show to be spurious (the ACK echoes the original transmission) is undone (Eifel, RFC 3522
//! detection with the RFC 4015 response).

use super::super::clock::ts_clock;
use super::super::seq::{gt, lt, Seq};
use super::super::sink::Meter;
use super::super::timer::TimerKind;
use super::episode::{Prr, RtoUndo};
use super::tables::TxSar;
use super::{Ctx, TcbMut};
use crate::counters::Counter;
use link::Instant;

/// Enter loss recovery (RFC 5681 3.2, RFC 6675 5, RFC 6937 3): the recovery point is SND.MAX
/// and the congestion window answers the loss. With SACK, PRR then paces what is sent and
/// RACK says what is lost; without, the first unacknowledged segment goes again at once.
pub(crate) fn start_recovery(tx: &mut TxSar, sack: bool, now: Instant) {
    super::undo::mark_undo_point(tx, now);
    tx.recover = Some(tx.snd_max);
    let flight = tx.in_flight();
    let prior_cwnd = tx.cc.cwnd;
    tx.cc.on_loss(flight);
    tx.fast_recoveries += 1;
    tx.retx_high = tx.snd_una;
    if sack {
        // RecoverFS is the window before the reduction, as Linux's prior_cwnd: the pipe at
        // this moment excludes what RACK just marked lost and can be a sliver, and dividing by
        // it let one ACK that filled a hole send hundreds of segments.
        tx.prr = Prr { delivered: 0, out: 0, recover_fs: u64::from(prior_cwnd.max(tx.pipe()).max(1)) };
    } else {
        tx.retx_front = true;
    }
}

impl TcbMut<'_> {
    /// Run RACK loss detection (with SACK): start recovery when it finds a loss,
    /// and keep the reordering timer for segments that may still turn out lost. `on_timer`:
    /// run by the reordering timer rather than an ACK.
    pub(crate) fn detect_losses<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M, now: Instant, on_timer: bool) {
        let tx = &mut *self.tx;
        let mss = (tx.mss as u32).max(1);
        let reo_wnd = tx.rack.reo_wnd(tx.recover.is_some(), tx.sb.sacked / mss, tx.reordering, tx.rtt.srtt());
        let found = tx.rack.detect_loss(&tx.sb, reo_wnd, now);
        if found.newly_lost > 0 {
            tx.rack_lost += u64::from(found.newly_lost);
            io.counters().add(Counter::tcp_rack_lost, u64::from(found.newly_lost));
            if tx.recover.is_none() {
                tx.tlp_high = None;
                start_recovery(tx, true, now);
                io.counters().bump(Counter::tcp_fast_retransmits);
                // On an ACK, PRR runs next with what the ACK delivered; the first
                // retransmission goes either way. Found by the reordering timer, the delivery
                // that armed the timer counts as one segment (as Linux's
                // `tcp_rack_reo_timeout` does): with a window of two, a lone retransmission
                // would leave nothing behind it whose SACK could show it lost, and a lost
                // retransmission then waited for the RTO.
                let delivered = if on_timer { u32::from(self.tx.mss) } else { 0 };
                self.prr_on_ack(delivered);
            }
            ctx.dirty.mark(self.sid.0);
        }
        match found.timeout {
            Some(t) => ctx.timers.arm(self.sid.0, TimerKind::Reorder, now + t),
            None => ctx.timers.cancel(self.sid.0, TimerKind::Reorder),
        }
    }

    /// The reordering timer fired.
    pub(crate) fn on_reorder_timeout<M: Meter>(&mut self, ctx: &mut Ctx, io: &mut M, now: Instant) {
        io.counters().bump(Counter::tcp_reorder_timeouts);
        if self.rx.sack_ok {
            self.detect_losses(ctx, io, now, true);
        }
    }

    /// PRR on an ACK during recovery (RFC 6937 section 3.1, with the slow-start reduction
    /// bound): `delivered` bytes reached the receiver; the window becomes what is in the
    /// network plus the share of it that may be sent now.
    pub(crate) fn prr_on_ack(&mut self, delivered: u32) {
        let tx = &mut *self.tx;
        if tx.recover.is_none() {
            return;
        }
        // In whole segments, as Linux counts PRR: the sender sends full segments, and a share
        // of a segment per ACK would send nothing until the shares add up.
        let mss = u64::from(tx.mss.max(1));
        tx.prr.delivered += u64::from(delivered);
        let segs = |bytes: u64| bytes.div_ceil(mss);
        let pipe_bytes = u64::from(tx.pipe());
        let (pipe, ssthresh) = (segs(pipe_bytes), u64::from(tx.cc.ssthresh) / mss);
        let (prr_delivered, prr_out) = (segs(tx.prr.delivered), segs(tx.prr.out));
        let mut sndcnt = if pipe > ssthresh {
            (prr_delivered * ssthresh).div_ceil(segs(tx.prr.recover_fs).max(1)).saturating_sub(prr_out)
        } else {
            let limit = prr_delivered.saturating_sub(prr_out).max(segs(u64::from(delivered))) + 1;
            (ssthresh - pipe).min(limit)
        };
        if prr_out == 0 && sndcnt == 0 {
            // The first retransmission of the recovery always goes (fast retransmit).
            sndcnt = 1;
        }
        tx.cc.set_recovery_window(pipe_bytes, sndcnt * mss);
    }

    /// A data segment `[seq, seq + len)` went io.
    pub(crate) fn on_data_sent(&mut self, seq: Seq, len: usize, now: Instant) {
        let tx = &mut *self.tx;
        tx.rack.on_send(seq, seq + len as u32, now);
        if tx.recover.is_some() {
            tx.prr.out += len as u64;
        }
    }

    /// A retransmission timeout fires: remember what undoing it would restore.
    pub(crate) fn mark_rto_undo(&mut self, now: Instant) {
        let ts_ok = self.rx.ts_ok;
        let tx = &mut *self.tx;
        // Only the first timeout of a series (`retries` already counts this one).
        tx.rto_undo = (ts_ok && tx.retries == 1).then_some(RtoUndo {
            ts: ts_clock(now),
            cwnd: tx.cc.cwnd,
            ssthresh: tx.cc.ssthresh,
        });
        tx.rack.on_timeout();
    }

    /// The first ACK that advances after a timeout: if it echoes a timestamp from before the
    /// timeout, the original transmission arrived and the timeout was spurious. Restore the
    /// window and stop resending what is already in flight (RFC 4015 3.2).
    pub(crate) fn check_spurious_rto<M: Meter>(&mut self, io: &mut M, ecr: Option<u32>) {
        let tx = &mut *self.tx;
        let Some(undo) = tx.rto_undo.take() else { return };
        let Some(ecr) = ecr else { return };
        if ecr == 0 || !lt(ecr, undo.ts) {
            return;
        }
        tx.cc.undo(undo.cwnd, undo.ssthresh);
        // Resume after what is in flight, unless the FIN was among it (the timeout forgot it
        // was sent; it goes again in order).
        let fin_forgotten = tx.fin_queued && tx.fin_seq.is_none();
        if gt(tx.snd_max, tx.snd_nxt) && !fin_forgotten {
            tx.snd_nxt = tx.snd_max;
        }
        tx.spurious_rtos += 1;
        io.counters().bump(Counter::tcp_spurious_rtos);
    }
}
