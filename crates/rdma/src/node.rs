//! `RdmaNode`: the sender and receiver of one node, driven over a `net::Stack` it does not
//! own, by `poll(stack, now)`.
//!
//! Over UDP the receive path is installed as the socket's handler
//! ([`net::Stack::udp_set_rx_handler`]): during `Stack::poll` each datagram is verified
//! (CRC32C over header and payload in one pass) and its payload copied once, from the
//! received frame into the region; ACKs and NACKs for the sender wait for the node's next
//! poll, which answers, runs the timers and sends per batch.

use crate::counters::{Counter, Counters};
use crate::memory::{Lens, MemoryUse};
use crate::notify::NotifyQueue;
use crate::peer::{Peer, Transport};
use crate::receiver::{Answer, Receiver};
use crate::region::{ExternalMem, RegionKey, RegionMem};
use crate::regtable::RegTable;
use crate::sender::{Emit, Sender, TxOutcome, WriteOptions};
use crate::wire::{PacketType, RdmaPacket, RdmaRepr, RdmaWireError, HEADER_LEN};
use crate::{RdmaConfig, RdmaError};
use link::{Instant, Link};
use net::{NetError, RawHandle, Stack, UdpHandle, UdpRxHandler};
use std::net::{SocketAddr, SocketAddrV4};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

#[derive(Debug, Clone, Copy)]
enum Sock {
    Udp(UdpHandle),
    Eth(RawHandle),
}

/// One RDMA endpoint: memory regions, a receiver (registration table, escape channel,
/// notification queue) and a sender (command queue, op and transaction tables), carried in
/// UDP or raw Ethernet over a stack that the caller owns and polls.
///
/// Call [`RdmaNode::poll`] after (or before) every `Stack::poll` with the same `now`; it
/// never blocks. Completions arrive on two queues: [`RdmaNode::notifications`] (remote
/// writes that landed here) and [`RdmaNode::completions`] (this node's writes).
pub struct RdmaNode {
    cfg: RdmaConfig,
    sock: Sock,
    port_or_type: u16,
    path: Arc<Mutex<RxPath>>,
    busy: Arc<AtomicU64>,
    recv_q: NotifyQueue,
    tx: Sender,
    send_q: NotifyQueue,
    max_packet: usize,
    timer_deferrals: u32,
}

/// Everything a received packet touches, shared by the node and (over UDP) the handler the
/// stack calls with each datagram.
struct RxPath {
    rx: Receiver,
    ctr: Counters,
    recv_q: NotifyQueue,
    /// ACKs and NACKs to send.
    answers: Vec<Answer>,
    /// ACKs and NACKs received, for the sender at the next poll.
    replies: Vec<Answer>,
    max_packet: usize,
    max_answers: usize,
    /// The time of the poll (the stack's, or the node's) that handed the packet over.
    now: Instant,
    /// Datagrams taken since the node's last poll.
    taken: usize,
}

/// The handler installed on the node's UDP socket.
struct BypassHandler {
    path: Arc<Mutex<RxPath>>,
    busy: Arc<AtomicU64>,
}

impl UdpRxHandler for BypassHandler {
    fn on_datagram(&mut self, now: Instant, from: SocketAddr, payload: &[u8]) {
        match self.path.try_lock() {
            Ok(mut p) => {
                p.now = now;
                p.receive(Peer::Udp(from), payload)
            }
            Err(TryLockError::Poisoned(e)) => {
                let mut p = e.into_inner();
                p.now = now;
                p.receive(Peer::Udp(from), payload)
            }
            // The application holds the node's state across `Stack::poll` (a region
            // borrowed on this thread, or another thread's call): dropped and counted.
            Err(TryLockError::WouldBlock) => {
                self.busy.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A registered region's bytes, borrowed from the node (see [`RdmaNode::region`]): while it
/// lives, datagrams for the node are dropped (`drop_busy`), so do not keep it across
/// `Stack::poll`.
pub struct RegionRef<'a> {
    path: MutexGuard<'a, RxPath>,
    key: RegionKey,
}

impl Deref for RegionRef<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.path.rx.regions.get(self.key).unwrap_or_default()
    }
}

impl std::fmt::Debug for RegionRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionRef").field("key", &self.key).field("len", &self.len()).finish()
    }
}

/// A registered region's bytes, mutable (see [`RdmaNode::region_mut`]).
pub struct RegionMut<'a>(RegionRef<'a>);

impl Deref for RegionMut<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for RegionMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let key = self.0.key;
        self.0.path.rx.regions.get_mut(key).unwrap_or_default()
    }
}

