//! The stack-wide memory budget of TCP's buffers and UDP's receive queues, with pressure
//! levels like Linux's `tcp_mem`/`udp_mem` (one budget for both, `TcpConfig::mem_limit` and
//! `mem_pressure`). For TCP: below `pressure` buffers are sized and grown freely; at or above it auto-tuning
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
//! For UDP (see `crate::udp`): a socket's receive queue holds no storage until a datagram
//! arrives and grows on demand (doubling, up to `Config::socket_rx_bytes` and
//! `socket_rx_queue` records); growth that does not fit under the limit is refused and the
//! datagram dropped (`rx_drop_udp_mem_limit`), after the storage of every emptied UDP queue
//! was given back; at or above the pressure level a queue read empty gives its storage back.
//! UDP's use is counted exactly at each growth and release ([`MemAccount::udp`]).
//!
//! What is counted for TCP is the storage of every send and receive ring and of the pools
//! that keep emptied rings' storage. Fresh allocations are charged at once; what is given back is
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
    /// Bytes held in all: TCP's ring storage (pools included) and UDP's queues.
    pub used: usize,
    /// Of `used`, the bytes of UDP receive queues (exact).
    pub udp: usize,
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
        MemAccount { used: 0, udp: 0, pressure: pressure.min(limit), limit, peak: 0, last_recount: Instant::ZERO }
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

    /// True if a recount would be due at `now` (nothing marked).
    #[inline]
    pub fn recount_pending(&self, now: Instant) -> bool {
        now.saturating_since(self.last_recount) >= RECOUNT_EVERY
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

    /// TCP's use counted afresh (UDP's exact count is added to it).
    pub fn set_used(&mut self, tcp_used: usize) {
        self.used = tcp_used.saturating_add(self.udp);
        self.peak = self.peak.max(self.used);
    }

    /// `bytes` of UDP queue storage were just allocated.
    #[inline]
    pub fn charge_udp(&mut self, bytes: usize) {
        self.udp = self.udp.saturating_add(bytes);
        self.charge(bytes);
    }

    /// `bytes` of UDP queue storage were just freed.
    #[inline]
    pub fn release_udp(&mut self, bytes: usize) {
        self.udp = self.udp.saturating_sub(bytes);
        self.used = self.used.saturating_sub(bytes);
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

    #[test]
    fn udp_use_is_exact_and_survives_a_tcp_recount() {
        let mut m = MemAccount::new(100, 200);
        m.charge_udp(120);
        assert_eq!((m.used, m.udp, m.level()), (120, 120, MemLevel::Pressure));
        m.set_used(30);
        assert_eq!((m.used, m.udp), (150, 120));
        assert!(m.fits(50) && !m.fits(51));
        m.release_udp(120);
        assert_eq!((m.used, m.udp, m.peak), (30, 0, 150));
        m.set_used(0);
        assert_eq!(m.used, 0);
    }
}
