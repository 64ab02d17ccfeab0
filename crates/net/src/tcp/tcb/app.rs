//! What the application asks of one connection through the `Stack` facade: queue data,
//! close its direction, give the handle up, switch the RX bypass, choose the congestion
//! control. The facade takes the view once per call and sends what the answer calls for.

use super::super::cc::CcAlgorithm;
use super::super::timer::TimerKind;
use super::super::TcpState;
use super::{Ctx, TcbMut};
use link::Instant;

/// What closing our direction did (see [`TcbMut::shutdown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shutdown {
    /// Still connecting: the connection simply ends (the engine finishes it).
    Abandon,
    /// A FIN is queued behind the data: the connection should send.
    FinQueued,
    /// Already closing or closed: nothing to do.
    Nothing,
}

impl TcbMut<'_> {
    /// The application accepted the connection: it leaves its listener.
    #[inline]
    pub(crate) fn accepted(&mut self) {
        self.state.listener = None;
    }

    /// Queue `data` in the send ring. `None` if the memory budget refused the ring its storage
    /// (back-pressure, as a full buffer); `Some(0)` if the ring is full or waits behind queued
    /// transfers (which keeps the byte order).
    #[inline]
    pub(crate) fn enqueue(&mut self, ctx: &mut Ctx, data: &[u8]) -> Option<usize> {
        let b = &mut *self.bufs;
        if data.is_empty() || b.tx.free() == 0 || b.tx.has_transfers() {
            return Some(0);
        }
        if !ctx.tx_storage.unpark(&mut b.tx.ring, ctx.mem, ctx.cfg.buffer_min) {
            return None;
        }
        Some(b.tx.enqueue(data))
    }

    /// Queue a whole buffer to be sent from where it lies (the transfer API).
    pub(crate) fn push_transfer(&mut self, data: Vec<u8>) {
        self.bufs.tx.push_transfer(data);
    }

    /// A transfer buffer whose bytes are all acknowledged, if one is waiting.
    pub(crate) fn reclaim_transfer(&mut self) -> Option<Vec<u8>> {
        self.bufs.tx.reclaim()
    }

    /// Close our direction (RFC 9293 3.10.4): a FIN follows the queued data.
    pub(crate) fn shutdown(&mut self) -> Shutdown {
        let next = match self.state.state {
            TcpState::SynSent => return Shutdown::Abandon,
            TcpState::SynReceived | TcpState::Established => TcpState::FinWait1,
            TcpState::CloseWait => TcpState::LastAck,
            _ => return Shutdown::Nothing,
        };
        self.state.state = next;
        self.tx.fin_queued = true;
        Shutdown::FinQueued
    }

    /// The application gave the handle up: the session is freed once it is done (FIN-WAIT-2
    /// waits on the linger timer from now at most).
    pub(crate) fn release(&mut self, ctx: &mut Ctx, now: Instant) {
        self.state.released = true;
        if self.state.state == TcpState::FinWait2 {
            ctx.timers.arm(self.sid.0, TimerKind::Linger, now + ctx.cfg.time_wait);
        }
    }

    /// Switch the RX bypass on or off. Switching on hands whatever is buffered to the handler
    /// (so the order is kept) and returns how many bytes, for the caller to release.
    pub(crate) fn set_rx_bypass(&mut self, ctx: &mut Ctx, on: bool) -> usize {
        self.rx.bypass = on;
        if !on {
            return 0;
        }
        let h = super::super::TcpHandle { id: self.sid.0, gen: self.state.gen };
        let (a, z) = self.bufs.rx.peek(0, usize::MAX);
        ctx.bypass.deliver(h, a);
        ctx.bypass.deliver(h, z);
        a.len() + z.len()
    }

    /// Choose the congestion control.
    pub(crate) fn set_cc(&mut self, algo: CcAlgorithm) {
        self.tx.cc.set_algorithm(algo);
    }
}

#[cfg(test)]
mod tests {
    //! The view alone (see `unit`).
    use super::super::super::{TcpConfig, TcpState};
    use super::super::unit::World;
    use super::Shutdown;

    fn shutdown_in(state: TcpState) -> (Shutdown, TcpState, bool) {
        let mut w = World::new(TcpConfig::default());
        (w.state.state, w.state.in_use) = (state, true);
        let what = w.tcb().shutdown();
        (what, w.state.state, w.tx.fin_queued)
    }

    #[test]
    fn closing_our_direction_queues_a_fin_where_rfc_9293_says_and_nowhere_else() {
        assert_eq!(shutdown_in(TcpState::Established), (Shutdown::FinQueued, TcpState::FinWait1, true));
        assert_eq!(shutdown_in(TcpState::SynReceived), (Shutdown::FinQueued, TcpState::FinWait1, true));
        assert_eq!(shutdown_in(TcpState::CloseWait), (Shutdown::FinQueued, TcpState::LastAck, true));
        assert_eq!(shutdown_in(TcpState::SynSent), (Shutdown::Abandon, TcpState::SynSent, false));
        assert_eq!(shutdown_in(TcpState::FinWait2), (Shutdown::Nothing, TcpState::FinWait2, false));
        assert_eq!(shutdown_in(TcpState::TimeWait), (Shutdown::Nothing, TcpState::TimeWait, false));
    }
}
