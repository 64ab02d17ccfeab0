//! The filters before verification (port groups, non-fast-pattern strings) change no verdict:
//! the community rules on a varied trace give the same alerts, confirmed and approximate,
//! with the filters on and off, flowbits carried along each flow alike.

use std::net::Ipv4Addr;
use std::path::Path;

use accel::ids::synth::attack_for_rule;
use accel::ids::{FlowBits, HeaderFields, Matches, PacketMeta, Proto, RuleSet, Scratch, Vars};

const RULES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ids/snort3-community.rules");

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A packet of the trace: description, header fields, payload, and the flow it belongs to.
struct Pkt {
    meta: PacketMeta,
    hdr: HeaderFields,
    payload: Vec<u8>,
    flow: usize,
}

const FLOWS: usize = 16;

/// Every synthesizable attack as built, with its ports or direction moved, cut short, with a
/// byte changed, and glued to another one; plus HTTP-like text and random bytes, on varied
/// protocols and ports.
fn trace(set: &RuleSet) -> Vec<Pkt> {
    let mut r = Rng(0x05EE_D1D5);
    let attacks: Vec<_> = set.rules().filter_map(attack_for_rule).collect();
    assert!(attacks.len() > 1000, "only {} attacks synthesized", attacks.len());
    let ports = [80u16, 443, 21, 25, 53, 139, 445, 1433, 3306, 8080, 40000];
    let mut out = Vec::new();
    let mut push = |meta: PacketMeta, hdr: HeaderFields, payload: Vec<u8>, r: &mut Rng| {
        let flow = r.below(FLOWS as u64) as usize;
        out.push(Pkt { meta, hdr, payload, flow });
    };
    for (i, a) in attacks.iter().enumerate() {
        push(a.meta, a.hdr, a.payload.clone(), &mut r);
        let mut moved = a.meta;
        match r.below(4) {
            0 => moved.dst_port = ports[r.below(ports.len() as u64) as usize],
            1 => std::mem::swap(&mut moved.src_port, &mut moved.dst_port),
            2 => moved.to_server = moved.to_server.map(|d| !d),
            _ => moved.proto = [Proto::Tcp, Proto::Udp, Proto::Icmp][r.below(3) as usize],
        }
        push(moved, a.hdr, a.payload.clone(), &mut r);
        let mut changed = a.payload.clone();
        if !changed.is_empty() {
            let at = r.below(changed.len() as u64) as usize;
            changed[at] = r.next() as u8;
            let cut = r.below(changed.len() as u64 + 1) as usize;
            push(a.meta, a.hdr, changed[..cut].to_vec(), &mut r);
            push(a.meta, a.hdr, changed, &mut r);
        }
        let other = &attacks[(i * 7919 + 1) % attacks.len()];
        let mut glued = other.payload.clone();
        glued.extend_from_slice(&a.payload);
        push(a.meta, HeaderFields::default(), glued, &mut r);
    }
    for i in 0..2000 {
        let len = 1 + r.below(1400) as usize;
        let payload: Vec<u8> = if i % 2 == 0 {
            let mut p = b"GET /index.php?id=1%27%20or%201=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: curl\r\n\r\n".to_vec();
            p.extend((0..len).map(|_| b"abcdefghijklmnop /=.%\r\n"[r.below(23) as usize]));
            p
        } else {
            (0..len).map(|_| r.next() as u8).collect()
        };
        let meta = PacketMeta {
            proto: [Proto::Tcp, Proto::Udp, Proto::Icmp, Proto::Other(47)][r.below(4) as usize],
            src: Ipv4Addr::from(r.next() as u32),
            dst: Ipv4Addr::new(10, 0, 0, r.below(256) as u8),
            src_port: ports[r.below(ports.len() as u64) as usize],
            dst_port: ports[r.below(ports.len() as u64) as usize],
            to_server: [None, Some(true), Some(false)][r.below(3) as usize],
            established: r.below(2) == 0,
        };
        push(meta, HeaderFields::default(), payload, &mut r);
    }
    out
}

/// The alerts of every packet, flowbits kept per flow.
fn run(set: &RuleSet, pkts: &[Pkt]) -> Vec<Matches> {
    let mut scratch = Scratch::new();
    let mut flows: Vec<FlowBits> = (0..FLOWS).map(|_| FlowBits::new()).collect();
    let mut out = Vec::with_capacity(pkts.len());
    for p in pkts {
        let mut m = Matches::default();
        set.match_packet(&p.meta, &p.hdr, &p.payload, &mut flows[p.flow], &mut scratch, &mut m);
        out.push(m);
    }
    out
}

#[test]
fn filters_change_no_alert_on_the_community_rules() {
    let (mut set, _) = RuleSet::load(Path::new(RULES), &Vars::default()).expect("the community rules load");
    let pkts = trace(&set);
    assert!(set.filters(), "filters are on by default");
    let with = run(&set, &pkts);
    set.set_filters(false);
    let without = run(&set, &pkts);
    let alerts: usize = without.iter().map(|m| m.confirmed.len() + m.approximate.len()).sum();
    let hit = without.iter().filter(|m| !m.confirmed.is_empty()).count();
    println!("{} packets, {hit} with confirmed alerts, {alerts} alerts in all", pkts.len());
    assert!(hit * 10 >= pkts.len(), "the trace must match rules often: {hit} of {}", pkts.len());
    for (i, (a, b)) in with.iter().zip(&without).enumerate() {
        assert_eq!(a, b, "packet {i} ({:?}): filters on vs off", pkts[i].meta);
    }
}
