//! The IDS unit matches a stream incrementally (each segment's new bytes scanned once, the
//! stream's fast patterns carried across segments); its alerts must be exactly those of the
//! reference that evaluates the rules on the whole stream prefix at every segment boundary.
//! Attacks built from the community rules are cut at many places, including every place
//! inside the rule's fast pattern, in order and with the last two segments swapped.

use std::collections::BTreeSet;

use accel::ids::rule::RuleProto;
use accel::ids::synth::attack_for_rule;
use accel::ids::{FlowBits, HeaderFields, Matches, PacketMeta, Proto, Rule, Scratch};
use apps::ids::alert::AlertSink;
use apps::ids::{self, FlowKey, IdsConfig, IdsRules};
use link::Instant;
use middlebox::frames::{self, Endpoints};
use middlebox::testlinks::TestLink;
use middlebox::RuntimeConfig;

const RULES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ids/snort3-community.rules");

/// Rules whose conversations the test builds.
const RULES_TRIED: usize = 24;
/// Cuts per payload besides those inside the fast pattern.
const SPREAD_CUTS: usize = 40;

/// One conversation: client endpoints, stream bytes, segment ends, delivery order.
struct Case {
    ep: Endpoints,
    data: Vec<u8>,
    cuts: Vec<usize>,
    order: Vec<usize>,
}

const CI: u32 = 1000;
const SI: u32 = 90_000;

/// The header fields of the client's data segment starting at stream offset `start`.
fn data_hdr(start: usize) -> HeaderFields {
    HeaderFields {
        ttl: Some(64),
        ip_id: Some(0),
        ip_proto: Some(6),
        frag_bits: Some(0x2),
        tcp_flags: Some(0x18),
        seq: Some(CI + 1 + start as u32),
        ack: Some(SI + 1),
        ..HeaderFields::default()
    }
}

impl Case {
    fn frames(&self) -> Vec<Vec<u8>> {
        let c = &self.ep;
        let mut out = vec![
            frames::tcp(c, CI, 0, 0x02, &[]).unwrap(),
            frames::tcp(&c.reversed(), SI, CI + 1, 0x12, &[]).unwrap(),
            frames::tcp(c, CI + 1, SI + 1, 0x10, &[]).unwrap(),
        ];
        let segs: Vec<(usize, usize)> = self.cuts.iter().scan(0, |s, &e| Some((std::mem::replace(s, e), e))).collect();
        for &i in &self.order {
            let (a, b) = segs[i];
            out.push(frames::tcp(c, CI + 1 + a as u32, SI + 1, 0x18, &self.data[a..b]).unwrap());
        }
        out
    }

    /// The sids the rules match on the stream prefix at some segment boundary.
    fn reference(&self, rules: &IdsRules, scratch: &mut Scratch) -> BTreeSet<u32> {
        let meta = PacketMeta {
            proto: Proto::Tcp,
            src: self.ep.src,
            dst: self.ep.dst,
            src_port: self.ep.sport,
            dst_port: self.ep.dport,
            to_server: Some(true),
            established: true,
        };
        let (mut bits, mut m, mut found) = (FlowBits::new(), Matches::default(), BTreeSet::new());
        let mut start = 0;
        for &end in &self.cuts {
            rules.full.match_packet(&meta, &data_hdr(start), &self.data[..end], &mut bits, scratch, &mut m);
            found.extend(m.confirmed.iter().copied());
            start = end;
        }
        found
    }
}

/// Where the rule's fast pattern occurs in `data` (ASCII case-insensitive), if it does.
fn fast_pattern_at(rule: &Rule, data: &[u8]) -> Option<(usize, usize)> {
    let p = rule.fast_pattern()?.fast_slice().to_ascii_lowercase();
    let d = data.to_ascii_lowercase();
    let at = d.windows(p.len().max(1)).position(|w| w == &p[..])?;
    Some((at, p.len()))
}

