//! The compiled rule set and the matching API.
//!
//! Matching a payload: (1) the prefilter finds the rules whose fast pattern occurs in the
//! payload (or in a normalized HTTP buffer derived from it) and adds the port group's rules
//! that have no fast pattern; (2) Pigasus's filters narrow the candidates: the port-group
//! stage ([`super::gate`]: protocol, addresses, ports in both orientations for `<>`, `flow`,
//! once per distinct header per packet) as each is found, then the non-fast-pattern filter
//! ([`super::nfp`]: the rule's other packet-data contents present in the payload); (3) what
//! is left is fully verified: header field tests, `flowbits` conditions, then every detection
//! option on its buffer. With the filters off ([`RuleSet::set_filters`]) every candidate is
//! verified, header first; the alerts are the same. Candidates are verified in sid order, rules that
//! test flowbits after the others, so a bit set by one rule is seen by another in the same call.
//!
//! Threads: a [`RuleSet`] is immutable, `Send + Sync`, and matched through `&self`; each thread
//! passes its own [`Scratch`]. Reloading builds a new `RuleSet` (see [`super::reload`]).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::detect::{compile_segments, eval_segment, CompiledSegment, EvalState};
use super::gate::{GateMemo, HeaderGate, PatternGroups};
use super::http::{looks_like_http, parse_messages, HttpMessage};
use super::memo::Memo;
use super::nfp::NfpFilter;
use super::parse::parse_rules;
use super::prefilter::{Prefilter, PrefilterRule, ProtoClass};
use super::report::LoadReport;
use super::rule::{BufferKind, FlowbitsOp, HeaderTest, Rule};
use super::vars::Vars;
use crate::AccelError;

static NEXT_SET_ID: AtomicU64 = AtomicU64::new(1);

/// Transport protocol of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    /// TCP
    Tcp,
    /// UDP
    Udp,
    /// ICMP
    Icmp,
    /// Any other IP protocol number.
    Other(u8),
}

/// What the engine needs to know about the packet or flow direction a payload came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketMeta {
    /// Transport protocol.
    pub proto: Proto,
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Source port (ignored for ICMP and other protocols).
    pub src_port: u16,
    /// Destination port (ignored for ICMP and other protocols).
    pub dst_port: u16,
    /// Flow direction if known (`Some(true)`: client to server). `None`: the engine does not
    /// filter on `flow:to_server`/`to_client`.
    pub to_server: Option<bool>,
    /// Whether the flow is established (TCP handshake seen; for UDP, as the caller decides).
    pub established: bool,
}

/// Packet header fields for rules that test them (`itype`, `flags`, `ttl`, ...). A field left
/// `None` is unknown, and a rule that tests it does not match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeaderFields {
    /// IPv4 TTL.
    pub ttl: Option<u8>,
    /// IPv4 identification.
    pub ip_id: Option<u16>,
    /// IPv4 protocol number.
    pub ip_proto: Option<u8>,
    /// IPv4 flag bits: reserved 0x4, DF 0x2, MF 0x1.
    pub frag_bits: Option<u8>,
    /// TCP flags byte (FIN 0x01 ... CWR 0x80).
    pub tcp_flags: Option<u8>,
    /// TCP sequence number.
    pub seq: Option<u32>,
    /// TCP acknowledgement number.
    pub ack: Option<u32>,
    /// ICMP type.
    pub icmp_type: Option<u8>,
    /// ICMP code.
    pub icmp_code: Option<u8>,
    /// ICMP echo identifier.
    pub icmp_id: Option<u16>,
    /// ICMP echo sequence number.
    pub icmp_seq: Option<u16>,
}

/// Per-flow `flowbits` state, kept by the caller for each flow (both directions share it).
#[derive(Debug, Clone, Default)]
pub struct FlowBits {
    set_id: u64,
    bits: Vec<u64>,
}

impl FlowBits {
    /// An empty state.
    pub fn new() -> FlowBits {
        FlowBits::default()
    }

    /// Clears every bit.
    pub fn clear(&mut self) {
        self.bits.iter_mut().for_each(|w| *w = 0);
    }

