//! The demo's middlebox rows: forwarding on unit threads, the firewall with the repository's
//! blacklist (verdicts checked against a plain scan of the prefixes), and the IDS with the
//! repository's rules on a generated trace (alerts checked against the planted attacks).

use super::{Outcome, Step};
use crate::output::Unit;
use accel::prefix::PrefixSet;
use apps::firewall::Firewall;
use apps::ids::alert::AlertSink;
use apps::ids::trace::{generate, TraceConfig};
use apps::ids::{self, IdsConfig};
use middlebox::frames::{self, Endpoints};
use middlebox::programs::Forwarder;
use middlebox::testlinks::TestLink;
use middlebox::{FlowHash, IdlePolicy, Runtime, RuntimeConfig};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A file of the repository's `data/` directory: relative to the working directory (as
/// `make demo` runs), else where the sources were built.
pub(crate) fn data_file(rel: &str) -> Result<PathBuf, String> {
    let here = PathBuf::from("data").join(rel);
    if here.exists() {
        return Ok(here);
    }
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data")).join(rel);
    if built.exists() {
        return Ok(built);
    }
    Err(format!("data/{rel} is missing (run the demo from the repository's root)"))
}

/// A UDP frame of `size` bytes from `src`.
fn udp_frame(src: Ipv4Addr, i: u16, size: usize) -> Result<Vec<u8>, String> {
    let e = Endpoints { src, dst: Ipv4Addr::new(192, 168, 0, 1), sport: 1024 + i, dport: 443 };
    frames::udp_of_size(&e, size).ok_or_else(|| format!("no UDP frame of {size} bytes"))
}

