//! `linerate bench link`: frames/s and Gbit/s over every link kind, one way, producer and
//! consumer on different threads (shm: different processes), beside the memcpy bandwidth
//! measured in the same run; and the hidden `linerate bench-peer link-sink` child that drains
//! a shared-memory link.

use crate::bench_common::*;
use crate::output::{Cell, Table, Unit};
use crate::runloop::{install_stop_handler, stop_requested};
use indicatif::ProgressBar;
use link::af_xdp::{self, Steer, XdpConfig, XdpLink};
use link::packet::{self, PacketLink};
use link::shm::ShmLink;
use link::tap::{self, TapLink};
use link::{mem, FrameBatch, Instant, Link, LinkConfig, LinkError};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use testbed::netns::veth_pair;
use testbed::{netns_unavailable, Netns};

/// Frames per link call.
const BATCH: usize = 32;
/// IP MTU of every link under test: carries 9014-byte frames.
const MTU: usize = 9000;
/// Smallest and largest frame size accepted by `--sizes`.
const SIZE_RANGE: std::ops::RangeInclusive<usize> = 14..=MTU + 18;
/// How long a consumer keeps listening after the producer stopped.
const DRAIN: Duration = Duration::from_millis(50);
/// Bytes copied around in by the memcpy measurement of frame sizes (source and destination).
const MEMCPY_WORKING_SET: usize = 1 << 20;
/// The block size of the large-copy memcpy figure.
const MEMCPY_BLOCK: usize = 1 << 20;
/// The shm goal at 64-byte frames, in frames/s.
const GOAL_SMALL_FPS: f64 = 20e6;
/// The AF_XDP goal at 64 and 1514-byte frames: frames/s over AF_PACKET's in the same run.
const GOAL_XDP_OVER_PACKET: f64 = 4.0;
/// The shm goal at 9014-byte frames, as a fraction of memcpy bandwidth.
const GOAL_LARGE_OF_MEMCPY: f64 = 0.5;

/// Options of `linerate bench link`.
#[derive(clap::Args)]
pub struct LinkArgs {
    /// How long to send per link kind and frame size (a duration: 1s, 500ms; a bare number
    /// is seconds).
    #[arg(value_name = "DURATION", long = "duration", short = 't', alias = "secs", default_value = "1s", value_parser = crate::duration::parse_duration)]
    secs: Duration,
    /// Frame sizes in bytes (Ethernet header included, FCS excluded), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64,1514,9014")]
    sizes: Vec<usize>,
    /// Link kinds to measure, comma-separated (tap, af_packet and af_xdp need root; af_xdp
    /// runs on both ends of the veth pair, receiving in place).
    #[arg(long, value_delimiter = ',', default_value = "mem,shm,tap,af_packet,af_xdp",
          value_parser = ["mem", "shm", "tap", "af_packet", "af_xdp"])]
    kinds: Vec<String>,
    /// Print JSON (and no progress bar).
    #[arg(long)]
    json: bool,
}

/// Options of the hidden `linerate bench-peer link-sink` child.
#[derive(clap::Args)]
pub struct SinkArgs {
    /// Name of the shared-memory link to open (side B).
    #[arg(long)]
    shm: String,
    /// How long the parent sends; the sink gives up after this plus a grace period.
    #[arg(value_name = "DURATION", long = "duration", alias = "secs", default_value = "1s", value_parser = crate::duration::parse_duration)]
    secs: Duration,
    /// CPU to pin the sink to.
    #[arg(long)]
    cpu: Option<usize>,
}

/// Frames sent and what the consumer counted, for one link kind and frame size.
struct Measured {
    /// Frames the producer's link accepted.
    sent: u64,
    /// Share of the run the producer thread was on a CPU.
    producer_cpu: f64,
    /// What the consumer received.
    got: Tally,
}

/// The result of one row of the link table.
enum Outcome {
    /// Measured.
    Done(Measured),
    /// Not run, and why.
    Skipped(String),
    /// Run, but it failed.
    Failed(String),
}

