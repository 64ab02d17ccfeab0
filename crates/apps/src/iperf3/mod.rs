//! iperf3's protocol, spoken on a linerate stack: a server that stock `iperf3 -c` clients
//! test against, and a client for stock `iperf3 -s` servers. (The `iperf` module is
//! linerate's own, simpler protocol.)

pub mod client;
pub mod cpu;
pub mod ctrl;
pub mod proto;
pub mod server;
pub mod stream;

pub use client::{ClientReport, Iperf3Client, Side};
pub use proto::{Params, Protocol, DEFAULT_PORT};
pub use server::{Iperf3Server, TestReport};
