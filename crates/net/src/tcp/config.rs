//! TCP configuration: a plain struct with defaults.

use super::cc::CcAlgorithm;
use std::time::Duration;

/// How the TCP engine behaves; part of [`crate::Config`].
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// Sessions one stack can hold (preallocated tables).
    pub max_sessions: usize,
    /// MSS we announce (clamped to the MTU minus 40).
    pub mss: u16,
    /// Our window-scale shift (RFC 7323), 0..=14; `None` disables the option. The default 9
    /// lets the window reach 32 MiB, the receive-buffer maximum (10 Gbit/s x 25 ms).
    pub window_scale: Option<u8>,
    /// Offer and use SACK (RFC 2018, 6675).
    pub sack: bool,
    /// Offer and use timestamps (RFC 7323).
    pub timestamps: bool,
    /// Per-connection send buffer at the start, bytes.
    pub tx_buffer: usize,
    /// Per-connection receive buffer at the start, bytes.
    pub rx_buffer: usize,
    /// Largest the send buffer grows to: it follows twice the congestion window (as Linux's
    /// send-buffer expansion) while the application keeps it full. Equal to `tx_buffer` to
    /// switch growth off (bounding memory per session, e.g. for many thousand sessions).
    pub tx_buffer_max: usize,
    /// Largest the receive buffer grows to: it doubles when the peer fills the whole window
    /// we offered while the application keeps up (dynamic right-sizing, as Linux's receive
    /// buffer auto-tuning). Equal to `rx_buffer` to switch growth off. The window-scale shift
    /// must allow it (`65535 << shift`).
    pub rx_buffer_max: usize,
    /// Stack-wide limit of the bytes TCP's send and receive rings (and their pools) may hold
    /// (see [`super::memory`]): 256 MiB by default. At the limit no ring gets new storage:
    /// sends are refused (back-pressure) and data for a ring without storage is dropped.
    pub mem_limit: usize,
    /// Memory pressure threshold, bytes (a quarter of the default limit): at or above it buffers stop
    /// growing, emptied rings give back their storage and new rings get `buffer_min` bytes.
    pub mem_pressure: usize,
    /// Ring size given under memory pressure (16 KiB, Linux's default `tcp_wmem` start).
    pub buffer_min: usize,
    /// Congestion control for new connections.
    pub cc: CcAlgorithm,
    /// Nagle's algorithm (off by default).
    pub nagle: bool,
    /// Longest an ACK of in-order data is delayed; 0 acknowledges every segment.
    pub delayed_ack: Duration,
    /// The least margin of the RTO above the smoothed RTT, RFC 6298's G in
    /// RTO = SRTT + max(G, 4 RTTVAR); 10 ms by default. RFC 6298 asks for an RTO of at least
    /// 1 s and Linux uses a 200 ms margin, chosen for coarse timers and peers that delay
    /// ACKs; here timers run at the poll loop's precision, a lone segment gets the
    /// delayed-ACK allowance on top (see `TxSar::rto`), RACK and tail loss probes repair
    /// nearly every loss before the timer, and a spurious timeout is detected with
    /// timestamps and undone. At a 100 µs round trip a 200 ms margin costs 2,000 round trips
    /// per timeout; 10 ms costs 100. Below about 10 ms, a user-space stack (or its peer)
    /// descheduled on a loaded host fires spurious timeouts (seen at 5 ms on a busy 2-core
    /// machine); the margin also stays above the 1 ms timestamp tick, so the original and
    /// the retransmission can be told apart.
    pub min_rto: Duration,
    /// Upper bound of the RTO and of the zero-window probe interval: both back off
    /// exponentially up to it (120 s by default, Linux's `TCP_RTO_MAX`).
    pub max_rto: Duration,
    /// Longest a peer may keep its window closed while we have data for it before the
    /// connection is aborted (with a reset, counted as `tcp_zero_window_aborts`; the
    /// application sees `TimedOut`). `None` probes forever, as RFC 1122 4.2.2.17 allows; the
    /// 10-minute default bounds what a reader that never reads can hold (Linux bounds it only
    /// with `TCP_USER_TIMEOUT`).
    pub zero_window_limit: Option<Duration>,
    /// TIME-WAIT duration (2 MSL; 60 s by default, as Linux). TIME-WAIT does not exhaust the
    /// table: a newer SYN reopens its 4-tuple at once (RFC 6191), and when the table is full
    /// the oldest released session in TIME-WAIT gives its slot to the new one.
    pub time_wait: Duration,
    /// SYN (or SYN-ACK) retransmissions before giving up.
    pub syn_retries: u32,
    /// Data retransmissions in a row before the connection times out.
    pub max_retries: u32,
    /// Keep-alive idle time; `None` disables keep-alive.
    pub keepalive: Option<Duration>,
    /// Half-open connections (SYN-RECEIVED) per listener before new SYNs are answered with
    /// SYN cookies (or dropped, without cookies).
    pub syn_backlog: usize,
    /// Answer SYNs with SYN cookies when the half-open queue is full
    /// (RFC 4987 3.6, Linux's `tcp_syncookies = 1`).
    pub syn_cookies: bool,
    /// Challenge ACKs per second at most (RFC 5961 section 7).
    pub challenge_ack_limit: u32,
    /// Secret key of the ISN hash (RFC 6528); random by default.
    pub secret: [u64; 2],
    /// Duplicate ACKs that trigger fast retransmit.
    pub dup_thresh: u32,
    /// Tail loss probes (RFC 8985 section 7): a tail of lost segments is probed after two
    /// smoothed RTTs instead of waiting for the retransmission timeout (needs SACK).
    pub tail_loss_probe: bool,
    /// This stack's shard and the number of shards (one stack per queue, `wire::flow`):
    /// connections it opens take source ports whose flow hashes back to it. `(0, 1)`: alone.
    pub shard: (u16, u16),
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            max_sessions: 4096,
            mss: 1460,
            window_scale: Some(9),
            sack: true,
            timestamps: true,
            tx_buffer: 256 * 1024,
            rx_buffer: 256 * 1024,
            tx_buffer_max: 32 << 20,
            rx_buffer_max: 32 << 20,
            mem_limit: 256 << 20,
            mem_pressure: 64 << 20,
            buffer_min: 16 << 10,
            cc: CcAlgorithm::NewReno,
            nagle: false,
            delayed_ack: Duration::from_millis(1),
            min_rto: Duration::from_millis(10),
            max_rto: Duration::from_secs(120),
            zero_window_limit: Some(Duration::from_secs(600)),
            time_wait: Duration::from_secs(60),
            syn_retries: 6,
            max_retries: 15,
            keepalive: None,
            syn_backlog: 1024,
            syn_cookies: true,
            challenge_ack_limit: 1000,
            secret: super::isn::random_key(),
            dup_thresh: 3,
            tail_loss_probe: true,
            shard: (0, 1),
        }
    }
}
