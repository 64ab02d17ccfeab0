//! The firewall drops exactly the frames whose source is blacklisted (the real 1,050-prefix
//! list), forwards the rest to the other port in order, counts malformed frames by reason,
//! and takes a new blacklist while traffic flows.

use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::Arc;

use accel::prefix::PrefixSet;
use apps::firewall::{self, Firewall, NonIpv4};
use link::Instant;
use middlebox::frames::{self, Endpoints};
use middlebox::testlinks::TestLink;
use middlebox::{Runtime, RuntimeConfig};

const BLACKLIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/firewall/drop-prefixes.txt");

fn blacklist_text() -> String {
    match std::fs::read_to_string(BLACKLIST) {
        Ok(t) => t,
        Err(e) => panic!("the firewall test needs the blacklist {BLACKLIST}: {e}"),
    }
}

/// (network, length) pairs parsed independently of the accelerator, as the reference.
fn reference(text: &str) -> Vec<(u32, u8)> {
    text.lines()
        .filter_map(|l| l.split(['#', ';']).next())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (a, n) = l.split_once('/').unwrap_or((l, "32"));
            (u32::from(a.parse::<Ipv4Addr>().unwrap()), n.parse().unwrap())
        })
        .collect()
}

fn listed(refs: &[(u32, u8)], ip: Ipv4Addr) -> bool {
    let ip = u32::from(ip);
    refs.iter().any(|&(net, len)| {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
        ip & mask == net & mask
    })
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A trace: one frame from a random address inside every prefix, plus `background` frames
/// from random addresses; both directions (port 0 and port 1). Returns frames per port and
/// the expected number of blocked frames per port.
fn trace(refs: &[(u32, u8)], background: usize, seed: u64) -> ([Vec<Vec<u8>>; 2], [u64; 2]) {
    let mut rng = Rng(seed);
    let mut out: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    let mut blocked = [0u64; 2];
    let mut add = |src: Ipv4Addr, rng: &mut Rng, out: &mut [Vec<Vec<u8>>; 2]| {
        let port = (rng.next() & 1) as usize;
        let e = Endpoints {
            src,
            dst: Ipv4Addr::new(192, 168, 1, (rng.next() % 250) as u8),
            sport: (rng.next() % 60000) as u16 + 1024,
            dport: 443,
        };
        let f = if rng.next().is_multiple_of(2) {
            frames::tcp(&e, rng.next() as u32, 0, 0x18, &[0x41; 20]).unwrap()
        } else {
            frames::udp(&e, &[0x42; 30]).unwrap()
        };
        if listed(refs, src) {
            blocked[port] += 1;
        }
        out[port].push(f);
    };
    for &(net, len) in refs {
        let host_bits = 32 - u32::from(len);
        let off = if host_bits == 0 { 0 } else { (rng.next() as u32) & ((1u64 << host_bits) - 1) as u32 };
        add(Ipv4Addr::from(net | off), &mut rng, &mut out);
        if out[0].len() + out[1].len() < background {
            for _ in 0..background / refs.len() {
                let src = Ipv4Addr::from(rng.next() as u32);
                add(src, &mut rng, &mut out);
            }
        }
    }
    (out, blocked)
}

fn passed_frames(frames: &[Vec<u8>], refs: &[(u32, u8)]) -> Vec<Vec<u8>> {
    frames.iter().filter(|f| !listed(refs, Ipv4Addr::new(f[26], f[27], f[28], f[29]))).cloned().collect()
}

#[test]
fn drops_exactly_the_blacklisted_sources() {
    let text = blacklist_text();
    let refs = reference(&text);
    assert_eq!(refs.len(), 1050);
    let set = Arc::new(PrefixSet::parse(&text, BLACKLIST).unwrap());
    let ([in0, in1], [b0, b1]) = trace(&refs, 30_000, 7);
    assert!(b0 + b1 >= 1050);
    let (p0, p1) = (
        TestLink::generator(in0.clone(), in0.len() as u64).keep(),
        TestLink::generator(in1.clone(), in1.len() as u64).keep(),
    );
    let (t0, t1) = (p0.tally(), p1.tally());
    let ports: Vec<Box<dyn link::Link>> = vec![Box::new(p0), Box::new(p1)];
    let mut rt = firewall::build(set, 2, ports, RuntimeConfig::default(), NonIpv4::Forward).unwrap();
    assert!(rt.run_until_quiet(Instant::ZERO, 100_000));
    let s = rt.stats();
    assert_eq!(s.drops().get("blacklisted"), b0 + b1);
    assert_eq!(s.drops().total(), b0 + b1, "no other drops: {:?}", s.drops());
    // What came out of each port is exactly the passing frames of the other, in order per
    // flow (here: the global order, as the sink sees per-unit interleavings of whole flows).
    let mut got1 = t1.take_kept();
    let mut want1 = passed_frames(&in0, &refs);
    assert_eq!(got1.len(), want1.len());
    got1.sort();
    want1.sort();
    assert_eq!(got1, want1);
    let mut got0 = t0.take_kept();
    let mut want0 = passed_frames(&in1, &refs);
    got0.sort();
    want0.sort();
    assert_eq!(got0, want0);
    let blocked: u64 = s.units.iter().map(|u| u.program_counters.iter().find(|c| c.0 == "blocked").unwrap().1).sum();
    assert_eq!(blocked, b0 + b1);
}

#[test]
fn threaded_firewall_agrees_with_step_mode() {
    let text = blacklist_text();
    let refs = reference(&text);
    let set = Arc::new(PrefixSet::parse(&text, BLACKLIST).unwrap());
    let ([in0, _], [b0, _]) = trace(&refs, 100_000, 11);
    let n = in0.len() as u64;
    let p0 = TestLink::generator(in0, n);
    let p1 = TestLink::sink();
    let t1 = p1.tally();
    let ports: Vec<Box<dyn link::Link>> = vec![Box::new(p0), Box::new(p1)];
    let rt = firewall::build(set, 2, ports, RuntimeConfig::default(), NonIpv4::Forward).unwrap();
    let running = rt.start().unwrap();
    let c = running.control();
    let start = std::time::Instant::now();
    while t1.frames() < n - b0 && start.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    c.wait_quiet(std::time::Duration::from_secs(10)).unwrap();
    let mut rt = running.stop().unwrap();
    let s = rt.stats();
    assert_eq!(t1.frames(), n - b0);
    assert_eq!(s.drops().get("blacklisted"), b0);
    assert_eq!(s.drops().total(), b0);
}

#[test]
fn malformed_frames_are_counted_by_reason() {
    let set = Arc::new(PrefixSet::parse("10.0.0.0/8\n", "inline").unwrap());
    let e = Endpoints { src: Ipv4Addr::new(1, 1, 1, 1), dst: Ipv4Addr::new(2, 2, 2, 2), sport: 1, dport: 2 };
    let good = frames::tcp(&e, 1, 1, 0x10, b"data").unwrap();
    let mut trace = Vec::new();
    for n in 1..good.len() {
        trace.push(good[..n].to_vec());
    }
    let mut bad_version = good.clone();
    bad_version[14] = 0x65;
    trace.push(bad_version);
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    trace.push(arp.clone());
    let n = trace.len() as u64;
    let sink = TestLink::sink();
    let t = sink.tally();
    let mut rt = Runtime::builder()
        .port(TestLink::generator(trace, n))
        .port(sink)
        .unit(Firewall::new(set.clone()).non_ipv4(NonIpv4::Drop))
        .unit(Firewall::new(set).non_ipv4(NonIpv4::Drop))
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(Instant::ZERO, 1000));
    let s = rt.stats();
    let d = s.drops();
    // Every cut of the frame is shorter than its Ethernet header or its IPv4 total length.
    assert_eq!(d.get("truncated"), good.len() as u64 - 1, "{d:?}");
    assert_eq!(d.get("bad_version"), 1);
    assert_eq!(d.get("non_ipv4"), 1);
    assert_eq!(t.frames() + d.total(), n);
    assert_eq!(s.units.iter().map(|u| u.unit.program_panics).sum::<u64>(), 0);
}