/// Run `linerate bench link`.
pub fn run(a: LinkArgs) -> Result<ExitCode, String> {
    let secs = check_secs(a.secs)?;
    if let Some(bad) = a.sizes.iter().find(|s| !SIZE_RANGE.contains(s)) {
        return Err(format!("frame size {bad} is outside {}..={}", SIZE_RANGE.start(), SIZE_RANGE.end()));
    }
    install_stop_handler();
    bench_cpus();
    let steps = a.sizes.len() * (a.kinds.len() + 1) + 1;
    let pb = progress(steps as u64, a.json);
    let copy_secs = (a.secs.as_secs_f64() / 4.0).clamp(0.05, 0.25);
    let memcpy: Vec<f64> =
        a.sizes.iter().map(|&s| step(&pb, &format!("memcpy {s} B"), || memcpy_rate(s, copy_secs))).collect();
    let block = step(&pb, "memcpy 1 MiB", || memcpy_rate(MEMCPY_BLOCK, copy_secs));
    let mut rows = Vec::new();
    for kind in &a.kinds {
        rows.extend(
            measure_kind(kind, &a.sizes, secs, &pb).into_iter().zip(&a.sizes).map(|(o, &s)| (kind.as_str(), s, o)),
        );
    }
    pb.finish_and_clear();
    if stop_requested() {
        return Err("interrupted".into());
    }
    let failed = rows.iter().any(|(_, _, o)| matches!(o, Outcome::Failed(_)));
    print_tables(&[memcpy_table(&a.sizes, &memcpy, block), link_table(&rows, &a.sizes, &memcpy)], a.json);
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// Measure `kind` at every size, setting its environment up once.
fn measure_kind(kind: &str, sizes: &[usize], secs: Duration, pb: &ProgressBar) -> Vec<Outcome> {
    let each = |f: &mut dyn FnMut(usize) -> Result<Measured, String>| -> Vec<Outcome> {
        sizes
            .iter()
            .map(|&s| step(pb, &format!("{kind} {s} B"), || f(s)).map_or_else(Outcome::Failed, Outcome::Done))
            .collect()
    };
    let for_all = |text: String, outcome: fn(String) -> Outcome| -> Vec<Outcome> {
        pb.inc(sizes.len() as u64);
        sizes.iter().map(|_| outcome(text.clone())).collect()
    };
    let needs_root = matches!(kind, "tap" | "af_packet" | "af_xdp");
    if let Some(why) = netns_unavailable().filter(|_| needs_root) {
        return for_all(format!("skipped: {why}"), Outcome::Skipped);
    }
    let setup_failed = |e: String| for_all(format!("setup failed: {e}"), Outcome::Failed);
    match kind {
        "mem" => each(&mut |s| bench_mem(s, secs)),
        "shm" => each(&mut |s| bench_shm(s, secs)),
        "tap" => tap_rig().map_or_else(setup_failed, |mut rig| each(&mut |s| rig.measure(s, secs))),
        "af_xdp" => xdp_rig().map_or_else(setup_failed, |mut rig| {
            pb.println(format!("af_xdp: {} mode", rig.tx.mode_label()));
            each(&mut |s| run_threads(&mut rig.tx, rx_in_place(&mut rig.rx), s, secs))
        }),
        _ => veth_rig().map_or_else(setup_failed, |mut rig| each(&mut |s| rig.measure(s, secs))),
    }
}

/// A frame of `size` bytes to a locally administered MAC, with the experimental EtherType
/// 0x88b5 (no kernel protocol handler claims it; AF_PACKET still sees it).
fn test_frame(size: usize) -> Vec<u8> {
    let mut f: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let header = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x88, 0xb5];
    let n = header.len().min(size);
    f[..n].copy_from_slice(&header[..n]);
    f
}

/// Send a `size`-byte frame on `link` in batches of [`BATCH`] for `secs`; returns the frames
/// accepted and the share of the time this thread was on a CPU.
fn produce<L: Link>(link: &mut L, size: usize, secs: Duration) -> Result<(u64, f64), LinkError> {
    let mut batch = FrameBatch::new(BATCH, size);
    let frame = test_frame(size);
    while batch.push(&frame) {}
    let (deadline, meter) = (Instant::now() + secs, CpuMeter::start());
    let mut sent = 0;
    loop {
        let now = Instant::now();
        if time_up(now, deadline) {
            return Ok((sent, meter.share()));
        }
        sent += link.tx_batch(now, &mut batch)? as u64;
        // Every slot still holds the frame, so refilling copies nothing.
        while batch.push_with(|slot| slot.len()) {}
    }
}

