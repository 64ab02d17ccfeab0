//! Accelerator kernels: they take bytes or addresses and return results; no networking.
//!
//! - [`prefix`]: an IPv4 prefix set (firewall blacklist) with fast longest-prefix lookups.
//! - [`ids`]: a Snort 3 rule engine in the Pigasus style (port groups, fast-pattern
//!   multi-string prefilter, full verification of every candidate rule).
//! - [`kmeans`]: K-Means (Lloyd) assignment with partial sums and counts, and the centre
//!   update (seed 003's EasyNet-KM compute; its distribution lives above the network).
//! - [`matrix`]: a samples x features matrix from a `.npy` or CSV file (K-Means input).
//! - `hs` (feature `hyperscan`): Hyperscan's literal matcher, the benchmark peer.

pub mod error;
#[cfg(feature = "hyperscan")]
pub mod hs;
pub mod ids;
pub mod kmeans;
pub mod matrix;
pub mod prefix;

pub use error::AccelError;
