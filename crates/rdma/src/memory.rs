//! The queues an RDMA node grows and the bound its configuration puts on each.
//!
//! [`RdmaNode::memory`](crate::RdmaNode::memory) reports, per queue, what it holds now and
//! the most it may hold; no traffic, however hostile, and no application that stops taking
//! completions can push a queue past its bound. What happens at the bound:
//!
//! | queue | bound | beyond it |
//! | --- | --- | --- |
//! | `escape` (early packets of registered ops) | `escape_capacity` | NACK `escape_full` (`nack_escape_full`) |
//! | `registered_ops` (registration table) | `reg_entries` | NACK `table_full` (`nack_table_full`) |
//! | `notifications` (receive completions not yet taken) | `notify_capacity` (with the registered ops) | NACK `queue_full` (`nack_queue_full`) |
//! | `recent_ops` (completed ops remembered) | `recent_capacity` | oldest forgotten early (`recent_evicted`) |
//! | `answers` (ACKs/NACKs waiting for the link) | [`answer_backlog`] | answer dropped (`drop_answer_backlog`); the sender resends |
//! | `replies` (ACKs/NACKs received between two polls, for the sender) | [`answer_backlog`] | reply dropped (`drop_reply_backlog`); the sender resends |
//! | `completions` (send completions not yet taken) | `notify_capacity` (with the pending writes) | `post_write` refused `CompletionsFull` (`tx_refused_completions_full`) |
//! | `pending_writes` (command queue and writes in flight) | `command_queue + max_ops` | `post_write` refused `QueueFull` (`tx_refused_queue_full`) |
//! | `ops` (the DMA op table) | `max_ops` | writes wait in the command queue |
//! | `packets_in_flight` (the transaction table) | `max_in_flight` | packets wait for a free entry |
//! | `timers` (retransmission timer heap) | [`timer_bound`] | stale entries purged |
//!
//! The escape channel, the registration table, the op and transaction tables are
//! preallocated at their bound when the node is made. Regions are the application's memory
//! and written data is the application's `Arc`; neither is counted here.

use crate::config::RdmaConfig;
use crate::notify::Completion;
use crate::peer::Peer;
use crate::receiver::Answer;
use crate::regtable::ENTRY_FIXED_BYTES;
use link::Instant;

/// ACKs and NACKs a node keeps waiting for a full link: 16 receive batches.
pub fn answer_backlog(cfg: &RdmaConfig) -> usize {
    16 * cfg.rx_batch
}

/// Entries the retransmission timer heap holds at most: stale entries (of acknowledged or
/// re-armed packets) are purged once they outnumber the live ones by far.
pub fn timer_bound(cfg: &RdmaConfig) -> usize {
    2 * cfg.max_in_flight + 257
}

/// One queue: what it holds now and its bound, in entries, and the bytes of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueUse {
    /// The queue's name (see the module's table).
    pub name: &'static str,
    /// Entries held now.
    pub len: usize,
    /// Entries it may hold at most.
    pub bound: usize,
    /// Bytes of one entry (fixed-size part; an op adds per-packet state, see [`op_bytes`]).
    pub entry_bytes: usize,
}

/// Every queue of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryUse {
    /// The queues, in the order of the module's table.
    pub queues: Vec<QueueUse>,
}

impl MemoryUse {
    /// The queue called `name`.
    pub fn get(&self, name: &str) -> Option<QueueUse> {
        self.queues.iter().find(|q| q.name == name).copied()
    }

    /// Bytes held now (entries times their size).
    pub fn bytes(&self) -> usize {
        self.queues.iter().map(|q| q.len * q.entry_bytes).sum()
    }

    /// Bytes at every queue's bound.
    pub fn bound_bytes(&self) -> usize {
        self.queues.iter().map(|q| q.bound * q.entry_bytes).sum()
    }

    /// The queues holding more than their bound (empty when all is well).
    pub fn over_bound(&self) -> Vec<QueueUse> {
        self.queues.iter().filter(|q| q.len > q.bound).copied().collect()
    }
}

/// Per-op bytes of an op of `max_packets` packets in the sender's op table (its ACK mask
/// and transaction slots).
pub fn op_bytes(max_packets: usize) -> usize {
    max_packets.div_ceil(64) * 8 + max_packets * 4
}

/// Lengths now of every queue, in the module table's order.
#[derive(Default)]
pub(crate) struct Lens {
    pub escape: usize,
    pub registered_ops: usize,
    pub notifications: usize,
    pub recent_ops: usize,
    pub answers: usize,
    pub replies: usize,
    pub completions: usize,
    pub pending_writes: usize,
    pub ops: usize,
    pub packets_in_flight: usize,
    pub timers: usize,
}

/// The report for a node of `cfg` whose packets are at most `max_packet` bytes and carry
/// `stride` payload bytes each.
pub(crate) fn report(cfg: &RdmaConfig, max_packet: usize, stride: usize, l: Lens) -> MemoryUse {
    let q = |name, len, bound, entry_bytes| QueueUse { name, len, bound, entry_bytes };
    let largest_op = cfg.segment_threshold.max(cfg.segment_size).div_ceil(stride.max(1));
    let completion = std::mem::size_of::<Completion>();
    MemoryUse {
        queues: vec![
            q("escape", l.escape, cfg.escape_capacity, max_packet + 48),
            q("registered_ops", l.registered_ops, cfg.reg_entries, ENTRY_FIXED_BYTES + cfg.mask_width.div_ceil(8)),
            q("notifications", l.notifications, cfg.notify_capacity, completion),
            q("recent_ops", l.recent_ops, cfg.recent_capacity, 2 * std::mem::size_of::<(Instant, Peer, u64)>()),
            q("answers", l.answers, answer_backlog(cfg), std::mem::size_of::<Answer>()),
            q("replies", l.replies, answer_backlog(cfg), std::mem::size_of::<Answer>()),
            q("completions", l.completions, cfg.notify_capacity, completion),
            q("pending_writes", l.pending_writes, cfg.command_queue + cfg.max_ops, 96),
            q("ops", l.ops, cfg.max_ops, 160 + op_bytes(largest_op)),
            q("packets_in_flight", l.packets_in_flight, cfg.max_in_flight, 48),
            q("timers", l.timers, timer_bound(cfg), 16),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_configuration_and_over_bound_names_the_queue() {
        let cfg = RdmaConfig::default();
        let lens = Lens::default;
        let m = report(&cfg, 1472, 1424, lens());
        assert_eq!(m.get("escape").unwrap().bound, cfg.escape_capacity);
        assert_eq!(m.get("answers").unwrap().bound, 16 * cfg.rx_batch);
        assert_eq!(m.get("pending_writes").unwrap().bound, cfg.command_queue + cfg.max_ops);
        assert_eq!(m.bytes(), 0);
        assert!(m.bound_bytes() > 0 && m.over_bound().is_empty());
        let m = report(&cfg, 1472, 1424, Lens { answers: 16 * cfg.rx_batch + 1, ..lens() });
        assert_eq!(m.over_bound().iter().map(|q| q.name).collect::<Vec<_>>(), vec!["answers"]);
        assert_eq!(m.bytes(), (16 * cfg.rx_batch + 1) * std::mem::size_of::<Answer>());
    }
}
