//! `linerate collective launch`: start N ranks of a program on this machine, joined by one
//! shared-memory fabric (or on one interface each, `--link`); and `linerate kmeans`: the
//! distributed K-Means of seed 003 on 1..N ranks (threads, each with its own stack, on the
//! shared-memory fabric), or one rank per process on a link (`--link`, for ranks on
//! different machines), whose collective counters `linerate stats` shows while it runs.

mod job;

use crate::statsfile::StatsPublisher;
use accel::kmeans::{covertype_like, Shape, COVERTYPE_D, COVERTYPE_N};
use apps::kmeans::{share, DistKmeans};
use bench::output::{print_all, Cell, Table, Unit};
use collective::{Communicator, Config as CollConfig, Endpoint, LinkRank, ShmFabric};
use link::Link;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The `collective` subcommands.
#[derive(clap::Subcommand)]
pub enum CollectiveCommand {
    /// Start N local processes of PROGRAM as ranks 0..N on one shared-memory fabric
    /// (each gets LINERATE_RANK, LINERATE_WORLD_SIZE and LINERATE_FABRIC), or with --link
    /// on one interface each (LINERATE_LINK, LINERATE_IP, LINERATE_ROOT_ADDR). Output comes
    /// whole lines at a time; when a rank fails the others are stopped and the launcher exits
    /// with the failed rank's status; the fabric's /dev/shm files are removed on any exit.
    Launch(LaunchArgs),
    /// Remove the /dev/shm files of linerate jobs that were killed (files no live process
    /// maps or holds open).
    Cleanup(CleanupArgs),
}

/// Options of `linerate collective launch`.
#[derive(clap::Args)]
pub struct LaunchArgs {
    /// Number of ranks.
    #[arg(short = 'n', long = "np", default_value_t = 2)]
    n: usize,
    /// Name of the fabric (default: `lr-PID`).
    #[arg(long)]
    fabric: Option<String>,
    /// Put `[rank]<stdout>:` (or `<stderr>`) in front of every line a rank prints.
    #[arg(long)]
    tag_output: bool,
    /// Join over links instead of the fabric: every rank's link spec, `{rank}` standing for
    /// its number (`af_xdp:veth{rank}`, `af_packet:eth1`). Needs --ip.
    #[arg(long, value_name = "SPEC", requires = "ip")]
    link: Option<String>,
    /// Rank 0's address on the links, `a.b.c.d/len`, optionally followed by IPv6 ones
    /// (`10.9.0.1/24,fd09::1/64`); rank r gets each address plus r.
    #[arg(long, value_name = "CIDR", requires = "link")]
    ip: Option<String>,
    /// Rank 0's rendezvous address, `a.b.c.d[:port]` or `[v6addr]:port` (default: rank 0's
    /// IPv4 --ip, port 7470); the ranks meet in its family.
    #[arg(long, value_name = "ADDR", requires = "link")]
    root: Option<String>,
    /// Run every rank in this network namespace (`ip netns exec`), `{rank}` standing for
    /// its number (`ns{rank}`).
    #[arg(long, value_name = "NAME", requires = "link")]
    netns: Option<String>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    program: Vec<String>,
}

/// Options of `linerate collective cleanup`.
#[derive(clap::Args)]
pub struct CleanupArgs {
    /// Leave files changed less than this many seconds ago (a job may be creating them).
    #[arg(long, default_value_t = 2.0)]
    min_age: f64,
    /// Only the files of this fabric (`linerate-FABRIC-…`); default: every linerate file.
    #[arg(long)]
    fabric: Option<String>,
}

/// Runs a `collective` subcommand.
pub fn run(c: CollectiveCommand) -> Result<ExitCode, String> {
    match c {
        CollectiveCommand::Launch(a) => launch(a),
        CollectiveCommand::Cleanup(a) => cleanup(a),
    }
}

fn launch(a: LaunchArgs) -> Result<ExitCode, String> {
    if a.n == 0 || a.n > 254 {
        return Err(format!("-n {} is not a rank count between 1 and 254", a.n));
    }
    let on_link = match (&a.link, &a.ip) {
        (Some(link), Some(ip)) => Some(on_link(a.n, link, ip, a.root.as_deref(), a.netns.clone())?),
        _ => None,
    };
    let fabric = a.fabric.unwrap_or_else(|| format!("lr-{}", std::process::id()));
    job::run(job::Job { n: a.n, fabric, program: a.program, tag_output: a.tag_output, on_link })
}

