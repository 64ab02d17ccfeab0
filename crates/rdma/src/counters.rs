//! Named counters of an RDMA node: what it sent and received, and every drop by reason.

net::define_counters! {
    /// One counter of an [`RdmaNode`](crate::RdmaNode). Names starting with `drop_` count
    /// packets discarded, one counter per reason; `nack_` counts refusals sent.
    ;
    /// Datagrams or frames taken from the transport socket.
    rx_datagrams,
    /// Packets that passed header and CRC checks.
    rx_packets,
    /// Received payload bytes written into regions.
    rx_bytes_placed,
    /// Data packets written into a region.
    rx_data_placed,
    /// Ops entered into the registration table.
    rx_ops_registered,
    /// Registered ops completed by the registration table (posted locally).
    rx_completed_registered,
    /// Unregistered ops completed by the sender's Notify (posted).
    rx_completed_notified,
    /// Packets parked in the escape channel.
    rx_escape_parked,
    /// Parked packets applied when their op registered.
    rx_escape_applied,
    /// ACK packets sent (including re-ACKs of duplicates); one may acknowledge a run of
    /// packets.
    tx_acks,
    /// ACKs folded into the ACK of the run before them: packets acknowledged =
    /// `tx_acks` + `tx_acks_folded`.
    tx_acks_folded,
    /// Duplicate packets of a registered op in the table: dropped and ACKed again.
    drop_dup_registered,
    /// Packets or Notifies of an op completed recently: dropped and ACKed again.
    drop_dup_completed,
    /// Parked packets whose escape timer fired.
    drop_escape_expired,
    /// Parked packets dropped because their region was deregistered.
    drop_escape_purged,
    /// Registration entries freed after going idle (the sender gave up).
    drop_entry_expired,
    /// Registration entries freed because their region was deregistered.
    drop_entry_deregistered,
    /// Completed-op memories evicted before their time (table full).
    recent_evicted,
    /// Received datagrams larger than the receive buffer.
    drop_oversize,
    /// Packets shorter than their header or payload length.
    drop_truncated,
    /// Packets with a wrong magic number.
    drop_bad_magic,
    /// Packets of another version.
    drop_bad_version,
    /// Packets of an unknown type.
    drop_bad_type,
    /// Packets with undefined flags or reserved bits.
    drop_bad_flags,
    /// Packets with a bad NACK reason field.
    drop_bad_reason,
    /// Packets whose CRC32C did not verify.
    drop_bad_crc,
    /// NACK sent: unknown region key.
    nack_unknown_key,
    /// NACK sent: region deregistered.
    nack_deregistered,
    /// NACK sent: write outside the region.
    nack_out_of_bounds,
    /// NACK sent: registration table full.
    nack_table_full,
    /// NACK sent: escape channel full.
    nack_escape_full,
    /// NACK sent: registered op wider than the mask.
    nack_too_many_packets,
    /// NACK sent: inconsistent header fields.
    nack_malformed,
    /// NACK sent: the notification queue is full (the application is not taking completions).
    nack_queue_full,
    /// ACKs received that acknowledged a packet in flight.
    rx_acks,
    /// NACKs received for a packet in flight.
    rx_nacks,
    /// ACKs or NACKs for an op or packet not in flight (late duplicates): dropped.
    drop_ack_stray,
    /// Data or Notify packets that arrived at a node (the sender role ignores them) with a
    /// type that only a sender should receive, or vice versa: never happens between
    /// linerate nodes; kept so every packet has a verdict.
    drop_unexpected_type,
    /// Writes accepted into the command queue.
    tx_writes_posted,
    /// Writes refused because the command queue was full (`RdmaError::QueueFull`).
    tx_refused_queue_full,
    /// Writes refused because untaken send completions and pending writes filled
    /// `notify_capacity` (`RdmaError::CompletionsFull`).
    tx_refused_completions_full,
    /// Writes completed successfully (sender's local completion).
    tx_writes_completed,
    /// Writes completed with an error.
    tx_writes_failed,
    /// Ops (segments) started from the command queue.
    tx_ops_started,
    /// Ops fully acknowledged.
    tx_ops_acked,
    /// Ops failed.
    tx_ops_failed,
    /// Packets handed to the stack (data, notify, ACK and NACK).
    tx_packets,
    /// Data packets sent for the first time.
    tx_data_packets,
    /// Data or Notify packets sent again (timeout or NACK).
    tx_retransmits,
    /// Transmission timers that fired.
    tx_timeouts,
    /// Retransmissions held back while one probe tests a destination that has answered
    /// nothing since they were sent (a stalled or vanished receiver, not a lossy path).
    tx_postponed,
    /// Ops failed together because their destination stayed silent through a probe's
    /// every try.
    tx_ops_failed_silent,
    /// Notify packets sent for the first time.
    tx_notifies,
    /// Notifies never acknowledged after every try (the data had been acknowledged).
    tx_notify_failed,
    /// Sends the stack refused for a full link queue (retried at the next poll).
    tx_backpressure,
    /// Sends the stack refused for good (no route, too large).
    tx_send_errors,
    /// ACKs and NACKs dropped unsent because more than the answer backlog
    /// ([`crate::memory::answer_backlog`]) piled up while the link stayed full (the sender
    /// retransmits and is answered again).
    drop_answer_backlog,
    /// ACKs and NACKs received and dropped because more than the answer backlog arrived
    /// between two polls of the node (the sender resends and is answered again).
    drop_reply_backlog,
    /// Datagrams dropped because the node's state was in use when the stack handed them
    /// over (a region or the counters held by the application across `Stack::poll`); the
    /// sender resends.
    drop_busy,
}

