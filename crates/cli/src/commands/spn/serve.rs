//! `linerate spn serve`: the SPN service on a linerate host, either on a shared-memory link
//! opened by another linerate process (`linerate spn bench`), on a TAP device in a new
//! network namespace (`--tap`), where Linux programs reach it (`linerate spn query` and the
//! Python client `linerate/spn_client.py`, run with `ip netns exec NS ...`), or on an existing
//! interface through AF_PACKET (`--af-packet IFACE`), or on any link (`--link af_xdp:IFACE`,
//! ...), for Linux hosts on that segment.

use super::ModelArgs;
use crate::bench_common::{check_secs, die_with_parent, msg, pin_cpu, CpuMeter, READY};
use crate::runloop::{install_stop_handler, stop_requested, Idler};
use apps::spn_service::{SpnCounters, SpnService, SpnServiceConfig, SPN_ETHERTYPE};
use link::shm::ShmLink;
use link::{Instant, Link, LinkError};
use net::{Config, NetError, Stack};
use spn::CompiledSpn;
use std::io::Write;
use std::process::{Child, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;
use testbed::TapSetup;

/// Options of `linerate spn serve`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("where").required(true).args(["shm", "tap", "af_packet", "link"])))]
pub struct ServeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Name of the shared-memory link to open (created by the other process).
    #[arg(long)]
    shm: Option<String>,
    /// Serve on this existing network interface through an AF_PACKET socket instead: Linux
    /// hosts on its segment reach the service at --ip (the interface itself should have no
    /// address, so that this machine's kernel stays out of the exchange). A Linux peer on a
    /// veth must turn its transmit checksum offload off (`ethtool -K IFACE tx off`): between
    /// veths the checksums are never computed.
    #[arg(long, value_name = "IFACE")]
    af_packet: Option<String>,
    /// Serve on this link in this network namespace: af_xdp:IFACE (AF_XDP; IPv4 and ARP for
    /// --ip come to the service, the rest stays with the kernel), af_packet:IFACE, tap:IFNAME
    /// or shm:NAME; MTU: the interface's unless --mtu.
    #[arg(long, value_name = "SPEC")]
    link: Option<link::spec::LinkSpec>,
    /// Serve on a TAP device in a new network namespace instead: programs in that namespace
    /// reach the service through its Linux stack (the namespace's name is printed; it is
    /// deleted on exit).
    #[arg(long)]
    tap: bool,
    /// Our address (default: 10.0.0.2/24 on --shm, 10.77.0.2/24 on --tap).
    #[arg(long)]
    ip: Option<String>,
    /// With --tap: the address of the Linux side of the TAP.
    #[arg(long, default_value = "10.77.0.1/24")]
    linux_ip: String,
    /// UDP and TCP clients reach the service over IPv4 and IPv6.
    #[command(flatten)]
    ipv6: crate::host_ipv6::Ipv6Flags,
    /// With --tap: prefix of the namespace's name.
    #[arg(long, default_value = "lr-spn")]
    ns_prefix: String,
    /// With --tap: run this shell command in the namespace while serving, then stop and exit
    /// with its status.
    #[arg(long, requires = "tap")]
    run: Option<String>,
    /// With --tap: impair everything the service sends, "LOSS,REORDER,DUP,DELAY_US" as in
    /// `linerate tap --impair` (seeded), e.g. to see UDP clients resend.
    #[arg(long, requires = "tap", value_name = "LOSS,REORDER,DUP,DELAY_US", value_parser = crate::commands::tap::parse_impairment)]
    impair: Option<link::impair::Impairment>,
    /// IP MTU of the link (default: 1500; the interface's on --link and --af-packet).
    #[arg(long, value_parser = crate::flag_values::parse_mtu)]
    mtu: Option<usize>,
    /// Transports, comma-separated (UDP and TCP share --port).
    #[arg(long, value_delimiter = ',', default_value = "udp", value_parser = ["udp", "tcp", "raw"])]
    transport: Vec<String>,
    /// UDP or TCP port.
    #[arg(long, default_value_t = 5005)]
    port: u16,
    /// Evaluator worker threads besides the polling thread, which evaluates its share too
    /// (requests go round robin over them; 0: the polling thread evaluates everything; auto:
    /// one evaluator per CPU this process may use, i.e. CPUs - 1 workers).
    #[arg(long, default_value = "auto", value_parser = parse_workers)]
    workers: usize,
    /// Busy-poll instead of sleeping on the link when idle.
    #[arg(long)]
    busy: bool,
    /// Stop after this long even if the link stays open (a duration: 10m, 1h; a bare number
    /// is seconds).
    #[arg(value_name = "DURATION", long = "limit", alias = "limit-secs", default_value = "1h", value_parser = crate::duration::parse_duration)]
    limit_secs: Duration,
    /// CPU to pin the polling thread to.
    #[arg(long)]
    cpu: Option<usize>,
    /// Die with the parent process (set by `linerate spn bench`).
    #[arg(long, hide = true)]
    child: bool,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// `--workers`: a number, or `auto` for one per CPU this process may use.
fn parse_workers(s: &str) -> Result<usize, String> {
    if s == "auto" {
        return Ok(std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1));
    }
    s.parse().map_err(|_| format!("{s:?} is not a number of workers or auto"))
}

