//! `linerate iperf3 -c ADDR`: one test from the TAP host against a stock `iperf3 -s` on the
//! Linux side, with both sides' figures.

use super::{exit_of, Iperf3Args, IperfHost};
use crate::output::{fmt_si, Table};
use crate::runloop::{now, stop_requested, Idler};
use apps::iperf3::{ClientReport, Iperf3Client, Params, Protocol, Side};
use serde_json::{json, Value};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::ExitCode;
use std::time::Duration;

/// How long the --run command (the stock server) may take to exit after the test.
const CHILD_LINGER: Duration = Duration::from_secs(5);

/// Run one test.
pub fn run(a: &Iperf3Args, mut setup: IperfHost, addr: Ipv4Addr, params: Params) -> Result<ExitCode, String> {
    let server = SocketAddrV4::new(addr, a.port);
    let wait = crate::bench_common::check_secs(a.wait)?;
    eprintln!("linerate iperf3 client {} -> {server} on {}", setup.stack.ip(), setup.place);
    let mut child = a.run.as_deref().map(|c| setup.spawn(c)).transpose()?;
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
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({ "server": server.to_string(), "error": e })).unwrap_or_default()
            );
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

/// One side as JSON (UDP losses and jitter are the receiver's figures).
fn side_json(s: &Side, udp: bool, receiver: bool) -> Value {
    let mut v = json!({
        "bytes": s.bytes, "seconds": s.seconds, "bits_per_second": s.bits_per_second(),
    });
    if udp {
        v["packets"] = json!(s.packets);
        if receiver {
            v["lost_packets"] = json!(s.lost);
            v["jitter_seconds"] = json!(s.jitter);
        }
    } else if !receiver && s.retransmits >= 0 {
        v["retransmits"] = json!(s.retransmits);
    }
    v
}

/// Print the figures: a table, or JSON.
fn print_report(a: &Iperf3Args, server: SocketAddrV4, p: &Params, r: &ClientReport) {
    let udp = p.protocol == Protocol::Udp;
    let dir = |d: &Option<(Side, Side)>| {
        d.as_ref().map(|(s, rx)| json!({ "sender": side_json(s, udp, false), "receiver": side_json(rx, udp, true) }))
    };
    if a.json {
        let v = json!({
            "server": server.to_string(),
            "protocol": if udp { "udp" } else { "tcp" },
            "streams": r.streams,
            "reverse": p.reverse,
            "bidirectional": p.bidirectional,
            "upload": dir(&r.upload),
            "download": dir(&r.download),
            "cpu_local_percent": r.cpu_local,
            "cpu_remote_percent": r.cpu_remote,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
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
