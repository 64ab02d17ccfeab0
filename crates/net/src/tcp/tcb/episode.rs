//! What a loss-recovery episode remembers in a connection's send variables: PRR's counts and
//! the points an undo restores. Rows of `TxSar`, read and written only by the view (the fields
//! are private to `tcp::tcb`).

use super::super::seq::Seq;
use link::Instant;

/// Proportional Rate Reduction state (RFC 6937 section 3), bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prr {
    /// Data the receiver got since recovery started (prr_delivered).
    pub(in crate::tcp::tcb) delivered: u64,
    /// Data sent since recovery started (prr_out).
    pub(in crate::tcp::tcb) out: u64,
    /// Data in the network when recovery started (RecoverFS).
    pub(in crate::tcp::tcb) recover_fs: u64,
}

/// What undoing a spurious retransmission timeout restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtoUndo {
    /// Our timestamp when the timeout fired: an ACK echoing an earlier one was caused by the
    /// original transmission.
    pub(in crate::tcp::tcb) ts: u32,
    /// cwnd before the timeout.
    pub(in crate::tcp::tcb) cwnd: u32,
    /// ssthresh before the timeout.
    pub(in crate::tcp::tcb) ssthresh: u32,
}

/// What an undo of a spurious fast recovery restores (RFC 2883 section 6, as Linux does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoPoint {
    /// SND.UNA when the recovery started: D-SACKs at or above it belong to the episode.
    pub(in crate::tcp::tcb) from: Seq,
    /// cwnd before the recovery.
    pub(in crate::tcp::tcb) cwnd: u32,
    /// ssthresh before the recovery.
    pub(in crate::tcp::tcb) ssthresh: u32,
    /// The connection's `retransmits` when the recovery started.
    pub(in crate::tcp::tcb) retransmits: u64,
    /// When the recovery started.
    pub(in crate::tcp::tcb) at: Instant,
    /// Recoveries in the episode (later ones that started before it could be undone).
    pub(in crate::tcp::tcb) recoveries: u32,
}
