//! Undoing spurious fast recoveries (RFC 2883 section 6, RFC 3708; as Linux's D-SACK undo):
//! when the peer reports every segment retransmitted in a recovery as a duplicate, the
//! "losses" were reordering. The congestion window and threshold go back to what they were
//! before the recovery, and the connection's reordering threshold doubles so that the same
//! reordering does not trigger recovery again.

use super::super::seq::SeqRange;
use super::super::sink::Meter;
use super::episode::UndoPoint;
use super::tables::TxSar;
use super::TcbMut;
use crate::counters::Counter;
use link::Instant;

/// Highest reordering threshold a connection reaches (segments).
pub const MAX_REORDERING: u32 = 64;

/// A fast recovery starts now: remember what undoing it restores. A recovery that starts
/// within two round trips of the last one, before that one could be proved spurious, joins
/// its episode: a burst of reordering starts several recoveries in a row, and undoing only
/// the last would leave the window the first one cut.
pub(crate) fn mark_undo_point(tx: &mut TxSar, now: Instant) {
    let srtt = tx.rtt.srtt().unwrap_or_default();
    if let Some(u) = tx.undo.as_mut().filter(|u| now - u.at < srtt * 2) {
        u.recoveries += 1;
        return;
    }
    tx.undo = Some(UndoPoint {
        from: tx.snd_una,
        cwnd: tx.cc.cwnd,
        ssthresh: tx.cc.ssthresh,
        retransmits: tx.retransmits,
        at: now,
        recoveries: 1,
    });
    tx.undo_dsacked = 0;
}

impl TcbMut<'_> {
    /// The peer reported `[start, end)` as received twice (D-SACK). If that makes every
    /// retransmission of the last recovery a duplicate, undo the recovery.
    pub(crate) fn on_dsack<M: Meter>(&mut self, io: &mut M, dup: SeqRange) {
        let tx = &mut *self.tx;
        tx.dsacks_received += 1;
        let (una, nxt) = (tx.snd_una, tx.snd_nxt);
        tx.rack.on_dsack(una, nxt);
        let Some(u) = tx.undo else { return };
        if dup.start < u.from {
            return;
        }
        let mss = (tx.mss as u32).max(1);
        tx.undo_dsacked += u64::from(dup.len().div_ceil(mss));
        let retransmitted = tx.retransmits - u.retransmits;
        if retransmitted == 0 || tx.undo_dsacked < retransmitted {
            return;
        }
        tx.cc.undo(u.cwnd, u.ssthresh);
        if tx.recover.is_some() {
            tx.recover = None;
            tx.tail_recovery = false;
            tx.dupacks = 0;
        }
        tx.undo = None;
        tx.reordering = (tx.reordering * 2).min(MAX_REORDERING);
        tx.rack.reordering_seen = true;
        tx.undone += u64::from(u.recoveries);
        io.counters().add(Counter::tcp_recoveries_undone, u64::from(u.recoveries));
    }
}
