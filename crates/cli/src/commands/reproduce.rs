//! What `reproduce` (in the `linerate-bench` crate) measures through this program's
//! commands: `spn bench`, `rdma bench` and `collective kmeans`, run in-process with the
//! commands' own options and defaults.

use crate::output::Table;
use bench::reproduce::{args, Commands};

/// The commands of this program, for `reproduce`.
pub struct ThisProgram;

impl Commands for ThisProgram {
    fn spn_bench(&self, argv: &[&str]) -> Result<Vec<Table>, String> {
        crate::commands::spn::bench::measure(&args::<crate::commands::spn::bench::BenchArgs>(argv)?)
    }

    fn rdma_bench(&self, argv: &[&str]) -> Result<Vec<Table>, String> {
        crate::commands::rdma::measure(&args::<crate::commands::rdma::BenchArgs>(argv)?)
    }

    fn kmeans_per_iter(&self, argv: &[&str]) -> Result<f64, String> {
        let a = args::<crate::commands::collective::KmeansArgs>(argv)?;
        Ok(crate::commands::collective::measure_kmeans(&a)?.per_iter)
    }
}
