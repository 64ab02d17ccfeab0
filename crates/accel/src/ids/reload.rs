//! Run-time rule reload: a handle that many threads read and one thread replaces.
//!
//! Readers take a cheap `Arc` snapshot (per batch, say) and match against it; a reload
//! compiles the new set off to the side and swaps it in. In-flight batches finish on the old
//! set, and flowbits state bound to the old set is dropped on first use with the new one.

use std::path::Path;
use std::sync::{Arc, RwLock};

use super::engine::RuleSet;
use super::report::LoadReport;
use super::vars::Vars;
use crate::AccelError;

/// A shared, swappable rule set.
#[derive(Debug, Clone)]
pub struct RuleSetHandle {
    inner: Arc<RwLock<Arc<RuleSet>>>,
}

impl RuleSetHandle {
    /// Wraps a compiled rule set.
    pub fn new(set: RuleSet) -> RuleSetHandle {
        RuleSetHandle { inner: Arc::new(RwLock::new(Arc::new(set))) }
    }

    /// The current rule set.
    pub fn current(&self) -> Arc<RuleSet> {
        match self.inner.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// Replaces the rule set; returns the previous one.
    pub fn replace(&self, set: RuleSet) -> Arc<RuleSet> {
        let new = Arc::new(set);
        match self.inner.write() {
            Ok(mut g) => std::mem::replace(&mut *g, new),
            Err(p) => std::mem::replace(&mut *p.into_inner(), new),
        }
    }

    /// Loads `path` leniently and swaps it in; on error the current set stays.
    pub fn reload(&self, path: &Path, vars: &Vars) -> Result<LoadReport, AccelError> {
        let (set, report) = RuleSet::load(path, vars)?;
        self.replace(set);
        Ok(report)
    }
}
