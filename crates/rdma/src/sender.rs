//! The send side (paper Fig. 1 and 3.1): a command queue of posted writes, the DMA op table
//! (one entry per op in flight, counting its acknowledged packets), the transaction table
//! (one entry per packet in flight, with its timer and tries), segmentation of large writes,
//! and the per-destination window.
//!
//! A write above the segment threshold stays at the head of the command queue while it is
//! cut into segment ops one after another (the paper's "Large Transfer" queue); each segment
//! is an op of its own with op id `write id << 20 | segment`. The write's local completion
//! is posted once, when its last op has been acknowledged (or when one failed and the others
//! have ended).

use crate::counters::{Counter, Counters};
use crate::notify::{Completion, CompletionKind, NotifyQueue, Status, SEGMENT_BITS};
use crate::peer::Peer;
use crate::region::RegionKey;
use crate::wire::{PacketType, RdmaRepr, FLAG_LAST_SEGMENT, FLAG_REGISTERED, FLAG_SEGMENT};
use crate::{RdmaConfig, RdmaError};
use link::Instant;
use net::IntMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

const NONE: u32 = u32::MAX;

/// Write ids use the op id's bits above the segment number.
const WRITE_ID_MASK: u64 = (1 << (64 - SEGMENT_BITS)) - 1;

/// A first write id that differs between runs: a receiver remembers completed (source, op)
/// pairs for a while, and a restarted sender counting from the same start would have its
/// new writes taken for duplicates of the old ones. Mixed from the clock, the process id
/// and a per-process counter (splitmix64).
fn incarnation() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut z =
        Instant::now().as_nanos() ^ (u64::from(std::process::id()) << 32) ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// What the transport did with one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxOutcome {
    /// Handed to the stack.
    Sent,
    /// The link queue is full: try again at the next poll.
    Busy,
    /// The stack cannot send it (no route, too large): the op fails.
    Failed,
}

/// Sends one packet: implemented by the node over its stack.
pub trait Emit {
    /// Send `repr` + `payload` to `peer`.
    fn emit(&mut self, peer: Peer, repr: &RdmaRepr, payload: &[u8]) -> TxOutcome;
}

/// How a write is to be carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Force registered (`Some(true)`) or unregistered (`Some(false)`) ops; `None` decides
    /// by the configured size threshold. Ops wider than the receiver's mask cannot be
    /// registered and go unregistered.
    pub registered: Option<bool>,
}

struct Write {
    peer: Peer,
    key: u32,
    offset: u64,
    data: Arc<[u8]>,
    registered: Option<bool>,
    segmented: bool,
    seg_total: u32,
    seg_issued: u32,
    active_ops: u32,
    failed: Option<Status>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Data packets are being sent and acknowledged.
    Data,
    /// Every data packet is acknowledged; the Notify is (to be) sent.
    Notify,
}

struct Op {
    id: u64,
    write: u64,
    peer: Peer,
    key: u32,
    offset: u64,
    data: Arc<[u8]>,
    data_off: usize,
    len: u32,
    count: u32,
    stride: u16,
    flags: u8,
    phase: Phase,
    next: u32,
    notify_sent: bool,
    acked: u32,
    acked_mask: Vec<u64>,
    txn: Vec<u32>,
    notify_txn: u32,
    /// Has waited in its destination's blocked queue (then it is served in that order).
    queued: bool,
}

impl Op {
    fn repr(&self, ty: PacketType, index: u32) -> RdmaRepr {
        RdmaRepr {
            ty,
            flags: self.flags,
            op_id: self.id,
            index,
            count: self.count,
            key: self.key,
            op_len: self.len,
            offset: self.offset,
            stride: self.stride,
            span: 0,
        }
    }

    fn payload(&self, index: u32) -> &[u8] {
        let start = index as usize * usize::from(self.stride);
        let end = (start + usize::from(self.stride)).min(self.len as usize);
        &self.data[self.data_off + start..self.data_off + end]
    }

    fn registered(&self) -> bool {
        self.flags & FLAG_REGISTERED != 0
    }
}

#[derive(Clone, Copy)]
struct Txn {
    live: bool,
    sent_at: Instant,
    last_tx: Instant,
    gen: u32,
    op: u32,
    index: u32,
    tries: u32,
    deadline: Instant,
}

/// The sender's tables.
pub struct Sender {
    stride: usize,
    /// Payload bytes per packet to IPv6 peers (their headers are 20 bytes longer).
    stride6: usize,
    register_threshold: usize,
    mask_width: usize,
    segment_threshold: usize,
    segment_size: usize,
    window: usize,
    rto: Duration,
    max_rto: Duration,
    max_tries: u32,
    cmd_capacity: usize,
    next_write: u64,
    cmdq: VecDeque<u64>,
    writes: IntMap<u64, Write>,
    ops: Vec<Option<Op>>,
    op_free: Vec<u32>,
    op_by_id: IntMap<u64, u32>,
    ready: VecDeque<u32>,
    /// Ops with packets to send whose destination's window is full, in order; one moves
    /// back to `ready` per packet of that destination acknowledged (so a full window costs
    /// nothing per poll, however many ops wait behind it).
    blocked: IntMap<Peer, VecDeque<u32>>,
    txns: Vec<Txn>,
    txn_free: Vec<u32>,
    /// Retransmission timers (deadline, txn, generation). An acknowledged or re-armed
    /// packet's entry stays behind until it is popped or purged (see `purge_timers`).
    timers: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    // Keys below are our own op ids and destinations (an attacker can only look up, not
    // insert), so a one-multiply hasher is safe here.
    inflight: IntMap<Peer, usize>,
    rtt: IntMap<Peer, RttEstimate>,
    /// When each destination with packets in flight last answered anything.
    heard: IntMap<Peer, Instant>,
}

