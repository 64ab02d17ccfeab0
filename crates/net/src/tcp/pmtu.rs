//! Path MTU discovery for TCP (RFC 1191 section 6.4, RFC 5927): an ICMP "fragmentation
//! needed" that quotes a segment in flight shrinks the connection's MSS, and what is in
//! flight is sent again in segments that fit.

use super::engine::TcpEngine;
use super::lookup::{FourTuple, IPV6_EXTRA};
use super::sink::SegmentSink;

impl TcpEngine {
    /// True if the connection of tuple `t` has `seq` in flight (SND.UNA <= seq < SND.MAX):
    /// the only ICMP messages worth believing (RFC 5927 4.1).
    pub(crate) fn quotes_flight(&self, t: &FourTuple, seq: u32) -> bool {
        let Some(sid) = self.lookup.get(t) else { return false };
        self.row(sid).in_flight_has(seq)
    }

    /// The path MTU of the connection of tuple `t` dropped to `mtu`: shrink its MSS and resend
    /// from SND.UNA (as Linux's `tcp_simple_retransmit`; the congestion window stays).
    pub(crate) fn on_path_mtu<S: SegmentSink>(&mut self, out: &mut S, t: &FourTuple, mtu: usize) {
        let Some(sid) = self.lookup.get(t) else { return };
        // The view counts 40 bytes of IPv4 and TCP headers; IPv6's header is 20 bytes longer.
        let mtu = if t.is_v6() { mtu.saturating_sub(IPV6_EXTRA) } else { mtu };
        if !self.tcb(sid).0.path_mtu_dropped(mtu) {
            return;
        }
        self.mark_dirty(sid);
        let now = out.now();
        self.flush_dirty(out, now)
    }
}
