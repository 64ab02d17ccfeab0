//! `linerate spn`: Sum-Product Network inference: `generate` a NIPS-like benchmark model,
//! `compile` (load, validate, convert, show the program), `eval` inputs, `serve` a model over a
//! shared-memory link (UDP, TCP or raw Ethernet), and `bench` the evaluator and the service.

mod bench;

use crate::bench_common::{check_secs, die_with_parent, msg, pin_cpu, CpuMeter, READY};
use crate::output::{Cell, Table};
use crate::runloop::{install_stop_handler, stop_requested, Idler};
use apps::spn_service::{SpnService, SpnServiceConfig, SPN_ETHERTYPE};
use link::shm::ShmLink;
use link::{Instant, LinkError};
use net::{Config, NetError, Stack};
use spn::{CompiledSpn, Evaluator, GeneratorConfig, LeafKind, Output, Spn};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The `linerate spn` subcommands.
#[derive(clap::Subcommand)]
pub enum SpnCommand {
    /// Generate a random valid NIPS-like model (JSON), optionally with sampled inputs (CSV).
    Generate(GenerateArgs),
    /// Load a model (JSON or SPFlow text), validate it, compile it and show the program.
    Compile(CompileArgs),
    /// Evaluate input vectors (CSV, one per line; empty or "nan" = missing).
    Eval(EvalArgs),
    /// Serve a model over a shared-memory link (the other end: `linerate spn bench`, or any
    /// linerate host opening the link).
    Serve(ServeArgs),
    /// Samples/s of the evaluator (one core, all cores) and of the service between two
    /// linerate processes (UDP, TCP, raw Ethernet), with latency histograms.
    Bench(bench::BenchArgs),
}

/// Run a `linerate spn` subcommand.
pub fn run(cmd: SpnCommand) -> Result<ExitCode, String> {
    match cmd {
        SpnCommand::Generate(a) => run_generate(a),
        SpnCommand::Compile(a) => run_compile(a),
        SpnCommand::Eval(a) => run_eval(a),
        SpnCommand::Serve(a) => run_serve(a),
        SpnCommand::Bench(a) => bench::run(a),
    }
}

/// Where a model comes from: a file, or the generator.
#[derive(clap::Args, Clone)]
pub struct ModelArgs {
    /// Model file: linerate JSON or SPFlow text export.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Without --model: generate a NIPS-like model with this many 8-bit inputs.
    #[arg(long, default_value_t = 10)]
    vars: usize,
    /// Seed of the generated model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl ModelArgs {
    /// Load or generate the model.
    fn load(&self) -> Result<Spn, String> {
        match &self.model {
            Some(p) => spn::load(p).map_err(|e| e.to_string()),
            None => spn::generate(&GeneratorConfig::nips(self.vars, self.seed)).map_err(|e| e.to_string()),
        }
    }
}

/// Options of `linerate spn generate`.
#[derive(clap::Args)]
pub struct GenerateArgs {
    /// 8-bit input variables.
    #[arg(long, default_value_t = 10)]
    vars: usize,
    /// Approximate number of nodes (default: 630 per variable, like the NIPS benchmarks).
    #[arg(long)]
    nodes: Option<usize>,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Kind of leaves.
    #[arg(long, default_value = "histogram", value_parser = ["histogram", "categorical", "gaussian", "bernoulli", "mixed"])]
    leaves: String,
    /// Bins of histogram leaves.
    #[arg(long, default_value_t = 8)]
    bins: usize,
    /// Where to write the model (JSON).
    #[arg(short, long)]
    output: PathBuf,
    /// Also sample this many input vectors from the model...
    #[arg(long, default_value_t = 0)]
    samples: usize,
    /// ... into this CSV file.
    #[arg(long)]
    samples_out: Option<PathBuf>,
    /// Fraction of sampled inputs marked missing.
    #[arg(long, default_value_t = 0.0)]
    missing: f64,
}

