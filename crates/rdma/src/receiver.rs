//! The receive side (paper 3.2-3.4): checks every data packet against the regions, tracks
//! registered ops in the registration table, parks early packets in the escape channel,
//! drops and re-ACKs duplicates, and posts completions.
//!
//! Every verified data or Notify packet ends in exactly one of: placed (ACK), duplicate
//! (re-ACK, counted), parked (no answer yet), or refused (NACK with a counted reason).

use crate::counters::{Counter, Counters};
use crate::escape::Escape;
use crate::notify::{Completion, CompletionKind, NotifyQueue, Status};
use crate::peer::Peer;
use crate::recent::Recent;
use crate::region::{RegionKey, Regions};
use crate::regtable::{Entry, Mark, RegTable, RegisterError};
use crate::wire::{NackReason, PacketType, RdmaPacket, RdmaRepr, FLAG_LAST_SEGMENT, FLAG_REGISTERED, FLAG_SEGMENT};
use crate::RdmaConfig;
use link::Instant;
use std::time::Duration;

/// An answer to send: (destination, header), always without payload.
pub type Answer = (Peer, RdmaRepr);

/// The receiver's tables.
pub struct Receiver {
    /// The node's memory regions.
    pub regions: Regions,
    table: RegTable,
    escape: Escape,
    recent: Recent,
    escape_timeout: Duration,
    entry_timeout: Duration,
    notify_capacity: usize,
    next_sweep: Instant,
    scratch: Vec<u8>,
}

/// Where packet `index` of an op starts relative to the op, and its payload length, if the
/// header fields are consistent.
pub fn packet_span(r: &RdmaRepr) -> Option<(u64, u64)> {
    let (count, stride, len) = (u64::from(r.count), u64::from(r.stride), u64::from(r.op_len));
    if count == 0 || stride == 0 || len == 0 || u64::from(r.index) >= count {
        return None;
    }
    let before_last = (count - 1) * stride;
    if before_last >= len || len > count * stride {
        return None;
    }
    let at = u64::from(r.index) * stride;
    let plen = if r.index as u64 == count - 1 { len - before_last } else { stride };
    Some((at, plen))
}

impl Receiver {
    /// A receiver with tables sized by `cfg`, for packets of up to `max_packet` bytes.
    pub fn new(cfg: &RdmaConfig, max_packet: usize) -> Self {
        Receiver {
            regions: Regions::new(cfg.max_regions),
            table: RegTable::new(cfg.reg_entries, cfg.mask_width),
            escape: Escape::new(cfg.escape_capacity, max_packet),
            recent: Recent::new(cfg.recent_capacity, cfg.recent_linger),
            escape_timeout: cfg.escape_timeout,
            entry_timeout: cfg.entry_timeout,
            notify_capacity: cfg.notify_capacity,
            next_sweep: Instant::ZERO,
            scratch: Vec::with_capacity(max_packet),
        }
    }

    /// Registered ops in flight.
    pub fn registered_in_flight(&self) -> usize {
        self.table.len()
    }

    /// Packets waiting in the escape channel.
    pub fn escape_len(&self) -> usize {
        self.escape.len()
    }

    /// Completed ops remembered for duplicate detection.
    pub fn recent_len(&self) -> usize {
        self.recent.len()
    }

    /// Deregister a region: pending registered ops into it and their parked packets are
    /// dropped (counted); later packets for it are NACKed as deregistered.
    pub fn deregister(&mut self, key: RegionKey, ctr: &mut Counters) -> Option<crate::region::RegionMem> {
        let buf = self.regions.deregister(key).ok()?;
        for slot in self.table.slots_where(|e| e.key == key.0) {
            self.table.remove(slot);
            ctr.bump(Counter::drop_entry_deregistered);
        }
        let n = self.escape.drop_where(|_, _, k, _| k == key.0);
        ctr.add(Counter::drop_escape_purged, n as u64);
        Some(buf)
    }