    fn bind(&mut self, set_id: u64, n: usize) {
        // Bit numbers are per rule set: state from another (older) set is dropped.
        if self.set_id != set_id {
            self.set_id = set_id;
            self.bits.clear();
        }
        self.bits.resize(n.div_ceil(64), 0);
    }

    fn get(&self, b: u32) -> bool {
        self.bits.get((b / 64) as usize).is_some_and(|w| w & (1 << (b % 64)) != 0)
    }

    fn put(&mut self, b: u32, v: bool) {
        if let Some(w) = self.bits.get_mut((b / 64) as usize) {
            if v {
                *w |= 1 << (b % 64);
            } else {
                *w &= !(1 << (b % 64));
            }
        }
    }
}

/// Per-thread working memory for matching; reuse it across calls (no allocation when warm).
#[derive(Debug, Default)]
pub struct Scratch {
    epoch: u32,
    rule_seen: Vec<u32>,
    mpm: super::mpm::MpmScratch,
    cands: Vec<u32>,
    /// Verdicts of the port-group stage.
    gate: GateMemo,
    /// Verdicts of the non-fast-pattern filter, by distinct string.
    nfp: Memo,
    /// The payload, ASCII-lowercased (taken from the prefilter's scan).
    folded: Vec<u8>,
    msgs: Vec<HttpMessage>,
    flow: FlowBits,
    matches: Matches,
    /// Rule evaluations that ran out of retry budget (counted, reported as no match).
    pub budget_exhausted: u64,
}

impl Scratch {
    /// A new scratch (sized on first use).
    pub fn new() -> Scratch {
        Scratch::default()
    }

    fn begin(&mut self, set: &RuleSet, meta: &PacketMeta) {
        let rules = set.rules.len();
        self.gate.begin(&set.gate, set.id, meta);
        self.nfp.begin(set.nfp.len());
        if self.rule_seen.len() != rules {
            self.rule_seen = vec![0; rules];
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.rule_seen.iter_mut().for_each(|x| *x = 0);
            self.epoch = 1;
        }
        self.cands.clear();
    }
}

/// Result of matching with partial rules included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matches {
    /// Sids of fully supported rules that matched, ascending.
    pub confirmed: Vec<u32>,
    /// Sids of partially supported rules whose evaluated options all matched, ascending
    /// (candidates for a slower, complete inspector, as Pigasus hands packets to Snort).
    pub approximate: Vec<u32>,
}

impl Matches {
    /// Empties both lists.
    pub fn clear(&mut self) {
        self.confirmed.clear();
        self.approximate.clear();
    }
}

/// A compiled flowbits operation (bit numbers resolved).
#[derive(Debug, Clone)]
enum FbOp {
    Set(Vec<u32>),
    Unset(Vec<u32>),
    Toggle(Vec<u32>),
    IsSet(Vec<u32>, bool),
    IsNotSet(Vec<u32>, bool),
}

/// A rule ready for matching.
#[derive(Debug, Clone)]
struct Compiled {
    rule: Rule,
    segs: Vec<CompiledSegment>,
    fb: Vec<FbOp>,
    fb_check: bool,
    noalert: bool,
    full: bool,
    needs_http: bool,
    uses_file_data: bool,
}

/// A compiled, immutable rule set.
#[derive(Debug)]
pub struct RuleSet {
    id: u64,
    rules: Vec<Compiled>,
    prefilter: Prefilter,
    gate: HeaderGate,
    /// Each fast pattern's rules grouped by header (one gate verdict per group).
    groups: PatternGroups,
    nfp: NfpFilter,
    filters: bool,
    /// Whether some rule inspects an HTTP or file_data buffer.
    any_http: bool,
    flowbit_count: usize,
    by_sid: HashMap<u32, usize>,
}

/// The key under which an unsupported reason is counted (its text before any " (").
fn reason_kind(s: &str) -> String {
    s.split(" (").next().unwrap_or(s).to_string()
}

impl RuleSet {
    /// Loads a rules file leniently: rules with syntax errors are skipped and listed in the
    /// report; rules with unsupported options load as partial. Fails only if the file cannot be read.
    pub fn load(path: &Path, vars: &Vars) -> Result<(RuleSet, LoadReport), AccelError> {
        let text = AccelError::read_to_string(path)?;
        RuleSet::parse(&text, &path.display().to_string(), vars, false)
    }

