//! The timestamp clock (RFC 7323 section 5.4), in a file of its own so that the files that
//! stamp or check timestamps (output, listeners, RACK, recovery, the receive path) import it
//! from below rather than from each other.

use link::Instant;

/// The timestamp clock: milliseconds (RFC 7323 allows 1 ms to 1 s per tick).
#[inline]
pub fn ts_clock(now: Instant) -> u32 {
    (now.as_nanos() / 1_000_000) as u32
}
