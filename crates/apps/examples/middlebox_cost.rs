//! The middlebox's work per packet, measured without a clock: the runtime stepped on one
//! thread ([`Runtime::step`], virtual time) between an in-memory generator port and a
//! counting sink, one unit, nothing else. Run it under `valgrind --tool=callgrind` with two
//! packet counts and divide the difference of the instruction counts by the difference of
//! the counts; the figure is the same on a loaded machine and an idle one, so two builds can
//! be compared where wall-clock benchmarks drown in noise.
//!
//! ```text
//! cargo build --release -p apps --example middlebox_cost
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/a.cg target/release/examples/middlebox_cost forward 1000
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/b.cg target/release/examples/middlebox_cost forward 101000
//! # instructions per packet = (I(b) - I(a)) / 100000
//! ```
//!
//! `forward N [SIZE [BATCH]]`: N frames of SIZE bytes (default 64) from 64 UDP flows through a
//! cross-forwarding unit (the `forward` rows of `linerate bench middlebox`). `firewall N
//! [SIZE]`: the same through the firewall with the repository's 1,050-prefix blacklist and
//! its benchmark trace (2% of sources blacklisted). `ids N`: the first N frames of the IDS
//! benchmark trace (community rules) through an IDS unit; N is at most the trace's length.
//! BATCH is the runtime's batch (default: the runtime's default); the unit has 64 slots, as
//! in `linerate bench middlebox`.
//!
//! The count includes the generator port's copy of each frame into its receive batch and the
//! sink's counting, as the benchmark's does. The run stops at the first step that moves
//! nothing once every frame was generated, and checks that every frame came out, went to the
//! host, was counted as dropped or is still held by the program (the IDS holds out-of-order
//! segments until its reorder timeout); it fails otherwise.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use accel::prefix::PrefixSet;
use apps::firewall::{self, Firewall};
use apps::ids::trace::{generate, TraceConfig};
use apps::ids::{self as idsmod, IdsConfig, IdsUnit};
use link::Instant;
use middlebox::frames::{self, Endpoints};
use middlebox::programs::Forwarder;
use middlebox::testlinks::TestLink;
use middlebox::{FlowHash, Policy, Program, RoundRobin, Runtime, RuntimeConfig, SlotSpec};

/// Virtual time per step.
const TICK: Duration = Duration::from_micros(1);

/// The repository's root (this example lives in crates/apps/examples).
fn repo_file(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

/// The slot size `linerate bench middlebox` uses for `size`-byte frames.
fn slot_for(size: usize) -> usize {
    (size + 256).clamp(2048, middlebox::slots::MAX_SLOT_SIZE)
}

/// 64 UDP flows of `size`-byte frames (the benchmark's forwarding trace).
fn forward_trace(size: usize) -> Vec<Vec<u8>> {
    (0..64u16)
        .map(|i| {
            let e = Endpoints {
                src: Ipv4Addr::new(10, 0, (i >> 8) as u8, i as u8),
                dst: Ipv4Addr::new(10, 1, 0, 1),
                sport: 1000 + i,
                dport: 9,
            };
            frames::udp_of_size(&e, size.max(42)).unwrap_or_default()
        })
        .collect()
}

/// What one run pushes through the middlebox.
struct Workload {
    trace: Vec<Vec<u8>>,
    program: Box<dyn Program>,
    policy: Box<dyn Policy>,
    slot: usize,
}

fn workload(kind: &str, n: u64, size: usize) -> Result<Workload, String> {
    match kind {
        "forward" => Ok(Workload {
            trace: forward_trace(size),
            program: Box::new(Forwarder::cross()),
            policy: Box::new(RoundRobin::new()),
            slot: slot_for(size),
        }),
        "firewall" => {
            let set = PrefixSet::load(&repo_file("data/firewall/drop-prefixes.txt")).map_err(|e| e.to_string())?;
            let trace = firewall::sample_trace(&set, size);
            Ok(Workload {
                trace,
                program: Box::new(Firewall::new(Arc::new(set))),
                policy: Box::new(FlowHash::new(1)),
                slot: slot_for(size),
            })
        }
        "ids" => {
            let (rules, _) =
                idsmod::load_rules(&repo_file("data/ids/snort3-community.rules"), false).map_err(|e| e.to_string())?;
            let trace = generate(&rules.full, &TraceConfig::default()).frames;
            if n > trace.len() as u64 {
                return Err(format!("the IDS trace has {} frames; asked for {n}", trace.len()));
            }
            let cfg = IdsConfig { reorder_timeout: Duration::from_secs(5), ..IdsConfig::default() };
            Ok(Workload {
                trace: trace[..n as usize].to_vec(),
                program: Box::new(IdsUnit::new(rules, cfg)),
                policy: Box::new(FlowHash::new(1)),
                slot: 9216 + 256,
            })
        }
        other => Err(format!("unknown workload '{other}' (forward, firewall, ids)")),
    }
}

/// Push `n` frames of `w` through a one-unit middlebox; returns (frames out, frames dropped,
/// frames the program still holds, steps).
#[inline(never)]
fn run(w: Workload, n: u64, batch: usize) -> Result<(u64, u64, u64, u64), String> {
    let gen = TestLink::generator(w.trace, n);
    let made = gen.tally();
    let sink = TestLink::sink();
    let out = sink.tally();
    let cfg = RuntimeConfig { slots: SlotSpec::new(64, w.slot), batch, ..RuntimeConfig::default() };
    let mut rt = Runtime::builder_with(cfg)
        .port(gen)
        .port(sink)
        .unit_boxed(w.program)
        .policy_boxed(w.policy)
        .build()
        .map_err(|e| e.to_string())?;
    let mut now = Instant::ZERO;
    // Every step moves at least one frame while any are left; allow for idle steps too.
    let limit = 4 * n + 1000;
    let mut steps = 0u64;
    while steps < limit {
        now = now + TICK;
        let work = rt.step(now);
        steps += 1;
        // Done when everything was generated and a step moved nothing: the frames left inside
        // are held by the program (the IDS's reorder buffers wait for their timeout).
        if made.generated() == n && work == 0 {
            break;
        }
    }
    let s = rt.stats();
    let dropped = s.drops().total();
    let host = s.host.delivered;
    let held = rt.in_flight();
    if made.generated() != n || out.frames() + dropped + host + held != n {
        return Err(format!(
            "after {steps} steps: {} of {n} generated, {} out, {dropped} dropped, {host} to the host, {held} held",
            made.generated(),
            out.frames()
        ));
    }
    Ok((out.frames(), dropped, held, steps))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().map_or("forward", String::as_str);
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let size: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let batch: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(RuntimeConfig::default().batch);
    if n == 0 || !(42..=9216).contains(&size) {
        eprintln!("usage: middlebox_cost forward|firewall|ids N [SIZE [BATCH]]  (N >= 1, 42 <= SIZE <= 9216)");
        return ExitCode::from(2);
    }
    let result = workload(kind, n, size).and_then(|w| run(w, n, batch));
    match result {
        Ok((out, dropped, held, steps)) => {
            println!("{kind}: {n} frames: {out} out, {dropped} dropped, {held} held, {steps} steps");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{kind}: {e}");
            ExitCode::FAILURE
        }
    }
}