/// Checks `--link`, `--ip` and `--root` for `n` ranks (as each rank will: through
/// [`collective::LinkRank`]) and places rank r at the address plus r.
fn on_link(n: usize, link: &str, ip: &str, root: Option<&str>, netns: Option<String>) -> Result<job::OnLink, String> {
    let first = ip.split('/').next().unwrap_or_default();
    let rank0 = collective::LinkRank::new(&link.replace("{rank}", "0"), ip, root.unwrap_or(first))
        .map_err(|e| format!("--link/--ip/--root: {e}"))?;
    rank0.check(0).map_err(|e| format!("--ip/--root: {e}"))?;
    let last = u32::from(rank0.host.ip).checked_add(n as u32 - 1);
    let mask = u32::MAX.checked_shl(32 - u32::from(rank0.host.prefix_len)).unwrap_or(0);
    if last.is_none_or(|l| l & mask != u32::from(rank0.host.ip) & mask) {
        return Err(format!("--ip {ip}: {n} consecutive addresses from it do not fit its subnet"));
    }
    for c in &rank0.host.ipv6.addrs {
        let span = c.addr.to_bits().checked_add(n as u128 - 1).map(std::net::Ipv6Addr::from_bits);
        if span.is_none_or(|l| !c.contains(l)) {
            return Err(format!("--ip {ip}: {n} consecutive addresses from {c} do not fit its prefix"));
        }
    }
    Ok(job::OnLink {
        link: link.to_string(),
        ip: rank0.host.ip,
        prefix: rank0.host.prefix_len,
        ip6: rank0.host.ipv6.addrs.clone(),
        root: rank0.root,
        netns,
    })
}

fn cleanup(a: CleanupArgs) -> Result<ExitCode, String> {
    let removed = job::cleanup(Duration::from_secs_f64(a.min_age.max(0.0)), a.fabric.as_deref())?;
    for p in &removed {
        bench::outln!("removed {}", p.display());
    }
    bench::outln!("{} stale shared-memory file(s) removed", removed.len());
    Ok(ExitCode::SUCCESS)
}

/// Options of `linerate kmeans`.
#[derive(clap::Args)]
pub struct KmeansArgs {
    /// Ranks (threads, each with its own stack, on one shared-memory fabric).
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// Samples of the built-in Covertype-shaped generator (54 features; ignored with --data).
    #[arg(long, default_value_t = COVERTYPE_N)]
    samples: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of centres.
    #[arg(short = 'k', long, default_value_t = 7)]
    k: usize,
    /// Iterations (Lloyd steps).
    #[arg(long, default_value_t = 10)]
    iters: usize,
    /// Samples from a file instead of the generator: .npy (2-D float32/64, int32/64) or CSV.
    #[arg(long, value_name = "FILE")]
    data: Option<std::path::PathBuf>,
    /// Initial centres (k rows) from a .npy or CSV file; default: k samples evenly spaced.
    #[arg(long, value_name = "FILE")]
    init: Option<std::path::PathBuf>,
    /// Run one rank in this process on this link (`af_xdp:IFACE`, `af_packet:IFACE`) instead
    /// of --ranks threads; rank and world size come from --rank/--world-size or the
    /// launcher (`mpirun`, `srun`, `linerate collective launch`), as LINERATE_LINK can.
    #[arg(long, value_name = "SPEC", conflicts_with = "ranks")]
    link: Option<String>,
    /// This rank's address on the link, `a.b.c.d/len` (default: LINERATE_IP).
    #[arg(long, value_name = "CIDR")]
    ip: Option<String>,
    /// Rank 0's address, `a.b.c.d[:port]` (default: LINERATE_ROOT_ADDR or MASTER_ADDR).
    #[arg(long, value_name = "ADDR")]
    root: Option<String>,
    /// This process's rank, with --world-size (default: the launcher's).
    #[arg(long, requires = "world_size")]
    rank: Option<usize>,
    /// Number of ranks, with --rank.
    #[arg(long, requires = "rank")]
    world_size: Option<usize>,
    /// Print the figures and the final centres as JSON (`{"tables": [...]}` like every
    /// command): a table of the run's figures and one of the centres (a row per centre, a
    /// column per feature).
    #[arg(long)]
    json: bool,
    /// Write the final centres to this `.npy` file (k x features, float32; with --link only
    /// rank 0 writes it).
    #[arg(long, value_name = "FILE.npy")]
    centres_out: Option<std::path::PathBuf>,
}