fn run_generate(a: GenerateArgs) -> Result<ExitCode, String> {
    let leaves = match a.leaves.as_str() {
        "categorical" => LeafKind::Categorical,
        "gaussian" => LeafKind::Gaussian,
        "bernoulli" => LeafKind::Bernoulli,
        "mixed" => LeafKind::Mixed,
        _ => LeafKind::Histogram,
    };
    let base = GeneratorConfig::nips(a.vars, a.seed);
    let cfg = GeneratorConfig { target_nodes: a.nodes.unwrap_or(base.target_nodes), leaves, bins: a.bins, ..base };
    let model = spn::generate(&cfg).map_err(msg)?;
    spn::save_json(&model, &a.output).map_err(msg)?;
    let st = model.stats();
    eprintln!(
        "{}: {} nodes ({} sums, {} products, {} leaves), {} inputs",
        a.output.display(),
        st.nodes,
        st.sums,
        st.products,
        st.leaves,
        st.vars
    );
    if a.samples > 0 {
        let path = a.samples_out.ok_or("--samples needs --samples-out FILE")?;
        if !(0.0..=1.0).contains(&a.missing) {
            return Err(format!("--missing {} is not a fraction in [0, 1]", a.missing));
        }
        let rows = spn::generate::sample(&model, a.samples, a.missing, a.seed.wrapping_add(1));
        write_inputs(&path, &rows, model.num_vars())?;
        eprintln!("{}: {} input vectors", path.display(), a.samples);
    }
    Ok(ExitCode::SUCCESS)
}

