//! The UDP socket table: bound ports, ephemeral allocation and per-socket receive queues.
//!
//! Memory: at most `Config::udp_max_sockets` sockets are bound at once (a bind beyond is
//! refused with [`BindError::TooManySockets`]). A socket costs its table entry (about 100
//! bytes) and its receive queue, which holds nothing until a datagram arrives and then grows
//! on demand (doubling from 2 KiB) up to `Config::socket_rx_bytes` (1 MiB) of datagrams and
//! `socket_rx_queue` (512) records of 40 bytes (the sender, of either family, and the
//! datagram's place). Every queue's storage is charged to the
//! stack's memory budget, shared with TCP (see `crate::tcp::memory`): a datagram whose queue
//! cannot grow under the limit is dropped as `rx_drop_udp_mem_limit`; closing a socket gives
//! its storage back at once.
//!
//! A socket is dual-stack, as a Linux socket bound to `::` is: it receives the datagrams
//! of both families sent to its port, and reports each sender as a `SocketAddr`.
//!
//! A socket may instead hand its datagrams to an application's [`UdpRxHandler`], straight
//! from the received frame (no queue, no copy): the RDMA receiver places payloads this way.

use crate::counters::Counter;
use crate::error::{BadHandle, BindError};
use crate::queue::PacketQueue;
use crate::tcp::memory::{MemAccount, MemLevel};
use link::Instant;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// A bound UDP socket of a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpHandle(pub(crate) u32);

/// An application's receiver of one socket's datagrams (see
/// [`Stack::udp_set_rx_handler`](crate::Stack::udp_set_rx_handler)): called during
/// `Stack::poll` with each datagram's payload where it lies in the received frame, in place
/// of queueing it. It must take every datagram (there is no back-pressure); the stack counts
/// each one as delivered (`udp_rx_datagrams`), so the handler counts its own drops.
/// `Any` lets the owner take its handler back as the type it installed.
pub trait UdpRxHandler: std::any::Any + Send {
    /// One datagram from `from` (an IPv4 or IPv6 sender), received at `now` (the time of
    /// the stack's poll).
    fn on_datagram(&mut self, now: Instant, from: SocketAddr, payload: &[u8]);
}

/// A socket's handler slot (`Debug` without the handler's internals).
#[derive(Default)]
pub(crate) struct HandlerSlot(pub Option<Box<dyn UdpRxHandler>>);

impl std::fmt::Debug for HandlerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "HandlerSlot(installed)" } else { "HandlerSlot(none)" })
    }
}

/// One bound socket.
#[derive(Debug)]
pub(crate) struct UdpSocket {
    pub port: u16,
    pub queue: PacketQueue<SenderMeta>,
    /// Datagrams go to this handler instead of the queue while one is installed.
    pub handler: HandlerSlot,
    pub icmp_errors: u64,
    /// Never fragment: datagrams above the path MTU are refused (IP_PMTUDISC_DO).
    pub dont_fragment: bool,
    /// Send with UDP checksum 0, "none" (Linux's SO_NO_CHECK).
    pub no_checksum: bool,
}

/// The sender of a queued datagram, of either family (a `Default` stand-in for `SocketAddr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SenderMeta(pub SocketAddr);

impl Default for SenderMeta {
    fn default() -> Self {
        SenderMeta(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)))
    }
}

/// What became of a received datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Queued on (or handed to the handler of) the socket bound to its port.
    Queued,
    /// No socket is bound to its port.
    NoSocket,
    /// Dropped for this receive verdict.
    Dropped(Counter),
}

/// All UDP sockets of a stack, with an O(1) port -> socket map.
#[derive(Debug)]
pub(crate) struct UdpTable {
    sockets: Vec<Option<UdpSocket>>,
    by_port: Box<[u32]>,
    /// Sockets bound now, and at most.
    open: usize,
    max_sockets: usize,
    next_ephemeral: u16,
    first_ephemeral: u16,
    queue_len: usize,
    queue_bytes: usize,
    max_payload: usize,
    /// The time of the stack's current poll, handed to handlers.
    pub now: Instant,
}