/// Count what `rx` delivers until the link closes, or `stop` is set and nothing arrived for
/// [`DRAIN`], or `limit` passed. `rx` adds the bytes it took to its argument and returns the
/// number of frames it took.
fn consume(
    mut rx: impl FnMut(&mut u64) -> Result<usize, LinkError>,
    stop: &AtomicBool,
    limit: Duration,
) -> Result<Tally, LinkError> {
    let (start, meter) = (Instant::now(), CpuMeter::start());
    let (mut tally, mut last) = (Tally::default(), start);
    loop {
        let mut bytes = 0;
        let n = match rx(&mut bytes) {
            Err(LinkError::Closed) => break,
            r => r?,
        };
        let now = Instant::now();
        if n > 0 {
            tally.record(now, n as u64, bytes);
            last = now;
        } else if stop.load(Ordering::Relaxed) && now - last > DRAIN {
            break;
        }
        if now - start > limit {
            break;
        }
    }
    tally.cpu_share = meter.share();
    Ok(tally)
}

/// Ring-backed links, which can hand received frames over in place (zero copy).
trait RxInPlace: Send {
    /// Hand up to `max` received frames to `f` in place; returns how many.
    fn rx_in_place(&mut self, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError>;
}

impl RxInPlace for mem::MemLink {
    fn rx_in_place(&mut self, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
        self.rx_with(max, f)
    }
}

impl RxInPlace for ShmLink {
    fn rx_in_place(&mut self, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
        self.rx_with(max, f)
    }
}

impl RxInPlace for XdpLink {
    fn rx_in_place(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
        Link::rx_in_place(self, Instant::now(), max, &mut |_, frame| f(frame)).unwrap_or(Ok(0))
    }
}

/// A consumer for [`consume`] that takes frames from `link` in place.
fn rx_in_place<L: RxInPlace>(link: &mut L) -> impl FnMut(&mut u64) -> Result<usize, LinkError> + Send + '_ {
    move |bytes| link.rx_in_place(BATCH, |f| *bytes += f.len() as u64)
}

/// A consumer for [`consume`] that receives batches from any link.
fn rx_batches<L: Link>(link: &mut L) -> impl FnMut(&mut u64) -> Result<usize, LinkError> + Send + '_ {
    let mut batch = FrameBatch::new(BATCH, link.max_frame() + 1);
    move |bytes| {
        batch.clear();
        let n = link.rx_batch(Instant::now(), &mut batch)?;
        *bytes += batch.iter().map(|f| f.len() as u64).sum::<u64>();
        Ok(n)
    }
}

/// Produce on `tx` in this thread while `rx` consumes on a second one.
fn run_threads<L: Link>(
    tx: &mut L,
    rx: impl FnMut(&mut u64) -> Result<usize, LinkError> + Send,
    size: usize,
    secs: Duration,
) -> Result<Measured, String> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            pin_side(1);
            consume(rx, &stop, secs + GRACE)
        });
        pin_side(0);
        let sent = produce(tx, size, secs);
        stop.store(true, Ordering::Relaxed);
        let got = consumer.join().map_err(|_| "the consumer thread panicked".to_string())?;
        let (sent, producer_cpu) = sent.map_err(msg)?;
        Ok(Measured { sent, producer_cpu, got: got.map_err(msg)? })
    })
}

/// The in-process pair: producer thread and consumer thread.
fn bench_mem(size: usize, secs: Duration) -> Result<Measured, String> {
    let (mut a, mut b) = mem::try_pair(LinkConfig::default().mtu(MTU)).map_err(msg)?;
    run_threads(&mut a, rx_in_place(&mut b), size, secs)
}

/// Raw Ethernet frames of `size` bytes over the shared-memory cable to a counting child
/// process for `secs`: (frames/s, bytes/s) the child received.
pub fn shm_frame_rate(size: usize, secs: Duration) -> Result<(f64, f64), String> {
    let m = bench_shm(size, secs)?;
    Ok((m.got.per_sec(m.got.frames as f64), m.got.per_sec(m.got.bytes as f64)))
}

/// The shared-memory cable: we send, a child process (`bench-peer link-sink`) counts.
fn bench_shm(size: usize, secs: Duration) -> Result<Measured, String> {
    let name = unique_name("bench-link");
    let mut link = ShmLink::create(&name, LinkConfig::default().mtu(MTU)).map_err(msg)?;
    let mut peer = PeerProcess::spawn(&["link-sink", "--shm", &name, "--duration", &secs.as_secs_f64().to_string()])?;
    peer.expect_ready()?;
    pin_side(0);
    let (sent, producer_cpu) = produce(&mut link, size, secs).map_err(msg)?;
    drop(link); // the sink sees the link closed once it has drained it
    let got = peer.next_json(secs + GRACE)?;
    Ok(Measured { sent, producer_cpu, got })
}

