//! A UDP echo service (RFC 862 style): every datagram goes back to its sender unchanged.

use crate::datagram_echo::DatagramEcho;
use link::Link;
use net::{NetError, Stack, UdpHandle};

/// A UDP echo service bound to one port of a stack.
pub type UdpEcho = DatagramEcho<UdpHandle>;

impl DatagramEcho<UdpHandle> {
    /// Bind the echo service to `port` on `stack`.
    pub fn bind<L: Link>(stack: &mut Stack<L>, port: u16) -> Result<Self, NetError> {
        Ok(DatagramEcho::on(stack.udp_bind(port)?))
    }
}
