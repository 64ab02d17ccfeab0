//! `linerate bench collective`: all-reduce and broadcast latency, 64 B to 8 MiB (the paper's
//! Fig. 6), for linerate's collectives on the shared-memory fabric beside OpenMPI measured in
//! the same run on the same rank count, over its shared-memory transport (vader) and its TCP
//! transport over loopback. The OpenMPI peer is our own program (`ompi_peer.c`), built with
//! `mpicc` and run under `mpirun`; both sides time "operation, then a barrier" after a
//! barrier and report the median. Ratios are linerate / OpenMPI (below 1: linerate faster).
//! Also the paper's Fig. 5b: send/recv goodput from rank 0 to rank 1, 1 KiB to 64 MiB, timed
//! until a 4-byte reply is back (ratio above 1: linerate faster), and Fig. 5a: the time for
//! rank 0 to open 1..64 connections to rank 1 at once, beside Linux's TCP over loopback
//! (`connect()` one after the other: each returns once its handshake is done). The
//! collective layer's counters of rank 0 follow the tables.

use crate::output::{Cell, Table};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

mod veth;

const PEER_C: &str = include_str!("bench_collective/ompi_peer.c");

/// Options of `linerate bench collective`.
#[derive(clap::Args)]
pub struct CollectiveBenchArgs {
    /// Rank counts to measure.
    #[arg(long, value_delimiter = ',', default_values_t = [2usize, 4])]
    ranks: Vec<usize>,
    /// Measure 2 ranks in two network namespaces joined by a veth pair the benchmark creates
    /// (and deletes), linerate's ranks on it through --link beside OpenMPI's TCP transport over
    /// the same veth (instead of the shared-memory fabric and loopback).
    #[arg(long)]
    veth: bool,
    /// With --veth: how linerate's ranks use the veth.
    #[arg(long, default_value = "af_xdp", value_parser = ["af_xdp", "af_packet"], requires = "veth")]
    link: String,
    /// With --veth: the largest message size to measure (e.g. 4096 for a quick check).
    #[arg(long, requires = "veth", value_name = "BYTES")]
    max_bytes: Option<usize>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Options of the hidden peer: one linerate rank of the benchmark (environment from the
/// launcher, fabric from LINERATE_FABRIC).
#[derive(clap::Args)]
pub struct CollectivePeerArgs {}

type Figures = HashMap<(usize, String), f64>;

/// Repetitions of each connection count of Fig. 5a.
const CONNECT_REPS: usize = 20;

/// `COUNTER name value` lines, in order.
fn parse_counters(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            ["COUNTER", k, v] => v.parse().ok().map(|v| (k.to_string(), v)),
            _ => None,
        })
        .collect()
}

/// Linux's TCP over loopback: the median time to open `k` connections with blocking
/// `connect()` one after the other (each returns once its handshake is done), then accept
/// and close them.
fn linux_connect_us(k: usize, reps: usize) -> Result<f64, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let to = l.local_addr().map_err(|e| e.to_string())?;
    let mut t = Vec::new();
    for _ in 0..reps.max(1) {
        let start = std::time::Instant::now();
        let socks = (0..k).map(|_| std::net::TcpStream::connect(to)).collect::<Result<Vec<_>, _>>();
        t.push(start.elapsed().as_secs_f64() * 1e6);
        let socks = socks.map_err(|e| format!("loopback connect: {e}"))?;
        for _ in 0..k {
            drop(l.accept().map_err(|e| e.to_string())?);
        }
        drop(socks);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

fn parse_rows(text: &str) -> Figures {
    let mut m = HashMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let ["ROW", bytes, op, us] = f[..] {
            if let (Ok(b), Ok(u)) = (bytes.parse::<usize>(), us.parse::<f64>()) {
                m.insert((b, op.to_string()), u);
            }
        }
    }
    m
}

