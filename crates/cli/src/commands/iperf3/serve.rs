//! `linerate iperf3 -s`: the iperf3 server on the TAP host, serving until Ctrl-C, the end of
//! --run, --duration or (with --one-off) the first test.

use super::{exit_of, Iperf3Args, IperfHost};
use crate::output::{fmt_si, Table};
use crate::runloop::{now, stop_requested, Idler};
use crate::statsfile::StatsPublisher;
use apps::iperf3::{Iperf3Server, Protocol, TestReport};
use serde_json::{json, Value};
use std::process::{Child, ExitCode};
use std::time::Duration;

/// How long a test still in progress may take to close after the --run command ended.
const LINGER: Duration = Duration::from_secs(3);

/// Run the server.
pub fn run(a: &Iperf3Args, mut setup: IperfHost) -> Result<ExitCode, String> {
    let host = setup.stack.ip();
    let mut server = Iperf3Server::listen(&mut setup.stack, a.port).map_err(|e| format!("port {}: {e}", a.port))?;
    eprintln!("linerate iperf3 server {host}:{} on {}.", a.port, setup.place);
    match &setup.ns {
        Some(ns) => eprintln!("  try: ip netns exec {} iperf3 -c {host} -p {}", ns.name(), a.port),
        None => eprintln!("  try: iperf3 -c {host} -p {}", a.port),
    }
    // The stack's counters, for `linerate stats` and --metrics-port while the server runs.
    let mut publisher = StatsPublisher::new(&format!("iperf3-s-{}", std::process::id()), "iperf3 -s")
        .map_err(|e| format!("stats file: {e}"))?;
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    let mut child: Option<Child> = a.run.as_deref().map(|c| setup.spawn(c, a.json)).transpose()?;
    let start = now();
    let deadline = a.duration.map(|d| start + d);
    let (mut idler, mut last_child_check) = (Idler::new(), start);
    let (mut reports, mut run_exit, mut run_ended) = (Vec::new(), None, None);
    loop {
        let t = now();
        let mut worked = setup.stack.poll(t).map_err(|e| e.to_string())? > 0;
        worked |= server.step(&mut setup.stack).map_err(|e| e.to_string())? > 0;
        setup.stack.flush().map_err(|e| e.to_string())?;
        idler.after_poll(setup.stack.link(), worked);
        publisher.publish_every(|| setup.stack.counters().iter().collect());
        for r in server.take_reports() {
            if !a.json {
                eprintln!("{}", report_line(&r));
            }
            reports.push(r);
        }
        if stop_requested() || deadline.is_some_and(|d| t >= d) || (a.one_off && !reports.is_empty()) {
            break;
        }
        if run_ended.is_some_and(|e| !server.busy() || t - e >= LINGER) {
            break;
        }
        if t - last_child_check >= Duration::from_millis(5) {
            last_child_check = t;
            if let Some(c) = child.as_mut() {
                if let Some(status) = c.try_wait().map_err(|e| e.to_string())? {
                    if !status.success() {
                        eprintln!("linerate: the command given with --run exited with {status}");
                    }
                    (run_exit, run_ended, child) = (Some(exit_of(status)), Some(t), None);
                }
            }
        }
    }
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    print_reports(a, &reports, server.denied);
    let failed = reports.iter().any(|r| r.error.is_some());
    Ok(match run_exit {
        Some(code) if code != 0 => ExitCode::from(code),
        _ if failed || (a.one_off && reports.is_empty()) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// Rate in bits/s of `bytes` over `secs`.
fn bps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

/// One line about a finished test.
fn report_line(r: &TestReport) -> String {
    let who = r.client.map_or("a client".to_string(), |c| c.to_string());
    let what = r.params.as_ref().map_or(String::new(), |p| {
        let proto = if p.protocol == Protocol::Tcp { "TCP" } else { "UDP" };
        let dir = match (p.reverse, p.bidirectional) {
            (_, true) => "both ways",
            (true, _) => "reverse",
            _ => "forward",
        };
        format!("{proto} {dir} x{}", p.parallel)
    });
    let rx = fmt_si(bps(r.bytes_received, r.seconds), "bit/s");
    let tx = fmt_si(bps(r.bytes_sent, r.seconds), "bit/s");
    let mut line = format!(
        "test from {who} ({what}): received {} bytes ({rx}), sent {} bytes ({tx}) in {:.3} s",
        r.bytes_received, r.bytes_sent, r.seconds
    );
    if let Some(e) = &r.error {
        line += &format!("; FAILED: {e}");
    }
    line
}

/// A finished test as JSON (bytes, bits/s, seconds).
fn report_json(r: &TestReport) -> Value {
    let p = r.params.as_ref();
    let client_sent: Option<u64> =
        r.theirs.as_ref().filter(|_| p.is_some_and(|p| !p.reverse)).map(|t| t.streams.iter().map(|s| s.bytes).sum());
    json!({
        "client": r.client.map(|c| c.to_string()),
        "protocol": p.map(|p| if p.protocol == Protocol::Tcp { "tcp" } else { "udp" }),
        "reverse": p.map(|p| p.reverse),
        "bidirectional": p.map(|p| p.bidirectional),
        "streams": p.map(|p| p.parallel),
        "seconds": r.seconds,
        "bytes_received": r.bytes_received,
        "bytes_sent": r.bytes_sent,
        "bits_per_second_received": bps(r.bytes_received, r.seconds),
        "bits_per_second_sent": bps(r.bytes_sent, r.seconds),
        "client_bytes_sent": client_sent,
        "udp_lost_packets": r.ours.streams.iter().map(|s| s.errors.max(0)).sum::<i64>(),
        "error": r.error,
    })
}

/// Print every test: a table, or JSON.
fn print_reports(a: &Iperf3Args, reports: &[TestReport], denied: u64) {
    if a.json {
        let v =
            json!({ "port": a.port, "tests": reports.iter().map(report_json).collect::<Vec<_>>(), "denied": denied });
        bench::outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    let mut t = Table::new(
        "linerate iperf3 server: tests",
        &["test", "client", "received", "sent", "seconds", "goodput in", "goodput out", "result"],
    );
    for (i, r) in reports.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            r.client.map_or("-".into(), |c| c.to_string()),
            r.bytes_received.to_string(),
            r.bytes_sent.to_string(),
            format!("{:.3}", r.seconds),
            fmt_si(bps(r.bytes_received, r.seconds), "bit/s"),
            fmt_si(bps(r.bytes_sent, r.seconds), "bit/s"),
            r.error.clone().unwrap_or_else(|| "ok".into()),
        ]);
    }
    t.print(false);
    if denied > 0 {
        bench::outln!("connections denied while busy: {denied}");
    }
}
