//! `linerate stats`: the live counters of running linerate instances.

use crate::output::{Cell, Table};
use crate::statsfile::select;
use std::process::ExitCode;

/// Options of `linerate stats`. Instances are listed from the per-user run directory
/// (`$XDG_RUNTIME_DIR/linerate`, else `/tmp/linerate-UID`; `LINERATE_RUN_DIR` overrides).
/// An instance running a stack also gets `rx_drops_total` (Σ `rx_drop_*`) and
/// `rx_unaccounted` (`rx_frames − rx_delivered − Σ rx_drop_*`, 0 when every received frame
/// has exactly one verdict).
#[derive(clap::Args)]
pub struct StatsArgs {
    /// Show only the instance with this name.
    name: Option<String>,
    /// Show zero counters too.
    #[arg(long)]
    all: bool,
    /// Print JSON: one row per counter (instance, command, pid, counter, value).
    #[arg(long, conflicts_with = "prometheus")]
    json: bool,
    /// Print OpenMetrics text, as Prometheus scrapes it: `linerate_<counter>{instance,
    /// command, pid}` per counter (zero counters too), ending in `# EOF`.
    #[arg(long)]
    prometheus: bool,
}

/// Run `linerate stats`.
pub fn run(a: StatsArgs) -> Result<ExitCode, String> {
    let instances = select(a.name.as_deref(), "linerate instance", |_| true)?;
    if a.prometheus {
        bench::out!("{}", crate::openmetrics::exposition(&instances));
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new("linerate counters", &["instance", "command", "pid", "counter", "value"]);
    for e in &instances {
        let mut shown = 0;
        for (c, v) in e.counters.iter().filter(|(_, v)| a.all || *v > 0) {
            t.row(vec![
                Cell::from(e.name.as_str()),
                Cell::from(e.command.as_str()),
                Cell::count(e.pid),
                Cell::from(c.as_str()),
                Cell::count_u64(*v),
            ]);
            shown += 1;
        }
        // The receive accounting identity of an instance running a stack (`net::RxAccounting`).
        if e.counters.iter().any(|(c, _)| c == "rx_frames") {
            let acc = net::RxAccounting::from_named(e.counters.iter().map(|(c, v)| (c.as_str(), *v)));
            for (c, v) in [("rx_drops_total", acc.dropped as f64), ("rx_unaccounted", acc.unaccounted() as f64)] {
                t.row(vec![
                    Cell::from(e.name.as_str()),
                    Cell::from(e.command.as_str()),
                    Cell::count(e.pid),
                    Cell::from(c),
                    Cell::count(v),
                ]);
            }
            if !a.json {
                eprintln!("{}: receive accounting: {acc}", e.name);
            }
            shown += 1;
        }
        if shown == 0 {
            // Listed even before its first counter moves.
            t.row(vec![
                Cell::from(e.name.as_str()),
                Cell::from(e.command.as_str()),
                Cell::count(e.pid),
                Cell::blank(),
                Cell::blank(),
            ]);
        }
    }
    // The shards of one process (`NAME.shardN`) also summed, as instance `NAME`.
    for (base, command, pid, sums) in shard_sums(&instances) {
        for (c, v) in sums.iter().filter(|(_, v)| a.all || **v > 0) {
            t.row(vec![
                Cell::Text(format!("{base} (all shards)")),
                Cell::from(command.as_str()),
                Cell::count(pid),
                Cell::from(c.as_str()),
                Cell::count_u64(*v),
            ]);
        }
    }
    t.summary("instances", Cell::count(instances.len() as f64));
    t.print(a.json);
    Ok(ExitCode::SUCCESS)
}

/// Per process whose instances are shards (`NAME.shardN`): its name, command, pid and every
/// counter summed over the shards.
fn shard_sums(
    instances: &[crate::statsfile::Entry],
) -> Vec<(String, String, u32, std::collections::BTreeMap<String, u64>)> {
    let mut groups: std::collections::BTreeMap<String, (String, u32, std::collections::BTreeMap<String, u64>)> =
        Default::default();
    for e in instances {
        let Some((base, shard)) = e.name.rsplit_once(".shard") else { continue };
        if shard.is_empty() || !shard.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let g = groups.entry(base.to_string()).or_insert_with(|| (e.command.clone(), e.pid, Default::default()));
        for (c, v) in &e.counters {
            *g.2.entry(c.clone()).or_insert(0) += v;
        }
    }
    groups.into_iter().map(|(b, (c, p, s))| (b, c, p, s)).collect()
}
