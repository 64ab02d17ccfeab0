//! Configuration of an RDMA node: a plain struct with defaults and builder methods.

use crate::error::RdmaError;
use crate::peer::Transport;
use std::time::Duration;

/// Default segment size, segmentation threshold and registration threshold: large writes are
/// cut into 256 KiB segments, each registered (receive-side completion per segment, as the
/// paper combines them). At a 1500-byte MTU a segment is 185 packets, within the default
/// 256-packet mask; with smaller packets (`packet_payload`) a segment wider than the mask
/// goes unregistered, so keep `segment_size / packet_payload <= mask_width`.
pub const DEFAULT_SEGMENT: usize = 256 * 1024;

/// How an [`RdmaNode`](crate::RdmaNode) is configured.
#[derive(Debug, Clone)]
pub struct RdmaConfig {
    /// UDP port or EtherType.
    pub transport: Transport,
    /// Payload bytes per data packet; `None`: as many as the link MTU allows.
    pub packet_payload: Option<usize>,
    /// Registration table entries (64..=1024).
    pub reg_entries: usize,
    /// Mask width in packets (64..=1024): the largest registered op.
    pub mask_width: usize,
    /// Escape channel capacity in packets (the paper's NI holds 64).
    pub escape_capacity: usize,
    /// How long a packet waits in the escape channel for its op's registration.
    pub escape_timeout: Duration,
    /// A registration entry that sees no packet for this long is freed (its sender gave up).
    /// Keep it well above the senders' `max_rto`: a sender still retrying refreshes the
    /// entry with every retransmission.
    pub entry_timeout: Duration,
    /// Completions the receive notification queue holds (those waiting plus the registered
    /// ops that may still complete); past that, new ops are NACKed `queue_full` until the
    /// application takes some. The send side uses the same bound: send completions not yet
    /// taken plus writes pending; past that, `post_write` is refused `CompletionsFull`.
    pub notify_capacity: usize,
    /// Completed ops remembered for duplicate detection.
    pub recent_capacity: usize,
    /// How long a completed op is remembered (longer than a sender retries).
    pub recent_linger: Duration,
    /// Ops of at most this many bytes (and at most `mask_width` packets) are registered
    /// unless the write says otherwise.
    pub register_threshold: usize,
    /// Writes larger than this are split into segments.
    pub segment_threshold: usize,
    /// Size of a segment.
    pub segment_size: usize,
    /// Writes the command queue holds.
    pub command_queue: usize,
    /// Ops in flight at once (the DMA op table).
    pub max_ops: usize,
    /// Packets in flight at once over all destinations (the transaction table).
    pub max_in_flight: usize,
    /// Packets in flight per destination (the flow-control window).
    pub window: usize,
    /// First retransmission timeout.
    pub rto: Duration,
    /// Largest retransmission timeout (backoff doubles up to here).
    pub max_rto: Duration,
    /// Transmissions of one packet before its op fails. With the backoff, the defaults keep
    /// a packet alive for about a second: longer than the stack's ARP retry interval, so an
    /// ARP exchange lost once does not fail the op.
    pub max_tries: u32,
    /// Regions registered at once.
    pub max_regions: usize,
    /// Datagrams taken from the socket per poll.
    pub rx_batch: usize,
    /// Id of the first write (later ones count up); `None`: drawn per node from the clock
    /// and process, so that a restarted sender's ops are not taken for duplicates of its
    /// previous run's by a receiver that still remembers them. Set it for reproducible ids.
    pub first_write_id: Option<u64>,
}

impl Default for RdmaConfig {
    fn default() -> Self {
        RdmaConfig {
            transport: Transport::default(),
            packet_payload: None,
            reg_entries: 256,
            mask_width: 256,
            escape_capacity: 64,
            escape_timeout: Duration::from_millis(5),
            entry_timeout: Duration::from_millis(500),
            notify_capacity: 65536,
            recent_capacity: 8192,
            recent_linger: Duration::from_secs(2),
            register_threshold: DEFAULT_SEGMENT,
            segment_threshold: DEFAULT_SEGMENT,
            segment_size: DEFAULT_SEGMENT,
            command_queue: 1024,
            max_ops: 256,
            max_in_flight: 4096,
            window: 64,
            rto: Duration::from_millis(1),
            max_rto: Duration::from_millis(100),
            max_tries: 16,
            max_regions: 1024,
            rx_batch: 64,
            first_write_id: None,
        }
    }
}

impl RdmaConfig {
    /// Carry packets in UDP on `port`.
    pub fn udp(mut self, port: u16) -> Self {
        self.transport = Transport::Udp { port };
        self
    }

    /// Carry packets in Ethernet frames of `ethertype`.
    pub fn ethernet(mut self, ethertype: u16) -> Self {
        self.transport = Transport::Eth { ethertype };
        self
    }

    /// Set the registration table size (entries x mask width in packets).
    pub fn registration(mut self, entries: usize, mask_width: usize) -> Self {
        self.reg_entries = entries;
        self.mask_width = mask_width;
        self
    }

    /// Set the per-destination window of packets in flight.
    pub fn window(mut self, packets: usize) -> Self {
        self.window = packets;
        self
    }

    /// Set the packet payload size.
    pub fn packet_payload(mut self, bytes: usize) -> Self {
        self.packet_payload = Some(bytes);
        self
    }

    /// Set segmentation: writes above `threshold` go out in segments of `size`.
    pub fn segmentation(mut self, threshold: usize, size: usize) -> Self {
        self.segment_threshold = threshold;
        self.segment_size = size;
        self
    }

    /// Check ranges; the error names the wrong value.
    pub fn validate(&self) -> Result<(), RdmaError> {
        let bad = |m: String| Err(RdmaError::BadConfig(m));
        if !(64..=1024).contains(&self.reg_entries) {
            return bad(format!("reg_entries {} is outside 64..=1024", self.reg_entries));
        }
        if !(64..=1024).contains(&self.mask_width) {
            return bad(format!("mask_width {} is outside 64..=1024", self.mask_width));
        }
        if self.escape_capacity == 0 || self.escape_capacity > 65536 {
            return bad(format!("escape_capacity {} is outside 1..=65536", self.escape_capacity));
        }
        if self.segment_size == 0 || self.segment_threshold < self.segment_size {
            return bad("segment_size must be positive and at most segment_threshold".into());
        }
        if self.segment_size > u32::MAX as usize || self.segment_threshold > u32::MAX as usize {
            return bad("segment sizes must fit in 32 bits".into());
        }
        if self.window == 0 || self.max_in_flight < self.window || self.max_ops == 0 || self.command_queue == 0 {
            return bad("window, max_in_flight >= window, max_ops and command_queue must be positive".into());
        }
        if self.max_tries == 0 || self.rto.is_zero() || self.max_rto < self.rto {
            return bad("max_tries and rto must be positive and max_rto >= rto".into());
        }
        if self.packet_payload == Some(0) {
            return bad("packet_payload must be positive".into());
        }
        if self.rx_batch == 0 || self.max_regions == 0 || self.recent_capacity == 0 {
            return bad("rx_batch, max_regions and recent_capacity must be positive".into());
        }
        if self.notify_capacity <= self.reg_entries {
            return bad(format!(
                "notify_capacity {} must exceed reg_entries {}",
                self.notify_capacity, self.reg_entries
            ));
        }
        Ok(())
    }
}
