//! The load report: how many rules loaded fully, partially, or not at all, and why.

use std::collections::BTreeMap;
use std::fmt;

use crate::AccelError;

/// What loading a rules file produced.
///
/// - *fully supported*: every matching option is evaluated; matches are reported as confirmed.
/// - *partial*: the rule has matching options the engine does not evaluate (listed in
///   `per_rule`); it is loaded, but its matches are reported only as *approximate* (all the
///   options we do evaluate matched), never as confirmed.
/// - *skipped*: the rule did not parse (or repeats a gid:sid); see `errors`.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Rules seen (loaded + skipped).
    pub total: usize,
    /// Rules whose every matching option is evaluated.
    pub fully_supported: usize,
    /// Rules loaded with unsupported matching options.
    pub partial: usize,
    /// Rules not loaded.
    pub skipped: usize,
    /// One error per skipped rule (file, line, problem).
    pub errors: Vec<AccelError>,
    /// Unsupported option kind -> number of rules using it.
    pub unsupported_options: BTreeMap<String, usize>,
    /// (sid, unsupported options) for every partial rule, in sid order.
    pub per_rule: Vec<(u32, Vec<String>)>,
    /// Approximated option kind -> number of rules using it (evaluated, with a documented
    /// difference from Snort; these rules still count as fully supported).
    pub approximations: BTreeMap<String, usize>,
    /// Loaded rules with at least one content (so a fast pattern for the prefilter).
    pub with_fast_pattern: usize,
    /// Distinct case-folded fast patterns in the prefilter.
    pub distinct_fast_patterns: usize,
}

impl LoadReport {
    /// Rules loaded (fully supported + partial).
    pub fn loaded(&self) -> usize {
        self.fully_supported + self.partial
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |n: usize| if self.total == 0 { 0.0 } else { 100.0 * n as f64 / self.total as f64 };
        writeln!(f, "{:<44} {:>7} {:>7}", "rules", "count", "share")?;
        writeln!(f, "{:<44} {:>7} {:>6.1}%", "total", self.total, 100.0)?;
        writeln!(f, "{:<44} {:>7} {:>6.1}%", "fully supported", self.fully_supported, pct(self.fully_supported))?;
        writeln!(f, "{:<44} {:>7} {:>6.1}%", "partial (approximate matches only)", self.partial, pct(self.partial))?;
        writeln!(f, "{:<44} {:>7} {:>6.1}%", "skipped (errors)", self.skipped, pct(self.skipped))?;
        writeln!(f, "{:<44} {:>7}", "rules with a fast pattern", self.with_fast_pattern)?;
        writeln!(f, "{:<44} {:>7}", "distinct fast patterns", self.distinct_fast_patterns)?;
        if !self.unsupported_options.is_empty() {
            writeln!(f, "\n{:<60} {:>7}", "unsupported option", "rules")?;
            let mut v: Vec<_> = self.unsupported_options.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            for (k, n) in v {
                writeln!(f, "{:<60} {:>7}", k, n)?;
            }
        }
        if !self.approximations.is_empty() {
            writeln!(f, "\n{:<60} {:>7}", "approximated option", "rules")?;
            for (k, n) in &self.approximations {
                writeln!(f, "{:<60} {:>7}", k, n)?;
            }
        }
        if !self.errors.is_empty() {
            writeln!(f, "\nerrors ({}):", self.errors.len())?;
            for e in self.errors.iter().take(20) {
                writeln!(f, "  {e}")?;
            }
            if self.errors.len() > 20 {
                writeln!(f, "  ... and {} more", self.errors.len() - 20)?;
            }
        }
        Ok(())
    }
}
