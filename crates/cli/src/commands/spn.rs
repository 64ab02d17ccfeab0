//! `linerate spn`: Sum-Product Network inference: `generate` a NIPS-like benchmark model,
//! `compile` (load, validate, convert, show the program), `eval` inputs, `serve` a model over a
//! shared-memory link, a TAP or an interface (UDP, TCP or raw Ethernet), `query` a service from
//! Linux, and `bench` the evaluator and the service.

pub(crate) mod bench;
mod npy;
mod query;
mod serve;

use crate::bench_common::msg;
use crate::output::{Cell, Table};
use spn::{CompiledSpn, Evaluator, GeneratorConfig, LeafKind, Output, Spn};

/// Shapes of generated models, as `--shape` spells them.
const SHAPES: [&str; 2] = ["nips", "learnspn"];

/// The generator preset of `shape` (one of [`SHAPES`]).
fn preset(shape: &str, vars: usize, seed: u64) -> GeneratorConfig {
    match shape {
        "learnspn" => GeneratorConfig::learnspn(vars, seed),
        _ => GeneratorConfig::nips(vars, seed),
    }
}
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The `linerate spn` subcommands.
#[derive(clap::Subcommand)]
pub enum SpnCommand {
    /// Generate a random valid NIPS-like or LearnSPN-shaped model (JSON), optionally with
    /// sampled inputs (CSV).
    Generate(GenerateArgs),
    /// Load a model (JSON or SPFlow text), validate it, compile it and show the program.
    Compile(CompileArgs),
    /// Evaluate input vectors (CSV, one per line; empty or "nan" = missing).
    Eval(EvalArgs),
    /// Serve a model over a shared-memory link (the other end: `linerate spn bench`, or any
    /// linerate host opening the link), or for Linux clients on a TAP in a new namespace (--tap)
    /// or on any link (--link af_xdp:IFACE, --af-packet IFACE).
    Serve(Box<serve::ServeArgs>),
    /// Send input vectors to a running service over UDP or TCP (ordinary Linux sockets) and
    /// print one log-likelihood per vector.
    Query(query::QueryArgs),
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
        SpnCommand::Serve(a) => serve::run(*a),
        SpnCommand::Query(a) => query::run(a),
        SpnCommand::Bench(a) => bench::run(a),
    }
}

/// Where a model comes from: a file, or the generator.
#[derive(clap::Args, Clone)]
pub struct ModelArgs {
    /// Model file: linerate JSON or SPFlow text export.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Without --model: generate a model with this many 8-bit inputs.
    #[arg(long, default_value_t = 10)]
    vars: usize,
    /// Shape of the generated model: shallow NIPS-like, or deep LearnSPN-like.
    #[arg(long, default_value = "nips", value_parser = SHAPES)]
    shape: String,
    /// Seed of the generated model.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl ModelArgs {
    /// Load or generate the model.
    fn load(&self) -> Result<Spn, String> {
        match &self.model {
            Some(p) => spn::load(p).map_err(|e| e.to_string()),
            None => spn::generate(&preset(&self.shape, self.vars, self.seed)).map_err(|e| e.to_string()),
        }
    }
}

/// Options of `linerate spn generate`.
#[derive(clap::Args)]
pub struct GenerateArgs {
    /// 8-bit input variables.
    #[arg(long, default_value_t = 10)]
    vars: usize,
    /// Shape: shallow NIPS-like, or deep LearnSPN-like (chains of sums over products).
    #[arg(long, default_value = "nips", value_parser = SHAPES)]
    shape: String,
    /// Approximate number of nodes (default: the shape's preset; 630 per variable up to 10).
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
    let base = preset(&a.shape, a.vars, a.seed);
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
    /// Print JSON (`{"tables": [...]}` like every command, as `spn query --json`): a row per
    /// vector in input order with its `value` (-inf as null), the count in the summary.
    #[arg(long)]
    json: bool,
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
    if a.json {
        values_table("spn eval", a.prob, &out).print(true);
        return Ok(ExitCode::SUCCESS);
    }
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    for v in out {
        writeln!(w, "{v:?}").map_err(msg)?;
    }
    w.flush().map_err(msg)?;
    Ok(ExitCode::SUCCESS)
}

/// The values of `spn eval` and `spn query` as a table: a row per vector (`vector`, `value`;
/// -inf is null in JSON), the kind of value (`log_likelihood` or `likelihood`) and the count
/// in the summary.
pub(crate) fn values_table(what: &str, prob: bool, values: &[f64]) -> Table {
    let kind = if prob { "likelihood" } else { "log_likelihood" };
    let mut t = Table::new(&format!("{what}: {kind} per vector"), &["vector", "value"]);
    for (i, v) in values.iter().enumerate() {
        t.row(vec![Cell::count_u64(i as u64), Cell::Num(*v, crate::output::Unit::Ratio)]);
    }
    t.summary("output", kind);
    t.summary("vectors", Cell::count_u64(values.len() as u64));
    t
}

/// Read input vectors: one per line, values separated by commas or spaces; empty fields,
/// "nan" and "?" are missing; blank lines and lines starting with '#' are skipped. (Not the
/// `csv` crate: a line may be separated by spaces instead, decided line by line, as the
/// Python client and SPFlow's exports write them.)
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

/// Input rows (from [`parse_inputs`]) as the service carries them: 8-bit values, and one flag
/// per value saying it is missing (a NaN row value).
pub(crate) fn to_u8_inputs(rows: &[f64], what: &str) -> Result<(Vec<u8>, Vec<bool>), String> {
    if let Some(v) = rows.iter().find(|v| !(v.is_nan() || (**v >= 0.0 && **v <= 255.0 && v.fract() == 0.0))) {
        return Err(format!("{what}: {v} is not an 8-bit value (the service carries 8-bit inputs)"));
    }
    Ok((
        rows.iter().map(|v| if v.is_nan() { 0 } else { *v as u8 }).collect(),
        rows.iter().map(|v| v.is_nan()).collect(),
    ))
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
