//! `linerate rdma serve|write` (in `node`: an RDMA node on AF_PACKET or a TAP for real use)
//! and `linerate rdma bench`: the paper's Fig. 7 (send, unregistered receive and registered
//! receive latency, 64 B .. 1 MiB), large-write goodput beside our UDP and TCP goodput on
//! the same link in the same run, and the registration table's memory for the paper's
//! Table 1 grid.
//!
//! Two hosts run in this process on two threads joined by a shared-memory link, both
//! busy-polling (no sleeps): the main thread is the writer (host 10.0.0.1), a second thread
//! is the target (10.0.0.2) with the RDMA node, a UDP sink and a TCP sink. Times are taken
//! with `CLOCK_MONOTONIC`, which both threads share. `LINERATE_RDMA_DEBUG=1` prints both
//! hosts' RDMA and stack counters on stderr at the end.
//!
//! Goodput is reported twice: overall (bytes / time) and as the median rate over 16 equal
//! chunks of the transfer. On a loaded machine a busy-polling thread is descheduled for
//! 10-20 ms now and then (measured here), which the overall rate of a short run mostly
//! measures; the median shows what each transfer does while both threads run, as the
//! latency medians do.

mod node;

use crate::bench_common::{bench_cpus, msg, pin_side, print_tables, progress, step, unique_name};
use crate::output::{Cell, Table};
use crate::runloop::{install_stop_handler, stop_requested};
use link::shm::ShmLink;
use link::{Instant, LinkConfig};
use net::{Config, Recv, Stack};
use rdma::regtable::RegTable;
use rdma::{CompletionKind, Peer, RdmaConfig, RdmaNode, RegionKey, Status, WriteOptions};
use std::net::SocketAddrV4;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// IP MTU of the link.
const MTU: usize = 1500;
/// RDMA port of the latency nodes (and the target).
const RDMA_PORT: u16 = rdma::DEFAULT_UDP_PORT;
/// RDMA port of the writer's goodput node.
const RDMA_GOODPUT_PORT: u16 = rdma::DEFAULT_UDP_PORT + 1;
/// UDP sink port of the target.
const UDP_SINK: u16 = 9;
/// UDP echo port of the target (the same-run reference for the latency figure).
const UDP_ECHO: u16 = 7;
/// TCP sink port of the target.
const TCP_SINK: u16 = 5001;
/// Message sizes of the latency figure.
const SIZES: &[usize] = &[64, 256, 1024, 4096, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024];
/// Size of the region written into.
const REGION: usize = 1 << 20;
/// Bytes of one goodput write.
const GOODPUT_WRITE: usize = 1 << 20;
/// How long one operation may take before the run gives up.
const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// `linerate rdma ...`
#[derive(clap::Subcommand)]
pub enum RdmaCommand {
    /// Latency (send, unregistered and registered receive), large-write goodput beside UDP
    /// and TCP, and registration-table memory, over a shared-memory link.
    Bench(BenchArgs),
    /// Serve memory regions that peers write into, on AF_PACKET or a TAP device; report
    /// their hashes and notifications.
    Serve(node::ServeArgs),
    /// Write a file or a generated buffer into a remote node's region (and optionally serve
    /// regions at the same time).
    Write(node::WriteArgs),
}

/// Options of `linerate rdma bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Writes per size and mode for the latency figure (the median is reported).
    #[arg(long, default_value_t = 200)]
    reps: usize,
    /// MiB moved in each goodput measurement.
    #[arg(long, default_value_t = 256)]
    mib: usize,
    /// Packets in flight per destination for the goodput run. The default is the link's
    /// ring depth: while the target thread is descheduled the writer can fill the ring, as
    /// the UDP run's sender does, instead of stalling on a quarter of it.
    #[arg(long, default_value_t = 1024)]
    window: usize,
    /// Print JSON (and no progress bar).
    #[arg(long)]
    json: bool,
}

/// Run a `linerate rdma` command.
pub fn run(c: RdmaCommand) -> Result<ExitCode, String> {
    match c {
        RdmaCommand::Bench(a) => bench(a),
        RdmaCommand::Serve(a) => node::serve(a),
        RdmaCommand::Write(a) => node::write(a),
    }
}

