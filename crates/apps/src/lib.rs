//! Applications that run on a linerate [`net::Stack`].

pub mod udp_echo;

pub use udp_echo::UdpEcho;
