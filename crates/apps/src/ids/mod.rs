//! The IDS (Rosebud case study 1, software-reorder variant) on the middlebox runtime.
//!
//! - [`IdsUnit`]: the unit program (per-flow reassembly with bounded reorder buffers, Snort
//!   rules from [`accel::ids`], matches to the host with their rule ids).
//! - [`alert`]: the host side: a Snort alert_fast log, Suricata EVE JSON ([`eve`]) and a pcap
//!   of matched packets.
//! - [`trace`]: a deterministic test trace with planted attacks and its expected alerts.
//! - [`build`]: a middlebox of IDS units behind the symmetric flow-hash load balancer.

pub mod alert;
pub mod eve;
pub mod flow;
pub mod rules;
pub mod trace;
mod unit;
pub mod utc;

use std::path::Path;

use accel::ids::{support, LoadReport, Vars};
use accel::AccelError;
use link::Link;
use middlebox::{FlowHash, MiddleboxError, Runtime, RuntimeConfig};

pub use flow::FlowKey;
pub use rules::IdsRules;
pub use unit::{IdsConfig, IdsCounters, IdsUnit};

/// Load a rules file with Snort's default variables (see [`load_rules_with`]).
pub fn load_rules(path: &Path, strict: bool) -> Result<(IdsRules, LoadReport), AccelError> {
    load_rules_with(path, &Vars::default(), strict)
}

/// Load a rules file with variables `vars`. With `strict`, the first rule with a syntax error,
/// an unknown keyword or an option the engine does not evaluate fails the load
/// ("file:line: problem"); otherwise broken rules are skipped and listed in the report, and
/// partly supported ones load.
pub fn load_rules_with(path: &Path, vars: &Vars, strict: bool) -> Result<(IdsRules, LoadReport), AccelError> {
    let (rules, report) = IdsRules::load_with(path, vars, strict)?;
    if strict {
        support::require_full_support(&rules.full, &path.display().to_string())?;
    }
    Ok((rules, report))
}

/// An IDS middlebox: `ports` (traffic from one leaves by the other), `units` IDS units sharing
/// `rules`, flows spread by the symmetric flow hash so each flow is reassembled by one unit.
pub fn build(
    rules: IdsRules,
    units: usize,
    ports: Vec<Box<dyn Link>>,
    rt: RuntimeConfig,
    ids: IdsConfig,
) -> Result<Runtime, MiddleboxError> {
    let mut b = Runtime::builder_with(rt).policy(FlowHash::new(units));
    for p in ports {
        b = b.port_boxed(p);
    }
    for _ in 0..units {
        b = b.unit(IdsUnit::new(rules.clone(), ids));
    }
    b.build()
}
