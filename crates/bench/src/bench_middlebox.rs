//! `linerate bench middlebox`: the middlebox runtime's forwarding rate for 64 to 9000-byte
//! frames with 1 and 2 units beside the memcpy rate measured in the same run, the firewall and
//! the IDS on traces, and the time to swap a unit's program (Rosebud: 756 ms per RPU).
//!
//! Frames come from an in-process generator port and go to a counting sink port (Rosebud's
//! tester FPGA), so only the middlebox is measured: the distributor thread (which also runs
//! the generator and the sink) and one thread per unit, all busy-polling.

use crate::bench_common::{print_tables, progress, step};
use crate::output::{Cell, Table, Unit};
use crate::runloop::{install_stop_handler, stop_requested};
use accel::prefix::PrefixSet;
use apps::firewall::Firewall;
use apps::ids::trace::{generate, TraceConfig};
use apps::ids::{self, IdsConfig, IdsUnit};
use middlebox::frames::{self, Endpoints};
use middlebox::programs::Forwarder;
use middlebox::testlinks::TestLink;
use middlebox::{FlowHash, IdlePolicy, Program, RoundRobin, Runtime, RuntimeConfig, SlotSpec};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Rosebud's forwarding rate per RPU (Mpps), for reference.
const ROSEBUD_MPPS_PER_RPU: f64 = 15.6;
/// Rosebud's time to reconfigure one RPU.
const ROSEBUD_SWAP: Duration = Duration::from_millis(756);
/// Copies of every frame on the measured path: generator -> batch, batch -> slot, slot -> batch.
const COPIES: f64 = 3.0;

/// Options of `linerate bench middlebox`.
#[derive(clap::Args)]
pub struct MiddleboxBenchArgs {
    /// How long the traffic of each measurement lasts (a duration: 1s, 500ms; a bare number
    /// is seconds; 50ms..=60s).
    #[arg(value_name = "DURATION", long = "duration", short = 't', alias = "secs", default_value = "1s", value_parser = crate::duration::parse_duration)]
    secs: Duration,
    /// Frame sizes in bytes (Ethernet header included), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1500,9000")]
    sizes: Vec<usize>,
    /// Unit counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    units: Vec<usize>,
    /// Firewall blacklist (the default is the repository's copy, relative to its root).
    #[arg(long, default_value = "data/firewall/drop-prefixes.txt")]
    blacklist: PathBuf,
    /// Snort rules for the IDS (the default is the repository's copy, relative to its root).
    #[arg(long, default_value = "data/ids/snort3-community.rules")]
    rules: PathBuf,
    /// Skip these parts (comma-separated: forward, firewall, ids, swap).
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Program swaps to time.
    #[arg(long, default_value_t = 20)]
    swaps: usize,
    /// Print JSON (and no progress bar).
    #[arg(long)]
    json: bool,
    /// IDS without software reordering (out-of-order segments are not held): for the cost
    /// of reordering (Rosebud Fig. 9).
    #[arg(long, hide = true)]
    no_reorder: bool,
}

/// Options of the hidden `linerate bench-peer ids-cost`: push a number of the IDS trace's
/// frames through one IDS unit in step mode and exit, so that a run under callgrind counts
/// the instructions (`linerate reproduce 004` subtracts a run of 0 frames: rule loading).
#[derive(clap::Args)]
pub struct IdsCostArgs {
    /// Frames to push through the unit (0: load the rules and build the runtime only).
    #[arg(long)]
    frames: u64,
    /// Snort rules (the default is the repository's copy, relative to its root).
    #[arg(long, default_value = "data/ids/snort3-community.rules")]
    rules: PathBuf,
    /// Without software reordering (out-of-order segments are not held).
    #[arg(long)]
    no_reorder: bool,
}

/// Slot size of the IDS runs (the largest trace frame and headroom).
const IDS_SLOT: usize = 9216 + 256;

