//! The IDS's accelerator tables: the compiled rule set, plus the subset of its rules that have
//! no fast pattern ("always check" rules), compiled on its own.
//!
//! A stream direction in which no fast pattern has occurred (and which is not HTTP) can only
//! match rules without a fast pattern, so the IDS evaluates it against the small subset, whose
//! prefilter is empty: no rescan of the whole stream for every segment. The result is the same
//! as with the full set (the subset is not used when one of its rules uses flowbits, whose
//! state could not be shared between the two sets).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use std::net::Ipv4Addr;

use accel::ids::rule::{AddrSpec, PortSet, RuleProto};
use accel::ids::{LoadReport, Rule, RuleSet, Vars};
use accel::AccelError;

/// Rules for IDS units: the full set and, when exact, the always-check subset.
#[derive(Debug, Clone)]
pub struct IdsRules {
    /// Every rule.
    pub full: Arc<RuleSet>,
    /// The rules without a fast pattern, compiled alone (`None`: use `full`).
    pub always: Option<Arc<RuleSet>>,
    /// Rule headers by rule index of `full`, to tell whether a fast-pattern hit concerns a
    /// TCP conversation at all.
    headers: Arc<Vec<Header>>,
}

/// The parts of a rule header a TCP conversation is checked against.
#[derive(Debug, Clone)]
struct Header {
    tcp: bool,
    src: AddrSpec,
    dst: AddrSpec,
    src_ports: PortSet,
    dst_ports: PortSet,
    bidirectional: bool,
}

impl Header {
    fn of(r: &Rule) -> Self {
        Header {
            tcp: matches!(r.proto, RuleProto::Tcp | RuleProto::Ip),
            src: r.src.clone(),
            dst: r.dst.clone(),
            src_ports: r.src_ports.clone(),
            dst_ports: r.dst_ports.clone(),
            bidirectional: r.bidirectional,
        }
    }

    fn orient(&self, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16)) -> bool {
        self.src.matches(src.0)
            && self.dst.matches(dst.0)
            && self.src_ports.contains(src.1)
            && self.dst_ports.contains(dst.1)
    }
}

fn headers(set: &RuleSet) -> Arc<Vec<Header>> {
    Arc::new(set.rules().map(Header::of).collect())
}

/// Logical lines (backslash continuations joined) with their first line number, as the rule
/// parser numbers them, and the number of physical lines they span.
fn logical_lines(text: &str) -> Vec<(usize, String, usize)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        if cur.is_empty() {
            start = i + 1;
        }
        let l = raw.trim_end();
        if let Some(s) = l.strip_suffix('\\') {
            cur.push_str(s);
            cur.push(' ');
        } else {
            cur.push_str(l);
            out.push((start, std::mem::take(&mut cur), i + 2 - start));
        }
    }
    if !cur.trim().is_empty() {
        out.push((start, cur, 1));
    }
    out
}

impl IdsRules {
    /// Rules without a subset (every evaluation uses the full set).
    pub fn new(full: Arc<RuleSet>) -> Self {
        IdsRules { headers: headers(&full), full, always: None }
    }

    /// Whether rule `index` of the full set could apply to TCP data from `src` to `dst`
    /// (protocol, addresses and ports; flow options are not checked, so it may say yes
    /// where the engine says no, never the reverse).
    pub fn may_apply_tcp(&self, index: u32, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16)) -> bool {
        match self.headers.get(index as usize) {
            Some(h) => h.tcp && (h.orient(src, dst) || (h.bidirectional && h.orient(dst, src))),
            None => true,
        }
    }

    /// Parse and compile `text` (named `source` in messages) and its always-check subset.
    pub fn from_text(
        text: &str,
        source: &str,
        vars: &Vars,
        strict: bool,
    ) -> Result<(IdsRules, LoadReport), AccelError> {
        let (full, report) = RuleSet::parse(text, source, vars, strict)?;
        let rule_lines: HashSet<usize> = full.rules().map(|r| r.line).collect();
        let keep: HashSet<usize> = full.rules().filter(|r| r.fast_pattern().is_none()).map(|r| r.line).collect();
        let flowbits = full.rules().any(|r| r.fast_pattern().is_none() && !r.flowbits.is_empty());
        let mut sub = String::new();
        for (line, l, span) in logical_lines(text) {
            // Keep variables, comments and line numbers; drop rules with a fast pattern.
            if !rule_lines.contains(&line) || keep.contains(&line) {
                sub.push_str(&l);
            }
            for _ in 0..span {
                sub.push('\n');
            }
        }
        let always = if flowbits {
            None
        } else {
            match RuleSet::parse(&sub, source, vars, false) {
                Ok((set, _)) if set.len() == keep.len() => Some(Arc::new(set)),
                _ => None,
            }
        };
        Ok((IdsRules { headers: headers(&full), full: Arc::new(full), always }, report))
    }

    /// Load a rules file with Snort's default variables (see [`IdsRules::from_text`]).
    pub fn load(path: &Path, strict: bool) -> Result<(IdsRules, LoadReport), AccelError> {
        Self::load_with(path, &Vars::default(), strict)
    }

    /// Load a rules file with variables `vars` (see [`IdsRules::from_text`]).
    pub fn load_with(path: &Path, vars: &Vars, strict: bool) -> Result<(IdsRules, LoadReport), AccelError> {
        let text = AccelError::read_to_string(path)?;
        Self::from_text(&text, &path.display().to_string(), vars, strict)
    }

    /// The set that evaluates a direction in which no fast pattern occurred.
    pub fn for_unarmed(&self) -> &RuleSet {
        self.always.as_deref().unwrap_or(&self.full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_holds_the_rules_without_fast_pattern() {
        let text = "var X any\n\
            alert tcp $X any -> any any (msg:\"a\"; content:\"abc\"; sid:1;)\n\
            alert tcp any any -> any any (msg:\"b\"; flags:S; \\\n sid:2;)\n\
            # comment\n\
            alert tcp any any -> any 80 (msg:\"c\"; isdataat:5; sid:3;)\n";
        let (r, _) = IdsRules::from_text(text, "t", &Vars::default(), true).unwrap();
        assert_eq!(r.full.len(), 3);
        let sub = r.always.as_ref().unwrap();
        let sids: Vec<u32> = sub.rules().map(|r| r.sid).collect();
        assert_eq!(sids, vec![2, 3]);
        assert_eq!(sub.rule(3).unwrap().line, 6, "line numbers kept");
        assert_eq!(r.full.rule(3).unwrap().line, 6);
    }
}
