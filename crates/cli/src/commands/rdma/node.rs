//! `linerate rdma serve` and `linerate rdma write`: an RDMA node on a real link (an existing
//! interface through AF_PACKET, or a TAP device in a new namespace), serving regions that
//! peers write into, and writing a file or a generated buffer into a remote node's region.
//!
//! Both register the regions asked for (`--region SIZE`, repeatable; the first region of a
//! fresh node has key 0x10001, the next 0x10002, ...) and print their keys on stderr.
//! `write` first waits for the peer to answer a ping (UDP transport; a node that does not is
//! one clear error), posts the whole buffer as one write (the node cuts it into registered
//! segments) and waits for its completion. Both stop when their own write is done and
//! `--until-notified` bytes have landed in their regions, at `--limit`, or on SIGINT/SIGTERM,
//! and print what happened: the write (bytes, time, goodput, FNV-1a of the data), each
//! region (size, FNV-1a of its bytes, notifications, segments notified more than once) and
//! the node's non-zero counters (while it runs, `linerate stats` shows the node's and the
//! stack's counters). Every receiver and sender setting of `rdma::RdmaConfig` is
//! `--set NAME=VALUE` (the names of `RdmaConfig`, as in Python). A write's goodput is at most
//! `window` packets per round trip: over AF_PACKET between two busy processes on a loaded
//! 2-core machine the round trip reaches milliseconds (measured: 64 MiB each way over a veth at
//! 0.05-0.9 Gbit/s with the default window of 64, varying with the load).

use crate::bench_common::msg;
use crate::output::{Cell, Table};
use crate::runloop::{install_stop_handler, stop_requested, Idler};
use link::spec::{LinkSpec, OpenOptions};
use link::{Instant, Link};
use net::{Config, Stack};
use rdma::settings::parse_size;
use rdma::{CompletionKind, Peer, RdmaConfig, RdmaNode, RegionKey, Status};
use std::collections::HashMap;
use std::process::{Child, ExitCode, Stdio};
use std::time::Duration;

