//! The sender's SACK scoreboard (RFC 6675): which bytes above `snd_una` the peer has
//! reported, which holes count as lost, and what to retransmit next.

use super::seq::{max, Seq, SeqRange};

/// SACKed ranges above the cumulative ACK, sorted and disjoint.
#[derive(Debug, Default, Clone)]
pub struct Scoreboard {
    ranges: Vec<SeqRange>,
    /// Bytes covered by `ranges`.
    pub sacked: u32,
}

/// Most ranges tracked (8 KiB at most, allocated as needed); further blocks are ignored. A
/// 10,000-segment window with 5% of it reordered leaves about 500 holes at the receiver.
const MAX_RANGES: usize = 1024;

impl Scoreboard {
    /// Forget everything (after an RTO or when all is acknowledged).
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.sacked = 0;
    }

    /// True if nothing is SACKed.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Apply a cumulative ACK and the SACK blocks of one segment (as they came on the wire).
    /// Blocks outside `(snd_una, snd_max]` are ignored (D-SACK and bogus blocks).
    pub fn update(&mut self, snd_una: impl Into<Seq>, snd_max: impl Into<Seq>, blocks: &[Option<(u32, u32)>]) {
        let snd_una: Seq = snd_una.into();
        let snd_max: Seq = snd_max.into();
        for b in blocks.iter().flatten() {
            let SeqRange { start, end } = SeqRange::from(*b);
            if start >= end || end <= snd_una || end > snd_max {
                continue;
            }
            self.insert(SeqRange { start: max(start, snd_una), end });
        }
        self.trim(snd_una);
    }

    fn insert(&mut self, new: SeqRange) {
        let i = self.ranges.partition_point(|r| r.end < new.start);
        let j = i + self.ranges[i..].partition_point(|r| r.start <= new.end);
        if i == j {
            if self.ranges.len() < MAX_RANGES {
                self.ranges.insert(i, new);
            }
        } else {
            let start = if new.start < self.ranges[i].start { new.start } else { self.ranges[i].start };
            let end = if new.end > self.ranges[j - 1].end { new.end } else { self.ranges[j - 1].end };
            self.ranges.drain(i + 1..j);
            self.ranges[i] = SeqRange { start, end };
        }
        self.recount();
    }

    fn trim(&mut self, snd_una: Seq) {
        self.ranges.retain_mut(|r| {
            if r.end <= snd_una {
                return false;
            }
            if r.start < snd_una {
                r.start = snd_una;
            }
            true
        });
        self.recount();
    }

    fn recount(&mut self) {
        self.sacked = self.ranges.iter().map(|r| r.len()).sum();
    }

    /// Highest SACKed sequence number (end of the last block).
    pub fn high(&self) -> Option<Seq> {
        self.ranges.last().map(|r| r.end)
    }

    /// The SACKed ranges, sorted.
    pub fn ranges(&self) -> &[SeqRange] {
        &self.ranges
    }

    /// The start of the first SACKed range beginning after `seq`, if any.
    pub fn next_sacked_start(&self, seq: impl Into<Seq>) -> Option<Seq> {
        let seq: Seq = seq.into();
        let i = self.ranges.partition_point(|r| r.start <= seq);
        self.ranges.get(i).map(|r| r.start)
    }

    /// The end of the SACKed range that covers `seq`, if one does.
    pub fn sacked_run_end(&self, seq: impl Into<Seq>) -> Option<Seq> {
        let seq: Seq = seq.into();
        let i = self.ranges.partition_point(|r| r.end <= seq);
        self.ranges.get(i).filter(|r| r.start <= seq).map(|r| r.end)
    }

    /// The parts of the current ranges that `before` (an earlier copy of them) did not cover:
    /// what one ACK newly SACKed.
    pub fn newly_sacked(&self, before: &[SeqRange]) -> Vec<SeqRange> {
        let mut out = Vec::new();
        if self.ranges.is_empty() || self.ranges == before {
            return out;
        }
        for r in &self.ranges {
            let mut cur = r.start;
            for b in before {
                if b.end <= cur || r.end <= b.start {
                    continue;
                }
                if cur < b.start {
                    out.push(SeqRange { start: cur, end: b.start });
                }
                cur = max(cur, b.end);
                if cur >= r.end {
                    break;
                }
            }
            if cur < r.end {
                out.push(SeqRange { start: cur, end: r.end });
            }
        }
        out
    }

    #[cfg(test)]
    /// True if `seq` is covered by a SACK block.
    pub fn is_sacked(&self, seq: impl Into<Seq>) -> bool {
        self.sacked_run_end(seq).is_some()
    }

    #[cfg(test)]
    /// RFC 6675 IsLost: at least `dup_thresh` discontiguous blocks or `dup_thresh * mss` bytes
    /// are SACKed above `seq`.
    pub fn is_lost(&self, seq: impl Into<Seq>, mss: u32, dup_thresh: u32) -> bool {
        let seq: Seq = seq.into();
        let above: Vec<_> = self.ranges.iter().filter(|r| r.end > seq).collect();
        let bytes: u32 = above.iter().map(|r| SeqRange::new(max(r.start, seq), r.end).len()).sum();
        above.len() as u32 >= dup_thresh || bytes >= dup_thresh * mss
    }

    #[cfg(test)]
    /// The first un-SACKed, lost range at or after `from` and below the highest SACK, at most
    /// `mss` bytes: what to retransmit next.
    pub fn next_hole(&self, from: impl Into<Seq>, mss: u32, dup_thresh: u32) -> Option<SeqRange> {
        let mut seq: Seq = from.into();
        for r in &self.ranges {
            if seq < r.start {
                if !self.is_lost(seq, mss, dup_thresh) {
                    return None;
                }
                let end = if seq + mss < r.start { seq + mss } else { r.start };
                return Some(SeqRange { start: seq, end });
            }
            if seq < r.end {
                seq = r.end;
            }
        }
        None
    }

    #[cfg(test)]
    /// Bytes in `[from, to)` not covered by SACK blocks.
    pub fn unsacked_between(&self, from: impl Into<Seq>, to: impl Into<Seq>) -> u32 {
        let (from, to): (Seq, Seq) = (from.into(), to.into());
        let total = SeqRange::new(from, to).len();
        let covered: u32 = self
            .ranges
            .iter()
            .map(|r| {
                let s = max(r.start, from);
                let e = if r.end < to { r.end } else { to };
                if s < e {
                    SeqRange::new(s, e).len()
                } else {
                    0
                }
            })
            .sum();
        total.saturating_sub(covered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_blocks_and_finds_holes() {
        let mut sb = Scoreboard::default();
        // Segments of 100 bytes from 1000; 1000..1100 and 1300..1400 lost.
        sb.update(1000, 2000, &[Some((1100, 1300))]);
        sb.update(1000, 2000, &[Some((1400, 1700)), Some((1100, 1300))]);
        assert_eq!(sb.sacked, 500);
        assert!(sb.is_sacked(1150) && !sb.is_sacked(1300));
        assert_eq!(sb.next_hole(1000, 100, 3), Some(SeqRange::new(1000, 1100)));
        assert_eq!(sb.next_hole(1100, 100, 3), Some(SeqRange::new(1300, 1400)));
        assert_eq!(sb.next_hole(1400, 100, 3), None);
        assert_eq!(sb.unsacked_between(1000, 2000), 500);
        sb.update(1300, 2000, &[]);
        assert_eq!(sb.sacked, 300);
        sb.update(1700, 2000, &[]);
        assert!(sb.is_empty());
    }

    #[test]
    fn newly_sacked_is_the_difference() {
        let mut sb = Scoreboard::default();
        sb.update(1000, 3000, &[Some((1200, 1400)), Some((1600, 1800))]);
        let before = sb.ranges().to_vec();
        sb.update(1000, 3000, &[Some((1100, 2000))]);
        assert_eq!(
            sb.newly_sacked(&before),
            vec![SeqRange::new(1100, 1200), SeqRange::new(1400, 1600), SeqRange::new(1800, 2000)]
        );
        assert_eq!(sb.sacked_run_end(1500), Some(Seq(2000)));
        assert_eq!(sb.sacked_run_end(1000), None);
    }

    #[test]
    fn ignores_bogus_blocks() {
        let mut sb = Scoreboard::default();
        sb.update(1000, 2000, &[Some((500, 900)), Some((1900, 2500)), Some((1500, 1400))]);
        assert!(sb.is_empty());
    }
}
