//! RACK loss detection (RFC 8985 section 6): a segment is lost when a segment sent after it
//! has been delivered and more than one RTT plus a reordering window has passed since it was
//! sent. Time, not counts of duplicate ACKs, decides, so reordering within the window costs
//! nothing, several holes are found in one round trip, and a lost retransmission is found
//! without waiting for the retransmission timeout.
//!
//! The sender keeps one record per data segment in flight, in sequence order: its range,
//! when it was last sent, whether it was retransmitted and whether it is marked lost (and not
//! yet sent again). SACKed records stay (the scoreboard says which); the walks jump over
//! SACKed runs with the scoreboard's ranges, so an ACK costs the holes, not the window.

use super::clock::ts_clock;
use super::sack::Scoreboard;
use super::seq::{dist, gt, le, lt, Seq, SeqRange};
use link::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// One data segment in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentSeg {
    /// First sequence number.
    pub start: u32,
    /// Sequence number after the last byte.
    pub end: u32,
    /// When it was last sent (its TSval is `ts_clock(xmit)`).
    pub xmit: Instant,
    /// Sent more than once.
    pub retx: bool,
    /// Marked lost and not sent again since.
    pub lost: bool,
}

/// Highest multiple of min_RTT/4 the reordering window grows to (RFC 8985 6.2 step 4).
const MAX_REO_WND_MULT: u32 = 64;
/// Recoveries the widened reordering window survives without new D-SACKs.
const REO_WND_PERSIST: u32 = 16;

/// RACK state of one connection.
#[derive(Debug, Clone, Default)]
pub struct Rack {
    segs: VecDeque<SentSeg>,
    /// Send time of the most recently sent segment among those delivered (RACK.xmit_ts).
    xmit: Option<Instant>,
    /// End of that segment (RACK.end_seq), to order segments sent at the same instant.
    end_seq: u32,
    /// RTT of that segment (RACK.rtt).
    rtt: Duration,
    /// Highest sequence number delivered (RACK.fack).
    fack: u32,
    /// Smallest RTT seen.
    min_rtt: Option<Duration>,
    /// A segment was delivered after one sent later than it (RACK.reordering_seen).
    pub reordering_seen: bool,
    reo_wnd_mult: u32,
    reo_wnd_persist: u32,
    /// D-SACKs until SND.UNA passes this point count as one round (RACK.dsack_round).
    dsack_round: Option<u32>,
    /// Bytes marked lost and not sent again: they are not in the network (pipe).
    pub lost_bytes: u32,
}

/// What loss detection found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Detection {
    /// Segments newly marked lost.
    pub newly_lost: u32,
    /// Run detection again after this long (the reordering timer), if some segment may
    /// still turn out lost.
    pub timeout: Option<Duration>,
}

impl Rack {
    #[cfg(test)]
    /// True if no data segment is in flight.
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// The reordering window (RFC 8985 6.2 step 4).
    pub fn reo_wnd(&self, in_recovery: bool, sacked_segs: u32, dup_thresh: u32, srtt: Option<Duration>) -> Duration {
        if !self.reordering_seen && (in_recovery || sacked_segs >= dup_thresh) {
            return Duration::ZERO;
        }
        let min_rtt = self.min_rtt.unwrap_or_default();
        let wnd = min_rtt / 4 * self.reo_wnd_mult.max(1);
        srtt.map_or(wnd, |s| wnd.min(s))
    }