    /// Loads a rules file strictly: the first rule with a syntax error (or a repeated gid:sid)
    /// is returned as `AccelError::Parse { file, line, problem }`.
    pub fn load_strict(path: &Path, vars: &Vars) -> Result<(RuleSet, LoadReport), AccelError> {
        let text = AccelError::read_to_string(path)?;
        RuleSet::parse(&text, &path.display().to_string(), vars, true)
    }

    /// Parses and compiles a rules text; `source` names it in messages.
    pub fn parse(text: &str, source: &str, vars: &Vars, strict: bool) -> Result<(RuleSet, LoadReport), AccelError> {
        let parsed = parse_rules(text, source, vars, strict)?;
        let mut report = LoadReport { errors: parsed.errors, ..Default::default() };
        let mut seen: HashMap<(u32, u32), usize> = HashMap::new();
        let mut kept: Vec<Rule> = Vec::new();
        for r in parsed.rules {
            if let Some(&first) = seen.get(&(r.gid, r.sid)) {
                let e = AccelError::parse(
                    source,
                    r.line,
                    format!("duplicate rule {}:{} (first defined at line {first}); skipped", r.gid, r.sid),
                );
                if strict {
                    return Err(e);
                }
                report.errors.push(e);
                continue;
            }
            seen.insert((r.gid, r.sid), r.line);
            kept.push(r);
        }
        report.skipped = report.errors.len();
        kept.sort_by_key(|r| (r.sid, r.gid));

        let mut bit_ids: HashMap<String, u32> = HashMap::new();
        let mut rules = Vec::with_capacity(kept.len());
        for mut rule in kept {
            let (segs, pcre_unsupported) = compile_segments(&rule.segments);
            rule.unsupported.extend(pcre_unsupported);
            annotate_approximations(&mut rule);
            let mut bit = |n: &String| -> u32 {
                let next = bit_ids.len() as u32;
                *bit_ids.entry(n.clone()).or_insert(next)
            };
            let mut fb = Vec::new();
            for op in &rule.flowbits {
                fb.push(match op {
                    FlowbitsOp::Set(b) => FbOp::Set(b.iter().map(&mut bit).collect()),
                    FlowbitsOp::Unset(b) => FbOp::Unset(b.iter().map(&mut bit).collect()),
                    FlowbitsOp::Toggle(b) => FbOp::Toggle(b.iter().map(&mut bit).collect()),
                    FlowbitsOp::IsSet { bits, any } => FbOp::IsSet(bits.iter().map(&mut bit).collect(), *any),
                    FlowbitsOp::IsNotSet { bits, any } => FbOp::IsNotSet(bits.iter().map(&mut bit).collect(), *any),
                    FlowbitsOp::NoAlert => continue,
                });
            }
            let fb_check = fb.iter().any(|o| matches!(o, FbOp::IsSet(..) | FbOp::IsNotSet(..)));
            let needs_http = segs.iter().any(|s| s.buffer.is_http());
            let uses_file_data = segs.iter().any(|s| s.buffer == BufferKind::FileData);
            let full = rule.fully_supported();
            if full {
                report.fully_supported += 1;
            } else {
                report.partial += 1;
                let mut kinds: Vec<String> = rule.unsupported.iter().map(|s| reason_kind(s)).collect();
                kinds.sort();
                kinds.dedup();
                for k in kinds {
                    *report.unsupported_options.entry(k).or_insert(0) += 1;
                }
                report.per_rule.push((rule.sid, rule.unsupported.clone()));
            }
            for a in &rule.approximations {
                *report.approximations.entry(a.clone()).or_insert(0) += 1;
            }
            let noalert = rule.noalert();
            rules.push(Compiled { rule, segs, fb, fb_check, noalert, full, needs_http, uses_file_data });
        }
        report.total = report.fully_supported + report.partial + report.skipped;

        let pre_rules: Vec<PrefilterRule<'_>> = rules
            .iter()
            .enumerate()
            .map(|(i, c)| PrefilterRule {
                index: i as u32,
                pattern: c.rule.fast_pattern().map(|f| f.fast_slice()),
                proto: c.rule.proto,
                src_ports: &c.rule.src_ports,
                dst_ports: &c.rule.dst_ports,
                bidirectional: c.rule.bidirectional,
            })
            .collect();
        report.with_fast_pattern = pre_rules.iter().filter(|r| r.pattern.is_some()).count();
        let prefilter = Prefilter::build(&pre_rules);
        report.distinct_fast_patterns = prefilter.pattern_count();
        let by_sid = rules.iter().enumerate().map(|(i, c)| (c.rule.sid, i)).collect();
        let any_http = rules.iter().any(|c| c.needs_http || c.uses_file_data);
        let gate = HeaderGate::build(rules.iter().map(|c| &c.rule));
        let nfp = NfpFilter::build(rules.iter().map(|c| &c.rule));
        let groups = PatternGroups::build(&gate, prefilter.pattern_count(), |p| prefilter.rules_of(p));
        let set = RuleSet {
            id: NEXT_SET_ID.fetch_add(1, Ordering::Relaxed),
            rules,
            prefilter,
            gate,
            groups,
            nfp,
            filters: true,
            any_http,
            flowbit_count: bit_ids.len(),
            by_sid,
        };
        Ok((set, report))
    }

