//! The TCP engine (RFC 9293), split like Limago and the fpga-network-stack: session lookup
//! (`lookup`), port table and state table (`engine`), send/receive sequence tables
//! (`tcb::tables`), timers (`timer`), the receive side (`rx`: checks and demultiplexing; `listen`:
//! segments for no session) with its RX bypass (`bypass`), the transmit side (`output`: the
//! flush of dirty sessions, resets), connection activity for the application (`activity`),
//! congestion control (`cc`), SACK scoreboard (`sack`), out-of-order reassembly
//! (`assembler`), buffers (`ringbuf`, `sendq`), their shared storage (`storage`) and the
//! application interface (methods on [`crate::Stack`]). What one connection does is in
//! `tcb`: methods of the per-connection view, taken once per event.

pub(crate) mod activity;
pub(crate) mod assembler;
pub(crate) mod bypass;
pub mod cc;
pub(crate) mod challenge;
pub(crate) mod clock;
pub mod config;
pub(crate) mod dirty;
pub(crate) mod engine;
pub(crate) mod isn;
mod listen;
pub(crate) mod lookup;
pub mod memory;
pub(crate) mod output;
mod pmtu;
pub(crate) mod rack;
pub(crate) mod ringbuf;
pub(crate) mod rtt;
pub(crate) mod rx;
pub(crate) mod sack;
pub(crate) mod sendq;
pub(crate) mod seq;
pub(crate) mod sink;
pub(crate) mod storage;
pub(crate) mod syncookie;
pub(crate) mod tcb;
pub(crate) mod timer;
#[cfg(test)]
mod unit_util;

pub use activity::MAX_WATCHERS;
pub use cc::{CcAlgorithm, CongestionControl};
pub use config::TcpConfig;
pub(crate) use lookup::SegAddr;

use std::time::Duration;

/// The states of a TCP connection (RFC 9293 section 3.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TcpState {
    /// No connection (or one that ended; the handle stays until the application closes it).
    #[default]
    Closed,
    /// Active open: SYN sent.
    SynSent,
    /// Passive open: SYN received and SYN-ACK sent.
    SynReceived,
    /// Data flows both ways.
    Established,
    /// We closed; our FIN is not yet acknowledged.
    FinWait1,
    /// We closed and our FIN is acknowledged; waiting for the peer's FIN.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; waiting for the ACK of our FIN.
    Closing,
    /// The peer closed, then we did; waiting for the ACK of our FIN.
    LastAck,
    /// Both closed; waiting 2 MSL for stray segments.
    TimeWait,
}

impl TcpState {
    /// True once the three-way handshake has completed (RFC 9293 "synchronized" states).
    pub fn is_synchronized(self) -> bool {
        !matches!(self, TcpState::Closed | TcpState::SynSent | TcpState::SynReceived)
    }

    /// True in states where the peer may still send us data.
    pub fn can_receive(self) -> bool {
        matches!(self, TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2)
    }

    /// True in states where we may still queue data to send.
    pub fn can_send(self) -> bool {
        matches!(self, TcpState::SynSent | TcpState::SynReceived | TcpState::Established | TcpState::CloseWait)
    }
}

/// A TCP connection of a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpHandle {
    pub(crate) id: u32,
    pub(crate) gen: u32,
}

impl TcpHandle {
    /// The connection's session slot: unique among the stack's open connections and below
    /// its session capacity (a slot is reused after the connection is released).
    pub fn slot(self) -> u32 {
        self.id
    }
}

/// A watcher of connection activity (see [`crate::Stack::tcp_watch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpWatch(pub(crate) usize);

/// TCP's memory budget and its use, bytes of ring storage (see [`memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpMemory {
    /// Held now (pools included; an over-estimate by what was freed since the last recount).
    pub used: usize,
    /// The most held at once.
    pub peak: usize,
    /// Of `used`, what the pools keep of emptied rings for the next ones.
    pub pooled: usize,
    /// The pressure threshold.
    pub pressure: usize,
    /// The hard limit.
    pub limit: usize,
}

impl TcpWatch {
    /// The watcher's number (for bindings that pass it as an integer).
    pub fn index(self) -> usize {
        self.0
    }

    /// The watcher numbered `i`, if `i` can be one (the stack ignores numbers it never gave).
    pub fn from_index(i: usize) -> Option<TcpWatch> {
        (i < activity::MAX_WATCHERS).then_some(TcpWatch(i))
    }
}

/// A listening port of a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpListener(pub(crate) u16);

impl TcpListener {
    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.0
    }
}

/// Why a connection ended abnormally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TcpError {
    /// The peer answered our SYN with a reset (nothing listens there).
    #[error("connection refused")]
    Refused,
    /// The peer reset the connection.
    #[error("connection reset by peer")]
    Reset,
    /// Retransmissions went unanswered.
    #[error("connection timed out")]
    TimedOut,
    /// The application aborted the connection.
    #[error("connection aborted")]
    Aborted,
}

/// What `tcp_recv` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a Recv says how many bytes were read, or that the stream ended"]
pub enum Recv {
    /// This many bytes were copied.
    Data(usize),
    /// Nothing to read now; more may come.
    WouldBlock,
    /// The peer closed its direction and everything was read.
    Eof,
}

/// Statistics of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TcpConnStats {
    /// Current state.
    pub state: TcpState,
    /// Congestion window, bytes.
    pub cwnd: u32,
    /// Slow-start threshold, bytes.
    pub ssthresh: u32,
    /// Smoothed round-trip time.
    pub srtt: Option<Duration>,
    /// Round-trip time variation.
    pub rttvar: Duration,
    /// Current retransmission timeout.
    pub rto: Duration,
    /// Segments retransmitted (all causes).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast retransmits / recovery episodes.
    pub fast_recoveries: u64,
    /// Application bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Application bytes received in order.
    pub bytes_received: u64,
    /// Effective send MSS.
    pub mss: u16,
    /// Peer's window, bytes.
    pub snd_wnd: u32,
    /// Our advertised window, bytes.
    pub rcv_wnd: u32,
    /// Options in use: window scale (ours, peer's), SACK, timestamps.
    pub wscale: Option<(u8, u8)>,
    /// SACK in use.
    pub sack: bool,
    /// Timestamps in use.
    pub timestamps: bool,
    /// Congestion control.
    pub cc: CcAlgorithm,
    /// Our port.
    pub local_port: u16,
    /// The peer.
    pub remote: Option<std::net::SocketAddr>,
    /// Oldest unacknowledged sequence number.
    pub snd_una: u32,
    /// Next sequence number to send.
    pub snd_nxt: u32,
    /// Next sequence number expected from the peer.
    pub rcv_nxt: u32,
    /// Segments RACK marked lost (RFC 8985).
    pub rack_lost: u64,
    /// Tail loss probes sent.
    pub tlp_probes: u64,
    /// D-SACK blocks received (the peer got a segment twice).
    pub dsacks_received: u64,
    /// D-SACK blocks sent (we got a segment twice).
    pub dsacks_sent: u64,
    /// Fast recoveries undone because D-SACKs proved them spurious.
    pub recoveries_undone: u64,
    /// Retransmission timeouts proved spurious by timestamps and undone.
    pub spurious_rtos: u64,
    /// Current send-buffer capacity, bytes (grows with the window).
    pub tx_buffer: usize,
    /// Current receive-buffer capacity, bytes (grows by auto-tuning).
    pub rx_buffer: usize,
}
