//! Paper 002 (Limago): Fig. 4 goodput against payload (segment) size, Fig. 5 aggregate goodput
//! against concurrent connections (mean and standard deviation over runs), Table I memory per
//! session configuration; Linux TCP over veth measured beside each where it has a counterpart.

use super::figure::{Axis, Figure, Kind, Point, Series};
use super::Ctx;
use std::time::Duration;

/// Socket buffer per direction of the many-connection runs (as `bench tcp`'s 10,000).
const MANY_BUFFER: usize = 8 * 1024;

/// The paper's Table I: BRAM18 blocks by connections (rows) and window scale 0 and 7.
const PAPER_BRAM18: [(f64, f64, f64); 10] = [
    (1.0, 198.0, 222.0),
    (128.0, 202.0, 226.0),
    (512.0, 202.0, 226.0),
    (1024.0, 204.0, 233.0),
    (2048.0, 228.0, 257.0),
    (4096.0, 276.0, 311.0),
    (8192.0, 371.0, 414.0),
    (10000.0, 495.0, 544.0),
    (16384.0, 566.0, 643.0),
    (32768.0, 974.0, 1095.0),
];

/// Mean and standard deviation.
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

/// Every figure of paper 002.
pub fn figures(ctx: &Ctx) -> Vec<Result<Figure, (String, String)>> {
    let secs = Duration::from_millis(ctx.pick(300, 1000));
    let reps = ctx.pick(2, 3);
    let segments: Vec<usize> = ctx.pick(vec![1024, 2048, 4096], vec![1024, 1536, 2048, 2560, 3072, 3584, 4096]);
    let conns: Vec<usize> =
        ctx.pick(vec![1, 4, 16, 64, 256], vec![1, 2, 4, 8, 16, 30, 64, 256, 1024, 4096, 16384, 32768, 65536]);
    let mut fig4 = Figure::new(
        "002",
        "002-fig4",
        "Fig. 4",
        "TCP goodput of one connection against segment size",
        Axis::lin("segment size (MSS)", "B"),
        Axis::lin("goodput", "Gbit/s"),
    );
    let mut fig5 = Figure::new(
        "002",
        "002-fig5",
        "Fig. 5",
        "aggregate goodput against concurrent connections (mean and standard deviation)",
        Axis::log("concurrent connections", ""),
        Axis::lin("aggregate goodput", "Gbit/s"),
    );
    let ours = (|| -> Result<(), String> {
        let mut pts = Vec::new();
        for &s in &segments {
            ctx.say("002", &format!("linerate TCP goodput, MSS {s}"));
            let v = (0..reps)
                .map(|_| crate::bench_tcp::ours::goodput(s + 40, 1, None, false, secs).map(|g| g / 1e9))
                .collect::<Result<Vec<f64>, String>>()?;
            let (m, sd) = mean_sd(&v);
            pts.push(Point { x: s as f64, y: m, sd: Some(sd) });
        }
        fig4.add(Series {
            name: "linerate, shm link".into(),
            kind: Kind::Linerate,
            points: pts,
            source: "this run, mean of runs".into(),
        });
        let mut pts = Vec::new();
        for &n in &conns {
            ctx.say("002", &format!("linerate TCP, {n} concurrent connections"));
            let v = (0..reps)
                .map(|_| crate::bench_tcp::ours::goodput(1500, n, Some(MANY_BUFFER), false, secs).map(|g| g / 1e9))
                .collect::<Result<Vec<f64>, String>>()?;
            let (m, sd) = mean_sd(&v);
            pts.push(Point { x: n as f64, y: m, sd: Some(sd) });
        }
        fig5.add(Series {
            name: "linerate, shm link (MSS 1460)".into(),
            kind: Kind::Linerate,
            points: pts,
            source: "this run, mean and sd of runs".into(),
        });
        Ok(())
    })();
    if let Err(e) = ours {
        return vec![
            Err(("Fig. 4".into(), e.clone())),
            Err(("Fig. 5".into(), e)),
            table1(ctx).map_err(|e| ("Table I".into(), e)),
        ];
    }
    match testbed::netns_unavailable() {
        Some(why) => {
            fig4.miss("Linux over veth", &why);
            fig5.miss("Linux over veth", &why);
        }
        None => {
            let mtus: Vec<usize> = segments.iter().map(|s| s + 40).collect();
            let say = |w: &str| ctx.say("002", w);
            match crate::bench_tcp::kernel::goodput_sweep(&mtus, &conns, Some(MANY_BUFFER), reps, secs, &say) {
                Err(e) => {
                    fig4.miss("Linux over veth", &format!("failed: {e}"));
                    fig5.miss("Linux over veth", &format!("failed: {e}"));
                }
                Ok((by_mtu, by_conns)) => {
                    let pts = segments.iter().zip(&by_mtu).map(|(&s, v)| {
                        let (m, sd) = mean_sd(&v.iter().map(|g| g / 1e9).collect::<Vec<_>>());
                        Point { x: s as f64, y: m, sd: Some(sd) }
                    });
                    fig4.add(Series {
                        name: "Linux TCP over veth (MTU = MSS + 40)".into(),
                        kind: Kind::Peer,
                        points: pts.collect(),
                        source: "this run".into(),
                    });
                    let mut pts = Vec::new();
                    for (&n, v) in conns.iter().zip(&by_conns) {
                        let ok: Vec<f64> = v.iter().filter_map(|r| r.as_ref().ok()).map(|g| g / 1e9).collect();
                        if ok.is_empty() {
                            let why = v.iter().find_map(|r| r.as_ref().err()).cloned().unwrap_or_default();
                            fig5.miss(&format!("Linux over veth, {n} connections"), &format!("failed: {why}"));
                            continue;
                        }
                        let (m, sd) = mean_sd(&ok);
                        pts.push(Point { x: n as f64, y: m, sd: Some(sd) });
                    }
                    fig5.add(Series {
                        name: "Linux TCP over veth (MTU 1500)".into(),
                        kind: Kind::Peer,
                        points: pts,
                        source: "this run, mean and sd".into(),
                    });
                }
            }
        }
    }
    fig4.paper_measured =
        "Throughput of one connection (whole Ethernet frames) for segments of 1024 to 4096 B in 64 B steps, \
        5 minutes each: bound by the 100 Gbit/s network over the link, above 100 Gbit/s without it, limited by DRAM \
        beyond 2048 B segments (DRAM peak 125 Gbit/s in microbenchmarks); no per-size numbers are stated."
            .into();
    fig4.we_measured =
        "Goodput (payload only) of one linerate TCP connection with MSS = segment size between two processes on a \
        shared-memory link, beside Linux TCP between two network namespaces over veth with the same MSS; mean and \
        standard deviation over runs."
            .into();
    fig4.differences =
        "A VCU118 FPGA with DDR4/URAM buffers at 100 Gbit/s vs CPU processes; Linux here is the kernel stack over \
        veth on the same 2 cores, not a remote server."
            .into();
    let last =
        |f: &Figure, k: Kind| f.series.iter().find(|s| s.kind == k).and_then(|s| s.points.last()).map(|p| (p.x, p.y));
    fig4.ratio = match (last(&fig4, Kind::Linerate), last(&fig4, Kind::Peer)) {
        (Some((x, l)), Some((_, k))) => format!(
            "at {x:.0} B: linerate {l:.1} Gbit/s vs Linux {k:.1} Gbit/s ({:.2}x); {:.2}x of 100 Gbit/s",
            l / k,
            l / 100.0
        ),
        (Some((x, l)), None) => format!("at {x:.0} B: linerate {l:.1} Gbit/s; {:.2}x of 100 Gbit/s", l / 100.0),
        _ => "no measurement".into(),
    };
    fig5.paper_measured = "Aggregate iPerf goodput from one or two servers to Limago over a switch for 2 to 30 concurrent \
        connections in steps of 2 (MSS 1460, 5 minutes, 5 runs, mean and standard deviation), rising with the connection \
        count until stable; no numbers stated. Limago's design supports up to 10,000+ connections (Table I)."
        .into();
    fig5.we_measured = format!(
        "Aggregate goodput of {} concurrent linerate TCP connections (8 KiB buffers each way) between two processes on a \
         shared-memory link (above 8,192 spread over up to 8 sink ports), beside Linux over veth with the same counts \
         and ports; \
         {reps} runs each.",
        conns.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
    );
    fig5.differences =
        "Servers with ConnectX-5 NICs through a switch into the FPGA vs one machine's 2 cores running both ends; \
        one client address reaches 65,536 connections by spreading them over 8 server ports (it has fewer \
        ephemeral ports than that towards one)."
            .into();
    fig5.ratio = match (last(&fig5, Kind::Linerate), last(&fig5, Kind::Peer)) {
        (Some((x, l)), Some((xk, k))) => {
            format!("at {x:.0} connections linerate {l:.2} Gbit/s; Linux at {xk:.0}: {k:.2} Gbit/s ({:.2}x)", l / k)
        }
        (Some((x, l)), None) => format!("at {x:.0} connections linerate {l:.2} Gbit/s"),
        _ => "no measurement".into(),
    };
    vec![Ok(fig4), Ok(fig5), table1(ctx).map_err(|e| ("Table I".into(), e))]
}