/// Smoothed round-trip time of one destination (RFC 6298's estimator, Karn's rule: only
/// packets sent once are sampled).
#[derive(Debug, Clone, Copy)]
struct RttEstimate {
    srtt: Duration,
    rttvar: Duration,
}

impl RttEstimate {
    fn sample(prev: Option<RttEstimate>, r: Duration) -> RttEstimate {
        match prev {
            None => RttEstimate { srtt: r, rttvar: r / 2 },
            Some(e) => {
                let diff = e.srtt.abs_diff(r);
                RttEstimate { srtt: e.srtt * 7 / 8 + r / 8, rttvar: e.rttvar * 3 / 4 + diff / 4 }
            }
        }
    }
}

impl Sender {
    /// A sender with tables sized by `cfg`, sending `stride` payload bytes per packet.
    pub fn new(cfg: &RdmaConfig, stride: usize) -> Self {
        let stride = stride.clamp(1, usize::from(u16::MAX));
        Sender {
            stride,
            stride6: stride,
            register_threshold: cfg.register_threshold,
            mask_width: cfg.mask_width,
            segment_threshold: cfg.segment_threshold,
            segment_size: cfg.segment_size,
            window: cfg.window,
            rto: cfg.rto,
            max_rto: cfg.max_rto,
            max_tries: cfg.max_tries,
            cmd_capacity: cfg.command_queue,
            next_write: cfg.first_write_id.unwrap_or_else(incarnation) & WRITE_ID_MASK,
            cmdq: VecDeque::with_capacity(cfg.command_queue),
            writes: IntMap::default(),
            ops: (0..cfg.max_ops).map(|_| None).collect(),
            op_free: (0..cfg.max_ops as u32).rev().collect(),
            op_by_id: IntMap::default(),
            ready: VecDeque::new(),
            blocked: IntMap::default(),
            txns: vec![
                Txn {
                    live: false,
                    sent_at: Instant::ZERO,
                    last_tx: Instant::ZERO,
                    gen: 0,
                    op: 0,
                    index: 0,
                    tries: 0,
                    deadline: Instant::ZERO
                };
                cfg.max_in_flight
            ],
            txn_free: (0..cfg.max_in_flight as u32).rev().collect(),
            timers: BinaryHeap::new(),
            inflight: IntMap::default(),
            rtt: IntMap::default(),
            heard: IntMap::default(),
        }
    }

    /// The same sender, sending at most `stride6` payload bytes per packet to IPv6 peers
    /// (so their packets fit the same MTU as IPv4's).
    pub fn with_ipv6_stride(mut self, stride6: usize) -> Self {
        self.stride6 = stride6.clamp(1, self.stride);
        self
    }

    /// Payload bytes per packet (to IPv4 and Ethernet peers).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Payload bytes per packet to IPv6 peers.
    pub fn stride6(&self) -> usize {
        self.stride6
    }

    /// Writes not yet completed (queued or in flight).
    pub fn pending_writes(&self) -> usize {
        self.writes.len()
    }

    /// Ops in the op table.
    pub fn ops_in_flight(&self) -> usize {
        self.ops.len() - self.op_free.len()
    }

    /// Packets in flight (the transaction table's live entries).
    pub fn packets_in_flight(&self) -> usize {
        self.txns.len() - self.txn_free.len()
    }

    /// Entries in the retransmission timer heap (live and stale).
    pub fn timer_entries(&self) -> usize {
        self.timers.len()
    }

    /// Queue a write of `data` to (`peer`, `key`, `offset`); returns its write id.
    pub fn post(
        &mut self,
        peer: Peer,
        key: RegionKey,
        offset: u64,
        data: Arc<[u8]>,
        opts: WriteOptions,
        ctr: &mut Counters,
    ) -> Result<u64, RdmaError> {
        let len = data.len() as u64;
        let segmented = data.len() > self.segment_threshold;
        let seg_total = if segmented { len.div_ceil(self.segment_size as u64) } else { 1 };
        if len == 0 || seg_total > 1 << SEGMENT_BITS || offset.checked_add(len).is_none() {
            return Err(RdmaError::BadLength(len));
        }
        if self.cmdq.len() >= self.cmd_capacity {
            ctr.bump(Counter::tx_refused_queue_full);
            return Err(RdmaError::QueueFull);
        }
        let id = self.next_write;
        self.next_write = (self.next_write + 1) & WRITE_ID_MASK;
        self.writes.insert(
            id,
            Write {
                peer,
                key: key.0,
                offset,
                data,
                registered: opts.registered,
                segmented,
                seg_total: seg_total as u32,
                seg_issued: 0,
                active_ops: 0,
                failed: None,
            },
        );
        self.cmdq.push_back(id);
        ctr.bump(Counter::tx_writes_posted);
        Ok(id)
    }