/// What `serve` prints as its last line (JSON) when it stops.
#[derive(serde::Serialize, serde::Deserialize, Default, Clone)]
pub(crate) struct ServeReport {
    /// The service's counters by name (summed over its transports).
    pub counters: std::collections::BTreeMap<String, u64>,
    /// The stack's drop counters (non-zero ones).
    pub drops: std::collections::BTreeMap<String, u64>,
    /// Share of wall time the polling thread spent evaluating.
    pub eval_share: f64,
    /// Share of wall time the polling thread was on a CPU at all.
    pub cpu_share: f64,
    /// Evaluator worker threads besides the polling thread (which evaluates its share too).
    #[serde(default)]
    pub workers: usize,
    /// Vectors answered per second of the run, from the first request to the last answer.
    #[serde(default)]
    pub vectors_per_s: f64,
    /// Service latency percentiles in seconds (request taken in to answer handed to the
    /// stack): 50th, 99th and the largest.
    #[serde(default)]
    pub latency_p50_s: f64,
    /// See `latency_p50_s`.
    #[serde(default)]
    pub latency_p99_s: f64,
    /// See `latency_p50_s`.
    #[serde(default)]
    pub latency_max_s: f64,
}

/// Run `linerate spn serve`.
pub fn run(a: ServeArgs) -> Result<ExitCode, String> {
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    if a.child {
        die_with_parent();
    }
    match a.cpu {
        Some(cpu) => pin_cpu(cpu),
        // On a TAP, stay on one CPU: frames written from a migrating thread can reach Linux
        // out of order (see `linerate tap`).
        None if a.tap => {
            // SAFETY: sched_getcpu has no preconditions.
            let cpu = unsafe { libc::sched_getcpu() };
            if cpu >= 0 {
                pin_cpu(cpu as usize);
            }
        }
        None => {}
    }
    install_stop_handler();
    let limit = check_secs(a.limit_secs)?;
    let model = CompiledSpn::new(a.model.load()?).map_err(msg)?;
    let default_ip = if a.tap { "10.77.0.2/24" } else { "10.0.0.2/24" };
    let cfg = Config::parse_host(a.ip.as_deref().unwrap_or(default_ip)).map_err(msg)?;
    let (cfg, linux6) = a.ipv6.apply(cfg, a.tap)?;
    let addr6 = cfg.ipv6.addrs.first().map(|c| c.addr);
    let spec = match (&a.link, &a.af_packet) {
        (Some(spec), _) => Some(spec.clone()),
        (None, Some(ifname)) => Some(link::spec::LinkSpec::AfPacket(ifname.clone())),
        (None, None) => None,
    };
    match (&a.shm, spec) {
        (Some(name), _) => {
            let link = ShmLink::open(name, Duration::from_secs(5)).map_err(msg)?;
            let cfg = crate::link_stack::fit_config(cfg, link.max_frame() - 18, None);
            let mut stack = Stack::new(cfg, link).map_err(msg)?;
            crate::host_ipv6::settle(&mut stack)?;
            let services = bind(&mut stack, &a, &model)?;
            say_ready(None)?;
            serve_until_done(&mut stack, services, &a, limit, None).map(|_| ExitCode::SUCCESS)
        }
        (None, Some(spec)) => {
            let host = cfg.ip;
            let (mut stack, place) = crate::link_stack::open_one(&spec, &cfg, a.mtu)?.stack(cfg)?;
            crate::host_ipv6::settle(&mut stack)?;
            let services = bind(&mut stack, &a, &model)?;
            eprintln!(
                "SPN service ({} inputs) on {host} port {} ({}), on {place} ({}).",
                model.spn().num_vars(),
                a.port,
                a.transport.join(", "),
                stack.mac()
            );
            say_ready(None)?;
            serve_until_done(&mut stack, services, &a, limit, None).map(|_| ExitCode::SUCCESS)
        }
        (None, None) => {
            let host = cfg.ip;
            let cfg = crate::link_stack::fit_config(cfg, a.mtu.unwrap_or(1500), None);
            cfg.validate().map_err(msg)?;
            let mut setup = TapSetup::create_impaired(&a.ns_prefix, &a.linux_ip, cfg, None, a.impair).map_err(msg)?;
            if let Some(linux6) = &linux6 {
                crate::commands::tap::add_linux_ipv6(&mut setup, linux6)?;
            }
            let services = bind(&mut setup.stack, &a, &model)?;
            let ns = setup.ns.name().to_string();
            eprintln!(
                "SPN service ({} inputs) on {host} port {} ({}), on TAP {} in namespace {ns}; Linux side {}.",
                model.spn().num_vars(),
                a.port,
                a.transport.join(", "),
                testbed::tap::TAP_IFNAME,
                setup.linux_ip
            );
            eprintln!("  try: ip netns exec {ns} linerate spn query --server {host}:{} --input FILE.csv", a.port);
            if let Some(addr6) = addr6 {
                eprintln!(
                    "       ip netns exec {ns} linerate spn query --server [{addr6}]:{} --input FILE.csv",
                    a.port
                );
            }
            let child = a
                .run
                .as_deref()
                .map(|cmd| crate::runloop::spawn_run(Some(&setup.ns), cmd, Stdio::inherit()))
                .transpose()?;
            say_ready(Some(&ns))?;
            let code = serve_until_done(&mut setup.stack, services, &a, limit, child)?;
            Ok(code.map_or(ExitCode::SUCCESS, |c| ExitCode::from(c.clamp(0, 255) as u8)))
        }
    }
}

