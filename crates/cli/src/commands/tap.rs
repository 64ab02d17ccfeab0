//! `linerate tap`: a linerate host on a TAP device in a namespace of its own, so that ordinary
//! Linux tools (ping, arping, nc, socat, curl, tcpdump) in that namespace talk to it: UDP and
//! TCP echo, a TCP discard sink, an HTTP responder, and a TCP client that sends a file.

use crate::duration::parse_duration;
use crate::output::{Cell, Table};
use crate::runloop::{install_stop_handler, now, spawn_run, stop_requested, Idler};
use crate::services::{ServiceArgs, TcpServices};
use crate::statsfile::StatsPublisher;
use apps::{TcpSource, UdpEcho};
use link::capture::Format;
use link::impair::Impairment;
use link::Link;
use net::{Config, Stack};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ExitCode, Stdio};
use std::time::Duration;
use testbed::linux_impair::{LinuxImpair, LinuxImpairSpec};
use testbed::TapSetup;

/// Options of `linerate tap`.
#[derive(clap::Args)]
pub struct TapArgs {
    /// Address of the Linux side of the TAP (in the new namespace).
    #[arg(long, default_value = "10.77.0.1/24")]
    linux_ip: String,
    /// Address of the linerate host.
    #[arg(long, default_value = "10.77.0.2/24")]
    host_ip: String,
    /// IPv6 address of the Linux side of the TAP ("none": no IPv6).
    #[arg(long, default_value = "fd77::1/64", value_name = "ADDR/LEN")]
    linux_ip6: String,
    /// IPv6 address of the linerate host, beside the link-local address of its MAC ("none":
    /// the host speaks IPv4 only).
    #[arg(long, default_value = "fd77::2/64", value_name = "ADDR/LEN")]
    host_ip6: String,
    /// Default gateway of the linerate host: replies to off-link sources go there (without
    /// one, packets from off-link sources are dropped and counted as `rx_drop_ipv4_no_route`).
    #[arg(long, value_name = "IP")]
    gateway: Option<std::net::Ipv4Addr>,
    /// IP MTU of the TAP link.
    #[arg(long, default_value_t = 1500, value_parser = crate::flag_values::parse_mtu)]
    mtu: usize,
    /// TCP sessions the host can hold at once.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_sessions: u32,
    /// The memory budget in MiB of TCP and UDP together (every connection's send and receive
    /// buffers and every UDP receive queue):
    /// under pressure from a quarter of it buffers stop growing and new ones get 16 KiB; at the
    /// limit sends wait and UDP datagrams are dropped. Its use is `mem_bytes` in `linerate stats`.
    #[arg(long, value_name = "MIB", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    tcp_mem: u32,
    /// The services' ports.
    #[command(flatten)]
    services: ServiceArgs,
    /// Connect to HOST:PORT (retrying while refused) and send --send-file, then close.
    #[arg(long, requires = "send_file", value_name = "HOST:PORT")]
    tcp_send: Option<SocketAddr>,
    /// The file --tcp-send sends.
    #[arg(long, requires = "tcp_send", value_name = "FILE")]
    send_file: Option<PathBuf>,
    /// How long --tcp-send keeps retrying a refused connection (a duration: 5s, 500ms, 2m; a
    /// bare number is seconds).
    #[arg(value_name = "DURATION", long, default_value = "10s", value_parser = parse_duration)]
    send_retry: Duration,
    /// Record everything the linerate host sends and receives in this capture file, with
    /// wall-clock timestamps (`-` for standard output; the report then goes to stderr).
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Format of --pcap: pcap or pcapng (default: pcapng if the file name ends in .pcapng).
    #[arg(long, value_parser = ["pcap", "pcapng"], requires = "pcap")]
    pcap_format: Option<String>,
    /// Impair everything the linerate host sends: "loss,reorder,duplicate,delay_us" as
    /// probabilities and microseconds, e.g. "0.01,0.01,0.005,1000" (seeded, reproducible).
    #[arg(long, value_name = "LOSS,REORDER,DUP,DELAY_US", value_parser = parse_impairment)]
    impair: Option<Impairment>,
    /// Have the Linux kernel impair what Linux sends into the TAP, same format as --impair
    /// (netem if the kernel has it, else nftables on the egress hook and an NFQUEUE delayer);
    /// the mechanism and the counts of dropped, duplicated and delayed packets go to stderr.
    #[arg(long, value_name = "LOSS,REORDER,DUP,DELAY_US", value_parser = parse_impairment)]
    linux_impair: Option<Impairment>,
    /// Stop after this long (a duration: 5s, 500ms, 2m; a bare number is seconds; default:
    /// run until Ctrl-C, or until --run finishes, or until --tcp-send finishes when there is
    /// no --run).
    #[arg(value_name = "DURATION", short = 't', long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Run this shell command inside the namespace while the host serves, then exit with its
    /// status (a --tcp-send still closing then gets a few more seconds to finish). Its
    /// standard output goes to our stderr with --json (or a capture on standard output).
    #[arg(long)]
    run: Option<String>,
    /// Remove the namespaces (and their TAP devices) of linerate runs that were killed, and
    /// their stale entries in the run directory, then exit. Only namespaces named by linerate
    /// (`lr-…-PID-N`) whose owning process is gone are removed. Only --json combines with it.
    #[arg(long, conflicts_with_all = ["run", "tcp_send", "duration", "pcap", "impair", "linux_impair"])]
    cleanup: bool,
    /// Prefix of the namespace's name.
    #[arg(long, default_value = "lr-tap")]
    ns_prefix: String,
    /// Print the final counters as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// Where the --run command's output goes: standard output, or stderr when standard output
/// carries data (a capture, or JSON).
fn child_stdout(stdout_is_data: bool) -> Result<Stdio, String> {
    if !stdout_is_data {
        return Ok(Stdio::inherit());
    }
    use std::os::fd::AsFd;
    let fd = std::io::stderr().as_fd().try_clone_to_owned().map_err(|e| format!("cannot duplicate stderr: {e}"))?;
    Ok(Stdio::from(fd))
}

/// How long a --tcp-send may still take to finish after the --run command has ended (more
/// than the sender's own wait for the final acknowledgement).
const SEND_LINGER: Duration = Duration::from_secs(12);

/// Run `linerate tap`.
pub fn run(a: TapArgs) -> Result<ExitCode, String> {
    if a.cleanup {
        return run_cleanup(a.json);
    }
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    let mut cfg = Config::parse_host(&a.host_ip).map_err(|e| e.to_string())?.mtu(a.mtu);
    let linux = Config::parse_host(&a.linux_ip).map_err(|e| format!("--linux-ip: {e}"))?;
    if linux.ip == cfg.ip {
        return Err(format!(
            "--host-ip {} is the Linux side's address (--linux-ip): the two ends of the TAP need different addresses",
            cfg.ip
        ));
    }
    if !linux.on_link(cfg.ip) {
        return Err(format!("--host-ip {} is not in the Linux side's subnet {}", cfg.ip, a.linux_ip));
    }
    cfg.gateway = a.gateway;
    let ipv6 = ipv6_pair(&a.host_ip6, &a.linux_ip6)?;
    if let Some((host6, _)) = &ipv6 {
        cfg = cfg.ipv6_addr(host6).map_err(|e| format!("--host-ip6: {e}"))?;
    }
    cfg.tcp.max_sessions = a.max_sessions as usize;
    cfg.tcp.syn_backlog = cfg.tcp.syn_backlog.max(a.max_sessions as usize / 4);
    cfg.tcp.mem_limit = (a.tcp_mem as usize) << 20;
    cfg.tcp.mem_pressure = cfg.tcp.mem_limit / 4;
    cfg.validate().map_err(|e| e.to_string())?;
    let host_ip = cfg.ip;
    install_stop_handler();
    // Stay on one CPU: frames written to a TAP enter the kernel through the writing CPU's
    // backlog, so a thread that migrates between writes can have its frames delivered out of
    // order (seen as reordered UDP datagrams at the Linux peer).
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu >= 0 {
        crate::bench_common::pin_cpu(cpu as usize);
    }
    let pcap_to_stdout = a.pcap.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let pcap_format = a.pcap_format.as_deref().and_then(Format::from_name);
    let pcap = a.pcap.as_deref().map(|p| (p, pcap_format.unwrap_or_else(|| Format::for_path(p))));
    let mut setup =
        TapSetup::create_impaired(&a.ns_prefix, &a.linux_ip, cfg, pcap, a.impair).map_err(|e| e.to_string())?;
    let ns = setup.ns.name().to_string();
    if let Some((_, linux6)) = &ipv6 {
        add_linux_ipv6(&mut setup, linux6)?;
    }
    tracing::info!(namespace = %ns, host = %host_ip, mtu = a.mtu, "TAP host up");
    let linux_impair = impair_linux_side(&setup, a.linux_impair.as_ref())?;
    let mut echo = match a.services.echo_port {
        0 => None,
        p => Some(UdpEcho::bind(&mut setup.stack, p).map_err(|e| e.to_string())?),
    };
    let ports = a.services.ports(0);
    let send = a.tcp_send.zip(a.send_file.clone()).map(|(to, file)| (to, file, a.send_retry));
    let mut tcp = TcpServices::start(&mut setup.stack, &ports, send)?;
    eprintln!(
        "linerate host {host_ip} ({}) on TAP {} in namespace {ns}; Linux side {}.",
        setup.stack.mac(),
        testbed::tap::TAP_IFNAME,
        setup.linux_ip
    );
    eprintln!("  try: ip netns exec {ns} ping {host_ip}");
    if let Some((host6, _)) = &ipv6 {
        let addr = host6.split('/').next().unwrap_or(host6);
        eprintln!("       ip netns exec {ns} ping -6 {addr}");
    }
    if a.services.echo_port != 0 {
        let p = a.services.echo_port;
        eprintln!("  UDP echo on port {p}: ip netns exec {ns} socat - UDP:{host_ip}:{p}");
    }
    tcp.print_hints(&ns, host_ip);
    let mut publisher = StatsPublisher::new(&format!("tap-{ns}"), "tap")
        .and_then(|p| p.with_namespace(&ns))
        .map_err(|e| format!("stats file: {e}"))?;
    let mut child: Option<Child> = match &a.run {
        Some(cmd) => Some(spawn_run(Some(&setup.ns), cmd, child_stdout(pcap_to_stdout || a.json)?)?),
        None => None,
    };
    let start = now();
    let deadline = a.duration.map(|d| start + d);
    let mut idler = Idler::new();
    let mut last_child_check = start;
    let mut run_ended = None;
    let mut exit = ExitCode::SUCCESS;
    loop {
        let t = now();
        let mut worked = setup.stack.poll(t).map_err(|e| e.to_string())? > 0;
        if let Some(e) = echo.as_mut() {
            worked |= e.serve(&mut setup.stack).map_err(|e| e.to_string())? > 0;
        }
        worked |= tcp.serve(&mut setup.stack).map_err(|e| e.to_string())? > 0;
        setup.stack.flush().map_err(|e| e.to_string())?;
        idler.after_poll(setup.stack.link(), worked);
        publisher.publish_every(|| {
            let mut c: Vec<(&str, u64)> = setup.stack.counters().iter().collect();
            c.extend(memory_gauges(&setup.stack));
            c
        });
        if stop_requested() || deadline.is_some_and(|d| t >= d) {
            break;
        }
        if let Some(s) = tcp.send.as_ref() {
            // A failed send ends the run; a finished one too unless --run or --duration set the end.
            if s.error().is_some() || (s.is_finished() && child.is_none() && deadline.is_none()) {
                break;
            }
        }
        if let Some(at) = run_ended {
            // The --run command is done: stop, but give a --tcp-send still closing (its last
            // acknowledgements or the peer's FIN may be lost or late) a bounded while to finish.
            if tcp.send.as_ref().is_none_or(TcpSource::is_finished) || t - at >= SEND_LINGER {
                break;
            }
        }
        if t - last_child_check >= Duration::from_millis(5) {
            last_child_check = t;
            if let Some(c) = child.as_mut() {
                if let Some(status) = c.try_wait().map_err(|e| e.to_string())? {
                    let code = status.code().unwrap_or(1);
                    if code != 0 {
                        eprintln!("linerate: the command given with --run exited with status {code}");
                    }
                    exit = ExitCode::from(code.clamp(0, 255) as u8);
                    child = None;
                    run_ended = Some(t);
                }
            }
        }
    }
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    let mut t = Table::new(&format!("linerate host {host_ip}: counters"), &["counter", "value"]);
    let mut row = |name: &str, v: u64| t.row(vec![Cell::from(name), Cell::count_u64(v)]);
    for (name, v) in setup.stack.counters().iter().filter(|(_, v)| *v > 0) {
        row(name, v);
    }
    if let Some(e) = &echo {
        row("echo_datagrams", e.echoed);
        row("echo_bytes", e.bytes);
    }
    for (name, v) in tcp.figures() {
        row(&name, v);
    }
    for (name, v) in memory_gauges(&setup.stack) {
        row(name, v);
    }
    t.summary("tcp_sessions_at_exit", Cell::count(setup.stack.tcp_sessions() as f64));
    let accounting = setup.stack.counters().rx_accounting();
    t.summary("rx_unaccounted", Cell::count(accounting.unaccounted() as f64));
    if let Some(g) = &linux_impair {
        report_linux_impairment(g, &mut t);
    }
    drop(linux_impair);
    if pcap_to_stdout {
        t.eprint(a.json);
    } else {
        t.print(a.json);
    }
    // Every received frame has exactly one verdict; a run where that failed is not a success.
    eprintln!("linerate: receive accounting: {accounting}");
    if !accounting.holds() {
        eprintln!("linerate: {}", accounting.check().unwrap_err());
        return Ok(ExitCode::FAILURE);
    }
    if let Some(e) = tcp.send.as_ref().and_then(TcpSource::error) {
        eprintln!("linerate: --tcp-send failed: {e}");
        return Ok(ExitCode::FAILURE);
    }
    if tcp.send.as_ref().is_some_and(|s| !s.is_finished()) {
        eprintln!("linerate: --tcp-send did not finish before the host stopped");
        return Ok(ExitCode::FAILURE);
    }
    Ok(exit)
}

/// The host's and the Linux side's IPv6 addresses, or None when either flag says "none".
pub(crate) fn ipv6_pair(host: &str, linux: &str) -> Result<Option<(String, String)>, String> {
    if host == "none" || linux == "none" {
        return Ok(None);
    }
    let h = net::Ipv6Cidr::parse(host).map_err(|e| format!("--host-ip6: {e}"))?;
    let l = net::Ipv6Cidr::parse(linux).map_err(|e| format!("--linux-ip6: {e}"))?;
    if h.addr == l.addr {
        return Err(format!("--host-ip6 {} is the Linux side's address (--linux-ip6)", h.addr));
    }
    if !l.contains(h.addr) {
        return Err(format!("--host-ip6 {} is not in the Linux side's prefix {l}", h.addr));
    }
    Ok(Some((h.to_string(), l.to_string())))
}

/// Give the TAP's Linux side `linux6` and wait out the host's duplicate address detection,
/// saying which of its addresses another node holds.
pub(crate) fn add_linux_ipv6(setup: &mut TapSetup, linux6: &str) -> Result<(), String> {
    let dups = setup.add_linux_ipv6(linux6).map_err(|e| e.to_string())?;
    crate::host_ipv6::say_duplicates(&dups);
    Ok(())
}

/// The memory budget shared by TCP and UDP and its use (`tcp_mem_limit_bytes` and
/// `tcp_mem_peak_bytes` are the shared budget's), and the UDP sockets bound, as (name, value)
/// beside the counters (gauges, not counts).
fn memory_gauges<L: Link>(stack: &Stack<L>) -> [(&'static str, u64); 7] {
    let m = stack.memory();
    [
        ("tcp_mem_bytes", m.tcp as u64),
        ("udp_mem_bytes", m.udp as u64),
        ("tcp_mem_peak_bytes", m.peak as u64),
        ("tcp_mem_limit_bytes", m.limit as u64),
        ("mem_bytes", m.used as u64),
        ("udp_sockets", m.udp_sockets as u64),
        ("udp_sockets_max", m.udp_max_sockets as u64),
    ]
}

/// `linerate tap --cleanup`: remove what killed runs left behind and say what.
fn run_cleanup(json: bool) -> Result<ExitCode, String> {
    let r = crate::cleanup::cleanup();
    let mut t = Table::new("linerate tap --cleanup", &["namespace"]);
    for ns in &r.removed {
        t.row(vec![Cell::from(ns.as_str())]);
    }
    t.summary("namespaces removed", Cell::count(r.removed.len() as f64));
    t.summary("stale entries removed", Cell::count(r.entries as f64));
    t.summary("failures", Cell::count(r.failed.len() as f64));
    t.print(json);
    for f in &r.failed {
        eprintln!("linerate: {f}");
    }
    Ok(if r.failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Apply `--linux-impair` to Linux's side of the TAP (in the namespace) and say how.
fn impair_linux_side(setup: &TapSetup, imp: Option<&Impairment>) -> Result<Option<LinuxImpair>, String> {
    let Some(imp) = imp else { return Ok(None) };
    let spec = LinuxImpairSpec::from_impairment(imp);
    let dev = testbed::tap::TAP_IFNAME;
    let g = LinuxImpair::apply(Some(&setup.ns), dev, &spec).map_err(|e| format!("--linux-impair: {e}"))?;
    eprintln!("Linux's side of {dev} impaired by the kernel with {}: {spec}", g.mechanism());
    Ok(Some(g))
}

/// Print what the Linux-side impairment did (stderr) and add it to the final table.
fn report_linux_impairment(g: &LinuxImpair, t: &mut Table) {
    match g.counters() {
        Ok(c) => {
            eprintln!("linux impairment ({}) on {}: {c}", g.mechanism(), g.device());
            for (name, v) in [("dropped", c.dropped), ("duplicated", c.duplicated), ("delayed", c.delayed)] {
                if let Some(v) = v {
                    t.row(vec![Cell::Text(format!("linux_impair_{name}")), Cell::count_u64(v)]);
                }
            }
        }
        Err(e) => eprintln!("linux impairment ({}) on {}: cannot read the counters: {e}", g.mechanism(), g.device()),
    }
}

/// Parse `--impair LOSS,REORDER,DUP,DELAY_US`.
pub(crate) fn parse_impairment(s: &str) -> Result<Impairment, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        return Err(format!("'{s}' is not LOSS,REORDER,DUP,DELAY_US (four comma-separated numbers)"));
    }
    let p = |i: usize, what: &str| -> Result<f64, String> {
        let v: f64 = parts[i].parse().map_err(|_| format!("{what} '{}' is not a number", parts[i]))?;
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("{what} {v} is not a probability in [0, 1]"));
        }
        Ok(v)
    };
    let delay: u64 =
        parts[3].parse().map_err(|_| format!("delay '{}' is not a whole number of microseconds", parts[3]))?;
    Ok(Impairment {
        loss: p(0, "loss")?,
        reorder: p(1, "reorder")?,
        duplicate: p(2, "duplicate")?,
        delay: std::time::Duration::from_micros(delay),
        seed: 1,
        ..Default::default()
    })
}
