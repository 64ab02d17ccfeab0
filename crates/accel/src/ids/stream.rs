//! The fast patterns of a growing stream, found incrementally: each new piece of the stream is
//! scanned once (with the last `longest pattern - 1` bytes before it, so a pattern that
//! straddles the boundary is found), and the set of pattern ids seen so far stands in for a
//! scan of the whole stream ([`super::RuleSet::match_stream`]). Scanning the whole stream
//! again at every segment made a flow's cost quadratic in its length.
//!
//! The set is exactly what a scan of the whole buffer would report, as long as the buffer
//! only grows at its end; when it loses bytes at the front (a sliding window) or is replaced,
//! the caller passes `new = 0` to rebuild the set.

use super::mpm::MpmScratch;
use super::prefilter::Prefilter;

/// The ids of the fast patterns present in a stream buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamPatterns {
    ids: Vec<u32>,
}

impl StreamPatterns {
    /// An empty set (for an empty stream).
    pub fn new() -> StreamPatterns {
        StreamPatterns::default()
    }

    /// Forgets every pattern (the stream starts again).
    pub fn clear(&mut self) {
        self.ids.clear();
    }

    /// The pattern ids present, in the order they were first seen.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Records the patterns of `buf` that end in `buf[new..]`, given that the set already holds
    /// those of `buf[..new]` (`new = 0` rebuilds the set from the whole buffer). Calls `fresh`
    /// with each pattern id not seen before.
    pub fn extend(
        &mut self,
        pre: &Prefilter,
        buf: &[u8],
        new: usize,
        mpm: &mut MpmScratch,
        mut fresh: impl FnMut(u32),
    ) {
        if new == 0 {
            self.ids.clear();
        }
        let new = new.min(buf.len());
        if new == buf.len() {
            return;
        }
        let from = new.saturating_sub(pre.max_len().saturating_sub(1));
        let ids = &mut self.ids;
        pre.scan(&buf[from..], mpm, |p| {
            if !ids.contains(&p) {
                ids.push(p);
                fresh(p);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::prefilter::PrefilterRule;
    use crate::ids::rule::{PortSet, RuleProto};

    fn prefilter(pats: &[&[u8]]) -> Prefilter {
        let any = PortSet::any();
        let rules: Vec<PrefilterRule<'_>> = pats
            .iter()
            .enumerate()
            .map(|(i, p)| PrefilterRule {
                index: i as u32,
                pattern: Some(p),
                proto: RuleProto::Tcp,
                src_ports: &any,
                dst_ports: &any,
                bidirectional: false,
            })
            .collect();
        Prefilter::build(&rules)
    }

    fn whole(pre: &Prefilter, buf: &[u8]) -> Vec<u32> {
        let mut v = Vec::new();
        pre.scan(buf, &mut MpmScratch::default(), |p| v.push(p));
        v.sort_unstable();
        v
    }

    #[test]
    fn pieces_find_what_a_whole_scan_finds_at_every_split() {
        let pre = prefilter(&[b"a", b"bc", b"cde", b"straddle", b"xyzzy-long-pattern"]);
        let text = b"..str|addle..xyzzy-long-pattern..bcde..a..STRADDLE";
        let text: Vec<u8> = text.iter().copied().filter(|&b| b != b'|').collect();
        let mut mpm = MpmScratch::default();
        for cut1 in 0..=text.len() {
            for cut2 in cut1..=text.len() {
                let mut s = StreamPatterns::new();
                let mut fresh = Vec::new();
                for (from, to) in [(0, cut1), (cut1, cut2), (cut2, text.len())] {
                    s.extend(&pre, &text[..to], from, &mut mpm, |p| fresh.push(p));
                    let mut got = s.ids().to_vec();
                    got.sort_unstable();
                    assert_eq!(got, whole(&pre, &text[..to]), "cuts {cut1} {cut2}, prefix {to}");
                }
                assert_eq!(fresh, s.ids(), "each id reported fresh once");
            }
        }
    }

    #[test]
    fn new_zero_rebuilds_after_the_front_is_dropped() {
        let pre = prefilter(&[b"head", b"tail"]);
        let mut mpm = MpmScratch::default();
        let mut s = StreamPatterns::new();
        s.extend(&pre, b"head....tail", 0, &mut mpm, |_| {});
        assert_eq!(s.ids().len(), 2);
        s.extend(&pre, b"....tail", 0, &mut mpm, |_| {});
        assert_eq!(s.ids(), whole(&pre, b"....tail"));
    }
}
