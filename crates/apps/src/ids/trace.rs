//! A deterministic IDS test trace: background TCP conversations with random payloads, and
//! attack conversations whose stream carries a payload built from one Snort rule
//! ([`accel::ids::synth`]), split so that the rule's contents straddle segment boundaries,
//! with a fraction of segments reordered.
//!
//! Every conversation is checked with the engine itself in a single-threaded reference pass
//! (the rules evaluated on the stream prefix at every segment boundary, as the IDS does):
//! background conversations that match anything are regenerated, and a rule is planted only if
//! its conversation matches that rule and no other. So the expected (sid, flow) set is exactly
//! the planted one.

use std::collections::{BTreeSet, HashSet};
use std::net::Ipv4Addr;

use accel::ids::rule::{Detect, RuleProto};
use accel::ids::synth::attack_for_rule;
use accel::ids::{FlowBits, HeaderFields, Matches, PacketMeta, Proto, Rule, RuleSet, Scratch};
use middlebox::frames::{self, Endpoints};
use wire::flags;

use super::flow::FlowKey;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceConfig {
    /// Seed of the generator (same seed, same trace).
    pub seed: u64,
    /// Background conversations.
    pub background_flows: usize,
    /// Attack conversations to plant (one rule each, distinct rules).
    pub attacks: usize,
    /// Most data segments per direction of a background conversation.
    pub max_segments: usize,
    /// Largest segment payload.
    pub mss: usize,
    /// Fraction of data segments delivered after their successor.
    pub reorder: f64,
    /// Attack conversations whose split segments are additionally reordered (at least).
    pub reordered_attacks: usize,
    /// Largest attack payload accepted (must fit the IDS's stream window).
    pub max_attack_payload: usize,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            seed: 1,
            background_flows: 2000,
            attacks: 200,
            max_segments: 6,
            mss: 1460,
            reorder: 0.003,
            reordered_attacks: 10,
            max_attack_payload: 8000,
        }
    }
}

/// A generated trace and what an IDS must report for it.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The frames, in arrival order.
    pub frames: Vec<Vec<u8>>,
    /// The planted (sid, flow) pairs.
    pub planted: BTreeSet<(u32, FlowKey)>,
    /// Frames of attack conversations.
    pub attack_frames: usize,
    /// Data segments in the trace.
    pub data_segments: usize,
    /// Data segments delivered out of order.
    pub reordered: usize,
    /// Rule contents cut by a segment boundary.
    pub split_contents: usize,
    /// Rules tried and rejected (no payload, or their conversation matches other rules too).
    pub rejected_rules: usize,
    /// Background payloads regenerated because they matched a rule.
    pub regenerated: usize,
}

/// xorshift64*: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p && p > 0.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One direction of a conversation: who sends, its initial sequence number, its data cut
/// into segments (end offsets).
struct Side {
    ep: Endpoints,
    isn: u32,
    data: Vec<u8>,
    cuts: Vec<usize>,
}

/// A packet of a conversation before interleaving.
struct Pkt {
    frame: Vec<u8>,
    /// (direction, index of the data segment) for data segments.
    data: Option<(usize, usize)>,
}

/// Header fields of the segments `frames::tcp` builds (for the reference pass).
fn data_hdr(seq: u32, ack: u32) -> HeaderFields {
    HeaderFields {
        ttl: Some(64),
        ip_id: Some(0),
        ip_proto: Some(6),
        frag_bits: Some(0x2),
        tcp_flags: Some(flags::ACK | flags::PSH),
        seq: Some(seq),
        ack: Some(ack),
        ..HeaderFields::default()
    }
}

