//! The port-group stage, Pigasus style: a rule's header (protocol, addresses, ports in either
//! orientation for `<>`, and the `flow` direction and state) checked before a candidate is
//! even queued for verification.
//!
//! Rules share few distinct headers, and headers fewer distinct address expressions
//! (`$HOME_NET`, `$EXTERNAL_NET`, ...), so each rule points to its distinct [`Header`], each
//! header to its interned addresses, and a packet evaluates each header and each address
//! expression at most once ([`GateMemo`]): the prefilter's candidates are narrowed to the
//! rules whose port group can match at the cost of a load and a compare per candidate. The check is exact, so a rule
//! that fails it would have failed verification's header check too.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use super::engine::{PacketMeta, Proto};
use super::memo::Memo;
use super::rule::{AddrSpec, FlowOpts, PortSet, Rule, RuleProto};

/// The header part of a rule that decides whether a packet can match it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    proto: RuleProto,
    /// Interned source address expression.
    src: u32,
    /// Interned destination address expression.
    dst: u32,
    src_ports: PortSet,
    dst_ports: PortSet,
    bidirectional: bool,
    to_server: Option<bool>,
    established: bool,
    not_established: bool,
}

impl Header {
    /// The header of `r`, its address expressions interned into `addrs`.
    fn of(r: &Rule, addrs: &mut Interner<AddrSpec>) -> Header {
        let FlowOpts { to_server, established, not_established, .. } = r.flow;
        Header {
            proto: r.proto,
            src: addrs.id(&r.src),
            dst: addrs.id(&r.dst),
            src_ports: r.src_ports.clone(),
            dst_ports: r.dst_ports.clone(),
            bidirectional: r.bidirectional,
            to_server,
            established,
            not_established,
        }
    }

    /// Whether a packet described by `m` satisfies the header (ports apply to TCP and UDP;
    /// an ICMP or other-protocol packet needs `any any`). `addr(id, ip, is_dst)` says whether
    /// address expression `id` matches `ip`, the packet's source or (`is_dst`) destination.
    fn matches(&self, m: &PacketMeta, addr: &mut impl FnMut(u32, Ipv4Addr, bool) -> bool) -> bool {
        let ports_apply = match (self.proto, m.proto) {
            (RuleProto::Tcp, Proto::Tcp) | (RuleProto::Udp, Proto::Udp) => true,
            (RuleProto::Icmp, Proto::Icmp) => false,
            (RuleProto::Ip, Proto::Tcp | Proto::Udp) => true,
            (RuleProto::Ip, _) => false,
            _ => return false,
        };
        let mut orient = |swap: bool| -> bool {
            let (sp, dp) = if swap { (m.dst_port, m.src_port) } else { (m.src_port, m.dst_port) };
            let (sa, da) = if swap { (m.dst, m.src) } else { (m.src, m.dst) };
            addr(self.src, sa, swap)
                && addr(self.dst, da, !swap)
                && if ports_apply {
                    self.src_ports.contains(sp) && self.dst_ports.contains(dp)
                } else {
                    self.src_ports.is_any() && self.dst_ports.is_any()
                }
        };
        let addr_ok = orient(false) || (self.bidirectional && orient(true));
        if !addr_ok {
            return false;
        }
        if let (Some(want), Some(have)) = (self.to_server, m.to_server) {
            if want != have {
                return false;
            }
        }
        // `established` needs an established flow, `not_established` one that is not.
        if m.established {
            !self.not_established
        } else {
            !self.established
        }
    }
}

/// Distinct values, each given the next id.
#[derive(Debug, Clone)]
struct Interner<T> {
    ids: HashMap<T, u32>,
    values: Vec<T>,
}

impl<T: Clone + Eq + std::hash::Hash> Interner<T> {
    fn new() -> Interner<T> {
        Interner { ids: HashMap::new(), values: Vec::new() }
    }

    fn id(&mut self, v: &T) -> u32 {
        if let Some(&id) = self.ids.get(v) {
            return id;
        }
        let id = self.values.len() as u32;
        self.ids.insert(v.clone(), id);
        self.values.push(v.clone());
        id
    }
}

/// The distinct headers of a rule set and which one each rule has.
#[derive(Debug, Clone, Default)]
pub struct HeaderGate {
    headers: Vec<Header>,
    addrs: Vec<AddrSpec>,
    of_rule: Vec<u32>,
}

