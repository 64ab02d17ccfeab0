//! Congestion control: NewReno (RFC 5681, 6582) and CUBIC (RFC 9438), selectable per
//! connection. Windows are in bytes.
//!
//! [`Congestion`] owns the window and every change to it: slow start, the recovery window
//! (PRR), undo, timeouts. What differs between algorithms — how the window grows in
//! congestion avoidance and how far it falls on a loss — is a [`CongestionControl`]
//! implementation ([`NewReno`], [`Cubic`]); the engine never writes cwnd or ssthresh itself.

use link::Instant;
use std::time::Duration;

/// Which algorithm a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CcAlgorithm {
    /// Slow start and additive increase, halving on loss.
    #[default]
    NewReno,
    /// CUBIC window growth, multiplicative decrease by 0.7.
    Cubic,
}

const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

/// What a congestion-control algorithm decides. Windows in bytes.
pub trait CongestionControl {
    /// The window after `acked` newly acknowledged bytes in congestion avoidance (cwnd at or
    /// above ssthresh), from `cwnd`.
    fn grow(&mut self, cwnd: u32, mss: u32, acked: u32, now: Instant, srtt: Option<Duration>) -> u32;
    /// The slow-start threshold after a loss detected with `flight` bytes outstanding and the
    /// window at `cwnd` (the window is then reduced to it).
    fn threshold_after_loss(&mut self, cwnd: u32, flight: u32, mss: u32) -> u32;
    /// The window collapsed (a timeout): growth starts afresh.
    fn restart(&mut self);
}

/// NewReno's growth (one MSS per window of ACKs, byte counting) and halving.
#[derive(Debug, Clone, Copy, Default)]
pub struct NewReno {
    /// Bytes acknowledged but not yet turned into window growth.
    acked_carry: u32,
}

impl CongestionControl for NewReno {
    fn grow(&mut self, cwnd: u32, mss: u32, acked: u32, _now: Instant, _srtt: Option<Duration>) -> u32 {
        self.acked_carry = self.acked_carry.saturating_add(acked);
        if self.acked_carry >= cwnd {
            self.acked_carry -= cwnd;
            cwnd.saturating_add(mss)
        } else {
            cwnd
        }
    }

    fn threshold_after_loss(&mut self, cwnd: u32, flight: u32, mss: u32) -> u32 {
        self.acked_carry = 0;
        // Half of what was in flight (RFC 5681 eq. 4), but never of more than the window: in
        // a long recovery the flight (snd_max - snd_una) spans SACKed data above a hole and
        // can exceed cwnd, and halving that fed on itself (ssthresh grew recovery by recovery,
        // to line rate at 5% loss). Linux halves cwnd.
        (flight.min(cwnd) / 2).max(2 * mss)
    }

    fn restart(&mut self) {
        self.acked_carry = 0;
    }
}

/// CUBIC's window function with the Reno-friendly estimate (RFC 9438), windows in segments.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cubic {
    /// The window before the last reduction.
    w_max: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch: Option<Instant>,
    /// Time to regain `w_max`, seconds.
    k: f64,
    /// The Reno-friendly window estimate.
    w_est: f64,
    /// The window when the threshold was last set (RFC 9438's cwnd_prior, before fast
    /// convergence lowers `w_max`).
    cwnd_prior: f64,
    /// Growth not yet applied, in bytes (below one byte per ACK it would be lost).
    grow_carry: f64,
}

impl CongestionControl for Cubic {
    fn grow(&mut self, cwnd: u32, mss: u32, acked: u32, now: Instant, srtt: Option<Duration>) -> u32 {
        let mss = f64::from(mss);
        let cwnd_segs = f64::from(cwnd) / mss;
        let epoch = *self.epoch.get_or_insert_with(|| {
            if self.w_max < cwnd_segs {
                self.w_max = cwnd_segs;
            }
            self.k = ((self.w_max - cwnd_segs) / CUBIC_C).max(0.0).cbrt();
            self.w_est = cwnd_segs;
            now
        });
        let rtt = srtt.unwrap_or(Duration::from_millis(100)).as_secs_f64();
        let t = (now - epoch).as_secs_f64() + rtt;
        let target = CUBIC_C * (t - self.k).powi(3) + self.w_max;
        // The Reno-friendly estimate grows by alpha segments per window of ACKs: the rate that
        // gives Reno's average with CUBIC's beta while below the window before the last loss,
        // and Reno's own rate once past it (RFC 9438 4.3), so CUBIC is never slower than Reno.
        let alpha = if self.w_est >= self.cwnd_prior { 1.0 } else { 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA) };
        self.w_est += alpha * (f64::from(acked) / mss) / cwnd_segs;
        let goal = target.max(self.w_est).min(cwnd_segs * 1.5);
        if goal <= cwnd_segs {
            return cwnd;
        }
        self.grow_carry += (goal - cwnd_segs) / cwnd_segs * f64::from(acked);
        let whole = self.grow_carry.floor();
        self.grow_carry -= whole;
        (f64::from(cwnd) + whole).min(f64::from(u32::MAX)) as u32
    }

    fn threshold_after_loss(&mut self, cwnd: u32, _flight: u32, mss: u32) -> u32 {
        let segs = f64::from(cwnd) / f64::from(mss);
        self.cwnd_prior = segs;
        self.grow_carry = 0.0;
        // Fast convergence (RFC 9438 4.7).
        self.w_max = if segs < self.w_max { segs * (1.0 + CUBIC_BETA) / 2.0 } else { segs };
        self.epoch = None;
        ((f64::from(cwnd) * CUBIC_BETA) as u32).max(2 * mss)
    }

    fn restart(&mut self) {
        self.epoch = None;
    }
}

