//! One rank of a collective self-check on the shared-memory fabric, started by any launcher
//! (`mpirun`, `srun`, a PMI launcher, or `LINERATE_RANK`/`LINERATE_WORLD_SIZE` by hand); or,
//! when `LINERATE_LINK`, `LINERATE_IP` and `LINERATE_ROOT_ADDR` (or `MASTER_ADDR`) are set, on
//! that interface, joined through rank 0 ([`collective::LinkRank`]).
//!
//! ```text
//! lr-collective-rank [--fabric NAME] [--timeout-ms MS] [--elems N] [--die-rank R]
//! ```
//! The fabric name defaults to `LINERATE_FABRIC` (set by `linerate collective launch`).
//! Every rank joins fabric `NAME` at 10.77.0.(rank+1) ([`collective::fabric_host_config`]), connects the full mesh, runs every
//! operation on data that every rank can recompute, checks the results and prints
//! `RESULT rank=R ok` (exit 0), or `ERROR rank=R: ...` (exit 1 on a wrong result, 4 when an
//! operation failed). With `--die-rank R`, rank R exits abruptly (no clean-up, like a
//! killed process) in the middle of an all-reduce, and the others report who is missing.
//! With `--stall-rank R`, rank R stops in the middle of a ring all-reduce (after its first
//! step), prints `STALLED rank=R step=S` and sleeps for a minute, for a test to kill it.
//! With `--bench`, rank 0 prints `ROW bytes op median_us` lines of [`collective::bench`]
//! (all-reduce per algorithm and broadcast from 64 B to 8 MiB, each followed by a barrier,
//! beside the barrier alone; busy-polling; a figure, not a check; `--bench-sizes 64,1024`
//! picks the sizes), then the send/recv goodput
//! rows of Fig. 5b (`LINERATE_BENCH_GOODPUT_ONLY=1` skips the latency part).

use collective::{AllreduceAlgo, Communicator, Config, Endpoint, LinkRank, ReduceOp, ShmFabric, Transport, TreeAlgo};
use link::Link;
use std::process::ExitCode;
use std::time::Duration;

