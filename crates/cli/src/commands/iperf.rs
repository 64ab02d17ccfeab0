//! `linerate iperf`: TCP goodput between two linerate processes over a shared-memory link (or,
//! with `--link`, over any link: two namespaces joined by a veth on AF_XDP, two machines), with
//! the small protocol of [`apps::iperf`]. `-s` creates the link and serves a counting sink;
//! `-c HOST` opens the link and sends for `--duration` on `--parallel` connections.
//! Both print a progress line per interval and a summary; both busy-poll while there is
//! traffic.

use crate::bench_common::{msg, pin_cpu, tcp_stack_config, GRACE};
use crate::duration::parse_duration;
use crate::output::{fmt_si, Cell, Table};
use crate::runloop::{install_stop_handler, now, poll_burst, polls_for, stop_requested, Idler};
use crate::statsfile::StatsPublisher;
use apps::iperf::{IperfClient, DEFAULT_PORT};
use apps::TcpSink;
use link::shm::ShmLink;
use link::spec::LinkSpec;
use link::{Instant, Link, LinkConfig, LinkError};
use net::{Config, NetError, Stack};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

/// Options of `linerate iperf`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("role").required(true).args(["server", "client"])))]
pub struct IperfArgs {
    /// Run the server (it creates the link).
    #[arg(short = 's', long)]
    server: bool,
    /// Run a client that sends to the server at HOST, an IPv4 or IPv6 address (it opens the
    /// link; to an IPv6 server give this side an IPv6 address with --ip6).
    #[arg(short = 'c', long, value_name = "HOST")]
    client: Option<IpAddr>,
    /// TCP port of the server.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Name of the shared-memory link (/dev/shm/linerate-NAME).
    #[arg(long, default_value = "iperf")]
    shm: String,
    /// Run on this link instead of the shared-memory one: af_xdp:IFACE, af_packet:IFACE or
    /// tap:IFNAME, in the network namespace this command runs in (the two sides then run in
    /// two namespaces joined by a veth, or on two machines; MTU: the interface's).
    #[arg(long, value_name = "SPEC", conflicts_with = "shm")]
    link: Option<LinkSpec>,
    /// Client on --link af_xdp:IFACE: open this many queues, one stack (shard) per queue on a
    /// thread of its own, and spread the --parallel connections over them; each shard opens its
    /// connections from ports whose flow hash leads back to it.
    #[arg(long, default_value_t = 1, requires = "link")]
    queues: u32,
    /// Our address (default 10.0.0.1/24 for the server, 10.0.0.2/24 for the client).
    #[arg(long)]
    ip: Option<String>,
    /// An IPv6 address and prefix of ours, beside the link-local address of our MAC
    /// (repeatable), e.g. fd00::1/64 for the server and fd00::2/64 for the client; the server
    /// then takes connections over both families.
    #[arg(long, value_name = "ADDR/LEN")]
    ip6: Vec<String>,
    /// IP MTU of the link, set by the server (the client takes the link's; on --link both
    /// default to the interface's); MSS = MTU - 40.
    #[arg(long, value_parser = crate::flag_values::parse_mtu)]
    mtu: Option<usize>,
    /// Client: how long to send (default 10s). Server: stop after this long (default: when
    /// the client's side of the link closes, or on Ctrl-C). A duration: 5s, 500ms, 2m; a
    /// bare number is seconds.
    #[arg(value_name = "DURATION", short = 't', long, alias = "time", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Parallel connections (client).
    #[arg(short = 'P', long, default_value_t = 1)]
    parallel: usize,
    /// Time between progress lines (a duration: 1s, 500ms; a bare number is seconds).
    #[arg(value_name = "DURATION", short = 'i', long, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,
    /// Connections the stack can hold (default: 4096, or --parallel plus 64 on a client).
    #[arg(long)]
    sessions: Option<usize>,
    /// Per-connection send and receive buffer, bytes (default: the stack's, 256 KiB).
    #[arg(long)]
    buffer: Option<usize>,
    /// How long the client waits for the link and keeps retrying a refused connection (a
    /// duration; a bare number is seconds).
    #[arg(value_name = "DURATION", long, alias = "wait", default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,
    /// Pin this process to a CPU.
    #[arg(long)]
    cpu: Option<usize>,
    /// Print the summary as JSON (progress lines then go to stderr).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// Default sending time of a client.
const DEFAULT_TIME: Duration = Duration::from_secs(10);

/// Run `linerate iperf`.
pub fn run(a: IperfArgs) -> Result<ExitCode, String> {
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    install_stop_handler();
    if let Some(cpu) = a.cpu {
        pin_cpu(cpu);
    }
    let interval = a.interval;
    match a.client {
        Some(host) => run_client(&a, SocketAddr::new(host, a.port), interval),
        None => run_server(&a, interval),
    }
}

/// Prints a progress line per interval: the bytes a counter advanced by and the rate.
struct Progress {
    to_stderr: bool,
    start: Instant,
    every: Duration,
    last_at: Instant,
    last_bytes: u64,
}

impl Progress {
    fn new(start: Instant, every: Duration, to_stderr: bool) -> Progress {
        Progress { to_stderr, start, every, last_at: start, last_bytes: 0 }
    }

