//! The IDS acceptance test: attacks drawn from the community rules, planted in background
//! TCP traffic with contents split across segments and 0.3% reordering, are reported exactly
//! (every planted (sid, flow), nothing else) by IDS units behind the flow-hash LB, in step
//! mode and on threads; plus small hand-made cases of the reassembly.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use accel::ids::{RuleSet, Vars};
use apps::ids::alert::AlertSink;
use apps::ids::trace::{generate, TraceConfig};
use apps::ids::{self, FlowKey, IdsConfig, IdsRules, IdsUnit};
use link::Instant;
use middlebox::frames::{self, Endpoints};
use middlebox::testlinks::TestLink;
use middlebox::{Runtime, RuntimeConfig};

const RULES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ids/snort3-community.rules");

fn community() -> IdsRules {
    let path = std::path::Path::new(RULES);
    if !path.exists() {
        panic!("the IDS test needs the community rules at {RULES}");
    }
    let (rules, report) = ids::load_rules(path, false).unwrap();
    eprintln!(
        "loaded {} rules ({} fully supported, {} without a fast pattern)",
        report.loaded(),
        report.fully_supported,
        rules.always.as_ref().map_or(0, |a| a.len())
    );
    assert!(rules.always.is_some());
    rules
}

fn run_step(
    rules: IdsRules,
    frames: Vec<Vec<u8>>,
    units: usize,
) -> (BTreeSet<(u32, FlowKey)>, middlebox::RuntimeStats, u64) {
    let n = frames.len() as u64;
    let sink = TestLink::sink();
    let out = sink.tally();
    let ports: Vec<Box<dyn link::Link>> = vec![Box::new(TestLink::generator(frames, n)), Box::new(sink)];
    let mut rt = ids::build(rules.clone(), units, ports, RuntimeConfig::default(), IdsConfig::default()).unwrap();
    let c = rt.control();
    let mut alerts = AlertSink::new(None, None).unwrap();
    let mut flushed = false;
    for _ in 0..1_000_000 {
        let w = rt.step(Instant::ZERO);
        for hp in c.host_recv_all() {
            alerts.record(&hp, &rules.full).unwrap();
        }
        if w == 0 && rt.in_flight() == 0 {
            break;
        }
        if w == 0 && !flushed {
            // Gaps that never fill (there are none in a clean trace): let the units skip them.
            flushed = true;
            for u in 0..units {
                c.flush(u).unwrap();
            }
        }
    }
    let s = rt.stats();
    (alerts.pairs().clone(), s, out.frames())
}

fn counter(s: &middlebox::RuntimeStats, name: &str) -> u64 {
    s.units.iter().flat_map(|u| u.program_counters.iter()).filter(|(k, _)| *k == name).map(|(_, v)| v).sum()
}

#[test]
fn reports_exactly_the_planted_attacks() {
    let rules = community();
    let t0 = StdInstant::now();
    let trace = generate(&rules.full, &TraceConfig::default());
    eprintln!(
        "trace: {} frames ({} attack), {} planted, {} reordered, {} contents split, {} rules rejected, {} background regenerated, generated in {:?}",
        trace.frames.len(),
        trace.attack_frames,
        trace.planted.len(),
        trace.reordered,
        trace.split_contents,
        trace.rejected_rules,
        trace.regenerated,
        t0.elapsed()
    );
    assert_eq!(trace.planted.len(), 200, "could not plant 200 attacks");
    assert!(trace.reordered >= 10 && trace.split_contents >= 200);
    let n = trace.frames.len() as u64;
    let t1 = StdInstant::now();
    let (pairs, s, forwarded) = run_step(rules.clone(), trace.frames.clone(), 2);
    eprintln!("step mode: {:?}", t1.elapsed());
    let missing: Vec<_> = trace.planted.difference(&pairs).collect();
    let extra: Vec<_> = pairs.difference(&trace.planted).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}\nextra {extra:?}");
    assert!(counter(&s, "held") > 0, "reordered segments were held");
    assert_eq!(counter(&s, "reorder_overflow"), 0);
    assert_eq!(counter(&s, "gaps_skipped"), 0);
    assert_eq!(s.drops().total(), 0, "{:?}", s.drops());
    assert_eq!(forwarded + s.host.delivered, n, "every frame forwarded or sent to the host");
    assert_eq!(s.host.delivered, counter(&s, "alert_packets"));
}