    fn nack(peer: Peer, r: &RdmaRepr, why: NackReason, out: &mut Vec<Answer>, ctr: &mut Counters) {
        ctr.bump(match why {
            NackReason::UnknownKey => Counter::nack_unknown_key,
            NackReason::Deregistered => Counter::nack_deregistered,
            NackReason::OutOfBounds => Counter::nack_out_of_bounds,
            NackReason::TableFull => Counter::nack_table_full,
            NackReason::EscapeFull => Counter::nack_escape_full,
            NackReason::TooManyPackets => Counter::nack_too_many_packets,
            NackReason::Malformed => Counter::nack_malformed,
            NackReason::QueueFull => Counter::nack_queue_full,
        });
        out.push((peer, r.answer(Some(why))));
    }

    fn completion(kind: CompletionKind, peer: Peer, r: &RdmaRepr) -> Completion {
        Completion {
            kind,
            op_id: r.op_id,
            peer,
            key: RegionKey(r.key),
            offset: r.offset,
            len: u64::from(r.op_len),
            status: Status::Ok,
            segment: r.flags & FLAG_SEGMENT != 0,
            last_segment: r.flags & FLAG_LAST_SEGMENT != 0,
        }
    }

    /// Handle one verified RegisterFirst, Data or Notify packet from `peer`.
    pub fn handle(
        &mut self,
        peer: Peer,
        pkt: &RdmaPacket<&[u8]>,
        now: Instant,
        out: &mut Vec<Answer>,
        q: &NotifyQueue,
        ctr: &mut Counters,
    ) {
        let r = pkt.repr();
        match r.ty {
            PacketType::Notify => self.on_notify(peer, &r, pkt.payload().len(), now, out, q, ctr),
            PacketType::RegisterFirst | PacketType::Data => self.on_data(peer, pkt, now, out, q, ctr),
            PacketType::Ack | PacketType::Nack(_) => ctr.bump(Counter::drop_unexpected_type),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_notify(
        &mut self,
        peer: Peer,
        r: &RdmaRepr,
        plen: usize,
        now: Instant,
        out: &mut Vec<Answer>,
        q: &NotifyQueue,
        ctr: &mut Counters,
    ) {
        let shape_ok = r.index == r.count && plen == 0 && packet_span(&RdmaRepr { index: 0, ..*r }).is_some();
        if !shape_ok || r.flags & FLAG_REGISTERED != 0 {
            return Self::nack(peer, r, NackReason::Malformed, out, ctr);
        }
        if self.recent.contains(peer, r.op_id) {
            ctr.bump(Counter::drop_dup_completed);
            out.push((peer, r.answer(None)));
            return;
        }
        if let Err(why) = self.regions.check(r.key, r.offset, u64::from(r.op_len)) {
            return Self::nack(peer, r, why, out, ctr);
        }
        if self.queue_full(q) {
            return Self::nack(peer, r, NackReason::QueueFull, out, ctr);
        }
        if self.recent.insert(peer, r.op_id, now) {
            ctr.bump(Counter::recent_evicted);
        }
        q.post(Self::completion(CompletionKind::RecvNotified, peer, r));
        ctr.bump(Counter::rx_completed_notified);
        out.push((peer, r.answer(None)));
    }

    fn on_data(
        &mut self,
        peer: Peer,
        pkt: &RdmaPacket<&[u8]>,
        now: Instant,
        out: &mut Vec<Answer>,
        q: &NotifyQueue,
        ctr: &mut Counters,
    ) {
        let r = pkt.repr();
        let registered = r.flags & FLAG_REGISTERED != 0;
        let span = packet_span(&r).filter(|(_, plen)| *plen == pkt.payload().len() as u64);
        let Some((rel, _)) = span.filter(|_| registered || r.ty == PacketType::Data) else {
            return Self::nack(peer, &r, NackReason::Malformed, out, ctr);
        };
        // An op in the registration table has not completed (ops leave the table when they
        // complete, before they are remembered as completed): only the others can be late
        // duplicates of a completed op. Saves a keyed hash per packet of a registered op.
        let in_table = registered && self.table.lookup(peer, r.op_id).is_some();
        if !in_table && self.recent.contains(peer, r.op_id) {
            ctr.bump(Counter::drop_dup_completed);
            out.push((peer, r.answer(None)));
            return;
        }
        let Some(at) = r.offset.checked_add(rel) else {
            return Self::nack(peer, &r, NackReason::OutOfBounds, out, ctr);
        };
        // The whole op must lie inside the region, so a refused op never touches memory
        // (also when some of its packets would fit).
        if let Err(why) = self.regions.check(r.key, r.offset, u64::from(r.op_len)) {
            return Self::nack(peer, &r, why, out, ctr);
        }
        if !registered {
            // Paper 3.4: no tracking, place where it belongs; a duplicate rewrites the same bytes.
            return match self.regions.write(r.key, at, pkt.payload()) {
                Ok(()) => {
                    ctr.bump(Counter::rx_data_placed);
                    ctr.add(Counter::rx_bytes_placed, pkt.payload().len() as u64);
                    out.push((peer, r.answer(None)));
                }
                Err(why) => Self::nack(peer, &r, why, out, ctr),
            };
        }
        let slot = match self.table.lookup(peer, r.op_id) {
            Some(slot) => {
                let e = self.table.entry(slot).copied();
                let same = e.is_some_and(|e| {
                    (e.key, e.offset, e.op_len, e.count, e.stride) == (r.key, r.offset, r.op_len, r.count, r.stride)
                });
                if !same {
                    return Self::nack(peer, &r, NackReason::Malformed, out, ctr);
                }
                slot
            }
            None if r.ty == PacketType::RegisterFirst => {
                if self.queue_full(q) {
                    return Self::nack(peer, &r, NackReason::QueueFull, out, ctr);
                }
                let e = Entry {
                    peer,
                    op_id: r.op_id,
                    key: r.key,
                    offset: r.offset,
                    op_len: r.op_len,
                    count: r.count,
                    stride: r.stride,
                    flags: r.flags,
                    last_seen: now,
                };
                match self.table.register(e) {
                    Ok(slot) => {
                        ctr.bump(Counter::rx_ops_registered);
                        slot
                    }
                    Err(RegisterError::Full) => return Self::nack(peer, &r, NackReason::TableFull, out, ctr),
                    Err(RegisterError::TooManyPackets) => {
                        return Self::nack(peer, &r, NackReason::TooManyPackets, out, ctr)
                    }
                }
            }
            None => {
                // Early packet of an op whose registration has not arrived: park it.
                let raw = pkt_bytes(pkt);
                if self.escape.park(peer, r.op_id, r.key, raw, now + self.escape_timeout) {
                    ctr.bump(Counter::rx_escape_parked);
                } else {
                    Self::nack(peer, &r, NackReason::EscapeFull, out, ctr);
                }
                return;
            }
        };
        if let Err(why) = self.regions.check(r.key, at, pkt.payload().len() as u64) {
            return Self::nack(peer, &r, why, out, ctr);
        }
        match self.table.mark(slot, r.index, now) {
            Mark::Duplicate => {
                ctr.bump(Counter::drop_dup_registered);
                out.push((peer, r.answer(None)));
            }
            m => {
                // Checked above; the write cannot fail now.
                let _ = self.regions.write(r.key, at, pkt.payload());
                ctr.bump(Counter::rx_data_placed);
                ctr.add(Counter::rx_bytes_placed, pkt.payload().len() as u64);
                out.push((peer, r.answer(None)));
                if m == Mark::Complete {
                    self.table.remove(slot);
                    if self.recent.insert(peer, r.op_id, now) {
                        ctr.bump(Counter::recent_evicted);
                    }
                    q.post(Self::completion(CompletionKind::RecvRegistered, peer, &r));
                    ctr.bump(Counter::rx_completed_registered);
                }
            }
        }
        if r.ty == PacketType::RegisterFirst {
            self.drain_escape(peer, r.op_id, now, out, q, ctr);
        }
    }

    /// True when the notification queue could not take the completions of every op that
    /// may still post one (those waiting in it and those registered): new ops are refused
    /// (transiently) instead of the queue growing without bound or a completion being lost.
    fn queue_full(&self, q: &NotifyQueue) -> bool {
        q.len() + self.table.len() >= self.notify_capacity
    }

    /// Apply the parked packets of an op that has just registered.
    fn drain_escape(
        &mut self,
        peer: Peer,
        op_id: u64,
        now: Instant,
        out: &mut Vec<Answer>,
        q: &NotifyQueue,
        ctr: &mut Counters,
    ) {
        if self.escape.is_empty() {
            return;
        }
        let mut buf = std::mem::take(&mut self.scratch);
        while self.escape.take(peer, op_id, &mut buf) {
            ctr.bump(Counter::rx_escape_applied);
            // Parked packets were verified on arrival and are Data packets: no recursion.
            if let Ok(p) = RdmaPacket::new_checked(&buf[..]) {
                self.on_data(peer, &p, now, out, q, ctr);
            }
        }
        self.scratch = buf;
    }

    /// Run the escape-channel timers and free idle registration entries.
    pub fn on_timers(&mut self, now: Instant, ctr: &mut Counters) {
        let n = self.escape.expire(now);
        ctr.add(Counter::drop_escape_expired, n as u64);
        if now >= self.next_sweep {
            self.next_sweep = now + self.entry_timeout / 4;
            let idle = self.entry_timeout;
            for slot in self.table.slots_where(|e| now.saturating_since(e.last_seen) >= idle) {
                self.table.remove(slot);
                ctr.bump(Counter::drop_entry_expired);
            }
            self.recent.expire(now);
        }
    }

    /// Earliest instant a receive timer needs a poll.
    pub fn next_deadline(&self) -> Option<Instant> {
        let sweep = (!self.table.is_empty()).then_some(self.next_sweep);
        match (self.escape.next_deadline(), sweep) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The bytes of a verified packet (header + payload, without trailing padding).
fn pkt_bytes<'a>(pkt: &RdmaPacket<&'a [u8]>) -> &'a [u8] {
    let len = crate::wire::HEADER_LEN + pkt.payload().len();
    let whole: &'a [u8] = pkt.clone().into_inner();
    &whole[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(index: u32, count: u32, stride: u16, op_len: u32) -> RdmaRepr {
        RdmaRepr { ty: PacketType::Data, flags: 0, op_id: 1, index, count, key: 1, op_len, offset: 0, stride, span: 0 }
    }

    #[test]
    fn packet_span_accepts_only_consistent_headers() {
        assert_eq!(packet_span(&repr(0, 3, 100, 250)), Some((0, 100)));
        assert_eq!(packet_span(&repr(2, 3, 100, 250)), Some((200, 50)));
        assert_eq!(packet_span(&repr(2, 3, 100, 300)), Some((200, 100)));
        assert_eq!(packet_span(&repr(3, 3, 100, 250)), None, "index past count");
        assert_eq!(packet_span(&repr(0, 3, 100, 200)), None, "last packet would be empty");
        assert_eq!(packet_span(&repr(0, 3, 100, 301)), None, "op longer than its packets");
        assert_eq!(packet_span(&repr(0, 0, 100, 1)), None);
        assert_eq!(packet_span(&repr(0, 1, 0, 1)), None);
        assert_eq!(packet_span(&repr(0, 1, 10, 0)), None);
        assert_eq!(packet_span(&repr(u32::MAX - 1, u32::MAX, u16::MAX, u32::MAX)), None);
    }
}
