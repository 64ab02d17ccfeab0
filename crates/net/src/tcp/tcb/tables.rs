//! The rows of the per-session tables, one table per Limago module, each indexed by session
//! id: the state table, the send (tx SAR) and receive (rx SAR) sequence tables, and the
//! session buffers. Their fields are private to the view (`tcb`): the engine holds the tables
//! and lends rows, everything that reads or writes a field is a method of the view.

use super::super::assembler::Assembler;
use super::super::cc::{CcAlgorithm, Congestion};
use super::super::lookup::FourTuple;
use super::super::memory::MemAccount;
use super::super::rack::Rack;
use super::super::ringbuf::RingBuf;
use super::super::rtt::RttEstimator;
use super::super::sack::Scoreboard;
use super::super::sendq::SendQueue;
use super::super::seq::{dist, Seq, SeqRange};
use super::super::storage::StoragePool;
use super::super::{TcpError, TcpState};
use super::episode::{Prr, RtoUndo, UndoPoint};
use link::Instant;
use std::time::Duration;

/// State-table entry: what the session is and who owns it.
#[derive(Debug, Clone, Copy, Default)]
pub struct StateEntry {
    /// Generation, bumped when the slot is reused (stale handles are refused).
    pub(super) gen: u32,
    /// Connection state.
    pub(super) state: TcpState,
    /// True while the slot holds a session.
    pub(super) in_use: bool,
    /// Peer and ports.
    pub(super) tuple: FourTuple,
    /// Listener that created it (passive opens) until accepted.
    pub(super) listener: Option<u16>,
    /// The application gave the handle up (close/abort); free the slot when done.
    pub(super) released: bool,
    /// Why the connection ended, if abnormally.
    pub(super) error: Option<TcpError>,
}

/// Longest a peer may delay the ACK of a lone in-order segment (RFC 8985 7.2: WCDelAckT).
pub const WORST_DELAYED_ACK: Duration = Duration::from_millis(200);
/// [`WORST_DELAYED_ACK`] in nanoseconds.
pub const WORST_DELAYED_ACK_NANOS: u64 = WORST_DELAYED_ACK.as_nanos() as u64;

/// Send sequence variables (RFC 9293 3.3.1), congestion and loss-recovery state.
#[derive(Debug, Clone)]
pub struct TxSar {
    /// Initial send sequence number.
    pub(super) iss: Seq,
    /// Oldest unacknowledged sequence number.
    pub(super) snd_una: Seq,
    /// Next sequence number to send.
    pub(super) snd_nxt: Seq,
    /// Highest sequence number sent so far.
    pub(super) snd_max: Seq,
    /// Peer's window, bytes (already scaled).
    pub(super) snd_wnd: u32,
    /// Largest window the peer ever offered (RFC 5961 ACK check).
    pub(super) max_snd_wnd: u32,
    /// Segment sequence number of the last window update.
    pub(super) snd_wl1: Seq,
    /// Segment acknowledgment number of the last window update.
    pub(super) snd_wl2: Seq,
    /// Peer's window-scale shift.
    pub(super) snd_shift: u8,
    /// Effective MSS of our segments' payload.
    pub(super) mss: u16,
    /// The application asked to close: send FIN after the data.
    pub(super) fin_queued: bool,
    /// Sequence number of our FIN once sent.
    pub(super) fin_seq: Option<Seq>,
    /// Duplicate ACKs in a row.
    pub(super) dupacks: u32,
    /// In loss recovery until `snd_una` passes this point.
    pub(super) recover: Option<Seq>,
    /// Highest sequence retransmitted in this recovery.
    pub(super) retx_high: Seq,
    /// Retransmit the segment at `snd_una` at the next output, regardless of the window.
    pub(super) retx_front: bool,
    /// Congestion control.
    pub(super) cc: Congestion,
    /// RTT estimation and RTO.
    pub(super) rtt: RttEstimator,
    /// The segment being timed for an RTT sample (Karn: discarded on retransmission).
    pub(super) timed: Option<(Seq, Instant)>,
    /// Consecutive timeouts.
    pub(super) retries: u32,
    /// SACK scoreboard.
    pub(super) sb: Scoreboard,
    /// Zero-window probes sent in a row (or the silly-window override timer fired).
    pub(super) probes: u32,
    /// When the peer's closed window started holding back our data (probing began).
    pub(super) zero_window_since: Option<Instant>,
    /// New data waits for a wider window (sender silly-window avoidance).
    pub(super) sws_hold: bool,
    /// Keep-alive probes sent without answer.
    pub(super) keepalives: u32,
    /// Retransmitted segments.
    pub(super) retransmits: u64,
    /// Retransmission timeouts.
    pub(super) timeouts: u64,
    /// Recovery episodes.
    pub(super) fast_recoveries: u64,
    /// Application bytes acknowledged.
    pub(super) bytes_acked: u64,
    /// The retransmission timer currently runs as a loss-probe timeout (RFC 8985 7.2).
    pub(super) tlp_armed: bool,
    /// A loss probe is due at the next output.
    pub(super) tlp_due: bool,
    /// SND.MAX after the outstanding loss probe went out (TLPRxtOut / TLPHighRxt).
    pub(super) tlp_high: Option<Seq>,
    /// The outstanding probe was a retransmission (not new data).
    pub(super) tlp_retx: bool,
    /// Recovery entered because the probe was SACKed above holes: every hole below the
    /// highest SACK is lost (the probe left a PTO after them).
    pub(super) tail_recovery: bool,
    /// Loss probes sent.
    pub(super) tlp_probes: u64,
    /// The last fast recovery, while it may still be undone: (SND.UNA when it started,
    /// cwnd and ssthresh before it, `retransmits` when it started).
    pub(super) undo: Option<UndoPoint>,
    /// Segments of the undo episode the peer reported as duplicates (D-SACK).
    pub(super) undo_dsacked: u64,
    /// Duplicate ACKs (or SACKed segments above a hole) that mean loss on this connection:
    /// the configured threshold, raised when a recovery proves spurious (reordering).
    pub(super) reordering: u32,
    /// Recoveries undone because every retransmission was a duplicate.
    pub(super) undone: u64,
    /// RACK loss detection: the segments in flight (see `rack`).
    pub(super) rack: Rack,
    /// Proportional Rate Reduction during the current recovery (RFC 6937).
    pub(super) prr: Prr,
    /// After a retransmission timeout, until the first ACK that advances: what undoing it
    /// restores if that ACK shows the timeout was spurious (Eifel, RFC 3522/4015).
    pub(super) rto_undo: Option<RtoUndo>,
    /// Segments RACK marked lost.
    pub(super) rack_lost: u64,
    /// Retransmission timeouts found spurious and undone.
    pub(super) spurious_rtos: u64,
    /// D-SACK blocks received on this connection.
    pub(super) dsacks_received: u64,
}

