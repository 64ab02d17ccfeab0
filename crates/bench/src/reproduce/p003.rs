//! Paper 003 (EasyNet): Fig. 5a connection set-up time, Fig. 5b send/recv goodput, Fig. 6
//! broadcast and all-reduce latency beside OpenMPI (all from `linerate bench collective`),
//! Fig. 7 K-Means time per iteration and throughput on 1, 2, 4 ranks beside scikit-learn.

use super::figure::{Axis, Figure, Kind, Series};
use super::{python_with, table, xy, Ctx};
use crate::output::Table;
use std::io::Write as _;

/// Every figure of paper 003.
pub fn figures(ctx: &Ctx) -> Vec<Result<Figure, (String, String)>> {
    let n = ctx.pick(2, 4);
    ctx.say("003", &format!("linerate bench collective on {n} ranks beside OpenMPI (shm and tcp)"));
    let mut out = match crate::bench_collective::measure(&[n]) {
        Ok(t) => vec![
            fig5a(&t, n).map_err(|e| ("Fig. 5a".into(), e)),
            fig5b(&t, n).map_err(|e| ("Fig. 5b".into(), e)),
            fig6(&t, n).map_err(|e| ("Fig. 6".into(), e)),
        ],
        Err(e) => ["Fig. 5a", "Fig. 5b", "Fig. 6"].iter().map(|f| Err((f.to_string(), e.clone()))).collect(),
    };
    match fig7(ctx) {
        Ok((a, b)) => out.extend([Ok(a), Ok(b)]),
        Err(e) => out.extend([Err(("Fig. 7a".into(), e.1.clone())), Err(("Fig. 7b".into(), e.1))]),
    }
    out
}

/// A note on OpenMPI that failed or is missing, from a table title's `[OpenMPI: …]`.
fn openmpi_missing(f: &mut Figure, t: &Table) {
    if let Some(i) = t.title().find("[OpenMPI: ") {
        let why = t.title()[i + 10..].trim_end_matches(']').to_string();
        let why = if why.contains("not available") { format!("not installed ({why})") } else { why };
        f.miss("OpenMPI", &why);
    }
}

/// Fig. 5a: connection set-up time against the number of connections.
fn fig5a(tables: &[Table], n: usize) -> Result<Figure, String> {
    let t = table(tables, &format!("connection set-up, rank 0 -> 1 ({n} ranks)"))?;
    let mut f = Figure::new(
        "003",
        "003-fig5a",
        "Fig. 5a",
        "connection set-up time against the number of connections",
        Axis::log("connections", ""),
        Axis::log("time until all are established", "µs"),
    );
    let ours = xy(t, "connections", "linerate (pipelined)", 1.0, 1e6)?;
    f.add(Series::new("linerate (pipelined opens, shm fabric)", Kind::Linerate, &ours, "linerate bench collective"));
    let linux = xy(t, "connections", "Linux loopback (sequential)", 1.0, 1e6)?;
    if linux.is_empty() {
        f.miss("Linux loopback", "failed in this run");
    }
    f.add(Series::new("Linux loopback (sequential connect)", Kind::Peer, &linux, "linerate bench collective"));
    let last = ours.last().copied();
    f.paper_measured = "Time to open 1 to many connections between two FPGAs with the pipelined open-connection \
        primitive, against an FPGA client and a CPU server; more than an order of magnitude lower between FPGAs. \
        The text states no set-up times (it states a 64 B ping-pong RTT of 4.3 µs between FPGAs, 56 µs between CPUs)."
        .into();
    f.we_measured = "Time until all connections from rank 0 to rank 1 are established, linerate opening them \
        pipelined on the shared-memory fabric, beside Linux opening as many over loopback one after another."
        .into();
    f.differences = "Two U280 FPGAs through a 100 Gbit/s switch vs two linerate ranks (processes) on one \
        machine's shared-memory fabric; Linux over loopback rather than a CPU server across the network."
        .into();
    f.ratio = match (last, linux.last()) {
        (Some((k, l)), Some((_, x))) => {
            format!("at {k:.0} connections linerate {l:.0} µs vs Linux {x:.0} µs ({:.2}x)", l / x)
        }
        _ => "no comparison (a side is missing)".into(),
    };
    openmpi_missing(&mut f, t);
    Ok(f)
}

