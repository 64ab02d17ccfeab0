//! `linerate reproduce`: each seed paper's evaluation re-run on linerate, written as a PNG,
//! a CSV and a section of `report.md` per figure, beside the paper's stated numbers and the
//! software peers measured in the same run.
//!
//! The experiments call the benchmark code of this crate and, through [`Commands`], the
//! `spn bench`, `rdma bench` and `collective kmeans` commands of the program that runs them,
//! in-process; one module per paper ([`p000`] .. [`p004`]) turns their tables into
//! [`Figure`]s, [`plot`] draws them and [`report`] writes the report.

pub mod export;
pub mod figure;
pub mod p000;
pub mod p001;
pub mod p002;
pub mod p003;
pub mod p004;
pub mod plot;
pub mod report;

use crate::output::Table;
use figure::Figure;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The papers, in order.
pub const PAPERS: [&str; 5] = ["000", "001", "002", "003", "004"];

/// The papers by number, each with its name in `--help`.
fn paper_names() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue as P;
    clap::builder::PossibleValuesParser::new([
        P::new("000").help("TaPaSCo's 100G TCP/IP stack and SPN inference (TU Darmstadt)"),
        P::new("001").help("Receive-side notification for connectionless RDMA (U. Manchester)"),
        P::new("002").help("Limago, a 100 GbE TCP/IP stack (UAM / ETH Zurich)"),
        P::new("003").help("EasyNet, 100 Gbps networking for HLS: collectives, K-Means (ETH Zurich)"),
        P::new("004").help("Rosebud, FPGA-accelerated middleboxes: firewall, Pigasus IDS (UCSD / MIT)"),
        P::new("all").help("all five"),
    ])
}

/// Options of `linerate reproduce`.
#[derive(clap::Args)]
pub struct ReproduceArgs {
    /// Which paper's evaluation to re-run (or all).
    #[arg(default_value = "all", value_parser = paper_names())]
    paper: String,
    /// Directory for report.md and each figure's PNG and CSV (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Small sizes and short runs (all five papers within a few minutes).
    #[arg(long)]
    quick: bool,
}

/// The measurements `reproduce` takes through commands of the program that runs it: their
/// code lives with those commands (`spn bench`, `rdma bench`, `collective kmeans`).
pub trait Commands {
    /// `spn bench` with `argv` (options only): its tables.
    fn spn_bench(&self, argv: &[&str]) -> Result<Vec<Table>, String>;
    /// `rdma bench` with `argv`: its tables.
    fn rdma_bench(&self, argv: &[&str]) -> Result<Vec<Table>, String>;
    /// `collective kmeans` with `argv`: seconds per Lloyd iteration (the slowest rank).
    fn kmeans_per_iter(&self, argv: &[&str]) -> Result<f64, String>;
}

/// What every experiment gets: the size of the run, a way to say what it is doing and the
/// commands it measures through.
pub struct Ctx<'a> {
    /// Small sizes and short runs.
    pub quick: bool,
    /// When the run started.
    started: Instant,
    /// The measurements taken through the program's commands.
    pub commands: &'a dyn Commands,
}

impl Ctx<'_> {
    /// Say on stderr what is being measured now (with the time since the start). Every
    /// measurement starts here, so this also gives the thread back every CPU an earlier
    /// measurement's pinning took away (threads a measurement starts inherit its CPUs).
    pub fn say(&self, paper: &str, what: &str) {
        crate::bench_common::unpin();
        eprintln!("[reproduce {paper} {:>6.1}s] {what}", self.started.elapsed().as_secs_f64());
    }

    /// `quick` in a quick run, else `full`.
    pub fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

/// Parse the options struct `A` of a benchmark command from `argv` (without the command name),
/// so experiments run the commands' code with the commands' own defaults.
pub fn args<A: clap::Args + clap::FromArgMatches>(argv: &[&str]) -> Result<A, String> {
    let cmd = A::augment_args(clap::Command::new("reproduce-step").no_binary_name(true));
    let m = cmd.try_get_matches_from(argv).map_err(|e| format!("internal: bad options {argv:?}: {e}"))?;
    A::from_arg_matches(&m).map_err(|e| e.to_string())
}

