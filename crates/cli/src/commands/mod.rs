//! The subcommands of `linerate`, one module each (its options and its run).

pub mod collective;
pub mod demo;
pub mod firewall;
pub mod host;
pub mod ids;
pub mod ids_check;
pub mod iperf;
pub mod iperf3;
pub mod middlebox;
pub mod ping;
pub mod rdma;
pub mod reproduce;
pub mod spn;
pub mod stats;
pub mod tap;