struct RankReport {
    compute: Duration,
    comm: Duration,
    centres: Vec<f32>,
    iterations: usize,
}

fn kmeans_rank(
    r: usize,
    n: usize,
    fabric: &str,
    shape: Shape,
    data: Vec<f32>,
    init: &[f32],
    iters: usize,
) -> Result<RankReport, String> {
    let e = |x: &dyn std::fmt::Display| format!("rank {r}: {x}");
    let fab =
        ShmFabric::join(fabric, r, n, collective::fabric_link_config(), Duration::from_secs(30)).map_err(|x| e(&x))?;
    let nc = collective::fabric_host_config(r, n).map_err(|x| e(&x))?;
    let stack = net::Stack::new(nc, fab).map_err(|x| e(&x))?;
    let addrs = collective::fabric_addrs(n);
    let ep = Endpoint::new(r, addrs, CollConfig::default()).map_err(|x| e(&x))?;
    let mut comm = Communicator::new(stack, ep).map_err(|x| e(&x))?;
    comm.connect().map_err(|x| e(&x))?;
    fit_rank(r, comm, shape, data, init, iters)
}

/// Runs the K-Means iterations of rank `r` on its connected communicator.
fn fit_rank<L: Link>(
    r: usize,
    mut comm: Communicator<L>,
    shape: Shape,
    data: Vec<f32>,
    init: &[f32],
    iters: usize,
) -> Result<RankReport, String> {
    let e = |x: &dyn std::fmt::Display| format!("rank {r}: {x}");
    let mut km = DistKmeans::new(shape, data, init).map_err(|x| e(&x))?;
    // The collective layer's counters, live in `linerate stats` while the run lasts.
    let stats = StatsPublisher::new(&format!("kmeans-{}-rank{r}", std::process::id()), "kmeans").map_err(|x| e(&x))?;
    let mut published = Instant::now();
    let (mut compute, mut wait) = (Duration::ZERO, Duration::ZERO);
    for i in 0..iters {
        if i == 0 || published.elapsed() >= Duration::from_millis(250) {
            let _ = stats.publish(&comm.endpoint().counters().named());
            published = Instant::now();
        }
        let t0 = Instant::now();
        let req = km.start(comm.endpoint()).map_err(|x| e(&x))?;
        let t1 = Instant::now();
        let reduced = comm.wait(req).map_err(|x| e(&x))?;
        let t2 = Instant::now();
        km.finish(&reduced).map_err(|x| e(&x))?;
        compute += t1 - t0 + t2.elapsed();
        wait += t2 - t1;
    }
    comm.barrier().map_err(|x| e(&x))?;
    let centres = km.centres().to_vec();
    comm.finalize().map_err(|x| e(&x))?;
    Ok(RankReport { compute, comm: wait, centres, iterations: km.iterations })
}

