//! Retransmission timeout estimation per RFC 6298 (SRTT, RTTVAR, exponential backoff).

use std::time::Duration;

/// RTT estimator and RTO for one connection. Kept in whole nanoseconds: the update runs
/// on every timed ACK, and integer arithmetic is a few instructions where `Duration`'s
/// checked multiply and split division are tens.
#[derive(Debug, Clone, Copy)]
pub struct RttEstimator {
    /// Smoothed RTT in nanoseconds; `None` before the first sample.
    srtt: Option<u64>,
    rttvar: u64,
    rto: Duration,
    backoff: u32,
    min_rto: u64,
    max_rto: u64,
}

/// Whole nanoseconds of `d`, saturating at `u64::MAX` (584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl RttEstimator {
    /// An estimator with RFC 6298's initial RTO of 1 s, clamped to `[min_rto, max_rto]`.
    pub fn new(min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            rto: Duration::from_secs(1).clamp(min_rto, max_rto),
            backoff: 0,
            min_rto: nanos(min_rto),
            max_rto: nanos(max_rto),
        }
    }

    /// Feed one RTT measurement (RFC 6298 2.2 and 2.3); clears the backoff.
    pub fn sample(&mut self, rtt: Duration) {
        let r = nanos(rtt).min(u64::MAX / 8);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let delta = srtt.abs_diff(r);
                self.rttvar = (self.rttvar * 3 + delta) / 4;
                self.srtt = Some((srtt * 7 + r) / 8);
            }
        }
        self.backoff = 0;
        self.rto = self.base_rto();
    }

    /// SRTT + max(G, 4 RTTVAR), clamped (RFC 6298 2.3 with the floor as G).
    fn base_rto(&self) -> Duration {
        match self.srtt {
            None => {
                Duration::from_secs(1).clamp(Duration::from_nanos(self.min_rto), Duration::from_nanos(self.max_rto))
            }
            Some(srtt) => {
                Duration::from_nanos(srtt.saturating_add((self.rttvar * 4).max(self.min_rto)).min(self.max_rto))
            }
        }
    }

    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
        self.rto = self.rto.saturating_mul(2).min(Duration::from_nanos(self.max_rto));
    }

    /// The current RTO.
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    /// The smoothed RTT in nanoseconds, for arithmetic on the per-ACK path.
    pub fn srtt_nanos(&self) -> Option<u64> {
        self.srtt
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let mut e = RttEstimator::new(Duration::from_millis(200), Duration::from_secs(60));
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.sample(Duration::from_millis(100));
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.rto(), Duration::from_millis(300));
        e.sample(Duration::from_millis(100));
        assert_eq!(e.rttvar(), Duration::from_micros(37_500));
        // 4 RTTVAR = 150 ms is below the 200 ms margin.
        assert_eq!(e.rto(), Duration::from_millis(300));
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), Duration::from_millis(1200));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
    }
}