impl RxPath {
    /// One datagram or frame payload: too long ones are dropped and counted.
    fn receive(&mut self, peer: Peer, bytes: &[u8]) {
        self.taken += 1;
        if bytes.len() > self.max_packet {
            self.ctr.bump(Counter::rx_datagrams);
            self.ctr.bump(Counter::drop_oversize);
        } else {
            let now = self.now;
            self.handle_packet(peer, bytes, now);
        }
    }

    /// See [`RdmaNode::handle_packet`].
    fn handle_packet(&mut self, peer: Peer, bytes: &[u8], now: Instant) {
        self.ctr.bump(Counter::rx_datagrams);
        let pkt = match RdmaPacket::new_checked(bytes) {
            Ok(p) => p,
            Err(e) => {
                self.ctr.bump(match e {
                    RdmaWireError::Truncated | RdmaWireError::TooLong => Counter::drop_truncated,
                    RdmaWireError::BadMagic => Counter::drop_bad_magic,
                    RdmaWireError::BadVersion => Counter::drop_bad_version,
                    RdmaWireError::BadType => Counter::drop_bad_type,
                    RdmaWireError::BadFlags => Counter::drop_bad_flags,
                    RdmaWireError::BadReason => Counter::drop_bad_reason,
                    RdmaWireError::BadCrc => Counter::drop_bad_crc,
                });
                return;
            }
        };
        self.ctr.bump(Counter::rx_packets);
        match pkt.packet_type() {
            PacketType::Ack | PacketType::Nack(_) => {
                if self.replies.len() < self.max_answers {
                    self.replies.push((peer, pkt.repr()));
                } else {
                    self.ctr.bump(Counter::drop_reply_backlog);
                }
            }
            _ => self.rx.handle(peer, &pkt, now, &mut self.answers, &self.recv_q, &mut self.ctr),
        }
        // Answers wait while the link is full, but not without bound (also when packets are
        // handed in faster than the node is polled): the newest beyond it are dropped.
        if self.answers.len() > self.max_answers {
            let excess = self.answers.len() - self.max_answers;
            self.answers.truncate(self.max_answers);
            self.ctr.add(Counter::drop_answer_backlog, excess as u64);
        }
    }
}

/// Polls in a row that may skip the retransmission timers because packets are still
/// arriving (see [`RdmaNode::poll`]).
pub const MAX_TIMER_DEFERRALS: u32 = 32;

/// Sends packets built in place in the stack's outgoing frames (header, payload and CRC
/// written once, straight into the frame).
struct StackEmit<'a, L: Link> {
    stack: &'a mut Stack<L>,
    sock: Sock,
    fatal: Option<NetError>,
    sent: usize,
}

impl<L: Link> Emit for StackEmit<'_, L> {
    fn emit(&mut self, peer: Peer, repr: &RdmaRepr, payload: &[u8]) -> TxOutcome {
        if self.fatal.is_some() {
            return TxOutcome::Busy;
        }
        if payload.len() > usize::from(u16::MAX) {
            return TxOutcome::Failed;
        }
        let n = HEADER_LEN + payload.len();
        // `fill` gets exactly `n` bytes, so the emit cannot fail (the length was checked).
        let fill = |buf: &mut [u8]| {
            let _ = repr.emit(buf, payload);
        };
        let r = match (self.sock, peer) {
            (Sock::Udp(h), Peer::Udp(a)) => self.stack.udp_send_with(h, a, n, fill).map_err(NetError::from),
            (Sock::Eth(h), Peer::Eth(m)) => self.stack.raw_send_with(h, m, n, fill).map_err(NetError::from),
            _ => return TxOutcome::Failed,
        };
        match r {
            Ok(true) => {
                self.sent += 1;
                TxOutcome::Sent
            }
            Ok(false) => TxOutcome::Busy,
            Err(NetError::Link(e)) => {
                self.fatal = Some(NetError::Link(e));
                TxOutcome::Busy
            }
            Err(_) => TxOutcome::Failed,
        }
    }
}

/// Fold each run of ACKs to one peer for consecutive packets of one op into a single ACK
/// whose span covers the run (only neighbours in the queue, so answers keep their order);
/// returns how many ACKs were folded away.
fn coalesce_acks(answers: &mut Vec<Answer>) -> usize {
    let mut kept = 0;
    for i in 0..answers.len() {
        let (peer, a) = answers[i];
        if kept > 0 {
            let (p, prev) = &mut answers[kept - 1];
            if *p == peer && prev.absorb_ack(&a) {
                continue;
            }
        }
        answers[kept] = (peer, a);
        kept += 1;
    }
    let folded = answers.len() - kept;
    answers.truncate(kept);
    folded
}

