//! Applications that run on a linerate [`net::Stack`].

pub mod datagram_echo;
pub mod firewall;
pub mod http;
pub mod ids;
pub mod iperf;
pub mod iperf3;
pub mod kmeans;
pub mod pattern;
pub mod raw_echo;
pub mod spn_service;
pub mod step_plan;
pub mod tcp_conns;
pub mod tcp_echo;
pub mod tcp_sink;
pub mod tcp_source;
pub mod udp_echo;

pub use http::HttpServer;
pub use iperf::IperfClient;
pub use raw_echo::RawEcho;
pub use tcp_echo::TcpEcho;
pub use tcp_sink::TcpSink;
pub use tcp_source::TcpSource;
pub use udp_echo::UdpEcho;