/// Run the hidden `bench-peer link-sink` child: open the link, say "ready", count frames in
/// place until the parent closes it, print the tally as one JSON line.
pub fn run_sink(a: SinkArgs) -> Result<ExitCode, String> {
    die_with_parent();
    if let Some(cpu) = a.cpu {
        pin_cpu(cpu);
    }
    let secs = check_secs(a.secs)?;
    let mut link = ShmLink::open(&a.shm, Duration::from_secs(5)).map_err(msg)?;
    println!("{READY}");
    let tally = consume(rx_in_place(&mut link), &AtomicBool::new(false), secs + GRACE).map_err(msg)?;
    println!("{}", serde_json::to_string(&tally).map_err(msg)?);
    Ok(ExitCode::SUCCESS)
}

/// Two links in network namespaces we created: frames go out of `tx`, `rx` counts them.
struct Rig<T: Link, R: Link> {
    /// The sending end.
    tx: T,
    /// The counting end.
    rx: R,
    /// The namespaces, deleted on drop after the links are closed (fields drop in order).
    _ns: Vec<Netns>,
}

impl<T: Link, R: Link> Rig<T, R> {
    /// Send `size`-byte frames for `secs` and count what arrives.
    fn measure(&mut self, size: usize, secs: Duration) -> Result<Measured, String> {
        run_threads(&mut self.tx, rx_batches(&mut self.rx), size, secs)
    }
}

/// A TAP in a fresh namespace, written by us; AF_PACKET on the same interface counts what the
/// kernel received.
fn tap_rig() -> Result<Rig<TapLink, PacketLink>, String> {
    let ns = Netns::create("lr-bench-tap").map_err(msg)?;
    let tx = tap::create_in_netns(ns.name(), "lrbench0", MTU).map_err(msg)?;
    let rx = packet::create_in_netns(ns.name(), "lrbench0", MTU).map_err(msg)?;
    Ok(Rig { tx, rx, _ns: vec![ns] })
}

/// A veth pair between two fresh namespaces with AF_PACKET on each end.
fn veth_rig() -> Result<Rig<PacketLink, PacketLink>, String> {
    let a = Netns::create("lr-bench-pa").map_err(msg)?;
    let b = Netns::create("lr-bench-pb").map_err(msg)?;
    veth_pair(&a, "lrbench-a", "10.99.0.1/24", &b, "lrbench-b", "10.99.0.2/24", MTU).map_err(msg)?;
    let tx = packet::create_in_netns(a.name(), "lrbench-a", MTU).map_err(msg)?;
    let rx = packet::create_in_netns(b.name(), "lrbench-b", MTU).map_err(msg)?;
    Ok(Rig { tx, rx, _ns: vec![a, b] })
}

/// A veth pair between two fresh namespaces with AF_XDP on each end (all frames steered to it).
fn xdp_rig() -> Result<Rig<XdpLink, XdpLink>, String> {
    let a = Netns::create("lr-bench-xa").map_err(msg)?;
    let b = Netns::create("lr-bench-xb").map_err(msg)?;
    veth_pair(&a, "lrbench-xa", "10.99.1.1/24", &b, "lrbench-xb", "10.99.1.2/24", MTU).map_err(msg)?;
    let cfg = XdpConfig::new(Steer::All);
    let one = |ns: &Netns, ifname: &str| -> Result<XdpLink, String> {
        let mut links = af_xdp::create_in_netns(ns.name(), ifname, 1, &cfg).map_err(msg)?;
        links.pop().ok_or_else(|| "no AF_XDP queue opened".to_string())
    };
    let rx = one(&b, "lrbench-xb")?;
    let tx = one(&a, "lrbench-xa")?;
    Ok(Rig { tx, rx, _ns: vec![a, b] })
}