/// The reference pass: sids matched on the stream prefix at every segment boundary of each
/// direction of a conversation (client side first).
fn reference(rules: &RuleSet, sides: &[Side; 2], scratch: &mut Scratch) -> BTreeSet<u32> {
    let mut found = BTreeSet::new();
    let mut bits = FlowBits::new();
    let mut m = Matches::default();
    for (d, s) in sides.iter().enumerate() {
        let other = &sides[1 - d];
        let meta = PacketMeta {
            proto: Proto::Tcp,
            src: s.ep.src,
            dst: s.ep.dst,
            src_port: s.ep.sport,
            dst_port: s.ep.dport,
            to_server: Some(d == 0),
            established: true,
        };
        let mut start = 0;
        for &end in &s.cuts {
            let hdr = data_hdr(s.isn.wrapping_add(1).wrapping_add(start as u32), other.isn.wrapping_add(1));
            rules.match_packet(&meta, &hdr, &s.data[..end], &mut bits, scratch, &mut m);
            found.extend(m.confirmed.iter().copied());
            start = end;
        }
    }
    found
}

/// Cut `len` bytes into segments of at most `mss` at random places, plus the given cuts.
fn cut(rng: &mut Rng, len: usize, mss: usize, forced: &[usize]) -> Vec<usize> {
    let mut cuts: Vec<usize> = forced.iter().copied().filter(|&c| c > 0 && c < len).collect();
    cuts.push(len);
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for c in cuts {
        while c - start > mss {
            start += 1 + rng.below(mss as u64) as usize;
            out.push(start);
        }
        out.push(c);
        start = c;
    }
    out
}

/// Case-insensitive or exact search.
fn find(hay: &[u8], pat: &[u8], nocase: bool) -> Option<usize> {
    if pat.is_empty() || pat.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - pat.len()).find(|&i| {
        let w = &hay[i..i + pat.len()];
        if nocase {
            w.eq_ignore_ascii_case(pat)
        } else {
            w == pat
        }
    })
}

/// Cut points inside each (non-negated, 2+ byte) content of `rule` found in `payload`.
fn content_cuts(rule: &Rule, payload: &[u8]) -> Vec<usize> {
    let mut cuts = Vec::new();
    for s in &rule.segments {
        for item in &s.items {
            if let Detect::Content(c) = item {
                if c.negated || c.pattern.len() < 2 {
                    continue;
                }
                if let Some(at) = find(payload, &c.pattern, c.nocase) {
                    cuts.push(at + c.pattern.len() / 2);
                }
            }
        }
    }
    cuts
}

/// The packets of a conversation: handshake, client data, server data, FINs.
fn conversation(sides: &[Side; 2]) -> Vec<Pkt> {
    let (c, s) = (&sides[0], &sides[1]);
    let mut v = Vec::new();
    let push = |v: &mut Vec<Pkt>, f: Option<Vec<u8>>, data| {
        if let Some(frame) = f {
            v.push(Pkt { frame, data });
        }
    };
    push(&mut v, frames::tcp(&c.ep, c.isn, 0, flags::SYN, &[]), None);
    push(&mut v, frames::tcp(&s.ep, s.isn, c.isn.wrapping_add(1), flags::SYN | flags::ACK, &[]), None);
    push(&mut v, frames::tcp(&c.ep, c.isn.wrapping_add(1), s.isn.wrapping_add(1), flags::ACK, &[]), None);
    for (d, side) in sides.iter().enumerate() {
        let other = &sides[1 - d];
        let mut start = 0;
        for (k, &end) in side.cuts.iter().enumerate() {
            let seq = side.isn.wrapping_add(1).wrapping_add(start as u32);
            let f =
                frames::tcp(&side.ep, seq, other.isn.wrapping_add(1), flags::ACK | flags::PSH, &side.data[start..end]);
            push(&mut v, f, Some((d, k)));
            start = end;
        }
    }
    let fin_seq = |x: &Side| x.isn.wrapping_add(1).wrapping_add(x.data.len() as u32);
    push(&mut v, frames::tcp(&c.ep, fin_seq(c), fin_seq(s), flags::FIN | flags::ACK, &[]), None);
    push(&mut v, frames::tcp(&s.ep, fin_seq(s), fin_seq(c).wrapping_add(1), flags::FIN | flags::ACK, &[]), None);
    push(&mut v, frames::tcp(&c.ep, fin_seq(c).wrapping_add(1), fin_seq(s).wrapping_add(1), flags::ACK, &[]), None);
    v
}

