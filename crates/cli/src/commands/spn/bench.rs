//! `linerate spn bench`: the evaluator's samples/s on one core and on every core (measured in
//! alternating rounds, in wall-clock time and per CPU-second), then the
//! service between two linerate processes on a shared-memory link (UDP, TCP and raw Ethernet,
//! both sides busy-polling, pinned to two CPUs), with throughput, latency histogram, the
//! link's theoretical limit for the record size (TaPaSCo paper Eq. 1 and 3) and the bottleneck.

use super::serve::ServeReport;
use super::{parse_inputs, to_u8_inputs, ModelArgs};
use crate::bench_common::{
    bench_cpus, check_secs, msg, pin_side, print_tables, progress, step, unique_name, GRACE, READY,
};
use crate::output::{fmt_si, Cell, Table, Unit};
use crate::runloop::{install_stop_handler, stop_requested};
use apps::iperf3::cpu::CpuClock;
use apps::spn_service::{run_load, LoadConfig, LoadReport, SpnClient, SPN_ETHERTYPE};
use indicatif::ProgressBar;
use link::shm::ShmLink;
use link::{Instant, LinkConfig};
use net::{Config, Stack};
use spn::{eval_u8_parallel, CompiledSpn, Evaluator, Missing, Output};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Input vectors sampled from the model when no --inputs are given.
const SAMPLED_INPUTS: usize = 65_536;
/// Service goal: this share of the lower of the evaluator rate and the link's limit.
const GOAL_SHARE: f64 = 0.9;

/// Options of `linerate spn bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Input vectors (CSV, 8-bit values or "nan"); default: 65,536 sampled from the model.
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// How long each measurement lasts (a duration: 2s, 500ms; a bare number is seconds).
    #[arg(value_name = "DURATION", long = "duration", short = 't', alias = "secs", default_value = "2s", value_parser = crate::duration::parse_duration)]
    secs: Duration,
    /// Threads of the multi-core figure (default: every CPU this process may use).
    #[arg(long)]
    threads: Option<usize>,
    /// Transports of the service measurement.
    #[arg(long, value_delimiter = ',', default_value = "udp,tcp,raw", value_parser = ["udp", "tcp", "raw"])]
    transports: Vec<String>,
    /// IP MTU of the shared-memory link.
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// Vectors per request (default: as many as fit one datagram).
    #[arg(long)]
    vectors: Option<usize>,
    /// Requests kept outstanding by the load generator.
    #[arg(long, default_value_t = 8)]
    window: usize,
    /// Worker threads of the service besides its polling thread, which evaluates its share
    /// too (0: the polling thread evaluates everything).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Nominal line rate for the link's theoretical limit, in Gbit/s.
    #[arg(long, default_value_t = 100.0)]
    line_rate_gbps: f64,
    /// Measure the evaluator only (no service).
    #[arg(long)]
    eval_only: bool,
    /// Print JSON (and no progress bar).
    #[arg(long)]
    json: bool,
}

/// Inputs as 8-bit vectors with a missing flag per value.
struct Inputs {
    bytes: Vec<u8>,
    missing: Vec<bool>,
    rows: usize,
}

/// Run `linerate spn bench`.
pub fn run(a: BenchArgs) -> Result<ExitCode, String> {
    let tables = measure(&a)?;
    print_tables(&tables, a.json);
    Ok(ExitCode::SUCCESS)
}

