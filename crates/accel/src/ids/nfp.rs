//! The non-fast-pattern filter, Pigasus style: before full verification, a candidate must
//! have every other (non-negated) `content` string of its packet-data buffers present
//! somewhere in the payload, ignoring case and position. Offsets, depths, distances, order,
//! case, pcre and byte tests are left to verification; this only throws out candidates that
//! cannot match, cheaply: each distinct string is searched (SIMD `memmem` over the payload
//! the prefilter already lowercased) at most once per packet, however many rules share it.
//!
//! Only `pkt_data`/`raw_data` contents count: their buffer is the payload itself, so a match
//! needs the string in the payload. HTTP and `file_data` buffers may be normalized or decoded
//! and are not filtered. A rule's fast-pattern content is skipped (the prefilter found it).

use std::collections::HashMap;

use memchr::memmem::Finder;

use super::memo::Memo;
use super::rule::{BufferKind, Detect, Rule};

/// The required strings of every rule, compiled for searching.
#[derive(Debug, Clone, Default)]
pub struct NfpFilter {
    /// Distinct lowercased strings.
    finders: Vec<Finder<'static>>,
    /// Rule `r` requires `ids[start[r]..start[r + 1]]`.
    start: Vec<u32>,
    ids: Vec<u32>,
}

impl NfpFilter {
    /// Collects the required strings of `rules` (rule index = position).
    pub fn build<'a>(rules: impl Iterator<Item = &'a Rule>) -> NfpFilter {
        let mut f = NfpFilter::default();
        let mut pool: HashMap<Vec<u8>, u32> = HashMap::new();
        for r in rules {
            f.start.push(f.ids.len() as u32);
            let fast = r.fast_pattern().map(|c| c as *const _);
            let mut mine: Vec<Vec<u8>> = Vec::new();
            for seg in r.segments.iter().filter(|s| matches!(s.buffer, BufferKind::Pkt | BufferKind::Raw)) {
                for d in &seg.items {
                    let Detect::Content(c) = d else { continue };
                    if c.negated || c.pattern.is_empty() || fast == Some(c as *const _) {
                        continue;
                    }
                    mine.push(c.pattern.to_ascii_lowercase());
                }
            }
            // Longest first: the rarest, so a failing rule usually fails on its first search.
            mine.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
            mine.dedup();
            for s in mine {
                let next = f.finders.len() as u32;
                let id = *pool.entry(s.clone()).or_insert_with(|| {
                    f.finders.push(Finder::new(&s).into_owned());
                    next
                });
                f.ids.push(id);
            }
        }
        f.start.push(f.ids.len() as u32);
        f
    }

    /// Number of distinct required strings (the memo's size).
    pub fn len(&self) -> usize {
        self.finders.len()
    }

    /// Whether no rule requires a string.
    pub fn is_empty(&self) -> bool {
        self.finders.is_empty()
    }

    /// Whether rule `rule`'s required strings all occur in `folded` (the ASCII-lowercased
    /// payload); `memo` must have been begun for this packet with [`NfpFilter::len`] keys.
    #[inline]
    pub fn passes(&self, rule: u32, folded: &[u8], memo: &mut Memo) -> bool {
        let r = rule as usize;
        let (Some(&a), Some(&b)) = (self.start.get(r), self.start.get(r + 1)) else { return true };
        self.ids[a as usize..b as usize]
            .iter()
            .all(|&id| memo.get_or(id as usize, || self.finders[id as usize].find(folded).is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::parse::parse_rule;
    use crate::ids::vars::Vars;

    #[test]
    fn requires_the_other_contents_of_packet_buffers() {
        let text = [
            r#"alert tcp any any -> any any (content:"LONGFAST",fast_pattern; content:"Ab"; content:!"zz"; sid:1;)"#,
            r#"alert tcp any any -> any any (http_uri; content:"/x"; content:"ab"; sid:2;)"#,
        ];
        let rules: Vec<Rule> =
            text.iter().enumerate().map(|(i, t)| parse_rule(t, i + 1, &Vars::default()).unwrap()).collect();
        let f = NfpFilter::build(rules.iter());
        let mut memo = Memo::default();
        memo.begin(f.len());
        assert!(f.passes(0, b"xx ab zz", &mut memo), "fast pattern and negated contents are not required");
        assert!(f.passes(0, b"xx a b", &mut memo), "the memo answers for the same packet");
        memo.begin(f.len());
        assert!(!f.passes(0, b"xx a b", &mut memo));
        memo.begin(f.len());
        assert!(f.passes(1, b"ab", &mut memo), "http_uri contents are not required");
        assert!(f.passes(7, b"", &mut memo), "unknown rule: not filtered");
    }
}