/// Server ports of background conversations.
const SERVER_PORTS: [u16; 8] = [80, 443, 22, 25, 8080, 3306, 5001, 9999];

/// Endpoints of an attack conversation for `rule`: (client, server, payload goes to server).
fn attack_endpoints(rule: &Rule, meta: &PacketMeta, rng: &mut Rng) -> (Endpoints, bool) {
    let pick_addr = |spec: &accel::ids::rule::AddrSpec, fallback: Ipv4Addr, rng: &mut Rng, net: u8| {
        for _ in 0..8 {
            let a = Ipv4Addr::new(net, rng.next() as u8, rng.next() as u8, 1 + rng.below(250) as u8);
            if spec.matches(a) {
                return a;
            }
        }
        fallback
    };
    let pick_port = |set: &accel::ids::rule::PortSet, fallback: u16, rng: &mut Rng| {
        let p = 1024 + rng.below(60000) as u16;
        if set.contains(p) {
            p
        } else {
            fallback
        }
    };
    // Sender of the payload: the rule's source.
    let src = pick_addr(&rule.src, meta.src, rng, 10);
    let dst = pick_addr(&rule.dst, meta.dst, rng, 172);
    let to_server = meta.to_server != Some(false);
    let (sport, dport) = if to_server {
        (pick_port(&rule.src_ports, meta.src_port, rng), meta.dst_port)
    } else {
        (meta.src_port, pick_port(&rule.dst_ports, meta.dst_port, rng))
    };
    let sender = Endpoints { src, dst, sport, dport };
    if to_server {
        (sender, true)
    } else {
        (sender.reversed(), false)
    }
}

/// Rules worth planting: TCP, fully supported, no flowbits or header tests, established.
fn plantable(rules: &RuleSet, r: &Rule) -> bool {
    r.proto == RuleProto::Tcp
        && rules.is_fully_supported(r.sid)
        && r.flowbits.is_empty()
        && r.header_tests.is_empty()
        && !r.flow.not_established
        && !r.segments.is_empty()
}

