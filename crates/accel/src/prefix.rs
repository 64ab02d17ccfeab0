//! IPv4 prefix set with longest-prefix match, loaded from a blacklist file (Spamhaus DROP style).
//!
//! The set is compiled into a sorted array of disjoint address intervals, each labelled with
//! the longest prefix that covers it (prefixes nest, so this is exact), plus a 65,536-entry
//! first-level index on the top 16 address bits. A lookup reads one index pair and then
//! binary-searches the (usually one or two) intervals that start inside that /16 block.

use std::net::Ipv4Addr;
use std::path::Path;

use crate::AccelError;

/// Label of an interval that no prefix covers.
const NONE: u32 = u32::MAX;

/// An IPv4 prefix: network address (host bits zero) and length 0..=32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix {
    /// Network address as a host-order integer (host bits are zero).
    pub addr: u32,
    /// Prefix length in bits, 0..=32.
    pub len: u8,
}

impl Prefix {
    /// Builds a prefix, rejecting lengths over 32 and addresses with host bits set.
    pub fn new(addr: Ipv4Addr, len: u8) -> Result<Prefix, String> {
        if len > 32 {
            return Err(format!("prefix length {len} is larger than 32"));
        }
        let a = u32::from(addr);
        if a & !mask(len) != 0 {
            return Err(format!(
                "{addr}/{len} has host bits set (did you mean {}/{len}?)",
                Ipv4Addr::from(a & mask(len))
            ));
        }
        Ok(Prefix { addr: a, len })
    }

    /// The first address of the prefix.
    pub fn first(&self) -> u32 {
        self.addr
    }

    /// The last address of the prefix.
    pub fn last(&self) -> u32 {
        self.addr | !mask(self.len)
    }

    /// Whether the prefix covers `ip`.
    pub fn contains(&self, ip: u32) -> bool {
        ip & mask(self.len) == self.addr
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.len)
    }
}

/// The network mask of a prefix length (0..=32).
fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

/// Parses one "a.b.c.d/len" or "a.b.c.d" (= /32) token.
fn parse_prefix(tok: &str) -> Result<Prefix, String> {
    let (a, l) = match tok.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (tok, None),
    };
    let addr: Ipv4Addr = a.parse().map_err(|_| format!("'{a}' is not an IPv4 address"))?;
    let len = match l {
        None => 32,
        Some(l) => match l.parse::<u8>() {
            Ok(n) => n,
            Err(_) => return Err(format!("'{l}' is not a prefix length (0..=32)")),
        },
    };
    Prefix::new(addr, len)
}

/// A set of IPv4 prefixes compiled for fast membership and longest-prefix-match lookups.
#[derive(Debug, Clone)]
pub struct PrefixSet {
    /// The distinct prefixes, sorted by (address, length).
    prefixes: Vec<Prefix>,
    /// Start address of each disjoint interval; `starts[0] == 0`, strictly increasing.
    starts: Vec<u32>,
    /// For each interval, the index in `prefixes` of its longest covering prefix, or `NONE`.
    labels: Vec<u32>,
    /// For each /16 block b, the index of the interval containing address `b << 16`;
    /// entry 65,536 is the last interval.
    index: Vec<u32>,
}

impl Default for PrefixSet {
    fn default() -> Self {
        PrefixSet::from_prefixes(std::iter::empty())
    }
}

