//! `linerate bench tcp`: TCP between two linerate processes on a shared-memory link (both
//! busy-poll) beside the Linux kernel's TCP between two namespaces over veth (same MTU),
//! measured in the same run: single-connection goodput at MTU 1500 and 9000, the 64-byte
//! request/response round trip, the connection set-up rate and latency, and the aggregate
//! goodput of 10,000 (`--many`) concurrent connections. Also the hidden `linerate bench-peer
//! tcp` child that serves the linerate side.
//!
//! Both sides speak the same protocols: goodput is the iperf protocol of [`apps::iperf`]
//! (the receiver reports its byte count; goodput is that count over the time from the first
//! connection established to the last report), the round trip is an echo, and one
//! connection cycle is connect, close our direction, read the server's report and its close.

mod grid;
pub mod kernel;
pub mod ours;

use crate::bench_cable::Cable;
use crate::bench_common::tcp_stack_config;
use crate::bench_common::{
    bench_cpus, check_secs, die_with_parent, msg, peer_or_reason, percentile, pin_cpu, print_tables, progress,
    ratio_row, READY,
};
use crate::output::{Cell, Table, Unit};
use crate::runloop::{install_stop_handler, poll_burst, polls_for, stop_requested};
use apps::{TcpEcho, TcpSink};
use link::{Instant, LinkError};
use net::{NetError, Stack};
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::time::Duration;
use testbed::netns_unavailable;

/// First port of the reporting sink (the iperf protocol).
const SINK_PORT: u16 = 5201;
/// Connections per sink port at most: a run of more listens on several ports from
/// [`SINK_PORT`] on and spreads its connections over them, as one client address has about
/// 16,000 (linerate) or 28,000 (Linux) ephemeral ports towards one server port, fewer than
/// [`MAX_MANY`] connections need. (Smaller runs keep one port: one sink, one watcher.)
const CONNS_PER_PORT: usize = 8_192;

/// The sink's ports for a run of `conns` connections (1 up to 8).
fn sink_ports(conns: usize) -> u16 {
    conns.div_ceil(CONNS_PER_PORT).clamp(1, MAX_MANY / CONNS_PER_PORT) as u16
}
/// Port of the echo.
const ECHO_PORT: u16 = 7;
/// Payload of a round-trip request.
const RTT_PAYLOAD: usize = 64;
/// The MTUs of the goodput runs.
const MTUS: [usize; 2] = [1500, 9000];
/// Connection cycles at most (below both sides' ephemeral port ranges, so that no port is
/// reused while its last connection lingers in TIME-WAIT).
const MAX_CYCLES: usize = 10_000;
/// Cycles run before measuring.
const WARMUP_CYCLES: usize = 100;
/// Per-connection buffers of the cycle run (each cycle's session lingers in TIME-WAIT).
const CYCLE_BUFFER: usize = 4 * 1024;
/// Concurrent connections of the aggregate run, by default.
const MANY: usize = 10_000;
/// The most concurrent connections of an aggregate run (Limago's Fig. 5 goes to 65,536).
pub const MAX_MANY: usize = 65_536;
/// Per-connection send and receive buffer of the aggregate run, both sides.
const MANY_BUFFER: usize = 8 * 1024;
/// How long one request/response or one connection step may take before the run fails.
const STEP_TIMEOUT: Duration = Duration::from_secs(2);

/// Options of `linerate bench tcp`.
#[derive(clap::Args)]
pub struct TcpArgs {
    /// How long each goodput measurement sends (and at most the connection cycles last): a
    /// duration (2s, 500ms; a bare number is seconds).
    #[arg(value_name = "DURATION", long = "duration", short = 't', alias = "secs", default_value = "2s", value_parser = crate::duration::parse_duration)]
    secs: Duration,
    /// Single-connection goodput: the median of this many runs (each with fresh processes
    /// or sockets), for both stacks.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Print JSON (and no progress bar).
    #[arg(long)]
    json: bool,
    /// What joins the two linerate processes: shm (a shared-memory link), af_xdp or af_packet
    /// (a veth between two new namespaces, that socket on each end). Linux always runs over
    /// veth.
    #[arg(long, default_value = "shm", value_parser = crate::bench_cable::CABLE_KINDS)]
    link: String,
    /// Run linerate's side over IPv6 (fd77::1 to fd77::2 on the same link) instead of IPv4;
    /// Linux's side stays on IPv4. A run without it, alternated, gives the IPv6/IPv4 ratio.
    #[arg(long)]
    ipv6: bool,
    /// Concurrent connections of the aggregate goodput run (1..=65536).
    #[arg(long, default_value_t = MANY, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u32).range(1..=MAX_MANY as i64), |n| n as usize))]
    many: usize,
    /// Instead of the clean-link figures: linerate's TCP sender against Linux's over a TAP,
    /// impairment on the sender's egress (loss, reordering, duplication), one transfer each
    /// per row, bytes checked.
    #[arg(long)]
    impairment_grid: bool,
    /// Bytes per transfer of the impairment grid.
    #[arg(long, default_value_t = 100_000_000)]
    grid_bytes: u64,
    /// Only the grid rows whose name contains this text (e.g. "loss").
    #[arg(long, default_value = "")]
    grid_rows: String,
    /// How long one grid transfer may take before it counts as failed (a duration; a bare
    /// number is seconds).
    #[arg(value_name = "DURATION", long = "grid-limit", alias = "grid-limit-secs", default_value = "10m", value_parser = crate::duration::parse_duration)]
    grid_limit: Duration,
}