impl TxSar {
    /// Fresh send state for a new connection.
    pub(crate) fn new(iss: u32, mss: u16, algo: CcAlgorithm, min_rto: Duration, max_rto: Duration) -> Self {
        TxSar {
            iss: Seq(iss),
            snd_una: Seq(iss),
            snd_nxt: Seq(iss),
            snd_max: Seq(iss),
            snd_wnd: 0,
            max_snd_wnd: 0,
            snd_wl1: Seq(0),
            snd_wl2: Seq(0),
            snd_shift: 0,
            mss,
            fin_queued: false,
            fin_seq: None,
            dupacks: 0,
            recover: None,
            retx_high: Seq(iss),
            retx_front: false,
            cc: Congestion::new(algo, mss as u32),
            rtt: RttEstimator::new(min_rto, max_rto),
            timed: None,
            retries: 0,
            sb: Scoreboard::default(),
            probes: 0,
            zero_window_since: None,
            sws_hold: false,
            keepalives: 0,
            retransmits: 0,
            timeouts: 0,
            fast_recoveries: 0,
            bytes_acked: 0,
            tlp_armed: false,
            tlp_due: false,
            tlp_high: None,
            tlp_retx: false,
            tail_recovery: false,
            tlp_probes: 0,
            undo: None,
            undo_dsacked: 0,
            reordering: 3,
            undone: 0,
            rack: Rack::default(),
            prr: Prr::default(),
            rto_undo: None,
            rack_lost: 0,
            spurious_rtos: 0,
            dsacks_received: 0,
        }
    }

    /// Bytes sent and not yet acknowledged.
    pub(crate) fn in_flight(&self) -> u32 {
        dist(self.snd_una, self.snd_max)
    }

    /// Bytes believed in the network with SACK (RFC 6675 pipe, as Linux counts it): in
    /// flight, less what was SACKed and what is marked lost and not sent again.
    pub(crate) fn pipe(&self) -> u32 {
        self.in_flight().saturating_sub(self.sb.sacked).saturating_sub(self.rack.lost_bytes)
    }

    /// The retransmission timeout to arm now: the RFC 6298 estimate, and with a lone new
    /// segment in flight at least SRTT plus the worst-case delayed ACK (as RFC 8985 7.2 does
    /// for the probe timeout). The peer may hold the ACK of a lone in-order segment that long;
    /// a retransmission fills a hole and is acknowledged at once, so it needs no allowance.
    pub(crate) fn rto(&self) -> Duration {
        let rto = self.rtt.rto();
        match self.rtt.srtt_nanos() {
            Some(srtt) if self.in_flight() <= self.mss as u32 && self.retries == 0 && self.recover.is_none() => {
                rto.max(Duration::from_nanos(srtt.saturating_add(WORST_DELAYED_ACK_NANOS)))
            }
            _ => rto,
        }
    }
}