impl PrefixSet {
    /// Parses a blacklist: one prefix per line (`a.b.c.d/len`, or a bare address for /32),
    /// blank lines and comments starting with `#` or `;` allowed, also after the prefix
    /// (`1.2.3.0/24 ; SBL123`). `source` names the text in error messages.
    pub fn parse(text: &str, source: &str) -> Result<PrefixSet, AccelError> {
        let mut v = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split(['#', ';']).next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut toks = line.split_whitespace();
            let tok = toks.next().unwrap_or("");
            if let Some(extra) = toks.next() {
                return Err(AccelError::parse(source, i + 1, format!("unexpected '{extra}' after prefix '{tok}'")));
            }
            let p = parse_prefix(tok).map_err(|e| AccelError::parse(source, i + 1, e))?;
            v.push(p);
        }
        Ok(PrefixSet::from_prefixes(v))
    }

    /// Reads and parses a blacklist file (see [`PrefixSet::parse`]).
    pub fn load(path: &Path) -> Result<PrefixSet, AccelError> {
        let text = AccelError::read_to_string(path)?;
        PrefixSet::parse(&text, &path.display().to_string())
    }

    /// Builds a set from prefixes (duplicates are merged).
    pub fn from_prefixes(prefixes: impl IntoIterator<Item = Prefix>) -> PrefixSet {
        let mut prefixes: Vec<Prefix> = prefixes.into_iter().collect();
        // Sorting by (addr, len) puts an enclosing prefix before the prefixes it contains.
        prefixes.sort_unstable();
        prefixes.dedup();
        let (starts, labels) = build_intervals(&prefixes);
        let index = build_index(&starts);
        PrefixSet { prefixes, starts, labels, index }
    }

    /// Number of distinct prefixes in the set.
    pub fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// Whether the set has no prefix.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }

    /// The distinct prefixes, sorted by address then length.
    pub fn prefixes(&self) -> &[Prefix] {
        &self.prefixes
    }

    /// Number of disjoint intervals in the compiled table (a size figure for reports).
    pub fn interval_count(&self) -> usize {
        self.starts.len()
    }

    /// Whether any prefix of the set covers `ip`.
    #[inline]
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.label(u32::from(ip)) != NONE
    }

    /// The longest prefix of the set that covers `ip`, as (network address, length).
    #[inline]
    pub fn longest_match(&self, ip: Ipv4Addr) -> Option<(Ipv4Addr, u8)> {
        let l = self.label(u32::from(ip));
        let p = self.prefixes.get(l as usize)?;
        Some((Ipv4Addr::from(p.addr), p.len))
    }

    /// The label of the interval containing `ip`.
    #[inline]
    fn label(&self, ip: u32) -> u32 {
        let b = (ip >> 16) as usize;
        // The index has 65,537 entries, so b + 1 is in range. The answer lies in lo..=hi:
        // lo contains the block's first address, hi contains the next block's first address.
        let lo = self.index[b] as usize;
        let hi = self.index[b + 1] as usize;
        let i = if hi == lo { lo } else { lo + self.starts[lo + 1..=hi].partition_point(|&s| s <= ip) };
        self.labels[i]
    }
}

/// Splits the address space into disjoint intervals labelled with their longest covering prefix.
/// `prefixes` must be sorted by (addr, len) and deduplicated.
fn build_intervals(prefixes: &[Prefix]) -> (Vec<u32>, Vec<u32>) {
    // Candidate boundaries: every prefix start and every prefix end + 1 (u64 for 2^32).
    let mut points: Vec<u64> = Vec::with_capacity(prefixes.len() * 2 + 1);
    points.push(0);
    for p in prefixes {
        points.push(u64::from(p.first()));
        points.push(u64::from(p.last()) + 1);
    }
    points.sort_unstable();
    points.dedup();
    let mut starts = Vec::with_capacity(points.len());
    let mut labels: Vec<u32> = Vec::with_capacity(points.len());
    // Stack of prefixes covering the current point; prefixes nest, so the top is the longest.
    let mut stack: Vec<usize> = Vec::new();
    let mut next = 0usize;
    for &pt in &points {
        if pt > u64::from(u32::MAX) {
            break;
        }
        while next < prefixes.len() && u64::from(prefixes[next].first()) <= pt {
            let q = prefixes[next];
            while let Some(&t) = stack.last() {
                if prefixes[t].last() < q.first() {
                    stack.pop();
                } else {
                    break;
                }
            }
            stack.push(next);
            next += 1;
        }
        while let Some(&t) = stack.last() {
            if u64::from(prefixes[t].last()) < pt {
                stack.pop();
            } else {
                break;
            }
        }
        let label = stack.last().map_or(NONE, |&t| t as u32);
        if labels.last() != Some(&label) {
            starts.push(pt as u32);
            labels.push(label);
        }
    }
    (starts, labels)
}

