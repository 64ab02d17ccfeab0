//! A token bucket limiting messages per second (ICMP and ICMPv6 errors).

use link::Instant;
use std::time::Duration;

/// A token bucket limiting ICMP errors per second.
#[derive(Debug)]
pub(crate) struct RateLimit {
    per_sec: u32,
    tokens: u32,
    refilled: Instant,
}

impl RateLimit {
    /// A bucket of `per_sec` tokens a second (0: unlimited), full at the start.
    pub fn new(per_sec: u32) -> Self {
        RateLimit { per_sec, tokens: per_sec, refilled: Instant::ZERO }
    }

    /// True if one more message may go now (taking a token).
    pub fn allow(&mut self, now: Instant) -> bool {
        if self.per_sec == 0 {
            return true;
        }
        let elapsed = now - self.refilled;
        if elapsed >= Duration::from_millis(10) {
            let add = (elapsed.as_nanos() * self.per_sec as u128 / 1_000_000_000) as u32;
            self.tokens = (self.tokens.saturating_add(add)).min(self.per_sec);
            self.refilled = now;
        }
        if self.tokens > 0 {
            self.tokens -= 1;
            true
        } else {
            false
        }
    }
}
