//! `linerate iperf3`: iperf3's protocol on a linerate host, on a TAP device in a namespace of
//! its own, so that stock iperf3 in that namespace measures it. `-s` serves stock `iperf3 -c`
//! clients; `-c ADDR` runs a test against a stock `iperf3 -s` on the Linux side. The protocol
//! itself is [`apps::iperf3`]. The server exits with the --run command's status if that
//! failed, else with failure if any test failed (or --one-off saw none).

mod client;
mod serve;

use crate::runloop::install_stop_handler;
use apps::iperf3::{Params, Protocol, DEFAULT_PORT};
use link::spec::LinkSpec;
use link::Link;
use net::Config;
use net::Stack;
use std::net::IpAddr;
use std::process::{Child, ExitCode, Stdio};
use std::time::Duration;
use testbed::netns::Netns;
use testbed::TapSetup;

/// Options of `linerate iperf3`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("role").required(true).args(["server", "client"])))]
pub struct Iperf3Args {
    /// Serve stock `iperf3 -c` clients.
    #[arg(short = 's', long)]
    server: bool,
    /// Run a test against the stock `iperf3 -s` at ADDR (on the Linux side; IPv4 or IPv6).
    #[arg(short = 'c', long, value_name = "ADDR")]
    client: Option<IpAddr>,
    /// Port of the iperf3 server.
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Run on this link instead of a TAP of our own: af_xdp:IFACE, af_packet:IFACE, tap:IFNAME
    /// or shm:NAME, in the namespace this command runs in (--host-ip is then the host's
    /// address there; --run runs in this namespace).
    #[arg(long, value_name = "SPEC")]
    link: Option<LinkSpec>,
    /// Address of the Linux side of the TAP (in the new namespace).
    #[arg(long, default_value = "10.77.0.1/24")]
    linux_ip: String,
    /// Address of the linerate host.
    #[arg(long, default_value = "10.77.0.2/24")]
    host_ip: String,
    /// IPv6 address of the Linux side of our TAP ("none": no IPv6).
    #[arg(long, default_value = "fd77::1/64", value_name = "ADDR/LEN")]
    linux_ip6: String,
    /// IPv6 address of the linerate host on our TAP, beside the link-local address of its MAC
    /// ("none": IPv4 only).
    #[arg(long, default_value = "fd77::2/64", value_name = "ADDR/LEN")]
    host_ip6: String,
    /// IP MTU of the link (default: 1500 on our TAP, the interface's on --link); the MSS
    /// fills it (MTU - 40).
    #[arg(long, value_parser = crate::flag_values::parse_mtu)]
    mtu: Option<usize>,
    /// Prefix of the namespace's name.
    #[arg(long, default_value = "lr-iperf3")]
    ns_prefix: String,
    /// Server: run this shell command in the namespace once the server is up, and exit with its
    /// status when it ends. Client: start it in the namespace first (e.g. "iperf3 -s -1"); the
    /// client waits for the server it starts.
    #[arg(long)]
    run: Option<String>,
    /// Server: serve one test, then exit (its status says whether the test succeeded).
    #[arg(short = '1', long)]
    one_off: bool,
    /// Server: stop after this long (a duration: 30s, 5m; a bare number is seconds; default:
    /// Ctrl-C, --run's end or --one-off).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse_duration)]
    duration: Option<Duration>,
    /// Client: UDP instead of TCP.
    #[arg(short = 'u', long)]
    udp: bool,
    /// Client: how long to send, in whole seconds as iperf3 carries it (10, 10s, 1m).
    #[arg(short = 't', long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse_duration)]
    time: Duration,
    /// Client: bytes to send instead of a time (suffix K, M or G: powers of 1024).
    #[arg(short = 'n', long, value_parser = parse_bytes)]
    bytes: Option<u64>,
    /// Client: parallel streams.
    #[arg(short = 'P', long, default_value_t = 1)]
    parallel: usize,
    /// Client: the server sends.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Client: both send.
    #[arg(long)]
    bidir: bool,
    /// Client: target rate per stream, bits/s (suffix K, M or G: powers of 1000; default
    /// 1M for UDP, unlimited for TCP).
    #[arg(short = 'b', long, value_parser = parse_rate)]
    bitrate: Option<u64>,
    /// Client: bytes per write (TCP, default 128K) or per datagram (UDP, default MTU - 52).
    #[arg(short = 'l', long, value_parser = parse_bytes)]
    length: Option<u64>,
    /// Client: how long to keep retrying while the server refuses the connection (a
    /// duration: 10s; a bare number is seconds).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse_duration)]
    wait: Duration,
    /// Print the results as JSON: the client in iperf3's own `-J` schema (`start`, `intervals`,
    /// `end.sum_sent`, `end.sum_received`, ...), the server as its reports; the --run command's
    /// output then goes to stderr.
    #[arg(short = 'J', long)]
    json: bool,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// Run `linerate iperf3`.
pub fn run(a: Iperf3Args) -> Result<ExitCode, String> {
    if a.client.is_some() && a.metrics.metrics_port.is_some() {
        return Err("--metrics-port is for the server (-s), which runs until stopped".into());
    }
    install_stop_handler();
    let cfg = Config::parse_host(&a.host_ip).map_err(|e| e.to_string())?;
    // Stay on one CPU (as `linerate tap`): frames a thread writes to a TAP from several CPUs
    // can reach the kernel out of order.
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu >= 0 {
        crate::bench_common::pin_cpu(cpu as usize);
    }
    let host = IperfHost::open(&a, cfg)?;
    let params = a.client.map(|_| test_params(&a, host.stack.config().mtu)).transpose()?;
    match (a.client, params) {
        (Some(addr), Some(params)) => client::run(&a, host, addr, params),
        _ => serve::run(&a, host),
    }
}

/// The stack iperf3 runs on: a TAP of our own in a new namespace, or a link named by --link.
pub struct IperfHost {
    /// The linerate host.
    pub stack: Stack<Box<dyn Link>>,
    /// The namespace of our TAP (deleted on drop), where --run runs; None on --link.
    pub ns: Option<Netns>,
    /// Where the host runs, for the user.
    pub place: String,
}

impl IperfHost {
    /// Open what `a` asks for with host configuration `cfg`.
    fn open(a: &Iperf3Args, cfg: Config) -> Result<IperfHost, String> {
        let Some(spec) = &a.link else {
            let mut cfg = crate::link_stack::fit_config(cfg, a.mtu.unwrap_or(1500), None);
            let ipv6 = super::tap::ipv6_pair(&a.host_ip6, &a.linux_ip6)?;
            if let Some((host6, _)) = &ipv6 {
                cfg = cfg.ipv6_addr(host6).map_err(|e| format!("--host-ip6: {e}"))?;
            }
            cfg.validate().map_err(|e| e.to_string())?;
            let mut setup = TapSetup::create(&a.ns_prefix, &a.linux_ip, cfg, None).map_err(|e| e.to_string())?;
            if let Some((_, linux6)) = &ipv6 {
                super::tap::add_linux_ipv6(&mut setup, linux6)?;
            }
            let TapSetup { ns, stack, linux_ip } = setup;
            let place = format!("TAP {} in namespace {}; Linux side {linux_ip}", testbed::tap::TAP_IFNAME, ns.name());
            return Ok(IperfHost { stack, ns: Some(ns), place });
        };
        let (stack, place) = crate::link_stack::open_one(spec, &cfg, a.mtu)?.stack(cfg)?;
        Ok(IperfHost { stack, ns: None, place })
    }

