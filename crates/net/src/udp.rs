//! The UDP socket table: bound ports, ephemeral allocation and per-socket receive queues.

use crate::error::{BadHandle, BindError};
use crate::queue::PacketQueue;
use std::net::{Ipv4Addr, SocketAddrV4};

/// A bound UDP socket of a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpHandle(pub(crate) u32);

/// One bound socket.
#[derive(Debug)]
pub(crate) struct UdpSocket {
    pub port: u16,
    pub queue: PacketQueue<SocketAddrV4Meta>,
    pub icmp_errors: u64,
    /// Never fragment: datagrams above the path MTU are refused (IP_PMTUDISC_DO).
    pub dont_fragment: bool,
    /// Send with UDP checksum 0, "none" (Linux's SO_NO_CHECK).
    pub no_checksum: bool,
}

/// The sender of a queued datagram (a `Default` stand-in for `SocketAddrV4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SocketAddrV4Meta(pub SocketAddrV4);

impl Default for SocketAddrV4Meta {
    fn default() -> Self {
        SocketAddrV4Meta(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0))
    }
}

/// All UDP sockets of a stack, with an O(1) port -> socket map.
#[derive(Debug)]
pub(crate) struct UdpTable {
    sockets: Vec<Option<UdpSocket>>,
    by_port: Box<[u32]>,
    next_ephemeral: u16,
    first_ephemeral: u16,
    queue_len: usize,
    queue_bytes: usize,
    max_payload: usize,
}

impl UdpTable {
    pub fn new(first_ephemeral: u16, queue_len: usize, queue_bytes: usize, max_payload: usize) -> Self {
        UdpTable {
            sockets: Vec::new(),
            by_port: vec![0u32; 65536].into_boxed_slice(),
            next_ephemeral: first_ephemeral,
            first_ephemeral,
            queue_len,
            queue_bytes,
            max_payload,
        }
    }

    /// Bind `port` (0: pick a free ephemeral port).
    pub fn bind(&mut self, port: u16) -> Result<UdpHandle, BindError> {
        let port = if port == 0 { self.free_ephemeral()? } else { port };
        if self.by_port[port as usize] != 0 {
            return Err(BindError::PortInUse(port));
        }
        let socket = UdpSocket {
            port,
            queue: PacketQueue::with_limits(self.queue_len, self.queue_bytes, self.max_payload),
            icmp_errors: 0,
            dont_fragment: false,
            no_checksum: false,
        };
        let idx = match self.sockets.iter().position(Option::is_none) {
            Some(i) => {
                self.sockets[i] = Some(socket);
                i
            }
            None => {
                self.sockets.push(Some(socket));
                self.sockets.len() - 1
            }
        };
        self.by_port[port as usize] = idx as u32 + 1;
        Ok(UdpHandle(idx as u32))
    }

    fn free_ephemeral(&mut self) -> Result<u16, BindError> {
        let span = 65536 - self.first_ephemeral as u32;
        for _ in 0..span {
            let p = self.next_ephemeral;
            self.next_ephemeral = if p == u16::MAX { self.first_ephemeral } else { p + 1 };
            if self.by_port[p as usize] == 0 {
                return Ok(p);
            }
        }
        Err(BindError::NoFreePort)
    }

    pub fn close(&mut self, h: UdpHandle) -> Result<(), BadHandle> {
        let s = self.sockets.get_mut(h.0 as usize).and_then(Option::take).ok_or(BadHandle)?;
        self.by_port[s.port as usize] = 0;
        Ok(())
    }

    pub fn get(&self, h: UdpHandle) -> Result<&UdpSocket, BadHandle> {
        self.sockets.get(h.0 as usize).and_then(Option::as_ref).ok_or(BadHandle)
    }

    pub fn get_mut(&mut self, h: UdpHandle) -> Result<&mut UdpSocket, BadHandle> {
        self.sockets.get_mut(h.0 as usize).and_then(Option::as_mut).ok_or(BadHandle)
    }

    /// The socket bound to `port`, if any.
    #[inline]
    pub fn by_port_mut(&mut self, port: u16) -> Option<&mut UdpSocket> {
        match self.by_port[port as usize] {
            0 => None,
            i => self.sockets[i as usize - 1].as_mut(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_close_and_ephemeral() {
        let mut t = UdpTable::new(65534, 4, 400, 100);
        let a = t.bind(5000).unwrap();
        assert!(matches!(t.bind(5000), Err(BindError::PortInUse(5000))));
        let e1 = t.bind(0).unwrap();
        let e2 = t.bind(0).unwrap();
        assert_eq!((t.get(e1).unwrap().port, t.get(e2).unwrap().port), (65534, 65535));
        assert!(matches!(t.bind(0), Err(BindError::NoFreePort)));
        t.close(e1).unwrap();
        let again = t.bind(0).unwrap();
        assert_eq!(t.get(again).unwrap().port, 65534);
        assert!(t.by_port_mut(5000).is_some());
        t.close(a).unwrap();
        assert!(t.by_port_mut(5000).is_none());
        assert!(matches!(t.close(a), Err(BadHandle)));
    }
}
