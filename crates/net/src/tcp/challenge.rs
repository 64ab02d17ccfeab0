//! The rate limit of challenge ACKs (RFC 5961 section 7), shared by all sessions of a stack.

use link::Instant;
use std::time::Duration;

/// At most `per_sec` challenge ACKs in any one-second window.
#[derive(Debug)]
pub(crate) struct ChallengeLimit {
    per_sec: u32,
    used: u32,
    window: Instant,
}

impl ChallengeLimit {
    /// A limit of `per_sec` challenge ACKs a second.
    pub(crate) fn new(per_sec: u32) -> Self {
        ChallengeLimit { per_sec, used: 0, window: Instant::ZERO }
    }

    /// True if one more challenge ACK may go out at `now` (and count it).
    pub(crate) fn allow(&mut self, now: Instant) -> bool {
        if now - self.window >= Duration::from_secs(1) {
            self.window = now;
            self.used = 0;
        }
        self.used += 1;
        self.used <= self.per_sec
    }
}