/// Tell the parent process we serve: the namespace (on a TAP), then [`READY`].
fn say_ready(ns: Option<&str>) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    if let Some(ns) = ns {
        writeln!(out, "namespace {ns}").map_err(msg)?;
    }
    writeln!(out, "{READY}").map_err(msg)?;
    out.flush().map_err(msg)
}

/// The services `a` asks for, on `stack`.
fn bind<L: Link>(stack: &mut Stack<L>, a: &ServeArgs, model: &Arc<CompiledSpn>) -> Result<Vec<SpnService>, String> {
    let scfg = SpnServiceConfig { workers: a.workers, max_in_flight: 64.max(a.workers * 8), ..Default::default() };
    let mut transports = a.transport.clone();
    transports.dedup();
    transports
        .iter()
        .map(|t| {
            let s = match t.as_str() {
                "raw" => SpnService::bind_raw(stack, SPN_ETHERTYPE, Arc::clone(model), scfg.clone()),
                "tcp" => SpnService::bind_tcp(stack, a.port, Arc::clone(model), scfg.clone()),
                _ => SpnService::bind_udp(stack, a.port, Arc::clone(model), scfg.clone()),
            };
            s.map_err(|e| format!("cannot serve over {t}: {e}"))
        })
        .collect()
}

/// Serve until the link closes, the time limit, a stop signal, or the end of the `--run`
/// command (whose exit code is returned); then print the [`ServeReport`].
fn serve_until_done<L: Link>(
    stack: &mut Stack<L>,
    mut services: Vec<SpnService>,
    a: &ServeArgs,
    limit: Duration,
    mut child: Option<Child>,
) -> Result<Option<i32>, String> {
    let mut stats = crate::statsfile::StatsPublisher::new(&format!("spn-serve-{}", std::process::id()), "spn serve")
        .map_err(|e| format!("stats file: {e}"))?;
    let start = Instant::now();
    let cpu = CpuMeter::start();
    let deadline = start + limit;
    let mut idler = Idler::new();
    let mut last_check = start;
    let mut code = None;
    // When the first request came and the last answer left (for the rate).
    let (mut first, mut last, mut answered) = (None, start, 0u64);
    let outcome = loop {
        let now = Instant::now();
        if now >= deadline || stop_requested() {
            break Ok(());
        }
        if child.is_some() && now - last_check >= Duration::from_millis(5) {
            last_check = now;
            if let Some(status) = child.as_mut().and_then(|c| c.try_wait().transpose()) {
                let status = status.map_err(msg)?;
                code = Some(status.code().unwrap_or(1));
                child = None;
                break Ok(());
            }
        }
        let r = stack.poll(now).map_err(NetError::from).and_then(|n| {
            let mut work = n;
            for s in services.iter_mut() {
                work += s.serve(stack)?;
            }
            Ok(stack.flush().map(|_| work)?)
        });
        match r {
            Err(NetError::Link(LinkError::Closed)) => break Ok(()),
            Err(e) => break Err(msg(e)),
            Ok(work) => {
                let now_answered: u64 = services.iter().map(|s| s.counters().responses).sum();
                if now_answered > answered {
                    answered = now_answered;
                    last = Instant::now();
                }
                if first.is_none() && services.iter().any(|s| s.counters().records > 0) {
                    first = Some(now);
                }
                // Requests on the workers: their answers do not wake a sleep on the link,
                // so do not sleep while any is out; yield the CPU to the workers instead.
                let waiting = services.iter().any(|s| s.in_flight() > 0);
                if waiting && work == 0 {
                    std::thread::yield_now();
                } else if !a.busy {
                    idler.after_poll(stack.link(), work > 0);
                }
            }
        }
        stats.publish_every(|| {
            let mut all = std::collections::BTreeMap::new();
            for c in services.iter().map(SpnService::counters) {
                add_counters(&mut all, &c);
            }
            all.into_iter().collect::<Vec<_>>()
        });
    };
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    let wall = (Instant::now() - start).as_nanos().max(1) as f64;
    let mut counters = std::collections::BTreeMap::new();
    let mut eval_ns = 0;
    for c in services.iter().map(SpnService::counters) {
        eval_ns += c.eval_ns;
        add_counters(&mut counters, &c);
    }
    let mut latency = apps::spn_service::LatencyHistogram::default();
    for s in &services {
        latency.merge(s.latency());
    }
    let busy = first.map_or(0.0, |f| (last - f).as_secs_f64());
    let vectors = counters.get("vectors").copied().unwrap_or(0);
    let pct = |p: f64| if latency.count() > 0 { latency.percentile_ns(p) as f64 / 1e9 } else { 0.0 };
    let report = ServeReport {
        workers: a.workers,
        vectors_per_s: if busy > 0.0 { vectors as f64 / busy } else { 0.0 },
        latency_p50_s: pct(50.0),
        latency_p99_s: pct(99.0),
        latency_max_s: latency.min_max_ns().1 as f64 / 1e9,
        counters,
        drops: stack
            .counters()
            .iter()
            .filter(|(k, v)| k.contains("drop_") && *v > 0)
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        cpu_share: cpu.share(),
        eval_share: eval_ns as f64 / wall / (a.workers + 1) as f64,
    };
    eprintln!(
        "served {vectors} vectors in {} answers: {:.0} vectors/s from the first request to the last answer; \
         service latency p50 {:.1} us, p99 {:.1} us ({} workers)",
        latency.count(),
        report.vectors_per_s,
        report.latency_p50_s * 1e6,
        report.latency_p99_s * 1e6,
        a.workers
    );
    bench::outln!("{}", serde_json::to_string(&report).unwrap_or_default());
    outcome.map(|_| code)
}

/// Add `c` to the counters by name.
fn add_counters(into: &mut std::collections::BTreeMap<String, u64>, c: &SpnCounters) {
    for (k, v) in c.fields() {
        *into.entry(k.to_string()).or_insert(0) += v;
    }
}
