//! `linerate ids check RULES`: every rule the engine evaluates only in part (with its sid, the
//! option and the reason) and every rule that does not load, as a table or JSON; and the rule
//! variables (`--var NAME=VALUE`, `--vars FILE`) `linerate ids` shares with it.

use crate::output::Table;
use accel::ids::support::{partial_rules, PartialRule};
use accel::ids::{LoadReport, RuleSet, Vars};
use accel::AccelError;
use serde_json::json;
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
    /// Print JSON: counts, `partial_rules` (line, gid, sid, rev, msg, `unsupported` options
    /// with reasons) and `skipped_rules` (line, problem).
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

fn table(path: &Path, report: &LoadReport, partial: &[PartialRule]) -> Table {
    let title = format!(
        "linerate ids check: {}: {} rules, {} fully supported, {} partial, {} not loaded",
        path.display(),
        report.total,
        report.fully_supported,
        report.partial,
        report.skipped
    );
    let mut t = Table::new(&title, &["line", "sid", "option", "reason"]);
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    for p in partial {
        for g in &p.gaps {
            let sid = format!("{}:{}:{}", p.gid, p.sid, p.rev);
            rows.push((p.line, vec![p.line.to_string(), sid, g.option.clone(), g.reason.clone()]));
        }
    }
    for e in &report.errors {
        let (line, problem) = skipped(e);
        rows.push((line, vec![line.to_string(), "-".into(), "(not loaded)".into(), problem]));
    }
    rows.sort_by_key(|r| r.0);
    for (_, r) in rows {
        t.row(r);
    }
    t
}

fn json_report(path: &Path, report: &LoadReport, partial: &[PartialRule]) -> serde_json::Value {
    json!({
        "file": path.display().to_string(),
        "rules": report.total,
        "fully_supported": report.fully_supported,
        "partial": report.partial,
        "skipped": report.skipped,
        "partial_rules": partial.iter().map(|p| json!({
            "line": p.line,
            "gid": p.gid,
            "sid": p.sid,
            "rev": p.rev,
            "msg": p.msg,
            "unsupported": p.gaps.iter().map(|g| json!({
                "option": g.option,
                "reason": g.reason,
                "unknown_keyword": g.unknown,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "skipped_rules": report.errors.iter().map(|e| {
            let (line, problem) = skipped(e);
            json!({ "line": line, "problem": problem })
        }).collect::<Vec<_>>(),
    })
}

/// Run `linerate ids check`.
pub fn run_check(a: CheckArgs) -> Result<ExitCode, String> {
    let vars = a.vars.build()?;
    let (set, report) = RuleSet::load(&a.rules, &vars).map_err(|e| format!("rules: {e}"))?;
    let partial = partial_rules(&set);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json_report(&a.rules, &report, &partial)).unwrap_or_default());
    } else {
        table(&a.rules, &report, &partial).print(false);
    }
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