    /// Print a line if an interval has passed since the last one.
    fn tick(&mut self, t: Instant, bytes: u64, what: &str) {
        if t - self.last_at < self.every {
            return;
        }
        let span = (t - self.last_at).as_secs_f64();
        let delta = bytes.saturating_sub(self.last_bytes);
        let line = format!(
            "[{:7.2}-{:7.2} s]  {:>12} {what}  {:>14}",
            (self.last_at - self.start).as_secs_f64(),
            (t - self.start).as_secs_f64(),
            fmt_si(delta as f64, "B"),
            fmt_si(delta as f64 * 8.0 / span, "bit/s")
        );
        say(self.to_stderr, &line);
        (self.last_at, self.last_bytes) = (t, bytes);
    }
}

/// A human line: to stdout, or to stderr when stdout carries JSON.
fn say(to_stderr: bool, line: &str) {
    if to_stderr {
        eprintln!("{line}");
    } else {
        bench::outln!("{line}");
    }
}

/// True for the error a stack returns once the other process closed the shared-memory link.
fn link_closed<T>(r: &Result<T, NetError>) -> bool {
    matches!(r, Err(NetError::Link(LinkError::Closed)))
}

/// This side's stack at `ip` (CIDR) with room for `sessions` connections: on --link, that
/// link (MTU: --mtu or the interface's); else the shared-memory link, created by the server
/// (`open_wait` None, MTU --mtu or 1500) or opened by the client within `open_wait` (MTU: the
/// link's). Also where it runs, for the user.
fn open_stack(
    a: &IperfArgs,
    ip: &str,
    sessions: usize,
    open_wait: Option<Duration>,
) -> Result<(Stack<Box<dyn Link>>, String), String> {
    let (link, mtu, mac, place): (Box<dyn Link>, usize, Option<[u8; 6]>, String) = match (&a.link, open_wait) {
        (Some(spec), _) => {
            let cfg = with_ipv6(Config::parse_host(ip).map_err(msg)?, a)?;
            let one = crate::link_stack::open_one(spec, &cfg, a.mtu)?;
            (one.link, one.mtu, one.mac, one.label)
        }
        (None, None) => {
            let mtu = a.mtu.unwrap_or(1500);
            let link = ShmLink::create(&a.shm, LinkConfig::default().mtu(mtu)).map_err(msg)?;
            (Box::new(link), mtu, None, format!("shared-memory link {:?}", a.shm))
        }
        (None, Some(wait)) => {
            let link = ShmLink::open(&a.shm, wait).map_err(msg)?;
            let mtu = link.max_frame() - 18;
            (Box::new(link), mtu, None, format!("shared-memory link {:?}", a.shm))
        }
    };
    let mut cfg = with_ipv6(tcp_stack_config(ip, mtu, sessions, a.buffer)?, a)?;
    if let Some(mac) = mac {
        cfg.mac = wire::MacAddr(mac);
    }
    let mut stack = Stack::new(cfg, link).map_err(msg)?;
    crate::host_ipv6::settle(&mut stack)?;
    Ok((stack, place))
}

/// `cfg` with the IPv6 addresses of `--ip6`.
fn with_ipv6(mut cfg: Config, a: &IperfArgs) -> Result<Config, String> {
    for c in &a.ip6 {
        cfg = cfg.ipv6_addr(c).map_err(|e| format!("--ip6: {e}"))?;
    }
    Ok(cfg)
}

/// The name of this side's link in instance names: the interface or the shm link.
fn instance(a: &IperfArgs) -> String {
    match &a.link {
        Some(spec) => spec.to_string().replace(':', "-"),
        None => a.shm.clone(),
    }
}

/// `linerate iperf -s`: create the link, serve a reporting sink until the client's side
/// closes (or the duration passes, or Ctrl-C).
fn run_server(a: &IperfArgs, interval: Duration) -> Result<ExitCode, String> {
    let ip = a.ip.clone().unwrap_or_else(|| "10.0.0.1/24".into());
    let sessions = a.sessions.unwrap_or(4096);
    let (mut stack, place) = open_stack(a, &ip, sessions, None)?;
    let mut sink = TcpSink::listen(&mut stack, a.port, sessions).map_err(msg)?.with_report();
    let mut publisher =
        StatsPublisher::new(&format!("iperf-s-{}", instance(a)), "iperf -s").map_err(|e| format!("stats file: {e}"))?;
    let host = stack.ip();
    let mtu = stack.config().mtu;
    let how = match &a.link {
        Some(_) => "--link SPEC --ip ADDR/24 on the other side".to_string(),
        None => format!("--shm {}", a.shm),
    };
    eprintln!("iperf server {host}:{} on {place} (MTU {mtu}); run: linerate iperf -c {host} {how}", a.port);
    let start = now();
    let deadline = a.duration.map(|d| start + d);
    let mut idler = Idler::new();
    let mut progress: Option<Progress> = None;
    let mut tests =
        Table::new("iperf server: tests received", &["test", "connections", "bytes", "duration", "goodput"]);
    let (mut accepted_before, mut test_no) = (0, 0);
    loop {
        let t = now();
        let polled = poll_burst(&mut stack, polls_for(sink.connections().open));
        if link_closed(&polled) {
            let c = sink.connections();
            let line = if c.open > 0 {
                format!(
                    "iperf server: the link's peer is gone with {} connection(s) open (it closed the link or its \
                     process died); {} bytes received in the unfinished test",
                    c.open, sink.bytes
                )
            } else {
                format!("iperf server: the link's peer is gone; {test_no} test(s) received")
            };
            eprintln!("{line}");
            break;
        }
        let received = polled.map_err(msg)?;
        let worked = received + sink.serve(&mut stack).map_err(msg)? > 0;
        idler.after_poll(stack.link(), worked);
        let c = sink.connections();
        publisher.publish_every(|| {
            let mut v = vec![("rx_bytes", sink.bytes), ("connections_open", c.open as u64), ("tests", test_no as u64)];
            v.push(("connections_accepted", c.accepted));
            // The stack's own counters beside the application's (non-zero ones).
            v.extend(stack.counters().iter().filter(|(_, n)| *n > 0));
            v
        });
        if c.open > 0 {
            progress.get_or_insert_with(|| Progress::new(t, interval, a.json)).tick(t, sink.bytes, "received");
        } else if c.accepted > accepted_before {
            let secs = match (sink.first, sink.last) {
                (Some(f), Some(l)) => (l - f).as_secs_f64(),
                _ => 0.0,
            };
            let rate = sink.rate() * 8.0;
            test_no += 1;
            let line = format!(
                "test {test_no}: {} bytes from {} connections in {secs:.2} s: {}",
                sink.bytes,
                c.accepted - accepted_before,
                fmt_si(rate, "bit/s")
            );
            say(a.json, &line);
            tests.row(vec![
                Cell::count(test_no as f64),
                Cell::count_u64(c.accepted - accepted_before),
                Cell::bytes(sink.bytes),
                Cell::secs(secs),
                Cell::bps(rate),
            ]);
            accepted_before = c.accepted;
            sink.reset_tally();
            progress = None;
        }
        if stop_requested() || deadline.is_some_and(|d| t >= d) {
            break;
        }
    }
    tests.print(a.json);
    Ok(ExitCode::SUCCESS)
}

/// `linerate iperf -c HOST`: open the link (one stack per queue with --queues), run one test,
/// print the summary.
fn run_client(a: &IperfArgs, server: SocketAddr, interval: Duration) -> Result<ExitCode, String> {
    let time = a.duration.unwrap_or(DEFAULT_TIME);
    let wait = a.timeout;
    if a.parallel == 0 || a.parallel > 60_000 {
        return Err(format!("--parallel {} is outside 1..=60000", a.parallel));
    }
    let ip = a.ip.clone().unwrap_or_else(|| "10.0.0.2/24".into());
    let sessions = a.sessions.unwrap_or((a.parallel + 64).max(4096));
    let stacks = match (&a.link, a.queues) {
        (Some(spec), q) if q > 1 => open_shards(a, spec, &ip, sessions)?,
        _ => vec![open_stack(a, &ip, sessions, Some(wait))?.0],
    };
    let (n, mtu) = (stacks.len(), stacks[0].config().mtu);
    eprintln!(
        "iperf client {} -> {server}: {} connection(s) for {:.1} s, MTU {mtu}{}",
        stacks[0].ip(),
        a.parallel,
        time.as_secs_f64(),
        if n > 1 { format!(", {n} shards") } else { String::new() }
    );
    let share = |q: usize| a.parallel / n + usize::from(q < a.parallel % n);
    let outcomes: Vec<Result<ShareOutcome, String>> = if n == 1 {
        let stack = stacks.into_iter().next().expect("one stack");
        vec![run_share(a, stack, server, a.parallel, Some(interval), &format!("iperf-c-{}", instance(a)))]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = stacks
                .into_iter()
                .enumerate()
                .map(|(q, stack)| {
                    let name = format!("iperf-c-{}.shard{q}", instance(a));
                    scope.spawn(move || run_share(a, stack, server, share(q), None, &name))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a shard's thread panicked".into()))).collect()
        })
    };
    let outcomes: Vec<ShareOutcome> = outcomes.into_iter().collect::<Result<_, _>>()?;
    let mut t = Table::new(
        &format!("iperf client -> {server}"),
        &["shard", "connections", "reported", "sent", "received", "duration", "goodput"],
    );
    let row = |t: &mut Table, name: &str, r: &apps::iperf::IperfResult, bps: f64| {
        t.row(vec![
            Cell::from(name),
            Cell::count(r.connections as f64),
            Cell::count(r.reported as f64),
            Cell::bytes(r.sent),
            Cell::bytes(r.received),
            Cell::secs(r.elapsed.as_secs_f64()),
            Cell::bps(bps),
        ]);
    };
    let mut total = apps::iperf::IperfResult::default();
    for (q, o) in outcomes.iter().enumerate() {
        let r = &o.result;
        if n > 1 {
            row(&mut t, &format!("shard {q}"), r, r.bits_per_sec());
        }
        total.connections += r.connections;
        total.reported += r.reported;
        total.sent += r.sent;
        total.received += r.received;
        total.elapsed = total.elapsed.max(r.elapsed);
    }
    // The shards run at once: their goodputs add up.
    let bps: f64 = outcomes.iter().map(|o| o.result.bits_per_sec()).sum();
    row(&mut t, if n > 1 { "all" } else { "-" }, &total, bps);
    t.print(a.json);
    let first_error = outcomes.iter().find_map(|o| o.first_error.clone());
    if first_error.is_some() || total.reported < total.connections {
        eprintln!(
            "linerate: {} of {} connections failed; first: {}",
            total.connections - total.reported,
            total.connections,
            first_error.as_deref().unwrap_or("no report")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What one stack's share of a client run ended with.
struct ShareOutcome {
    result: apps::iperf::IperfResult,
    first_error: Option<String>,
}

/// Run `parallel` connections of the test on `stack` until they end; progress lines every
/// `interval` if given; counters published as instance `name`.
fn run_share(
    a: &IperfArgs,
    mut stack: Stack<Box<dyn Link>>,
    server: SocketAddr,
    parallel: usize,
    interval: Option<Duration>,
    name: &str,
) -> Result<ShareOutcome, String> {
    let (time, wait) = (a.duration.unwrap_or(DEFAULT_TIME), a.timeout);
    // A shard's IPv6 addresses pass duplicate address detection before it connects from them.
    crate::host_ipv6::settle(&mut stack)?;
    let mut client = IperfClient::new(server, parallel, time, wait);
    let name = format!("{name}-{}", std::process::id());
    let mut publisher = StatsPublisher::new(&name, "iperf -c").map_err(|e| format!("stats file: {e}"))?;
    let start = now();
    let deadline = start + wait + time + GRACE;
    let mut idler = Idler::new();
    let mut progress: Option<Progress> = None;
    while !client.is_finished() {
        let t = now();
        let received = poll_burst(&mut stack, polls_for(parallel)).map_err(msg)?;
        let worked = received + client.step(&mut stack).map_err(msg)? > 0;
        idler.after_poll(stack.link(), worked);
        publisher.publish_every(|| {
            let mut v = vec![("acked_bytes", client.acked())];
            v.extend(stack.counters().iter().filter(|(_, n)| *n > 0));
            v
        });
        if let (Some(s), Some(every)) = (client.started_at(), interval) {
            progress.get_or_insert_with(|| Progress::new(s, every, a.json)).tick(t, client.acked(), "acked");
        }
        if stop_requested() {
            return Err("interrupted".into());
        }
        if t >= deadline {
            return Err(format!("the test did not finish within {:?}", deadline - start));
        }
    }
    let first_error = client.errors().next().map(|e| e.to_string());
    Ok(ShareOutcome { result: client.result(), first_error })
}

/// One stack per queue of `spec` at `ip` (CIDR), each shard `q` of `n` opening connections
/// from ports that hash back to it, frames of other shards' flows handed over (`net::shard`).
fn open_shards(a: &IperfArgs, spec: &LinkSpec, ip: &str, sessions: usize) -> Result<Vec<Stack<Box<dyn Link>>>, String> {
    let host = with_ipv6(Config::parse_host(ip).map_err(msg)?, a)?;
    let opts = link::spec::OpenOptions {
        mtu: a.mtu,
        queues: a.queues,
        addresses: vec![host.ip],
        addresses6: host.ipv6.addrs.iter().map(|c| c.addr).collect(),
        ..Default::default()
    };
    let opened = spec.open(&opts).map_err(|e| format!("{spec}: {e}"))?;
    crate::link_stack::warn_about(spec, &opened);
    let n = opened.links.len() as u16;
    let mut cfg = with_ipv6(tcp_stack_config(ip, opened.mtu, sessions, a.buffer)?, a)?;
    if let Some(mac) = opened.mac {
        cfg.mac = wire::MacAddr(mac);
    }
    net::shard::shard_links(opened.links)
        .into_iter()
        .map(|link| {
            let mut c = cfg.clone();
            c.tcp.shard = (link.shard(), n);
            Stack::new(c, Box::new(link) as Box<dyn Link>).map_err(msg)
        })
        .collect()
}