/// Options of `linerate spn compile`.
#[derive(clap::Args)]
pub struct CompileArgs {
    /// Model file: linerate JSON or SPFlow text export.
    model: PathBuf,
    /// Write the validated model in the linerate JSON format (converts SPFlow text).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Write the model in SPFlow's text form (full precision, readable by SPFlow's str_to_spn).
    #[arg(long)]
    spflow_text: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn run_compile(a: CompileArgs) -> Result<ExitCode, String> {
    let model = spn::load(&a.model).map_err(msg)?;
    if let Some(p) = &a.output {
        spn::save_json(&model, p).map_err(msg)?;
    }
    if let Some(p) = &a.spflow_text {
        let text = spn::to_spflow_text(&model).map_err(msg)?;
        std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let st = model.stats();
    let compiled = CompiledSpn::new(model).map_err(msg)?;
    let cs = compiled.stats();
    let mut t = Table::new(&format!("{}: valid SPN, compiled", a.model.display()), &["property", "value"]);
    let mut row = |k: &str, v: Cell| t.row(vec![Cell::from(k), v]);
    let n = |v: usize| Cell::count(v as f64);
    row("inputs", n(st.vars));
    row("nodes", n(st.nodes));
    row("sum nodes", n(st.sums));
    row("product nodes", n(st.products));
    row("leaves", n(st.leaves));
    row("edges", n(st.edges));
    row("depth", n(st.depth));
    row("8-bit program operations", n(cs.code_ops));
    row("8-bit program operands", n(cs.code_args));
    row("8-bit program slots", n(cs.code_slots));
    row("tables (single-variable sub-graphs)", n(cs.tables));
    row("table bytes", Cell::bytes(cs.table_bytes as u64));
    row("class maps", n(cs.class_maps));
    row("f64 program operations", n(cs.value_ops));
    row("f64 program slots", n(cs.value_slots));
    let arithmetic = Cell::Text(if compiled.log_space_only() {
        "log space (the linear bound overflows)".to_string()
    } else {
        format!("linear f64; below {:.3e} (ll {:.1}) recomputed in log space", cs.guard, cs.guard.ln())
    });
    row("arithmetic", arithmetic);
    t.print(a.json);
    Ok(ExitCode::SUCCESS)
}

/// Options of `linerate spn eval`.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// Model file: linerate JSON or SPFlow text export.
    model: PathBuf,
    /// Input vectors, CSV, one per line ("-": standard input). Empty, "nan" or "?" = missing.
    #[arg(default_value = "-")]
    inputs: String,
    /// Print likelihoods instead of log-likelihoods.
    #[arg(long)]
    prob: bool,
}

fn run_eval(a: EvalArgs) -> Result<ExitCode, String> {
    let model = spn::load(&a.model).map_err(msg)?;
    let nv = model.num_vars();
    let rows = if a.inputs == "-" {
        parse_inputs(std::io::stdin().lock(), nv, "standard input")?
    } else {
        let f = std::fs::File::open(&a.inputs).map_err(|e| format!("{}: {e}", a.inputs))?;
        parse_inputs(std::io::BufReader::new(f), nv, &a.inputs)?
    };
    let mut ev = Evaluator::new(CompiledSpn::new(model).map_err(msg)?);
    let mut out = vec![0.0; rows.len() / nv];
    let output = if a.prob { Output::Likelihood } else { Output::LogLikelihood };
    ev.eval_f64(&rows, &mut out, output).map_err(msg)?;
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for v in out {
        writeln!(w, "{v:?}").map_err(msg)?;
    }
    w.flush().map_err(msg)?;
    Ok(ExitCode::SUCCESS)
}

/// Read input vectors: one per line, values separated by commas or spaces; empty fields,
/// "nan" and "?" are missing; blank lines and lines starting with '#' are skipped.
pub(crate) fn parse_inputs(r: impl BufRead, num_vars: usize, what: &str) -> Result<Vec<f64>, String> {
    let mut rows = Vec::new();
    for (i, line) in r.lines().enumerate() {
        let line = line.map_err(|e| format!("{what}: {e}"))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = if t.contains(',') { t.split(',').collect() } else { t.split_whitespace().collect() };
        if fields.len() != num_vars {
            return Err(format!(
                "{what}, line {}: {} values, but the model has {num_vars} inputs",
                i + 1,
                fields.len()
            ));
        }
        for f in fields {
            let f = f.trim();
            let v = match f {
                "" | "?" => f64::NAN,
                _ if f.eq_ignore_ascii_case("nan") => f64::NAN,
                _ => f.parse::<f64>().map_err(|_| format!("{what}, line {}: {f:?} is not a number", i + 1))?,
            };
            rows.push(v);
        }
    }
    Ok(rows)
}

/// Write input vectors as CSV (missing values as empty fields... written "nan" for clarity).
pub(crate) fn write_inputs(path: &Path, rows: &[f64], num_vars: usize) -> Result<(), String> {
    let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    for row in rows.chunks(num_vars) {
        let fields: Vec<String> =
            row.iter().map(|v| if v.is_nan() { "nan".to_string() } else { format!("{v}") }).collect();
        writeln!(w, "{}", fields.join(",")).map_err(msg)?;
    }
    w.flush().map_err(msg)
}

/// Options of `linerate spn serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Name of the shared-memory link to open (created by the other process).
    #[arg(long)]
    shm: String,
    /// Our address on the link.
    #[arg(long, default_value = "10.0.0.2/24")]
    ip: String,
    /// IP MTU of the link.
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// Transport.
    #[arg(long, default_value = "udp", value_parser = ["udp", "tcp", "raw"])]
    transport: String,
    /// UDP or TCP port.
    #[arg(long, default_value_t = 5005)]
    port: u16,
    /// Worker threads (0: evaluate in the polling thread).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Busy-poll instead of sleeping on the link when idle.
    #[arg(long)]
    busy: bool,
    /// Stop after this long even if the link stays open (a duration: 10m, 1h; a bare number
    /// is seconds).
    #[arg(value_name = "DURATION", long = "limit", alias = "limit-secs", default_value = "1h", value_parser = crate::duration::parse_duration)]
    limit_secs: Duration,
    /// CPU to pin the polling thread to.
    #[arg(long)]
    cpu: Option<usize>,
    /// Die with the parent process (set by `linerate spn bench`).
    #[arg(long, hide = true)]
    child: bool,
}

