//! Per-session timers on one lazily invalidated heap: re-arming a timer to a later deadline
//! costs nothing (the old heap entry is re-checked when it comes due), so the common case of
//! pushing the retransmission deadline forward on every ACK stays O(1).

use link::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The timers a session has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum TimerKind {
    /// Retransmission (data, SYN, SYN-ACK, FIN).
    Retransmit = 0,
    /// Delayed acknowledgement.
    DelayedAck = 1,
    /// Zero-window probe.
    Persist = 2,
    /// Keep-alive probe.
    Keepalive = 3,
    /// TIME-WAIT and FIN-WAIT-2 expiry.
    Linger = 4,
    /// RACK's reordering timer: run loss detection again (RFC 8985 6.3).
    Reorder = 5,
}

const KINDS: usize = 6;

/// All sessions' timers.
#[derive(Debug)]
pub struct Timers {
    /// Wanted deadline per session and kind.
    want: Vec<[Option<Instant>; KINDS]>,
    /// Earliest heap entry per session and kind.
    queued: Vec<[Option<Instant>; KINDS]>,
    heap: BinaryHeap<Reverse<(Instant, u32, u8)>>,
}

impl Timers {
    /// Timers for `sessions` sessions.
    pub fn new(sessions: usize) -> Self {
        Timers { want: vec![[None; KINDS]; sessions], queued: vec![[None; KINDS]; sessions], heap: BinaryHeap::new() }
    }

    /// Set `kind` of session `sid` to fire at `at`.
    pub fn arm(&mut self, sid: u32, kind: TimerKind, at: Instant) {
        let (s, k) = (sid as usize, kind as usize);
        self.want[s][k] = Some(at);
        if self.queued[s][k].is_none_or(|q| at < q) {
            self.queued[s][k] = Some(at);
            self.heap.push(Reverse((at, sid, k as u8)));
        }
    }

    /// Timers armed (over every session and kind) and entries in the heap: a session that
    /// ended leaves neither (the heap's stale entries go as they come due).
    pub fn armed(&self) -> (usize, usize) {
        (self.want.iter().flatten().filter(|w| w.is_some()).count(), self.heap.len())
    }

    /// Arm `kind` unless it is already armed.
    pub fn arm_if_idle(&mut self, sid: u32, kind: TimerKind, at: Instant) {
        if self.want[sid as usize][kind as usize].is_none() {
            self.arm(sid, kind, at);
        }
    }

    /// Stop `kind` of session `sid`.
    pub fn cancel(&mut self, sid: u32, kind: TimerKind) {
        self.want[sid as usize][kind as usize] = None;
    }

    /// Stop every timer of a session (it is being freed).
    pub fn cancel_all(&mut self, sid: u32) {
        self.want[sid as usize] = [None; KINDS];
    }

    /// The deadline of `kind`, if armed.
    pub fn deadline(&self, sid: u32, kind: TimerKind) -> Option<Instant> {
        self.want[sid as usize][kind as usize]
    }

    /// Earliest heap entry (a lower bound on the next firing).
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Pop one timer due at `now`: (session, kind). Disarms it before returning.
    pub fn pop_due(&mut self, now: Instant) -> Option<(u32, TimerKind)> {
        while let Some(&Reverse((t, sid, k))) = self.heap.peek() {
            if t > now {
                return None;
            }
            self.heap.pop();
            let (s, ku) = (sid as usize, k as usize);
            if self.queued[s][ku] != Some(t) {
                continue;
            }
            self.queued[s][ku] = None;
            match self.want[s][ku] {
                None => continue,
                Some(w) if w > now => {
                    self.queued[s][ku] = Some(w);
                    self.heap.push(Reverse((w, sid, k)));
                }
                Some(_) => {
                    self.want[s][ku] = None;
                    return Some((sid, KIND_OF[ku]));
                }
            }
        }
        None
    }
}

const KIND_OF: [TimerKind; KINDS] = [
    TimerKind::Retransmit,
    TimerKind::DelayedAck,
    TimerKind::Persist,
    TimerKind::Keepalive,
    TimerKind::Linger,
    TimerKind::Reorder,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rearming_later_and_cancelling() {
        let mut t = Timers::new(4);
        t.arm(1, TimerKind::Retransmit, Instant::from_millis(10));
        t.arm(1, TimerKind::Retransmit, Instant::from_millis(30));
        t.arm(2, TimerKind::DelayedAck, Instant::from_millis(20));
        t.arm(3, TimerKind::Persist, Instant::from_millis(5));
        t.cancel(3, TimerKind::Persist);
        assert_eq!(t.pop_due(Instant::from_millis(15)), None);
        assert_eq!(t.pop_due(Instant::from_millis(25)), Some((2, TimerKind::DelayedAck)));
        assert_eq!(t.pop_due(Instant::from_millis(25)), None);
        assert_eq!(t.pop_due(Instant::from_millis(30)), Some((1, TimerKind::Retransmit)));
        assert_eq!(t.deadline(1, TimerKind::Retransmit), None);
        t.arm(1, TimerKind::Retransmit, Instant::from_millis(40));
        t.arm(1, TimerKind::Retransmit, Instant::from_millis(35));
        assert_eq!(t.pop_due(Instant::from_millis(36)), Some((1, TimerKind::Retransmit)));
        assert_eq!(t.pop_due(Instant::from_millis(100)), None);
    }
}
