//! The escape channel (paper 3.2-3.3): verified packets of registered ops that arrived
//! before their op's registration packet wait here, in preallocated slots, until the
//! registration arrives (then they are applied) or their timer fires (then they are dropped
//! and counted; the sender has no ACK for them and retransmits).

use crate::peer::Peer;
use link::Instant;

#[derive(Debug, Clone, Copy)]
struct Meta {
    peer: Peer,
    op_id: u64,
    key: u32,
    len: usize,
    deadline: Instant,
}

/// A bounded set of parked packets.
pub struct Escape {
    data: Box<[u8]>,
    slot_size: usize,
    meta: Vec<Option<Meta>>,
    used: usize,
}

impl Escape {
    /// `capacity` slots of `slot_size` bytes (a whole packet each).
    pub fn new(capacity: usize, slot_size: usize) -> Self {
        let capacity = capacity.max(1);
        Escape {
            data: vec![0u8; capacity * slot_size].into_boxed_slice(),
            slot_size,
            meta: vec![None; capacity],
            used: 0,
        }
    }

    /// Packets parked.
    pub fn len(&self) -> usize {
        self.used
    }

    /// True when nothing is parked.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Park `packet` of (peer, op) for region `key` until `deadline`; false when full or the
    /// packet is larger than a slot.
    pub fn park(&mut self, peer: Peer, op_id: u64, key: u32, packet: &[u8], deadline: Instant) -> bool {
        if packet.len() > self.slot_size {
            return false;
        }
        let Some(i) = self.meta.iter().position(Option::is_none) else {
            return false;
        };
        self.data[i * self.slot_size..i * self.slot_size + packet.len()].copy_from_slice(packet);
        self.meta[i] = Some(Meta { peer, op_id, key, len: packet.len(), deadline });
        self.used += 1;
        true
    }

    /// Remove one parked packet of (peer, op), copying it into `out`; false when none is left.
    pub fn take(&mut self, peer: Peer, op_id: u64, out: &mut Vec<u8>) -> bool {
        let found = self.meta.iter().position(|m| m.is_some_and(|m| m.peer == peer && m.op_id == op_id));
        match found {
            Some(i) => {
                let len = self.meta[i].map_or(0, |m| m.len);
                out.clear();
                out.extend_from_slice(&self.data[i * self.slot_size..i * self.slot_size + len]);
                self.meta[i] = None;
                self.used -= 1;
                true
            }
            None => false,
        }
    }

    /// Drop every packet whose timer has fired; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        self.drop_where(|_, _, _, deadline| deadline <= now)
    }

    /// Drop every packet matching `pred(peer, op id, key, deadline)`; returns how many.
    pub fn drop_where(&mut self, mut pred: impl FnMut(Peer, u64, u32, Instant) -> bool) -> usize {
        if self.used == 0 {
            return 0;
        }
        let mut n = 0;
        for m in self.meta.iter_mut() {
            if m.is_some_and(|x| pred(x.peer, x.op_id, x.key, x.deadline)) {
                *m = None;
                n += 1;
            }
        }
        self.used -= n;
        n
    }

    /// Earliest timer, if anything is parked.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.meta.iter().flatten().map(|m| m.deadline).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::MacAddr;

    #[test]
    fn park_take_expire_and_full() {
        let p = Peer::Eth(MacAddr([2, 0, 0, 0, 0, 1]));
        let q = Peer::Eth(MacAddr([2, 0, 0, 0, 0, 2]));
        let mut e = Escape::new(3, 8);
        assert!(e.park(p, 1, 7, b"one", Instant::from_millis(1)));
        assert!(e.park(q, 1, 7, b"other", Instant::from_millis(1)));
        assert!(e.park(p, 2, 7, b"two", Instant::from_millis(5)));
        assert!(!e.park(p, 3, 7, b"x", Instant::from_millis(5)), "full");
        assert_eq!(e.next_deadline(), Some(Instant::from_millis(1)));
        let mut out = Vec::new();
        assert!(e.take(p, 1, &mut out));
        assert_eq!(out, b"one");
        assert!(!e.take(p, 1, &mut out));
        assert!(!e.park(p, 4, 7, b"too long!", Instant::ZERO));
        assert_eq!(e.expire(Instant::from_millis(1)), 1);
        assert_eq!(e.len(), 1);
        assert!(e.park(q, 9, 8, b"k8", Instant::from_millis(9)));
        assert_eq!(e.drop_where(|_, _, key, _| key == 5), 0);
        assert!(e.take(p, 2, &mut out));
        assert_eq!(out, b"two");
        assert_eq!(e.drop_where(|peer, op, _, _| peer == q && op == 9), 1);
        assert!(e.is_empty());
        assert_eq!(e.next_deadline(), None);
    }
}
