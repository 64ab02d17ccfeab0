//! The world of the view's unit tests: one connection's rows, the engine parts its context
//! borrows, and a [`Capture`] that is the clock, the counters and the recorder of what the
//! output yields. No engine, no sink, no link: an event in, the decision (and the segments
//! decided) out. smoltcp's socket tests are the model.

use super::super::memory::MemAccount;
use super::super::ringbuf::RingBuf;
use super::super::seq::Seq;
use super::super::sink::Meter;
use super::super::timer::TimerKind;
use super::super::{TcpConfig, TcpError, TcpState};
use super::input::{After, Verdict};
use super::tables::{Buffers, RxSar, StateEntry, TxSar};
use super::transmit::{Emit, Transmit};
use super::{Ctx, SessionId, Shared, TcbMut};
use crate::counters::{Counter, Counters};
use link::Instant;
use std::time::Duration;
use wire::{TcpOptions, TcpRepr};

/// Our initial sequence number.
pub(crate) const ISS: u32 = 1000;
/// The peer's.
pub(crate) const PEER_ISS: u32 = 5000;
/// Each side's window and ring size.
pub(crate) const WINDOW: u32 = 64 << 10;
/// Our MSS.
pub(crate) const MSS: u16 = 1460;

/// Segments as the output yielded them: the header and a copy of the payload.
pub(crate) type Sent = Vec<(TcpRepr, Vec<u8>)>;

/// The clock and counters, and a recorder of the segments the output yields.
#[derive(Debug)]
pub(crate) struct Capture {
    /// The current time.
    pub now: Instant,
    /// What was counted.
    pub counters: Counters,
    /// Segments the link still takes before it is full.
    pub room: usize,
    /// The segments yielded: the header and a copy of the payload.
    pub sent: Sent,
}

impl Meter for Capture {
    fn now(&self) -> Instant {
        self.now
    }

    fn counters(&mut self) -> &mut Counters {
        &mut self.counters
    }
}

impl Emit for Capture {
    fn ip_mtu(&self) -> usize {
        1500
    }

    fn emit(&mut self, seg: &Transmit<'_>) -> bool {
        if self.room == 0 {
            return false;
        }
        self.room -= 1;
        let mut payload = vec![0u8; seg.len];
        assert_eq!(seg.queue.copy_out(seg.data_off, &mut payload), seg.len, "the payload is queued");
        self.sent.push((seg.repr, payload));
        true
    }
}

/// One connection's rows and the engine parts its context borrows.
pub(crate) struct World {
    pub cfg: TcpConfig,
    pub state: StateEntry,
    pub tx: TxSar,
    pub rx: RxSar,
    pub bufs: Buffers,
    pub shared: Shared,
    pub io: Capture,
}

impl World {
    /// A fresh slot's rows with `cfg`: CLOSED, our ISS and MSS, nothing agreed, 64 KiB
    /// rings with storage.
    pub fn new(cfg: TcpConfig) -> World {
        let mut bufs = Buffers::new(WINDOW as usize, WINDOW as usize);
        bufs.tx.ring = RingBuf::new(WINDOW as usize);
        bufs.rx = RingBuf::new(WINDOW as usize);
        World {
            state: StateEntry::default(),
            tx: TxSar::new(ISS, MSS, cfg.cc, cfg.min_rto, cfg.max_rto),
            rx: RxSar::default(),
            bufs,
            shared: Shared::new(&cfg, 1, MemAccount::new(usize::MAX / 2, usize::MAX / 2)),
            io: Capture { now: Instant::ZERO, counters: Counters::default(), room: usize::MAX, sent: Vec::new() },
            cfg,
        }
    }

    /// An ESTABLISHED connection with the default configuration: both SYNs acknowledged,
    /// nothing in flight, a 64 KiB window each way, no options.
    pub fn established() -> World {
        World::established_with(TcpConfig::default())
    }

    /// [`World::established`] with `cfg`.
    pub fn established_with(cfg: TcpConfig) -> World {
        let mut w = World::new(cfg);
        w.state.state = TcpState::Established;
        w.state.in_use = true;
        let tx = &mut w.tx;
        (tx.snd_una, tx.snd_nxt, tx.snd_max) = (Seq(ISS + 1), Seq(ISS + 1), Seq(ISS + 1));
        (tx.snd_wnd, tx.max_snd_wnd) = (WINDOW, WINDOW);
        w.rx = RxSar {
            irs: Seq(PEER_ISS),
            rcv_nxt: Seq(PEER_ISS + 1),
            rcv_adv: Seq(PEER_ISS + 1) + WINDOW,
            last_ack_sent: Seq(PEER_ISS + 1),
            ..RxSar::default()
        };
        w
    }

    /// The connection as the engine lends it for one event: the view, its context and the
    /// clock, counters and recorder.
    pub fn view(&mut self) -> (TcbMut<'_>, Ctx<'_>, &mut Capture) {
        let ctx = self.shared.ctx(&self.cfg, MSS);
        let tcb = TcbMut::new(SessionId(0), &mut self.state, &mut self.tx, &mut self.rx, &mut self.bufs);
        (tcb, ctx, &mut self.io)
    }

    /// The view alone (for methods that need no context).
    pub fn tcb(&mut self) -> TcbMut<'_> {
        self.view().0
    }

    /// The connection takes one segment: the verdict and what the engine is to do.
    pub fn input(&mut self, repr: &TcpRepr, payload: &[u8]) -> (Verdict, After) {
        let (mut tcb, mut ctx, io) = self.view();
        tcb.input(&mut ctx, io, repr, payload)
    }

    /// The connection's output now: the segments it yielded.
    pub fn output(&mut self) -> Sent {
        let now = self.io.now;
        let (mut tcb, mut ctx, io) = self.view();
        tcb.output(&mut ctx, io, now);
        std::mem::take(&mut self.io.sent)
    }

    /// Timer `kind` fires now (taken off the timers, as the engine pops it): whether the
    /// connection ends, and the segments it yielded.
    pub fn fire(&mut self, kind: TimerKind) -> (Option<Option<TcpError>>, Sent) {
        let now = self.io.now;
        self.shared.timers.cancel(0, kind);
        let (mut tcb, mut ctx, io) = self.view();
        let end = tcb.on_timer(&mut ctx, io, kind, now);
        (end, std::mem::take(&mut self.io.sent))
    }

    /// Move the clock to timer `kind`'s deadline (which must be armed).
    pub fn until(&mut self, kind: TimerKind) {
        self.io.now = self.shared.timers.deadline(0, kind).unwrap_or_else(|| panic!("{kind:?} armed"));
    }

    /// Move the clock on by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.io.now = self.io.now + d;
    }

    /// Queue `data` to send.
    pub fn queue(&mut self, data: &[u8]) {
        assert_eq!(self.bufs.tx.enqueue(data), data.len(), "the send ring takes it all");
    }

    /// How often `c` was counted.
    pub fn count(&self, c: Counter) -> u64 {
        self.io.counters.get(c)
    }
}

/// A segment from the peer, no options.
pub(crate) fn seg(seq: u32, ack: u32, flags: u8) -> TcpRepr {
    TcpRepr { src_port: 5000, dst_port: 80, seq, ack, flags, window: 1000, urgent: 0, options: TcpOptions::default() }
}
