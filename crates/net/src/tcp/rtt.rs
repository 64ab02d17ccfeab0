//! Retransmission timeout estimation per RFC 6298 (SRTT, RTTVAR, exponential backoff).

use std::time::Duration;

/// RTT estimator and RTO for one connection.
#[derive(Debug, Clone, Copy)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    /// An estimator with RFC 6298's initial RTO of 1 s, clamped to `[min_rto, max_rto]`.
    pub fn new(min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            rto: Duration::from_secs(1).clamp(min_rto, max_rto),
            backoff: 0,
            min_rto,
            max_rto,
        }
    }

    /// Feed one RTT measurement (RFC 6298 2.2 and 2.3); clears the backoff.
    pub fn sample(&mut self, rtt: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let delta = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + delta) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        self.backoff = 0;
        self.rto = self.base_rto();
    }

    /// RTO = SRTT + max(G, 4 RTTVAR) (RFC 6298 2.3) with `min_rto` as G, the margin above
    /// the smoothed RTT (as Linux applies its floor): a relative margin would vanish on a
    /// steady path, where RTTVAR decays towards zero and delayed ACKs or a queue building up
    /// would then fire the timer spuriously.
    fn base_rto(&self) -> Duration {
        match self.srtt {
            None => Duration::from_secs(1).clamp(self.min_rto, self.max_rto),
            Some(srtt) => (srtt + (self.rttvar * 4).max(self.min_rto)).min(self.max_rto),
        }
    }

    /// Double the RTO after a timeout (RFC 6298 5.5), up to the maximum.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
        self.rto = (self.rto * 2).min(self.max_rto);
    }

    /// The current RTO.
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
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