/// Options of the hidden `linerate bench-peer tcp` child: a linerate host on a shared-memory
/// link, or (with `--kernel-netns`) the Linux kernel's reporting sink on one port in a
/// namespace, or (with `--kernel-client`) a share of the Linux iperf client's connections:
/// processes of their own, so that no process needs more open files than its share (the hard
/// limit cannot be raised without CAP_SYS_RESOURCE).
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("side").required(true).args(["shm", "link", "kernel_netns", "kernel_client"])))]
pub struct PeerArgs {
    /// Name of the shared-memory link to open (side B).
    #[arg(long)]
    shm: Option<String>,
    /// Open this link (side B) instead, in --netns (the interface's MTU).
    #[arg(long, value_name = "SPEC")]
    link: Option<link::spec::LinkSpec>,
    /// The network namespace of --link (default: this process's).
    #[arg(long, requires = "link")]
    netns: Option<String>,
    /// Serve the kernel sink in this network namespace instead.
    #[arg(long)]
    kernel_netns: Option<String>,
    /// The kernel sink's port (with `--kernel-netns`).
    #[arg(long, default_value_t = SINK_PORT)]
    sink_port: u16,
    /// The sink's ports (from 5201 on) that the linerate sink listens on, or that the kernel
    /// client spreads its connections over.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=8))]
    sink_ports: u16,
    /// Run a share of the kernel iperf client in this network namespace instead: connections
    /// `share`, `share + shares`, ... below `--conns`; prints its tally as JSON.
    #[arg(long)]
    kernel_client: Option<String>,
    /// All connections of the kernel client's run.
    #[arg(long, default_value_t = 1)]
    conns: usize,
    /// This client process's share (0-based).
    #[arg(long, default_value_t = 0)]
    share: usize,
    /// The number of client processes.
    #[arg(long, default_value_t = 1)]
    shares: usize,
    /// How long each client connection sends (a duration).
    #[arg(value_name = "DURATION", long = "send", default_value = "1s", value_parser = crate::duration::parse_duration)]
    send: Duration,
    /// Session table size.
    #[arg(long, default_value_t = 256)]
    sessions: usize,
    /// Per-connection buffer, bytes (default: the stack's).
    #[arg(long)]
    buffer: Option<usize>,
    /// How long until the peer gives up even if the link stays open (a duration).
    #[arg(value_name = "DURATION", long = "limit", alias = "limit-secs", default_value = "2m", value_parser = crate::duration::parse_duration)]
    limit_secs: Duration,
    /// CPU to pin the peer to.
    #[arg(long)]
    cpu: Option<usize>,
    /// The sink counts payload in RX bypass (straight from the frames).
    #[arg(long, conflicts_with = "echo_rx_bypass")]
    rx_bypass: bool,
    /// The echo takes payload in RX bypass (straight from the frames) instead of reading its
    /// receive buffers (the stack has one bypass handler: the sink or the echo).
    #[arg(long)]
    echo_rx_bypass: bool,
    /// The host also has fd77::2/64 (the parent's `--ipv6`).
    #[arg(long)]
    ipv6: bool,
}

/// Connection set-up figures: cycles per second, and per cycle the time from connect to
/// established and to the server's close, in ns, sorted.
struct Cycles {
    /// Cycles per second (one at a time).
    rate: f64,
    /// Connect to established.
    handshake: Vec<u64>,
    /// Connect to the server's FIN.
    cycle: Vec<u64>,
}

/// What one side measured.
struct Figures {
    /// Single-connection goodput (bit/s) at each of [`MTUS`].
    goodput: [f64; 2],
    /// The same with the receiver in RX bypass (linerate only).
    goodput_bypass: Option<[f64; 2]>,
    /// 64-byte round trips in ns, sorted (busy-polling).
    rtt: Vec<u64>,
    /// The same with blocking sockets (kernel only).
    rtt_blocking: Option<Vec<u64>>,
    /// Connection set-up.
    cycles: Cycles,
    /// Aggregate goodput (bit/s) over `--many` connections, or why it failed.
    many: Result<f64, String>,
}

