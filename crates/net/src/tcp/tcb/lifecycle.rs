//! A session slot's life: opened for a new connection, its buffers released, freed or ended.
//! The engine keeps what is shared (the lookup table, the free list, listeners, timers'
//! heap); the rows of the connection change here.

use super::super::lookup::FourTuple;
use super::super::{TcpError, TcpState};
use super::tables::{Buffers, RxSar, StateEntry, TxSar};
use super::{Ctx, TcbMut};

/// How an ended connection leaves (see [`TcbMut::end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Released by the application, or still held by a listener (whose accept queue it
    /// leaves): free the slot.
    Free(Option<u16>),
    /// Kept in CLOSED for the application to see; `tuple` leaves the lookup table.
    Closed(FourTuple),
}

impl TcbMut<'_> {
    /// Fresh rows for a new connection of `tuple` in `state` with initial send sequence `iss`;
    /// whatever the slot's buffers held is dropped (the engine then sizes them, see
    /// [`TcbMut::size_buffers`]).
    pub(crate) fn open(&mut self, ctx: &mut Ctx, tuple: FourTuple, state: TcpState, iss: u32) {
        let gen = self.state.gen.wrapping_add(1);
        *self.state = StateEntry { gen, state, in_use: true, tuple, listener: None, released: false, error: None };
        *self.tx = TxSar::new(iss, ctx.local_mss, ctx.cfg.cc, ctx.cfg.min_rto, ctx.cfg.max_rto);
        self.tx.reordering = ctx.cfg.dup_thresh;
        *self.rx = RxSar::default();
        self.release_buffers(ctx);
    }

    /// Rings of the configured size, whose storage comes from the pool when written.
    pub(crate) fn size_buffers(&mut self, ctx: &Ctx) {
        let b = &mut *self.bufs;
        if b.tx.capacity() != ctx.cfg.tx_buffer || b.rx.capacity() != ctx.cfg.rx_buffer {
            *b = Buffers::new(ctx.cfg.tx_buffer, ctx.cfg.rx_buffer);
        }
    }

    /// The connection belongs to `listener` until accepted.
    pub(crate) fn held_by(&mut self, listener: u16) {
        self.state.listener = Some(listener);
    }

    /// The application gave the handle up (abort).
    pub(crate) fn set_released(&mut self) {
        self.state.released = true;
    }

    /// Drop whatever the buffers hold and park their storage.
    pub(crate) fn release_buffers(&mut self, ctx: &mut Ctx) {
        let b = &mut *self.bufs;
        b.tx.clear();
        b.rx.consume(usize::MAX);
        b.asm = Default::default();
        ctx.tx_storage.park_now(&mut b.tx.ring);
        ctx.rx_storage.park_now(&mut b.rx);
    }

    /// A session the application released that reached TIME-WAIT needs no buffers any more
    /// (all it sent is acknowledged, nobody reads what it received): their storage goes to
    /// the pool for other sessions instead of every new session touching fresh memory while
    /// thousands linger.
    pub(crate) fn park_buffers_if_done(&mut self, ctx: &mut Ctx) {
        if self.state.released && self.state.state == TcpState::TimeWait {
            self.release_buffers(ctx);
        }
    }

    /// The slot is freed: `None` if it held no connection, else its tuple (to leave the lookup
    /// table) and, for a passive open still in SYN-RECEIVED, the listener whose half-open
    /// count it leaves. The engine then releases the buffers.
    pub(crate) fn free(&mut self) -> Option<(FourTuple, Option<u16>)> {
        let s = &mut *self.state;
        if !s.in_use {
            return None;
        }
        let half_open = if s.state == TcpState::SynReceived { s.listener } else { None };
        s.in_use = false;
        s.state = TcpState::Closed;
        Some((s.tuple, half_open))
    }

    /// The connection ended (with `error` if abnormally and none was recorded before).
    pub(crate) fn end(&mut self, error: Option<TcpError>) -> Ending {
        let s = &mut *self.state;
        if s.error.is_none() {
            s.error = error;
        }
        if s.released || s.listener.is_some() {
            // `free` must still see SYN-RECEIVED to give the listener's half-open slot back;
            // it sets CLOSED itself.
            Ending::Free(s.listener)
        } else {
            s.state = TcpState::Closed;
            Ending::Closed(s.tuple)
        }
    }
}

#[cfg(test)]
mod tests {
    //! The view alone (see `unit`).
    use super::super::super::lookup::FourTuple;
    use super::super::super::{TcpConfig, TcpError, TcpState};
    use super::super::tables::StateEntry;
    use super::super::unit::World;
    use super::Ending;
    use std::net::{IpAddr, Ipv4Addr};

    const TUPLE: FourTuple = FourTuple {
        local_port: 80,
        remote_ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        remote_port: 5000,
        local_ip: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
    };

    fn world(state: TcpState, listener: Option<u16>, released: bool) -> World {
        let mut w = World::new(TcpConfig::default());
        w.state = StateEntry { state, in_use: true, tuple: TUPLE, listener, released, ..StateEntry::default() };
        w
    }

    #[test]
    fn a_connection_the_application_still_holds_ends_closed_with_its_first_error() {
        let mut w = world(TcpState::Established, None, false);
        let mut tcb = w.tcb();
        assert_eq!(tcb.end(Some(TcpError::Reset)), Ending::Closed(TUPLE));
        assert_eq!(tcb.end(Some(TcpError::TimedOut)), Ending::Closed(TUPLE));
        let s = w.state;
        assert_eq!((s.state, s.error, s.in_use), (TcpState::Closed, Some(TcpError::Reset), true));
    }

    #[test]
    fn a_released_or_unaccepted_connection_is_freed_and_a_half_open_one_gives_its_slot_back() {
        let mut w = world(TcpState::SynReceived, Some(80), false);
        let mut tcb = w.tcb();
        assert_eq!(tcb.end(None), Ending::Free(Some(80)));
        assert_eq!(tcb.free(), Some((TUPLE, Some(80))), "SYN-RECEIVED: the listener's half-open count");
        assert_eq!(tcb.free(), None, "freed once");
        assert_eq!((w.state.state, w.state.in_use), (TcpState::Closed, false));
        let mut w = world(TcpState::LastAck, None, true);
        let mut tcb = w.tcb();
        assert_eq!(tcb.end(None), Ending::Free(None));
        assert_eq!(tcb.free(), Some((TUPLE, None)));
    }
}
