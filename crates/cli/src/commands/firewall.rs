//! `linerate firewall`: Rosebud's blacklisting firewall on the middlebox runtime. Frames
//! from port 0 (--input) whose IPv4 source is blacklisted are dropped; the rest leave by
//! port 1 (--output), and frames arriving on port 1 go out of port 0.

use crate::commands::middlebox::{open_input, open_output, print_summary, run, summary, IoArgs, RunArgs};
use accel::prefix::PrefixSet;
use apps::firewall::{Firewall, NonIpv4};
use middlebox::{policy, Runtime, RuntimeConfig, SlotSpec};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Options of `linerate firewall`.
#[derive(clap::Args)]
pub struct FirewallArgs {
    /// The blacklist: one IPv4 prefix per line (`a.b.c.d/len`), `#` or `;` comments.
    #[arg(long)]
    blacklist: PathBuf,
    /// Drop frames that are not IPv4 (default: forward them).
    #[arg(long)]
    drop_non_ipv4: bool,
    #[command(flatten)]
    io: IoArgs,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// Run `linerate firewall`.
pub fn run_firewall(a: FirewallArgs) -> Result<ExitCode, String> {
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    let set = Arc::new(PrefixSet::load(&a.blacklist).map_err(|e| format!("blacklist: {e}"))?);
    let input = open_input(&a.io)?;
    let output = open_output(&a.io)?;
    let units = a.run.units;
    let policy = policy::by_name(&a.run.policy, units).ok_or_else(|| format!("unknown policy '{}'", a.run.policy))?;
    let non_ipv4 = if a.drop_non_ipv4 { NonIpv4::Drop } else { NonIpv4::Forward };
    let cfg = RuntimeConfig { slots: SlotSpec::new(a.run.slots, 9216 + 64), ..RuntimeConfig::default() };
    let mut b = Runtime::builder_with(cfg).port_boxed(input.link).port_boxed(output).policy_boxed(policy);
    for _ in 0..units {
        b = b.unit(Firewall::new(set.clone()).non_ipv4(non_ipv4));
    }
    let rt = b.build().map_err(|e| e.to_string())?;
    let name = a.run.name.clone().unwrap_or_else(|| format!("firewall-{}", std::process::id()));
    let o = run(rt, input.total, a.run.duration, ("firewall", &name), |_| Ok(()))?;
    let title = format!(
        "linerate firewall: {} prefixes from {}, {units} units, {} policy",
        set.len(),
        a.blacklist.display(),
        o.stats.policy
    );
    print_summary(&summary(&title, &o), &a.io, a.run.json);
    Ok(ExitCode::SUCCESS)
}