impl UdpTable {
    /// A table of at most `max_sockets` sockets, each queueing at most `queue_len` datagrams
    /// and `queue_bytes` bytes of datagrams of up to `max_payload` bytes.
    pub fn new(
        first_ephemeral: u16,
        max_sockets: usize,
        queue_len: usize,
        queue_bytes: usize,
        max_payload: usize,
    ) -> Self {
        UdpTable {
            sockets: Vec::new(),
            by_port: vec![0u32; 65536].into_boxed_slice(),
            open: 0,
            max_sockets,
            next_ephemeral: first_ephemeral,
            first_ephemeral,
            queue_len,
            queue_bytes,
            max_payload,
            now: Instant::ZERO,
        }
    }

    /// Bind `port` (0: pick a free ephemeral port).
    pub fn bind(&mut self, port: u16) -> Result<UdpHandle, BindError> {
        if self.open >= self.max_sockets {
            return Err(BindError::TooManySockets(self.max_sockets));
        }
        let port = if port == 0 { self.free_ephemeral()? } else { port };
        if self.by_port[port as usize] != 0 {
            return Err(BindError::PortInUse(port));
        }
        let socket = UdpSocket {
            port,
            queue: PacketQueue::on_demand(self.queue_len, self.queue_bytes, self.max_payload),
            handler: HandlerSlot::default(),
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
        self.open += 1;
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

    /// Close a socket: its queued datagrams are discarded and its storage given back.
    pub fn close(&mut self, h: UdpHandle, mem: &mut MemAccount) -> Result<(), BadHandle> {
        let s = self.sockets.get_mut(h.0 as usize).and_then(Option::take).ok_or(BadHandle)?;
        self.by_port[s.port as usize] = 0;
        self.open -= 1;
        mem.release_udp(s.queue.storage_len());
        Ok(())
    }

    /// Sockets bound now.
    pub fn open(&self) -> usize {
        self.open
    }

    /// Sockets that may be bound at once.
    pub fn max_sockets(&self) -> usize {
        self.max_sockets
    }

    /// Queue a datagram from `from` for the socket bound to `port` (or hand it to the
    /// socket's handler).
    #[inline]
    pub fn deliver(&mut self, port: u16, from: SocketAddr, payload: &[u8], mem: &mut MemAccount) -> Delivery {
        let i = match self.by_port[port as usize] {
            0 => return Delivery::NoSocket,
            i => i as usize - 1,
        };
        let Some(sock) = self.sockets[i].as_mut() else { return Delivery::NoSocket };
        if let Some(h) = sock.handler.0.as_mut() {
            h.on_datagram(self.now, from, payload);
            return Delivery::Queued;
        }
        if sock.queue.push(SenderMeta(from), payload) {
            return Delivery::Queued;
        }
        self.deliver_growing(i, from, payload, mem)
    }

    /// The queue is full for `payload`: grow it if its limits and the budget allow.
    #[cold]
    fn deliver_growing(&mut self, i: usize, from: SocketAddr, payload: &[u8], mem: &mut MemAccount) -> Delivery {
        fn queue(t: &mut UdpTable, i: usize) -> &mut PacketQueue<SenderMeta> {
            &mut t.sockets[i].as_mut().expect("a bound socket").queue
        }
        let Some((bytes, records)) = queue(self, i).growth_for(payload.len()) else {
            return Delivery::Dropped(Counter::rx_drop_udp_rx_queue_full);
        };
        let extra = |t: &mut Self| {
            PacketQueue::<SenderMeta>::storage_of(bytes, records).saturating_sub(queue(t, i).storage_len())
        };
        if !mem.fits(extra(self)) {
            // Emptied queues (this one too) give their storage back before anything is refused.
            self.release_empty(mem);
            if !mem.fits(extra(self)) {
                return Delivery::Dropped(Counter::rx_drop_udp_mem_limit);
            }
        }
        let q = queue(self, i);
        let before = q.storage_len();
        q.grow_to(bytes, records);
        mem.charge_udp(q.storage_len().saturating_sub(before));
        let queued = q.push(SenderMeta(from), payload);
        debug_assert!(queued, "a grown queue takes the datagram it grew for");
        if queued {
            Delivery::Queued
        } else {
            Delivery::Dropped(Counter::rx_drop_udp_rx_queue_full)
        }
    }

    /// Give back the storage of every empty queue.
    fn release_empty(&mut self, mem: &mut MemAccount) {
        for s in self.sockets.iter_mut().flatten() {
            mem.release_udp(s.queue.release());
        }
    }

    /// Take the oldest datagram of a socket, lending it to `f`; at or above the memory
    /// pressure level a queue read empty gives its storage back.
    pub fn recv_with<R>(
        &mut self,
        h: UdpHandle,
        mem: &mut MemAccount,
        f: impl FnOnce(SocketAddr, &[u8]) -> R,
    ) -> Result<Option<R>, BadHandle> {
        let q = &mut self.get_mut(h)?.queue;
        let r = q.pop_with(|m, data| f(m.0, data));
        if q.is_empty() && mem.level() != MemLevel::Normal {
            mem.release_udp(q.release());
        }
        Ok(r)
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
        let mut t = UdpTable::new(65534, 8, 4, 400, 100);
        let mem = &mut MemAccount::new(1 << 20, 1 << 20);
        let a = t.bind(5000).unwrap();
        assert!(matches!(t.bind(5000), Err(BindError::PortInUse(5000))));
        let e1 = t.bind(0).unwrap();
        let e2 = t.bind(0).unwrap();
        assert_eq!((t.get(e1).unwrap().port, t.get(e2).unwrap().port), (65534, 65535));
        assert!(matches!(t.bind(0), Err(BindError::NoFreePort)));
        t.close(e1, mem).unwrap();
        let again = t.bind(0).unwrap();
        assert_eq!(t.get(again).unwrap().port, 65534);
        assert!(t.by_port_mut(5000).is_some());
        t.close(a, mem).unwrap();
        assert!(t.by_port_mut(5000).is_none());
        assert!(matches!(t.close(a, mem), Err(BadHandle)));
    }

    fn from() -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 9))
    }

    /// Records what it was handed.
    struct Recorder(Vec<(SocketAddr, Vec<u8>)>);

    impl UdpRxHandler for Recorder {
        fn on_datagram(&mut self, _now: Instant, from: SocketAddr, payload: &[u8]) {
            self.0.push((from, payload.to_vec()));
        }
    }

    #[test]
    fn a_handler_takes_datagrams_instead_of_the_queue_and_comes_back_as_installed() {
        let mut t = UdpTable::new(49152, 8, 64, 8192, 1500);
        let mem = &mut MemAccount::new(1 << 20, 1 << 20);
        let a = t.bind(1).unwrap();
        t.get_mut(a).unwrap().handler.0 = Some(Box::new(Recorder(Vec::new())));
        for i in 0..100u8 {
            assert_eq!(t.deliver(1, from(), &[i; 50], mem), Delivery::Queued);
        }
        assert_eq!((t.get(a).unwrap().queue.len(), mem.used), (0, 0), "nothing queued, nothing charged");
        let h: Box<dyn std::any::Any> = t.get_mut(a).unwrap().handler.0.take().unwrap();
        let got = h.downcast::<Recorder>().unwrap().0;
        assert_eq!(got.len(), 100, "every datagram, past the queue's 64 records");
        assert!(got.iter().enumerate().all(|(i, (f, d))| *f == from() && *d == [i as u8; 50]));
        // Without a handler the queue takes them again.
        assert_eq!(t.deliver(1, from(), b"q", mem), Delivery::Queued);
        assert_eq!(t.get(a).unwrap().queue.len(), 1);
    }

    #[test]
    fn sockets_are_bounded_and_a_closed_one_frees_its_place() {
        let mut t = UdpTable::new(49152, 2, 4, 400, 100);
        let mem = &mut MemAccount::new(1 << 20, 1 << 20);
        let a = t.bind(1).unwrap();
        t.bind(2).unwrap();
        assert_eq!(t.bind(3), Err(BindError::TooManySockets(2)));
        assert_eq!(t.open(), 2);
        t.close(a, mem).unwrap();
        assert!(t.bind(3).is_ok());
    }

    #[test]
    fn queues_grow_on_demand_charged_to_the_budget_and_give_it_back() {
        let mut t = UdpTable::new(49152, 8, 64, 8192, 1500);
        let mem = &mut MemAccount::new(4096, 6000);
        let a = t.bind(1).unwrap();
        assert_eq!((t.get(a).unwrap().queue.storage_len(), mem.used), (0, 0), "nothing up front");
        assert_eq!(t.deliver(9, from(), b"x", mem), Delivery::NoSocket);
        assert_eq!(t.deliver(1, from(), &[1; 1000], mem), Delivery::Queued);
        let held = t.get(a).unwrap().queue.storage_len();
        assert!((1000..3000).contains(&held), "{held}");
        assert_eq!((mem.used, mem.udp), (held, held));
        // A second socket fills the rest of the budget; then growth is refused and counted.
        let b = t.bind(2).unwrap();
        let mut verdicts = Vec::new();
        for _ in 0..6 {
            verdicts.push(t.deliver(2, from(), &[2; 1000], mem));
        }
        assert_eq!(verdicts.iter().filter(|v| **v == Delivery::Queued).count(), 2, "{verdicts:?}");
        assert!(verdicts[2..].iter().all(|v| *v == Delivery::Dropped(Counter::rx_drop_udp_mem_limit)));
        assert!(mem.used <= mem.limit, "{} > {}", mem.used, mem.limit);
        assert_eq!(mem.used, held + t.get(b).unwrap().queue.storage_len());
        // Reading under pressure gives an emptied queue's storage back; closing gives the rest.
        assert_eq!(t.recv_with(a, mem, |_, d| d.len()).unwrap(), Some(1000));
        assert_eq!((t.get(a).unwrap().queue.storage_len(), mem.udp), (0, mem.used));
        t.close(b, mem).unwrap();
        assert_eq!((mem.used, mem.udp), (0, 0));
        assert!(matches!(t.recv_with(b, mem, |_, _| ()), Err(BadHandle)));
    }

    #[test]
    fn a_refused_datagram_is_taken_once_emptied_queues_give_their_storage_back() {
        let mut t = UdpTable::new(49152, 8, 64, 8192, 1500);
        let mem = &mut MemAccount::new(6000, 6000);
        let (a, b) = (t.bind(1).unwrap(), t.bind(2).unwrap());
        assert_eq!(t.deliver(1, from(), &[1; 1500], mem), Delivery::Queued);
        assert_eq!(t.deliver(1, from(), &[1; 1500], mem), Delivery::Queued);
        assert_eq!(t.recv_with(a, mem, |_, _| ()).unwrap(), Some(()));
        assert_eq!(t.recv_with(a, mem, |_, _| ()).unwrap(), Some(()));
        assert!(mem.udp > 0, "below the pressure level an emptied queue keeps its storage");
        let kept = mem.udp;
        assert_eq!(t.deliver(2, from(), &[2; 1500], mem), Delivery::Queued);
        assert_eq!(t.deliver(2, from(), &[2; 1500], mem), Delivery::Queued);
        assert!(kept + 2048 > mem.limit, "b's queue could not have grown beside a's");
        assert_eq!(t.get(a).unwrap().queue.storage_len(), 0, "a's emptied queue gave its storage back for b");
        assert_eq!(mem.udp, t.get(a).unwrap().queue.storage_len() + t.get(b).unwrap().queue.storage_len());
        assert!(mem.used <= mem.limit);
    }
}
