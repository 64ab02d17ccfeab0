//! A raw Ethernet echo service: every frame of one EtherType goes back to the MAC address it
//! came from with its payload unchanged (the raw-Ethernet counterpart of the UDP echo, for
//! seed 000's round trip per protocol).

use link::Link;
use net::{NetError, RawHandle, Stack};
use wire::MacAddr;

/// A raw Ethernet echo bound to one EtherType of a stack.
pub struct RawEcho {
    socket: RawHandle,
    buf: Vec<u8>,
    /// A reply the link refused, retried on the next call.
    held: Option<(usize, MacAddr)>,
    /// Frames echoed.
    pub echoed: u64,
    /// Payload bytes echoed.
    pub bytes: u64,
}

impl RawEcho {
    /// Bind the echo to `ethertype` on `stack` (not IPv4, ARP or VLAN; at least 0x0600).
    pub fn bind<L: Link>(stack: &mut Stack<L>, ethertype: u16) -> Result<Self, NetError> {
        let socket = stack.raw_bind(ethertype)?;
        Ok(RawEcho { socket, buf: vec![0u8; 65536], held: None, echoed: 0, bytes: 0 })
    }

    /// The socket the service listens on.
    pub fn socket(&self) -> RawHandle {
        self.socket
    }

    /// Echo every queued frame (call after each poll). Returns the number echoed; stops
    /// early, keeping the reply, if the link is full.
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut n = 0;
        loop {
            let (len, from) = match self.held.take() {
                Some(h) => h,
                None => match stack.raw_recv(self.socket, &mut self.buf)? {
                    Some(r) => r,
                    None => return Ok(n),
                },
            };
            let len = len.min(self.buf.len());
            if !stack.raw_send(self.socket, from, &self.buf[..len])? {
                self.held = Some((len, from));
                return Ok(n);
            }
            n += 1;
            self.echoed += 1;
            self.bytes += len as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use link::mem::pair;
    use link::{Instant, LinkConfig};
    use net::Config;

    #[test]
    fn frames_come_back_to_their_sender_unchanged() {
        let (la, lb) = pair(LinkConfig::default());
        let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
        let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
        let mut echo = RawEcho::bind(&mut b, 0x88b5).unwrap();
        let ours = a.raw_bind(0x88b5).unwrap();
        let payload: Vec<u8> = (0..64u8).collect();
        assert!(a.raw_send(ours, b.mac(), &payload).unwrap());
        a.flush().unwrap();
        let mut got = None;
        let mut buf = [0u8; 256];
        for _ in 0..100 {
            b.poll(Instant::ZERO).unwrap();
            echo.serve(&mut b).unwrap();
            b.flush().unwrap();
            a.poll(Instant::ZERO).unwrap();
            if let Some(r) = a.raw_recv(ours, &mut buf).unwrap() {
                got = Some(r);
                break;
            }
        }
        let (n, from) = got.expect("no echo");
        assert_eq!((&buf[..n], from), (&payload[..], b.mac()));
        assert_eq!((echo.echoed, echo.bytes), (1, 64));
    }

    #[test]
    fn reserved_ethertypes_are_refused() {
        let (la, _lb) = pair(LinkConfig::default());
        let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
        assert!(RawEcho::bind(&mut a, wire::ethertype::IPV4).is_err());
    }
}