/// Conversations for one rule's attack: the client port counts up from `port`.
fn cases_for(rule: &Rule, port: &mut u16) -> Vec<Case> {
    let Some(a) = attack_for_rule(rule) else { return Vec::new() };
    let data = a.payload;
    let len = data.len();
    let mut cuts: BTreeSet<usize> = (1..SPREAD_CUTS).map(|i| i * len / SPREAD_CUTS).collect();
    if let Some((at, n)) = fast_pattern_at(rule, &data) {
        cuts.extend(at..=at + n);
    }
    let mut out = Vec::new();
    for c in cuts.into_iter().filter(|&c| c > 0 && c < len) {
        let mid = (c + len) / 2;
        let splits: Vec<(Vec<usize>, Vec<usize>)> = if mid > c && mid < len {
            vec![(vec![c, len], vec![0, 1]), (vec![c, mid, len], vec![0, 2, 1])]
        } else {
            vec![(vec![c, len], vec![0, 1])]
        };
        for (seg_ends, order) in splits {
            *port += 1;
            let ep = Endpoints { src: a.meta.src, dst: a.meta.dst, sport: *port, dport: a.meta.dst_port };
            out.push(Case { ep, data: data.clone(), cuts: seg_ends, order });
        }
    }
    out
}

fn eligible(r: &Rule) -> bool {
    r.proto == RuleProto::Tcp && r.src_ports.is_any() && !r.bidirectional && r.fast_pattern().is_some()
}

#[test]
fn incremental_stream_matching_equals_whole_prefix_reference() {
    let (rules, _) = ids::load_rules(std::path::Path::new(RULES), false).expect("the community rules");
    let pool: Vec<&Rule> = rules
        .full
        .rules()
        .filter(|r| eligible(r))
        .filter(|r| attack_for_rule(r).is_some_and(|a| (2..=1400).contains(&a.payload.len())))
        .collect();
    assert!(pool.len() >= RULES_TRIED, "{} usable rules", pool.len());
    let mut port = 1024;
    let mut cases = Vec::new();
    for i in 0..RULES_TRIED {
        cases.extend(cases_for(pool[i * pool.len() / RULES_TRIED], &mut port));
    }
    let mut scratch = Scratch::new();
    let mut expected = BTreeSet::new();
    let mut alerting = 0;
    for c in &cases {
        let key = FlowKey::of(c.ep.src, c.ep.sport, c.ep.dst, c.ep.dport, 6).0;
        let sids = c.reference(&rules, &mut scratch);
        alerting += usize::from(!sids.is_empty());
        expected.extend(sids.into_iter().map(|s| (s, key)));
    }
    assert!(
        alerting * 2 >= cases.len(),
        "{alerting} of {} conversations alert: the test would prove little",
        cases.len()
    );

    let trace: Vec<Vec<u8>> = cases.iter().flat_map(Case::frames).collect();
    let n = trace.len() as u64;
    let ports: Vec<Box<dyn link::Link>> = vec![Box::new(TestLink::generator(trace, n)), Box::new(TestLink::sink())];
    let mut rt = ids::build(rules.clone(), 1, ports, RuntimeConfig::default(), IdsConfig::default()).unwrap();
    let ctl = rt.control();
    let mut alerts = AlertSink::new(None, None).unwrap();
    let mut flushed = false;
    for _ in 0..1_000_000 {
        let w = rt.step(Instant::ZERO);
        for hp in ctl.host_recv_all() {
            alerts.record(&hp, &rules.full).unwrap();
        }
        if w == 0 && rt.in_flight() == 0 {
            break;
        }
        if w == 0 && !flushed {
            flushed = true;
            ctl.flush(0).unwrap();
        }
    }
    assert_eq!(alerts.unverified, 0, "no segment left unverified");
    let got = alerts.pairs();
    let missing: Vec<_> = expected.difference(got).take(5).collect();
    let extra: Vec<_> = got.difference(&expected).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}, extra {extra:?} ({} cases)", cases.len());
}