#[test]
fn threaded_units_report_the_same() {
    let rules = community();
    let cfg = TraceConfig { seed: 99, background_flows: 1000, attacks: 100, ..TraceConfig::default() };
    let trace = generate(&rules.full, &cfg);
    assert_eq!(trace.planted.len(), 100);
    let n = trace.frames.len() as u64;
    let sink = TestLink::sink();
    let out = sink.tally();
    let ports: Vec<Box<dyn link::Link>> = vec![Box::new(TestLink::generator(trace.frames.clone(), n)), Box::new(sink)];
    // Conversations interleave over the whole trace, so a reordered segment's predecessor
    // can come thousands of frames later: give gaps time on busy shared cores.
    let ids_cfg = IdsConfig { reorder_timeout: Duration::from_secs(10), ..IdsConfig::default() };
    let rt = ids::build(rules.clone(), 3, ports, RuntimeConfig::default(), ids_cfg).unwrap();
    let running = rt.start().unwrap();
    let c = running.control();
    let mut alerts = AlertSink::new(None, None).unwrap();
    let start = StdInstant::now();
    loop {
        for hp in c.host_recv_all() {
            alerts.record(&hp, &rules.full).unwrap();
        }
        let s = c.stats();
        if out.frames() + s.host.delivered >= n && c.is_quiet() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "stuck: {} + {} of {n}", out.frames(), s.host.delivered);
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut rt = running.stop().unwrap();
    for hp in rt.control().host_recv_all() {
        alerts.record(&hp, &rules.full).unwrap();
    }
    let s = rt.stats();
    assert_eq!(alerts.pairs(), &trace.planted);
    assert_eq!(out.frames() + s.host.delivered, n);
    assert_eq!(alerts.unverified, 0);
}

/// One rule, one conversation, segments in a chosen order.
fn small_case(
    order: &[usize],
    payloads: &[&[u8]],
    cfg: IdsConfig,
) -> (Vec<middlebox::HostPacket>, middlebox::RuntimeStats) {
    let text = "alert tcp any any -> any 80 (msg:\"split\"; flow:to_server,established; content:\"EVIL\"; content:\"PATTERN\"; distance:0; sid:1000001; rev:1;)\n";
    let (rules, _) = IdsRules::from_text(text, "inline", &Vars::default(), true).unwrap();
    let c = Endpoints { src: Ipv4Addr::new(10, 0, 0, 1), dst: Ipv4Addr::new(10, 0, 0, 2), sport: 40000, dport: 80 };
    let (ci, si) = (1000u32, 5000u32);
    let mut hs = vec![
        frames::tcp(&c, ci, 0, 0x02, &[]).unwrap(),
        frames::tcp(&c.reversed(), si, ci + 1, 0x12, &[]).unwrap(),
        frames::tcp(&c, ci + 1, si + 1, 0x10, &[]).unwrap(),
    ];
    let mut segs = Vec::new();
    let mut seq = ci + 1;
    for p in payloads {
        segs.push(frames::tcp(&c, seq, si + 1, 0x18, p).unwrap());
        seq += p.len() as u32;
    }
    for &i in order {
        hs.push(segs[i].clone());
    }
    let n = hs.len() as u64;
    let mut rt = Runtime::builder()
        .port(TestLink::generator(hs, n))
        .port(TestLink::sink())
        .unit(IdsUnit::new(rules, cfg))
        .build()
        .unwrap();
    rt.run_until_quiet(Instant::ZERO, 1000);
    let c = rt.control();
    let _ = c.flush(0);
    rt.run_until_quiet(Instant::ZERO, 1000);
    (c.host_recv_all(), rt.stats())
}

#[test]
fn contents_split_across_segments_match() {
    let (host, s) = small_case(&[0, 1, 2], &[b"xxEV", b"IL..PAT", b"TERNyy"], IdsConfig::default());
    assert_eq!(host.len(), 1);
    assert_eq!(host[0].tags, vec![1000001]);
    assert!(host[0].frame.ends_with(b"TERNyy"), "the completing segment goes to the host");
    assert_eq!(counter(&s, "alerts"), 1);
}

#[test]
fn reordered_segments_are_held_and_still_match() {
    let (host, s) = small_case(&[2, 0, 1], &[b"xxEV", b"IL..PAT", b"TERNyy"], IdsConfig::default());
    assert_eq!(host.len(), 1);
    assert_eq!(host[0].tags, vec![1000001]);
    assert_eq!((counter(&s, "held"), counter(&s, "released")), (1, 1));
}

#[test]
fn retransmissions_do_not_alert_twice() {
    let (host, s) = small_case(&[0, 1, 1, 2, 2], &[b"xxEV", b"IL..PAT", b"TERNyy"], IdsConfig::default());
    assert_eq!(host.len(), 1);
    assert_eq!(counter(&s, "retransmits"), 2);
}

