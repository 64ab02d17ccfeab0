//! One connection read as one: [`TcbMut`] borrows a session's rows of the per-connection
//! tables ([`tables`]: state, send and receive sequence variables, buffers), taken once per
//! event by the engine (`TcpEngine::tcb`), so that per-connection logic is written as methods
//! of one connection while the tables themselves stay structure-of-arrays (DESIGN.md's layout:
//! one table per Limago module, preallocated, indexed by session id). [`TcbRef`] lends the same
//! rows to read (`TcpEngine::row`); its accessors ([`read`]) are all the rest of the crate sees
//! of them, for the rows' fields are private to this module.
//!
//! Every per-connection behaviour is here, one file per concern: [`input`], [`handshake`],
//! [`output`], [`recovery`], [`tlp`], [`undo`], [`pmtu`], [`timers`], [`autotune`],
//! [`window`], [`app`], [`lifecycle`]. What needs the engine beyond the connection comes in a
//! [`Ctx`] (configuration, timers, dirty queue, challenge-ACK limit, RX-bypass handler,
//! memory budget, storage pools); what only the engine can do (answer with a reset, move the
//! session to a listener's accept queue or the TIME-WAIT queue, end or free it) is returned
//! (`input::After`, `lifecycle::Ending`). Decide, then emit: input (with recovery, TLP and
//! undo) takes only a `Meter`, the clock and the counters; output, timers and the handshake
//! yield each segment they decide as a [`transmit::Transmit`] to the [`transmit::Emit`] they
//! are given, which the engine implements with its sink and the unit tests ([`unit`]) with a
//! recorder. Nothing here calls the sink.

pub(crate) mod app;
pub(crate) mod autotune;
pub(crate) mod episode;
pub(crate) mod handshake;
pub(crate) mod input;
pub(crate) mod lifecycle;
pub(crate) mod output;
pub(crate) mod pmtu;
pub(crate) mod read;
pub(crate) mod recovery;
pub(crate) mod tables;
pub(crate) mod timers;
pub(crate) mod tlp;
pub(crate) mod transmit;
pub(crate) mod undo;
#[cfg(test)]
pub(crate) mod unit;
pub(crate) mod window;

use super::bypass::RxBypass;
use super::challenge::ChallengeLimit;
use super::dirty::DirtyQueue;
use super::memory::MemAccount;
use super::seq::SeqRange;
use super::storage::StoragePool;
use super::timer::Timers;
use super::TcpConfig;
use tables::{Buffers, RxSar, StateEntry, TxSar};

/// A session's index into the per-connection tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub(crate) u32);

impl SessionId {
    /// The row of this session in a per-connection table.
    #[inline]
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

impl From<u32> for SessionId {
    #[inline]
    fn from(sid: u32) -> Self {
        SessionId(sid)
    }
}

/// What the view's methods need of the engine beyond the connection.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    /// The engine's configuration.
    pub cfg: &'a TcpConfig,
    /// Our MSS (announced in SYNs).
    pub local_mss: u16,
    /// All sessions' timers (the view arms and cancels its own).
    pub timers: &'a mut Timers,
    /// Sessions with something to send (the view queues itself).
    pub dirty: &'a mut DirtyQueue,
    /// The stack's challenge-ACK rate limit.
    pub challenge: &'a mut ChallengeLimit,
    /// The application's RX-bypass handler.
    pub bypass: &'a mut RxBypass,
    /// Scratch copy of a scoreboard's ranges before an ACK (to find what it newly SACKed).
    pub sack_before: &'a mut Vec<SeqRange>,
    /// The memory budget of the rings and pools.
    pub mem: &'a mut MemAccount,
    /// Send-ring storage parked by empty rings.
    pub tx_storage: &'a mut StoragePool,
    /// Receive-ring storage parked by empty rings.
    pub rx_storage: &'a mut StoragePool,
}

/// The engine's parts a connection's view borrows for an event, beside the configuration:
/// the one place a [`Ctx`] is built, for the engine and for the view's unit tests.
#[derive(Debug)]
pub(crate) struct Shared {
    /// All sessions' timers.
    pub timers: Timers,
    /// Sessions with something to send.
    pub dirty: DirtyQueue,
    /// The stack's challenge-ACK rate limit.
    pub challenge: ChallengeLimit,
    /// The application's RX-bypass handler.
    pub bypass: RxBypass,
    /// Scratch copy of a scoreboard's ranges before an ACK.
    pub sack_before: Vec<SeqRange>,
    /// The memory budget of the rings and pools.
    pub mem: MemAccount,
    /// Send-ring storage parked by empty rings.
    pub tx_storage: StoragePool,
    /// Receive-ring storage parked by empty rings.
    pub rx_storage: StoragePool,
}

impl Shared {
    /// The parts for `sessions` sessions under `cfg`, within the memory budget `mem`.
    pub fn new(cfg: &TcpConfig, sessions: usize, mem: MemAccount) -> Shared {
        Shared {
            timers: Timers::new(sessions),
            dirty: DirtyQueue::new(sessions),
            challenge: ChallengeLimit::new(cfg.challenge_ack_limit),
            bypass: RxBypass::default(),
            sack_before: Vec::new(),
            mem,
            tx_storage: StoragePool::new(cfg.tx_buffer),
            rx_storage: StoragePool::new(cfg.rx_buffer),
        }
    }

    /// The context of one event: these parts, `cfg`, and our MSS for the connection's family.
    #[inline(always)]
    pub fn ctx<'a>(&'a mut self, cfg: &'a TcpConfig, local_mss: u16) -> Ctx<'a> {
        Ctx {
            cfg,
            local_mss,
            timers: &mut self.timers,
            dirty: &mut self.dirty,
            challenge: &mut self.challenge,
            bypass: &mut self.bypass,
            sack_before: &mut self.sack_before,
            mem: &mut self.mem,
            tx_storage: &mut self.tx_storage,
            rx_storage: &mut self.rx_storage,
        }
    }
}

/// One connection: its rows of the per-connection tables, borrowed for one event.
#[derive(Debug)]
pub(crate) struct TcbMut<'a> {
    sid: SessionId,
    state: &'a mut StateEntry,
    tx: &'a mut TxSar,
    rx: &'a mut RxSar,
    bufs: &'a mut Buffers,
}

impl<'a> TcbMut<'a> {
    /// A view over one session's rows (the engine takes it from its tables with
    /// `TcpEngine::tcb`; the unit tests from rows of their own).
    #[inline(always)]
    pub(crate) fn new(
        sid: SessionId,
        state: &'a mut StateEntry,
        tx: &'a mut TxSar,
        rx: &'a mut RxSar,
        bufs: &'a mut Buffers,
    ) -> Self {
        TcbMut { sid, state, tx, rx, bufs }
    }

    /// True while the session's slot holds a connection.
    #[inline(always)]
    pub(crate) fn in_use(&self) -> bool {
        self.state.in_use
    }
}

/// One connection's rows to read (the application's queries, the engine's checks, tests):
/// shared borrows, taken with `TcpEngine::row`. Its methods are in [`read`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcbRef<'a> {
    state: &'a StateEntry,
    tx: &'a TxSar,
    rx: &'a RxSar,
    bufs: &'a Buffers,
}

impl<'a> TcbRef<'a> {
    /// A view to read one session's rows.
    #[inline(always)]
    pub(crate) fn new(state: &'a StateEntry, tx: &'a TxSar, rx: &'a RxSar, bufs: &'a Buffers) -> Self {
        TcbRef { state, tx, rx, bufs }
    }
}
