//! The stack-wide memory budget of TCP's buffers, with pressure levels like Linux's
//! `tcp_mem`: below `pressure` buffers are sized and grown freely; at or above it auto-tuning
//! stops growing them, emptied rings give their storage back even when grown, and rings that
//! need storage get the minimum size (`TcpConfig::buffer_min`); at `limit` no ring gets new
//! storage: `tcp_send` accepts nothing (back-pressure, `tcp_mem_send_refused`) and data for a
//! ring without storage is dropped (`rx_drop_tcp_mem_limit`; the peer sends it again).
//!
//! Per connection: its session-table entry (about 1 KiB, preallocated for `max_sessions`);
//! with more than 64 sessions an idle connection's rings hold no storage (they park it in the
//! pools, see `storage`); a stalled connection (a peer that never reads) holds a full send ring,
//! `tx_buffer` (256 KiB) below the pressure level, `buffer_min` (16 KiB) above it. With the
//! defaults, 4,096 stalled connections need at most 64 MiB + 3,840 x 16 KiB = 124 MiB
//! (measured over a TAP: 125 MiB at the peak, 160 MiB resident for the whole process).
//!
//! What is counted is the storage of every send and receive ring and of the pools that keep
//! emptied rings' storage. Fresh allocations are charged at once; what is given back is
//! found by a recount of every session every [`RECOUNT_EVERY`], so between recounts the
//! figure can only be too high, never too low.

use link::Instant;
use std::time::Duration;

/// How often the use is counted afresh.
pub const RECOUNT_EVERY: Duration = Duration::from_millis(10);

/// Where the use stands against the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemLevel {
    /// Below the pressure threshold.
    Normal,
    /// At or above the pressure threshold, below the limit.
    Pressure,
    /// At the limit.
    Limit,
}

/// The budget and its current use.
#[derive(Debug, Clone)]
pub struct MemAccount {
    /// Bytes of ring storage held (pools included).
    pub used: usize,
    /// Pressure threshold, bytes.
    pub pressure: usize,
    /// Hard limit, bytes.
    pub limit: usize,
    /// The most bytes held at once since the stack started.
    pub peak: usize,
    last_recount: Instant,
}

impl MemAccount {
    /// An account with nothing used.
    pub fn new(pressure: usize, limit: usize) -> Self {
        MemAccount { used: 0, pressure: pressure.min(limit), limit, peak: 0, last_recount: Instant::ZERO }
    }

    /// The current level.
    #[inline]
    pub fn level(&self) -> MemLevel {
        if self.used >= self.limit {
            MemLevel::Limit
        } else if self.used >= self.pressure {
            MemLevel::Pressure
        } else {
            MemLevel::Normal
        }
    }

    /// True if `bytes` more fit under the limit.
    #[inline]
    pub fn fits(&self, bytes: usize) -> bool {
        self.used.saturating_add(bytes) <= self.limit
    }

    /// `bytes` were just allocated.
    #[inline]
    pub fn charge(&mut self, bytes: usize) {
        self.used = self.used.saturating_add(bytes);
        self.peak = self.peak.max(self.used);
    }

    /// True if a recount is due at `now` (and marks it done).
    #[inline]
    pub fn recount_due(&mut self, now: Instant) -> bool {
        if now.saturating_since(self.last_recount) < RECOUNT_EVERY {
            return false;
        }
        self.last_recount = now;
        true
    }

    /// The use counted afresh.
    pub fn set_used(&mut self, used: usize) {
        self.used = used;
        self.peak = self.peak.max(used);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_the_use() {
        let mut m = MemAccount::new(100, 200);
        assert_eq!(m.level(), MemLevel::Normal);
        assert!(m.fits(200) && !m.fits(201));
        m.charge(150);
        assert_eq!(m.level(), MemLevel::Pressure);
        m.charge(50);
        assert_eq!((m.level(), m.peak), (MemLevel::Limit, 200));
        m.set_used(10);
        assert_eq!((m.level(), m.peak), (MemLevel::Normal, 200));
        assert!(m.recount_due(Instant::ZERO + RECOUNT_EVERY));
        assert!(!m.recount_due(Instant::ZERO + RECOUNT_EVERY));
    }
}
