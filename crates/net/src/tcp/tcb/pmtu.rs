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
    //! The view alone (see `unit`).
    use super::super::super::seq::Seq;
    use super::super::super::TcpConfig;
    use super::super::unit::World;

    #[test]
    fn a_smaller_path_mtu_shrinks_the_mss_and_resends_from_snd_una_with_the_fin_again() {
        let mut w = World::new(TcpConfig::default());
        let tx = &mut w.tx;
        (tx.snd_una, tx.snd_nxt, tx.snd_max, tx.fin_seq) = (Seq(2000), Seq(9000), Seq(9001), Some(Seq(9000)));
        assert!(!w.tcb().path_mtu_dropped(1500), "1,460 already fits");
        assert!(w.tcb().path_mtu_dropped(1400));
        let tx = &w.tx;
        assert_eq!((tx.mss, tx.snd_nxt, tx.retx_high, tx.fin_seq), (1360, Seq(2000), Seq(2000), None));
        assert!(!w.tcb().path_mtu_dropped(1400), "the same MTU again changes nothing");
    }
}