/// Lock the receive path and count the datagrams the handler dropped while it was held.
fn lock_path<'a>(path: &'a Mutex<RxPath>, busy: &AtomicU64) -> MutexGuard<'a, RxPath> {
    let mut p = path.lock().unwrap_or_else(PoisonError::into_inner);
    // A load first: the swap (a locked instruction) only when the handler dropped something.
    let n = if busy.load(Ordering::Relaxed) > 0 { busy.swap(0, Ordering::Relaxed) } else { 0 };
    if n > 0 {
        p.ctr.add(Counter::rx_datagrams, n);
        p.ctr.add(Counter::drop_busy, n);
    }
    p
}

impl RdmaNode {
    /// A node on `stack`: binds the configured UDP port or EtherType.
    pub fn new<L: Link>(stack: &mut Stack<L>, cfg: RdmaConfig) -> Result<Self, RdmaError> {
        cfg.validate()?;
        let max_packet =
            stack.config().mtu.saturating_sub(cfg.transport.overhead()).min(HEADER_LEN + usize::from(u16::MAX));
        let max_payload = max_packet.saturating_sub(HEADER_LEN);
        let stride = cfg.packet_payload.unwrap_or(max_payload);
        if stride == 0 || stride > max_payload {
            return Err(RdmaError::BadConfig(format!(
                "packet payload {stride} does not fit: the MTU leaves {max_payload} bytes after the headers"
            )));
        }
        // To an IPv6 peer the headers are 20 bytes longer: its packets carry that much less,
        // so that they too fit the MTU unfragmented.
        let stride6 = stride.min(max_payload.saturating_sub(crate::peer::IPV6_EXTRA_HEADER));
        let recv_q = NotifyQueue::new();
        let path = Arc::new(Mutex::new(RxPath {
            rx: Receiver::new(&cfg, max_packet),
            ctr: Counters::new(),
            recv_q: recv_q.clone(),
            answers: Vec::new(),
            replies: Vec::new(),
            max_packet,
            max_answers: crate::memory::answer_backlog(&cfg),
            now: stack.now(),
            taken: 0,
        }));
        let busy = Arc::new(AtomicU64::new(0));
        let (sock, port_or_type) = match cfg.transport {
            Transport::Udp { port } => {
                let h = stack.udp_bind(port)?;
                // The packet's CRC32C covers header and payload: no UDP checksum on top.
                stack.udp_set_checksum(h, false)?;
                // Datagrams go straight from the received frame into the regions.
                stack.udp_set_rx_handler(h, Box::new(BypassHandler { path: path.clone(), busy: busy.clone() }))?;
                (Sock::Udp(h), stack.udp_port(h)?)
            }
            Transport::Eth { ethertype } => (Sock::Eth(stack.raw_bind(ethertype)?), ethertype),
        };
        Ok(RdmaNode {
            path,
            busy,
            recv_q,
            tx: Sender::new(&cfg, stride).with_ipv6_stride(stride6),
            send_q: NotifyQueue::new(),
            max_packet,
            timer_deferrals: 0,
            sock,
            port_or_type,
            cfg,
        })
    }