#[test]
fn full_reorder_buffers_send_to_the_host_unverified() {
    let cfg = IdsConfig { reorder_per_flow: 1, ..IdsConfig::default() };
    let (host, s) = small_case(&[2, 3, 0, 1], &[b"a", b"b", b"c", b"d"], cfg);
    assert_eq!(counter(&s, "reorder_overflow"), 1);
    assert_eq!(host.iter().filter(|h| h.tags.is_empty()).count(), 1);
}

#[test]
fn a_gap_that_never_fills_is_skipped_on_flush() {
    let (host, s) = small_case(&[0, 2], &[b"EVIL", b"..", b"PATTERN"], IdsConfig::default());
    assert!(host.is_empty(), "the stream is discontinuous: no match across the gap");
    assert_eq!(counter(&s, "gaps_skipped"), 1);
    assert_eq!(s.ports[1].tx_frames, 5);
}

#[test]
fn malformed_packets_are_counted_not_fatal() {
    let rules = IdsRules::new(Arc::new(RuleSet::parse("", "empty", &Vars::default(), true).unwrap().0));
    let c = Endpoints { src: Ipv4Addr::new(10, 0, 0, 1), dst: Ipv4Addr::new(10, 0, 0, 2), sport: 1, dport: 80 };
    let good = frames::tcp(&c, 1, 1, 0x18, b"some payload").unwrap();
    let mut trace: Vec<Vec<u8>> = (1..good.len()).map(|n| good[..n].to_vec()).collect();
    let mut bad_off = good.clone();
    bad_off[46] = 0x20; // TCP data offset 2 words
    trace.push(bad_off);
    let n = trace.len() as u64;
    let mut rt = Runtime::builder()
        .port(TestLink::generator(trace, n))
        .port(TestLink::sink())
        .unit(IdsUnit::new(rules.clone(), IdsConfig::default()))
        .unit(IdsUnit::new(rules, IdsConfig::default()))
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(Instant::ZERO, 1000));
    let s = rt.stats();
    let d = s.drops();
    assert_eq!(d.get("truncated"), good.len() as u64 - 1, "{d:?}");
    assert_eq!(d.get("bad_header_len"), 1, "{d:?}");
    assert_eq!(s.units.iter().map(|u| u.unit.program_panics).sum::<u64>(), 0);
}