    /// `[start, end)` was sent now; `retransmission` if any of it was sent before.
    pub fn on_send(&mut self, start: impl Into<Seq>, end: impl Into<Seq>, now: Instant) {
        let start: u32 = start.into().0;
        let end: u32 = end.into().0;
        if !lt(start, end) {
            return;
        }
        let tail = self.segs.back().map(|s| s.end);
        // The part below the last record's end was sent before: mark those records.
        if let Some(tail) = tail.filter(|&t| lt(start, t)) {
            let mut i = self.index_of(start);
            while i < self.segs.len() && lt(self.segs[i].start, end) {
                let s = &mut self.segs[i];
                if s.lost {
                    s.lost = false;
                    self.lost_bytes = self.lost_bytes.saturating_sub(dist(s.start, s.end));
                }
                s.retx = true;
                s.xmit = now;
                i += 1;
            }
            if le(end, tail) {
                return;
            }
            self.segs.push_back(SentSeg { start: tail, end, xmit: now, retx: false, lost: false });
            return;
        }
        let start = tail.unwrap_or(start);
        self.segs.push_back(SentSeg { start, end, xmit: now, retx: false, lost: false });
    }

    /// Index of the first record ending after `seq`.
    fn index_of(&self, seq: u32) -> usize {
        self.segs.partition_point(|s| le(s.end, seq))
    }

    /// Index of the first record starting at or after `seq`.
    fn index_from(&self, seq: u32) -> usize {
        self.segs.partition_point(|s| lt(s.start, seq))
    }

    /// An ACK moved SND.UNA to `una`, SACKed the ranges `newly_sacked`, and echoed `ecr`
    /// (if timestamps are on): update RACK from every segment it delivered (RFC 8985 6.2
    /// steps 1–3).
    pub fn on_ack(&mut self, una: impl Into<Seq>, newly_sacked: &[SeqRange], ecr: Option<u32>, now: Instant) {
        let una: u32 = una.into().0;
        // Records never retransmitted are in send order: of those the ACK releases, only the
        // first (was it delivered after something sent later?) and the last (the newest)
        // matter to RACK; retransmitted ones each count.
        let (mut first_plain, mut last_plain) = (None, None);
        while let Some(front) = self.segs.front().copied() {
            let seg = if gt(front.end, una) {
                if !lt(front.start, una) {
                    break;
                }
                let f = self.segs.front_mut().expect("front exists");
                if f.lost {
                    self.lost_bytes = self.lost_bytes.saturating_sub(dist(f.start, una));
                }
                f.start = una;
                front
            } else {
                self.segs.pop_front();
                if front.lost {
                    self.lost_bytes = self.lost_bytes.saturating_sub(dist(front.start, front.end));
                }
                front
            };
            if seg.retx {
                self.delivered(seg, ecr, now);
            } else {
                first_plain.get_or_insert(seg);
                last_plain = Some(seg);
            }
            if gt(front.end, una) {
                break;
            }
        }
        if let Some(first) = first_plain {
            if lt(first.end, self.fack) {
                self.reordering_seen = true;
            }
        }
        if let Some(last) = last_plain {
            self.delivered(last, ecr, now);
        }
        for &SeqRange { start: s, end: e } in newly_sacked {
            let mut i = self.index_from(s.0);
            while i < self.segs.len() && le(self.segs[i].end, e) {
                let seg = self.segs[i];
                if seg.lost {
                    self.segs[i].lost = false;
                    self.lost_bytes = self.lost_bytes.saturating_sub(dist(seg.start, seg.end));
                }
                self.delivered(seg, ecr, now);
                i += 1;
            }
        }
    }