/// Generate a trace for `rules`.
pub fn generate(rules: &RuleSet, cfg: &TraceConfig) -> Trace {
    let mut rng = Rng::new(cfg.seed);
    let mut scratch = Scratch::new();
    let mut t = Trace::default();
    let mut convs: Vec<(Vec<Pkt>, bool)> = Vec::new();
    let mut keys: HashSet<FlowKey> = HashSet::new();
    let key_of = |e: &Endpoints| FlowKey::of(e.src, e.sport, e.dst, e.dport, 6).0;

    // Attacks.
    let mut cands: Vec<&Rule> = rules.rules().filter(|r| plantable(rules, r)).collect();
    for i in (1..cands.len()).rev() {
        cands.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for rule in cands {
        if t.planted.len() >= cfg.attacks {
            break;
        }
        let Some(a) = attack_for_rule(rule) else {
            t.rejected_rules += 1;
            continue;
        };
        if a.payload.is_empty() || a.payload.len() > cfg.max_attack_payload {
            t.rejected_rules += 1;
            continue;
        }
        let (client, to_server) = attack_endpoints(rule, &a.meta, &mut rng);
        let key = key_of(&client);
        if keys.contains(&key) || client.src == client.dst {
            t.rejected_rules += 1;
            continue;
        }
        let forced = content_cuts(rule, &a.payload);
        let cuts = cut(&mut rng, a.payload.len(), cfg.mss, &forced);
        let split = forced.len();
        let (cdata, sdata, ccuts, scuts) = if to_server {
            (a.payload, Vec::new(), cuts, Vec::new())
        } else {
            (Vec::new(), a.payload, Vec::new(), cuts)
        };
        let sides = [
            Side { ep: client, isn: rng.next() as u32, data: cdata, cuts: ccuts },
            Side { ep: client.reversed(), isn: rng.next() as u32, data: sdata, cuts: scuts },
        ];
        let found = reference(rules, &sides, &mut scratch);
        if found.len() != 1 || !found.contains(&rule.sid) {
            t.rejected_rules += 1;
            continue;
        }
        keys.insert(key);
        t.planted.insert((rule.sid, key));
        t.split_contents += split;
        convs.push((conversation(&sides), true));
    }

    // Background.
    for _ in 0..cfg.background_flows {
        let client = loop {
            let e = Endpoints {
                src: Ipv4Addr::new(10, 200 + rng.below(50) as u8, rng.next() as u8, 1 + rng.below(250) as u8),
                dst: Ipv4Addr::new(172, 31, rng.next() as u8, 1 + rng.below(250) as u8),
                sport: 1024 + rng.below(60000) as u16,
                dport: SERVER_PORTS[rng.below(SERVER_PORTS.len() as u64) as usize],
            };
            if keys.insert(key_of(&e)) {
                break e;
            }
        };
        let sides = loop {
            let make = |ep: Endpoints, rng: &mut Rng| {
                let n = 1 + rng.below(cfg.max_segments as u64) as usize;
                let len: usize = (0..n).map(|_| 1 + rng.below(cfg.mss as u64) as usize).sum();
                let data = rng.bytes(len);
                let cuts = cut(rng, len, cfg.mss, &[]);
                Side { ep, isn: rng.next() as u32, data, cuts }
            };
            let sides = [make(client, &mut rng), make(client.reversed(), &mut rng)];
            if reference(rules, &sides, &mut scratch).is_empty() {
                break sides;
            }
            t.regenerated += 1;
        };
        convs.push((conversation(&sides), false));
    }

    // Reorder: some data segments swap places with the next segment of their direction.
    let mut forced_attacks = cfg.reordered_attacks;
    for (pkts, attack) in &mut convs {
        let positions: Vec<(usize, (usize, usize))> =
            pkts.iter().enumerate().filter_map(|(i, p)| p.data.map(|d| (i, d))).collect();
        t.data_segments += positions.len();
        let mut done = false;
        for w in positions.windows(2) {
            let ((i, (d1, _)), (j, (d2, _))) = (w[0], w[1]);
            if d1 != d2 {
                continue;
            }
            let force = *attack && forced_attacks > 0 && !done;
            if force || rng.chance(cfg.reorder) {
                let (a, b) = pkts.split_at_mut(j);
                std::mem::swap(&mut a[i].frame, &mut b[0].frame);
                t.reordered += 1;
                if force {
                    forced_attacks -= 1;
                }
                done = true;
            }
        }
    }

    // Interleave the conversations, each in its own order.
    let mut next: Vec<usize> = vec![0; convs.len()];
    let mut live: Vec<usize> = (0..convs.len()).collect();
    while !live.is_empty() {
        let k = rng.below(live.len() as u64) as usize;
        let c = live[k];
        let (pkts, attack) = &mut convs[c];
        let frame = std::mem::take(&mut pkts[next[c]].frame);
        next[c] += 1;
        if *attack {
            t.attack_frames += 1;
        }
        t.frames.push(frame);
        if next[c] == pkts.len() {
            live.swap_remove(k);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_respect_mss_and_forced_points() {
        let mut rng = Rng::new(3);
        let c = cut(&mut rng, 5000, 1460, &[10, 4000, 0, 6000]);
        assert_eq!(*c.last().unwrap(), 5000);
        assert!(c.contains(&10) && c.contains(&4000));
        let mut start = 0;
        for &e in &c {
            assert!(e > start && e - start <= 1460);
            start = e;
        }
    }

    #[test]
    fn nocase_search() {
        assert_eq!(find(b"xxAbCd", b"abc", true), Some(2));
        assert_eq!(find(b"xxAbCd", b"abc", false), None);
    }
}