    /// Start `cmd` with `sh -c` in the host's namespace (ours with a TAP, else this one); its
    /// output goes to our stderr when `stdout_busy` (our stdout carries JSON), else to ours.
    fn spawn(&self, cmd: &str, stdout_busy: bool) -> Result<Child, String> {
        let out = if stdout_busy { Stdio::from(std::io::stderr()) } else { Stdio::inherit() };
        crate::runloop::spawn_run(self.ns.as_ref(), cmd, out)
    }
}

/// The parameters of the client's test on a link of IP MTU `mtu`.
fn test_params(a: &Iperf3Args, mtu: usize) -> Result<Params, String> {
    let mut p = Params::new(if a.udp { Protocol::Udp } else { Protocol::Tcp });
    if !(1..=128).contains(&a.parallel) {
        return Err(format!("-P {} is outside 1..=128", a.parallel));
    }
    if a.time.subsec_nanos() != 0 {
        return Err(format!("-t {:?}: iperf3 carries the test time in whole seconds", a.time));
    }
    if a.time.is_zero() && a.bytes.is_none() {
        return Err("-t 0 needs -n BYTES to end the test".into());
    }
    p.time = if a.bytes.is_some() { 0 } else { a.time.as_secs() };
    p.bytes = a.bytes.unwrap_or(0);
    (p.parallel, p.reverse, p.bidirectional) = (a.parallel, a.reverse, a.bidir);
    if let Some(r) = a.bitrate {
        p.rate = r;
    }
    p.len = match (a.length, a.udp) {
        (Some(l), _) => l as usize,
        // A datagram that fits the MTU after the IP and UDP headers and TCP-like options,
        // as iperf3 picks from the control connection's MSS.
        (None, true) => mtu.saturating_sub(52),
        (None, false) => p.len,
    };
    // The same checks the server applies.
    Params::from_json(&p.to_json(apps::iperf3::client::CLIENT_VERSION))
}

/// Parse a byte count with an optional K, M or G suffix (powers of 1024, as iperf3).
fn parse_bytes(s: &str) -> Result<u64, String> {
    parse_scaled(s, 1024)
}

/// Parse a rate in bits/s with an optional K, M or G suffix (powers of 1000, as iperf3).
fn parse_rate(s: &str) -> Result<u64, String> {
    parse_scaled(s, 1000)
}

fn parse_scaled(s: &str, base: u64) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], base),
        Some('M') => (&t[..t.len() - 1], base * base),
        Some('G') => (&t[..t.len() - 1], base * base * base),
        _ => (t, 1),
    };
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a number with an optional K, M or G suffix"))?;
    if !(v.is_finite() && v > 0.0 && v * (mult as f64) < 1e18) {
        return Err(format!("'{s}' is not a positive amount"));
    }
    Ok((v * mult as f64) as u64)
}

/// The exit status of a finished --run command as a number (1 if killed by a signal).
fn exit_of(status: std::process::ExitStatus) -> u8 {
    status.code().unwrap_or(1).clamp(0, 255) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates() {
        assert_eq!(parse_bytes("10M"), Ok(10 << 20));
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert_eq!(parse_rate("2.5g"), Ok(2_500_000_000));
        assert!(parse_rate("fast").is_err());
        assert!(parse_bytes("-1").is_err());
    }
}