    /// The receive path, locked (never contended while the application keeps to one
    /// thread and no [`RegionRef`] across `Stack::poll`).
    fn path(&self) -> MutexGuard<'_, RxPath> {
        lock_path(&self.path, &self.busy)
    }

    /// This node's address as peers name it.
    pub fn address<L: Link>(&self, stack: &Stack<L>) -> Peer {
        match self.sock {
            Sock::Udp(_) => Peer::Udp(SocketAddrV4::new(stack.ip(), self.port_or_type).into()),
            Sock::Eth(_) => Peer::Eth(stack.mac()),
        }
    }

    /// Close the node's socket on `stack` (its handler with it).
    pub fn close<L: Link>(self, stack: &mut Stack<L>) -> Result<(), RdmaError> {
        match self.sock {
            Sock::Udp(h) => stack.udp_close(h)?,
            Sock::Eth(h) => stack.raw_close(h)?,
        }
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &RdmaConfig {
        &self.cfg
    }

    /// Payload bytes per data packet (to IPv4 and Ethernet peers).
    pub fn packet_payload(&self) -> usize {
        self.tx.stride()
    }

    /// Payload bytes per data packet to IPv6 peers: 20 fewer than [`Self::packet_payload`]
    /// when that fills the MTU, so that the longer IPv6 header fits too.
    pub fn packet_payload6(&self) -> usize {
        self.tx.stride6()
    }

    /// Largest packet (header + payload) this node sends or accepts.
    pub fn max_packet(&self) -> usize {
        self.max_packet
    }

    /// Register `buf` as a region peers may write into; returns its key.
    pub fn register(&mut self, buf: impl Into<Box<[u8]>>) -> Result<RegionKey, RdmaError> {
        self.path().rx.regions.register(RegionMem::Owned(buf.into())).ok_or(RdmaError::TooManyRegions)
    }

    /// Register the caller's memory in place as a region: remote writes land in it directly
    /// (no copy in or out). The memory stays registered until [`RdmaNode::deregister_mem`]
    /// (or [`RdmaNode::deregister`]) or the node is dropped; then `mem`'s owner is dropped.
    pub fn register_mem(&mut self, mem: ExternalMem) -> Result<RegionKey, RdmaError> {
        self.path().rx.regions.register(RegionMem::External(mem)).ok_or(RdmaError::TooManyRegions)
    }

    /// Deregister a region and take its memory back as it is (an owned buffer, or the
    /// caller's memory with its owner). Writes still in flight are refused from now on.
    pub fn deregister_mem(&mut self, key: RegionKey) -> Result<RegionMem, RdmaError> {
        let mut p = self.path();
        let p = &mut *p;
        p.rx.deregister(key, &mut p.ctr).ok_or(RdmaError::NoSuchRegion(key.0))
    }

    /// Deregister a region and take its buffer back. Writes into it that are still in
    /// flight are refused from now on (NACK `deregistered`); pending registered ops into it
    /// are dropped and counted.
    /// (Memory registered in place comes back as a copy; see [`RdmaNode::deregister_mem`].)
    pub fn deregister(&mut self, key: RegionKey) -> Result<Box<[u8]>, RdmaError> {
        self.deregister_mem(key).map(RegionMem::into_boxed)
    }

    /// The bytes of a registered region, borrowed from the node. While the borrow lives,
    /// datagrams for this node are dropped (`drop_busy`): let it go before `Stack::poll`.
    pub fn region(&self, key: RegionKey) -> Option<RegionRef<'_>> {
        let path = self.path();
        path.rx.regions.get(key)?;
        Some(RegionRef { path, key })
    }

    /// The bytes of a registered region, mutable (the same rule as [`RdmaNode::region`]).
    pub fn region_mut(&mut self, key: RegionKey) -> Option<RegionMut<'_>> {
        self.region(key).map(RegionMut)
    }

    /// Post a write of `data` into region `key` of node `dst` at `offset`; returns the
    /// write id that its local completion carries.
    pub fn post_write(
        &mut self,
        dst: Peer,
        key: RegionKey,
        offset: u64,
        data: impl Into<Arc<[u8]>>,
    ) -> Result<u64, RdmaError> {
        self.post_write_with(dst, key, offset, data, WriteOptions::default())
    }

    /// [`RdmaNode::post_write`] with options (registered or not).
    pub fn post_write_with(
        &mut self,
        dst: Peer,
        key: RegionKey,
        offset: u64,
        data: impl Into<Arc<[u8]>>,
        opts: WriteOptions,
    ) -> Result<u64, RdmaError> {
        match (self.sock, dst) {
            (Sock::Udp(_), Peer::Udp(_)) | (Sock::Eth(_), Peer::Eth(_)) => {}
            _ => return Err(RdmaError::WrongTransport(dst)),
        }
        // Every pending write posts one completion: with those not yet taken, they must fit
        // the completion queue's bound.
        let mut p = lock_path(&self.path, &self.busy);
        if self.send_q.len() + self.tx.pending_writes() >= self.cfg.notify_capacity {
            p.ctr.bump(Counter::tx_refused_completions_full);
            return Err(RdmaError::CompletionsFull);
        }
        self.tx.post(dst, key, offset, data.into(), opts, &mut p.ctr)
    }

    /// Completions of remote writes into this node's regions (receive side).
    pub fn notifications(&self) -> &NotifyQueue {
        &self.recv_q
    }

    /// Completions of this node's writes (send side).
    pub fn completions(&self) -> &NotifyQueue {
        &self.send_q
    }

    /// The counters, as they are now.
    pub fn counters(&self) -> Counters {
        self.path().ctr.clone()
    }

    /// Writes posted and not yet completed.
    pub fn pending_writes(&self) -> usize {
        self.tx.pending_writes()
    }

    /// Packets in flight (sent, not yet acknowledged).
    pub fn packets_in_flight(&self) -> usize {
        self.tx.packets_in_flight()
    }

    /// Registered ops in the registration table.
    pub fn registered_in_flight(&self) -> usize {
        self.path().rx.registered_in_flight()
    }

    /// Packets parked in the escape channel.
    pub fn escape_len(&self) -> usize {
        self.path().rx.escape_len()
    }

    /// Bytes of the registration table of this configuration.
    pub fn registration_memory(&self) -> usize {
        RegTable::memory_bytes(self.cfg.reg_entries, self.cfg.mask_width)
    }

    /// Earliest instant a timer needs a poll (`None`: nothing armed). A node with packets
    /// waiting for the window needs polls whenever answers may arrive.
    pub fn next_deadline(&self) -> Option<Instant> {
        match (self.tx.next_deadline(), self.path().rx.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handle one received packet from `peer` (also usable by test benches and fuzzers);
    /// an ACK or NACK reaches the sender at the next [`RdmaNode::poll`].
    pub fn handle_packet(&mut self, peer: Peer, bytes: &[u8], now: Instant) {
        self.path().handle_packet(peer, bytes, now);
    }

    /// What every queue of the node holds now and the bound its configuration sets (see
    /// [`crate::memory`]).
    pub fn memory(&self) -> MemoryUse {
        let p = self.path();
        let lens = Lens {
            escape: p.rx.escape_len(),
            registered_ops: p.rx.registered_in_flight(),
            notifications: self.recv_q.len(),
            recent_ops: p.rx.recent_len(),
            answers: p.answers.len(),
            replies: p.replies.len(),
            completions: self.send_q.len(),
            pending_writes: self.tx.pending_writes(),
            ops: self.tx.ops_in_flight(),
            packets_in_flight: self.tx.packets_in_flight(),
            timers: self.tx.timer_entries(),
        };
        crate::memory::report(&self.cfg, self.max_packet, self.tx.stride6(), lens)
    }

    /// One round: take the packets received since the last round (placed by the socket's
    /// handler during `Stack::poll` over UDP; read from the socket's queue, up to the
    /// configured batch, over raw Ethernet), hand ACKs and NACKs to the sender, run the
    /// timers, send answers, retransmissions and new packets, and flush the stack.
    /// While packets keep arriving, the retransmission timers wait (up to
    /// [`MAX_TIMER_DEFERRALS`] polls): after this thread was descheduled, the ACKs queued in
    /// the meantime are read first, instead of every packet in flight being resent.
    /// Returns the number of packets received. Only a link failure is an error.
    pub fn poll<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<usize, RdmaError> {
        let sock = self.sock;
        let mut guard = lock_path(&self.path, &self.busy);
        let p = &mut *guard;
        p.now = now;
        if let Sock::Eth(h) = sock {
            // Each frame is parsed, checked and placed where it lies in the socket's queue.
            for _ in 0..self.cfg.rx_batch {
                if stack.raw_recv_with(h, |m, bytes| p.receive(Peer::Eth(m), bytes))?.is_none() {
                    break;
                }
            }
        }
        let got = std::mem::take(&mut p.taken);
        for (peer, r) in p.replies.drain(..) {
            self.tx.on_answer(peer, &r, now, &self.send_q, &mut p.ctr);
        }
        // One ACK for each run of consecutive packets of an op that arrived together.
        let folded = coalesce_acks(&mut p.answers);
        p.ctr.add(Counter::tx_acks_folded, folded as u64);
        p.rx.on_timers(now, &mut p.ctr);
        let mut em = StackEmit { stack, sock, fatal: None, sent: 0 };
        let mut done = 0;
        for (peer, a) in &p.answers {
            match em.emit(*peer, a, &[]) {
                TxOutcome::Busy => {
                    p.ctr.bump(Counter::tx_backpressure);
                    break;
                }
                TxOutcome::Sent => {
                    p.ctr.bump(Counter::tx_packets);
                    if a.ty == PacketType::Ack {
                        p.ctr.bump(Counter::tx_acks);
                    }
                }
                TxOutcome::Failed => p.ctr.bump(Counter::tx_send_errors),
            }
            done += 1;
        }
        p.answers.drain(..done);
        // Packets still arriving may be the ACKs a stall of this thread left queued: read
        // them before declaring anything lost (for at most MAX_TIMER_DEFERRALS polls).
        let timers = got == 0 || self.timer_deferrals >= MAX_TIMER_DEFERRALS;
        self.timer_deferrals = if timers { 0 } else { self.timer_deferrals + 1 };
        if p.answers.is_empty() {
            self.tx.on_tx(now, timers, &mut em, &self.send_q, &mut p.ctr);
        }
        if let Some(e) = em.fatal.take() {
            return Err(e.into());
        }
        if em.sent > 0 {
            em.stack.flush()?;
        }
        Ok(got)
    }
}