struct Args {
    fabric: String,
    timeout: Duration,
    elems: usize,
    die_rank: Option<usize>,
    stall_rank: Option<usize>,
    bench: bool,
    /// Sizes of the latency part of `--bench` (default: the paper's Fig. 6 sizes).
    bench_sizes: Vec<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        fabric: String::new(),
        timeout: Duration::from_secs(10),
        elems: 10_000,
        die_rank: None,
        stall_rank: None,
        bench: false,
        bench_sizes: collective::bench::fig6_sizes(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--fabric" => a.fabric = val()?,
            "--timeout-ms" => {
                a.timeout = Duration::from_millis(val()?.parse().map_err(|e| format!("--timeout-ms: {e}"))?)
            }
            "--elems" => a.elems = val()?.parse().map_err(|e| format!("--elems: {e}"))?,
            "--bench" => a.bench = true,
            "--bench-sizes" => {
                a.bench_sizes = val()?
                    .split(',')
                    .map(|v| match v.trim().parse::<usize>() {
                        Ok(b) if b % 4 == 0 => Ok(b),
                        _ => Err(format!("--bench-sizes: {v:?} is not a byte count that is a multiple of 4")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--die-rank" => a.die_rank = Some(val()?.parse().map_err(|e| format!("--die-rank: {e}"))?),
            "--stall-rank" => a.stall_rank = Some(val()?.parse().map_err(|e| format!("--stall-rank: {e}"))?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.fabric.is_empty() {
        a.fabric = std::env::var("LINERATE_FABRIC").unwrap_or_default();
    }
    if a.fabric.is_empty() && std::env::var_os("LINERATE_LINK").is_none() {
        return Err("--fabric NAME (or LINERATE_FABRIC, or LINERATE_LINK for a rank on a link) is required".into());
    }
    Ok(a)
}

/// Rank `r`'s data: values every rank can recompute.
fn data(r: usize, len: usize) -> Vec<i64> {
    (0..len).map(|e| ((r + 1) * 1_000_003 + e * 7) as i64 % 1_000_000 - 500_000).collect()
}

fn check(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("wrong result of {what}"))
    }
}

enum Failure {
    Wrong(String),
    Op(collective::CollectiveError),
}

impl From<collective::CollectiveError> for Failure {
    fn from(e: collective::CollectiveError) -> Self {
        Failure::Op(e)
    }
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Wrong(e)
    }
}

fn self_check<L: Link>(c: &mut Communicator<L>, args: &Args) -> Result<(), Failure> {
    let (r, n, len) = (c.rank(), c.size(), args.elems);
    let xs: Vec<Vec<i64>> = (0..n).map(|k| data(k, len)).collect();
    if args.die_rank.is_some() {
        let req = c.endpoint().iallreduce_with(&xs[r], ReduceOp::Sum, AllreduceAlgo::ReduceBcast);
        if Some(r) == args.die_rank {
            // Abrupt exit before the contribution leaves (a poll would hand it to the
            // shared-memory pipes at once): no destructor runs, the rings stay open, the peers
            // hear nothing.
            std::process::exit(3);
        }
        c.wait(req)?;
        return Err(Failure::Wrong("the all-reduce finished although a rank died".into()));
    }
    if let Some(s) = args.stall_rank {
        return stall_mid_ring(c, &xs[r], s);
    }
    let sum: Vec<i64> = (0..len).map(|e| xs.iter().map(|x| x[e]).sum()).collect();
    for algo in [AllreduceAlgo::ReduceBcast, AllreduceAlgo::Ring, AllreduceAlgo::RecursiveDoubling] {
        let req = c.endpoint().iallreduce_with(&xs[r], ReduceOp::Sum, algo);
        check(&format!("all-reduce {algo:?}"), c.wait(req)? == sum)?;
    }
    let max: Vec<i64> = (0..len).map(|e| xs.iter().map(|x| x[e]).max().unwrap_or(0)).collect();
    check("all-reduce max", c.allreduce(&xs[r], ReduceOp::Max)? == max)?;
    let f: Vec<f32> = xs[r].iter().map(|&v| (v % 1000) as f32).collect();
    let fsum: Vec<f32> = (0..len).map(|e| xs.iter().map(|x| (x[e] % 1000) as f32).sum()).collect();
    check("all-reduce f32", c.allreduce(&f, ReduceOp::Sum)? == fsum)?;
    for algo in [TreeAlgo::Flat, TreeAlgo::Tree, TreeAlgo::Chain, TreeAlgo::Auto] {
        let req = c.endpoint().ibcast_with(&xs[r], n - 1, algo)?;
        check(&format!("broadcast {algo:?}"), c.wait(req)? == xs[n - 1])?;
        let req = c.endpoint().ireduce_with(&xs[r], ReduceOp::Sum, n / 2, algo)?;
        let want = if r == n / 2 { sum.clone() } else { Vec::new() };
        check(&format!("reduce {algo:?}"), c.wait(req)? == want)?;
    }
    let sc = c.scatter(if r == n - 1 { &xs[r][..3 * n] } else { &[] }, 3, n - 1)?;
    check("scatter", sc == xs[n - 1][3 * r..3 * r + 3])?;
    let g = c.gather(&xs[r][..5], 0)?;
    let want: Vec<i64> = if r == 0 { xs.iter().flat_map(|x| x[..5].to_vec()).collect() } else { Vec::new() };
    check("gather", g == want)?;
    let ag = c.allgather(&xs[r][..3])?;
    check("all-gather", ag == xs.iter().flat_map(|x| x[..3].to_vec()).collect::<Vec<_>>())?;
    let a2a = c.alltoall(&xs[r][..2 * n])?;
    check("all-to-all", a2a == (0..n).flat_map(|i| xs[i][2 * r..2 * r + 2].to_vec()).collect::<Vec<_>>())?;
    let rs = c.reduce_scatter(&xs[r][..4 * n], ReduceOp::Sum)?;
    check("reduce-scatter", rs == sum[4 * r..4 * r + 4])?;
    if n > 1 {
        c.send((r + 1) % n, 1, &xs[r][..10])?;
        let got = c.recv::<i64>((r + n - 1) % n, 1, 10)?;
        check("send/recv", got == xs[(r + n - 1) % n][..10])?;
    }
    c.barrier()?;
    Ok(())
}

/// A ring all-reduce in which rank `stall` stops after its first step (and waits to be
/// killed); the other ranks report the failure of the all-reduce.
fn stall_mid_ring<L: Link>(c: &mut Communicator<L>, x: &[i64], stall: usize) -> Result<(), Failure> {
    let req = c.endpoint().iallreduce_with(x, ReduceOp::Sum, AllreduceAlgo::Ring);
    if c.rank() != stall {
        c.wait(req)?;
        return Err(Failure::Wrong("the all-reduce finished although a rank stalled".into()));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while c.endpoint().step_of(&req).unwrap_or(0) < 1 {
        if std::time::Instant::now() > deadline {
            return Err(Failure::Wrong("the ring never got past its first step".into()));
        }
        c.poll()?;
    }
    use std::io::Write;
    println!("STALLED rank={} step={}", c.rank(), c.endpoint().step_of(&req).unwrap_or(0));
    let _ = std::io::stdout().flush();
    std::thread::sleep(Duration::from_secs(60));
    std::process::exit(5);
}

/// Prints this rank's latency table (rank 0 only): `ROW bytes op median_us` lines.
fn bench<L: Link>(c: &mut Communicator<L>, sizes: &[usize]) -> Result<(), Failure> {
    let mut rows = if std::env::var_os("LINERATE_BENCH_GOODPUT_ONLY").is_some() {
        Vec::new()
    } else {
        collective::bench::latency(c, sizes)?
    };
    rows.extend(collective::bench::goodput(c, &collective::bench::fig5_sizes())?);
    if c.rank() == 0 {
        println!("# median us of each operation followed by a barrier, i32 sum, {} ranks, busy-polling", c.size());
        for r in rows {
            println!("ROW {} {} {:.2}", r.bytes, r.op, r.median_us);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("lr-collective-rank: {e}");
            return ExitCode::from(2);
        }
    };
    let launch = match collective::from_env() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("lr-collective-rank: {e}");
            return ExitCode::from(2);
        }
    };
    let (r, n) = (launch.rank, launch.size);
    if n > 254 {
        eprintln!("lr-collective-rank: at most 254 ranks on one fabric");
        return ExitCode::from(2);
    }
    let run = || -> Result<(), Failure> {
        if let Some(on) = LinkRank::resolve(&launch, None, None, None)? {
            let mut cfg = Config { timeout: args.timeout, ..Config::default() };
            Transport::from_env()?.apply(&mut cfg, false, launch.fabric.as_deref())?;
            let mut c = on.join(r, n, cfg, false)?;
            if args.bench {
                bench(&mut c, &args.bench_sizes)?;
                eprintln!("rank {r}: link {} {:?}", on.link, c.stack().link().stats());
            } else {
                self_check(&mut c, &args)?;
            }
            c.finalize()?;
            return Ok(());
        }
        let fabric = ShmFabric::join(&args.fabric, r, n, collective::fabric_link_config(), Duration::from_secs(30))
            .map_err(|e| Failure::Wrong(format!("joining the fabric: {e}")))?;
        let nc = collective::fabric_host_config(r, n).map_err(|e| Failure::Wrong(e.to_string()))?;
        let stack = net::Stack::new(nc, fabric).map_err(|e| Failure::Wrong(e.to_string()))?;
        let addrs = collective::fabric_addrs(n);
        let shm = Transport::from_env()?.shm_job(true, Some(&args.fabric))?;
        let cfg = Config { timeout: args.timeout, connect_timeout: Duration::from_secs(30), shm, ..Config::default() };
        let mut c = Communicator::new(stack, Endpoint::new(r, addrs, cfg)?)?;
        c.connect()?;
        if args.bench {
            bench(&mut c, &args.bench_sizes)?;
            let st = c.stack();
            let cn = st.counters();
            eprintln!(
                "rank {r}: retransmits {} rto {} fast {} link {:?} fabric {:?}",
                cn.get(net::Counter::tcp_retransmits),
                cn.get(net::Counter::tcp_rto_fired),
                cn.get(net::Counter::tcp_fast_retransmits),
                st.link().stats(),
                st.link().counters()
            );
        } else {
            self_check(&mut c, &args)?;
        }
        c.finalize()?;
        Ok(())
    };
    match run() {
        Ok(()) => {
            println!("RESULT rank={r} ok");
            ExitCode::SUCCESS
        }
        Err(Failure::Wrong(e)) => {
            println!("ERROR rank={r}: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Op(e)) => {
            println!("ERROR rank={r}: {e}");
            ExitCode::from(4)
        }
    }
}