    /// Number of loaded rules (fully supported and partial).
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is loaded.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The loaded rules in sid order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().map(|c| &c.rule)
    }

    /// The rule with this sid (gid 1 first if several gids share it).
    pub fn rule(&self, sid: u32) -> Option<&Rule> {
        self.by_sid.get(&sid).map(|&i| &self.rules[i].rule)
    }

    /// Whether the rule with this sid is fully supported.
    pub fn is_fully_supported(&self, sid: u32) -> bool {
        self.by_sid.get(&sid).is_some_and(|&i| self.rules[i].full)
    }

    /// The prefilter (for benchmarks and inspection).
    pub fn prefilter(&self) -> &Prefilter {
        &self.prefilter
    }

    /// Turns the port-group stage and the non-fast-pattern filter on (the default) or off.
    /// Off, every prefilter candidate is fully verified: the same alerts, more work (for
    /// tests that check the filters change nothing, and for before/after measurements).
    pub fn set_filters(&mut self, on: bool) {
        self.filters = on;
    }

    /// Whether the filters before verification are on.
    pub fn filters(&self) -> bool {
        self.filters
    }

    /// Appends to `out` the sids of fully supported rules that match `payload` (header and
    /// every option), sorted ascending and deduplicated. Flowbits start empty for this call;
    /// header-field tests see unknown fields (use [`RuleSet::match_packet`] to supply them).
    pub fn match_payload(&self, meta: &PacketMeta, payload: &[u8], scratch: &mut Scratch, out: &mut Vec<u32>) {
        let mut m = std::mem::take(&mut scratch.matches);
        let mut flow = std::mem::take(&mut scratch.flow);
        flow.bind(self.id, self.flowbit_count);
        flow.clear();
        self.match_packet(meta, &HeaderFields::default(), payload, &mut flow, scratch, &mut m);
        scratch.flow = flow;
        // `confirmed` is sorted and deduplicated already.
        out.extend_from_slice(&m.confirmed);
        scratch.matches = m;
    }

    /// Full matching: header fields, the caller's per-flow `flowbits` state, and both confirmed
    /// and approximate (partial-rule) matches, written to `out` (cleared first).
    pub fn match_packet(
        &self,
        meta: &PacketMeta,
        hdr: &HeaderFields,
        payload: &[u8],
        flow: &mut FlowBits,
        scratch: &mut Scratch,
        out: &mut Matches,
    ) {
        self.run(meta, hdr, payload, None, flow, scratch, out);
    }

    /// [`RuleSet::match_packet`] on a stream buffer whose fast patterns the caller already
    /// knows: `patterns` must be the ids of exactly the prefilter patterns present in `buf`
    /// (kept across segments by a [`super::StreamPatterns`]), so the buffer is not scanned
    /// again. The result is the same as `match_packet` on `buf`.
    #[allow(clippy::too_many_arguments)]
    pub fn match_stream(
        &self,
        meta: &PacketMeta,
        hdr: &HeaderFields,
        buf: &[u8],
        patterns: &[u32],
        flow: &mut FlowBits,
        scratch: &mut Scratch,
        out: &mut Matches,
    ) {
        self.run(meta, hdr, buf, Some(patterns), flow, scratch, out);
    }

    /// Matching with the raw payload's fast patterns found by a scan (`known` is `None`) or
    /// given by the caller.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        meta: &PacketMeta,
        hdr: &HeaderFields,
        payload: &[u8],
        known: Option<&[u32]>,
        flow: &mut FlowBits,
        scratch: &mut Scratch,
        out: &mut Matches,
    ) {
        out.clear();
        flow.bind(self.id, self.flowbit_count);
        scratch.begin(self, meta);
        self.collect_candidates(meta, payload, known, scratch);
        if self.filters {
            // The scan leaves the payload folded; known patterns mean no scan, so fold here
            // (never reuse the scan scratch's fold then: it belongs to another buffer).
            if known.is_none() {
                scratch.mpm.swap_folded(&mut scratch.folded);
            }
            if known.is_some() || scratch.folded.len() != payload.len() {
                scratch.folded.clear();
                if !scratch.cands.is_empty() || (self.any_http && looks_like_http(payload)) {
                    scratch.folded.extend(payload.iter().map(u8::to_ascii_lowercase));
                }
            }
            self.filter_candidates(0, scratch);
        }
        // Parsed whatever the payload's candidates are: a fast pattern may occur only in a
        // normalized buffer (a percent-encoded URI), and no raw candidate announces it.
        let http = self.any_http && looks_like_http(payload);
        if scratch.cands.is_empty() && !http {
            return;
        }
        let mut msgs = std::mem::take(&mut scratch.msgs);
        msgs.clear();
        if http {
            parse_messages(payload, &mut msgs);
            // Normalized buffers can hold fast patterns that the raw bytes do not.
            let before = scratch.cands.len();
            for m in &msgs {
                if m.uri != m.raw_uri {
                    self.scan_into(&m.uri, meta, scratch);
                }
                if m.body_decoded {
                    self.scan_into(&m.body, meta, scratch);
                }
            }
            if self.filters {
                self.filter_candidates(before, scratch);
            }
        }
        let mut cands = std::mem::take(&mut scratch.cands);
        // Sid order (rule index order), rules that test flowbits last: a plain integer sort,
        // then a stable move of the (rare) flowbits testers to the end.
        cands.sort_unstable();
        if cands.iter().any(|&r| self.rules[r as usize].fb_check) {
            cands.sort_by_key(|&r| self.rules[r as usize].fb_check);
        }
        for &ri in &cands {
            let c = &self.rules[ri as usize];
            let header_ok = self.filters || self.gate.matches(ri, meta);
            if !header_ok || !tests_match(&c.rule.header_tests, hdr, payload.len()) {
                continue;
            }
            if !flowbit_conditions(&c.fb, flow) {
                continue;
            }
            if !self.detect(c, payload, &msgs, scratch) {
                continue;
            }
            apply_flowbits(&c.fb, flow);
            if c.noalert {
                continue;
            }
            if c.full {
                out.confirmed.push(c.rule.sid);
            } else {
                out.approximate.push(c.rule.sid);
            }
        }
        scratch.cands = cands;
        scratch.msgs = msgs;
        out.confirmed.sort_unstable();
        out.confirmed.dedup();
        out.approximate.sort_unstable();
        out.approximate.dedup();
    }

    fn collect_candidates(&self, meta: &PacketMeta, payload: &[u8], known: Option<&[u32]>, scratch: &mut Scratch) {
        match known {
            None => self.scan_into(payload, meta, scratch),
            Some(pats) => {
                let epoch = scratch.epoch;
                let Scratch { rule_seen, cands, gate, .. } = scratch;
                for &p in pats {
                    self.offer_pattern(p, meta, epoch, rule_seen, gate, cands);
                }
            }
        }
        let pc = match meta.proto {
            Proto::Tcp => ProtoClass::Tcp,
            Proto::Udp => ProtoClass::Udp,
            Proto::Icmp => ProtoClass::Icmp,
            Proto::Other(_) => ProtoClass::Other,
        };
        let epoch = scratch.epoch;
        let Scratch { rule_seen, cands, gate, .. } = scratch;
        self.prefilter.always(pc, meta.src_port, meta.dst_port, |l| {
            l.iter().for_each(|&r| self.offer(r, meta, epoch, rule_seen, gate, cands))
        });
    }

    fn scan_into(&self, hay: &[u8], meta: &PacketMeta, scratch: &mut Scratch) {
        let epoch = scratch.epoch;
        let pre = &self.prefilter;
        let Scratch { mpm, rule_seen, cands, gate, .. } = scratch;
        pre.scan(hay, mpm, |p| self.offer_pattern(p, meta, epoch, rule_seen, gate, cands));
    }

    /// Queues the rules of fast pattern `p` (see [`RuleSet::offer`]); with the filters on,
    /// a group of rules that share a header passes or fails the port-group stage at once.
    #[inline]
    fn offer_pattern(
        &self,
        p: u32,
        meta: &PacketMeta,
        epoch: u32,
        seen: &mut [u32],
        gate: &mut GateMemo,
        cands: &mut Vec<u32>,
    ) {
        if !self.filters {
            for &r in self.prefilter.rules_of(p) {
                self.offer(r, meta, epoch, seen, gate, cands);
            }
            return;
        }
        for (h, rules) in self.groups.of(p) {
            if !self.gate.passes_header(h, meta, gate) {
                continue;
            }
            for &r in rules {
                if let Some(s) = seen.get_mut(r as usize) {
                    if *s != epoch {
                        *s = epoch;
                        cands.push(r);
                    }
                }
            }
        }
    }

    /// Queues rule `r` for verification once per packet, if the port-group stage lets it through.
    #[inline]
    fn offer(
        &self,
        r: u32,
        meta: &PacketMeta,
        epoch: u32,
        seen: &mut [u32],
        gate: &mut GateMemo,
        cands: &mut Vec<u32>,
    ) {
        if let Some(s) = seen.get_mut(r as usize) {
            if *s != epoch {
                *s = epoch;
                if !self.filters || self.gate.passes(r, meta, gate) {
                    cands.push(r);
                }
            }
        }
    }

    /// The non-fast-pattern filter over the candidates from index `from` on.
    fn filter_candidates(&self, from: usize, scratch: &mut Scratch) {
        let Scratch { cands, nfp, folded, .. } = scratch;
        let mut keep = from;
        for i in from..cands.len() {
            let r = cands[i];
            if self.nfp.passes(r, folded, nfp) {
                cands[keep] = r;
                keep += 1;
            }
        }
        cands.truncate(keep);
    }

    /// Evaluates the detection options of `c` over the payload's contexts.
    fn detect(&self, c: &Compiled, payload: &[u8], msgs: &[HttpMessage], scratch: &mut Scratch) -> bool {
        if c.segs.is_empty() {
            return true;
        }
        let mut run = |msg: Option<&HttpMessage>| -> bool {
            let mut st = EvalState::default();
            let ok = c.segs.iter().all(|s| match buffer(s.buffer, payload, msg) {
                Some(b) => eval_segment(s, b, &mut st),
                None => false,
            });
            if st.budget == 0 {
                scratch.budget_exhausted += 1;
            }
            ok
        };
        if c.needs_http || (c.uses_file_data && !msgs.is_empty()) {
            msgs.iter().any(|m| run(Some(m)))
        } else {
            run(None)
        }
    }
}

