//! The host network stack of linerate: Ethernet demultiplexing, ARP, IPv4, ICMP, UDP and raw
//! Ethernet sockets, driven by `poll(now)` over any [`link::Link`].
//!
//! ```
//! use link::{mem, Instant, LinkConfig};
//! use net::{Config, Stack};
//! let (la, lb) = mem::pair(LinkConfig::default());
//! let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
//! let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
//! let sock = b.udp_bind(7).unwrap();
//! let tx = a.udp_bind(0).unwrap();
//! a.udp_send_to(tx, "10.0.0.2:7".parse().unwrap(), b"hello").unwrap();
//! let mut buf = [0u8; 64];
//! let mut got = None;
//! for ms in 0..10 {
//!     let now = Instant::from_millis(ms);
//!     a.poll(now).unwrap();
//!     b.poll(now).unwrap();
//!     if let Some(r) = b.udp_recv_from(sock, &mut buf).unwrap() { got = Some(r); break; }
//! }
//! assert_eq!(&buf[..got.unwrap().0], b"hello");
//! ```

mod arp;
mod config;
pub mod counters;
mod egress;
pub mod error;
mod iface;
pub mod int_hash;
mod ping;
mod queue;
mod raw;
pub mod reasm;
mod stack;
mod stack_tcp;
pub mod tcp;
mod udp;

pub use config::Config;
pub use counters::{Counter, Counters};
pub use error::{
    BadHandle, BindError, BypassError, ConfigError, ConnectError, ControlError, ListenError, NetError, PingError,
    RawBindError, RawSendError, RecvError, SendError, TooManyWatchers, UdpSendError,
};
pub use int_hash::IntMap;
pub use link::Instant;
pub use ping::PingReply;
pub use raw::RawHandle;
pub use reasm::ReasmLimits;
pub use stack::Stack;
pub use tcp::{CcAlgorithm, Recv, TcpConfig, TcpConnStats, TcpError, TcpHandle, TcpListener, TcpState, TcpWatch};
pub use udp::UdpHandle;