/// Fig. 5b: send/recv goodput against message size.
fn fig5b(tables: &[Table], n: usize) -> Result<Figure, String> {
    let t = table(tables, &format!("send/recv rank 0 -> 1 ({n} ranks)"))?;
    let mut f = Figure::new(
        "003",
        "003-fig5b",
        "Fig. 5b",
        "send/recv goodput against message size",
        Axis::log("message size", "B"),
        Axis::lin("goodput", "Gbit/s"),
    );
    let ours = xy(t, "bytes", "linerate", 1.0, 1e-9)?;
    f.add(Series::new("linerate send/recv", Kind::Linerate, &ours, "linerate bench collective"));
    f.add(Series::new(
        "linerate plain TCP connection",
        Kind::Linerate,
        &xy(t, "bytes", "linerate TCP", 1.0, 1e-9)?,
        "linerate bench collective",
    ));
    for (col, name) in
        [("OpenMPI shm", "OpenMPI send/recv (shared memory)"), ("OpenMPI tcp", "OpenMPI send/recv (TCP, loopback)")]
    {
        let s = xy(t, "bytes", col, 1.0, 1e-9)?;
        f.add(Series::new(name, Kind::Peer, &s, "OpenMPI in the same run"));
    }
    openmpi_missing(&mut f, t);
    f.paper_measured = "Point-to-point throughput with send and receive between 2 FPGAs (approaching 100 Gbit/s \
        from 1 MB messages) and from an FPGA to a CPU receiver on TCP sockets (about half of that); no numbers \
        beyond that are stated."
        .into();
    f.we_measured = "Goodput of send/recv from rank 0 to rank 1 until a 4-byte reply, beside one plain linerate \
        TCP connection of the same stacks and OpenMPI's send/recv over shared memory and TCP."
        .into();
    f.differences = "100 Gbit/s FPGA-to-FPGA links vs two CPU processes on a shared-memory fabric (a memory copy \
        per hop, one core per rank on a 2-core machine)."
        .into();
    let mpi = f.find(Kind::Peer, "shared memory").and_then(|s| s.points.last()).map(|p| p.y);
    f.ratio = match (ours.last(), mpi) {
        (Some((b, l)), Some(m)) => format!("at {b:.0} B linerate {l:.2} Gbit/s vs OpenMPI shm {m:.2} Gbit/s ({:.2}x); vs the paper's ~100 Gbit/s line rate {:.2}x", l / m, l / 100.0),
        (Some((b, l)), None) => format!("at {b:.0} B linerate {l:.2} Gbit/s, {:.2}x the paper's 100 Gbit/s line rate", l / 100.0),
        _ => "no measurement".into(),
    };
    Ok(f)
}

