//! The echo loop the datagram services share (UDP, raw Ethernet): receive into one buffer,
//! send each datagram back to where it came from, keep a reply the link refused for the next
//! call.

use link::Link;
use net::{NetError, RawHandle, Stack, UdpHandle};
use std::net::SocketAddr;
use wire::MacAddr;

/// A socket kind a datagram echo serves: how it receives and answers.
pub trait EchoSocket: Copy {
    /// Where a datagram came from (and its reply goes to).
    type Addr: Copy;
    /// The next queued datagram into `buf`: its length and sender, `None` if none is queued.
    fn recv<L: Link>(self, stack: &mut Stack<L>, buf: &mut [u8]) -> Result<Option<(usize, Self::Addr)>, NetError>;
    /// Send `data` to `to`; false if the link is full.
    fn send<L: Link>(self, stack: &mut Stack<L>, to: Self::Addr, data: &[u8]) -> Result<bool, NetError>;
}

impl EchoSocket for UdpHandle {
    type Addr = SocketAddr;
    fn recv<L: Link>(self, stack: &mut Stack<L>, buf: &mut [u8]) -> Result<Option<(usize, SocketAddr)>, NetError> {
        Ok(stack.udp_recv_from(self, buf)?)
    }
    fn send<L: Link>(self, stack: &mut Stack<L>, to: SocketAddr, data: &[u8]) -> Result<bool, NetError> {
        Ok(stack.udp_send_to(self, to, data)?)
    }
}

impl EchoSocket for RawHandle {
    type Addr = MacAddr;
    fn recv<L: Link>(self, stack: &mut Stack<L>, buf: &mut [u8]) -> Result<Option<(usize, MacAddr)>, NetError> {
        Ok(stack.raw_recv(self, buf)?)
    }
    fn send<L: Link>(self, stack: &mut Stack<L>, to: MacAddr, data: &[u8]) -> Result<bool, NetError> {
        Ok(stack.raw_send(self, to, data)?)
    }
}

/// An echo service on one datagram socket of a stack (see [`crate::UdpEcho`] and
/// [`crate::RawEcho`]).
pub struct DatagramEcho<S: EchoSocket> {
    socket: S,
    buf: Vec<u8>,
    /// A reply the link refused, retried on the next call.
    held: Option<(usize, S::Addr)>,
    /// Datagrams echoed.
    pub echoed: u64,
    /// Bytes echoed.
    pub bytes: u64,
}

impl<S: EchoSocket> DatagramEcho<S> {
    /// An echo on a bound socket.
    pub(crate) fn on(socket: S) -> Self {
        DatagramEcho { socket, buf: vec![0u8; 65536], held: None, echoed: 0, bytes: 0 }
    }

    /// The socket the service listens on.
    pub fn socket(&self) -> S {
        self.socket
    }

    /// Echo every queued datagram (call after each poll). Returns the number echoed; stops
    /// early, keeping the reply, if the link is full.
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut n = 0;
        loop {
            let (len, from) = match self.held.take() {
                Some(h) => h,
                None => match self.socket.recv(stack, &mut self.buf)? {
                    Some(r) => r,
                    None => return Ok(n),
                },
            };
            let len = len.min(self.buf.len());
            if !self.socket.send(stack, from, &self.buf[..len])? {
                self.held = Some((len, from));
                return Ok(n);
            }
            n += 1;
            self.echoed += 1;
            self.bytes += len as u64;
        }
    }
}
