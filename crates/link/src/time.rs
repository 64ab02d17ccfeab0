//! Injected time: a nanosecond instant and the monotonic clock that produces real ones.
//!
//! Every stack, link and testbed takes `now` as an argument, so the same code runs on the
//! virtual time of an in-process testbed and on the real clock.

use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time, in nanoseconds since an arbitrary origin (virtual or `CLOCK_MONOTONIC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The origin of time.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros * 1_000)
    }

    /// An instant `millis` milliseconds after the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis * 1_000_000)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Milliseconds since the origin (truncated).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// The current reading of the monotonic clock.
    pub fn now() -> Self {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        Instant(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// The wall-clock time (`CLOCK_REALTIME`) in nanoseconds since the Unix epoch, for capture
/// timestamps; 0 if the clock reads before 1970.
pub fn unix_nanos() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    u64::try_from(ts.tv_sec).map_or(0, |s| s.saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64))
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_round_trips() {
        let t = Instant::from_millis(5);
        assert_eq!(t + Duration::from_micros(250), Instant::from_nanos(5_250_000));
        assert_eq!((t + Duration::from_millis(1)) - t, Duration::from_millis(1));
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(t.as_millis(), 5);
    }

    #[test]
    fn monotonic_clock_does_not_go_back() {
        let a = Instant::now();
        let b = Instant::now();
        assert!(b >= a);
    }
}