#[test]
fn blacklist_swaps_while_traffic_flows() {
    let e = |i: u8| Endpoints {
        src: Ipv4Addr::new(10, 0, 0, i),
        dst: Ipv4Addr::new(2, 2, 2, 2),
        sport: 1000 + u16::from(i),
        dport: 80,
    };
    let trace: Vec<Vec<u8>> = (0..100u8).map(|i| frames::udp(&e(i), b"x").unwrap()).collect();
    let set = Arc::new(PrefixSet::parse("10.0.0.0/8\n", "inline").unwrap());
    let sink = TestLink::sink();
    let t = sink.tally();
    let cfg = RuntimeConfig { batch: 10, ..RuntimeConfig::default() };
    let mut rt = Runtime::builder_with(cfg)
        .port(TestLink::generator(trace, 100))
        .port(sink)
        .unit(Firewall::new(set))
        .build()
        .unwrap();
    for _ in 0..3 {
        rt.step(Instant::ZERO);
    }
    let blocked_before = rt.stats().drops().get("blacklisted");
    assert!(blocked_before > 0 && blocked_before < 100);
    let reply = rt.control().configure(0, Box::new(PrefixSet::default())).unwrap();
    assert!(rt.run_until_quiet(Instant::ZERO, 1000));
    assert_eq!(reply.try_take(), Some(Ok(())));
    let s = rt.stats();
    assert_eq!(s.drops().get("blacklisted"), blocked_before);
    assert_eq!(t.frames(), 100 - blocked_before);
    let bad = rt.control().configure(0, Box::new(42u32)).unwrap();
    rt.step(Instant::ZERO);
    assert!(bad.try_take().unwrap().unwrap_err().contains("PrefixSet"));
}

