//! The receive window the application opens by reading: when to tell the peer at once.

use super::super::storage::StoragePool;
use super::TcbMut;

impl TcbMut<'_> {
    /// The application released `n` bytes of received data. A ring read to the end parks
    /// its storage in `pool` for other sessions. Returns true, and marks an ACK due now, if
    /// the window opened noticeably (RFC 1122 4.2.3.3 receiver-side silly window syndrome
    /// avoidance: by two segments or half the buffer, whichever is less), so that the engine
    /// sends the window update at once (a delayed ACK never holds one back).
    #[inline]
    pub(crate) fn consume_rx(&mut self, n: usize, pool: &mut StoragePool) -> bool {
        let b = &mut *self.bufs;
        b.rx.consume(n);
        if b.asm.is_empty() {
            pool.park(&mut b.rx); // read to the end: the storage serves other sessions
        }
        let free = b.rx.free() as u32;
        let rx = &mut *self.rx;
        let advertised = rx.rcv_nxt.bytes_to(rx.rcv_adv);
        let mss = self.tx.mss as u32;
        let cap = b.rx.capacity() as u32;
        if free >= advertised + (2 * mss).min(cap / 2) && self.state.state.can_receive() {
            rx.ack_now = true;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    //! The view alone (see `unit`).
    use super::super::super::ringbuf::RingBuf;
    use super::super::super::{TcpConfig, TcpState};
    use super::super::unit::World;

    /// An established connection with a 10,000-byte receive buffer holding 8,000 unread
    /// bytes, offering the 2,000 left, MSS 1,000.
    fn world() -> World {
        let mut w = World::new(TcpConfig::default());
        (w.state.state, w.state.in_use) = (TcpState::Established, true);
        w.tx.mss = 1000;
        w.rx.rcv_adv = w.rx.rcv_nxt + 2000;
        w.bufs.rx = RingBuf::new(10_000);
        w.bufs.rx.enqueue(&[1u8; 8000]);
        w
    }

    /// The application reads `n` bytes: true if a window update is to go at once.
    fn consume(w: &mut World, n: usize) -> bool {
        let (mut tcb, ctx, _) = w.view();
        tcb.consume_rx(n, ctx.rx_storage)
    }

    #[test]
    fn reading_less_than_two_segments_sends_no_window_update() {
        let mut w = world();
        assert!(!consume(&mut w, 1999));
        assert!(!w.rx.ack_now);
        assert_eq!(w.bufs.rx.len(), 6001);
    }

    #[test]
    fn reading_two_segments_sends_the_window_update_at_once() {
        let mut w = world();
        assert!(consume(&mut w, 2000));
        assert!(w.rx.ack_now, "free 4,000 >= offered 2,000 + 2 MSS");
    }

    #[test]
    fn a_connection_that_cannot_receive_any_more_sends_no_window_update() {
        let mut w = world();
        w.state.state = TcpState::CloseWait;
        assert!(!consume(&mut w, 8000));
        assert!(!w.rx.ack_now);
    }
}
