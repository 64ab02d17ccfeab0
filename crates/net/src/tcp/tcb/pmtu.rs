//! Path MTU discovery for TCP (RFC 1191 section 6.4, RFC 5927): the path towards the peer
//! shrank, so the connection's MSS does, and what is in flight is sent again in segments
//! that fit (as Linux's `tcp_simple_retransmit`; the congestion window stays).

use super::super::seq::le;
use super::TcbMut;

impl TcbMut<'_> {
    /// The path MTU dropped to `mtu`: shrink the MSS and resend from SND.UNA. False if the
    /// MSS already fits (nothing changes).
    pub(crate) fn path_mtu_dropped(&mut self, mtu: usize) -> bool {
        let options = if self.rx.ts_ok { 12 } else { 0 };
        let mss = mtu.saturating_sub(40 + options).max(64) as u16;
        let tx = &mut *self.tx;
        if mss >= tx.mss {
            return false;
        }
        tx.mss = mss;
        tx.cc.set_mss(mss as u32);
        tx.snd_nxt = tx.snd_una;
        tx.retx_high = tx.snd_una;
        tx.sb.clear();
        tx.timed = None;
        if let Some(f) = tx.fin_seq {
            if le(tx.snd_una, f) {
                tx.fin_seq = None;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    //! The view alone: rows of its own, no engine, no sink, no link.
    use super::super::super::seq::Seq;
    use super::super::super::TcpConfig;
    use super::super::tables::{Buffers, RxSar, StateEntry, TxSar};
    use super::super::{SessionId, TcbMut};

    #[test]
    fn a_smaller_path_mtu_shrinks_the_mss_and_resends_from_snd_una_with_the_fin_again() {
        let cfg = TcpConfig::default();
        let (mut s, mut rx, mut b) = (StateEntry::default(), RxSar::default(), Buffers::default());
        let mut tx = TxSar::new(1000, 1460, cfg.cc, cfg.min_rto, cfg.max_rto);
        tx.snd_una = Seq(2000);
        tx.snd_nxt = Seq(9000);
        tx.snd_max = Seq(9001);
        tx.fin_seq = Some(Seq(9000));
        let mut tcb = TcbMut::new(SessionId(0), &mut s, &mut tx, &mut rx, &mut b);
        assert!(!tcb.path_mtu_dropped(1500), "1,460 already fits");
        assert!(tcb.path_mtu_dropped(1400));
        assert_eq!((tx.mss, tx.snd_nxt, tx.retx_high, tx.fin_seq), (1360, Seq(2000), Seq(2000), None));
        let mut tcb = TcbMut::new(SessionId(0), &mut s, &mut tx, &mut rx, &mut b);
        assert!(!tcb.path_mtu_dropped(1400), "the same MTU again changes nothing");
    }
}