/// The bytes of buffer `kind` for one context.
fn buffer<'a>(kind: BufferKind, pkt: &'a [u8], msg: Option<&'a HttpMessage>) -> Option<&'a [u8]> {
    match kind {
        BufferKind::Pkt | BufferKind::Raw => Some(pkt),
        BufferKind::FileData => Some(msg.map_or(pkt, |m| &m.body[..])),
        _ => {
            let m = msg?;
            let b: &[u8] = match kind {
                BufferKind::HttpUri if m.is_request => &m.uri,
                BufferKind::HttpRawUri if m.is_request => &m.raw_uri,
                BufferKind::HttpMethod if m.is_request => &m.method,
                BufferKind::HttpHeader | BufferKind::HttpRawHeader => &m.header,
                BufferKind::HttpCookie => &m.cookie,
                BufferKind::HttpClientBody if m.is_request => &m.body,
                BufferKind::HttpStatCode if !m.is_request => &m.stat_code,
                BufferKind::HttpStatMsg if !m.is_request => &m.stat_msg,
                _ => return None,
            };
            if b.is_empty() {
                None
            } else {
                Some(b)
            }
        }
    }
}

/// Records approximation notes that depend on the whole rule.
fn annotate_approximations(rule: &mut Rule) {
    if !rule.services.is_empty() {
        rule.approximations.push("service (header ports decide; no service identification)".into());
    }
    let fd = rule.segments.iter().any(|s| s.buffer == BufferKind::FileData);
    if fd && rule.services.iter().any(|s| s != "http") {
        rule.approximations.push("file_data outside HTTP (whole payload; no MIME/FTP decoding)".into());
    }
    if rule.segments.iter().any(|s| s.buffer == BufferKind::HttpUri) {
        rule.approximations.push("http_uri (our normalization subset)".into());
    }
    if rule.segments.iter().any(|s| s.buffer == BufferKind::HttpHeader) {
        rule.approximations.push("http_header (raw header block)".into());
    }
    rule.approximations.sort();
    rule.approximations.dedup();
}