/// Fig. 6: broadcast and all-reduce latency against size, beside OpenMPI.
fn fig6(tables: &[Table], n: usize) -> Result<Figure, String> {
    let mut f = Figure::new(
        "003",
        "003-fig6",
        "Fig. 6",
        &format!("broadcast and all-reduce latency against size ({n} ranks)"),
        Axis::log("data size", "B"),
        Axis::log("latency", "µs"),
    );
    let mut ratios = Vec::new();
    for (op, name) in [("bcast", "broadcast"), ("allreduce", "all-reduce")] {
        let t = table(tables, &format!("{op} on {n} ranks"))?;
        let ours = xy(t, "bytes", "linerate", 1.0, 1e6)?;
        f.add(Series::new(&format!("linerate {name}"), Kind::Linerate, &ours, "linerate bench collective, median"));
        for (col, peer) in [("OpenMPI shm", "shm"), ("OpenMPI tcp", "tcp")] {
            let s = xy(t, "bytes", col, 1.0, 1e6)?;
            if let (Some(l), Some(m)) = (ours.last(), s.last()) {
                ratios.push(format!("{name} {:.0} B: linerate/OpenMPI {peer} {:.2}", l.0, l.1 / m.1));
            }
            f.add(Series::new(&format!("OpenMPI {name} ({peer})"), Kind::Peer, &s, "OpenMPI in the same run, median"));
        }
        if op == "bcast" {
            openmpi_missing(&mut f, t);
        }
    }
    f.paper_measured = "Broadcast and all-reduce (SUM of 32-bit fixed point) latency on 4 FPGAs against data \
        size, beside OpenMPI 3.1.4 over TCP on a CPU cluster with 100 Gbit/s NICs; EasyNet lower everywhere. \
        No latencies are stated in the text."
        .into();
    f.we_measured = format!(
        "Median time of broadcast and all-reduce (then a barrier) on {n} linerate ranks on the shared-memory \
         fabric, beside OpenMPI (ob1 with the vader shared-memory and the tcp transports) in the same run."
    );
    f.differences = "FPGAs through a 100 Gbit/s switch vs processes on one machine; OpenMPI here runs on the same \
        machine (shared memory or loopback TCP), not across a network."
        .into();
    f.ratio = if ratios.is_empty() { "OpenMPI did not run".into() } else { ratios.join("; ") };
    Ok(f)
}

/// A float32 .npy file of `rows` x `cols` values (C order).
fn write_npy(path: &std::path::Path, data: &[f32], rows: usize, cols: usize) -> Result<(), String> {
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len() * 4);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    data.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    std::fs::File::create(path).and_then(|mut f| f.write_all(&out)).map_err(|e| format!("{}: {e}", path.display()))
}