/// Table I: memory per session configuration (connections x window scale).
fn table1(ctx: &Ctx) -> Result<Figure, String> {
    ctx.say("002", "Table I: session table memory");
    let mut f = Figure::new(
        "002",
        "002-table1",
        "Table I",
        "memory for the sessions against the number of connections",
        Axis::log("connections", ""),
        Axis::log("memory", "KiB"),
    );
    let ns = [1usize, 128, 512, 1024, 2048, 4096, 8192, 10_000, 16_384, 32_768];
    let per = {
        let (a, _b) = link::mem::try_pair(link::LinkConfig::default()).map_err(|e| e.to_string())?;
        let cfg = crate::bench_common::tcp_stack_config("10.0.0.1/24", 1500, 1024, None)?;
        net::Stack::new(cfg, a).map_err(|e| e.to_string())?.tcp_table_bytes_per_session() as f64
    };
    let tables: Vec<(f64, f64)> = ns.iter().map(|&n| (n as f64, n as f64 * per / 1024.0)).collect();
    f.add(Series::new(
        "linerate session tables (no buffers)",
        Kind::Linerate,
        &tables,
        "Stack::tcp_table_bytes_per_session",
    ));
    for ws in [0u32, 7] {
        let buf = 65536.0 * f64::from(1u32 << ws);
        let pts: Vec<(f64, f64)> = ns.iter().map(|&n| (n as f64, n as f64 * (per + 2.0 * buf) / 1024.0)).collect();
        f.add(Series::new(
            &format!("linerate tables + 2 buffers of 64 KiB x 2^{ws} (window scale {ws})"),
            Kind::Linerate,
            &pts,
            "computed",
        ));
    }
    let p0: Vec<(f64, f64)> = PAPER_BRAM18.iter().map(|r| (r.0, r.1 * 2.25)).collect();
    let p7: Vec<(f64, f64)> = PAPER_BRAM18.iter().map(|r| (r.0, r.2 * 2.25)).collect();
    f.add(Series::new(
        "BRAM18 x 2.25 KiB, window scale 0",
        Kind::Paper,
        &p0,
        "paper 002 Table I (BRAM18 count x 18 Kbit)",
    ));
    f.add(Series::new(
        "BRAM18 x 2.25 KiB, window scale 7",
        Kind::Paper,
        &p7,
        "paper 002 Table I (BRAM18 count x 18 Kbit)",
    ));
    f.miss("Linux over veth", "not measured: the kernel does not report per-configuration session table memory");
    f.paper_measured =
        "BRAM18 blocks of the TOE for 1 to 32,768 connections at window scales 0 to 7 (198 to 1,095 blocks), \
        growing linearly with connections; the send and receive buffers are in external DRAM (Eq. 1: 4 GB at window \
        scale 128 gives 512 connections)."
            .into();
    f.we_measured = format!(
        "linerate's per-session table memory ({per:.0} B per session: state, SAR tables, timers, cuckoo lookup), times the \
         connection count, alone and with two buffers per session of the window the scale allows."
    );
    f.differences =
        "On-chip BRAM allocated in 18 Kbit blocks (the paper's counts drawn as their capacity) with buffers off-chip \
        vs heap memory sized exactly; the buffers dominate both designs' memory."
            .into();
    let ours = 32_768.0 * per / 1024.0;
    f.ratio = format!(
        "32,768 connections: linerate tables {ours:.0} KiB vs Limago's 974 BRAM18 = {:.0} KiB ({:.2}x)",
        974.0 * 2.25,
        ours / (974.0 * 2.25)
    );
    Ok(f)
}