/// The state of the connection's algorithm.
#[derive(Debug, Clone, Copy)]
enum Algorithm {
    NewReno(NewReno),
    Cubic(Cubic),
}

impl Algorithm {
    fn new(algo: CcAlgorithm) -> Self {
        match algo {
            CcAlgorithm::NewReno => Algorithm::NewReno(NewReno::default()),
            CcAlgorithm::Cubic => Algorithm::Cubic(Cubic::default()),
        }
    }

    fn control(&mut self) -> &mut dyn CongestionControl {
        match self {
            Algorithm::NewReno(a) => a,
            Algorithm::Cubic(a) => a,
        }
    }
}

/// Congestion state of one connection.
#[derive(Debug, Clone, Copy)]
pub struct Congestion {
    /// Congestion window.
    pub cwnd: u32,
    /// Slow-start threshold.
    pub ssthresh: u32,
    mss: u32,
    algorithm: Algorithm,
}

impl Congestion {
    /// Initial state: IW = min(10 * MSS, max(2 * MSS, 14600)) (RFC 6928), ssthresh unbounded.
    pub fn new(algo: CcAlgorithm, mss: u32) -> Self {
        let iw = (10 * mss).min((2 * mss).max(14_600));
        Congestion { cwnd: iw, ssthresh: u32::MAX, mss, algorithm: Algorithm::new(algo) }
    }

    /// The algorithm in use.
    pub fn algorithm(&self) -> CcAlgorithm {
        match self.algorithm {
            Algorithm::NewReno(_) => CcAlgorithm::NewReno,
            Algorithm::Cubic(_) => CcAlgorithm::Cubic,
        }
    }

    /// Switch to `algo` (its state starts afresh; the window stays).
    pub fn set_algorithm(&mut self, algo: CcAlgorithm) {
        if algo != self.algorithm() {
            self.algorithm = Algorithm::new(algo);
        }
    }

    /// Change the segment size (after MSS negotiation), keeping the window in segments.
    pub fn set_mss(&mut self, mss: u32) {
        let segs = (self.cwnd / self.mss.max(1)).max(1);
        self.mss = mss.max(1);
        self.cwnd = segs * self.mss;
    }

    /// True in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// True if a flight of `flight` bytes used the window enough that its ACKs may grow it
    /// (as Linux's `tcp_is_cwnd_limited`): in slow start while cwnd is below twice the flight,
    /// in congestion avoidance when the flight filled cwnd to within one MSS.
    pub fn was_limited(&self, flight: u32) -> bool {
        if self.in_slow_start() {
            self.cwnd < flight.saturating_mul(2)
        } else {
            flight.saturating_add(self.mss) >= self.cwnd
        }
    }

    /// New data acknowledged: grow the window.
    pub fn on_ack(&mut self, acked: u32, now: Instant, srtt: Option<Duration>) {
        if self.in_slow_start() {
            // Byte counting (RFC 3465) without the per-ACK limit, as Linux does: the receiver
            // acknowledges a whole receive batch at once (stretch ACKs), and capping each ACK
            // at 2 MSS would slow slow start down by the batch size.
            self.cwnd = self.cwnd.saturating_add(acked).min(self.ssthresh.max(self.cwnd));
            return;
        }
        self.cwnd = self.algorithm.control().grow(self.cwnd, self.mss, acked, now, srtt);
    }