/// The counters of a node.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    vals: Vec<u64>,
}

impl Counters {
    /// All zero.
    pub fn new() -> Self {
        Counters { vals: vec![0; Counter::ALL.len()] }
    }

    /// Add one.
    #[inline]
    pub fn bump(&mut self, c: Counter) {
        self.add(c, 1);
    }

    /// Add `n`.
    #[inline]
    pub fn add(&mut self, c: Counter, n: u64) {
        if self.vals.is_empty() {
            self.vals = vec![0; Counter::ALL.len()];
        }
        self.vals[c as usize] += n;
    }

    /// The value of `c`.
    pub fn get(&self, c: Counter) -> u64 {
        self.vals.get(c as usize).copied().unwrap_or(0)
    }

    /// (name, value) of every counter.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Counter::ALL.iter().map(|c| (c.name(), self.get(*c)))
    }

    /// Sum of the drops of datagrams that never became packets: the parse errors
    /// (`drop_oversize` .. `drop_bad_crc`) and `drop_busy`.
    pub fn parse_drops(&self) -> u64 {
        [
            Counter::drop_busy,
            Counter::drop_oversize,
            Counter::drop_truncated,
            Counter::drop_bad_magic,
            Counter::drop_bad_version,
            Counter::drop_bad_type,
            Counter::drop_bad_flags,
            Counter::drop_bad_reason,
            Counter::drop_bad_crc,
        ]
        .iter()
        .map(|c| self.get(*c))
        .sum()
    }

    /// Verdicts given to verified packets: placed, duplicate, parked (less those applied
    /// later, which get a verdict of their own), refused, posted, answers taken or dropped.
    /// Equals `rx_packets` when every packet is accounted for.
    pub fn verdicts(&self) -> u64 {
        use Counter::*;
        let sum = |cs: &[Counter]| cs.iter().map(|c| self.get(*c)).sum::<u64>();
        sum(&[
            rx_data_placed,
            drop_dup_registered,
            drop_dup_completed,
            rx_escape_parked,
            rx_completed_notified,
            rx_acks,
            rx_nacks,
            drop_ack_stray,
            drop_reply_backlog,
            drop_unexpected_type,
        ]) + self.nacks_sent()
            - self.get(rx_escape_applied)
    }

    /// Sum of the NACKs sent.
    pub fn nacks_sent(&self) -> u64 {
        [
            Counter::nack_unknown_key,
            Counter::nack_deregistered,
            Counter::nack_out_of_bounds,
            Counter::nack_table_full,
            Counter::nack_escape_full,
            Counter::nack_too_many_packets,
            Counter::nack_malformed,
            Counter::nack_queue_full,
        ]
        .iter()
        .map(|c| self.get(*c))
        .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_sums_cover_their_groups() {
        let mut names: Vec<_> = Counter::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Counter::ALL.len());
        let mut c = Counters::new();
        c.bump(Counter::drop_bad_crc);
        c.add(Counter::drop_oversize, 2);
        c.bump(Counter::nack_malformed);
        c.bump(Counter::rx_acks);
        assert_eq!((c.parse_drops(), c.nacks_sent()), (3, 1));
        assert_eq!(c.iter().find(|(n, _)| *n == "drop_bad_crc").unwrap().1, 1);
        assert_eq!(Counters::default().get(Counter::rx_acks), 0);
    }
}