/// The first table whose title contains `needle`.
pub fn table<'a>(tables: &'a [Table], needle: &str) -> Result<&'a Table, String> {
    tables.iter().find(|t| t.title().contains(needle)).ok_or_else(|| format!("no table titled \"{needle}…\""))
}

/// The index of the column headed exactly `header`.
pub fn column(t: &Table, header: &str) -> Result<usize, String> {
    t.headers()
        .iter()
        .position(|h| h == header)
        .ok_or_else(|| format!("table \"{}\" has no column \"{header}\"", t.title()))
}

/// `(x, y)` of the rows of `t` where both columns hold numbers (scaled by `xs`, `ys`).
pub fn xy(t: &Table, xcol: &str, ycol: &str, xs: f64, ys: f64) -> Result<Vec<(f64, f64)>, String> {
    let (i, j) = (column(t, xcol)?, column(t, ycol)?);
    Ok(t.rows()
        .iter()
        .filter_map(|r| Some((r.get(i)?.num()? * xs, r.get(j)?.num()? * ys)))
        .filter(|(_, y)| y.is_finite() && *y > 0.0)
        .collect())
}

/// Whether the Python named by `LINERATE_PYTHON`, the project's venv or `python3` can import
/// `module`; the first interpreter that can, or why none can.
pub fn python_with(module: &str) -> Result<PathBuf, String> {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let mut candidates: Vec<PathBuf> = std::env::var_os("LINERATE_PYTHON").map(PathBuf::from).into_iter().collect();
    candidates.extend([venv, PathBuf::from("python3")]);
    let mut tried = Vec::new();
    for py in candidates {
        let ok = std::process::Command::new(&py)
            .args(["-c", &format!("import {module}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(py);
        }
        tried.push(py.display().to_string());
    }
    Err(format!("not installed (no `import {module}` in {})", tried.join(" or ")))
}

/// Run `linerate reproduce`, measuring through `commands` what lives in the program's commands.
pub fn run(a: ReproduceArgs, commands: &dyn Commands) -> Result<ExitCode, String> {
    plot::ensure_font()?;
    std::fs::create_dir_all(&a.out).map_err(|e| format!("cannot create {}: {e}", a.out.display()))?;
    crate::runloop::install_stop_handler();
    crate::bench_common::remember_cpus();
    crate::bench_common::bench_cpus();
    let ctx = Ctx { quick: a.quick, started: Instant::now(), commands };
    let papers: Vec<&str> = if a.paper == "all" { PAPERS.to_vec() } else { vec![a.paper.as_str()] };
    let (mut figures, mut failures) = (Vec::new(), Vec::new());
    for paper in papers {
        ctx.say(paper, report::paper_title(paper));
        let results: Vec<Result<Figure, (String, String)>> = match paper {
            "000" => p000::figures(&ctx),
            "001" => p001::figures(&ctx),
            "002" => p002::figures(&ctx),
            "003" => p003::figures(&ctx),
            _ => p004::figures(&ctx),
        };
        for r in results {
            match r.and_then(|f| {
                f.write_csv(&a.out.join(format!("{}.csv", f.id))).map_err(|e| (f.name.clone(), e))?;
                plot::draw(&f, &a.out.join(format!("{}.png", f.id))).map_err(|e| (f.name.clone(), e))?;
                Ok(f)
            }) {
                Ok(f) => {
                    ctx.say(paper, &format!("{} written: {}.png, {}.csv", f.name, f.id, f.id));
                    figures.push(f);
                }
                Err((what, why)) => {
                    ctx.say(paper, &format!("{what} FAILED: {why}"));
                    failures.push((format!("{paper} {what}"), why));
                }
            }
            // Keep report.md current, so an interrupted run still leaves one.
            let text = report::render(&figures, &failures, &a.paper, a.quick, ctx.started.elapsed().as_secs_f64());
            std::fs::write(a.out.join("report.md"), text).map_err(|e| format!("cannot write report.md: {e}"))?;
        }
        if crate::runloop::stop_requested() {
            return Err("interrupted".into());
        }
    }
    eprintln!(
        "reproduce: {} figures, {} failed, in {:.0} s; report: {}",
        figures.len(),
        failures.len(),
        ctx.started.elapsed().as_secs_f64(),
        a.out.join("report.md").display()
    );
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