/// Every table of `linerate spn bench` (evaluator and service rates, latency histograms),
/// with a progress bar on stderr unless `--json`.
pub(crate) fn measure(a: &BenchArgs) -> Result<Vec<Table>, String> {
    let secs = check_secs(a.secs)?;
    install_stop_handler();
    let cpus = bench_cpus();
    let model = a.model.load()?;
    let name = if model.name().is_empty() { "model".to_string() } else { model.name().to_string() };
    let inputs = load_inputs(a, &model)?;
    let compiled = CompiledSpn::new(model).map_err(msg)?;
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let steps = 1 + if a.eval_only { 0 } else { a.transports.len() as u64 };
    let pb = progress(steps, a.json);
    let (one, many) = step(&pb, &format!("evaluator, 1 and {threads} threads alternately"), || {
        thread_scaling(&compiled, &inputs, threads, secs)
    })?;
    let single = one.wall;
    let st = compiled.spn().stats();
    let mut t = Table::new(
        &format!(
            "SPN {name}: {} inputs, {} nodes; {} input vectors ({} missing values); arithmetic: {}",
            st.vars,
            st.nodes,
            inputs.rows,
            inputs.missing.iter().filter(|m| **m).count(),
            if compiled.log_space_only() { "log space" } else { "linear f64 with log-space fallback" }
        ),
        &["measurement", "rate (vectors/s)", "notes"],
    );
    let vps = |v: f64| Cell::Num(v, Unit::OpsPerSec);
    let lanes = compiled.cache_lanes();
    t.row(vec![
        Cell::from("evaluator, 1 core"),
        vps(single),
        Cell::Text(format!(
            "Evaluator::eval_u8, {lanes} lanes; {} vectors per CPU-second; median of {ROUNDS} rounds alternating with {threads} threads",
            fmt_si(one.per_cpu, "")
        )),
    ]);
    t.row(vec![
        Cell::Text(format!("evaluator, {threads} threads")),
        vps(many.wall),
        Cell::Text(format!(
            "{:.2}× one thread; {} vectors per CPU-second ({:.0}% of one thread's), {:.2} CPU-seconds per second",
            many.wall / single.max(1e-9),
            fmt_si(many.per_cpu, ""),
            100.0 * many.per_cpu / one.per_cpu.max(1e-9),
            many.cpus
        )),
    ]);
    t.summary(&format!("{threads}-thread speed-up, wall clock"), Cell::Num(many.wall / single.max(1e-9), Unit::Ratio));
    t.summary(
        &format!("{threads}-thread efficiency per CPU-second"),
        Cell::Num(many.per_cpu / one.per_cpu.max(1e-9), Unit::Percent),
    );
    t.summary(&format!("CPU-seconds per second, {threads} threads"), Cell::Num(many.cpus, Unit::Ratio));
    let mut tables = vec![];
    if !a.eval_only {
        let model_file = TempModel::write(compiled.spn())?;
        for transport in &a.transports {
            if stop_requested() {
                break;
            }
            let (report, serve) = step(&pb, &format!("service over {transport}"), || {
                bench_service(a, &compiled, &inputs, transport, &model_file.0, secs, &pb)
            })?;
            service_rows(&mut t, a, &compiled, transport, &report, &serve, single);
            tables.push(histogram_table(transport, &report));
        }
    }
    pb.finish_and_clear();
    if cpus.is_none() && !a.json {
        eprintln!("note: fewer than two CPUs are available; the two processes share one");
    }
    tables.insert(0, t);
    Ok(tables)
}

/// The --inputs file, or vectors sampled from the model.
fn load_inputs(a: &BenchArgs, model: &spn::Spn) -> Result<Inputs, String> {
    let nv = model.num_vars();
    let (bytes, missing) = match &a.inputs {
        None => spn::generate::sample_u8(model, SAMPLED_INPUTS, 0.0, a.model.seed.wrapping_add(1)),
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let rows = parse_inputs(BufReader::new(f), nv, &p.display().to_string())?;
            to_u8_inputs(&rows, &p.display().to_string())?
        }
    };
    let rows = bytes.len() / nv;
    if rows == 0 {
        return Err("no input vectors".into());
    }
    Ok(Inputs { bytes, missing, rows })
}

/// Rounds of the thread-scaling measurement (each runs one thread, then every thread).
const ROUNDS: u32 = 5;

/// One evaluator measurement.
#[derive(Clone, Copy, Default)]
struct EvalRate {
    /// Vectors per second of wall-clock time.
    wall: f64,
    /// Vectors per CPU-second of this process (user and system).
    per_cpu: f64,
    /// CPU-seconds this process used per second (cores kept busy).
    cpus: f64,
}

