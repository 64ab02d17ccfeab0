//! `linerate stats`: the live counters of running linerate instances.

use crate::output::Table;
use crate::statsfile::{read_all, run_dir};
use std::process::ExitCode;

/// Options of `linerate stats`.
#[derive(clap::Args)]
pub struct StatsArgs {
    /// Show only the instance with this name.
    name: Option<String>,
    /// Show zero counters too.
    #[arg(long)]
    all: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Run `linerate stats`.
pub fn run(a: StatsArgs) -> Result<ExitCode, String> {
    let instances: Vec<_> = read_all().into_iter().filter(|(n, _, _)| a.name.as_ref().is_none_or(|w| w == n)).collect();
    if instances.is_empty() {
        return Err(match a.name {
            Some(n) => format!("no running linerate instance is called '{n}' (looked in {})", run_dir().display()),
            None => format!("no linerate instance is running (looked in {})", run_dir().display()),
        });
    }
    let mut t = Table::new("linerate counters", &["instance", "pid", "counter", "value"]);
    for (name, pid, counters) in &instances {
        for (c, v) in counters.iter().filter(|(_, v)| a.all || *v > 0) {
            t.row(vec![name.clone(), pid.to_string(), c.clone(), v.to_string()]);
        }
    }
    t.print(a.json);
    Ok(ExitCode::SUCCESS)
}