    /// RFC 8985 6.2 steps 2–3 for one delivered segment.
    fn delivered(&mut self, seg: SentSeg, ecr: Option<u32>, now: Instant) {
        let rtt = now - seg.xmit;
        if seg.retx {
            // Was this ACK for the retransmission or the original? Skip it when unsure.
            let for_original = ecr.is_some_and(|e| lt(e, ts_clock(seg.xmit)));
            if for_original || self.min_rtt.is_some_and(|m| rtt < m) {
                return;
            }
        } else {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if !seg.retx && lt(seg.end, self.fack) {
            self.reordering_seen = true;
        }
        if gt(seg.end, self.fack) {
            self.fack = seg.end;
        }
        let newer = match self.xmit {
            None => true,
            Some(t) => seg.xmit > t || (seg.xmit == t && gt(seg.end, self.end_seq)),
        };
        if newer {
            self.xmit = Some(seg.xmit);
            self.end_seq = seg.end;
            self.rtt = rtt;
        }
    }

    /// A D-SACK arrived with SND.UNA at `una` and SND.NXT at `nxt`: widen the reordering
    /// window, once per round trip (RFC 8985 6.2 step 4).
    pub fn on_dsack(&mut self, una: impl Into<Seq>, nxt: impl Into<Seq>) {
        let una: u32 = una.into().0;
        let nxt: u32 = nxt.into().0;
        if self.dsack_round.is_some_and(|r| le(r, una)) {
            self.dsack_round = None;
        }
        if self.dsack_round.is_none() {
            self.dsack_round = Some(nxt);
            self.reo_wnd_mult = (self.reo_wnd_mult.max(1) + 1).min(MAX_REO_WND_MULT);
            self.reo_wnd_persist = REO_WND_PERSIST;
        }
    }

    /// A recovery ended: a widened window narrows again after enough of them without D-SACKs.
    pub fn on_recovery_end(&mut self) {
        if self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
    }

    /// Mark as lost every segment sent before the most recently delivered one and sent more
    /// than RACK.rtt + `reo_wnd` ago (RFC 8985 6.2 step 5).
    pub fn detect_loss(&mut self, sb: &Scoreboard, reo_wnd: Duration, now: Instant) -> Detection {
        let mut found = Detection::default();
        let Some(rack_xmit) = self.xmit else { return found };
        let mut i = 0;
        while i < self.segs.len() {
            let seg = self.segs[i];
            if let Some(end) = sb.sacked_run_end(seg.start).filter(|&e| le(seg.end, e)) {
                i = self.index_from(end.0).max(i + 1);
                continue;
            }
            let sent_after = seg.xmit > rack_xmit || (seg.xmit == rack_xmit && gt(seg.end, self.end_seq));
            if sent_after {
                if !seg.retx {
                    // Never-retransmitted segments are in send order: the rest is later too.
                    break;
                }
                i += 1;
                continue;
            }
            if seg.lost {
                i += 1;
                continue;
            }
            let deadline = seg.xmit + self.rtt + reo_wnd;
            if deadline <= now {
                self.segs[i].lost = true;
                self.lost_bytes += dist(seg.start, seg.end);
                found.newly_lost += 1;
            } else {
                let left = deadline - now;
                found.timeout = Some(found.timeout.map_or(left, |t: Duration| t.max(left)));
            }
            i += 1;
        }
        found
    }

    /// The first segment marked lost and not yet sent again, at or after `from`.
    pub fn next_lost(&self, sb: &Scoreboard, from: impl Into<Seq>) -> Option<SeqRange> {
        let from: u32 = from.into().0;
        if self.lost_bytes == 0 {
            return None;
        }
        let mut i = self.index_of(from);
        while i < self.segs.len() {
            let seg = self.segs[i];
            if let Some(end) = sb.sacked_run_end(seg.start).filter(|&e| le(seg.end, e)) {
                i = self.index_from(end.0).max(i + 1);
                continue;
            }
            if seg.lost {
                let start = if lt(seg.start, from) { from } else { seg.start };
                return Some(SeqRange::new(start, seg.end));
            }
            i += 1;
        }
        None
    }

    /// A retransmission timeout: every segment in flight is sent again from SND.UNA, so none
    /// is waiting as lost any more.
    pub fn on_timeout(&mut self) {
        for s in &mut self.segs {
            s.lost = false;
        }
        self.lost_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_nanos(us * 1000)
    }

    #[test]
    fn a_hole_is_lost_one_rtt_plus_the_window_after_it_was_sent() {
        let mut r = Rack::default();
        let mut sb = Scoreboard::default();
        for k in 0..4u32 {
            r.on_send(1000 + k * 100, 1100 + k * 100, t(u64::from(k)));
        }
        // 1000..1100 lost; 1100..1400 SACKed at 100 µs.
        sb.update(1000, 1400, &[Some((1100, 1400))]);
        r.on_ack(1000, &[SeqRange::new(1100, 1400)], None, t(103));
        assert_eq!(r.rtt, Duration::from_micros(100));
        assert!(!r.reordering_seen);
        // Three segments SACKed: no reordering window, the hole is lost at once.
        let d = r.detect_loss(&sb, r.reo_wnd(false, 3, 3, None), t(103));
        assert_eq!(d, Detection { newly_lost: 1, timeout: None });
        assert_eq!(r.next_lost(&sb, 1000), Some(SeqRange::new(1000, 1100)));
        assert_eq!(r.lost_bytes, 100);
        // Resent: no longer waiting; acknowledged: gone.
        r.on_send(1000, 1100, t(110));
        assert_eq!((r.lost_bytes, r.next_lost(&sb, 1000)), (0, None));
        r.on_ack(1400, &[], None, t(210));
        assert!(r.is_empty());
    }

    #[test]
    fn a_hole_inside_the_reordering_window_waits_for_the_timer() {
        let mut r = Rack::default();
        let mut sb = Scoreboard::default();
        r.on_send(0, 100, t(0));
        r.on_send(100, 200, t(10));
        sb.update(0, 200, &[Some((100, 200))]);
        r.on_ack(0, &[SeqRange::new(100, 200)], None, t(110));
        // min_RTT 100 µs: the window is 25 µs; the hole was sent 10 µs before the SACKed one.
        let wnd = r.reo_wnd(false, 1, 3, Some(Duration::from_micros(100)));
        assert_eq!(wnd, Duration::from_micros(25));
        let d = r.detect_loss(&sb, wnd, t(110));
        assert_eq!(d, Detection { newly_lost: 0, timeout: Some(Duration::from_micros(15)) });
        let d = r.detect_loss(&sb, wnd, t(125));
        assert_eq!(d.newly_lost, 1);
    }

    #[test]
    fn a_lost_retransmission_is_found_by_a_later_delivery() {
        let mut r = Rack::default();
        let mut sb = Scoreboard::default();
        for k in 0..3u32 {
            r.on_send(k * 100, (k + 1) * 100, t(u64::from(k)));
        }
        sb.update(0, 300, &[Some((100, 300))]);
        r.on_ack(0, &[SeqRange::new(100, 300)], None, t(102));
        assert_eq!(r.detect_loss(&sb, Duration::ZERO, t(102)).newly_lost, 1);
        r.on_send(0, 100, t(102)); // the retransmission, lost again
        r.on_send(300, 400, t(150));
        sb.update(0, 400, &[Some((100, 400))]);
        r.on_ack(0, &[SeqRange::new(300, 400)], None, t(250));
        // Sent after the retransmission and delivered 100 µs later: the retransmission, sent
        // 148 µs ago, is lost too.
        assert_eq!(r.detect_loss(&sb, Duration::ZERO, t(250)).newly_lost, 1);
        assert_eq!(r.next_lost(&sb, 0), Some(SeqRange::new(0, 100)));
    }

    #[test]
    fn reordering_is_noticed_and_dsacks_widen_the_window() {
        let mut r = Rack::default();
        r.on_send(0, 100, t(0));
        r.on_send(100, 200, t(1));
        r.on_ack(0, &[SeqRange::new(100, 200)], None, t(101));
        r.on_ack(200, &[], None, t(102));
        assert!(r.reordering_seen);
        let srtt = Some(Duration::from_millis(1));
        assert_eq!(r.reo_wnd(true, 5, 3, srtt), Duration::from_micros(25));
        r.on_dsack(200, 300);
        r.on_dsack(200, 300);
        assert_eq!(r.reo_wnd(true, 5, 3, srtt), Duration::from_micros(50), "one step per round");
        r.on_dsack(300, 400);
        assert_eq!(r.reo_wnd(true, 5, 3, srtt), Duration::from_micros(75));
    }
}