/// Verdicts of the gate for one packet description: by distinct header, and by distinct
/// address expression against the packet's source and destination; lives in the matching
/// scratch. The verdicts depend on nothing but the rule set and the [`PacketMeta`], so the
/// packets of a flow that follow each other keep them (a per-flow port group, as Pigasus
/// looks its port groups up once per packet header).
#[derive(Debug, Clone, Default)]
pub struct GateMemo {
    headers: Memo,
    addrs: Memo,
    /// The rule set and packet description the verdicts are for.
    key: Option<(u64, PacketMeta)>,
}

impl GateMemo {
    /// Starts a packet of rule set `set` (a unique id per rule set) described by `m`:
    /// the verdicts are forgotten unless the previous packet had the same set and description.
    pub fn begin(&mut self, gate: &HeaderGate, set: u64, m: &PacketMeta) {
        if self.key == Some((set, *m)) {
            return;
        }
        self.key = Some((set, *m));
        self.headers.begin(gate.headers.len());
        self.addrs.begin(gate.addrs.len() * 2);
    }
}

impl HeaderGate {
    /// Interns the headers of `rules` (rule index = position).
    pub fn build<'a>(rules: impl Iterator<Item = &'a Rule>) -> HeaderGate {
        let mut addrs = Interner::new();
        let mut headers = Interner::new();
        let of_rule = rules.map(|r| headers.id(&Header::of(r, &mut addrs))).collect();
        HeaderGate { headers: headers.values, addrs: addrs.values, of_rule }
    }

    /// Number of distinct address expressions.
    pub fn addr_count(&self) -> usize {
        self.addrs.len()
    }

    /// Whether rule `rule`'s header matches the packet, evaluated afresh (no memo).
    pub fn matches(&self, rule: u32, m: &PacketMeta) -> bool {
        let Some(h) = self.of_rule.get(rule as usize).and_then(|&h| self.headers.get(h as usize)) else {
            return false;
        };
        h.matches(m, &mut |id, ip, _| self.addrs[id as usize].matches(ip))
    }

    /// Number of distinct headers.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// Whether no header was interned.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// Whether rule `rule`'s header matches the packet, evaluated once per distinct header
    /// and address expression per packet (`memo` begun for this packet).
    #[inline]
    pub fn passes(&self, rule: u32, m: &PacketMeta, memo: &mut GateMemo) -> bool {
        let Some(&h) = self.of_rule.get(rule as usize) else { return false };
        self.passes_header(h, m, memo)
    }

    /// Whether distinct header `h` matches the packet (memoised as [`HeaderGate::passes`]).
    #[inline]
    pub fn passes_header(&self, h: u32, m: &PacketMeta, memo: &mut GateMemo) -> bool {
        if h as usize >= self.headers.len() {
            return false;
        }
        let GateMemo { headers, addrs, .. } = memo;
        headers.get_or(h as usize, || {
            self.headers[h as usize].matches(m, &mut |id, ip, is_dst| {
                addrs.get_or(id as usize * 2 + usize::from(is_dst), || self.addrs[id as usize].matches(ip))
            })
        })
    }
}

/// The rules of each fast pattern grouped by distinct header, so that one gate verdict
/// admits or rejects a whole group (a header shared by many rules of one pattern is checked
/// once, not once per rule).
#[derive(Debug, Clone, Default)]
pub struct PatternGroups {
    /// Groups of pattern `p` are `groups[start[p]..start[p + 1]]`.
    start: Vec<u32>,
    /// (header id, first rule in `rules`, end of its rules).
    groups: Vec<(u32, u32, u32)>,
    rules: Vec<u32>,
}