/// Where the node runs and how it is configured (shared by `serve` and `write`).
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("on").required(true).args(["link", "af_packet", "tap"])))]
pub struct NodeArgs {
    /// Run on this link: af_xdp:IFACE, af_packet:IFACE, tap:IFNAME or shm:NAME (in the
    /// namespace this command runs in; the node takes the interface's MAC).
    #[arg(long, value_name = "SPEC")]
    link: Option<LinkSpec>,
    /// Run on this existing interface through an AF_PACKET socket (the interface should
    /// have no address of its own, so that the kernel stays out of the exchange).
    #[arg(long, value_name = "IFACE")]
    af_packet: Option<String>,
    /// Run on a TAP device in a new network namespace (its name is printed; deleted on exit).
    #[arg(long)]
    tap: bool,
    /// Our address.
    #[arg(long, default_value = "10.77.0.2/24")]
    ip: String,
    /// With --tap: the address of the Linux side of the TAP.
    #[arg(long, default_value = "10.77.0.1/24")]
    linux_ip: String,
    /// Peers reach the node over IPv4 and IPv6 (`--to [fd77::1]:PORT`); packets to IPv6
    /// peers carry 20 payload bytes fewer, so that they fit the MTU too.
    #[command(flatten)]
    ipv6: crate::host_ipv6::Ipv6Flags,
    /// With --tap: run this shell command in the namespace, then stop and exit with its
    /// status.
    #[arg(long, requires = "tap")]
    run: Option<String>,
    /// IP MTU of the link.
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// Carry RDMA in UDP (default port 18791) or raw Ethernet (EtherType 0x88b5):
    /// `udp`, `udp:PORT`, `eth`, `eth:ETHERTYPE` (the `transport` setting).
    #[arg(long, default_value = "udp")]
    transport: String,
    /// Any setting of the node's configuration, NAME=VALUE (repeatable): sizes take K/M/G
    /// suffixes, durations a unit (5ms), e.g. --set segment_size=256K --set window=128.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    settings: Vec<String>,
    /// Register a region of this size (repeatable: keys 0x10001, 0x10002, ...), e.g. 64MiB.
    #[arg(long = "region", value_name = "SIZE", value_parser = parse_bytes)]
    regions: Vec<u64>,
    /// Stop once this many bytes have been notified into our regions (and our own write,
    /// if any, is complete).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    until_notified: Option<u64>,
    /// Stop after this long in any case (a duration: 30s, 10m).
    #[arg(long, default_value = "1h", value_parser = crate::duration::parse_duration)]
    limit: Duration,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `linerate rdma serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// Options of `linerate rdma write`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("data").required(true).args(["file", "size"])))]
pub struct WriteArgs {
    #[command(flatten)]
    node: NodeArgs,
    /// The node to write to: IP (UDP, the transport's port), IP:PORT, or a MAC address
    /// (raw Ethernet).
    #[arg(long)]
    to: String,
    /// The remote region's key (decimal or 0x hex).
    #[arg(long, value_parser = parse_bytes)]
    key: u64,
    /// Byte offset in the remote region.
    #[arg(long, default_value = "0", value_parser = parse_bytes)]
    offset: u64,
    /// Write this file's bytes.
    #[arg(long)]
    file: Option<std::path::PathBuf>,
    /// Write a generated buffer of this size (deterministic, from --seed), e.g. 64MiB.
    #[arg(long, value_parser = parse_bytes)]
    size: Option<u64>,
    /// Seed of the generated buffer.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How long to wait for the peer to answer a ping before giving up (UDP transport).
    #[arg(long, default_value = "10s", value_parser = crate::duration::parse_duration)]
    wait_peer: Duration,
}

/// Datagrams the node's socket queues (the stack's default is 512).
const SOCKET_RX_QUEUE: usize = 4096;

/// How long a node that served regions keeps answering after it is done.
const LINGER: Duration = Duration::from_millis(300);

/// A size or number: digits with an optional K/M/G (KiB/MiB/GiB) suffix, or 0x hex.
fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_size(s).ok_or_else(|| format!("{s:?} is not a size (e.g. 4096, 256K, 64MiB, 0x10001)"))
}

/// Run `linerate rdma serve`.
pub fn serve(a: ServeArgs) -> Result<ExitCode, String> {
    if a.node.regions.is_empty() {
        return Err("serve needs at least one --region SIZE to serve".into());
    }
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    run(&a.node, None)
}

/// Run `linerate rdma write`.
pub fn write(a: WriteArgs) -> Result<ExitCode, String> {
    let data = match (&a.file, a.size) {
        (Some(f), _) => std::fs::read(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?,
        (None, Some(n)) => pattern(usize::try_from(n).map_err(msg)?, a.seed),
        (None, None) => unreachable!("clap requires --file or --size"),
    };
    if data.is_empty() {
        return Err("nothing to write: the data is empty".into());
    }
    let key = u32::try_from(a.key).map_err(|_| format!("key {:#x} does not fit 32 bits", a.key))?;
    let job = WriteJob { to: a.to.clone(), key: RegionKey(key), offset: a.offset, data, wait_peer: a.wait_peer };
    run(&a.node, Some(job))
}

/// The write `linerate rdma write` makes.
struct WriteJob {
    to: String,
    key: RegionKey,
    offset: u64,
    data: Vec<u8>,
    wait_peer: Duration,
}

/// The node's configuration from the flags: transport, then every `--set`.
fn config(a: &NodeArgs) -> Result<RdmaConfig, String> {
    let mut cfg = RdmaConfig::default();
    cfg.set_text("transport", &a.transport).map_err(msg)?;
    for s in &a.settings {
        let (name, value) =
            s.split_once('=').ok_or_else(|| format!("--set {s:?}: expected NAME=VALUE, e.g. segment_size=256K"))?;
        cfg.set_text(name.trim(), value).map_err(msg)?;
    }
    cfg.validate().map_err(msg)?;
    Ok(cfg)
}

/// Open the link, build the node and run it.
fn run(a: &NodeArgs, job: Option<WriteJob>) -> Result<ExitCode, String> {
    install_stop_handler();
    let rcfg = config(a)?;
    let cfg = Config::parse_host(&a.ip).map_err(msg)?.mtu(a.mtu);
    let (mut cfg, linux6) = a.ipv6.apply(cfg, a.tap)?;
    // Room for a burst from several senders' windows while this process is descheduled.
    cfg.socket_rx_queue = SOCKET_RX_QUEUE;
    cfg.validate().map_err(msg)?;
    if let Some(spec) = &a.link {
        // Raw-Ethernet RDMA is not IP: an AF_XDP program then takes every frame.
        let udp = matches!(rcfg.transport, rdma::Transport::Udp { .. });
        let (addresses, addresses6) = if udp {
            (vec![cfg.ip], cfg.ipv6.addrs.iter().map(|c| c.addr).collect())
        } else {
            (Vec::new(), Vec::new())
        };
        let opts = OpenOptions { mtu: Some(a.mtu), addresses, addresses6, ..OpenOptions::default() };
        let opened = spec.open(&opts).map_err(|e| format!("{spec}: {e}"))?;
        if let Some(mac) = opened.mac {
            cfg.mac = wire::MacAddr(mac);
        }
        let link = opened.links.into_iter().next().ok_or_else(|| format!("{spec} opened no queue"))?;
        let mut stack = Stack::new(cfg, link).map_err(msg)?;
        crate::host_ipv6::settle(&mut stack)?;
        eprintln!("RDMA node {} on {spec} ({}, {}).", a.ip, opened.mode, stack.mac());
        return drive(&mut stack, rcfg, a, job, None);
    }
    if let Some(ifname) = &a.af_packet {
        let link = link::packet::PacketLink::open(ifname, a.mtu)
            .map_err(|e| format!("cannot open AF_PACKET on '{ifname}': {e}"))?;
        let mut stack = Stack::new(cfg, Box::new(link) as Box<dyn Link>).map_err(msg)?;
        crate::host_ipv6::settle(&mut stack)?;
        eprintln!("RDMA node {} on {ifname} through AF_PACKET ({}).", a.ip, stack.mac());
        let code = drive(&mut stack, rcfg, a, job, None)?;
        return Ok(code);
    }
    let mut setup = testbed::TapSetup::create("lr-rdma", &a.linux_ip, cfg, None).map_err(msg)?;
    if let Some(linux6) = &linux6 {
        crate::commands::tap::add_linux_ipv6(&mut setup, linux6)?;
    }
    let ns = setup.ns.name().to_string();
    eprintln!(
        "RDMA node {} on TAP {} in namespace {ns} ({}); Linux side {}.",
        a.ip,
        testbed::tap::TAP_IFNAME,
        setup.stack.mac(),
        setup.linux_ip
    );
    let child =
        a.run.as_deref().map(|cmd| crate::runloop::spawn_run(Some(&setup.ns), cmd, Stdio::inherit())).transpose()?;
    drive(&mut setup.stack, rcfg, a, job, child)
}

/// What one region saw.
#[derive(Default)]
struct RegionSeen {
    notifications: u64,
    registered: u64,
    bytes: u64,
    /// Op ids notified, with how often (a segment notified twice is a bug the report shows).
    ops: HashMap<u64, u32>,
}

/// Run the node until it is done; print the report.
fn drive(
    stack: &mut Stack<Box<dyn Link>>,
    rcfg: RdmaConfig,
    a: &NodeArgs,
    job: Option<WriteJob>,
    mut child: Option<Child>,
) -> Result<ExitCode, String> {
    let mut node = RdmaNode::new(stack, rcfg).map_err(msg)?;
    let mut keys = Vec::new();
    for &size in &a.regions {
        let size = usize::try_from(size).map_err(msg)?;
        let key = node.register(vec![0u8; size]).map_err(msg)?;
        eprintln!("region {:#x} {size}", key.0);
        keys.push(key);
    }
    let command = if job.is_some() { "rdma write" } else { "rdma serve" };
    let mut stats = crate::statsfile::StatsPublisher::new(&format!("rdma-{}", std::process::id()), command)
        .map_err(|e| format!("stats file: {e}"))?;
    let start = Instant::now();
    let deadline = start + a.limit;
    let mut idler = Idler::new();
    let mut seen: HashMap<u32, RegionSeen> = keys.iter().map(|k| (k.0, RegionSeen::default())).collect();
    let mut notified = 0u64;
    // The write: the peer answered (or needs no ping), posted, done (time, outcome).
    let peer = job.as_ref().map(|j| parse_peer(&j.to, node.address(stack))).transpose()?;
    let mut peer_ready = matches!(peer, Some(Peer::Eth(_)));
    let mut write_at: Option<Instant> = None;
    let mut write_done: Option<(Duration, Result<(), String>)> = None;
    let mut ping_at = start;
    let mut ping_seq = 0u16;
    let mut code = None;
    let outcome: Result<(), String> = loop {
        let now = Instant::now();
        if now >= deadline || stop_requested() {
            break Ok(());
        }
        if let Some(c) = child.as_mut() {
            if let Some(status) = c.try_wait().map_err(msg)? {
                code = Some(status.code().unwrap_or(1));
                child = None;
                break Ok(());
            }
        }
        let mut work = stack.poll(now).map_err(msg)?;
        work += node.poll(stack, now).map_err(msg)?;
        if let (Some(j), Some(p), None) = (&job, peer, write_at) {
            if let (false, Peer::Udp(to)) = (peer_ready, p) {
                if stack.ping_reply().is_some() {
                    peer_ready = true;
                } else if now - start > j.wait_peer {
                    break Err(format!(
                        "no answer from {} within {:?} (no ARP or ping reply): is a node running there?",
                        to.ip(),
                        j.wait_peer
                    ));
                } else if ping_seq == 0 || now - ping_at >= Duration::from_millis(100) {
                    ping_at = now;
                    ping_seq = ping_seq.wrapping_add(1);
                    let _ = stack.ping(to.ip(), ping_seq, 8).map_err(msg)?;
                }
            }
            if peer_ready {
                node.post_write(p, j.key, j.offset, j.data.clone()).map_err(msg)?;
                write_at = Some(Instant::now());
                work += 1;
            }
        }
        while let Some(c) = node.completions().poll() {
            if c.kind == CompletionKind::Send && write_done.is_none() && c.status != Status::Ok {
                write_done = Some((Instant::now() - write_at.unwrap_or(start), Err(write_failure(&job, c.status))));
            }
        }
        if let (Some(at), None) = (write_at, write_done.as_ref()) {
            if node.pending_writes() == 0 {
                write_done = Some((Instant::now() - at, Ok(())));
            }
        }
        while let Some(c) = node.notifications().poll() {
            notified += c.len;
            let r = seen.entry(c.key.0).or_default();
            r.notifications += 1;
            r.registered += u64::from(c.kind == CompletionKind::RecvRegistered);
            r.bytes += c.len;
            *r.ops.entry(c.op_id).or_insert(0) += 1;
        }
        if matches!(write_done, Some((_, Err(_)))) {
            break Ok(());
        }
        let wrote = job.is_none() || write_done.is_some();
        let got = a.until_notified.is_none_or(|n| notified >= n);
        if wrote && got && (job.is_some() || a.until_notified.is_some()) {
            break Ok(());
        }
        stack.flush().map_err(msg)?;
        stats.publish_every(|| {
            let counters = node.counters();
            let rdma = counters.iter().map(|(k, v)| (format!("rdma_{k}"), v));
            rdma.chain(stack.counters().iter().map(|(k, v)| (k.to_string(), v))).collect::<Vec<_>>()
        });
        idler.after_poll(stack.link(), work > 0 || node.pending_writes() > 0);
    };
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    // Stay a moment to answer what a peer still resends (an ACK of ours the link dropped):
    // leaving at once would fail a write whose data all arrived.
    if outcome.is_ok() && !keys.is_empty() {
        let until = Instant::now() + LINGER;
        while Instant::now() < until && !stop_requested() {
            let now = Instant::now();
            let work = stack.poll(now).map_err(msg)? + node.poll(stack, now).map_err(msg)?;
            stack.flush().map_err(msg)?;
            idler.after_poll(stack.link(), work > 0);
        }
    }
    let link_drops =
        stack.link().stats().fields().into_iter().filter(|(k, _)| k.contains("drop") || k.contains("lost"));
    let drops: Vec<(&'static str, u64)> = stack
        .counters()
        .iter()
        .filter(|(k, _)| k.starts_with("drop"))
        .chain(link_drops)
        .filter(|(_, v)| *v > 0)
        .collect();
    let failed = report(&node, &keys, &seen, &job, write_done.as_ref(), &drops, a.json);
    outcome?;
    if let Some(e) = failed {
        return Err(e);
    }
    if job.is_some() && write_done.is_none() {
        return Err(format!("the write did not complete within --limit {:?}", a.limit));
    }
    if let Some(n) = a.until_notified.filter(|&n| notified < n) {
        return Err(format!("only {notified} of {n} bytes were notified within --limit {:?}", a.limit));
    }
    Ok(code.map_or(ExitCode::SUCCESS, |c| ExitCode::from(c.clamp(0, 255) as u8)))
}

/// One sentence on why a write failed.
fn write_failure(job: &Option<WriteJob>, s: Status) -> String {
    let (to, key, len) = job.as_ref().map_or((String::new(), 0, 0), |j| (j.to.clone(), j.key.0, j.data.len()));
    let why = match s {
        Status::Nacked(rdma::NackReason::OutOfBounds) => {
            format!(" (region {key:#x} is smaller than the {len}-byte write at its offset)")
        }
        Status::Nacked(rdma::NackReason::UnknownKey) => format!(" (no region {key:#x} there)"),
        Status::Nacked(rdma::NackReason::Deregistered) => format!(" (region {key:#x} was deregistered)"),
        Status::TimedOut => " (the node stopped answering)".into(),
        _ => String::new(),
    };
    let status = match s {
        Status::Nacked(r) => format!("NACKed {r}"),
        Status::TimedOut => "timed out".into(),
        other => format!("{other:?}"),
    };
    format!("the write to {to} region {key:#x} failed: {status}{why}")
}

/// The peer `to` names: an IP (the node's own port), IP:PORT, or a MAC address.
fn parse_peer(to: &str, me: Peer) -> Result<Peer, String> {
    let bad = || format!("--to {to:?} is not an IPv4 or IPv6 address, IP:PORT ([IPv6]:PORT) or a MAC address");
    match me {
        Peer::Udp(mine) => {
            if let Ok(a) = to.parse::<std::net::SocketAddr>() {
                return Ok(Peer::Udp(a));
            }
            let ip: std::net::IpAddr = to.parse().map_err(|_| bad())?;
            Ok(Peer::Udp(std::net::SocketAddr::new(ip, mine.port())))
        }
        Peer::Eth(_) => Ok(Peer::Eth(
            to.parse().map_err(|_| format!("--to {to:?} is not a MAC address (the transport is raw Ethernet)"))?,
        )),
    }
}

/// Print the report; returns an error sentence if the write failed.
fn report(
    node: &RdmaNode,
    keys: &[RegionKey],
    seen: &HashMap<u32, RegionSeen>,
    job: &Option<WriteJob>,
    done: Option<&(Duration, Result<(), String>)>,
    drops: &[(&'static str, u64)],
    json: bool,
) -> Option<String> {
    let mut tables = Vec::new();
    let mut failed = None;
    if let Some(j) = job {
        let mut t = Table::new("rdma write", &["to", "key", "bytes", "time", "goodput", "data fnv1a", "outcome"]);
        let (time, goodput, outcome) = match done {
            Some((d, r)) => {
                let s = d.as_secs_f64().max(1e-9);
                if let Err(e) = r {
                    failed = Some(e.clone());
                }
                (Cell::secs(s), Cell::bps(j.data.len() as f64 * 8.0 / s), r.as_ref().map_or("failed", |_| "ok"))
            }
            None => (Cell::Missing("not completed".into()), Cell::Missing("not completed".into()), "not completed"),
        };
        t.row(vec![
            Cell::Text(j.to.clone()),
            Cell::Text(format!("{:#x}", j.key.0)),
            Cell::bytes(j.data.len() as u64),
            time,
            goodput,
            Cell::Text(format!("{:016x}", fnv(&j.data))),
            Cell::Text(outcome.into()),
        ]);
        tables.push(t);
    }
    if keys.is_empty() {
        return finish(node, tables, drops, json, failed);
    }
    let mut t = Table::new(
        "rdma regions",
        &["key", "size", "region fnv1a", "notifications", "registered", "notified bytes", "ops notified twice"],
    );
    for k in keys {
        let s = seen.get(&k.0);
        let region = node.region(*k);
        let bytes = region.as_deref().unwrap_or(&[]);
        t.row(vec![
            Cell::Text(format!("{:#x}", k.0)),
            Cell::bytes(bytes.len() as u64),
            Cell::Text(format!("{:016x}", fnv(bytes))),
            Cell::count_u64(s.map_or(0, |s| s.notifications)),
            Cell::count_u64(s.map_or(0, |s| s.registered)),
            Cell::bytes(s.map_or(0, |s| s.bytes)),
            Cell::count_u64(s.map_or(0, |s| s.ops.values().filter(|&&n| n > 1).count() as u64)),
        ]);
    }
    tables.push(t);
    finish(node, tables, drops, json, failed)
}

/// Add the node's non-zero counters and the stack's drops to `tables`, print them all, and
/// pass `failed` on.
fn finish(
    node: &RdmaNode,
    mut tables: Vec<Table>,
    drops: &[(&'static str, u64)],
    json: bool,
    failed: Option<String>,
) -> Option<String> {
    let mut c = Table::new("rdma counters (non-zero)", &["counter", "value"]);
    for (k, v) in node.counters().iter().filter(|(_, v)| *v > 0) {
        c.row(vec![Cell::Text(k.to_string()), Cell::count_u64(v)]);
    }
    tables.push(c);
    let mut d = Table::new("stack and link drops (non-zero)", &["counter", "value"]);
    for (k, v) in drops {
        d.row(vec![Cell::Text(k.to_string()), Cell::count_u64(*v)]);
    }
    tables.push(d);
    let refs: Vec<&Table> = tables.iter().collect();
    crate::output::print_all(&refs, json);
    failed
}

/// FNV-1a, 64 bits.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| (h ^ u64::from(*x)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// `len` deterministic bytes from `seed` (xorshift64).
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_peers_and_patterns() {
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("0x10001"), Ok(0x10001));
        assert!(parse_bytes("lots").unwrap_err().contains("not a size"));
        use std::net::SocketAddrV4;
        let me = Peer::Udp(SocketAddrV4::new([10, 0, 0, 1].into(), 18791).into());
        let v6: std::net::SocketAddr = "[fd77::2]:18791".parse().unwrap();
        assert_eq!(parse_peer("fd77::2", me), Ok(Peer::Udp(v6)));
        assert_eq!(parse_peer("[fd77::2]:18791", me), Ok(Peer::Udp(v6)));
        assert_eq!(parse_peer("10.0.0.2", me), Ok(Peer::Udp(SocketAddrV4::new([10, 0, 0, 2].into(), 18791).into())));
        assert_eq!(parse_peer("10.0.0.2:9", me), Ok(Peer::Udp(SocketAddrV4::new([10, 0, 0, 2].into(), 9).into())));
        assert!(parse_peer("nowhere", me).is_err());
        let eth = Peer::Eth("02:00:00:00:00:01".parse().unwrap());
        assert!(parse_peer("10.0.0.2", eth).unwrap_err().contains("raw Ethernet"));
        assert_eq!(pattern(13, 5), pattern(20, 5)[..13]);
        assert_ne!(pattern(16, 5), pattern(16, 6));
    }

    #[test]
    fn settings_come_from_the_flags_and_bad_ones_are_one_sentence() {
        let mut a = NodeArgs {
            link: None,
            af_packet: Some("x".into()),
            tap: false,
            ip: "10.0.0.1/24".into(),
            linux_ip: String::new(),
            ipv6: crate::host_ipv6::Ipv6Flags { ip6: vec![], linux_ip6: "none".into() },
            run: None,
            mtu: 1500,
            transport: "eth".into(),
            settings: vec!["segment_size=128K".into(), "rto=3ms".into()],
            regions: vec![],
            until_notified: None,
            limit: Duration::from_secs(1),
            json: false,
        };
        let c = config(&a).unwrap();
        assert_eq!((c.segment_size, c.rto), (128 << 10, Duration::from_millis(3)));
        assert_eq!(c.transport, rdma::Transport::Eth { ethertype: rdma::DEFAULT_ETHERTYPE });
        a.settings = vec!["segmentsize=1".into()];
        let e = config(&a).unwrap_err();
        assert!(e.contains("unknown setting \"segmentsize\"") && !e.contains('\n'), "{e}");
        a.settings = vec!["window".into()];
        assert!(config(&a).unwrap_err().contains("NAME=VALUE"));
    }
}
