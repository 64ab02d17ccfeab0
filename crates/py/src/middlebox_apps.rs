//! The firewall and the IDS (Rosebud's case studies, `apps::firewall` and `apps::ids`) as unit
//! programs of `linerate.middlebox.Runtime`: `Firewall(Blacklist.load(path))` and
//! `Ids(IdsRules.load(path))` go in its `units` list like Python programs do.

use std::path::PathBuf;
use std::sync::Arc;

use accel::prefix::PrefixSet;
use apps::firewall::{Firewall, NonIpv4};
use apps::ids::{IdsConfig, IdsRules, IdsUnit};
use middlebox::Program;
use pyo3::prelude::*;

use crate::buf::bytes_like;
use crate::errors;

/// A set of IPv4 prefixes (one "a.b.c.d/len" per line, `#` comments) the firewall blocks.
#[pyclass(name = "Blacklist", module = "linerate.middlebox", frozen)]
pub(crate) struct PyBlacklist {
    set: Arc<PrefixSet>,
}

#[pymethods]
impl PyBlacklist {
    /// Load a blacklist file (e.g. `data/firewall/drop-prefixes.txt`).
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<PyBlacklist> {
        Ok(PyBlacklist { set: Arc::new(PrefixSet::load(&path).map_err(errors::accel)?) })
    }

    /// Parse a blacklist from text (`source` names it in error messages).
    #[staticmethod]
    #[pyo3(signature = (text, source = "<text>"))]
    fn parse(text: &str, source: &str) -> PyResult<PyBlacklist> {
        Ok(PyBlacklist { set: Arc::new(PrefixSet::parse(text, source).map_err(errors::accel)?) })
    }

    /// True if IPv4 address `ip` lies in one of the prefixes.
    fn contains(&self, ip: &str) -> PyResult<bool> {
        Ok(self.set.contains(crate::parse_ip(ip)?))
    }

    /// `ip in blacklist`, as `contains`.
    fn __contains__(&self, ip: &str) -> PyResult<bool> {
        self.contains(ip)
    }

    /// The number of prefixes.
    fn __len__(&self) -> usize {
        self.set.len()
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self) -> String {
        format!("<linerate.middlebox.Blacklist of {} prefixes>", self.set.len())
    }
}

/// The blacklisting firewall unit program: IPv4 frames from a blacklisted source are dropped
/// ("blacklisted"), everything else leaves by the other port; non-IPv4 frames pass unless
/// `drop_non_ipv4`.
#[pyclass(name = "Firewall", module = "linerate.middlebox", frozen)]
pub(crate) struct PyFirewall {
    fw: Firewall,
}

#[pymethods]
impl PyFirewall {
    /// A firewall blocking the sources in `blacklist`.
    #[new]
    #[pyo3(signature = (blacklist, drop_non_ipv4 = false))]
    fn new(blacklist: &PyBlacklist, drop_non_ipv4: bool) -> PyFirewall {
        let policy = if drop_non_ipv4 { NonIpv4::Drop } else { NonIpv4::Forward };
        PyFirewall { fw: Firewall::new(blacklist.set.clone()).non_ipv4(policy) }
    }

    /// The verdict for one Ethernet frame (any bytes-like object): "pass", "blacklisted",
    /// or the reason it is dropped as malformed (or "non_ipv4").
    fn verdict(&self, frame: &Bound<'_, PyAny>) -> PyResult<String> {
        let frame = bytes_like(frame)?;
        Ok(match self.fw.verdict(&frame) {
            Ok(true) => "pass".into(),
            Ok(false) => "blacklisted".into(),
            Err(reason) => reason.into(),
        })
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self) -> String {
        format!("<linerate.middlebox.Firewall blacklist of {} prefixes>", self.fw.blacklist().len())
    }
}

/// A Snort ruleset compiled for the IDS, with how much of it loaded.
#[pyclass(name = "IdsRules", module = "linerate.middlebox", frozen)]
pub(crate) struct PyIdsRules {
    rules: IdsRules,
    total: usize,
    loaded: usize,
    skipped: usize,
}

impl PyIdsRules {
    fn from(r: (IdsRules, accel::ids::LoadReport)) -> PyIdsRules {
        let (rules, report) = r;
        PyIdsRules { rules, total: report.total, loaded: report.loaded(), skipped: report.skipped }
    }
}

#[pymethods]
impl PyIdsRules {
    /// Load a Snort rules file (e.g. `data/ids/snort3-community.rules`) with Snort's default
    /// variables. With `strict`, the first rule the engine cannot fully evaluate fails the
    /// load (ValueError "file:line: problem"); otherwise such rules are skipped and counted.
    #[staticmethod]
    #[pyo3(signature = (path, strict = false))]
    fn load(path: PathBuf, strict: bool) -> PyResult<PyIdsRules> {
        Ok(PyIdsRules::from(apps::ids::load_rules(&path, strict).map_err(errors::accel)?))
    }

    /// Parse rules from text (`source` names it in error messages), as `load`.
    #[staticmethod]
    #[pyo3(signature = (text, source = "<text>", strict = false))]
    fn parse(text: &str, source: &str, strict: bool) -> PyResult<PyIdsRules> {
        let vars = accel::ids::Vars::default();
        Ok(PyIdsRules::from(IdsRules::from_text(text, source, &vars, strict).map_err(errors::accel)?))
    }

    /// Rules found in the text.
    #[getter]
    fn total(&self) -> usize {
        self.total
    }

    /// Rules loaded (fully or partly supported).
    #[getter]
    fn loaded(&self) -> usize {
        self.loaded
    }

    /// Rules skipped (syntax errors, unsupported keywords).
    #[getter]
    fn skipped(&self) -> usize {
        self.skipped
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self) -> String {
        format!("<linerate.middlebox.IdsRules {} of {} rules loaded>", self.loaded, self.total)
    }
}

/// The IDS unit program: per-flow TCP reassembly, Snort rule matching; a packet that raises
/// alerts goes to the host tagged with the rules' sids (`Runtime.host()`), the rest is
/// forwarded by the other port. Flows are spread best with `policy="hash"`.
#[pyclass(name = "Ids", module = "linerate.middlebox", frozen)]
pub(crate) struct PyIds {
    rules: IdsRules,
}

#[pymethods]
impl PyIds {
    /// An IDS unit matching `rules`.
    #[new]
    fn new(rules: &PyIdsRules) -> PyIds {
        PyIds { rules: rules.rules.clone() }
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self) -> String {
        format!("<linerate.middlebox.Ids {} rules>", self.rules.full.len())
    }
}

/// The unit program of a firewall or IDS object, or None for other objects.
pub(crate) fn program(obj: &Bound<'_, PyAny>) -> Option<Box<dyn Program>> {
    if let Ok(fw) = obj.downcast::<PyFirewall>() {
        return Some(Box::new(fw.get().fw.clone()));
    }
    if let Ok(ids) = obj.downcast::<PyIds>() {
        return Some(Box::new(IdsUnit::new(ids.get().rules.clone(), IdsConfig::default())));
    }
    None
}

/// Add the classes to `linerate.middlebox`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBlacklist>()?;
    m.add_class::<PyFirewall>()?;
    m.add_class::<PyIdsRules>()?;
    m.add_class::<PyIds>()?;
    Ok(())
}