/// memcpy bandwidth in bytes/s for `size`-byte copies, cycling through a working set of
/// [`MEMCPY_WORKING_SET`] bytes (or one block each way if `size` is larger), for `secs` seconds.
fn memcpy_rate(size: usize, secs: f64) -> f64 {
    let span = (MEMCPY_WORKING_SET / 2).max(size);
    let (src, mut dst) = (vec![0x5au8; span], vec![0u8; span]);
    let slots = span / size;
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let (mut copies, mut now) = (0usize, start);
    while !time_up(now, deadline) {
        for _ in 0..64 {
            let off = (copies % slots) * size;
            dst[off..off + size].copy_from_slice(&src[off..off + size]);
            std::hint::black_box(&mut dst);
            copies += 1;
        }
        now = Instant::now();
    }
    (copies * size) as f64 / (now - start).as_secs_f64()
}

/// The memcpy table: GB/s per frame size and for 1 MiB blocks.
fn memcpy_table(sizes: &[usize], rates: &[f64], block: f64) -> Table {
    let mut t = Table::new(
        "memcpy in this run (one thread; frame sizes within a ~1 MiB working set)",
        &["copy size", "memcpy"],
    );
    for (s, r) in sizes.iter().zip(rates) {
        t.row(vec![Cell::bytes(*s as u64), Cell::Num(*r, Unit::BytesPerSec)]);
    }
    t.row(vec![Cell::bytes(1 << 20), Cell::Num(block, Unit::BytesPerSec)]);
    t.into_reference()
}

/// The link table: one row per kind and size, rates beside memcpy and the goals.
fn link_table(rows: &[(&str, usize, Outcome)], sizes: &[usize], memcpy: &[f64]) -> Table {
    let mut t = Table::new(
        "links, one way, batches of 32; producer and consumer on two threads (shm: two processes, \
         consumer reads frames in place); both spin, pinned to two CPUs; frames/s and Gbit/s \
         counted at the consumer; CPU got: share of the run each side was on its CPU (below \
         ~90%, other work on the machine held the figures down)",
        &["link", "frame", "frame rate", "throughput", "of memcpy", "delivered", "CPU got tx", "CPU got rx", "goal"],
    );
    for (kind, size, outcome) in rows {
        let mut cells = vec![Cell::from(*kind), Cell::bytes(*size as u64)];
        match outcome {
            Outcome::Skipped(why) | Outcome::Failed(why) => cells.push(Cell::Missing(why.clone())),
            Outcome::Done(m) => {
                let copy = sizes.iter().position(|s| s == size).map_or(f64::NAN, |i| memcpy[i]);
                let packet_fps = rows.iter().find_map(|(k, s, o)| match o {
                    Outcome::Done(p) if *k == "af_packet" && s == size => Some(p.got.per_sec(p.got.frames as f64)),
                    _ => None,
                });
                cells.extend(rate_cells(kind, *size, m, copy, packet_fps));
            }
        }
        t.row(cells);
    }
    t
}

/// frames/s, Gbit/s, share of memcpy, delivered share, CPU shares and goal verdict of one measurement.
fn rate_cells(kind: &str, size: usize, m: &Measured, memcpy: f64, packet_fps: Option<f64>) -> Vec<Cell> {
    let (fps, bps) = (m.got.per_sec(m.got.frames as f64), m.got.per_sec(m.got.bytes as f64));
    let of_memcpy = bps / memcpy;
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    let goal = match (kind, size) {
        ("shm", 64) => format!("≥ 20 Mframes/s: {}", verdict(fps >= GOAL_SMALL_FPS)),
        ("shm", 9014) => format!("≥ 50% of memcpy: {}", verdict(of_memcpy >= GOAL_LARGE_OF_MEMCPY)),
        ("af_xdp", 64 | 1514) => match packet_fps {
            Some(p) => {
                let x = fps / p;
                format!("≥ {GOAL_XDP_OVER_PACKET}x af_packet: {x:.2}x {}", verdict(x >= GOAL_XDP_OVER_PACKET))
            }
            None => format!("≥ {GOAL_XDP_OVER_PACKET}x af_packet: not measured in this run"),
        },
        _ => String::new(),
    };
    vec![
        Cell::Num(fps, Unit::FramesPerSec),
        Cell::bps(bps * 8.0),
        Cell::Num(of_memcpy, Unit::Percent),
        Cell::Num(m.got.frames as f64 / m.sent.max(1) as f64, Unit::Percent),
        Cell::Num(m.producer_cpu, Unit::Percent),
        Cell::Num(m.got.cpu_share, Unit::Percent),
        Cell::Text(goal),
    ]
}
