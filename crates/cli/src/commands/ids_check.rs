//! `linerate ids check RULES`: every rule the engine evaluates only in part (with its sid, the
//! option and the reason) and every rule that does not load, as a table or JSON; and the rule
//! variables (`--var NAME=VALUE`, `--vars FILE`) `linerate ids` shares with it.

use crate::output::{Cell, Table};
use accel::ids::support::{partial_rules, PartialRule};
use accel::ids::{LoadReport, RuleSet, Vars};
use accel::AccelError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Rule variables from the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct VarArgs {
    /// Set a rule variable, e.g. `--var HOME_NET=10.0.0.0/8` or `--var HTTP_PORTS=[80,8080]`
    /// (a name with PORT in it is a port variable); repeatable; applied after --vars.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    var: Vec<String>,
    /// Read rule variables from FILE: `ipvar NAME VALUE`, `portvar NAME VALUE`, `NAME=VALUE`
    /// or suricata.yaml-style `NAME: "VALUE"` lines.
    #[arg(long = "vars", value_name = "FILE")]
    vars_file: Option<PathBuf>,
}

impl VarArgs {
    /// Snort's default variables with the file's and then the command line's on top.
    pub fn build(&self) -> Result<Vars, String> {
        let mut v = Vars::default();
        if let Some(f) = &self.vars_file {
            v.read_file(f).map_err(|e| format!("--vars: {e}"))?;
        }
        for kv in &self.var {
            let (name, value) = kv
                .split_once('=')
                .ok_or_else(|| format!("--var '{kv}' is not NAME=VALUE (e.g. HOME_NET=10.0.0.0/8)"))?;
            v.define(name, value).map_err(|e| format!("--var {kv}: {e}"))?;
        }
        Ok(v)
    }
}

/// Options of `linerate ids check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The rules file.
    rules: PathBuf,
    /// Fail (after the listing) naming file:line of the first rule that does not load or is
    /// not fully supported.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    vars: VarArgs,
    /// Print the listing as JSON (`{"tables": [...]}` like every command): a row per
    /// unsupported option (line, gid, sid, rev, status "partial" or "unknown keyword",
    /// option, reason, msg) and per rule that did not load (status "not loaded"); the counts
    /// (rules, fully_supported, partial, not_loaded) in the summary.
    #[arg(long)]
    json: bool,
}

/// An error unless at least one rule of `path` loaded: one sentence saying why none did.
pub fn require_rules(path: &Path, report: &LoadReport) -> Result<(), String> {
    if report.loaded() > 0 {
        return Ok(());
    }
    Err(match report.errors.first() {
        Some(e) => format!(
            "no rules loaded from {}: all {} rules have errors (the first: {e})",
            path.display(),
            report.errors.len()
        ),
        None => format!("no rules loaded from {}: the file holds no rules", path.display()),
    })
}

/// A rule that did not load: its line and the problem.
fn skipped(e: &AccelError) -> (usize, String) {
    match e {
        AccelError::Parse { line, problem, .. } => (*line, problem.clone()),
        other => (0, other.to_string()),
    }
}

/// The listing as one typed table (the JSON shape every command shares, see
/// [`crate::output`]): a row per unsupported option of a partial rule and per rule that did
/// not load, in file order; the counts in the summary.
fn table(path: &Path, report: &LoadReport, partial: &[PartialRule]) -> Table {
    let title = format!(
        "linerate ids check: {}: {} rules, {} fully supported, {} partial, {} not loaded",
        path.display(),
        report.total,
        report.fully_supported,
        report.partial,
        report.skipped
    );
    let mut t = Table::new(&title, &["line", "gid", "sid", "rev", "status", "option", "reason", "msg"]);
    let mut rows: Vec<(usize, Vec<Cell>)> = Vec::new();
    for p in partial {
        for g in &p.gaps {
            let status = if g.unknown { "unknown keyword" } else { "partial" };
            rows.push((
                p.line,
                vec![
                    Cell::count_u64(p.line as u64),
                    Cell::count(p.gid),
                    Cell::count(p.sid),
                    Cell::count(p.rev),
                    status.into(),
                    g.option.clone().into(),
                    g.reason.clone().into(),
                    p.msg.clone().into(),
                ],
            ));
        }
    }
    for e in &report.errors {
        let (line, problem) = skipped(e);
        let line_cell = if line > 0 { Cell::count_u64(line as u64) } else { Cell::blank() };
        rows.push((
            line,
            vec![
                line_cell,
                Cell::blank(),
                Cell::blank(),
                Cell::blank(),
                "not loaded".into(),
                Cell::blank(),
                problem.into(),
                Cell::blank(),
            ],
        ));
    }
    rows.sort_by_key(|r| r.0);
    for (_, r) in rows {
        t.row(r);
    }
    t.summary("file", path.display().to_string());
    t.summary("rules", Cell::count_u64(report.total as u64));
    t.summary("fully supported", Cell::count_u64(report.fully_supported as u64));
    t.summary("partial", Cell::count_u64(report.partial as u64));
    t.summary("not loaded", Cell::count_u64(report.skipped as u64));
    t
}

/// Run `linerate ids check`.
pub fn run_check(a: CheckArgs) -> Result<ExitCode, String> {
    let vars = a.vars.build()?;
    let (set, report) = RuleSet::load(&a.rules, &vars).map_err(|e| format!("rules: {e}"))?;
    let partial = partial_rules(&set);
    table(&a.rules, &report, &partial).print(a.json);
    require_rules(&a.rules, &report)?;
    if a.strict {
        // The first problem in file order: a rule that does not load, or a partial rule.
        let first_skip = report.errors.iter().map(|e| (skipped(e).0, e.to_string())).min_by_key(|e| e.0);
        let first_partial = accel::ids::support::require_full_support(&set, &a.rules.display().to_string())
            .err()
            .map(|e| (skipped(&e).0, e.to_string()));
        if let Some((_, e)) = [first_skip, first_partial].into_iter().flatten().min_by_key(|e| e.0) {
            return Err(format!("--strict: {e}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}
