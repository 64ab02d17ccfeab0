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