#[test]
fn a_broken_blacklist_names_file_line_and_problem() {
    let dir = std::env::temp_dir().join(format!("lr-fw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.txt");
    std::fs::write(&f, "1.2.3.0/24\n# fine\n300.1.2.3/8\n").unwrap();
    let e = PrefixSet::load(Path::new(&f)).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.starts_with(&format!("{}:3: ", f.display())), "{e}");
}

/// `frame` with an 802.1Q tag (VLAN `vid`) inserted after the MAC addresses.
fn tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00]);
    f.extend_from_slice(&vid.to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

#[test]
fn vlan_tagged_ipv4_counts_as_ipv4_as_the_verdict_parses_it() {
    let set = Arc::new(PrefixSet::parse("10.0.0.0/8\n", "inline").unwrap());
    let ok = Endpoints { src: Ipv4Addr::new(1, 1, 1, 1), dst: Ipv4Addr::new(2, 2, 2, 2), sport: 1, dport: 2 };
    let bad = Endpoints { src: Ipv4Addr::new(10, 1, 1, 1), ..ok };
    let ipv4 = frames::tcp(&ok, 1, 1, 0x10, b"data").unwrap();
    let mut arp = ipv4.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let trace = vec![
        tagged(&ipv4, 5),
        tagged(&frames::tcp(&bad, 1, 1, 0x10, b"data").unwrap(), 5),
        tagged(&arp, 7),
        ipv4.clone(),
    ];
    let n = trace.len() as u64;
    let sink = TestLink::sink();
    let t = sink.tally();
    let mut rt = Runtime::builder()
        .port(TestLink::generator(trace, n))
        .port(sink)
        .unit(Firewall::new(set).non_ipv4(NonIpv4::Forward))
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(Instant::ZERO, 1000));
    let s = rt.stats();
    let count = |name: &str| -> u64 {
        s.units.iter().flat_map(|u| u.program_counters.iter()).filter(|(k, _)| *k == name).map(|(_, v)| v).sum()
    };
    // The tagged IPv4 frames are judged (one passed, one blocked) and are not "non-IPv4";
    // only the tagged ARP frame is.
    assert_eq!((count("passed"), count("blocked"), count("non_ipv4")), (3, 1, 1));
    assert_eq!(t.frames(), 3);
}