/// Run `linerate bench tcp`.
pub fn run(a: TcpArgs) -> Result<ExitCode, String> {
    install_stop_handler();
    if a.impairment_grid {
        if a.grid_bytes == 0 {
            return Err("--grid-bytes must be positive".into());
        }
        let ok = grid::run(a.grid_bytes, &a.grid_rows, a.grid_limit, a.json)?;
        return Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let secs = check_secs(a.secs)?;
    bench_cpus();
    let pb = progress(13, a.json);
    if a.repeat == 0 || a.repeat > 99 {
        return Err(format!("--repeat {} is outside 1..=99", a.repeat));
    }
    let cable = Cable::parse(&a.link)?;
    if a.ipv6 {
        ours::use_ipv6();
    }
    if cable != Cable::Shm {
        if let Some(why) = netns_unavailable() {
            return Err(format!("--link {} needs network namespaces: {why}", a.link));
        }
    }
    let ours = ours::measure(cable, secs, a.repeat, a.many, &pb);
    let skipped = netns_unavailable();
    let kernel =
        if skipped.is_none() && !stop_requested() { Some(kernel::measure(secs, a.repeat, a.many, &pb)) } else { None };
    pb.finish_and_clear();
    if stop_requested() {
        return Err("interrupted".into());
    }
    let ours = ours?;
    let peer = peer_or_reason(&kernel, skipped);
    let kernel_figures = peer.as_ref().map(|f| *f).map_err(String::as_str);
    print_tables(&[table(cable, &ours, kernel_figures, a.repeat, a.many)], a.json);
    let failed = matches!(kernel, Some(Err(_))) || ours.many.is_err() || kernel_figures.is_ok_and(|k| k.many.is_err());
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// A round-trip request: `seq` in the first 8 bytes, then padding to [`RTT_PAYLOAD`] bytes.
fn request(seq: u64) -> [u8; RTT_PAYLOAD] {
    let mut p = [0u8; RTT_PAYLOAD];
    p[..8].copy_from_slice(&seq.to_le_bytes());
    p
}

/// `ip` with a /24 prefix.
fn cidr(ip: Ipv4Addr) -> String {
    format!("{ip}/24")
}

/// Nanoseconds since `t0`.
fn since(t0: Instant) -> u64 {
    (Instant::now() - t0).as_nanos() as u64
}

// ------------------------------------------------------------------ the child

/// Run the hidden `bench-peer tcp` child: host 10.0.0.2 on the link serving the reporting
/// sink and the echo (either in RX bypass if asked), busy-polling, until the parent closes
/// the link or the time limit passes.
pub fn run_peer(a: PeerArgs) -> Result<ExitCode, String> {
    die_with_parent();
    if let Some(ns) = &a.kernel_client {
        // Not pinned: the kernel client waits in epoll, the share of the client's side.
        return kernel::run_client_peer(ns, a.conns, (a.share, a.shares), a.sink_ports, a.send, a.buffer);
    }
    if let Some(cpu) = a.cpu {
        pin_cpu(cpu);
    }
    let limit = check_secs(a.limit_secs)?;
    if let Some(ns) = &a.kernel_netns {
        return kernel::run_sink_peer(ns, a.sink_port, a.buffer, limit);
    }
    let (link, mtu, mac) = crate::bench_cable::open_peer(
        a.shm.as_deref(),
        a.link.as_ref(),
        a.netns.as_deref(),
        ours::PEER_IP,
        a.ipv6.then_some(ours::PEER_IP6),
    )?;
    let mut cfg = tcp_stack_config(&cidr(ours::PEER_IP), mtu, a.sessions, a.buffer)?;
    if a.ipv6 {
        cfg = crate::bench_common::with_ipv6(cfg, ours::PEER_IP6)?;
    }
    if let Some(mac) = mac {
        cfg.mac = wire::MacAddr(mac);
    }
    let mut stack = Stack::new(cfg, link).map_err(msg)?;
    // The stack has one RX-bypass handler, so a sink in bypass is one sink on one port.
    if a.rx_bypass && a.sink_ports > 1 {
        return Err("--rx-bypass takes one sink port".into());
    }
    let ports = a.sink_ports;
    let mut sinks = Vec::new();
    for port in SINK_PORT..SINK_PORT + ports {
        let mut sink = TcpSink::listen(&mut stack, port, a.sessions).map_err(msg)?.with_report();
        if a.rx_bypass {
            sink = sink.with_rx_bypass(&mut stack);
        }
        sinks.push(sink);
    }
    let mut echo = TcpEcho::listen(&mut stack, ECHO_PORT).map_err(msg)?;
    if a.echo_rx_bypass {
        echo = echo.with_rx_bypass(&mut stack);
    }
    println!("{READY}");
    let deadline = Instant::now() + limit;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err("bench peer: time limit reached with the link still open".into());
        }
        let open = sinks.iter().map(|s| s.connections().open).sum::<usize>() + echo.connections().open;
        let served = poll_burst(&mut stack, polls_for(open)).and_then(|_| {
            for sink in &mut sinks {
                sink.serve(&mut stack)?;
            }
            echo.serve(&mut stack)?;
            Ok(stack.flush()?)
        });
        match served {
            Err(NetError::Link(LinkError::Closed)) => return Ok(ExitCode::SUCCESS),
            r => r.map_err(msg)?,
        }
    }
}