/// Builds the /16 first-level index: entry b is the interval containing address `b << 16`;
/// entry 65,536 is the last interval.
fn build_index(starts: &[u32]) -> Vec<u32> {
    let mut index = Vec::with_capacity(65_537);
    let mut i = 0usize;
    for b in 0u32..65_536 {
        let base = b << 16;
        while i + 1 < starts.len() && starts[i + 1] <= base {
            i += 1;
        }
        index.push(i as u32);
    }
    index.push(starts.len().saturating_sub(1) as u32);
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(prefixes: &[Prefix], ip: u32) -> Option<(Ipv4Addr, u8)> {
        prefixes.iter().filter(|p| p.contains(ip)).max_by_key(|p| p.len).map(|p| (Ipv4Addr::from(p.addr), p.len))
    }

    #[test]
    fn parses_comments_and_trailing_comments() {
        let s = PrefixSet::parse("# header\n; other\n\n1.2.3.0/24 ; SBL123\n10.0.0.0/8#x\n 5.6.7.8 \n", "t").unwrap();
        assert_eq!(s.len(), 3);
        assert!(s.contains("1.2.3.200".parse().unwrap()));
        assert!(s.contains("5.6.7.8".parse().unwrap()));
        assert!(!s.contains("5.6.7.9".parse().unwrap()));
        assert_eq!(s.longest_match("10.9.9.9".parse().unwrap()), Some(("10.0.0.0".parse().unwrap(), 8)));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = PrefixSet::parse("1.2.3.0/24\n1.2.3.4/33\n", "drop.txt").unwrap_err();
        assert_eq!(e.to_string(), "drop.txt:2: prefix length 33 is larger than 32");
        let e = PrefixSet::parse("1.2.3.1/24\n", "f").unwrap_err();
        assert!(e.to_string().starts_with("f:1: 1.2.3.1/24 has host bits set"), "{e}");
        let e = PrefixSet::parse("\n\nfoo/8\n", "f").unwrap_err();
        assert_eq!(e.to_string(), "f:3: 'foo' is not an IPv4 address");
        let e = PrefixSet::parse("1.0.0.0/8 2.0.0.0/8\n", "f").unwrap_err();
        assert!(e.to_string().contains("unexpected '2.0.0.0/8'"));
    }

    #[test]
    fn nested_and_edges() {
        let s = PrefixSet::parse("0.0.0.0/0\n10.0.0.0/8\n10.1.0.0/16\n10.1.2.0/24\n255.255.255.255/32\n", "t").unwrap();
        let lm = |a: &str| s.longest_match(a.parse().unwrap()).map(|(_, l)| l);
        assert_eq!(lm("9.255.255.255"), Some(0));
        assert_eq!(lm("10.0.0.0"), Some(8));
        assert_eq!(lm("10.1.2.255"), Some(24));
        assert_eq!(lm("10.1.3.0"), Some(16));
        assert_eq!(lm("10.2.0.0"), Some(8));
        assert_eq!(lm("11.0.0.0"), Some(0));
        assert_eq!(lm("255.255.255.255"), Some(32));
        assert_eq!(lm("255.255.255.254"), Some(0));
        let e = PrefixSet::default();
        assert!(!e.contains(Ipv4Addr::new(1, 2, 3, 4)));
        assert!(e.is_empty());
    }

    #[test]
    fn loads_the_drop_list() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/firewall/drop-prefixes.txt");
        let s = match PrefixSet::load(Path::new(path)) {
            Ok(s) => s,
            Err(e) => panic!("cannot load the firewall blacklist ({e}); it belongs in data/firewall of the repository"),
        };
        assert_eq!(s.len(), 1050);
        for p in s.prefixes() {
            assert!(s.contains(Ipv4Addr::from(p.first())));
            assert!(s.contains(Ipv4Addr::from(p.last())));
        }
    }

    fn arb_prefix() -> impl Strategy<Value = Prefix> {
        // Cluster addresses so that nesting and adjacency happen often.
        (0u32..64, any::<u32>(), 0u8..=32).prop_map(|(hi, lo, len)| {
            let a = (hi << 26) | (lo >> 6);
            Prefix { addr: a & mask(len), len }
        })
    }

    proptest! {
        #[test]
        fn matches_naive(prefixes in proptest::collection::vec(arb_prefix(), 0..60),
                         probes in proptest::collection::vec(any::<u32>(), 0..200)) {
            let set = PrefixSet::from_prefixes(prefixes.clone());
            let mut pts = probes.clone();
            for p in &prefixes {
                pts.extend([p.first(), p.last(), p.first().wrapping_sub(1), p.last().wrapping_add(1)]);
            }
            for ip in pts {
                let want = naive(&prefixes, ip);
                prop_assert_eq!(set.longest_match(Ipv4Addr::from(ip)), want);
                prop_assert_eq!(set.contains(Ipv4Addr::from(ip)), want.is_some());
            }
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,200}") {
            let _ = PrefixSet::parse(&s, "fuzz");
        }
    }
}