    /// Move writes from the command queue into the op table while it has room.
    fn admit(&mut self, ctr: &mut Counters) {
        while let Some(&wid) = self.cmdq.front() {
            let Some(w) = self.writes.get_mut(&wid) else {
                self.cmdq.pop_front();
                continue;
            };
            if w.failed.is_some() || w.seg_issued == w.seg_total {
                self.cmdq.pop_front();
                continue;
            }
            let Some(slot) = self.op_free.pop() else { break };
            let seg = w.seg_issued;
            let (data_off, len) = if w.segmented {
                let off = seg as usize * self.segment_size;
                (off, self.segment_size.min(w.data.len() - off))
            } else {
                (0, w.data.len())
            };
            let stride = match w.peer {
                Peer::Udp(std::net::SocketAddr::V6(_)) => self.stride6,
                _ => self.stride,
            };
            let count = len.div_ceil(stride) as u32;
            let registered =
                w.registered.unwrap_or(len <= self.register_threshold) && count as usize <= self.mask_width;
            let last = seg + 1 == w.seg_total;
            let mut flags = if registered { FLAG_REGISTERED } else { 0 };
            if w.segmented {
                flags |= FLAG_SEGMENT | if last { FLAG_LAST_SEGMENT } else { 0 };
            }
            let op_id = wid << SEGMENT_BITS | u64::from(seg);
            let op = Op {
                id: op_id,
                write: wid,
                peer: w.peer,
                key: w.key,
                offset: w.offset + data_off as u64,
                data: w.data.clone(),
                data_off,
                len: len as u32,
                count,
                stride: stride as u16,
                flags,
                phase: Phase::Data,
                next: 0,
                notify_sent: false,
                acked: 0,
                acked_mask: vec![0; (count as usize).div_ceil(64)],
                txn: vec![NONE; count as usize],
                notify_txn: NONE,
                queued: false,
            };
            w.seg_issued += 1;
            w.active_ops += 1;
            if last {
                self.cmdq.pop_front();
            }
            self.ops[slot as usize] = Some(op);
            self.op_by_id.insert(op_id, slot);
            self.ready.push_back(slot);
            ctr.bump(Counter::tx_ops_started);
        }
    }

    /// The retransmission timeout towards `peer`: SRTT + 4 RTTVAR, at least `rto`.
    pub fn rto_for(&self, peer: Peer) -> Duration {
        self.rtt.get(&peer).map_or(self.rto, |e| (e.srtt + 4 * e.rttvar).clamp(self.rto, self.max_rto))
    }

    /// The timeout of a packet's `tries`-th transmission: the RTO doubled per retry, capped.
    fn backoff(&self, peer: Peer, tries: u32) -> Duration {
        let shift = tries.saturating_sub(1).min(20);
        (self.rto_for(peer) * (1u32 << shift)).min(self.max_rto)
    }

    /// Arm packet `t`'s timer for `deadline` (its entry in the heap; an older entry of the
    /// same packet goes stale and is skipped or purged).
    fn arm(&mut self, t: u32, deadline: Instant) {
        let x = &mut self.txns[t as usize];
        x.deadline = deadline;
        self.timers.push(Reverse((deadline, t, x.gen)));
        self.purge_timers();
    }

    fn new_txn(&mut self, op: u32, index: u32, now: Instant, deadline: Instant) -> Option<u32> {
        let t = self.txn_free.pop()?;
        let x = &mut self.txns[t as usize];
        x.live = true;
        x.gen = x.gen.wrapping_add(1);
        x.op = op;
        x.index = index;
        x.tries = 1;
        x.sent_at = now;
        x.last_tx = now;
        self.arm(t, deadline);
        Some(t)
    }

    /// Drop the timer entries that no longer arm anything once they outnumber the live ones
    /// by far: ACKed packets leave their entry behind for a whole RTO, and at high packet
    /// rates the heap would grow to (packet rate x RTO) entries, each push and pop paying
    /// for its depth. Amortised O(1) per packet; keeps what `on_tx` would act on.
    fn purge_timers(&mut self) {
        let live = self.txns.len() - self.txn_free.len();
        if self.timers.len() <= 2 * live + 256 {
            return;
        }
        let txns = &self.txns;
        self.timers.retain(|Reverse((t, id, gen))| {
            let x = &txns[*id as usize];
            x.live && x.gen == *gen && x.deadline == *t
        });
    }