    /// Loss detected by duplicate ACKs or SACK: multiplicative decrease. `flight` is the data
    /// outstanding when the loss was detected.
    pub fn on_loss(&mut self, flight: u32) {
        self.ssthresh = self.algorithm.control().threshold_after_loss(self.cwnd, flight, self.mss);
        self.cwnd = self.ssthresh;
    }

    /// Recovery ends (the recovery point is acknowledged): the window is the threshold, at
    /// least two segments (RFC 5681 3.2 step 6, RFC 6937 3.1).
    pub fn on_recovery_end(&mut self) {
        self.cwnd = self.ssthresh.max(2 * self.mss);
    }

    /// NewReno fast retransmit without SACK (RFC 6582 3.2 step 2): the window inflated by the
    /// three segments the duplicate ACKs say have left.
    pub fn on_fast_retransmit_without_sack(&mut self) {
        self.cwnd = self.ssthresh.saturating_add(3 * self.mss);
    }

    /// A further duplicate ACK in NewReno recovery without SACK: one more segment left.
    pub fn inflate_for_duplicate(&mut self) {
        self.cwnd = self.cwnd.saturating_add(self.mss);
    }

    /// A NewReno partial ACK without SACK (RFC 6582 3.2 step 5): deflate by what it
    /// acknowledged, add back one segment.
    pub fn deflate_for_partial_ack(&mut self, acked: u32) {
        self.cwnd = self.cwnd.saturating_sub(acked).saturating_add(self.mss).max(self.mss);
    }

    /// Proportional Rate Reduction's window for this ACK (RFC 6937): what is in the network
    /// plus what may be sent now.
    pub fn set_recovery_window(&mut self, pipe: u64, sndcnt: u64) {
        self.cwnd = pipe.saturating_add(sndcnt).min(u64::from(u32::MAX)) as u32;
    }

    /// A response to loss proved spurious: restore the window and threshold from before it
    /// (never lowering what grew since).
    pub fn undo(&mut self, cwnd: u32, ssthresh: u32) {
        self.cwnd = self.cwnd.max(cwnd);
        self.ssthresh = self.ssthresh.max(ssthresh);
    }

    /// A loss repaired at once (a tail loss probe): the reduction of a fast recovery, ended.
    pub fn on_repaired_loss(&mut self, flight: u32) {
        self.on_loss(flight);
        self.on_recovery_end();
    }

    /// Retransmission timeout: back to one segment (RFC 5681 3.1). The threshold answers the
    /// loss only if `reduce`: not when the window was already reduced for it (a timeout in
    /// loss recovery, or a backed-off timeout of the same episode), as Linux's
    /// `tcp_enter_loss` keeps it then; reducing again from a window PRR or a timeout had
    /// already shrunk pinned the threshold at two segments.
    pub fn on_timeout(&mut self, flight: u32, reduce: bool) {
        if reduce {
            self.on_loss(flight);
        }
        self.cwnd = self.mss;
        self.algorithm.control().restart();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reno_slow_start_then_linear_then_halving() {
        let mut c = Congestion::new(CcAlgorithm::NewReno, 1000);
        assert_eq!(c.cwnd, 10_000);
        c.on_ack(1000, Instant::ZERO, None);
        assert_eq!(c.cwnd, 11_000);
        c.on_loss(20_000);
        assert_eq!((c.cwnd, c.ssthresh), (5_500, 5_500), "half the window: the flight was larger");
        c.cwnd = 20_000;
        c.on_loss(8_000);
        assert_eq!((c.cwnd, c.ssthresh), (4_000, 4_000), "half the flight: the window was not used");
        c.cwnd = 10_000;
        c.ssthresh = 10_000;
        for _ in 0..10 {
            c.on_ack(1000, Instant::ZERO, None);
        }
        assert_eq!(c.cwnd, 11_000, "one MSS per window of ACKs");
        c.on_timeout(11_000, true);
        assert_eq!((c.cwnd, c.ssthresh), (1000, 5500));
        c.on_timeout(1000, false);
        assert_eq!((c.cwnd, c.ssthresh), (1000, 5500), "a backed-off timeout keeps the threshold");
    }

    #[test]
    fn cubic_reduces_by_beta_and_regrows_towards_w_max() {
        let mut c = Congestion::new(CcAlgorithm::Cubic, 1000);
        c.ssthresh = 10_000;
        c.cwnd = 100_000;
        c.on_loss(100_000);
        assert_eq!(c.cwnd, 70_000);
        let mut now = Instant::ZERO;
        for _ in 0..2000 {
            now = now + Duration::from_millis(1);
            c.on_ack(1000, now, Some(Duration::from_millis(10)));
        }
        assert!(c.cwnd > 90_000, "{}", c.cwnd);
    }
}
