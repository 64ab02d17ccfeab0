//! Testbeds for linerate: an in-process network of hosts on virtual time ([`Testbed`]), and
//! Linux network namespaces with veth and TAP devices where real Linux hosts are the peers
//! ([`netns`], [`tap`]). Everything a testbed creates is removed when it is dropped.

pub mod inproc;
pub mod linux_impair;
pub mod mutate;
pub mod netns;
pub mod switch;
pub mod tap;

pub use inproc::{HostId, HostOptions, HostStack, Testbed, TestbedConfig};
pub use netns::{netns_unavailable, Netns};
pub use tap::TapSetup;

/// Errors while building or running a testbed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// Creating namespaces, devices or processes failed.
    #[error("testbed set-up: {0}")]
    Setup(String),
    /// A stack reported an error.
    #[error(transparent)]
    Net(#[from] net::NetError),
    /// A link reported an error.
    #[error(transparent)]
    Link(#[from] link::LinkError),
}

net::from_operation_errors!(TestbedError);
