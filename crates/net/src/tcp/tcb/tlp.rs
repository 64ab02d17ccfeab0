//! Tail loss probes (RFC 8985 section 7). When the last segments of a flight are lost no
//! duplicate ACKs come back, and without a probe the sender waits for the retransmission
//! timeout (at least 200 ms here). Instead, two smoothed RTTs after the last transmission the
//! sender probes: one new segment if the windows allow, else the last segment again. The ACK
//! of the probe either acknowledges everything (the losses were not losses, or the probe
//! repaired the only one: then the congestion window answers as after a fast recovery) or
//! SACKs the probe above the holes, which are then all lost — the probe left a PTO after them
//! — and are retransmitted in one recovery.
//!
//! The probe timeout shares the retransmission timer: while it runs as a PTO, `tlp_armed` is
//! set; when it fires the probe goes out and the timer becomes the RTO again.

use super::super::config::TcpConfig;
use super::super::seq::{dist, ge, le, lt, Seq};
use super::super::sink::Meter;
use super::super::timer::TimerKind;
use super::super::TcpState;
use super::tables::WORST_DELAYED_ACK_NANOS;
use super::{Ctx, TcbMut};
use crate::counters::Counter;
use link::Instant;
use std::time::Duration;

impl TcbMut<'_> {
    /// The probe timeout now, if a probe may be scheduled (RFC 8985 7.2): SACK agreed, data
    /// in flight, not in recovery, no probe outstanding, an RTT measured.
    fn probe_timeout(&self, cfg: &TcpConfig) -> Option<Duration> {
        let tx = &*self.tx;
        let st = self.state.state;
        if !cfg.tail_loss_probe
            || !self.rx.sack_ok
            || !matches!(st, TcpState::Established | TcpState::CloseWait)
            || tx.snd_una == tx.snd_max
            || tx.recover.is_some()
            || tx.tlp_high.is_some()
            || tx.fin_seq.is_some()
            || tx.retries > 0
        {
            return None;
        }
        let srtt = tx.rtt.srtt_nanos()?;
        let mut pto = srtt.saturating_mul(2);
        if tx.in_flight() <= tx.mss as u32 {
            pto = pto.saturating_add(WORST_DELAYED_ACK_NANOS);
        }
        let pto = Duration::from_nanos(pto);
        let rto = tx.rto();
        (pto < rto).then_some(pto)
    }

    /// (Re)start the retransmission timer after new data went out or an ACK advanced: as a
    /// probe timeout where a probe may be scheduled, else as the RTO.
    pub(crate) fn arm_loss_timer(&mut self, ctx: &mut Ctx, now: Instant) {
        let tx = &*self.tx;
        if tx.snd_una == tx.snd_max {
            self.tx.tlp_armed = false;
            ctx.timers.cancel(self.sid.0, TimerKind::Retransmit);
            return;
        }
        match self.probe_timeout(ctx.cfg) {
            Some(pto) => {
                self.tx.tlp_armed = true;
                ctx.timers.arm(self.sid.0, TimerKind::Retransmit, now + pto);
            }
            None => {
                let tx = &mut *self.tx;
                tx.tlp_armed = false;
                let rto = tx.rto();
                ctx.timers.arm(self.sid.0, TimerKind::Retransmit, now + rto);
            }
        }
    }

    /// The probe timeout fired: a probe goes at the next output, and the timer runs on as the
    /// RTO from now.
    pub(crate) fn on_probe_timeout(&mut self, ctx: &mut Ctx, now: Instant) {
        let tx = &mut *self.tx;
        tx.tlp_armed = false;
        if tx.snd_una == tx.snd_max {
            return;
        }
        // Recovery may have started since the PTO was armed: then only the RTO runs on.
        tx.tlp_due = tx.recover.is_none() && tx.tlp_high.is_none();
        let rto = tx.rto();
        ctx.timers.arm(self.sid.0, TimerKind::Retransmit, now + rto);
        ctx.dirty.mark(self.sid.0);
    }

    /// What the due probe sends: `Some((seq, len, retransmission))`, new data if the peer's
    /// window and the queue allow one segment of it, else the last segment sent.
    pub(crate) fn probe_segment(&self, data_end: Seq) -> Option<(Seq, usize, bool)> {
        let tx = &*self.tx;
        let wnd_end = tx.snd_una + tx.snd_wnd;
        if lt(tx.snd_nxt, data_end) && lt(tx.snd_nxt, wnd_end) {
            let len = dist(tx.snd_nxt, data_end).min(dist(tx.snd_nxt, wnd_end)).min(tx.mss as u32);
            return Some((tx.snd_nxt, len as usize, false));
        }
        let sent_end = if lt(tx.snd_max, data_end) { tx.snd_max } else { data_end };
        if !lt(tx.snd_una, sent_end) {
            return None;
        }
        let len = dist(tx.snd_una, sent_end).min(tx.mss as u32);
        Some((sent_end - len, len as usize, true))
    }

    /// The probe went out: remember where the flight ended.
    pub(crate) fn probe_sent<M: Meter>(&mut self, io: &mut M, retransmission: bool) {
        let tx = &mut *self.tx;
        tx.tlp_due = false;
        tx.tlp_high = Some(tx.snd_max);
        tx.tlp_retx = retransmission;
        tx.tlp_probes += 1;
        io.counters().bump(Counter::tcp_tlp_probes);
    }

    /// A duplicate ACK while a probe is outstanding: if it SACKs the probe, the holes below are
    /// lost. Returns true if recovery started.
    pub(crate) fn probe_sacked<M: Meter>(&mut self, io: &mut M) -> bool {
        let tx = &mut *self.tx;
        let (Some(high), Some(sacked)) = (tx.tlp_high, tx.sb.high()) else { return false };
        if tx.recover.is_some() || !ge(sacked, high) {
            return false;
        }
        tx.tlp_high = None;
        super::recovery::start_recovery(tx, true, io.now());
        tx.tail_recovery = true;
        io.counters().bump(Counter::tcp_tlp_recoveries);
        io.counters().bump(Counter::tcp_fast_retransmits);
        true
    }

    /// An ACK reached SND.UNA `ack`: the probe episode ends once everything up to the probe is
    /// acknowledged. A retransmitted probe that was not reported as a duplicate (D-SACK)
    /// repaired a loss: the congestion window answers as after a fast recovery (RFC 8985 7.4).
    pub(crate) fn probe_episode_acked<M: Meter>(&mut self, io: &mut M, ack: u32, dsack_of_probe: bool) {
        let tx = &mut *self.tx;
        let Some(high) = tx.tlp_high else { return };
        if !le(high, ack) {
            return;
        }
        tx.tlp_high = None;
        if tx.tlp_retx && !dsack_of_probe && tx.recover.is_none() {
            let flight = tx.in_flight().max(tx.mss as u32);
            tx.cc.on_repaired_loss(flight);
            io.counters().bump(Counter::tcp_tlp_repairs);
        }
    }
}