/// The largest message size to measure (`LINERATE_BENCH_MAX_BYTES`; all sizes when unset).
fn max_bytes() -> usize {
    std::env::var("LINERATE_BENCH_MAX_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(usize::MAX)
}

/// Runs one linerate rank of the benchmark (hidden `bench-peer collective`): on the job's
/// shared-memory fabric, or on the link the launcher names (`LINERATE_LINK`, `LINERATE_IP`,
/// `LINERATE_ROOT_ADDR`: the veth mode, where connection set-up is not measured).
pub fn run_peer(_a: CollectivePeerArgs) -> Result<ExitCode, String> {
    let l = collective::from_env().map_err(|e| e.to_string())?;
    if let Some(lr) = collective::LinkRank::resolve(&l, None, None, None).map_err(|e| e.to_string())? {
        let c = lr.join(l.rank, l.size, collective::Config::default(), false).map_err(|e| e.to_string())?;
        return measure_and_report(c, l.rank, false);
    }
    let name = l.fabric.clone().ok_or("LINERATE_FABRIC is not set")?;
    let fab = collective::ShmFabric::join(
        &name,
        l.rank,
        l.size,
        collective::fabric_link_config(),
        std::time::Duration::from_secs(30),
    )
    .map_err(|e| e.to_string())?;
    let stack = net::Stack::new(collective::fabric_host_config(l.rank, l.size).map_err(|e| e.to_string())?, fab)
        .map_err(|e| e.to_string())?;
    let shm =
        collective::Transport::from_env().and_then(|t| t.shm_job(true, Some(&name))).map_err(|e| e.to_string())?;
    let cfg = collective::Config { shm, ..collective::Config::default() };
    let ep = collective::Endpoint::new(l.rank, collective::fabric_addrs(l.size), cfg).map_err(|e| e.to_string())?;
    let mut c = collective::Communicator::new(stack, ep).map_err(|e| e.to_string())?;
    c.connect().map_err(|e| e.to_string())?;
    measure_and_report(c, l.rank, true)
}

/// Measures on the connected `c` (connection set-up too when `connects`) and, on rank 0,
/// prints the rows and the counters.
fn measure_and_report<L: link::Link>(
    mut c: collective::Communicator<L>,
    rank: usize,
    connects: bool,
) -> Result<ExitCode, String> {
    let max = max_bytes();
    let upto = |v: Vec<usize>| v.into_iter().filter(|&b| b <= max).collect::<Vec<_>>();
    let measure = |c: &mut collective::Communicator<L>| -> Result<Vec<_>, collective::CollectiveError> {
        let mut rows = collective::bench::latency(c, &upto(collective::bench::fig6_sizes()))?;
        rows.extend(collective::bench::goodput(c, &upto(collective::bench::fig5_sizes()))?);
        rows.extend(collective::bench::tcp_goodput(c, &upto(collective::bench::fig5_sizes()))?);
        if connects {
            rows.extend(collective::bench::connect_setup(c, &collective::bench::fig5a_counts(), CONNECT_REPS)?);
        }
        Ok(rows)
    };
    let rows = match measure(&mut c) {
        Ok(rows) => rows,
        Err(e) => {
            return Err(format!("rank {rank}: {e}\n{}", c.diagnose()));
        }
    };
    let mut counters: Vec<(&str, u64)> = c.endpoint().counters().named().to_vec();
    let net = c.stack().counters();
    for k in [net::Counter::tcp_retransmits, net::Counter::tcp_rto_fired] {
        counters.push((k.name(), net.get(k)));
    }
    c.finalize().map_err(|e| e.to_string())?;
    if rank == 0 {
        for r in rows {
            println!("ROW {} {} {:.2}", r.bytes, r.op, r.median_us);
        }
        for (k, v) in counters {
            println!("COUNTER {k} {v}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn ours(n: usize) -> Result<(Figures, Vec<(String, u64)>), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let fabric = format!("lr-bench-coll-{}-{n}", std::process::id());
    let children: Vec<std::process::Child> = (0..n)
        .map(|r| {
            Command::new(&exe)
                .args(["bench-peer", "collective"])
                .env("LINERATE_RANK", r.to_string())
                .env("LINERATE_WORLD_SIZE", n.to_string())
                .env("LINERATE_FABRIC", &fabric)
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    collect_ranks(children)
}

/// Waits for the benchmark's rank processes and reads rank 0's rows and counters from
/// their output; a failed rank is named, with what it said on stderr if that was captured.
fn collect_ranks(children: Vec<std::process::Child>) -> Result<(Figures, Vec<(String, u64)>), String> {
    let mut text = String::new();
    for (r, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().map_err(|e| e.to_string())?;
        if !o.status.success() {
            let said = String::from_utf8_lossy(&o.stderr);
            let why = if said.trim().is_empty() { o.status.to_string() } else { said.trim().to_string() };
            return Err(format!("linerate rank {r} failed: {why}"));
        }
        text.push_str(&String::from_utf8_lossy(&o.stdout));
    }
    Ok((parse_rows(&text), parse_counters(&text)))
}

/// Builds the OpenMPI peer in `dir`, or says why it cannot.
fn build_peer(dir: &Path) -> Result<std::path::PathBuf, String> {
    let src = dir.join("ompi_peer.c");
    let bin = dir.join("ompi_peer");
    std::fs::write(&src, PEER_C).map_err(|e| e.to_string())?;
    let out = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .map_err(|e| format!("mpicc is not available ({e}); install openmpi-bin and libopenmpi-dev"))?;
    if !out.status.success() {
        return Err(format!("mpicc failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(bin)
}

fn openmpi(bin: &Path, n: usize, btl: &str) -> Result<Figures, String> {
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &n.to_string(),
            "--mca",
            "pml",
            "ob1",
            "--mca",
            "btl",
            btl,
        ])
        .arg(bin)
        .output()
        .map_err(|e| format!("mpirun is not available ({e})"))?;
    if !out.status.success() {
        return Err(format!("mpirun ({btl}) failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(parse_rows(&String::from_utf8_lossy(&out.stdout)))
}

/// A time given in microseconds, or a blank.
fn us_cell(v: Option<f64>) -> Cell {
    v.map_or(Cell::blank(), |x| Cell::secs(x / 1e6))
}

/// A rate in bit/s, or a blank.
fn bps_cell(v: Option<f64>) -> Cell {
    v.map_or(Cell::blank(), Cell::bps)
}

/// a / b, or a blank.
fn ratio(a: Option<f64>, b: Option<f64>) -> Cell {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Cell::ratio(a / b),
        _ => Cell::blank(),
    }
}

/// Runs `linerate bench collective`.
pub fn run(a: CollectiveBenchArgs) -> Result<ExitCode, String> {
    let tables = if a.veth { measure_veth(&a.link, a.max_bytes.unwrap_or(usize::MAX))? } else { measure(&a.ranks)? };
    crate::bench_common::print_tables(&tables, a.json);
    Ok(ExitCode::SUCCESS)
}

/// The tables of `linerate bench collective --veth` (see `veth`).
fn measure_veth(kind: &str, max_bytes: usize) -> Result<Vec<Table>, String> {
    let dir = std::env::temp_dir().join(format!("lr-bench-coll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let peer = build_peer(&dir);
    let tables = veth::measure(kind, &peer, max_bytes);
    let _ = std::fs::remove_dir_all(&dir);
    tables
}

/// Every table of `linerate bench collective` for the rank counts `ranks`: per count,
/// all-reduce and broadcast latency, send/recv goodput and connection set-up (each beside
/// OpenMPI or Linux where they run), and the collective layer's counters.
pub fn measure(ranks: &[usize]) -> Result<Vec<Table>, String> {
    if ranks.iter().any(|&n| n == 0 || n > 64) {
        return Err("--ranks must be between 1 and 64".into());
    }
    let dir = std::env::temp_dir().join(format!("lr-bench-coll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let peer = build_peer(&dir);
    let mut tables = Vec::new();
    for &n in ranks {
        let (us, counters) = ours(n)?;
        let (shm, tcp, why) = match &peer {
            Ok(bin) => {
                let shm = openmpi(bin, n, "self,vader");
                let tcp = openmpi(bin, n, "self,tcp");
                let why = [&shm, &tcp].iter().filter_map(|r| r.as_ref().err().cloned()).collect::<Vec<_>>().join("; ");
                (shm.unwrap_or_default(), tcp.unwrap_or_default(), why)
            }
            Err(e) => (Figures::new(), Figures::new(), e.clone()),
        };
        for op in ["allreduce", "bcast"] {
            let title = format!(
                "{op} on {n} ranks, median time (operation + barrier); ratio = linerate / OpenMPI{}",
                if why.is_empty() { String::new() } else { format!(" [OpenMPI: {why}]") }
            );
            let mut t = Table::new(
                &title,
                &[
                    "bytes",
                    "linerate",
                    "OpenMPI shm",
                    "OpenMPI tcp",
                    "ratio vs shm",
                    "ratio vs tcp",
                    "barrier (linerate)",
                ],
            );
            for b in collective::bench::fig6_sizes() {
                let k = (b, op.to_string());
                let (l, s, c) = (us.get(&k).copied(), shm.get(&k).copied(), tcp.get(&k).copied());
                t.row(vec![
                    Cell::bytes(b as u64),
                    us_cell(l),
                    us_cell(s),
                    us_cell(c),
                    ratio(l, s),
                    ratio(l, c),
                    us_cell(us.get(&(b, "barrier".to_string())).copied()),
                ]);
            }
            tables.push(t);
        }
        if n >= 2 {
            let mut t = Table::new(
                &format!(
                    "send/recv rank 0 -> 1 ({n} ranks), goodput (until a 4-byte reply); ratio = linerate / peer; \
                     linerate TCP = one plain connection of the same stacks"
                ),
                &[
                    "bytes",
                    "linerate",
                    "linerate TCP",
                    "OpenMPI shm",
                    "OpenMPI tcp",
                    "ratio vs linerate TCP",
                    "ratio vs shm",
                    "ratio vs tcp",
                ],
            );
            for b in collective::bench::fig5_sizes() {
                let get = |f: &Figures, op: &str| f.get(&(b, op.to_string())).copied();
                let gbps = |us: Option<f64>| us.filter(|&u| u > 0.0).map(|u| b as f64 * 8.0 / (u * 1e-6));
                let (l, lt) = (gbps(get(&us, "sendrecv")), gbps(get(&us, "tcp")));
                let (s, c) = (gbps(get(&shm, "sendrecv")), gbps(get(&tcp, "sendrecv")));
                t.row(vec![
                    Cell::bytes(b as u64),
                    bps_cell(l),
                    bps_cell(lt),
                    bps_cell(s),
                    bps_cell(c),
                    ratio(l, lt),
                    ratio(l, s),
                    ratio(l, c),
                ]);
            }
            tables.push(t);
            let mut t = Table::new(
                &format!(
                    "connection set-up, rank 0 -> 1 ({n} ranks), median time until all are established; ratio = linerate / Linux"
                ),
                &["connections", "linerate (pipelined)", "Linux loopback (sequential)", "ratio"],
            );
            for k in collective::bench::fig5a_counts() {
                let l = us.get(&(k, "connect".to_string())).copied();
                let lx = linux_connect_us(k, CONNECT_REPS).ok();
                t.row(vec![Cell::count(k as f64), us_cell(l), us_cell(lx), ratio(l, lx)]);
            }
            tables.push(t);
        }
        let mut t = Table::new(&format!("collective layer counters of rank 0 ({n} ranks)"), &["counter", "value"]);
        for (k, v) in counters {
            t.row(vec![Cell::from(k), Cell::count_u64(v)]);
        }
        tables.push(t);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_and_ratios_divide() {
        let f = parse_rows("# comment\nROW 64 allreduce 6.50\nROW 64 bcast x\nnoise\nROW 512 bcast 2.00\n");
        assert_eq!(f.len(), 2);
        assert_eq!(f.get(&(64, "allreduce".to_string())), Some(&6.5));
        assert_eq!(ratio(Some(3.0), Some(2.0)), Cell::ratio(1.5));
        assert_eq!(ratio(Some(3.0), None), Cell::blank());
        assert_eq!(us_cell(None), Cell::blank());
        assert_eq!(us_cell(Some(2.5)), Cell::secs(2.5e-6));
        let c = parse_counters("COUNTER msgs_sent 12\nCOUNTER bad x\nROW 1 connect 3.0\n");
        assert_eq!(c, vec![("msgs_sent".to_string(), 12)]);
    }
}
