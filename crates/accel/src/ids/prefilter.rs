//! The fast-pattern prefilter, Pigasus style: one multi-string matcher ([`super::mpm`]) over the fast pattern
//! of every rule (case-folded, so one pass finds case-sensitive and nocase patterns alike),
//! and port groups for the rules that have no fast pattern ("always check" lists keyed by
//! protocol and destination / source port, like Snort's port groups). Every candidate it
//! yields is fully verified by the engine, so the prefilter may over-approximate but never
//! miss: a rule whose fast pattern is absent from every inspected buffer cannot match.

use std::collections::HashMap;

use super::mpm::{Mpm, MpmScratch};

use super::rule::{PortSet, RuleProto};

/// Port sets larger than this go to the protocol's generic group instead of per-port groups.
const MAX_GROUP_PORTS: u32 = 2048;

/// Protocol classes with their own groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtoClass {
    /// TCP
    Tcp = 0,
    /// UDP
    Udp = 1,
    /// ICMP
    Icmp = 2,
    /// Any other IP protocol
    Other = 3,
}

/// "Always check" rule lists grouped by protocol and port.
#[derive(Debug, Default, Clone)]
struct PortGroups {
    /// (proto class, dst port) -> rules.
    dst: HashMap<(u8, u16), Vec<u32>>,
    /// (proto class, src port) -> rules.
    src: HashMap<(u8, u16), Vec<u32>>,
    /// proto class -> rules with no usable port restriction.
    generic: [Vec<u32>; 4],
}

/// What the prefilter needs to know about a rule.
#[derive(Debug, Clone)]
pub struct PrefilterRule<'a> {
    /// Rule index in the rule set.
    pub index: u32,
    /// The fast pattern (already cut by fast_pattern_offset/length), if the rule has one.
    pub pattern: Option<&'a [u8]>,
    /// Protocol of the header.
    pub proto: RuleProto,
    /// Source ports.
    pub src_ports: &'a PortSet,
    /// Destination ports.
    pub dst_ports: &'a PortSet,
    /// `<>`
    pub bidirectional: bool,
}

/// The compiled prefilter.
#[derive(Debug, Clone)]
pub struct Prefilter {
    mpm: Mpm,
    /// Distinct case-folded patterns, by pattern id.
    patterns: Vec<Vec<u8>>,
    /// Rules of pattern id `p` are `pat_rules[pat_start[p]..pat_start[p + 1]]`.
    pat_start: Vec<u32>,
    pat_rules: Vec<u32>,
    groups: PortGroups,
    /// Length of the longest pattern (0 without patterns).
    max_len: usize,
}

impl Prefilter {
    /// Builds the prefilter.
    pub fn build(rules: &[PrefilterRule<'_>]) -> Prefilter {
        let mut ids: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut lists: Vec<Vec<u32>> = Vec::new();
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut groups = PortGroups::default();
        for r in rules {
            match r.pattern {
                Some(p) if !p.is_empty() => {
                    let key = p.to_ascii_lowercase();
                    let id = *ids.entry(key.clone()).or_insert_with(|| {
                        patterns.push(key);
                        lists.push(Vec::new());
                        (patterns.len() - 1) as u32
                    });
                    lists[id as usize].push(r.index);
                }
                _ => groups.add(r),
            }
        }
        let mut pat_start = Vec::with_capacity(lists.len() + 1);
        let mut pat_rules = Vec::new();
        for l in &lists {
            pat_start.push(pat_rules.len() as u32);
            pat_rules.extend_from_slice(l);
        }
        pat_start.push(pat_rules.len() as u32);
        let mpm = Mpm::new(&patterns);
        let max_len = patterns.iter().map(Vec::len).max().unwrap_or(0);
        Prefilter { mpm, patterns, pat_start, pat_rules, groups, max_len }
    }

    /// Number of distinct (case-folded) fast patterns.
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// The distinct case-folded patterns, by id.
    pub fn patterns(&self) -> &[Vec<u8>] {
        &self.patterns
    }

    /// Length of the longest pattern (0 without patterns).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The rules whose fast pattern is pattern `id`.
    pub fn rules_of(&self, id: u32) -> &[u32] {
        let i = id as usize;
        match (self.pat_start.get(i), self.pat_start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.pat_rules[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Calls `hit` once with the id of every pattern present in `hay`.
    #[inline]
    pub fn scan(&self, hay: &[u8], scratch: &mut MpmScratch, hit: impl FnMut(u32)) {
        self.mpm.scan(hay, scratch, hit);
    }

    /// Calls `f` with each "always check" list for a packet of class `pc` and ports.
    pub fn always(&self, pc: ProtoClass, src_port: u16, dst_port: u16, mut f: impl FnMut(&[u32])) {
        let g = &self.groups;
        f(&g.generic[pc as usize]);
        if matches!(pc, ProtoClass::Tcp | ProtoClass::Udp) {
            if let Some(v) = g.dst.get(&(pc as u8, dst_port)) {
                f(v);
            }
            if let Some(v) = g.src.get(&(pc as u8, src_port)) {
                f(v);
            }
        }
    }
}

impl PortGroups {
    fn add(&mut self, r: &PrefilterRule<'_>) {
        let classes: &[ProtoClass] = match r.proto {
            RuleProto::Tcp => &[ProtoClass::Tcp],
            RuleProto::Udp => &[ProtoClass::Udp],
            RuleProto::Icmp => &[ProtoClass::Icmp],
            RuleProto::Ip => &[ProtoClass::Tcp, ProtoClass::Udp, ProtoClass::Icmp, ProtoClass::Other],
        };
        for &pc in classes {
            if !matches!(pc, ProtoClass::Tcp | ProtoClass::Udp) {
                self.generic[pc as usize].push(r.index);
                continue;
            }
            let mut orients = vec![(r.src_ports, r.dst_ports)];
            if r.bidirectional {
                orients.push((r.dst_ports, r.src_ports));
            }
            for (s, d) in orients {
                let small = |p: &PortSet| !p.is_any() && p.count() <= MAX_GROUP_PORTS;
                let (map, set) = if small(d) {
                    (&mut self.dst, d)
                } else if small(s) {
                    (&mut self.src, s)
                } else {
                    self.generic[pc as usize].push(r.index);
                    continue;
                };
                for &(a, b) in set.ranges() {
                    for p in a..=b {
                        let v = map.entry((pc as u8, p)).or_default();
                        if v.last() != Some(&r.index) {
                            v.push(r.index);
                        }
                    }
                }
            }
        }
    }
}
