//! `linerate iperf3 -c ADDR`: one test from the TAP host against a stock `iperf3 -s` on the
//! Linux side, with both sides' figures.

use super::{exit_of, Iperf3Args, IperfHost};
use crate::output::{fmt_si, Table};
use crate::runloop::{now, stop_requested, Idler};
use apps::iperf3::{ClientReport, Iperf3Client, Params, Protocol, Side};
use serde_json::{json, Value};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

/// How long the --run command (the stock server) may take to exit after the test.
const CHILD_LINGER: Duration = Duration::from_secs(5);

/// Run one test.
pub fn run(a: &Iperf3Args, mut setup: IperfHost, addr: IpAddr, params: Params) -> Result<ExitCode, String> {
    let server = SocketAddr::new(addr, a.port);
    let wait = crate::bench_common::check_secs(a.wait)?;
    eprintln!("linerate iperf3 client {} -> {server} on {}", setup.stack.ip(), setup.place);
    let mut child = a.run.as_deref().map(|c| setup.spawn(c, a.json)).transpose()?;
    let mut client = Iperf3Client::new(server, params.clone()).retry_for(wait);
    let start = now();
    // Every step of the client is bounded; this bounds the whole in case of a bug.
    let limit = wait + Duration::from_secs(params.time + 120);
    let mut idler = Idler::new();
    while !client.is_finished() {
        let t = now();
        let mut worked = setup.stack.poll(t).map_err(|e| e.to_string())? > 0;
        worked |= client.step(&mut setup.stack).map_err(|e| e.to_string())? > 0;
        setup.stack.flush().map_err(|e| e.to_string())?;
        idler.after_poll(setup.stack.link(), worked || client.running());
        if stop_requested() {
            return Err("interrupted".into());
        }
        if t - start > limit {
            return Err(format!("the test did not finish within {limit:?}"));
        }
    }
    // Let the stack send the last segments (IPERF_DONE, FINs) while the server finishes:
    // until the --run command exits (bounded), or briefly without one.
    let linger = if child.is_some() { CHILD_LINGER } else { Duration::from_millis(200) };
    let linger_from = now();
    let mut run_status = None;
    while run_status.is_none() && now() - linger_from < linger {
        setup.stack.poll(now()).map_err(|e| e.to_string())?;
        setup.stack.flush().map_err(|e| e.to_string())?;
        if let Some(Ok(Some(status))) = child.as_mut().map(|c| c.try_wait()) {
            run_status = Some(exit_of(status));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Some(mut c) = child {
        if run_status.is_none() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    if let Some(e) = client.error() {
        if a.json {
            // As iperf3 -J: the start of the test and the error.
            let v = json!({ "start": start_json(server, &params, params.parallel), "intervals": [], "end": {}, "error": e });
            bench::outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        return Err(format!("iperf3 test against {server} failed: {e}"));
    }
    let report = client.report().ok_or("the test ended without results")?;
    print_report(a, server, &params, &report);
    if run_status.is_some_and(|s| s != 0) {
        eprintln!("linerate: the command given with --run exited with status {}", run_status.unwrap_or(1));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// One side's totals as an iperf3 `-J` sum: `start`, `end`, `seconds`, `bytes`,
/// `bits_per_second`, `sender`; TCP senders add `retransmits`, UDP `packets` (receivers:
/// `lost_packets`, `lost_percent`, `jitter_ms`).
fn sum_json(s: &Side, udp: bool, sender: bool) -> Value {
    let mut v = json!({
        "start": 0, "end": s.seconds, "seconds": s.seconds, "bytes": s.bytes,
        "bits_per_second": s.bits_per_second(), "sender": sender,
    });
    if udp {
        v["packets"] = json!(s.packets);
        if !sender {
            v["lost_packets"] = json!(s.lost);
            v["lost_percent"] = json!(if s.packets > 0 { 100.0 * s.lost as f64 / s.packets as f64 } else { 0.0 });
            v["jitter_ms"] = json!(s.jitter * 1e3);
        }
    } else if sender && s.retransmits >= 0 {
        v["retransmits"] = json!(s.retransmits);
    }
    v
}

/// iperf3's `start` object: where the test went and its parameters.
fn start_json(server: SocketAddr, p: &Params, streams: usize) -> Value {
    let udp = p.protocol == Protocol::Udp;
    json!({
        "connecting_to": { "host": server.ip().to_string(), "port": server.port() },
        "version": concat!("linerate ", env!("CARGO_PKG_VERSION")),
        "system_info": "linerate userspace stack",
        "test_start": {
            "protocol": if udp { "UDP" } else { "TCP" }, "num_streams": streams, "blksize": p.len,
            "omit": p.omit, "duration": p.time, "bytes": p.bytes, "blocks": p.blocks,
            "reverse": i32::from(p.reverse), "bidir": i32::from(p.bidirectional), "tos": 0,
        },
    })
}

/// The report in iperf3's `-J` schema, so tools that read iperf3's output read ours. The
/// client keeps totals only, so `intervals` holds one interval spanning the test. The main
/// direction is the upload (the download with `-R`); with `--bidir` the other one is under
/// `sum_sent_bidir_reverse`/`sum_received_bidir_reverse`, as iperf3 writes it.
fn iperf3_json(server: SocketAddr, p: &Params, r: &ClientReport) -> Value {
    let udp = p.protocol == Protocol::Udp;
    let (main, other) = if p.reverse { (&r.download, &r.upload) } else { (&r.upload, &r.download) };
    let mut end = json!({
        "streams": [],
        "cpu_utilization_percent": { "host_total": r.cpu_local, "remote_total": r.cpu_remote },
    });
    let mut intervals = Vec::new();
    if let Some((tx, rx)) = main {
        end["sum_sent"] = sum_json(tx, udp, true);
        end["sum_received"] = sum_json(rx, udp, false);
        if udp {
            end["sum"] = sum_json(rx, udp, false);
        }
        intervals.push(json!({ "streams": [], "sum": sum_json(tx, udp, true) }));
    }
    if let Some((tx, rx)) = other {
        end["sum_sent_bidir_reverse"] = sum_json(tx, udp, true);
        end["sum_received_bidir_reverse"] = sum_json(rx, udp, false);
    }
    json!({ "start": start_json(server, p, r.streams), "intervals": intervals, "end": end })
}

/// Print the figures: a table, or iperf3's JSON.
fn print_report(a: &Iperf3Args, server: SocketAddr, p: &Params, r: &ClientReport) {
    let udp = p.protocol == Protocol::Udp;
    if a.json {
        bench::outln!("{}", serde_json::to_string_pretty(&iperf3_json(server, p, r)).unwrap_or_default());
        return;
    }
    let mut t = Table::new(
        &format!("linerate iperf3 client -> {server} ({}, {} stream(s))", if udp { "UDP" } else { "TCP" }, r.streams),
        &["direction", "side", "bytes", "seconds", "goodput", "retransmits / lost"],
    );
    let mut rows = |name: &str, d: &Option<(Side, Side)>| {
        if let Some((s, rx)) = d {
            for (side, x) in [("sender", s), ("receiver", rx)] {
                let extra = match (udp, side) {
                    (true, "sender") => format!("{} sent", x.packets),
                    (true, _) => format!("{} of {}", x.lost, x.packets),
                    (false, "sender") if x.retransmits >= 0 => x.retransmits.to_string(),
                    (false, _) => "-".into(),
                };
                t.row(vec![
                    name.into(),
                    side.into(),
                    x.bytes.to_string(),
                    format!("{:.3}", x.seconds),
                    fmt_si(x.bits_per_second(), "bit/s"),
                    extra,
                ]);
            }
        }
    };
    rows("linerate -> linux", &r.upload);
    rows("linux -> linerate", &r.download);
    t.print(false);
}
