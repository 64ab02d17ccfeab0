//! The sender's SACK scoreboard (RFC 6675): which bytes above `snd_una` the peer has
//! reported, which holes count as lost, and what to retransmit next.

/// SACKed ranges above the cumulative ACK, sorted and disjoint (absolute sequence numbers).
#[derive(Debug, Default, Clone)]
pub struct Scoreboard {
    ranges: Vec<(u32, u32)>,
    /// Bytes covered by `ranges`.
    pub sacked: u32,
}

use super::seq::{dist, gt, le, lt, max, Seq};

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

    /// Apply a cumulative ACK and the SACK blocks of one segment. Blocks outside
    /// `(snd_una, snd_max]` are ignored (D-SACK and bogus blocks).
    pub fn update(&mut self, snd_una: impl Into<Seq>, snd_max: impl Into<Seq>, blocks: &[Option<(u32, u32)>]) {
        let snd_una: u32 = snd_una.into().0;
        let snd_max: u32 = snd_max.into().0;
        for &(s, e) in blocks.iter().flatten() {
            if !lt(s, e) || le(e, snd_una) || gt(e, snd_max) {
                continue;
            }
            self.insert(max(s, snd_una), e);
        }
        self.trim(snd_una);
    }

    fn insert(&mut self, s: u32, e: u32) {
        let i = self.ranges.partition_point(|r| lt(r.1, s));
        let j = i + self.ranges[i..].partition_point(|r| le(r.0, e));
        if i == j {
            if self.ranges.len() < MAX_RANGES {
                self.ranges.insert(i, (s, e));
            }
        } else {
            let ns = if lt(s, self.ranges[i].0) { s } else { self.ranges[i].0 };
            let ne = if gt(e, self.ranges[j - 1].1) { e } else { self.ranges[j - 1].1 };
            self.ranges.drain(i + 1..j);
            self.ranges[i] = (ns, ne);
        }
        self.recount();
    }

    fn trim(&mut self, snd_una: u32) {
        self.ranges.retain_mut(|r| {
            if le(r.1, snd_una) {
                return false;
            }
            if lt(r.0, snd_una) {
                r.0 = snd_una;
            }
            true
        });
        self.recount();
    }

    fn recount(&mut self) {
        self.sacked = self.ranges.iter().map(|r| dist(r.0, r.1)).sum();
    }

    /// Highest SACKed sequence number (end of the last block).
    pub fn high(&self) -> Option<Seq> {
        self.ranges.last().map(|r| Seq(r.1))
    }

    /// The SACKed ranges, sorted.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    /// The start of the first SACKed range beginning after `seq`, if any.
    pub fn next_sacked_start(&self, seq: impl Into<Seq>) -> Option<Seq> {
        let seq: u32 = seq.into().0;
        let i = self.ranges.partition_point(|r| le(r.0, seq));
        self.ranges.get(i).map(|r| Seq(r.0))
    }

    /// The end of the SACKed range that covers `seq`, if one does.
    pub fn sacked_run_end(&self, seq: impl Into<Seq>) -> Option<Seq> {
        let seq: u32 = seq.into().0;
        let i = self.ranges.partition_point(|r| le(r.1, seq));
        self.ranges.get(i).filter(|r| le(r.0, seq)).map(|r| Seq(r.1))
    }

    /// The parts of the current ranges that `before` (an earlier copy of them) did not cover:
    /// what one ACK newly SACKed.
    pub fn newly_sacked(&self, before: &[(u32, u32)]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        if self.ranges.is_empty() || self.ranges == before {
            return out;
        }
        for &(s, e) in &self.ranges {
            let mut cur = s;
            for &(bs, be) in before {
                if le(be, cur) || le(e, bs) {
                    continue;
                }
                if lt(cur, bs) {
                    out.push((cur, bs));
                }
                cur = max(cur, be);
                if !lt(cur, e) {
                    break;
                }
            }
            if lt(cur, e) {
                out.push((cur, e));
            }
        }
        out
    }

    #[cfg(test)]
    /// True if `seq` is covered by a SACK block.
    pub fn is_sacked(&self, seq: impl Into<Seq>) -> bool {
        let seq: u32 = seq.into().0;
        self.sacked_run_end(seq).is_some()
    }

    #[cfg(test)]
    /// RFC 6675 IsLost: at least `dup_thresh` discontiguous blocks or `dup_thresh * mss` bytes
    /// are SACKed above `seq`.
    pub fn is_lost(&self, seq: impl Into<Seq>, mss: u32, dup_thresh: u32) -> bool {
        let seq: u32 = seq.into().0;
        let above: Vec<_> = self.ranges.iter().filter(|r| gt(r.1, seq)).collect();
        let bytes: u32 = above.iter().map(|r| dist(max(r.0, seq), r.1)).sum();
        above.len() as u32 >= dup_thresh || bytes >= dup_thresh * mss
    }

    #[cfg(test)]
    /// The first un-SACKed, lost range at or after `from` and below the highest SACK, at most
    /// `mss` bytes: what to retransmit next.
    pub fn next_hole(&self, from: impl Into<Seq>, mss: u32, dup_thresh: u32) -> Option<(u32, u32)> {
        let from: u32 = from.into().0;
        let mut seq = from;
        for r in &self.ranges {
            if lt(seq, r.0) {
                if !self.is_lost(seq, mss, dup_thresh) {
                    return None;
                }
                let end = if lt(Seq(seq) + mss, r.0) { (Seq(seq) + mss).0 } else { r.0 };
                return Some((seq, end));
            }
            if lt(seq, r.1) {
                seq = r.1;
            }
        }
        None
    }

    #[cfg(test)]
    /// Bytes in `[from, to)` not covered by SACK blocks.
    pub fn unsacked_between(&self, from: impl Into<Seq>, to: impl Into<Seq>) -> u32 {
        let from: u32 = from.into().0;
        let to: u32 = to.into().0;
        let total = dist(from, to);
        let covered: u32 = self
            .ranges
            .iter()
            .map(|r| {
                let s = max(r.0, from);
                let e = if lt(r.1, to) { r.1 } else { to };
                if lt(s, e) {
                    dist(s, e)
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
        assert_eq!(sb.next_hole(1000, 100, 3), Some((1000, 1100)));
        assert_eq!(sb.next_hole(1100, 100, 3), Some((1300, 1400)));
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
        assert_eq!(sb.newly_sacked(&before), vec![(1100, 1200), (1400, 1600), (1800, 2000)]);
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