impl PatternGroups {
    /// Groups `rules_of(p)` for every pattern id below `patterns` by the gate's header id.
    pub fn build<'a>(gate: &HeaderGate, patterns: usize, rules_of: impl Fn(u32) -> &'a [u32]) -> PatternGroups {
        let mut g = PatternGroups::default();
        for p in 0..patterns as u32 {
            g.start.push(g.groups.len() as u32);
            let mut by_header: Vec<(u32, u32)> =
                rules_of(p).iter().map(|&r| (gate.of_rule.get(r as usize).copied().unwrap_or(u32::MAX), r)).collect();
            by_header.sort_unstable();
            for (i, &(h, r)) in by_header.iter().enumerate() {
                if i == 0 || by_header[i - 1].0 != h {
                    g.groups.push((h, g.rules.len() as u32, g.rules.len() as u32));
                }
                g.rules.push(r);
                if let Some(last) = g.groups.last_mut() {
                    last.2 = g.rules.len() as u32;
                }
            }
        }
        g.start.push(g.groups.len() as u32);
        g
    }

    /// The groups of pattern `p`: (header id, its rules).
    #[inline]
    pub fn of(&self, p: u32) -> impl Iterator<Item = (u32, &[u32])> {
        let i = p as usize;
        let (a, b) = match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => (a as usize, b as usize),
            _ => (0, 0),
        };
        self.groups[a..b].iter().map(|&(h, x, y)| (h, &self.rules[x as usize..y as usize]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::parse::parse_rule;
    use crate::ids::vars::Vars;

    fn meta(proto: Proto, sp: u16, dp: u16, to_server: bool) -> PacketMeta {
        PacketMeta {
            proto,
            src: Ipv4Addr::new(192, 0, 2, 1),
            dst: Ipv4Addr::new(10, 0, 0, 1),
            src_port: sp,
            dst_port: dp,
            to_server: Some(to_server),
            established: true,
        }
    }

    #[test]
    fn shared_headers_are_interned_and_memoised() {
        let text = [
            "alert tcp any any -> any 80 (flow:to_server; content:\"a\"; sid:1;)",
            "alert tcp any any -> any 80 (flow:to_server; content:\"b\"; sid:2;)",
            "alert udp any any <> any 53 (content:\"c\"; sid:3;)",
            "alert icmp any any -> any any (sid:4;)",
        ];
        let rules: Vec<Rule> =
            text.iter().enumerate().map(|(i, t)| parse_rule(t, i + 1, &Vars::default()).unwrap()).collect();
        let gate = HeaderGate::build(rules.iter());
        assert_eq!(gate.len(), 3);
        let mut memo = GateMemo::default();
        let m = meta(Proto::Tcp, 40000, 80, true);
        memo.begin(&gate, 1, &m);
        assert!(gate.passes(0, &m, &mut memo) && gate.passes(1, &m, &mut memo));
        assert!(!gate.passes(2, &m, &mut memo) && !gate.passes(3, &m, &mut memo));
        let back = meta(Proto::Tcp, 80, 40000, false);
        memo.begin(&gate, 1, &back);
        assert!(!gate.passes(0, &back, &mut memo), "wrong direction and port");
        let dns_reply = meta(Proto::Udp, 53, 5353, false);
        memo.begin(&gate, 1, &dns_reply);
        assert!(gate.passes(2, &dns_reply, &mut memo), "<> matches the reverse orientation");
        assert!(!gate.passes(9, &dns_reply, &mut memo), "unknown rule index");
        memo.begin(&gate, 2, &dns_reply);
        assert!(gate.passes(2, &dns_reply, &mut memo), "another set: verdicts recomputed");
        for (i, m) in [m, back, dns_reply].iter().enumerate() {
            for r in 0..4 {
                memo.begin(&gate, 1, m);
                assert_eq!(gate.passes(r, m, &mut memo), gate.matches(r, m), "rule {r}, packet {i}");
            }
        }
    }

    #[test]
    fn pattern_groups_hold_each_rule_once_under_its_header() {
        let text = [
            "alert tcp any any -> any 80 (content:\"a\"; sid:1;)",
            "alert udp any any -> any 53 (content:\"a\"; sid:2;)",
            "alert tcp any any -> any 80 (content:\"a\"; sid:3;)",
            "alert tcp any any -> any 80 (content:\"b\"; sid:4;)",
        ];
        let rules: Vec<Rule> =
            text.iter().enumerate().map(|(i, t)| parse_rule(t, i + 1, &Vars::default()).unwrap()).collect();
        let gate = HeaderGate::build(rules.iter());
        let lists: [&[u32]; 2] = [&[0, 1, 2], &[3]];
        let g = PatternGroups::build(&gate, 2, |p| lists[p as usize]);
        let a: Vec<(u32, Vec<u32>)> = g.of(0).map(|(h, r)| (h, r.to_vec())).collect();
        assert_eq!(a.len(), 2, "two headers among pattern 0's rules");
        let mut all: Vec<u32> = a.iter().flat_map(|(_, r)| r.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 1, 2]);
        for (h, rs) in &a {
            assert!(rs.iter().all(|&r| gate.of_rule[r as usize] == *h));
        }
        assert_eq!(g.of(1).count(), 1);
        assert_eq!(g.of(7).count(), 0, "unknown pattern");
        let m = meta(Proto::Udp, 5353, 53, true);
        let mut memo = GateMemo::default();
        memo.begin(&gate, 1, &m);
        for (h, rs) in g.of(0) {
            assert_eq!(gate.passes_header(h, &m, &mut memo), gate.matches(rs[0], &m));
        }
    }
}
