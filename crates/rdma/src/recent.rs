//! Recently completed ops: a bounded, time-limited memory of (source, op id) pairs the
//! receiver has already posted. A late duplicate of such an op (a retransmission whose
//! ACK was lost, a duplicated Notify, a duplicated registration packet) is recognised,
//! ACKed again and counted instead of registering or posting the op a second time.
//!
//! The paper's hardware relies on the escape-channel timeout for this (3.3, case i); with
//! a registration packet that can itself be duplicated, software needs the memory to
//! guarantee exactly-once completion. Entries live `linger` (longer than a sender keeps
//! retrying); when the table is full the oldest is evicted early and counted.

use crate::peer::Peer;
use link::Instant;
use std::collections::{HashSet, VecDeque};
use std::time::Duration;

/// The memory of completed ops.
pub struct Recent {
    set: HashSet<(Peer, u64)>,
    order: VecDeque<(Instant, Peer, u64)>,
    capacity: usize,
    linger: Duration,
}

impl Recent {
    /// Remember up to `capacity` ops for `linger` each.
    pub fn new(capacity: usize, linger: Duration) -> Self {
        let capacity = capacity.max(1);
        Recent { set: HashSet::with_capacity(capacity), order: VecDeque::with_capacity(capacity), capacity, linger }
    }

    /// True if (peer, op) completed recently.
    pub fn contains(&self, peer: Peer, op_id: u64) -> bool {
        self.set.contains(&(peer, op_id))
    }

    /// Remember (peer, op) as completed at `now`; returns true if an older entry had to be
    /// evicted before its time to make room.
    pub fn insert(&mut self, peer: Peer, op_id: u64, now: Instant) -> bool {
        self.expire(now);
        if !self.set.insert((peer, op_id)) {
            return false;
        }
        let mut evicted = false;
        if self.order.len() == self.capacity {
            if let Some((_, p, o)) = self.order.pop_front() {
                self.set.remove(&(p, o));
                evicted = true;
            }
        }
        self.order.push_back((now + self.linger, peer, op_id));
        evicted
    }

    /// Forget entries older than `linger`.
    pub fn expire(&mut self, now: Instant) {
        while let Some(&(t, p, o)) = self.order.front() {
            if t > now {
                break;
            }
            self.order.pop_front();
            self.set.remove(&(p, o));
        }
    }

    /// Ops remembered.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when nothing is remembered.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::MacAddr;

    #[test]
    fn remembers_for_linger_and_evicts_oldest() {
        let p = Peer::Eth(MacAddr([2, 0, 0, 0, 0, 1]));
        let mut r = Recent::new(2, Duration::from_millis(10));
        assert!(!r.insert(p, 1, Instant::ZERO));
        assert!(!r.insert(p, 1, Instant::ZERO), "re-inserting is a no-op");
        assert!(!r.insert(p, 2, Instant::from_millis(1)));
        assert!(r.insert(p, 3, Instant::from_millis(2)), "full: oldest evicted");
        assert!(!r.contains(p, 1) && r.contains(p, 2) && r.contains(p, 3));
        r.expire(Instant::from_millis(11));
        assert!(!r.contains(p, 2) && r.contains(p, 3));
        r.expire(Instant::from_millis(12));
        assert!(r.is_empty());
    }
}
