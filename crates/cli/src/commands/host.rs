//! `linerate host`: a linerate host on any link (`--link shm:NAME | tap:IFNAME |
//! af_packet:IFACE | af_xdp:IFACE`), serving what `linerate tap` serves (UDP and TCP echo on
//! 7, HTTP on 80, a discard sink on 9) plus an iperf3 server on 5201. With `--queues N` on
//! AF_XDP, N stacks run, one per queue on its own thread and core, sharing nothing
//! (`net::shard` gives each the frames of the flows it owns).

use crate::duration::parse_duration;
use crate::output::{Cell, Table};
use crate::runloop::{install_stop_handler, now, stop_requested, Idler};
use crate::services::{ServiceArgs, ServicePorts, TcpServices};
use crate::statsfile::StatsPublisher;
use apps::UdpEcho;
use link::spec::{LinkSpec, OpenOptions};
use link::Link;
use net::shard::{shard_links, ShardLink};
use net::{Config, Stack};
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::time::Duration;

/// Options of `linerate host`.
#[derive(clap::Args)]
pub struct HostArgs {
    /// The link: shm:NAME, tap:IFNAME, af_packet:IFACE or af_xdp:IFACE. Run it in the
    /// interface's namespace (`ip netns exec NS linerate host ...`).
    #[arg(long, value_name = "SPEC")]
    link: LinkSpec,
    /// The host's address and prefix, e.g. 10.0.0.2/24.
    #[arg(long, value_name = "CIDR")]
    ip: String,
    /// An IPv6 address and prefix of the host, e.g. fd77::2/64 (repeatable; the host then also
    /// has the link-local address of its MAC). On af_xdp the steering program takes IPv6 to
    /// these addresses and their solicited-node groups; router advertisements stay the
    /// kernel's.
    #[arg(long, value_name = "CIDR")]
    ip6: Vec<String>,
    /// Default gateway for off-link destinations.
    #[arg(long, value_name = "IP")]
    gateway: Option<Ipv4Addr>,
    /// Queues of the interface to open, one stack (thread, core) each (af_xdp only).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    queues: u32,
    /// IP MTU (default: the interface's; 1500 for shm and tap).
    #[arg(long)]
    mtu: Option<usize>,
    /// The services' ports.
    #[command(flatten)]
    services: ServiceArgs,
    /// TCP port of the iperf3 server (0: none); with several queues it runs on shard 0 and
    /// the other shards hand its frames there.
    #[arg(long, default_value_t = 5201)]
    iperf3: u16,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(value_name = "DURATION", short = 't', long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Print the final counters as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// What one shard counted, for the final table.
struct ShardReport {
    counters: Vec<(String, u64)>,
}

/// Run `linerate host`.
pub fn run(a: HostArgs) -> Result<ExitCode, String> {
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    let mut cfg = Config::parse_host(&a.ip).map_err(|e| e.to_string())?;
    cfg.gateway = a.gateway;
    for c in &a.ip6 {
        cfg = cfg.ipv6_addr(c).map_err(|e| format!("--ip6: {e}"))?;
    }
    let opts = OpenOptions {
        mtu: a.mtu,
        queues: a.queues,
        addresses: vec![cfg.ip],
        addresses6: cfg.ipv6.addrs.iter().map(|c| c.addr).collect(),
        ..OpenOptions::default()
    };
    let opened = a.link.open(&opts).map_err(|e| format!("{}: {e}", a.link))?;
    cfg = crate::link_stack::fit_config(cfg, opened.mtu, opened.mac);
    cfg.validate().map_err(|e| e.to_string())?;
    crate::link_stack::warn_about(&a.link, &opened);
    install_stop_handler();
    let ports = a.services.ports(a.iperf3);
    let echo_port = a.services.echo_port;
    let deadline = a.duration.map(|d| now() + d);
    let n = opened.links.len();
    eprintln!(
        "linerate host {} ({}) on {} ({}, MTU {}, {n} stack{}); Ctrl-C stops it.",
        cfg.ip,
        cfg.mac,
        a.link,
        opened.mode,
        opened.mtu,
        if n == 1 { "" } else { "s" }
    );
    let reports: Vec<Result<ShardReport, String>> = if n == 1 {
        let link = opened.links.into_iter().next().expect("one link");
        let stack = Stack::new(cfg.clone(), link).map_err(|e| e.to_string())?;
        vec![serve(stack, ports, echo_port, deadline, &instance_name(None))]
    } else {
        let mut shards = shard_links(opened.links);
        if a.iperf3 != 0 {
            for s in &mut shards {
                s.pin_port(a.iperf3, 0);
            }
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = shards
                .into_iter()
                .map(|link: ShardLink| {
                    let q = link.shard();
                    let mut c = cfg.clone();
                    c.tcp.shard = (q, n as u16);
                    let ports = ServicePorts { iperf3: if q == 0 { ports.iperf3 } else { 0 }, ..ports };
                    scope.spawn(move || {
                        pin_to_shard_cpu(q);
                        let stack = Stack::new(c, link).map_err(|e| e.to_string())?;
                        serve(stack, ports, echo_port, deadline, &instance_name(Some(q)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a shard's thread panicked".into()))).collect()
        })
    };
    print_reports(&cfg, reports, a.json)
}

/// The name of this process's entry in `linerate stats` (per shard with several).
fn instance_name(shard: Option<u16>) -> String {
    match shard {
        None => format!("host-{}", std::process::id()),
        Some(q) => format!("host-{}.shard{q}", std::process::id()),
    }
}

/// Pin shard `q`'s thread to a CPU of its own (the q-th this process may use).
fn pin_to_shard_cpu(q: u16) {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for this thread.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return;
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect();
    if !cpus.is_empty() {
        crate::bench_common::pin_cpu(cpus[q as usize % cpus.len()]);
    }
}

/// Serve one stack until Ctrl-C or the deadline; its counters at the end.
fn serve<L: Link>(
    mut stack: Stack<L>,
    ports: ServicePorts,
    echo_port: u16,
    deadline: Option<link::Instant>,
    name: &str,
) -> Result<ShardReport, String> {
    let mut echo = match echo_port {
        0 => None,
        p => Some(UdpEcho::bind(&mut stack, p).map_err(|e| format!("UDP echo on port {p}: {e}"))?),
    };
    let mut tcp = TcpServices::start(&mut stack, &ports, None)?;
    let mut publisher = StatsPublisher::new(name, "host").map_err(|e| format!("stats file: {e}"))?;
    let mut idler = Idler::new();
    loop {
        let t = now();
        let mut worked = stack.poll(t).map_err(|e| e.to_string())? > 0;
        if let Some(e) = echo.as_mut() {
            worked |= e.serve(&mut stack).map_err(|e| e.to_string())? > 0;
        }
        worked |= tcp.serve(&mut stack).map_err(|e| e.to_string())? > 0;
        stack.flush().map_err(|e| e.to_string())?;
        idler.after_poll(stack.link(), worked);
        // The stack's counters and the services' figures (iperf3 tests done, …).
        publisher.publish_every(|| {
            let mut c: Vec<(String, u64)> = stack.counters().iter().map(|(k, v)| (k.to_string(), v)).collect();
            c.extend(tcp.figures());
            c
        });
        if stop_requested() || deadline.is_some_and(|d| t >= d) {
            break;
        }
    }
    let mut counters: Vec<(String, u64)> = stack.counters().iter().map(|(k, v)| (k.to_string(), v)).collect();
    if let Some(e) = &echo {
        counters.push(("echo_datagrams".into(), e.echoed));
        counters.push(("echo_bytes".into(), e.bytes));
    }
    counters.extend(tcp.figures());
    let l = stack.link().stats();
    counters.extend(l.fields().iter().map(|(k, v)| (format!("link_{k}"), *v)));
    counters.push(("tcp_sessions_at_exit".into(), stack.tcp_sessions() as u64));
    Ok(ShardReport { counters })
}

/// The final table: every counter summed over the shards, and each shard's beside it.
fn print_reports(cfg: &Config, reports: Vec<Result<ShardReport, String>>, json: bool) -> Result<ExitCode, String> {
    let mut ok = Vec::new();
    for (q, r) in reports.into_iter().enumerate() {
        ok.push(r.map_err(|e| format!("stack {q}: {e}"))?);
    }
    let mut head = vec!["counter".to_string(), "total".to_string()];
    if ok.len() > 1 {
        head.extend((0..ok.len()).map(|q| format!("shard_{q}")));
    }
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&format!("linerate host {}: counters", cfg.ip), &head);
    // Every name any shard reports, in first-seen order (shards run different services: the
    // iperf3 server is on shard 0 only), each shard's value looked up by name.
    let mut names: Vec<&str> = Vec::new();
    for r in &ok {
        for (name, _) in &r.counters {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    for name in names {
        let value = |r: &ShardReport| r.counters.iter().find(|c| c.0 == name).map_or(0, |c| c.1);
        let each: Vec<u64> = ok.iter().map(value).collect();
        let total: u64 = each.iter().sum();
        if total == 0 {
            continue;
        }
        let mut row = vec![Cell::from(name), Cell::count_u64(total)];
        if ok.len() > 1 {
            row.extend(each.iter().map(|&v| Cell::count_u64(v)));
        }
        t.row(row);
    }
    t.print(json);
    Ok(ExitCode::SUCCESS)
}