/// What the target thread shares with the writer.
struct Shared {
    stop: AtomicBool,
    udp_bytes: AtomicU64,
    tcp_bytes: AtomicU64,
}

/// A receive notification seen by the target: op id, kind, monotonic time in ns.
type Seen = (u64, CompletionKind, u64);

/// Smallest retransmission timeout of the bench nodes: this shared 2-core machine
/// deschedules a busy-polling thread for several milliseconds at a time (measured: with a
/// 5 ms minimum, 2-15% of the goodput run's packets were spurious retransmissions), and the
/// shared-memory link loses nothing. TCP's minimum on the same run is 200 ms.
const BENCH_MIN_RTO: Duration = Duration::from_millis(20);

/// The latency nodes (and the target): everything registered up to the mask (1024 packets),
/// no segmentation below 4 MiB.
fn target_cfg() -> RdmaConfig {
    RdmaConfig {
        register_threshold: usize::MAX,
        rto: BENCH_MIN_RTO,
        ..RdmaConfig::default().registration(256, 1024).segmentation(4 << 20, 64 << 10)
    }
}

/// The target host: RDMA node, UDP sink and TCP sink, busy-polled until told to stop.
fn target(name: String, shared: Arc<Shared>, ready: mpsc::Sender<Result<RegionKey, String>>, seen: mpsc::Sender<Seen>) {
    let setup = || -> Result<_, String> {
        let link = ShmLink::open(&name, Duration::from_secs(5)).map_err(msg)?;
        let mut cfg = Config::host("10.0.0.2/24").mtu(MTU);
        cfg.socket_rx_queue = 4096;
        let mut stack = Stack::new(cfg, link).map_err(msg)?;
        let mut node = RdmaNode::new(&mut stack, target_cfg()).map_err(msg)?;
        let key = node.register(vec![0u8; REGION]).map_err(msg)?;
        let udp = stack.udp_bind(UDP_SINK).map_err(msg)?;
        let echo = stack.udp_bind(UDP_ECHO).map_err(msg)?;
        let tcp = stack.tcp_listen(TCP_SINK, 4).map_err(msg)?;
        Ok((stack, node, key, udp, echo, tcp))
    };
    let (mut stack, mut node, key, udp, echo, tcp) = match setup() {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    pin_side(1);
    let _ = ready.send(Ok(key));
    let mut buf = vec![0u8; 64 * 1024];
    let mut conns = Vec::new();
    let debug = std::env::var_os("LINERATE_RDMA_DEBUG").is_some();
    while !shared.stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if stack.poll(now).is_err() || node.poll(&mut stack, now).is_err() {
            break;
        }
        while let Some(c) = node.notifications().poll() {
            let _ = seen.send((c.op_id, c.kind, Instant::now().as_nanos()));
        }
        while let Ok(Some((n, _))) = stack.udp_recv_from(udp, &mut buf) {
            shared.udp_bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
        let mut echoed = false;
        while let Ok(Some((n, from))) = stack.udp_recv_from(echo, &mut buf) {
            echoed |= stack.udp_send_to(echo, from, &buf[..n.min(buf.len())]).unwrap_or(false);
        }
        if echoed {
            let _ = stack.flush();
        }
        if let Some(c) = stack.tcp_accept(tcp) {
            conns.push(c);
        }
        for &c in &conns {
            while let Ok(Recv::Data(n)) = stack.tcp_recv(c, &mut buf) {
                shared.tcp_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
    if debug {
        let nz = |it: Vec<(&'static str, u64)>| it.into_iter().filter(|x| x.1 > 0).collect::<Vec<_>>();
        eprintln!("target rdma: {:?}", nz(node.counters().iter().collect()));
        eprintln!("target net: {:?}", nz(stack.counters().iter().collect()));
    }
}

/// The writer's side.
struct Writer {
    stack: Stack<ShmLink>,
    lat: RdmaNode,
    gp: RdmaNode,
    dst: Peer,
    key: RegionKey,
    seen: mpsc::Receiver<Seen>,
}

impl Writer {
    fn poll(&mut self) -> Result<Instant, String> {
        let now = Instant::now();
        self.stack.poll(now).map_err(msg)?;
        self.lat.poll(&mut self.stack, now).map_err(msg)?;
        self.gp.poll(&mut self.stack, now).map_err(msg)?;
        Ok(now)
    }

    /// One write of `data`: (ns to the local completion, ns to the target's notification).
    fn one(&mut self, data: &Arc<[u8]>, registered: bool) -> Result<(u64, u64), String> {
        let t0 = Instant::now();
        let opts = WriteOptions { registered: Some(registered) };
        let id = self.lat.post_write_with(self.dst, self.key, 0, data.clone(), opts).map_err(msg)?;
        // Sent at once, as the UDP reference sends and flushes before it polls (polling the
        // stack and the other node first put a whole round of idle work before the send).
        self.lat.poll(&mut self.stack, t0).map_err(msg)?;
        let (mut sent, mut recv) = (None, None);
        let want = if registered { CompletionKind::RecvRegistered } else { CompletionKind::RecvNotified };
        while sent.is_none() || recv.is_none() {
            let now = self.poll()?;
            if let Some(c) = self.lat.completions().poll() {
                if c.status != Status::Ok || c.write_id() != id {
                    return Err(format!("write {id} ended with {:?}", c.status));
                }
                sent = Some(now.as_nanos() - t0.as_nanos());
            }
            while let Ok((op, kind, t)) = self.seen.try_recv() {
                if op >> 20 == id && kind == want {
                    recv = Some(t.saturating_sub(t0.as_nanos()));
                }
            }
            if now - t0 > OP_TIMEOUT || stop_requested() {
                return Err(format!("a {} B write did not complete", data.len()));
            }
        }
        Ok((sent.unwrap_or(0), recv.unwrap_or(0)))
    }

    /// Median 64-byte UDP round trip to the target's echo over the same link (ns).
    fn udp_rtt(&mut self, n: usize) -> Result<f64, String> {
        let sock = self.stack.udp_bind(0).map_err(msg)?;
        let dst = SocketAddrV4::new([10, 0, 0, 2].into(), UDP_ECHO);
        let mut buf = [0u8; 64];
        let mut samples = Vec::with_capacity(n);
        for seq in 0..(n + 100) as u64 {
            let t0 = Instant::now();
            let mut req = [0u8; 64];
            req[..8].copy_from_slice(&seq.to_le_bytes());
            while !self.stack.udp_send_to(sock, dst, &req).map_err(msg)? {
                self.stack.flush().map_err(msg)?;
            }
            self.stack.flush().map_err(msg)?;
            loop {
                let now = Instant::now();
                self.stack.poll(now).map_err(msg)?;
                if let Some((len, _)) = self.stack.udp_recv_from(sock, &mut buf).map_err(msg)? {
                    if len >= 8 && buf[..8] == seq.to_le_bytes() {
                        if seq >= 100 {
                            samples.push(now.as_nanos() - t0.as_nanos());
                        }
                        break;
                    }
                }
                if now - t0 > OP_TIMEOUT || stop_requested() {
                    return Err("a UDP echo did not come back".into());
                }
            }
        }
        self.stack.udp_close(sock).map_err(msg)?;
        Ok(median(&mut samples))
    }

    /// `mib` MiB in 1 MiB segmented writes, at most 64 posted ahead.
    fn rdma_goodput(&mut self, mib: usize) -> Result<Goodput, String> {
        let data: Arc<[u8]> = vec![0x5au8; GOODPUT_WRITE].into();
        let t0 = Instant::now();
        let mut clock = ChunkClock::new((mib * GOODPUT_WRITE) as u64, t0);
        let mut posted = 0;
        let mut done = 0;
        while done < mib {
            while posted < mib && posted - done < 64 {
                self.gp.post_write(self.dst, self.key, 0, data.clone()).map_err(msg)?;
                posted += 1;
            }
            let now = self.poll()?;
            while let Some(c) = self.gp.completions().poll() {
                if c.status != Status::Ok {
                    return Err(format!("a goodput write ended with {:?}", c.status));
                }
                done += 1;
                clock.observe((done * GOODPUT_WRITE) as u64, now);
            }
            if now - t0 > OP_TIMEOUT * 10 || stop_requested() {
                return Err("the RDMA goodput run did not finish".into());
            }
        }
        Ok(clock.goodput((mib * GOODPUT_WRITE) as u64, Instant::now()))
    }

    /// `mib` MiB of 1472-byte datagrams; the bytes the target counted.
    fn udp_goodput(&mut self, mib: usize, shared: &Shared) -> Result<Goodput, String> {
        let sock = self.stack.udp_bind(0).map_err(msg)?;
        let dst = SocketAddrV4::new([10, 0, 0, 2].into(), UDP_SINK);
        let payload = vec![0x5au8; 1472];
        let before = shared.udp_bytes.load(Ordering::Relaxed);
        let total = (mib * GOODPUT_WRITE / payload.len()) as u64;
        let t0 = Instant::now();
        let mut clock = ChunkClock::new(total * payload.len() as u64, t0);
        let mut sent = 0u64;
        while sent < total {
            if self.stack.udp_send_to(sock, dst, &payload).map_err(msg)? {
                sent += 1;
            } else {
                self.stack.flush().map_err(msg)?;
            }
            let now = Instant::now();
            clock.observe(shared.udp_bytes.load(Ordering::Relaxed) - before, now);
            if now - t0 > OP_TIMEOUT * 10 || stop_requested() {
                break;
            }
        }
        self.stack.flush().map_err(msg)?;
        // Wait until the target's count stops growing.
        let mut last = 0;
        let mut end = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(2));
            self.stack.flush().map_err(msg)?;
            let got = shared.udp_bytes.load(Ordering::Relaxed) - before;
            if got == last {
                break;
            }
            last = got;
            end = Instant::now();
            clock.observe(got, end);
        }
        self.stack.udp_close(sock).map_err(msg)?;
        Ok(clock.goodput(last, end))
    }

    /// `mib` MiB over one TCP connection; the bytes the target counted.
    fn tcp_goodput(&mut self, mib: usize, shared: &Shared) -> Result<Goodput, String> {
        let c = self.stack.tcp_connect(SocketAddrV4::new([10, 0, 0, 2].into(), TCP_SINK)).map_err(msg)?;
        let t_conn = Instant::now();
        while self.stack.tcp_connect_result(c).map_err(msg)?.is_none() {
            if Instant::now() - t_conn > OP_TIMEOUT {
                return Err("TCP connect timed out".into());
            }
            self.poll()?;
        }
        let chunk = vec![0x5au8; 64 * 1024];
        let total = (mib * GOODPUT_WRITE) as u64;
        let before = shared.tcp_bytes.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let mut clock = ChunkClock::new(total, t0);
        let mut sent = 0u64;
        loop {
            if sent < total {
                let n = (total - sent).min(chunk.len() as u64) as usize;
                sent += self.stack.tcp_send(c, &chunk[..n]).map_err(msg)? as u64;
            }
            let now = self.poll()?;
            let got = shared.tcp_bytes.load(Ordering::Relaxed) - before;
            clock.observe(got, now);
            if got >= total {
                break;
            }
            if now - t0 > OP_TIMEOUT * 10 || stop_requested() {
                return Err("the TCP goodput run did not finish".into());
            }
        }
        let end = Instant::now();
        let _ = self.stack.tcp_close(c);
        Ok(clock.goodput(total, end))
    }
}

/// Chunks each goodput measurement is cut into for its median rate.
const GOODPUT_CHUNKS: u64 = 16;

/// Goodput of one transfer: the median rate over its chunks (robust to the milliseconds a
/// thread of this shared machine is descheduled now and then) and the overall rate.
#[derive(Debug, Clone, Copy)]
struct Goodput {
    median: f64,
    overall: f64,
}

/// When a growing byte count crossed each multiple of a chunk size.
struct ChunkClock {
    chunk: u64,
    start: Instant,
    next: u64,
    marks: Vec<Instant>,
}

impl ChunkClock {
    /// A clock for `total` bytes in [`GOODPUT_CHUNKS`] chunks, started at `start`.
    fn new(total: u64, start: Instant) -> Self {
        let chunk = total.div_ceil(GOODPUT_CHUNKS).max(1);
        ChunkClock { chunk, start, next: chunk, marks: Vec::new() }
    }

    /// The count is `bytes` at `now`.
    fn observe(&mut self, bytes: u64, now: Instant) {
        while bytes >= self.next {
            self.marks.push(now);
            self.next += self.chunk;
        }
    }

    /// The goodput of `total` bytes that ended at `end`. Chunks seen done at the same
    /// instant (a burst after a stall) count as one interval, so no chunk takes zero time.
    fn goodput(&self, total: u64, end: Instant) -> Goodput {
        let overall = total as f64 / (end - self.start).as_secs_f64();
        let mut rates = Vec::new();
        let (mut prev, mut chunks) = (self.start, 0u64);
        for &t in &self.marks {
            chunks += 1;
            if t > prev {
                rates.push(chunks as f64 * self.chunk as f64 / (t - prev).as_secs_f64());
                (prev, chunks) = (t, 0);
            }
        }
        rates.sort_by(f64::total_cmp);
        let median = rates.get(rates.len() / 2).copied().unwrap_or(overall);
        Goodput { median, overall }
    }
}

fn median(v: &mut [u64]) -> f64 {
    v.sort_unstable();
    v.get(v.len() / 2).map_or(f64::NAN, |x| *x as f64)
}

fn bench(a: BenchArgs) -> Result<ExitCode, String> {
    let tables = measure(&a)?;
    print_tables(&tables, a.json);
    Ok(ExitCode::SUCCESS)
}

/// Every table of `linerate rdma bench` (latency by size, goodput, registration-table
/// memory), with a progress bar on stderr unless `--json`.
pub(crate) fn measure(a: &BenchArgs) -> Result<Vec<Table>, String> {
    if a.reps == 0 || a.mib == 0 || a.window == 0 {
        return Err("--reps, --mib and --window must be positive".into());
    }
    install_stop_handler();
    bench_cpus();
    let pb = progress(SIZES.len() as u64 + 4, a.json);
    let name = unique_name("bench-rdma");
    let link = ShmLink::create(&name, LinkConfig::default().mtu(MTU)).map_err(msg)?;
    let shared =
        Arc::new(Shared { stop: AtomicBool::new(false), udp_bytes: AtomicU64::new(0), tcp_bytes: AtomicU64::new(0) });
    let (ready_tx, ready_rx) = mpsc::channel();
    let (seen_tx, seen_rx) = mpsc::channel();
    let sh = shared.clone();
    let nm = name.clone();
    let handle = std::thread::spawn(move || target(nm, sh, ready_tx, seen_tx));
    let result = (|| -> Result<Vec<Table>, String> {
        let key =
            ready_rx.recv_timeout(Duration::from_secs(10)).map_err(|_| "the target did not start".to_string())??;
        pin_side(0);
        let mut stack = Stack::new(Config::host("10.0.0.1/24").mtu(MTU), link).map_err(msg)?;
        let lat = RdmaNode::new(&mut stack, target_cfg()).map_err(msg)?;
        // Segmentation and registration as the defaults have them (256 KiB registered segments).
        let gp_cfg = RdmaConfig {
            window: a.window,
            max_in_flight: a.window.max(4096),
            rto: BENCH_MIN_RTO,
            ..RdmaConfig::default()
        }
        .udp(RDMA_GOODPUT_PORT);
        let gp = RdmaNode::new(&mut stack, gp_cfg).map_err(msg)?;
        let mut w = Writer {
            stack,
            lat,
            gp,
            dst: Peer::Udp(SocketAddrV4::new([10, 0, 0, 2].into(), RDMA_PORT).into()),
            key,
            seen: seen_rx,
        };
        // Warm-up: ARP both ways and caches.
        let small: Arc<[u8]> = vec![1u8; 64].into();
        for _ in 0..50 {
            w.one(&small, true)?;
            w.one(&small, false)?;
        }
        let rtt = step(&pb, "UDP round trip", || w.udp_rtt(a.reps.max(100) * 10))?;
        let mut lat_t = Table::new(
            "RDMA latency over the shared-memory link (both sides busy-poll; medians)",
            &[
                "size",
                "send (all ACKed)",
                "unregistered recv (Notify)",
                "registered recv (local)",
                "registered / unregistered",
            ],
        );
        lat_t.summary("64 B UDP round trip on the same link (the reference)", Cell::nanos(rtt));
        for &size in SIZES {
            let data: Arc<[u8]> = (0..size).map(|i| i as u8).collect::<Vec<u8>>().into();
            let reps = if size >= 256 * 1024 { a.reps.div_ceil(10).max(5) } else { a.reps };
            let (mut send, mut unreg, mut reg) = (Vec::new(), Vec::new(), Vec::new());
            step(&pb, &format!("latency {size} B"), || -> Result<(), String> {
                for _ in 0..reps {
                    let (s, r) = w.one(&data, true)?;
                    send.push(s);
                    reg.push(r);
                    unreg.push(w.one(&data, false)?.1);
                }
                Ok(())
            })?;
            let (s, u, r) = (median(&mut send), median(&mut unreg), median(&mut reg));
            lat_t.row(vec![
                Cell::bytes(size as u64),
                Cell::nanos(s),
                Cell::nanos(u),
                Cell::nanos(r),
                Cell::ratio(r / u),
            ]);
        }
        let rdma = step(&pb, "RDMA goodput", || w.rdma_goodput(a.mib))?;
        let udp = step(&pb, "UDP goodput", || w.udp_goodput(a.mib, &shared))?;
        let tcp = step(&pb, "TCP goodput", || w.tcp_goodput(a.mib, &shared));
        let mut gp_t = Table::new(
            &format!(
                "Large-write goodput on the same link (1 MiB writes in 256 KiB registered segments, the defaults; median of {GOODPUT_CHUNKS} chunks, and overall)"
            ),
            &["transfer", "goodput (median)", "RDMA / this", "goodput (overall)", "RDMA / this (overall)"],
        );
        let gp_row = |name: &str, g: Goodput| {
            vec![
                Cell::from(name),
                Cell::bps(g.median * 8.0),
                Cell::ratio(rdma.median / g.median),
                Cell::bps(g.overall * 8.0),
                Cell::ratio(rdma.overall / g.overall),
            ]
        };
        gp_t.row(gp_row("RDMA writes", rdma));
        gp_t.row(gp_row("linerate UDP (1472 B datagrams)", udp));
        match tcp {
            Ok(t) => gp_t.row(gp_row("linerate TCP (one connection)", t)),
            Err(e) => {
                gp_t.row(vec![Cell::from("linerate TCP (one connection)"), Cell::Missing(format!("failed: {e}"))])
            }
        }
        if std::env::var_os("LINERATE_RDMA_DEBUG").is_some() {
            let nz = |it: Vec<(&'static str, u64)>| it.into_iter().filter(|x| x.1 > 0).collect::<Vec<_>>();
            eprintln!("writer rdma: {:?}", nz(w.gp.counters().iter().collect()));
            eprintln!("writer net: {:?}", nz(w.stack.counters().iter().collect()));
        }
        let c = w.gp.counters();
        gp_t.summary("RDMA retransmissions", Cell::count_u64(c.get(rdma::Counter::tx_retransmits)));
        gp_t.summary("RDMA data packets", Cell::count_u64(c.get(rdma::Counter::tx_data_packets)));
        let widths = [64usize, 128, 256, 512, 1024];
        let mut headers = vec!["entries".to_string()];
        headers.extend(widths.iter().map(|w| format!("mask {w} ({} KiB at 512 B)", w / 2)));
        let hdr: Vec<&str> = headers.iter().map(String::as_str).collect();
        let mut mem_t = Table::new("Registration table memory (the paper's Table 1 grid)", &hdr);
        for entries in [64usize, 128, 256, 512, 1024] {
            let mut row = vec![Cell::count(entries as f64)];
            row.extend(widths.iter().map(|w| Cell::bytes(RegTable::memory_bytes(entries, *w) as u64)));
            mem_t.row(row);
        }
        pb.inc(1);
        Ok(vec![lat_t, gp_t, mem_t])
    })();
    shared.stop.store(true, Ordering::Relaxed);
    let _ = handle.join();
    pb.finish_and_clear();
    result
}
