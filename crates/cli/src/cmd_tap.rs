//! `linerate tap`: a linerate host on a TAP device in a namespace of its own, so that ordinary
//! Linux tools (ping, arping, nc, socat, tcpdump) in that namespace talk to it.

use crate::output::Table;
use crate::runloop::{install_stop_handler, now, stop_requested, Idler};
use crate::statsfile::StatsPublisher;
use apps::UdpEcho;
use net::Config;
use std::path::PathBuf;
use std::process::{Child, ExitCode, Stdio};
use std::time::Duration;
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
    /// IP MTU of the TAP link.
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// UDP port of the echo service (0: none).
    #[arg(long, default_value_t = 7)]
    echo_port: u16,
    /// Record everything the linerate host sends and receives in this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Stop after this many seconds (default: run until Ctrl-C, or until --run finishes).
    #[arg(long)]
    duration: Option<f64>,
    /// Run this shell command inside the namespace while the host serves, then exit with its status.
    #[arg(long)]
    run: Option<String>,
    /// Prefix of the namespace's name.
    #[arg(long, default_value = "lr-tap")]
    ns_prefix: String,
    /// Print the final counters as JSON.
    #[arg(long)]
    json: bool,
}

/// Run `linerate tap`.
pub fn run(a: TapArgs) -> Result<ExitCode, String> {
    let cfg = Config::parse_host(&a.host_ip).map_err(|e| e.to_string())?.mtu(a.mtu);
    cfg.validate().map_err(|e| e.to_string())?;
    let host_ip = cfg.ip;
    install_stop_handler();
    let mut setup = TapSetup::create(&a.ns_prefix, &a.linux_ip, cfg, a.pcap.as_deref()).map_err(|e| e.to_string())?;
    let ns = setup.ns.name().to_string();
    let mut echo = match a.echo_port {
        0 => None,
        p => Some(UdpEcho::bind(&mut setup.stack, p).map_err(|e| e.to_string())?),
    };
    eprintln!(
        "linerate host {host_ip} ({}) on TAP {} in namespace {ns}; Linux side {}.",
        setup.stack.mac(),
        testbed::tap::TAP_IFNAME,
        setup.linux_ip
    );
    eprintln!("  try: ip netns exec {ns} ping {host_ip}");
    if a.echo_port != 0 {
        eprintln!("  UDP echo on port {}: ip netns exec {ns} socat - UDP:{host_ip}:{}", a.echo_port, a.echo_port);
    }
    let publisher = StatsPublisher::new(&format!("tap-{ns}")).map_err(|e| format!("stats file: {e}"))?;
    let mut child: Option<Child> = match &a.run {
        Some(cmd) => Some(
            setup
                .ns
                .command("sh")
                .args(["-c", cmd])
                .stdin(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot run '{cmd}': {e}"))?,
        ),
        None => None,
    };
    let start = now();
    let deadline = a.duration.map(|s| start + Duration::from_secs_f64(s.max(0.0)));
    let mut idler = Idler::new();
    let mut last_publish = start;
    let mut last_child_check = start;
    let mut exit = ExitCode::SUCCESS;
    loop {
        let t = now();
        let mut worked = setup.stack.poll(t).map_err(|e| e.to_string())? > 0;
        if let Some(e) = echo.as_mut() {
            worked |= e.serve(&mut setup.stack).map_err(|e| e.to_string())? > 0;
        }
        setup.stack.flush().map_err(|e| e.to_string())?;
        idler.after_poll(setup.stack.link(), worked);
        if t - last_publish >= Duration::from_millis(250) {
            let _ = publisher.publish(&setup.stack.counters().iter().collect::<Vec<_>>());
            last_publish = t;
        }
        if stop_requested() || deadline.is_some_and(|d| t >= d) {
            break;
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
                    break;
                }
            }
        }
    }
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    let mut t = Table::new(&format!("linerate host {host_ip}: counters"), &["counter", "value"]);
    for (name, v) in setup.stack.counters().iter().filter(|(_, v)| *v > 0) {
        t.row(vec![name.to_string(), v.to_string()]);
    }
    if let Some(e) = &echo {
        t.row(vec!["echo_datagrams".into(), e.echoed.to_string()]);
        t.row(vec!["echo_bytes".into(), e.bytes.to_string()]);
    }
    t.print(a.json);
    Ok(exit)
}