/// Frames that leave port 1 of a runtime started on threads, once `n` have gone through.
fn wait_for(out: &middlebox::testlinks::Tally, n: u64, limit: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    while out.frames() < n {
        if start.elapsed() > limit {
            return Err(format!("{} of {n} frames came out within {limit:?}", out.frames()));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(start.elapsed())
}

/// Two forwarding units on their own threads move 400,000 64-byte frames of 64 flows from
/// port 0 to port 1; every frame must come out, none dropped.
pub(crate) fn forward_step() -> Step {
    const N: u64 = 400_000;
    const UNITS: usize = 2;
    let trace: Vec<Vec<u8>> =
        (0..64u16).map(|i| udp_frame(Ipv4Addr::new(10, 0, 0, i as u8), i, 64)).collect::<Result<_, _>>()?;
    let sink = TestLink::sink();
    let out = sink.tally();
    let cfg = RuntimeConfig { idle: IdlePolicy::busy(), ..RuntimeConfig::default() };
    let mut b = Runtime::builder_with(cfg).port(TestLink::generator(trace, N)).port(sink).policy(FlowHash::new(UNITS));
    for _ in 0..UNITS {
        b = b.unit(Forwarder::cross());
    }
    let running = b.build().map_err(|e| e.to_string())?.start().map_err(|e| e.to_string())?;
    let took = wait_for(&out, N, Duration::from_secs(20));
    let mut rt = running.stop().map_err(|e| e.to_string())?;
    let took = took?;
    let s = rt.stats();
    let (drops, panics) = (s.drops().total(), s.units.iter().map(|u| u.unit.program_panics).sum::<u64>());
    if out.frames() != N || drops > 0 || panics > 0 {
        return Err(format!("{} of {N} frames forwarded, {drops} dropped, {panics} program panics", out.frames()));
    }
    let per_unit: Vec<String> = s.units.iter().map(|u| u.unit.rx_frames.to_string()).collect();
    Ok(Outcome::measured(
        format!(
            "{N}/{N} frames out of port 1, none dropped; the units took {} frames (flow hash)",
            per_unit.join(" and ")
        ),
        N as f64 / took.as_secs_f64(),
        Unit::FramesPerSec,
        format!("with {UNITS} unit threads (wall clock, including start-up)"),
    ))
}

/// The firewall with `data/firewall/drop-prefixes.txt` on 20,000 frames (every 25th from a
/// blacklisted prefix, the rest random): the frames passed and blocked must equal a plain scan
/// of every prefix.
pub(crate) fn firewall_step() -> Step {
    const N: u16 = 20_000;
    let path = data_file("firewall/drop-prefixes.txt")?;
    let set = std::sync::Arc::new(PrefixSet::load(&path).map_err(|e| format!("{}: {e}", path.display()))?);
    let prefixes = set.prefixes();
    if prefixes.is_empty() {
        return Err(format!("{}: no prefixes", path.display()));
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut trace = Vec::with_capacity(usize::from(N));
    let mut expect_blocked = 0u64;
    for i in 0..N {
        let src = if i % 25 == 0 { prefixes[next() as usize % prefixes.len()].first() } else { next() as u32 };
        expect_blocked += u64::from(prefixes.iter().any(|p| p.contains(src)));
        trace.push(udp_frame(Ipv4Addr::from(src), i, 128)?);
    }
    let sink = TestLink::sink();
    let out = sink.tally();
    let mut rt = Runtime::builder_with(RuntimeConfig::default())
        .port(TestLink::generator(trace, u64::from(N)))
        .port(sink)
        .unit(Firewall::new(set.clone()))
        .unit(Firewall::new(set.clone()))
        .policy(FlowHash::new(2))
        .build()
        .map_err(|e| e.to_string())?;
    let wall = Instant::now();
    let mut now = link::Instant::ZERO;
    for _ in 0..10_000_000 {
        now = now + Duration::from_micros(1);
        if rt.step(now) == 0 && rt.in_flight() == 0 && rt.stats().ports[0].rx_frames == u64::from(N) {
            break;
        }
    }
    let secs = wall.elapsed().as_secs_f64();
    let s = rt.stats();
    let counter = |name: &str| -> u64 {
        s.units.iter().flat_map(|u| u.program_counters.iter()).filter(|(k, _)| *k == name).map(|(_, v)| v).sum()
    };
    let (passed, blocked) = (counter("passed"), counter("blocked"));
    let expect_passed = u64::from(N) - expect_blocked;
    if passed != expect_passed || blocked != expect_blocked || out.frames() != passed {
        return Err(format!(
            "passed {passed} (expected {expect_passed}), blocked {blocked} (expected {expect_blocked}), {} out of port 1",
            out.frames()
        ));
    }
    Ok(Outcome::measured(
        format!(
            "{N} frames: {passed} passed, {blocked} blocked by {} prefixes, exactly as a plain scan says",
            set.len()
        ),
        f64::from(N) / secs,
        Unit::FramesPerSec,
        "2 units in step mode on one thread",
    ))
}

/// The IDS with `data/ids/snort3-community.rules` on a generated trace with 40 planted
/// attacks (contents split across segments, some reordered): it must report exactly them.
pub(crate) fn ids_step() -> Step {
    let path = data_file("ids/snort3-community.rules")?;
    let (rules, _) = ids::load_rules(&path, false).map_err(|e| format!("{}: {e}", path.display()))?;
    let cfg = TraceConfig { seed: 3, background_flows: 400, attacks: 40, ..TraceConfig::default() };
    let trace = generate(&rules.full, &cfg);
    if trace.planted.len() != 40 {
        return Err(format!("only {} of 40 attacks could be planted", trace.planted.len()));
    }
    let n = trace.frames.len() as u64;
    let bytes: usize = trace.frames.iter().map(Vec::len).sum();
    let sink = TestLink::sink();
    let out = sink.tally();
    let ports: Vec<Box<dyn link::Link>> = vec![Box::new(TestLink::generator(trace.frames, n)), Box::new(sink)];
    let mut rt = ids::build(rules.clone(), 2, ports, RuntimeConfig::default(), IdsConfig::default())
        .map_err(|e| e.to_string())?;
    let c = rt.control();
    let mut alerts = AlertSink::new(None, None)?;
    let wall = Instant::now();
    let mut flushed = false;
    for _ in 0..1_000_000 {
        let w = rt.step(link::Instant::ZERO);
        for hp in c.host_recv_all() {
            alerts.record(&hp, &rules.full)?;
        }
        if w == 0 && rt.in_flight() == 0 {
            if flushed {
                break;
            }
            // Let the units give up on gaps that will not fill (a clean trace has none).
            flushed = true;
            for u in 0..2 {
                c.flush(u).map_err(|e| e.to_string())?;
            }
        }
    }
    let secs = wall.elapsed().as_secs_f64();
    let s = rt.stats();
    let missing = trace.planted.difference(alerts.pairs()).count();
    let extra = alerts.pairs().difference(&trace.planted).count();
    if missing > 0 || extra > 0 || out.frames() + s.host.delivered != n {
        return Err(format!(
            "{missing} planted attacks not reported, {extra} reports of nothing planted; {} of {n} frames accounted for",
            out.frames() + s.host.delivered
        ));
    }
    Ok(Outcome::measured(
        format!(
            "{} alerts on {n} frames: exactly the 40 planted attacks ({} reordered segments, {} contents split)",
            alerts.pairs().len(),
            trace.reordered,
            trace.split_contents
        ),
        bytes as f64 * 8.0 / secs,
        Unit::BitsPerSec,
        "through 2 units in step mode on one thread",
    ))
}