fn bits_test(mode: char, bits: u8, have: u8) -> bool {
    match mode {
        '+' => have & bits == bits,
        '*' => have & bits != 0,
        '!' => have & bits == 0,
        _ => have == bits,
    }
}

fn tests_match(tests: &[HeaderTest], h: &HeaderFields, dsize: usize) -> bool {
    tests.iter().all(|t| match t {
        HeaderTest::Dsize(r) => r.check(dsize as u64),
        HeaderTest::IcmpType(r) => h.icmp_type.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::IcmpCode(r) => h.icmp_code.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::IcmpId(r) => h.icmp_id.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::IcmpSeq(r) => h.icmp_seq.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::Ttl(r) => h.ttl.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::IpId(r) => h.ip_id.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::Seq(r) => h.seq.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::Ack(r) => h.ack.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::IpProto(r) => h.ip_proto.is_some_and(|v| r.check(u64::from(v))),
        HeaderTest::TcpFlags { mode, bits, ignore } => {
            h.tcp_flags.is_some_and(|f| bits_test(*mode, *bits, f & !ignore))
        }
        HeaderTest::FragBits { mode, bits } => h.frag_bits.is_some_and(|f| bits_test(*mode, *bits, f)),
    })
}

fn flowbit_conditions(ops: &[FbOp], flow: &FlowBits) -> bool {
    ops.iter().all(|o| match o {
        FbOp::IsSet(b, any) => {
            if *any {
                b.iter().any(|&x| flow.get(x))
            } else {
                b.iter().all(|&x| flow.get(x))
            }
        }
        FbOp::IsNotSet(b, any) => {
            if *any {
                b.iter().any(|&x| !flow.get(x))
            } else {
                b.iter().all(|&x| !flow.get(x))
            }
        }
        _ => true,
    })
}

fn apply_flowbits(ops: &[FbOp], flow: &mut FlowBits) {
    for o in ops {
        match o {
            FbOp::Set(b) => b.iter().for_each(|&x| flow.put(x, true)),
            FbOp::Unset(b) => b.iter().for_each(|&x| flow.put(x, false)),
            FbOp::Toggle(b) => b.iter().for_each(|&x| {
                let v = flow.get(x);
                flow.put(x, !v)
            }),
            _ => {}
        }
    }
}

/// `(sid, fast pattern, nocase)` of every loaded rule that has a fast pattern, in sid order:
/// the pattern list to give a peer matcher (Hyperscan) for a like-for-like benchmark.
pub fn fast_patterns(set: &RuleSet) -> Vec<(u32, Vec<u8>, bool)> {
    set.rules
        .iter()
        .filter_map(|c| c.rule.fast_pattern().map(|f| (c.rule.sid, f.fast_slice().to_vec(), f.nocase)))
        .collect()
}

// RuleSet must stay shareable across threads.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RuleSet>();
};