#[test]
fn a_broken_rules_file_names_file_line_and_problem() {
    let dir = std::env::temp_dir().join(format!("lr-ids-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.rules");
    std::fs::write(&f, "# comment\nalert tcp any any -> any any (msg:\"ok\"; content:\"a\"; sid:1;)\nalert tcp any any -> any any (msg:\"bad\"; content:\"a\"; depth:-x; sid:2;)\n").unwrap();
    let e = ids::load_rules(&f, true).err().unwrap().to_string();
    let (_, report) = ids::load_rules(&f, false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.starts_with(&format!("{}:3: ", f.display())), "{e}");
    assert_eq!(report.errors.len(), 1);
}

#[test]
fn mutated_traffic_never_panics_a_unit() {
    let rules = community();
    let cfg = TraceConfig { seed: 5, background_flows: 300, attacks: 30, ..TraceConfig::default() };
    let mut frames = generate(&rules.full, &cfg).frames;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for f in frames.iter_mut() {
        match rnd() % 4 {
            0 => {
                let n = (rnd() as usize % f.len()).max(1);
                f.truncate(n);
            }
            1 => {
                for _ in 0..1 + rnd() % 4 {
                    let i = rnd() as usize % f.len();
                    f[i] = rnd() as u8;
                }
            }
            2 => {
                // Header fields that steer parsing: IHL, total length, data offset, flags.
                for at in [14, 16, 17, 46, 47] {
                    if at < f.len() && rnd() % 2 == 0 {
                        f[at] = rnd() as u8;
                    }
                }
            }
            _ => {}
        }
    }
    let n = frames.len() as u64;
    let (_, s, forwarded) = run_step(rules, frames, 2);
    assert_eq!(s.units.iter().map(|u| u.unit.program_panics).sum::<u64>(), 0);
    assert_eq!(forwarded + s.host.delivered + s.drops().total(), n, "every frame accounted for: {:?}", s.drops());
}

#[test]
fn swapping_ids_units_mid_trace_keeps_flows_and_kept_segments() {
    let rules = community();
    let cfg = TraceConfig { seed: 7, background_flows: 600, attacks: 60, ..TraceConfig::default() };
    let trace = generate(&rules.full, &cfg);
    let n = trace.frames.len() as u64;
    let ports: Vec<Box<dyn link::Link>> =
        vec![Box::new(TestLink::generator(trace.frames.clone(), n)), Box::new(TestLink::sink())];
    let mut rt = ids::build(rules.clone(), 2, ports, RuntimeConfig::default(), IdsConfig::default()).unwrap();
    let c = rt.control();
    let mut alerts = AlertSink::new(None, None).unwrap();
    let mut swapped = Vec::new();
    for i in 0..1_000_000 {
        if i == 40 {
            for u in 0..2 {
                swapped.push(c.swap(u, Box::new(IdsUnit::new(rules.clone(), IdsConfig::default()))).unwrap());
            }
        }
        let w = rt.step(Instant::ZERO);
        for hp in c.host_recv_all() {
            alerts.record(&hp, &rules.full).unwrap();
        }
        if w == 0 && rt.in_flight() == 0 {
            break;
        }
    }
    assert_eq!(swapped.len(), 2, "the trace lasted past the swap");
    let reports: Vec<_> = swapped.iter().map(|p| p.try_take().expect("swapped")).collect();
    let s = rt.stats();
    assert!(s.ports[0].rx_frames > 0 && reports.iter().all(|r| r.old.name() == "ids"));
    assert_eq!(alerts.pairs(), &trace.planted);
    assert_eq!(s.units.iter().map(|u| u.unit.swaps).sum::<u64>(), 2);
    assert_eq!(counter(&s, "gaps_skipped"), 0);
    assert_eq!(s.drops().total(), 0);
}

/// One rule (EVIL then PATTERN to port 80, to the server, established or not) and `frames` of
/// one conversation in order, with no flush: what the host got and the unit's counters.
fn syn_case(frames: Vec<Vec<u8>>) -> (Vec<middlebox::HostPacket>, middlebox::RuntimeStats) {
    let text = "alert tcp any any -> any 80 (msg:\"syn data\"; flow:to_server; content:\"EVIL\"; content:\"PATTERN\"; distance:0; sid:1000002; rev:1;)\n";
    let (rules, _) = IdsRules::from_text(text, "inline", &Vars::default(), true).unwrap();
    let n = frames.len() as u64;
    let mut rt = Runtime::builder()
        .port(TestLink::generator(frames, n))
        .port(TestLink::sink())
        .unit(IdsUnit::new(rules, IdsConfig::default()))
        .build()
        .unwrap();
    assert!(rt.run_until_quiet(Instant::ZERO, 1000));
    (rt.control().host_recv_all(), rt.stats())
}

const SYN_CLIENT: Endpoints =
    Endpoints { src: Ipv4Addr::new(10, 0, 0, 1), dst: Ipv4Addr::new(10, 0, 0, 2), sport: 40001, dport: 80 };

#[test]
fn syn_payload_is_stream_data_and_leaves_no_gap() {
    // TCP Fast Open: the SYN carries the first 6 bytes; the next segment starts right after.
    let (c, ci, si) = (SYN_CLIENT, 1000u32, 5000u32);
    let frames = vec![
        frames::tcp(&c, ci, 0, 0x02, b"xxEVIL").unwrap(),
        frames::tcp(&c.reversed(), si, ci + 7, 0x12, &[]).unwrap(),
        frames::tcp(&c, ci + 7, si + 1, 0x18, b"..PATTERN").unwrap(),
    ];
    let (host, s) = syn_case(frames);
    assert_eq!((counter(&s, "held"), counter(&s, "gaps_skipped")), (0, 0), "no sequence gap after the SYN's data");
    assert_eq!(host.len(), 1);
    assert_eq!(host[0].tags, vec![1000002]);
    assert!(host[0].frame.ends_with(b"..PATTERN"), "the completing segment goes to the host");
}

#[test]
fn an_attack_inside_a_syn_is_reported_once() {
    let (c, ci) = (SYN_CLIENT, 7000u32);
    let syn = frames::tcp(&c, ci, 0, 0x02, b"EVIL PATTERN").unwrap();
    // The SYN is retransmitted: its data is old the second time.
    let (host, s) = syn_case(vec![syn.clone(), syn]);
    assert_eq!(host.len(), 1);
    assert_eq!(host[0].tags, vec![1000002]);
    assert!(host[0].frame.ends_with(b"EVIL PATTERN"));
    assert_eq!(counter(&s, "retransmits"), 1);
    assert_eq!(s.ports[1].tx_frames, 1, "the retransmitted SYN is forwarded");
}