/// scikit-learn's K-Means (Lloyd, the same initial centres) on the same data with `threads`
/// OpenMP threads: seconds per iteration.
const SKLEARN: &str = r#"
import sys, time, numpy as np
from sklearn.cluster import KMeans
x = np.load(sys.argv[1]); k = int(sys.argv[2]); iters = int(sys.argv[3])
init = x[np.arange(k) * (len(x) // k)]
km = KMeans(n_clusters=k, init=init, n_init=1, max_iter=iters, tol=0.0, algorithm="lloyd")
t = time.perf_counter(); km.fit(x); dt = time.perf_counter() - t
print(dt / max(km.n_iter_, 1))
"#;

/// Fig. 7: K-Means time per iteration and throughput on 1, 2, 4 ranks (two figures).
fn fig7(ctx: &Ctx) -> Result<(Figure, Figure), (String, String)> {
    let e = |x: String| ("Fig. 7".to_string(), x);
    let samples = ctx.pick(60_000usize, 581_012);
    let iters = ctx.pick(5usize, 10);
    let k = 7;
    let (mut time, mut tput) = (Vec::new(), Vec::new());
    for ranks in [1usize, 2, 4] {
        ctx.say("003", &format!("K-Means, {samples} samples x 54, k = 7, {ranks} rank(s)"));
        let per_iter = ctx
            .commands
            .kmeans_per_iter(&[
                "--ranks",
                &ranks.to_string(),
                "--samples",
                &samples.to_string(),
                "--iters",
                &iters.to_string(),
            ])
            .map_err(e)?;
        time.push((ranks as f64, per_iter * 1e3));
        tput.push((ranks as f64, samples as f64 / per_iter / 1e6));
    }
    let mut t = Figure::new(
        "003",
        "003-fig7a",
        "Fig. 7a",
        "K-Means time per iteration",
        Axis::lin("ranks (nodes in the paper)", ""),
        Axis::lin("time per iteration", "ms"),
    );
    let mut p = Figure::new(
        "003",
        "003-fig7b",
        "Fig. 7b",
        "K-Means throughput",
        Axis::lin("ranks (nodes in the paper)", ""),
        Axis::lin("throughput", "M samples/s"),
    );
    t.add(Series::new("linerate K-Means (all-reduce on the shm fabric)", Kind::Linerate, &time, "linerate kmeans"));
    p.add(Series::new("linerate K-Means (all-reduce on the shm fabric)", Kind::Linerate, &tput, "linerate kmeans"));
    match python_with("sklearn") {
        Err(why) => {
            t.miss("scikit-learn", &why);
            p.miss("scikit-learn", &why);
        }
        Ok(py) => {
            let dir = std::env::temp_dir().join(format!("lr-repro-km-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|x| e(x.to_string()))?;
            let file = dir.join("x.npy");
            write_npy(&file, &accel::kmeans::covertype_like(samples, 1), samples, accel::kmeans::COVERTYPE_D)
                .map_err(e)?;
            let (mut st, mut sp) = (Vec::new(), Vec::new());
            for threads in [1usize, 2, 4] {
                ctx.say("003", &format!("scikit-learn K-Means, {threads} thread(s)"));
                let o = std::process::Command::new(&py)
                    .args(["-c", SKLEARN])
                    .arg(&file)
                    .args([k.to_string(), iters.to_string()])
                    .env("OMP_NUM_THREADS", threads.to_string())
                    .output()
                    .map_err(|x| e(format!("{}: {x}", py.display())))?;
                let per: f64 = String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .parse()
                    .map_err(|_| e(format!("scikit-learn failed: {}", String::from_utf8_lossy(&o.stderr).trim())))?;
                st.push((threads as f64, per * 1e3));
                sp.push((threads as f64, samples as f64 / per / 1e6));
            }
            let _ = std::fs::remove_dir_all(&dir);
            t.add(Series::new(
                "scikit-learn KMeans (lloyd, OMP threads = ranks)",
                Kind::Peer,
                &st,
                "scikit-learn in the same run",
            ));
            p.add(Series::new(
                "scikit-learn KMeans (lloyd, OMP threads = ranks)",
                Kind::Peer,
                &sp,
                "scikit-learn in the same run",
            ));
        }
    }
    for f in [&mut t, &mut p] {
        f.paper_measured = "EasyNet-KM (Flex-KM's 16 pipelines per FPGA plus one all-reduce per iteration) on the \
            Forest/Covertype data set (581,012 samples x 54, k = 7) on 1, 2 and 4 FPGAs: runtime per iteration and \
            aggregate throughput, sub-linear scaling, communication negligible. No numbers are stated in the text."
            .into();
        f.we_measured = format!(
            "linerate kmeans on {samples} Covertype-shaped samples x 54, k = 7, {iters} iterations, 1, 2 and 4 ranks \
             (threads with their own stacks on the shared-memory fabric), beside scikit-learn's Lloyd K-Means with as \
             many OpenMP threads on the same data and initial centres."
        );
        f.differences =
            "FPGA pipelines on separate nodes vs CPU threads of one 2-core machine: 4 ranks share 2 cores, \
            so scaling stops at 2."
                .into();
    }
    let sk = t.find(Kind::Peer, "scikit").and_then(|s| s.points.first()).map(|p| p.y);
    t.ratio = match sk {
        Some(s) => format!(
            "1 rank: linerate {:.1} ms vs scikit-learn {s:.1} ms per iteration ({:.2}x)",
            time[0].1,
            time[0].1 / s
        ),
        None => format!("1 rank: {:.1} ms per iteration; scikit-learn not measured", time[0].1),
    };
    p.ratio = format!(
        "linerate 2 ranks / 1 rank throughput {:.2}x, 4 ranks / 1 rank {:.2}x",
        tput[1].1 / tput[0].1,
        tput[2].1 / tput[0].1
    );
    Ok((t, p))
}
