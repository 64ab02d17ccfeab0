//! A UDP echo service (RFC 862 style): every datagram goes back to its sender unchanged.

use link::Link;
use net::{NetError, Stack, UdpHandle};
use std::net::SocketAddrV4;

/// A UDP echo service bound to one port of a stack.
pub struct UdpEcho {
    socket: UdpHandle,
    buf: Vec<u8>,
    /// A reply the link refused, retried on the next call.
    held: Option<(usize, SocketAddrV4)>,
    /// Datagrams echoed.
    pub echoed: u64,
    /// Bytes echoed.
    pub bytes: u64,
}

impl UdpEcho {
    /// Bind the echo service to `port` on `stack`.
    pub fn bind<L: Link>(stack: &mut Stack<L>, port: u16) -> Result<Self, NetError> {
        let socket = stack.udp_bind(port)?;
        Ok(UdpEcho { socket, buf: vec![0u8; 65536], held: None, echoed: 0, bytes: 0 })
    }

    /// The socket the service listens on.
    pub fn socket(&self) -> UdpHandle {
        self.socket
    }

    /// Echo every queued datagram (call after each poll). Returns the number echoed; stops
    /// early, keeping the reply, if the link is full.
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut n = 0;
        loop {
            let (len, from) = match self.held.take() {
                Some(h) => h,
                None => match stack.udp_recv_from(self.socket, &mut self.buf)? {
                    Some(r) => r,
                    None => return Ok(n),
                },
            };
            let len = len.min(self.buf.len());
            if !stack.udp_send_to(self.socket, from, &self.buf[..len])? {
                self.held = Some((len, from));
                return Ok(n);
            }
            n += 1;
            self.echoed += 1;
            self.bytes += len as u64;
        }
    }
}