/// FNV-1a over the bits of the centres: equal on every rank count when the results are.
fn checksum(c: &[f32]) -> u64 {
    c.iter()
        .flat_map(|v| v.to_bits().to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// What one K-Means run measured.
pub(crate) struct KmeansOutcome {
    /// Samples.
    pub samples: usize,
    /// Features per sample.
    pub features: usize,
    /// Lloyd steps run.
    pub iterations: usize,
    /// Seconds per iteration (the slowest rank).
    pub per_iter: f64,
    /// Seconds per iteration spent waiting for the all-reduce (the slowest rank).
    pub comm: f64,
    /// Seconds in all, with set-up.
    pub total: f64,
    /// Checksum of the final centres (equal on every rank).
    pub checksum: u64,
    /// The final centres, k rows of `features` values.
    pub centres: Vec<f32>,
}

/// Runs `linerate kmeans`.
pub fn run_kmeans(a: KmeansArgs) -> Result<ExitCode, String> {
    if a.link.is_some() || a.rank.is_some() || std::env::var_os("LINERATE_LINK").is_some() {
        return run_kmeans_rank(&a);
    }
    let o = measure_kmeans(&a)?;
    write_centres(&a, &o.centres, o.features)?;
    if a.json {
        let mut t = Table::new(
            "linerate kmeans",
            &["samples", "features", "k", "ranks", "iterations", "per iteration", "throughput", "communication"],
        );
        t.row(vec![
            Cell::count_u64(o.samples as u64),
            Cell::count_u64(o.features as u64),
            Cell::count_u64(a.k as u64),
            Cell::count_u64(a.ranks as u64),
            Cell::count_u64(o.iterations as u64),
            Cell::secs(o.per_iter),
            Cell::Num(o.samples as f64 / o.per_iter, Unit::OpsPerSec),
            Cell::Num(o.comm / o.per_iter.max(f64::MIN_POSITIVE), Unit::Percent),
        ]);
        t.summary("all-reduce values", Cell::count_u64((a.k * o.features + a.k + 1) as u64));
        t.summary("total with set-up", Cell::secs(o.total));
        t.summary("centres checksum", format!("{:016x}", o.checksum));
        print_all(&[&t, &centres_table(&o.centres, o.features)], true);
        return Ok(ExitCode::SUCCESS);
    }
    bench::outln!(
        "kmeans: {} samples x {} features, k = {}, {} ranks, {} iterations (total {:.2} s with set-up)",
        o.samples,
        o.features,
        a.k,
        a.ranks,
        o.iterations,
        o.total
    );
    bench::outln!(
        "per iteration {:.2} ms, throughput {:.1} M samples/s, communication {:.1}% of an iteration (all-reduce of {} values)",
        o.per_iter * 1e3,
        o.samples as f64 / o.per_iter / 1e6,
        100.0 * o.comm / o.per_iter.max(f64::MIN_POSITIVE),
        a.k * o.features + a.k + 1
    );
    bench::outln!("centres checksum {:016x}", o.checksum);
    Ok(ExitCode::SUCCESS)
}

/// The centres as a table: a row per centre, a column per feature (dimensionless values).
fn centres_table(centres: &[f32], features: usize) -> Table {
    let headers: Vec<String> =
        std::iter::once("centre".to_string()).chain((0..features).map(|f| format!("feature {f}"))).collect();
    let mut t = Table::new("kmeans centres", &headers.iter().map(String::as_str).collect::<Vec<_>>());
    for (i, c) in centres.chunks(features.max(1)).enumerate() {
        let cells =
            std::iter::once(Cell::count_u64(i as u64)).chain(c.iter().map(|&v| Cell::Num(v.into(), Unit::Ratio)));
        t.row(cells.collect());
    }
    t
}

/// `--centres-out FILE.npy`: the centres as a k x features float32 array (the workspace's
/// one `.npy` writer, `accel::matrix::write_npy`).
fn write_centres(a: &KmeansArgs, centres: &[f32], features: usize) -> Result<(), String> {
    let Some(path) = &a.centres_out else { return Ok(()) };
    let m = accel::matrix::Matrix { data: centres.to_vec(), rows: a.k, cols: features };
    accel::matrix::write_npy(path, &m).map_err(|e| format!("--centres-out: {e}"))
}

/// One rank of `linerate kmeans --link`: this process's share of the samples, the
/// all-reduce over the link with the other processes.
fn run_kmeans_rank(a: &KmeansArgs) -> Result<ExitCode, String> {
    let (rank, size) = (a.rank.map(|r| r.to_string()), a.world_size.map(|n| n.to_string()));
    let l = collective::parse_launch(|k| match k {
        "LINERATE_RANK" if rank.is_some() => rank.clone(),
        "LINERATE_WORLD_SIZE" if size.is_some() => size.clone(),
        _ => std::env::var(k).ok(),
    })
    .map_err(|e| e.to_string())?;
    let on = LinkRank::resolve(&l, a.link.as_deref(), a.ip.as_deref(), a.root.as_deref())
        .map_err(|e| e.to_string())?
        .ok_or("--rank/--world-size run one rank on a link: name it with --link (or LINERATE_LINK)")?;
    let (r, n) = (l.rank, l.size);
    let (data, rows, shape, init) = kmeans_inputs(a)?;
    let part = share(rows, n, r);
    let mine = data[part.start * shape.d..part.end * shape.d].to_vec();
    let started = Instant::now();
    let comm = on.join(r, n, CollConfig::default(), false).map_err(|e| e.to_string())?;
    let rep = fit_rank(r, comm, shape, mine, &init, a.iters)?;
    let iters = rep.iterations.max(1) as f64;
    let per_iter = (rep.compute + rep.comm).as_secs_f64() / iters;
    if r == 0 {
        write_centres(a, &rep.centres, shape.d)?;
    }
    if a.json {
        let mut t = Table::new(
            &format!("linerate kmeans rank {r} of {n} on {}", on.link),
            &["rank", "ranks", "samples", "features", "k", "iterations", "per iteration", "communication"],
        );
        t.row(vec![
            Cell::count_u64(r as u64),
            Cell::count_u64(n as u64),
            Cell::count_u64(part.len() as u64),
            Cell::count_u64(shape.d as u64),
            Cell::count_u64(a.k as u64),
            Cell::count_u64(rep.iterations as u64),
            Cell::secs(per_iter),
            Cell::Num(rep.comm.as_secs_f64() / iters / per_iter.max(f64::MIN_POSITIVE), Unit::Percent),
        ]);
        t.summary("total with set-up", Cell::secs(started.elapsed().as_secs_f64()));
        t.summary("centres checksum", format!("{:016x}", checksum(&rep.centres)));
        print_all(&[&t, &centres_table(&rep.centres, shape.d)], true);
        return Ok(ExitCode::SUCCESS);
    }
    bench::outln!(
        "kmeans rank {r} of {n} on {}: {} of {rows} samples x {} features, k = {}, {} iterations (total {:.2} s with set-up)",
        on.link,
        part.len(),
        shape.d,
        a.k,
        rep.iterations,
        started.elapsed().as_secs_f64()
    );
    bench::outln!(
        "per iteration {:.2} ms, communication {:.1}% of an iteration",
        per_iter * 1e3,
        100.0 * rep.comm.as_secs_f64() / iters / per_iter.max(f64::MIN_POSITIVE)
    );
    bench::outln!("centres checksum {:016x}", checksum(&rep.centres));
    Ok(ExitCode::SUCCESS)
}

/// The samples of `a` (from its file or the generator), their count, the shape, and the
/// initial centres.
fn kmeans_inputs(a: &KmeansArgs) -> Result<(Vec<f32>, usize, Shape, Vec<f32>), String> {
    if a.k == 0 {
        return Err("k must be at least 1".into());
    }
    let (data, n, d) = match &a.data {
        Some(p) => {
            let m = accel::matrix::load(p).map_err(|e| e.to_string())?;
            (m.data, m.rows, m.cols)
        }
        None => (covertype_like(a.samples, a.seed), a.samples, COVERTYPE_D),
    };
    let init: Vec<f32> = match &a.init {
        Some(p) => {
            let m = accel::matrix::load(p).map_err(|e| e.to_string())?;
            if m.cols != d || m.rows != a.k {
                return Err(format!(
                    "{}: {} x {} centres, expected k = {} rows of {d}",
                    p.display(),
                    m.rows,
                    m.cols,
                    a.k
                ));
            }
            m.data
        }
        None => {
            if n < a.k {
                return Err(format!("need at least k = {} samples, have {n}", a.k));
            }
            let stride = n / a.k;
            (0..a.k).flat_map(|j| data[j * stride * d..(j * stride + 1) * d].to_vec()).collect()
        }
    };
    Ok((data, n, Shape { d, k: a.k }, init))
}

/// Run the distributed K-Means of `a` (one thread per rank) and time it.
pub(crate) fn measure_kmeans(a: &KmeansArgs) -> Result<KmeansOutcome, String> {
    if a.ranks == 0 || a.ranks > 64 {
        return Err(format!("--ranks {} is not between 1 and 64", a.ranks));
    }
    let (data, n, shape, init) = kmeans_inputs(a)?;
    let fabric = format!("lr-kmeans-{}", std::process::id());
    let started = Instant::now();
    let reports: Vec<Result<RankReport, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.ranks)
            .map(|r| {
                let part = share(n, a.ranks, r);
                let mine = data[part.start * shape.d..part.end * shape.d].to_vec();
                let (fabric, init) = (&fabric, &init);
                s.spawn(move || kmeans_rank(r, a.ranks, fabric, shape, mine, init, a.iters))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into()))).collect()
    });
    let total = started.elapsed();
    let mut reports: Vec<RankReport> = reports.into_iter().collect::<Result<_, _>>()?;
    let iters = reports[0].iterations.max(1);
    let per_iter = reports.iter().map(|r| (r.compute + r.comm).as_secs_f64()).fold(0.0, f64::max) / iters as f64;
    let comm = reports.iter().map(|r| r.comm.as_secs_f64()).fold(0.0, f64::max) / iters as f64;
    let sums: Vec<u64> = reports.iter().map(|r| checksum(&r.centres)).collect();
    if sums.iter().any(|&c| c != sums[0]) {
        return Err(format!("ranks ended with different centres: {sums:x?}"));
    }
    Ok(KmeansOutcome {
        samples: n,
        features: shape.d,
        iterations: iters,
        per_iter,
        comm,
        total: total.as_secs_f64(),
        checksum: sums[0],
        centres: reports.swap_remove(0).centres,
    })
}