/// Receive sequence variables and option state.
#[derive(Debug, Clone, Copy, Default)]
pub struct RxSar {
    /// Initial receive sequence number.
    pub(super) irs: Seq,
    /// Next sequence number expected.
    pub(super) rcv_nxt: Seq,
    /// Right edge of the window we last advertised.
    pub(super) rcv_adv: Seq,
    /// Our window-scale shift (0 if the option was not agreed).
    pub(super) rcv_shift: u8,
    /// The peer's FIN has been received.
    pub(super) fin_received: bool,
    /// In-order segments received since our last ACK.
    pub(super) segs_unacked: u32,
    /// An ACK must go out at the next output.
    pub(super) ack_now: bool,
    /// That ACK is a challenge ACK (RFC 5961), counted as sent when it leaves.
    pub(super) challenge_pending: bool,
    /// Window scaling agreed (both SYNs carried the option).
    pub(super) ws_ok: bool,
    /// Timestamps agreed.
    pub(super) ts_ok: bool,
    /// Latest peer timestamp to echo (TS.Recent).
    pub(super) ts_recent: u32,
    /// The acknowledgment number of the last ACK we sent (Last.ACK.sent, RFC 7323 4.3).
    pub(super) last_ack_sent: Seq,
    /// SACK agreed.
    pub(super) sack_ok: bool,
    /// Application bytes received in order.
    pub(super) bytes_received: u64,
    /// In-order data goes to the stack's RX-bypass handler, not the receive buffer.
    pub(super) bypass: bool,
    /// A duplicate segment to report in the next ACK's first SACK block (D-SACK, RFC 2883).
    pub(super) dsack: Option<SeqRange>,
    /// D-SACK blocks sent on this connection.
    pub(super) dsacks_sent: u64,
    /// RCV.NXT when the current auto-tuning round started (see `autotune`).
    pub(super) tune_mark: Seq,
    /// When the current auto-tuning round started.
    pub(super) tune_time: Option<Instant>,
    /// Bytes per nanosecond delivered in the last auto-tuning round.
    pub(super) tune_rate: f64,
    /// The receiver's RTT estimate, from the timestamps the peer echoes.
    pub(super) rcv_rtt: Option<Duration>,
    /// The shortest time an offered window took to arrive: never less than an RTT, and far
    /// finer than the 1 ms timestamp tick.
    pub(super) window_time: Option<Duration>,
    /// The window being timed: when it was offered, and the sequence number ending it.
    pub(super) window_timing: Option<(Instant, Seq)>,
}

/// A session's buffers: send queue (unacknowledged and unsent data: the send ring, then
/// queued transfers), receive ring (in-order unread data, out-of-order data ahead of it) and
/// the reassembly map.
#[derive(Debug, Default)]
pub struct Buffers {
    /// Data accepted from the application, from `snd_una` on.
    pub(super) tx: SendQueue,
    /// Data received, from the first unread byte on.
    pub(super) rx: RingBuf,
    /// Out-of-order ranges beyond `rcv_nxt`.
    pub(super) asm: Assembler,
}

impl Buffers {
    /// Buffers of the given sizes, parked: their storage comes from the stack's pool when
    /// data first goes in.
    pub(crate) fn new(tx: usize, rx: usize) -> Self {
        Buffers { tx: SendQueue::parked(tx), rx: RingBuf::parked(rx), asm: Assembler::new() }
    }

    /// The memory recount (`TcpEngine::recount_memory`): with `shed`, emptied rings give their
    /// storage to the pools; returns the bytes of ring storage still held.
    #[inline]
    pub(crate) fn recount(
        &mut self,
        shed: bool,
        tx_pool: &mut StoragePool,
        rx_pool: &mut StoragePool,
        mem: &MemAccount,
    ) -> usize {
        if shed {
            if self.tx.ring.is_empty() {
                tx_pool.shed(&mut self.tx.ring, mem);
            }
            if self.asm.is_empty() {
                rx_pool.shed(&mut self.rx, mem);
            }
        }
        self.tx.ring.storage_len() + self.rx.storage_len()
    }
}

impl StateEntry {
    /// True for a connection over IPv6 (its MSS is 20 bytes under IPv4's).
    #[inline]
    pub(crate) fn is_v6(&self) -> bool {
        self.tuple.is_v6()
    }

    /// True while the slot holds a session.
    #[inline]
    pub(crate) fn in_use(&self) -> bool {
        self.in_use
    }

    /// True if a handle of generation `gen` is live: the slot holds its session and the
    /// application has not given it up.
    #[inline]
    pub(crate) fn live(&self, gen: u32) -> bool {
        self.in_use && self.gen == gen && !self.released
    }
}