// ------------------------------------------------------------------ the table

/// The comparison table.
fn table(cable: Cable, ours: &Figures, kernel: Result<&Figures, &str>, repeat: usize, many: usize) -> Table {
    let joined = cable.joined();
    let over = if ours::ipv6() { " over IPv6 (Linux over IPv4)" } else { "" };
    let mut t = Table::new(
        &format!(
            "TCP: linerate{over}, two processes {joined}, both busy-polling, vs Linux kernel TCP \
             between two namespaces over veth (same MTU), blocking sockets (epoll) unless marked busy-polling; \
             the two sides pinned to two CPUs; goodput = receiver's byte count / (first connection up .. last report)"
        ),
        &["metric", cable.label(), "Linux (veth)", "ratio"],
    );
    let bits = Unit::BitsPerSec;
    let ns = |v: f64| v / 1e9;
    for (i, mtu) in MTUS.iter().enumerate() {
        let metric = format!("goodput, 1 connection, MTU {mtu} (MSS {}), median of {repeat}", mtu - 40);
        ratio_row(&mut t, &metric, ours.goodput[i], kernel.map(|k| k.goodput[i]), bits);
    }
    if let Some(bypass) = ours.goodput_bypass {
        for (i, mtu) in MTUS.iter().enumerate() {
            let metric =
                format!("goodput, 1 connection, MTU {mtu}, linerate receiver in RX bypass, median of {repeat}");
            ratio_row(&mut t, &metric, bypass[i], kernel.map(|k| k.goodput[i]), bits);
        }
    }
    for (mode, rtts) in [
        ("busy-polling", kernel.map(|k| k.rtt.as_slice())),
        ("blocking", kernel.and_then(|k| k.rtt_blocking.as_deref().ok_or("-"))),
    ] {
        for (name, p) in [("median", 50.0), ("p99", 99.0)] {
            let metric = format!("64 B request/response {name}, Linux {mode}");
            ratio_row(&mut t, &metric, ns(percentile(&ours.rtt, p)), rtts.map(|v| ns(percentile(v, p))), Unit::Seconds);
        }
    }
    let per_sec = Unit::OpsPerSec;
    let metric = "connections/s, one at a time (connect, accept, close), Linux blocking";
    ratio_row(&mut t, metric, ours.cycles.rate, kernel.map(|k| k.cycles.rate), per_sec);
    for (name, p) in [("median", 50.0), ("p99", 99.0)] {
        let metric = format!("connect to established {name}");
        let k = kernel.map(|k| ns(percentile(&k.cycles.handshake, p)));
        ratio_row(&mut t, &metric, ns(percentile(&ours.cycles.handshake, p)), k, Unit::Seconds);
    }
    let k = kernel.map(|k| ns(percentile(&k.cycles.cycle, 50.0)));
    let ours_cycle = ns(percentile(&ours.cycles.cycle, 50.0));
    ratio_row(&mut t, "connect to the server's close, median", ours_cycle, k, Unit::Seconds);
    let metric = format!("aggregate goodput, {many} connections, {} KiB buffers", MANY_BUFFER / 1024);
    match (&ours.many, kernel.map(|k| &k.many)) {
        (Ok(o), Ok(Ok(k))) => ratio_row(&mut t, &metric, *o, Ok(*k), bits),
        (Ok(o), Ok(Err(e))) => ratio_row(&mut t, &metric, *o, Err(&format!("failed: {e}")), bits),
        (Ok(o), Err(why)) => ratio_row(&mut t, &metric, *o, Err(why), bits),
        (Err(e), _) => {
            t.row(vec![Cell::from(metric), Cell::Missing(format!("failed: {e}")), Cell::blank(), Cell::blank()])
        }
    }
    t
}