/// The IDS unit's configuration, with or without its software reordering.
fn ids_config(no_reorder: bool) -> IdsConfig {
    let mut cfg = IdsConfig { reorder_timeout: Duration::from_secs(5), ..IdsConfig::default() };
    if no_reorder {
        (cfg.reorder_per_flow, cfg.reorder_total) = (0, 0);
    }
    cfg
}

/// One measured rate.
#[derive(Clone, Copy, Default)]
struct Rate {
    frames: f64,
    bytes: f64,
    /// CPU seconds the process used per second of the measurement (cores kept busy).
    cores: f64,
}

/// CPU time (user + system) this process has used, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_SELF is always supported.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// memcpy bandwidth in bytes/s for `size`-byte copies over a ~1 MiB working set.
fn memcpy_rate(size: usize, secs: f64) -> f64 {
    let span = (1usize << 19).max(size);
    let (src, mut dst) = (vec![0x5au8; span], vec![0u8; span]);
    let slots = span / size;
    let start = Instant::now();
    let mut copies = 0usize;
    while start.elapsed().as_secs_f64() < secs {
        for _ in 0..64 {
            let off = (copies % slots) * size;
            dst[off..off + size].copy_from_slice(&src[off..off + size]);
            std::hint::black_box(&mut dst);
            copies += 1;
        }
    }
    (copies * size) as f64 / start.elapsed().as_secs_f64()
}

