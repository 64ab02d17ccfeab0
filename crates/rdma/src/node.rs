//! `RdmaNode`: the sender and receiver of one node, driven over a `net::Stack` it does not
//! own, by `poll(stack, now)`.

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
use net::{NetError, RawHandle, Stack, UdpHandle};
use std::net::SocketAddrV4;
use std::sync::Arc;

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
    rx: Receiver,
    tx: Sender,
    ctr: Counters,
    recv_q: NotifyQueue,
    send_q: NotifyQueue,
    answers: Vec<Answer>,
    max_packet: usize,
    timer_deferrals: u32,
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
        let (sock, port_or_type) = match cfg.transport {
            Transport::Udp { port } => {
                let h = stack.udp_bind(port)?;
                // The packet's CRC32C covers header and payload: no UDP checksum on top.
                stack.udp_set_checksum(h, false)?;
                (Sock::Udp(h), stack.udp_port(h)?)
            }
            Transport::Eth { ethertype } => (Sock::Eth(stack.raw_bind(ethertype)?), ethertype),
        };
        Ok(RdmaNode {
            rx: Receiver::new(&cfg, max_packet),
            tx: Sender::new(&cfg, stride),
            ctr: Counters::new(),
            recv_q: NotifyQueue::new(),
            send_q: NotifyQueue::new(),
            answers: Vec::new(),
            max_packet,
            timer_deferrals: 0,
            sock,
            port_or_type,
            cfg,
        })
    }

    /// This node's address as peers name it.
    pub fn address<L: Link>(&self, stack: &Stack<L>) -> Peer {
        match self.sock {
            Sock::Udp(_) => Peer::Udp(SocketAddrV4::new(stack.ip(), self.port_or_type)),
            Sock::Eth(_) => Peer::Eth(stack.mac()),
        }
    }

    /// Close the node's socket on `stack`.
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

    /// Payload bytes per data packet.
    pub fn packet_payload(&self) -> usize {
        self.tx.stride()
    }

    /// Largest packet (header + payload) this node sends or accepts.
    pub fn max_packet(&self) -> usize {
        self.max_packet
    }

    /// Register `buf` as a region peers may write into; returns its key.
    pub fn register(&mut self, buf: impl Into<Box<[u8]>>) -> Result<RegionKey, RdmaError> {
        self.rx.regions.register(RegionMem::Owned(buf.into())).ok_or(RdmaError::TooManyRegions)
    }

    /// Register the caller's memory in place as a region: remote writes land in it directly
    /// (no copy in or out). The memory stays registered until [`RdmaNode::deregister_mem`]
    /// (or [`RdmaNode::deregister`]) or the node is dropped; then `mem`'s owner is dropped.
    pub fn register_mem(&mut self, mem: ExternalMem) -> Result<RegionKey, RdmaError> {
        self.rx.regions.register(RegionMem::External(mem)).ok_or(RdmaError::TooManyRegions)
    }

    /// Deregister a region and take its memory back as it is (an owned buffer, or the
    /// caller's memory with its owner). Writes still in flight are refused from now on.
    pub fn deregister_mem(&mut self, key: RegionKey) -> Result<RegionMem, RdmaError> {
        self.rx.deregister(key, &mut self.ctr).ok_or(RdmaError::NoSuchRegion(key.0))
    }

    /// Deregister a region and take its buffer back. Writes into it that are still in
    /// flight are refused from now on (NACK `deregistered`); pending registered ops into it
    /// are dropped and counted.
    /// (Memory registered in place comes back as a copy; see [`RdmaNode::deregister_mem`].)
    pub fn deregister(&mut self, key: RegionKey) -> Result<Box<[u8]>, RdmaError> {
        self.deregister_mem(key).map(RegionMem::into_boxed)
    }

    /// The bytes of a registered region.
    pub fn region(&self, key: RegionKey) -> Option<&[u8]> {
        self.rx.regions.get(key)
    }

    /// The bytes of a registered region, mutable.
    pub fn region_mut(&mut self, key: RegionKey) -> Option<&mut [u8]> {
        self.rx.regions.get_mut(key)
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
        if self.send_q.len() + self.tx.pending_writes() >= self.cfg.notify_capacity {
            self.ctr.bump(Counter::tx_refused_completions_full);
            return Err(RdmaError::CompletionsFull);
        }
        self.tx.post(dst, key, offset, data.into(), opts, &mut self.ctr)
    }

    /// Completions of remote writes into this node's regions (receive side).
    pub fn notifications(&self) -> &NotifyQueue {
        &self.recv_q
    }

    /// Completions of this node's writes (send side).
    pub fn completions(&self) -> &NotifyQueue {
        &self.send_q
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.ctr
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
        self.rx.registered_in_flight()
    }

    /// Packets parked in the escape channel.
    pub fn escape_len(&self) -> usize {
        self.rx.escape_len()
    }

    /// Bytes of the registration table of this configuration.
    pub fn registration_memory(&self) -> usize {
        RegTable::memory_bytes(self.cfg.reg_entries, self.cfg.mask_width)
    }

    /// Earliest instant a timer needs a poll (`None`: nothing armed). A node with packets
    /// waiting for the window needs polls whenever answers may arrive.
    pub fn next_deadline(&self) -> Option<Instant> {
        match (self.tx.next_deadline(), self.rx.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// One datagram or frame payload from the socket: too long ones are dropped and counted.
    fn receive(&mut self, peer: Peer, bytes: &[u8], now: Instant) {
        if bytes.len() > self.max_packet {
            self.ctr.bump(Counter::rx_datagrams);
            self.ctr.bump(Counter::drop_oversize);
        } else {
            self.handle_packet(peer, bytes, now);
        }
    }

    /// Handle one received packet from `peer` (also usable by test benches and fuzzers).
    pub fn handle_packet(&mut self, peer: Peer, bytes: &[u8], now: Instant) {
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
                self.tx.on_answer(peer, &pkt.repr(), now, &self.send_q, &mut self.ctr);
            }
            _ => self.rx.handle(peer, &pkt, now, &mut self.answers, &self.recv_q, &mut self.ctr),
        }
        // Answers wait while the link is full, but not without bound (also when packets are
        // handed in here faster than the node is polled): the newest beyond it are dropped.
        let max_answers = crate::memory::answer_backlog(&self.cfg);
        if self.answers.len() > max_answers {
            let excess = self.answers.len() - max_answers;
            self.answers.truncate(max_answers);
            self.ctr.add(Counter::drop_answer_backlog, excess as u64);
        }
    }

    /// What every queue of the node holds now and the bound its configuration sets (see
    /// [`crate::memory`]).
    pub fn memory(&self) -> MemoryUse {
        let lens = Lens {
            escape: self.rx.escape_len(),
            registered_ops: self.rx.registered_in_flight(),
            notifications: self.recv_q.len(),
            recent_ops: self.rx.recent_len(),
            answers: self.answers.len(),
            completions: self.send_q.len(),
            pending_writes: self.tx.pending_writes(),
            ops: self.tx.ops_in_flight(),
            packets_in_flight: self.tx.packets_in_flight(),
            timers: self.tx.timer_entries(),
        };
        crate::memory::report(&self.cfg, self.max_packet, self.tx.stride(), lens)
    }

    /// One round: take received packets from the socket (up to the configured batch), run
    /// the timers, send answers, retransmissions and new packets, and flush the stack.
    /// While packets keep arriving, the retransmission timers wait (up to
    /// [`MAX_TIMER_DEFERRALS`] polls): after this thread was descheduled, the ACKs queued in
    /// the meantime are read first, instead of every packet in flight being resent.
    /// Returns the number of packets received. Only a link failure is an error.
    pub fn poll<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<usize, RdmaError> {
        let mut got = 0;
        let sock = self.sock;
        // Each packet is parsed, checked and placed where it lies in the socket's queue.
        for _ in 0..self.cfg.rx_batch {
            let r = match sock {
                Sock::Udp(h) => stack.udp_recv_with(h, |a, bytes| self.receive(Peer::Udp(a), bytes, now))?,
                Sock::Eth(h) => stack.raw_recv_with(h, |m, bytes| self.receive(Peer::Eth(m), bytes, now))?,
            };
            if r.is_none() {
                break;
            }
            got += 1;
        }
        // One ACK for each run of consecutive packets of an op that arrived together.
        let folded = coalesce_acks(&mut self.answers);
        self.ctr.add(Counter::tx_acks_folded, folded as u64);
        self.rx.on_timers(now, &mut self.ctr);
        let mut em = StackEmit { stack, sock: self.sock, fatal: None, sent: 0 };
        let mut done = 0;
        for (peer, a) in &self.answers {
            match em.emit(*peer, a, &[]) {
                TxOutcome::Busy => {
                    self.ctr.bump(Counter::tx_backpressure);
                    break;
                }
                TxOutcome::Sent => {
                    self.ctr.bump(Counter::tx_packets);
                    if a.ty == PacketType::Ack {
                        self.ctr.bump(Counter::tx_acks);
                    }
                }
                TxOutcome::Failed => self.ctr.bump(Counter::tx_send_errors),
            }
            done += 1;
        }
        self.answers.drain(..done);
        // Packets still arriving may be the ACKs a stall of this thread left queued: read
        // them before declaring anything lost (for at most MAX_TIMER_DEFERRALS polls).
        let timers = got == 0 || self.timer_deferrals >= MAX_TIMER_DEFERRALS;
        self.timer_deferrals = if timers { 0 } else { self.timer_deferrals + 1 };
        if self.answers.is_empty() {
            self.tx.on_tx(now, timers, &mut em, &self.send_q, &mut self.ctr);
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
