//! Out-of-order reassembly bookkeeping: which byte ranges beyond the next expected byte have
//! arrived (the data itself sits in the receive ring), and the SACK blocks that describe them.

use super::seq::{Seq, SeqRange};

/// Most separate out-of-order ranges kept (8 KiB of bookkeeping at most, allocated as
/// needed); out-of-order segments that would need more are dropped. A 10,000-segment window
/// with 5% of it reordered holds about 500 holes.
pub const MAX_RANGES: usize = 1024;

/// Bytes `[start, end)` held beyond the next expected byte, as offsets from it (so they
/// never wrap: the window is below 2^30).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

/// Received ranges as offsets from the next expected byte, sorted and disjoint.
#[derive(Debug, Default, Clone)]
pub struct Assembler {
    ranges: Vec<Span>,
    /// Index of the range touched last (reported first in SACK, RFC 2018).
    recent: Option<usize>,
}

impl Assembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Assembler { ranges: Vec::new(), recent: None }
    }

    /// True if no out-of-order data is held.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Record `[start, end)`; returns false if it needs a new range and none is left.
    pub fn add(&mut self, start: u32, end: u32) -> bool {
        if start >= end {
            return true;
        }
        let i = self.ranges.partition_point(|r| r.end < start);
        let j = i + self.ranges[i..].partition_point(|r| r.start <= end);
        if i == j {
            if self.ranges.len() >= MAX_RANGES {
                return false;
            }
            self.ranges.insert(i, Span { start, end });
        } else {
            let s = start.min(self.ranges[i].start);
            let e = end.max(self.ranges[j - 1].end);
            self.ranges.drain(i + 1..j);
            self.ranges[i] = Span { start: s, end: e };
        }
        self.recent = Some(i);
        true
    }

    /// True if `[start, end)` is already held in full (a duplicate segment).
    pub fn covers(&self, start: u32, end: u32) -> bool {
        let i = self.ranges.partition_point(|r| r.end < end);
        self.ranges.get(i).is_some_and(|r| r.start <= start && end <= r.end)
    }

    /// If data now starts at offset 0, remove that range and return its length.
    pub fn take_front(&mut self) -> u32 {
        match self.ranges.first() {
            Some(&Span { start: 0, end }) => {
                self.ranges.remove(0);
                self.recent = None;
                self.shift(end);
                end
            }
            _ => 0,
        }
    }

    /// The expected byte moved forward by `n`: rebase all ranges.
    pub fn shift(&mut self, n: u32) {
        self.ranges.retain_mut(|r| {
            r.start = r.start.saturating_sub(n);
            r.end = r.end.saturating_sub(n);
            r.end > r.start
        });
        if self.recent.is_some_and(|i| i >= self.ranges.len()) {
            self.recent = None;
        }
    }

    /// Up to `max` SACK blocks as sequence-number ranges, most recent first.
    pub fn sack_blocks(&self, rcv_nxt: Seq, max: usize) -> [Option<SeqRange>; 4] {
        let mut out = [None; 4];
        let mut n = 0;
        let abs = |r: &Span| SeqRange { start: rcv_nxt + r.start, end: rcv_nxt + r.end };
        if let Some(i) = self.recent {
            out[0] = Some(abs(&self.ranges[i]));
            n = 1;
        }
        for (k, r) in self.ranges.iter().enumerate().rev() {
            if n >= max.min(4) {
                break;
            }
            if Some(k) != self.recent {
                out[n] = Some(abs(r));
                n += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_releases_in_order() {
        let mut a = Assembler::new();
        assert!(a.add(10, 20));
        assert!(a.add(30, 40));
        assert!(a.add(20, 30));
        assert_eq!(a.ranges, vec![Span { start: 10, end: 40 }]);
        assert_eq!(a.take_front(), 0);
        assert!(a.add(0, 10));
        assert_eq!(a.take_front(), 40);
        assert!(a.is_empty());
    }

    #[test]
    fn sack_blocks_put_the_latest_first() {
        let mut a = Assembler::new();
        a.add(10, 20);
        a.add(30, 40);
        a.add(50, 60);
        a.add(32, 35);
        let b = a.sack_blocks(Seq(1000), 3);
        assert_eq!(b[0], Some(SeqRange::new(1030, 1040)));
        assert_eq!(b[1], Some(SeqRange::new(1050, 1060)));
        assert_eq!(b[2], Some(SeqRange::new(1010, 1020)));
        a.shift(15);
        let span = |start, end| Span { start, end };
        assert_eq!(a.ranges, vec![span(0, 5), span(15, 25), span(35, 45)]);
    }

    #[test]
    fn range_limit_is_reported() {
        let mut a = Assembler::new();
        for i in 0..MAX_RANGES as u32 {
            assert!(a.add(i * 10 + 1, i * 10 + 2));
        }
        assert!(!a.add(100_000, 100_001));
        assert!(a.add(1, 2), "an existing range can still grow");
    }
}