/// Run `programs` (one per unit) on threads with a generator cycling through `trace` on port 0
/// and a sink on port 1; the rate of frames entering the middlebox over `secs` after a warm-up.
fn measure(
    trace: Vec<Vec<u8>>,
    programs: Vec<Box<dyn Program>>,
    hash: bool,
    slot: usize,
    secs: f64,
) -> Result<Rate, String> {
    let gen = TestLink::generator(trace, u64::MAX);
    let units = programs.len();
    let cfg = RuntimeConfig { slots: SlotSpec::new(64, slot), idle: IdlePolicy::busy(), ..RuntimeConfig::default() };
    let mut b = Runtime::builder_with(cfg).port(gen).port(TestLink::sink());
    b = if hash { b.policy(FlowHash::new(units)) } else { b.policy(RoundRobin::new()) };
    for p in programs {
        b = b.unit_boxed(p);
    }
    let running = b.build().map_err(|e| e.to_string())?.start().map_err(|e| e.to_string())?;
    let c = running.control();
    std::thread::sleep(Duration::from_millis(100));
    let rx = |c: &middlebox::Control| {
        let s = c.stats();
        (s.ports[0].rx_frames, s.ports[0].rx_bytes)
    };
    let (f0, b0) = rx(&c);
    let (t0, cpu0) = (Instant::now(), cpu_seconds());
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (f1, b1) = rx(&c);
    let (dt, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let mut rt = running.stop().map_err(|e| e.to_string())?;
    let s = rt.stats();
    let panics: u64 = s.units.iter().map(|u| u.unit.program_panics).sum();
    if panics > 0 {
        return Err(format!("{panics} program panics"));
    }
    Ok(Rate { frames: (f1 - f0) as f64 / dt, bytes: (b1 - b0) as f64 / dt, cores: cpu / dt })
}

/// A runtime for step mode: a generator cycling through `trace` on port 0, a sink on port 1,
/// `program` on one unit.
fn step_runtime(trace: Vec<Vec<u8>>, program: Box<dyn Program>, slot: usize) -> Result<Runtime, String> {
    let cfg = RuntimeConfig { slots: SlotSpec::new(64, slot), ..RuntimeConfig::default() };
    Runtime::builder_with(cfg)
        .port(TestLink::generator(trace, u64::MAX))
        .port(TestLink::sink())
        .unit_boxed(program)
        .build()
        .map_err(|e| e.to_string())
}

/// 256 steps of `rt`, advancing the virtual clock `now` by 1 µs each.
fn step_256(rt: &mut Runtime, now: &mut link::Instant) {
    for _ in 0..256 {
        *now = *now + Duration::from_micros(1);
        rt.step(*now);
    }
}

/// The same on one thread in step mode (distributor and one unit interleaved).
fn measure_step(trace: Vec<Vec<u8>>, program: Box<dyn Program>, slot: usize, secs: f64) -> Result<Rate, String> {
    let mut rt = step_runtime(trace, program, slot)?;
    let (t0, cpu0) = (Instant::now(), cpu_seconds());
    let mut now = link::Instant::ZERO;
    while t0.elapsed().as_secs_f64() < secs {
        step_256(&mut rt, &mut now);
    }
    let (dt, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let s = rt.stats();
    Ok(Rate { frames: s.ports[0].rx_frames as f64 / dt, bytes: s.ports[0].rx_bytes as f64 / dt, cores: cpu / dt })
}

fn udp_frame(size: usize, i: u16) -> Vec<u8> {
    let e = Endpoints {
        src: Ipv4Addr::new(10, 0, (i >> 8) as u8, i as u8),
        dst: Ipv4Addr::new(10, 1, 0, 1),
        sport: 1000 + i,
        dport: 9,
    };
    frames::udp_of_size(&e, size.max(42)).unwrap_or_default()
}

/// Frames of `size` bytes from 64 flows.
fn forward_trace(size: usize) -> Vec<Vec<u8>> {
    (0..64).map(|i| udp_frame(size, i)).collect()
}

fn slot_for(size: usize) -> usize {
    (size + 256).clamp(2048, middlebox::slots::MAX_SLOT_SIZE)
}

/// A result row: rate, share of the memcpy limit, per unit (`units` is the unit count, or
/// None where the row has no fixed count).
fn rate_row(what: &str, size: Cell, units: Option<usize>, r: Result<Rate, String>, memcpy: Option<f64>) -> Vec<Cell> {
    let units_cell = units.map_or(Cell::blank(), |u| Cell::count(u as f64));
    match r {
        Ok(r) => {
            let fps = |v: f64| Cell::Num(v, Unit::FramesPerSec);
            let of = memcpy.map_or(Cell::blank(), |m| Cell::Num(r.bytes * COPIES / m, Unit::Percent));
            let per = units.map_or(Cell::blank(), |u| fps(r.frames / u as f64));
            let per_cpu = if r.cores > 0.0 { fps(r.frames / r.cores) } else { Cell::blank() };
            vec![
                Cell::from(what),
                size,
                units_cell,
                fps(r.frames),
                Cell::bps(r.bytes * 8.0),
                memcpy.map_or(Cell::blank(), |m| Cell::Num(m, Unit::BytesPerSec)),
                of,
                per,
                Cell::count(r.cores),
                per_cpu,
            ]
        }
        Err(e) => vec![Cell::from(what), size, units_cell, Cell::Missing(format!("failed: {e}"))],
    }
}

const RATE_HEADERS: [&str; 10] = [
    "workload",
    "frame",
    "units",
    "frame rate",
    "throughput",
    "memcpy",
    "memcpy ×3",
    "frame rate per unit",
    "CPUs busy",
    "frame rate per CPU",
];

/// Run `linerate bench middlebox`.
pub fn run(a: MiddleboxBenchArgs) -> Result<ExitCode, String> {
    let tables = measure_all(&a)?;
    print_tables(&tables, a.json);
    if stop_requested() {
        return Err("interrupted".into());
    }
    Ok(ExitCode::SUCCESS)
}

/// Every table of `linerate bench middlebox` (memcpy, forwarding, firewall, IDS, swaps, less
/// the parts skipped), with a progress bar on stderr unless `--json`.
pub fn measure_all(a: &MiddleboxBenchArgs) -> Result<Vec<Table>, String> {
    if !(0.05..=60.0).contains(&a.secs.as_secs_f64()) {
        return Err(format!("--duration {:?} is outside 50ms..=60s", a.secs));
    }
    let secs = a.secs.as_secs_f64();
    if let Some(bad) = a.sizes.iter().find(|&&s| !(64..=9216).contains(&s)) {
        return Err(format!("frame size {bad} is outside 64..=9216"));
    }
    if let Some(bad) = a.units.iter().find(|&&u| u == 0 || u > 16) {
        return Err(format!("unit count {bad} is outside 1..=16"));
    }
    install_stop_handler();
    let skip = |s: &str| a.skip.iter().any(|x| x == s);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_size = a.sizes.len() * (a.units.len() + 1);
    let steps = a.sizes.len()
        + if skip("forward") { 0 } else { per_size }
        + if skip("firewall") { 0 } else { per_size + a.sizes.len() * a.units.len() }
        + if skip("ids") { 0 } else { a.units.len() + 2 }
        + if skip("swap") { 0 } else { 2 };
    let pb = progress(steps as u64, a.json);
    let memcpy: Vec<f64> =
        a.sizes.iter().map(|&s| step(&pb, &format!("memcpy {s} B"), || memcpy_rate(s, 0.2))).collect();
    let mut tables = Vec::new();
    let mut mt = Table::new("memcpy in this run (one thread, ~1 MiB working set)", &["copy size", "memcpy"]);
    for (s, m) in a.sizes.iter().zip(&memcpy) {
        mt.row(vec![Cell::bytes(*s as u64), Cell::Num(*m, Unit::BytesPerSec)]);
    }
    tables.push(mt.into_reference());

    if !skip("forward") {
        let mut t = Table::new(
            &format!("forwarding (port 0 -> unit -> port 1), threads busy-polling on {cpus} CPUs; Rosebud: {ROSEBUD_MPPS_PER_RPU} Mpps per RPU"),
            &RATE_HEADERS,
        );
        for (i, &size) in a.sizes.iter().enumerate() {
            for &u in &a.units {
                if stop_requested() {
                    break;
                }
                let r = step(&pb, &format!("forward {size} B, {u} units"), || {
                    let progs: Vec<Box<dyn Program>> =
                        (0..u).map(|_| Box::new(Forwarder::cross()) as Box<dyn Program>).collect();
                    measure(forward_trace(size), progs, false, slot_for(size), secs)
                });
                t.row(rate_row("forward (threads)", Cell::bytes(size as u64), Some(u), r, Some(memcpy[i])));
            }
            let r = step(&pb, &format!("forward {size} B, step mode"), || {
                measure_step(forward_trace(size), Box::new(Forwarder::cross()), slot_for(size), secs)
            });
            t.row(rate_row("forward (1 thread, step)", Cell::bytes(size as u64), Some(1), r, Some(memcpy[i])));
        }
        tables.push(t);
    }

    if !skip("firewall") {
        let mut t =
            Table::new("firewall (1,050-prefix blacklist, 2% of sources blacklisted, flow hash)", &RATE_HEADERS);
        let mut same = Table::new(
            "firewall against forwarding on the same trace, policy and threads",
            &["frame", "units", "firewall", "forward", "firewall / forward"],
        );
        match PrefixSet::load(&a.blacklist) {
            Err(e) => t.row(vec![
                Cell::from("firewall"),
                Cell::blank(),
                Cell::blank(),
                Cell::Missing(format!("not run: {e}")),
            ]),
            Ok(set) => {
                let set = Arc::new(set);
                for (i, &size) in a.sizes.iter().enumerate() {
                    for &u in &a.units {
                        if stop_requested() {
                            break;
                        }
                        let r = step(&pb, &format!("firewall {size} B, {u} units"), || {
                            let progs: Vec<Box<dyn Program>> =
                                (0..u).map(|_| Box::new(Firewall::new(set.clone())) as Box<dyn Program>).collect();
                            measure(apps::firewall::sample_trace(&set, size), progs, true, slot_for(size), secs)
                        });
                        // Forwarding on the same trace with the same flow-hash policy, right after:
                        // the firewall's cost alone, apart from the policy's and the trace's.
                        let fwd = step(&pb, &format!("forward {size} B, {u} units, firewall trace"), || {
                            let progs: Vec<Box<dyn Program>> =
                                (0..u).map(|_| Box::new(Forwarder::cross()) as Box<dyn Program>).collect();
                            measure(apps::firewall::sample_trace(&set, size), progs, true, slot_for(size), secs)
                        });
                        if let (Ok(f), Ok(w)) = (&r, &fwd) {
                            same.row(vec![
                                Cell::bytes(size as u64),
                                Cell::count(u as f64),
                                Cell::Num(f.frames, Unit::FramesPerSec),
                                Cell::Num(w.frames, Unit::FramesPerSec),
                                Cell::Num(f.frames / w.frames, Unit::Percent),
                            ]);
                        }
                        t.row(rate_row("firewall", Cell::bytes(size as u64), Some(u), r, Some(memcpy[i])));
                        t.row(rate_row(
                            "forward (firewall's trace, flow hash)",
                            Cell::bytes(size as u64),
                            Some(u),
                            fwd,
                            Some(memcpy[i]),
                        ));
                    }
                    // The one-core figure beside forwarding's step-mode row.
                    let r = step(&pb, &format!("firewall {size} B, step mode"), || {
                        let fw = Box::new(Firewall::new(set.clone()));
                        measure_step(apps::firewall::sample_trace(&set, size), fw, slot_for(size), secs)
                    });
                    t.row(rate_row("firewall (1 thread, step)", Cell::bytes(size as u64), Some(1), r, Some(memcpy[i])));
                }
            }
        }
        tables.push(t);
        tables.push(same);
    }

    if !skip("ids") && !stop_requested() {
        let mut t = Table::new(
            "IDS (community rules; trace: 2,000 background + 200 attack TCP conversations, 0.3% reordering; flow hash)",
            &RATE_HEADERS,
        );
        match step(&pb, "IDS rules and trace", || ids::load_rules(&a.rules, false)) {
            Err(e) => {
                t.row(vec![Cell::from("ids"), Cell::blank(), Cell::blank(), Cell::Missing(format!("not run: {e}"))])
            }
            Ok((rules, _)) => {
                let trace = generate(&rules.full, &TraceConfig::default());
                let avg = trace.frames.iter().map(Vec::len).sum::<usize>() / trace.frames.len().max(1);
                let cfg = ids_config(a.no_reorder);
                for &u in &a.units {
                    if stop_requested() {
                        break;
                    }
                    let r = step(&pb, &format!("ids, {u} units"), || {
                        let progs: Vec<Box<dyn Program>> =
                            (0..u).map(|_| Box::new(IdsUnit::new(rules.clone(), cfg)) as Box<dyn Program>).collect();
                        measure(trace.frames.clone(), progs, true, IDS_SLOT, secs)
                    });
                    t.row(rate_row("ids", Cell::bytes(avg as u64), Some(u), r, None));
                }
                let r = step(&pb, "ids, step mode", || {
                    measure_step(trace.frames.clone(), Box::new(IdsUnit::new(rules.clone(), cfg)), IDS_SLOT, secs)
                });
                t.row(rate_row("ids (1 thread, step)", Cell::bytes(avg as u64), Some(1), r, None));
            }
        }
        tables.push(t);
    }

    if !skip("swap") && !stop_requested() {
        let r = step(&pb, "program swaps", || swap_times(a.swaps.max(1)));
        let mut t = Table::new(
            &format!(
                "program swap while 64 B frames flow through 2 units (Rosebud: {} ms per RPU)",
                ROSEBUD_SWAP.as_millis()
            ),
            &["kind", "swaps", "median", "max", "frames lost", "speedup vs Rosebud"],
        );
        match r {
            Ok(rows) => {
                for (kind, mut v, lost) in rows {
                    v.sort();
                    let med = v[v.len() / 2];
                    let max = v[v.len() - 1];
                    t.row(vec![
                        Cell::from(kind),
                        Cell::count(v.len() as f64),
                        Cell::secs(med.as_secs_f64()),
                        Cell::secs(max.as_secs_f64()),
                        Cell::count(lost as f64),
                        Cell::ratio(ROSEBUD_SWAP.as_secs_f64() / med.as_secs_f64().max(1e-9)),
                    ]);
                }
            }
            Err(e) => t.row(vec![Cell::from("swap"), Cell::Missing(format!("failed: {e}"))]),
        }
        pb.inc(1);
        tables.push(t);
    }
    pb.finish_and_clear();
    Ok(tables)
}

/// A row of the swap table: what was timed, the durations, frames lost.
type SwapRow = (&'static str, Vec<Duration>, u64);

/// Swap unit 0's program `n` times in place and `n / 4 + 1` times Rosebud's way (drain, swap,
/// enable) while 64 B frames flow; returns (kind, durations, frames lost).
fn swap_times(n: usize) -> Result<Vec<SwapRow>, String> {
    let gen = TestLink::generator(forward_trace(64), u64::MAX);
    let sink = TestLink::sink();
    let out = sink.tally();
    let cfg = RuntimeConfig { idle: IdlePolicy::busy(), ..RuntimeConfig::default() };
    let rt = Runtime::builder_with(cfg)
        .port(gen)
        .port(sink)
        .unit(Forwarder::cross())
        .unit(Forwarder::cross())
        .policy(FlowHash::new(2))
        .build()
        .map_err(|e| e.to_string())?;
    let running = rt.start().map_err(|e| e.to_string())?;
    let c = running.control();
    std::thread::sleep(Duration::from_millis(50));
    let mut hot = Vec::new();
    let mut hot_latency = Vec::new();
    for i in 0..n {
        let r = c
            .swap(0, Box::new(Forwarder::cross().named(if i % 2 == 0 { "b" } else { "a" })))
            .map_err(|e| e.to_string())?;
        let r = r.wait(Duration::from_secs(10)).map_err(|e| e.to_string())?;
        hot.push(r.pause);
        hot_latency.push(r.latency);
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut drained = Vec::new();
    for _ in 0..n / 4 + 1 {
        let t0 = Instant::now();
        c.swap_drained(0, Box::new(Forwarder::cross()), Duration::from_secs(10)).map_err(|e| e.to_string())?;
        drained.push(t0.elapsed());
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut rt = running.stop().map_err(|e| e.to_string())?;
    let s = rt.stats();
    // Frames that entered and did not leave: none may be lost (the run stops with some inside).
    let lost = s.ports[0].rx_frames.saturating_sub(out.frames() + s.occupancy()) + s.drops().total();
    Ok(vec![
        ("in place: unit paused", hot, lost),
        ("in place: request to done", hot_latency, lost),
        ("drain, swap, enable (Rosebud's way)", drained, lost),
    ])
}

/// Latency (ns, sorted) of up to `count` frames of `size` bytes sent one at a time into port 0
/// of a running middlebox with `units` forwarding units, each timed until it leaves port 1
/// (both ports are in-memory links driven by the calling thread); stops early after `budget`.
///
/// The middlebox runs to completion on one busy-polling thread (distributor, then each unit,
/// then the distributor again: [`Runtime::step`]), the timing thread on the other core. With a
/// thread per unit and one for the distributor, three busy threads would share this
/// machine's two CPUs and a frame would wait for a scheduler tick (4 ms here) instead of
/// being forwarded.
pub fn forward_latency(size: usize, units: usize, count: usize, budget: Duration) -> Result<Vec<u64>, String> {
    use link::Link as _;
    let link_cfg = link::LinkConfig::default().mtu(9000);
    let (mut inject, port0) = link::mem::try_pair(link_cfg).map_err(|e| e.to_string())?;
    let (port1, mut out) = link::mem::try_pair(link_cfg).map_err(|e| e.to_string())?;
    let cfg = RuntimeConfig {
        slots: SlotSpec::new(64, slot_for(size)),
        idle: IdlePolicy::busy(),
        ..RuntimeConfig::default()
    };
    let mut b = Runtime::builder_with(cfg).port(port0).port(port1).policy(RoundRobin::new());
    for _ in 0..units.max(1) {
        b = b.unit_boxed(Box::new(Forwarder::cross()));
    }
    let mut rt = b.build().map_err(|e| e.to_string())?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_mb = stop.clone();
    let middlebox = std::thread::Builder::new()
        .name("mb-latency".into())
        .spawn(move || {
            while !stop_mb.load(std::sync::atomic::Ordering::Acquire) {
                rt.step(link::Instant::now());
            }
        })
        .map_err(|e| format!("cannot start the middlebox thread: {e}"))?;
    let frame = udp_frame(size, 0);
    let (mut tx, mut rx) = (link::FrameBatch::new(1, frame.len() + 64), link::FrameBatch::new(64, 9216 + 64));
    let warmup = count / 10 + 10;
    let mut v = Vec::with_capacity(count);
    let started = Instant::now();
    let result = (|| -> Result<(), String> {
        for i in 0..count + warmup {
            if i > warmup + 100 && started.elapsed() > budget {
                break;
            }
            tx.clear();
            if !tx.push(&frame) {
                return Err("the probe frame does not fit its batch".into());
            }
            let t0 = Instant::now();
            while !tx.is_empty() {
                inject.tx_batch(link::Instant::now(), &mut tx).map_err(|e| e.to_string())?;
                if t0.elapsed() > Duration::from_secs(1) || stop_requested() {
                    return Err("the middlebox did not take the frame within 1 s".into());
                }
            }
            loop {
                rx.clear();
                if out.rx_batch(link::Instant::now(), &mut rx).map_err(|e| e.to_string())? > 0 {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(1) || stop_requested() {
                    return Err(format!("frame {i} did not come out within 1 s"));
                }
            }
            if i >= warmup {
                v.push(t0.elapsed().as_nanos() as u64);
            }
        }
        Ok(())
    })();
    stop.store(true, std::sync::atomic::Ordering::Release);
    middlebox.join().map_err(|_| "the middlebox thread panicked".to_string())?;
    result?;
    v.sort_unstable();
    Ok(v)
}

/// Run the hidden `bench-peer ids-cost`: load the rules and the trace, push at least
/// `--frames` frames through one IDS unit in step mode ([`IDS_COST_FN`]), print `frames N`
/// (N: the frames that entered) and exit.
pub fn run_ids_cost(a: IdsCostArgs) -> Result<ExitCode, String> {
    let (rules, _) = ids::load_rules(&a.rules, false).map_err(|e| format!("{}: {e}", a.rules.display()))?;
    let trace = generate(&rules.full, &TraceConfig::default());
    let mut rt = step_runtime(trace.frames, Box::new(IdsUnit::new(rules, ids_config(a.no_reorder))), IDS_SLOT)?;
    let frames = ids_cost_frames(&mut rt, a.frames)?;
    println!("frames {frames}");
    Ok(ExitCode::SUCCESS)
}

/// The name of the function of `bench-peer ids-cost` that pushes the frames (for callgrind's
/// `--toggle-collect`, which then counts only the frames' instructions, not rule loading).
pub const IDS_COST_FN: &str = "*bench_middlebox::ids_cost_frames*";

/// Step `rt` until at least `frames` frames entered it; returns how many did.
#[inline(never)]
fn ids_cost_frames(rt: &mut Runtime, frames: u64) -> Result<u64, String> {
    let mut now = link::Instant::ZERO;
    // Each frame takes a few steps at most; a unit that stops taking frames fails the run.
    let max_rounds = frames / 16 + 16;
    let mut rounds = 0;
    while rt.stats().ports[0].rx_frames < frames {
        if rounds == max_rounds {
            return Err(format!("the IDS unit took {} of {frames} frames", rt.stats().ports[0].rx_frames));
        }
        step_256(rt, &mut now);
        rounds += 1;
    }
    Ok(rt.stats().ports[0].rx_frames)
}