/// The evaluator on one thread and on `threads` threads, measured alternately in [`ROUNDS`]
/// rounds of `secs / ROUNDS` each (so both see the same load of a shared machine); the
/// median round of each.
fn thread_scaling(
    model: &Arc<CompiledSpn>,
    inputs: &Inputs,
    threads: usize,
    secs: Duration,
) -> Result<(EvalRate, EvalRate), String> {
    let inputs = tiled(inputs);
    let slice = (secs / ROUNDS).max(Duration::from_millis(100));
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        if stop_requested() {
            break;
        }
        one.push(eval_rate(model, &inputs, 1, slice)?);
        many.push(eval_rate(model, &inputs, threads, slice)?);
    }
    Ok((median_rate(one), median_rate(many)))
}

/// The round of median wall-clock rate.
fn median_rate(mut v: Vec<EvalRate>) -> EvalRate {
    v.sort_by(|a, b| a.wall.total_cmp(&b.wall));
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// `inputs` repeated to at least 65,536 vectors, so each call amortises thread start-up.
fn tiled(inputs: &Inputs) -> Inputs {
    let copies = SAMPLED_INPUTS.div_ceil(inputs.rows).max(1);
    Inputs { bytes: inputs.bytes.repeat(copies), missing: inputs.missing.repeat(copies), rows: inputs.rows * copies }
}

/// Evaluate `inputs` over and over for `secs` on `threads` threads.
fn eval_rate(model: &Arc<CompiledSpn>, inputs: &Inputs, threads: usize, secs: Duration) -> Result<EvalRate, String> {
    let mut out = vec![0.0; inputs.rows];
    let missing = if inputs.missing.iter().any(|m| *m) { Missing::Flags(&inputs.missing) } else { Missing::None };
    let mut ev = Evaluator::new(Arc::clone(model));
    let (start, cpu) = (Instant::now(), CpuClock::start());
    let mut done = 0u64;
    while Instant::now() - start < secs && !stop_requested() {
        if threads == 1 {
            ev.eval_u8(&inputs.bytes, missing, &mut out, Output::LogLikelihood).map_err(msg)?;
        } else {
            eval_u8_parallel(model, &inputs.bytes, missing, &mut out, Output::LogLikelihood, threads).map_err(msg)?;
        }
        done += inputs.rows as u64;
    }
    let cpus = cpu.utilization()[0] / 100.0;
    let wall = (Instant::now() - start).as_secs_f64().max(1e-9);
    Ok(EvalRate { wall: done as f64 / wall, per_cpu: done as f64 / (wall * cpus).max(1e-9), cpus })
}

/// The model written to a temporary file for the serving process; removed on drop.
struct TempModel(PathBuf);

impl TempModel {
    fn write(model: &spn::Spn) -> Result<TempModel, String> {
        let p = std::env::temp_dir().join(format!("{}.json", unique_name("linerate-spn-bench")));
        spn::save_json(model, &p).map_err(msg)?;
        Ok(TempModel(p))
    }
}

impl Drop for TempModel {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A `linerate spn serve` child process whose stdout lines we read; killed on drop.
struct ServeChild {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl ServeChild {
    fn spawn(args: &[String]) -> Result<ServeChild, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find our own executable: {e}"))?;
        let cpu: Vec<String> = bench_cpus().map(|c| vec!["--cpu".to_string(), c[1].to_string()]).unwrap_or_default();
        let mut child = Command::new(exe)
            .args(["spn", "serve", "--child", "--busy"])
            .args(args)
            .args(cpu)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the serving process: {e}"))?;
        let out = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        let guard = ServeChild { child, lines };
        let out = out.ok_or("the serving process has no stdout")?;
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(guard)
    }

    fn next_line(&self, timeout: Duration) -> Result<String, String> {
        self.lines.recv_timeout(timeout).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => format!("the serving process said nothing for {timeout:?}"),
            mpsc::RecvTimeoutError::Disconnected => "the serving process exited early (its message is above)".into(),
        })
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a serving process on a fresh link and drive it with the load generator.
#[allow(clippy::too_many_arguments)]
fn bench_service(
    a: &BenchArgs,
    model: &Arc<CompiledSpn>,
    inputs: &Inputs,
    transport: &str,
    model_file: &std::path::Path,
    secs: Duration,
    _pb: &ProgressBar,
) -> Result<(LoadReport, ServeReport), String> {
    let name = unique_name("spn-bench");
    let link = ShmLink::create(&name, LinkConfig::default().mtu(a.mtu)).map_err(msg)?;
    let limit = (secs + GRACE * 3).as_secs_f64().to_string();
    let args: Vec<String> = [
        "--shm",
        &name,
        "--model",
        &model_file.display().to_string(),
        "--transport",
        transport,
        "--workers",
        &a.workers.to_string(),
        "--mtu",
        &a.mtu.to_string(),
        "--limit-secs",
        &limit,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let child = ServeChild::spawn(&args)?;
    match child.next_line(Duration::from_secs(20))? {
        l if l == READY => {}
        l => return Err(format!("the serving process printed {l:?} instead of {READY:?}")),
    }
    pin_side(0);
    let nv = model.num_vars();
    let mut stack = Stack::new(Config::host("10.0.0.1/24").mtu(a.mtu), link).map_err(msg)?;
    let mut client = match transport {
        "raw" => {
            // The server's MAC follows from its address (02:00 + IPv4); ARP is not used by raw frames.
            let mac = Config::host("10.0.0.2/24").mac;
            SpnClient::raw(&mut stack, SPN_ETHERTYPE, mac, nv)
        }
        "tcp" => SpnClient::tcp(&mut stack, "10.0.0.2:5005".parse().map_err(msg)?, nv),
        _ => SpnClient::udp(&mut stack, "10.0.0.2:5005".parse::<std::net::SocketAddr>().map_err(msg)?, nv),
    }
    .map_err(msg)?;
    let per =
        a.vectors.unwrap_or_else(|| client.max_vectors(a.mtu, false)).clamp(1, client.max_vectors(a.mtu, false).max(1));
    let cfg = LoadConfig {
        vectors_per_request: per.min(inputs.rows),
        window: a.window,
        duration: secs,
        log: true,
        timeout: Duration::from_millis(500),
    };
    // Warm up (ARP, caches), then measure.
    let warm = LoadConfig { duration: Duration::from_millis(200), ..cfg.clone() };
    run_load(&mut stack, &mut client, &inputs.bytes, nv, &warm, Instant::now, |_| Ok(())).map_err(msg)?;
    let report = run_load(&mut stack, &mut client, &inputs.bytes, nv, &cfg, Instant::now, |_| Ok(())).map_err(msg)?;
    drop(client);
    drop(stack); // Closes the link: the child prints its report and exits.
    let line = child.next_line(GRACE)?;
    let serve: ServeReport =
        serde_json::from_str(&line).map_err(|e| format!("the serving process printed {line:?}: {e}"))?;
    Ok((report, serve))
}

/// Wire bytes of one record of `payload` bytes (Ethernet header, FCS, preamble and
/// inter-frame gap as in the paper's Eq. 1; UDP adds 28 bytes of IPv4 and UDP headers, TCP
/// 40 of IPv4 and TCP headers, counting one record per segment).
fn wire_bytes(payload: usize, transport: &str) -> f64 {
    let l3 = payload
        + match transport {
            "udp" => 28,
            "tcp" => 40,
            _ => 0,
        };
    (l3.max(46) + 14 + 4 + 8 + 12) as f64
}

/// The table rows of one service measurement.
fn service_rows(
    t: &mut Table,
    a: &BenchArgs,
    model: &CompiledSpn,
    transport: &str,
    r: &LoadReport,
    s: &ServeReport,
    single: f64,
) {
    let per = if r.requests > 0 { (r.vectors / r.answered.max(1)).max(1) as usize } else { 1 };
    let nv = model.num_vars();
    let req = wire_bytes(16 + per * nv, transport);
    let resp = wire_bytes(16 + per * 8, transport);
    let line_limit = a.line_rate_gbps * 1e9 / 8.0 * per as f64 / req.max(resp);
    let rate = r.vectors_per_sec();
    let eval_target = single * (a.workers + 1) as f64;
    let target = eval_target.min(line_limit);
    let label = match transport {
        "udp" => "UDP",
        "tcp" => "TCP",
        _ => "raw Ethernet",
    };
    let goodput = rate * (16.0 / per as f64 + nv as f64) * 8.0;
    t.row(vec![
        Cell::Text(format!("service over {label}, 2 processes")),
        Cell::Num(rate, Unit::OpsPerSec),
        Cell::Text(format!(
            "{per} vectors/request, window {}, {} server worker(s) + the polling thread; {:.1}% of the 1-core evaluator; request goodput {}",
            a.window,
            a.workers,
            100.0 * rate / single.max(1e-9),
            fmt_si(goodput, "bit/s")
        )),
    ]);
    let mut sum = |what: &str, cell: Cell| t.summary(&format!("{transport} {what}"), cell);
    sum("vectors per request", Cell::count(per as f64));
    sum("request goodput", Cell::bps(goodput));
    sum("latency median", Cell::nanos(r.latency.percentile_ns(50.0) as f64));
    sum("latency p99", Cell::nanos(r.latency.percentile_ns(99.0) as f64));
    sum("latency mean", Cell::nanos(r.latency.mean_ns()));
    sum("latency max", Cell::nanos(r.latency.min_max_ns().1 as f64));
    let c = |k: &str| s.counters.get(k).copied().unwrap_or(0);
    sum("requests sent", Cell::count_u64(r.requests));
    sum("requests answered in order", Cell::count_u64(r.answered));
    sum("requests lost", Cell::count_u64(r.lost));
    sum("error records", Cell::count_u64(r.errors));
    sum("server requests", Cell::count_u64(c("requests")));
    sum("server dropped", Cell::count_u64(c("dropped_short") + c("dropped_bad_magic")));
    sum("server log-space fallbacks", Cell::count_u64(c("fallbacks")));
    for (reason, n) in &s.drops {
        sum(&format!("stack drops {reason}"), Cell::count_u64(*n));
    }
    let bottleneck = if line_limit < eval_target {
        format!(
            "the link: {} Gbit/s carries at most {} for {per}-vector records",
            a.line_rate_gbps,
            fmt_si(line_limit, "vec/s")
        )
    } else if s.cpu_share < 0.8 {
        format!(
            "CPU contention: the serving process was on a CPU only {:.0}% of the time (other processes share these cores), evaluating {:.0}% of the time",
            100.0 * s.cpu_share,
            100.0 * s.eval_share
        )
    } else if s.eval_share >= 0.85 {
        format!("the evaluator: the server spent {:.0}% of its time evaluating", 100.0 * s.eval_share)
    } else {
        format!(
            "the network path: the server evaluated only {:.0}% of the time; the rest went to receiving, sending and waiting for the client",
            100.0 * s.eval_share
        )
    };
    let ratio = rate / target.max(1e-9);
    sum("line-rate limit (vectors/s)", Cell::Num(line_limit, Unit::OpsPerSec));
    sum("goal share of min(evaluator, line-rate limit), met at 0.9", Cell::Num(ratio, Unit::Percent));
    sum("goal", Cell::Goal(ratio >= GOAL_SHARE));
    sum("bottleneck", Cell::Text(bottleneck));
}

/// The latency histogram of one transport as a table.
fn histogram_table(transport: &str, r: &LoadReport) -> Table {
    let mut t = Table::new(
        &format!("request latency histogram, {transport} ({} requests)", r.latency.count()),
        &["below", "requests", "histogram"],
    );
    let rows = r.latency.rows(12);
    let most = rows.iter().map(|x| x.1).max().unwrap_or(1).max(1);
    for (top, c) in rows {
        let bar = "#".repeat((40 * c).div_ceil(most) as usize);
        t.row(vec![Cell::nanos(top as f64), Cell::count_u64(c), Cell::Text(bar)]);
    }
    t
}
