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
    //! The view alone: rows of its own, no engine, no sink, no link.
    use super::super::super::ringbuf::RingBuf;
    use super::super::super::storage::StoragePool;
    use super::super::super::{TcpConfig, TcpState};
    use super::super::tables::{Buffers, RxSar, StateEntry, TxSar};
    use super::super::TcbMut;

    /// An established connection with a 10,000-byte receive buffer holding 8,000 unread
    /// bytes, offering the 2,000 left, MSS 1,000.
    fn rows() -> (StateEntry, TxSar, RxSar, Buffers) {
        let cfg = TcpConfig::default();
        let state = StateEntry { state: TcpState::Established, in_use: true, ..StateEntry::default() };
        let tx = TxSar::new(1, 1000, cfg.cc, cfg.min_rto, cfg.max_rto);
        let mut rx = RxSar::default();
        rx.rcv_adv = rx.rcv_nxt + 2000;
        let mut bufs = Buffers::new(10_000, 10_000);
        bufs.rx = RingBuf::new(10_000);
        bufs.rx.enqueue(&[1u8; 8000]);
        (state, tx, rx, bufs)
    }

    #[test]
    fn reading_less_than_two_segments_sends_no_window_update() {
        let (mut s, mut tx, mut rx, mut b) = rows();
        let mut pool = StoragePool::new(10_000);
        assert!(!TcbMut::new(super::super::SessionId(0), &mut s, &mut tx, &mut rx, &mut b).consume_rx(1999, &mut pool));
        assert!(!rx.ack_now);
        assert_eq!(b.rx.len(), 6001);
    }

    #[test]
    fn reading_two_segments_sends_the_window_update_at_once() {
        let (mut s, mut tx, mut rx, mut b) = rows();
        let mut pool = StoragePool::new(10_000);
        assert!(TcbMut::new(super::super::SessionId(0), &mut s, &mut tx, &mut rx, &mut b).consume_rx(2000, &mut pool));
        assert!(rx.ack_now, "free 4,000 >= offered 2,000 + 2 MSS");
    }

    #[test]
    fn a_connection_that_cannot_receive_any_more_sends_no_window_update() {
        let (mut s, mut tx, mut rx, mut b) = rows();
        s.state = TcpState::CloseWait;
        let mut pool = StoragePool::new(10_000);
        assert!(!TcbMut::new(super::super::SessionId(0), &mut s, &mut tx, &mut rx, &mut b).consume_rx(8000, &mut pool));
        assert!(!rx.ack_now);
    }
}