    fn free_txn(&mut self, t: u32, peer: Peer) {
        let x = &mut self.txns[t as usize];
        if x.live {
            x.live = false;
            x.gen = x.gen.wrapping_add(1);
            self.txn_free.push(t);
            if let Some(n) = self.inflight.get_mut(&peer) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.inflight.remove(&peer);
                    self.heard.remove(&peer);
                }
            }
            if let Some(q) = self.blocked.get_mut(&peer) {
                if let Some(slot) = q.pop_front() {
                    self.ready.push_back(slot);
                }
                if q.is_empty() {
                    self.blocked.remove(&peer);
                }
            }
        }
    }

    /// Remove op `slot` from the tables, releasing its packets in flight.
    fn release_op(&mut self, slot: u32) -> Option<Op> {
        let op = self.ops.get_mut(slot as usize)?.take()?;
        for &t in op.txn.iter().chain(std::iter::once(&op.notify_txn)) {
            if t != NONE && self.txns[t as usize].op == slot {
                self.free_txn(t, op.peer);
            }
        }
        self.op_by_id.remove(&op.id);
        self.op_free.push(slot);
        Some(op)
    }

    /// An op's data is all acknowledged (`Ok`) or it failed: account it to its write.
    fn op_done(&mut self, wid: u64, status: Status, local: &NotifyQueue, ctr: &mut Counters) {
        let Some(w) = self.writes.get_mut(&wid) else { return };
        w.active_ops -= 1;
        if status != Status::Ok && w.failed.is_none() {
            w.failed = Some(status);
        }
        if w.active_ops > 0 || (w.failed.is_none() && w.seg_issued < w.seg_total) {
            return;
        }
        let Some(w) = self.writes.remove(&wid) else { return };
        let status = w.failed.unwrap_or(Status::Ok);
        ctr.bump(if status == Status::Ok { Counter::tx_writes_completed } else { Counter::tx_writes_failed });
        local.post(Completion {
            kind: CompletionKind::Send,
            op_id: wid << SEGMENT_BITS,
            peer: w.peer,
            key: RegionKey(w.key),
            offset: w.offset,
            len: w.data.len() as u64,
            status,
            segment: w.segmented,
            last_segment: w.segmented,
        });
    }

    fn fail_op(&mut self, slot: u32, status: Status, local: &NotifyQueue, ctr: &mut Counters) {
        let Some(op) = self.release_op(slot) else { return };
        if op.phase == Phase::Notify {
            // The data was acknowledged and the write already counted; only the Notify failed.
            ctr.bump(Counter::tx_notify_failed);
            return;
        }
        ctr.bump(Counter::tx_ops_failed);
        self.op_done(op.write, status, local, ctr);
    }

    /// Handle an ACK or NACK from `peer`.
    pub fn on_answer(&mut self, peer: Peer, r: &RdmaRepr, now: Instant, local: &NotifyQueue, ctr: &mut Counters) {
        if self.inflight.contains_key(&peer) {
            self.heard.insert(peer, now);
        }
        let verdict = if r.acked_packets() <= 1 {
            self.on_packet_answer(peer, r, now, local, ctr)
        } else {
            // A run of one op's packets acknowledged at once: each as its own ACK, the
            // packet counted once (an ACK if it acknowledged anything new, else stray).
            let end = match self.op_by_id.get(&r.op_id).and_then(|s| self.ops[*s as usize].as_ref()) {
                // Data packets and the Notify (index = count) at most.
                Some(op) => (u64::from(r.index) + u64::from(r.acked_packets())).min(u64::from(op.count) + 1),
                None => 0,
            };
            let mut fresh = false;
            for index in u64::from(r.index)..end {
                let one = RdmaRepr { index: index as u32, span: 1, ..*r };
                fresh |= self.on_packet_answer(peer, &one, now, local, ctr) == Counter::rx_acks;
            }
            if fresh {
                Counter::rx_acks
            } else {
                Counter::drop_ack_stray
            }
        };
        ctr.bump(verdict);
    }

    /// Apply an answer about one packet; returns the verdict counter for it.
    fn on_packet_answer(
        &mut self,
        peer: Peer,
        r: &RdmaRepr,
        now: Instant,
        local: &NotifyQueue,
        ctr: &mut Counters,
    ) -> Counter {
        let Some(&slot) = self.op_by_id.get(&r.op_id) else {
            return Counter::drop_ack_stray;
        };
        let (txn, is_notify, acked_already) = match &self.ops[slot as usize] {
            Some(op) if op.peer == peer && op.count == r.count => {
                if r.index < op.count {
                    let i = r.index as usize;
                    (op.txn[i], false, op.acked_mask[i / 64] >> (i % 64) & 1 == 1)
                } else if r.index == op.count && op.phase == Phase::Notify && op.notify_txn != NONE {
                    (op.notify_txn, true, false)
                } else {
                    (NONE, false, true)
                }
            }
            _ => (NONE, false, true),
        };
        if acked_already || txn == NONE {
            return Counter::drop_ack_stray;
        }
        match r.ty {
            PacketType::Ack => {
                let x = self.txns[txn as usize];
                if x.tries == 1 {
                    let prev = self.rtt.get(&peer).copied();
                    self.rtt.insert(peer, RttEstimate::sample(prev, now.saturating_since(x.sent_at)));
                }
                self.free_txn(txn, peer);
                if is_notify {
                    self.release_op(slot);
                    return Counter::rx_acks;
                }
                let Some(op) = self.ops[slot as usize].as_mut() else { return Counter::rx_acks };
                let i = r.index as usize;
                op.acked_mask[i / 64] |= 1 << (i % 64);
                op.txn[i] = NONE;
                op.acked += 1;
                if op.acked < op.count {
                    return Counter::rx_acks;
                }
                ctr.bump(Counter::tx_ops_acked);
                let wid = op.write;
                if op.registered() {
                    self.release_op(slot);
                } else {
                    // Paper 3.4: the sender completes after the last ACK, then notifies.
                    op.phase = Phase::Notify;
                    self.ready.push_back(slot);
                }
                self.op_done(wid, Status::Ok, local, ctr);
                Counter::rx_acks
            }
            PacketType::Nack(why) => {
                if why.is_transient() {
                    // Retry after a backoff; the tries are counted by the timer path.
                    let tries = self.txns[txn as usize].tries;
                    let deadline = now + self.backoff(peer, tries);
                    self.arm(txn, deadline);
                } else {
                    self.fail_op(slot, Status::Nacked(why), local, ctr);
                }
                Counter::rx_nacks
            }
            _ => Counter::drop_unexpected_type,
        }
    }

    /// Send what is due: retransmissions whose timer fired (and NACKed packets whose backoff
    /// passed), then new ops and packets within the window; stops at the first busy send.
    ///
    /// `timers: false` skips the retransmission timers for this round: the node passes it
    /// while answers are still arriving, so that ACKs queued behind a stall of this thread
    /// are read before their packets are declared lost.
    pub fn on_tx(&mut self, now: Instant, timers: bool, tx: &mut dyn Emit, local: &NotifyQueue, ctr: &mut Counters) {
        // Retransmissions.
        let mut due = Vec::new();
        while let Some(&Reverse((t, id, gen))) = self.timers.peek().filter(|_| timers) {
            if t > now {
                break;
            }
            self.timers.pop();
            let x = self.txns[id as usize];
            if x.live && x.gen == gen && x.deadline == t {
                due.push(id);
            }
        }
        let mut busy = false;
        // Destinations silent since their packets went out get one probe per round; the
        // rest of their due packets wait (a stalled receiver is not a lossy path).
        let mut probed: Vec<(Peer, Instant)> = Vec::new();
        for id in due {
            let x = self.txns[id as usize];
            // Two timer entries may name the same deadline (a NACK re-armed it): act once.
            if !x.live || x.deadline > now {
                continue;
            }
            if busy {
                self.arm(id, x.deadline);
                continue;
            }
            let Some(op_peer) = self.ops[x.op as usize].as_ref().map(|o| o.peer) else { continue };
            let silent = self.heard.get(&op_peer).is_none_or(|h| *h < x.last_tx);
            if x.tries >= self.max_tries {
                ctr.bump(Counter::tx_timeouts);
                if silent {
                    // Nothing from this destination through every try: it is gone; end
                    // every op to it now rather than one full retry span after another.
                    let slots: Vec<u32> = (0..self.ops.len() as u32)
                        .filter(|s| self.ops[*s as usize].as_ref().is_some_and(|o| o.peer == op_peer))
                        .collect();
                    ctr.add(Counter::tx_ops_failed_silent, slots.len() as u64);
                    for s in slots {
                        self.fail_op(s, Status::TimedOut, local, ctr);
                    }
                } else {
                    self.fail_op(x.op, Status::TimedOut, local, ctr);
                }
                continue;
            }
            if let Some(&(_, probe_due)) = probed.iter().find(|p| silent && p.0 == op_peer) {
                // Just after the probe's next timer, so the same packet stays the probe.
                ctr.bump(Counter::tx_postponed);
                self.arm(id, probe_due + Duration::from_nanos(1));
                continue;
            }
            let Some(op) = self.ops[x.op as usize].as_ref() else { continue };
            let outcome = if x.index < op.count {
                let ty = if op.registered() && x.index == 0 { PacketType::RegisterFirst } else { PacketType::Data };
                tx.emit(op.peer, &op.repr(ty, x.index), op.payload(x.index))
            } else {
                tx.emit(op.peer, &op.repr(PacketType::Notify, op.count), &[])
            };
            match outcome {
                TxOutcome::Sent => {
                    ctr.bump(Counter::tx_timeouts);
                    ctr.bump(Counter::tx_packets);
                    ctr.bump(Counter::tx_retransmits);
                    let tries = x.tries + 1;
                    let deadline = now + self.backoff(op_peer, tries);
                    if silent {
                        probed.push((op_peer, deadline));
                    }
                    let t = &mut self.txns[id as usize];
                    t.tries = tries;
                    t.last_tx = now;
                    self.arm(id, deadline);
                }
                TxOutcome::Busy => {
                    ctr.bump(Counter::tx_backpressure);
                    busy = true;
                    self.arm(id, x.deadline);
                }
                TxOutcome::Failed => {
                    ctr.bump(Counter::tx_send_errors);
                    self.fail_op(x.op, Status::SendFailed, local, ctr);
                }
            }
        }
        if busy {
            return;
        }
        self.admit(ctr);
        // New packets, op by op, within each destination's window.
        let rounds = self.ready.len();
        for _ in 0..rounds {
            let Some(slot) = self.ready.pop_front() else { break };
            let Some(op) = self.ops[slot as usize].as_ref() else { continue };
            let peer = op.peer;
            while let Some(op) = self.ops[slot as usize].as_ref() {
                let (index, ty) = match op.phase {
                    Phase::Data if op.next < op.count => {
                        let ty =
                            if op.registered() && op.next == 0 { PacketType::RegisterFirst } else { PacketType::Data };
                        (op.next, ty)
                    }
                    Phase::Notify if !op.notify_sent => (op.count, PacketType::Notify),
                    _ => break,
                };
                if self.txn_free.is_empty() {
                    // The transaction table is full: try again at the next poll.
                    self.ready.push_front(slot);
                    return;
                }
                // Per destination, ops go out in order: one that has started keeps its place
                // at the head of the queue, and a new op waits behind queued ones (unless
                // nothing is in flight, so no acknowledgement would ever release it).
                let started = op.next > 0 || op.phase == Phase::Notify;
                let inflight = self.inflight.get(&peer).copied().unwrap_or(0);
                let wait_turn =
                    !started && !op.queued && inflight > 0 && self.blocked.get(&peer).is_some_and(|q| !q.is_empty());
                if inflight >= self.window || wait_turn {
                    let q = self.blocked.entry(peer).or_default();
                    if started {
                        q.push_front(slot);
                    } else {
                        q.push_back(slot);
                    }
                    if let Some(op) = self.ops[slot as usize].as_mut() {
                        op.queued = true;
                    }
                    break;
                }
                let payload = if ty == PacketType::Notify { &[][..] } else { op.payload(index) };
                match tx.emit(peer, &op.repr(ty, index), payload) {
                    TxOutcome::Sent => {
                        ctr.bump(Counter::tx_packets);
                        ctr.bump(if ty == PacketType::Notify {
                            Counter::tx_notifies
                        } else {
                            Counter::tx_data_packets
                        });
                        let deadline = now + self.backoff(peer, 1);
                        let Some(t) = self.new_txn(slot, index, now, deadline) else { break };
                        *self.inflight.entry(peer).or_insert(0) += 1;
                        if let Some(op) = self.ops[slot as usize].as_mut() {
                            if ty == PacketType::Notify {
                                op.notify_sent = true;
                                op.notify_txn = t;
                            } else {
                                op.txn[index as usize] = t;
                                op.next += 1;
                            }
                        }
                    }
                    TxOutcome::Busy => {
                        ctr.bump(Counter::tx_backpressure);
                        self.ready.push_front(slot);
                        return;
                    }
                    TxOutcome::Failed => {
                        ctr.bump(Counter::tx_send_errors);
                        self.fail_op(slot, Status::SendFailed, local, ctr);
                        break;
                    }
                }
            }
        }
    }

    /// Earliest retransmission timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((t, _, _))| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::NackReason;
    use std::net::SocketAddrV4;

    /// Records what the sender emits; can refuse (busy) or fail.
    #[derive(Default)]
    struct Recorder {
        sent: Vec<(Peer, RdmaRepr, usize)>,
        busy: bool,
    }

    impl Emit for Recorder {
        fn emit(&mut self, peer: Peer, repr: &RdmaRepr, payload: &[u8]) -> TxOutcome {
            if self.busy {
                return TxOutcome::Busy;
            }
            self.sent.push((peer, *repr, payload.len()));
            TxOutcome::Sent
        }
    }

    fn peer(n: u8) -> Peer {
        Peer::Udp(SocketAddrV4::new([10, 0, 0, n].into(), 4791).into())
    }

    fn setup(window: usize) -> (Sender, Recorder, NotifyQueue, Counters) {
        let cfg = RdmaConfig { window, max_tries: 3, ..RdmaConfig::default() };
        (Sender::new(&cfg, 100), Recorder::default(), NotifyQueue::new(), Counters::new())
    }

    impl Sender {
        fn on_tx_t(&mut self, now: Instant, tx: &mut dyn Emit, local: &NotifyQueue, ctr: &mut Counters) {
            self.on_tx(now, true, tx, local, ctr)
        }
    }

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn timers_of_acknowledged_packets_are_purged_and_the_rest_still_fire() {
        let (mut s, mut rec, q, mut c) = setup(8);
        // 2000 packets, each ACKed at once (their timer entries go stale), 8 in flight.
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 200_000].into(), WriteOptions::default(), &mut c).unwrap();
        let mut acked = 0;
        for step in 0..10_000u64 {
            s.on_tx_t(Instant::from_micros(step), &mut rec, &q, &mut c);
            for (p, r, _) in rec.sent.drain(..) {
                s.on_answer(p, &r.answer(None), Instant::from_micros(step), &q, &mut c);
                acked += 1;
            }
            assert!(s.timers.len() <= 2 * 8 + 256 + 1, "the heap holds {} entries", s.timers.len());
            if s.pending_writes() == 0 {
                break;
            }
        }
        assert_eq!(acked, 2000);
        assert_eq!(q.poll().map(|x| x.status), Some(Status::Ok));
        // A packet left unanswered still times out after a purge.
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 1000].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx_t(ms(100), &mut rec, &q, &mut c);
        let first: Vec<_> = rec.sent.drain(..).collect();
        assert_eq!(first.len(), 8);
        for (p, r, _) in &first[1..] {
            s.on_answer(*p, &r.answer(None), ms(100), &q, &mut c);
        }
        s.purge_timers();
        let before = c.get(Counter::tx_retransmits);
        s.on_tx_t(ms(200), &mut rec, &q, &mut c);
        assert_eq!(c.get(Counter::tx_retransmits), before + 1, "the unanswered packet was resent");
        assert_eq!(rec.sent.iter().filter(|x| x.1.index == first[0].1.index).count(), 1);
    }

    #[test]
    fn window_limits_packets_in_flight_per_destination() {
        let (mut s, mut rec, q, mut c) = setup(4);
        s.post(peer(1), RegionKey(1), 0, vec![7u8; 1000].into(), WriteOptions::default(), &mut c).unwrap();
        s.post(peer(2), RegionKey(1), 0, vec![7u8; 250].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        let to = |p| rec.sent.iter().filter(|x| x.0 == p).count();
        assert_eq!((to(peer(1)), to(peer(2))), (4, 3), "window of 4 to peer 1, all 3 packets to peer 2");
        assert_eq!(rec.sent[0].1.ty, PacketType::RegisterFirst);
        assert_eq!(rec.sent[1].1.ty, PacketType::Data);
        assert_eq!(rec.sent[2].2, 100);
        // ACKing two packets of peer 1 opens two places.
        let t = Instant::from_micros(500);
        for i in 0..2 {
            let r = rec.sent[i].1.answer(None);
            s.on_answer(peer(1), &r, t, &q, &mut c);
        }
        // A duplicate ACK is stray.
        let dup = rec.sent[0].1.answer(None);
        s.on_answer(peer(1), &dup, t, &q, &mut c);
        assert_eq!(c.get(Counter::drop_ack_stray), 1);
        // An ACK from the wrong peer is stray too.
        s.on_answer(peer(3), &rec.sent[2].1.answer(None), t, &q, &mut c);
        assert_eq!(c.get(Counter::drop_ack_stray), 2);
        rec.sent.clear();
        s.on_tx_t(t, &mut rec, &q, &mut c);
        assert_eq!(rec.sent.iter().map(|x| x.1.index).collect::<Vec<_>>(), vec![4, 5]);
        assert_eq!(s.packets_in_flight(), 4 + 3);
    }

    #[test]
    fn ops_to_one_destination_go_out_in_order_behind_a_full_window() {
        let (mut s, mut rec, q, mut c) = setup(4);
        let a = s.post(peer(1), RegionKey(1), 0, vec![1u8; 1000].into(), WriteOptions::default(), &mut c).unwrap();
        let b = s.post(peer(1), RegionKey(1), 0, vec![2u8; 300].into(), WriteOptions::default(), &mut c).unwrap();
        let t = Instant::from_micros(100);
        s.on_tx(t, true, &mut rec, &q, &mut c);
        // ACK one packet at a time: each opening goes to the started op until it is done.
        let mut order = Vec::new();
        for _ in 0..40 {
            let Some(&(_, r, _)) = rec.sent.iter().find(|x| !order.contains(&(x.1.op_id, x.1.index))) else { break };
            order.push((r.op_id, r.index));
            s.on_answer(peer(1), &r.answer(None), t, &q, &mut c);
            s.on_tx(t, true, &mut rec, &q, &mut c);
        }
        let ops: Vec<u64> = rec.sent.iter().map(|x| x.1.op_id >> 20).collect();
        let first_b = ops.iter().position(|o| *o == b).unwrap();
        assert!(ops[..first_b].iter().all(|o| *o == a) && ops[first_b..].iter().all(|o| *o == b), "{ops:?}");
        assert_eq!(ops.len(), 13);
        assert_eq!(s.pending_writes(), 0);
    }

    #[test]
    fn timeouts_retransmit_with_backoff_then_fail_once() {
        let (mut s, mut rec, q, mut c) = setup(8);
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 50].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 1);
        // rto 1 ms: retransmit at 1 ms, then 2 ms later, then give up (max_tries 3).
        s.on_tx_t(Instant::from_micros(999), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 1);
        s.on_tx_t(ms(1), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 2);
        s.on_tx_t(Instant::from_micros(2_999), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 2, "second timeout is doubled");
        s.on_tx_t(ms(3), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 3);
        assert!(q.poll().is_none());
        s.on_tx_t(ms(100), &mut rec, &q, &mut c);
        let done = q.poll().unwrap();
        assert_eq!(done.status, Status::TimedOut);
        assert!(q.poll().is_none(), "one completion");
        assert_eq!((s.packets_in_flight(), s.ops_in_flight(), s.pending_writes()), (0, 0, 0));
        assert_eq!(c.get(Counter::tx_retransmits), 2);
    }

    #[test]
    fn a_silent_destination_gets_one_probe_per_round_then_every_op_to_it_fails_at_once() {
        let (mut s, mut rec, q, mut c) = setup(8);
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 300].into(), WriteOptions::default(), &mut c).unwrap();
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 100].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx(ms(0), true, &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 4);
        // Nothing heard: at the timeout one packet is resent, three wait.
        s.on_tx(ms(1), true, &mut rec, &q, &mut c);
        assert_eq!((rec.sent.len(), c.get(Counter::tx_postponed)), (5, 3));
        // The probe keeps trying (max_tries 3); then both ops fail together.
        s.on_tx(ms(100), true, &mut rec, &q, &mut c);
        s.on_tx(ms(200), true, &mut rec, &q, &mut c);
        s.on_tx(ms(300), true, &mut rec, &q, &mut c);
        let failed: Vec<Status> = std::iter::from_fn(|| q.poll()).map(|c| c.status).collect();
        assert_eq!(failed, vec![Status::TimedOut, Status::TimedOut]);
        assert_eq!(c.get(Counter::tx_ops_failed_silent), 2);
        assert_eq!((s.packets_in_flight(), s.ops_in_flight()), (0, 0));
    }

    #[test]
    fn a_destination_that_answers_gets_every_lost_packet_resent() {
        let (mut s, mut rec, q, mut c) = setup(8);
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 300].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx(ms(0), true, &mut rec, &q, &mut c);
        // Packet 0 is answered late (the peer is alive); 1 and 2 were lost.
        let first = rec.sent[0].1;
        s.on_answer(peer(1), &first.answer(None), Instant::from_micros(900), &q, &mut c);
        s.on_tx(ms(2), true, &mut rec, &q, &mut c);
        // Heard from after 1 and 2 went out? No: they went out at 0 and the ACK came at
        // 0.9 ms, so the destination is not silent and both are resent.
        assert_eq!(rec.sent.len(), 5);
        assert_eq!(c.get(Counter::tx_postponed), 0);
    }

    #[test]
    fn transient_nack_retries_and_permanent_nack_fails() {
        let (mut s, mut rec, q, mut c) = setup(8);
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 50].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        let first = rec.sent[0].1;
        s.on_answer(peer(1), &first.answer(Some(NackReason::TableFull)), ms(0), &q, &mut c);
        s.on_tx_t(ms(1), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 2, "retried after the backoff");
        s.on_answer(peer(1), &first.answer(Some(NackReason::OutOfBounds)), ms(1), &q, &mut c);
        assert_eq!(q.poll().unwrap().status, Status::Nacked(NackReason::OutOfBounds));
        // A late ACK for the failed op is stray.
        s.on_answer(peer(1), &first.answer(None), ms(2), &q, &mut c);
        assert_eq!(c.get(Counter::drop_ack_stray), 1);
        assert_eq!(s.pending_writes(), 0);
    }

    #[test]
    fn unregistered_op_completes_then_notifies_until_acked() {
        let (mut s, mut rec, q, mut c) = setup(8);
        let id = s
            .post(peer(1), RegionKey(1), 5, vec![1u8; 150].into(), WriteOptions { registered: Some(false) }, &mut c)
            .unwrap();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        assert!(rec.sent.iter().all(|x| x.1.ty == PacketType::Data && x.1.flags & FLAG_REGISTERED == 0));
        for x in rec.sent.clone() {
            s.on_answer(peer(1), &x.1.answer(None), ms(0), &q, &mut c);
        }
        let done = q.poll().unwrap();
        assert_eq!((done.write_id(), done.status, done.offset, done.len), (id, Status::Ok, 5, 150));
        rec.sent.clear();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 1);
        let notify = rec.sent[0].1;
        assert_eq!((notify.ty, notify.index, notify.count), (PacketType::Notify, 2, 2));
        s.on_tx_t(ms(5), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.len(), 2, "Notify retransmitted until acknowledged");
        s.on_answer(peer(1), &notify.answer(None), ms(5), &q, &mut c);
        assert_eq!((s.ops_in_flight(), s.packets_in_flight()), (0, 0));
        assert!(q.poll().is_none(), "the Notify's ACK posts nothing more");
    }

    #[test]
    fn large_writes_are_segmented_and_complete_once() {
        let cfg = RdmaConfig { window: 1000, ..RdmaConfig::default().segmentation(1000, 400) };
        let (mut s, mut rec, q, mut c) =
            (Sender::new(&cfg, 100), Recorder::default(), NotifyQueue::new(), Counters::new());
        let id = s.post(peer(1), RegionKey(1), 0, vec![1u8; 1001].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        let ops: std::collections::BTreeSet<u64> = rec.sent.iter().map(|x| x.1.op_id).collect();
        assert_eq!(ops.into_iter().collect::<Vec<_>>(), vec![id << 20, id << 20 | 1, id << 20 | 2]);
        let last =
            rec.sent.iter().filter(|x| x.1.flags & FLAG_LAST_SEGMENT != 0).map(|x| x.1.op_id).collect::<Vec<_>>();
        assert!(last.iter().all(|o| *o == id << 20 | 2) && !last.is_empty());
        assert!(rec.sent.iter().all(|x| x.1.flags & FLAG_SEGMENT != 0));
        assert_eq!(rec.sent.iter().map(|x| x.2).sum::<usize>(), 1001);
        let offsets: Vec<u64> = rec.sent.iter().filter(|x| x.1.index == 0).map(|x| x.1.offset).collect();
        assert_eq!(offsets, vec![0, 400, 800]);
        for x in rec.sent.clone() {
            s.on_answer(peer(1), &x.1.answer(None), ms(0), &q, &mut c);
        }
        // The unregistered segments still owe their Notify, but the write is complete.
        let done = q.poll().unwrap();
        assert_eq!((done.write_id(), done.len, done.segment), (id, 1001, true));
        assert!(q.poll().is_none());
    }

    #[test]
    fn busy_transport_defers_without_losing_packets() {
        let (mut s, mut rec, q, mut c) = setup(8);
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 300].into(), WriteOptions::default(), &mut c).unwrap();
        rec.busy = true;
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        assert_eq!((rec.sent.len(), s.packets_in_flight()), (0, 0));
        assert!(c.get(Counter::tx_backpressure) > 0);
        rec.busy = false;
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        assert_eq!(rec.sent.iter().map(|x| x.1.index).collect::<Vec<_>>(), vec![0, 1, 2]);
    }

    #[test]
    fn rto_follows_the_measured_round_trip() {
        let (mut s, mut rec, q, mut c) = setup(64);
        assert_eq!(s.rto_for(peer(1)), Duration::from_millis(1));
        s.post(peer(1), RegionKey(1), 0, vec![1u8; 2000].into(), WriteOptions::default(), &mut c).unwrap();
        s.on_tx_t(ms(0), &mut rec, &q, &mut c);
        // Every ACK comes 900 µs after the send, before the first timer fires: the RTO
        // follows SRTT + 4 RTTVAR (within [rto, 3 x 900 µs]).
        for x in rec.sent.clone() {
            s.on_answer(peer(1), &x.1.answer(None), Instant::from_micros(900), &q, &mut c);
        }
        let rto = s.rto_for(peer(1));
        assert!(rto >= Duration::from_millis(1) && rto <= Duration::from_micros(900 * 3), "{rto:?}");
        assert_eq!(s.rto_for(peer(2)), Duration::from_millis(1), "per destination");
        let e = RttEstimate::sample(None, Duration::from_millis(8));
        assert_eq!((e.srtt, e.rttvar), (Duration::from_millis(8), Duration::from_millis(4)));
        let e = RttEstimate::sample(Some(e), Duration::from_millis(16));
        assert_eq!((e.srtt, e.rttvar), (Duration::from_millis(9), Duration::from_millis(5)));
        let cfg = RdmaConfig { max_rto: Duration::from_millis(50), ..RdmaConfig::default() };
        let mut s2 = Sender::new(&cfg, 100);
        s2.rtt.insert(peer(1), e);
        assert_eq!(s2.rto_for(peer(1)), Duration::from_millis(29));
        assert_eq!(s2.backoff(peer(1), 2), Duration::from_millis(50), "doubled, capped");
    }
}