/// What `serve` prints as its last line (JSON) when the link closes.
#[derive(serde::Serialize, serde::Deserialize, Default, Clone)]
pub(crate) struct ServeReport {
    /// The service's counters by name.
    pub counters: std::collections::BTreeMap<String, u64>,
    /// The stack's drop counters (non-zero ones).
    pub drops: std::collections::BTreeMap<String, u64>,
    /// Share of wall time the polling thread spent evaluating.
    pub eval_share: f64,
    /// Share of wall time the polling thread was on a CPU at all.
    pub cpu_share: f64,
}

fn run_serve(a: ServeArgs) -> Result<ExitCode, String> {
    if a.child {
        die_with_parent();
    }
    if let Some(cpu) = a.cpu {
        pin_cpu(cpu);
    }
    install_stop_handler();
    let limit = check_secs(a.limit_secs)?;
    let model = CompiledSpn::new(a.model.load()?).map_err(msg)?;
    let link = ShmLink::open(&a.shm, Duration::from_secs(5)).map_err(msg)?;
    let cfg = Config::parse_host(&a.ip).map_err(msg)?.mtu(a.mtu);
    let mut stack = Stack::new(cfg, link).map_err(msg)?;
    let scfg = SpnServiceConfig { workers: a.workers, max_in_flight: 64.max(a.workers * 8), ..Default::default() };
    let mut service = match a.transport.as_str() {
        "raw" => SpnService::bind_raw(&mut stack, SPN_ETHERTYPE, Arc::clone(&model), scfg),
        "tcp" => SpnService::bind_tcp(&mut stack, a.port, Arc::clone(&model), scfg),
        _ => SpnService::bind_udp(&mut stack, a.port, Arc::clone(&model), scfg),
    }
    .map_err(msg)?;
    let mut stats = crate::statsfile::StatsPublisher::new(&format!("spn-serve-{}", std::process::id()), "spn serve")
        .map_err(|e| format!("stats file: {e}"))?;
    println!("{READY}");
    let _ = std::io::stdout().flush();
    let start = Instant::now();
    let cpu = CpuMeter::start();
    let deadline = start + limit;
    let mut idler = Idler::new();
    let outcome = loop {
        let now = Instant::now();
        if now >= deadline || stop_requested() {
            break Ok(());
        }
        let r = stack.poll(now).and_then(|n| Ok(n + service.serve(&mut stack)?)).and_then(|w| stack.flush().map(|_| w));
        match r {
            Err(NetError::Link(LinkError::Closed)) => break Ok(()),
            Err(e) => break Err(msg(e)),
            Ok(work) if !a.busy => idler.after_poll(stack.link(), work > 0),
            Ok(_) => {}
        }
        stats.publish_every(|| service.counters().fields().to_vec());
    };
    let wall = (Instant::now() - start).as_nanos().max(1) as f64;
    let c = service.counters();
    let report = ServeReport {
        counters: c.fields().iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        drops: stack
            .counters()
            .iter()
            .filter(|(k, v)| k.starts_with("drop") && *v > 0)
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        cpu_share: cpu.share(),
        eval_share: if a.workers == 0 { c.eval_ns as f64 / wall } else { c.eval_ns as f64 / wall / a.workers as f64 },
    };
    println!("{}", serde_json::to_string(&report).unwrap_or_default());
    outcome.map(|_| ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_csv() {
        let text = "# comment\n1,2,,nan\n\n3 4 ? 5\n";
        let rows = parse_inputs(text.as_bytes(), 4, "t").unwrap();
        assert_eq!(rows.len(), 8);
        assert_eq!((rows[0], rows[4], rows[7]), (1.0, 3.0, 5.0));
        assert!(rows[2].is_nan() && rows[3].is_nan() && rows[6].is_nan());
        let e = parse_inputs("1,2\n".as_bytes(), 4, "t").unwrap_err();
        assert_eq!(e, "t, line 1: 2 values, but the model has 4 inputs");
        let e = parse_inputs("1,x,3,4\n".as_bytes(), 4, "t").unwrap_err();
        assert!(e.contains("\"x\" is not a number"), "{e}");
    }
}
