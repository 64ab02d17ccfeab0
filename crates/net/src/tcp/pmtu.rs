//! Path MTU discovery for TCP (RFC 1191 section 6.4, RFC 5927): an ICMP "fragmentation
//! needed" that quotes a segment in flight shrinks the connection's MSS, and what is in
//! flight is sent again in segments that fit.

use super::engine::TcpEngine;
use super::lookup::FourTuple;
use super::sink::SegmentSink;
use std::net::SocketAddrV4;

impl TcpEngine {
    /// True if a connection from `local_port` to `remote` has `seq` in flight
    /// (SND.UNA <= seq < SND.MAX): the only ICMP messages worth believing (RFC 5927 4.1).
    pub(crate) fn quotes_flight(&self, local_port: u16, remote: SocketAddrV4, seq: u32) -> bool {
        let t = FourTuple { local_port, remote_ip: *remote.ip(), remote_port: remote.port() };
        let Some(sid) = self.lookup.get(&t) else { return false };
        self.row(sid).in_flight_has(seq)
    }

    /// The path MTU towards `remote` dropped to `mtu`: shrink the connection's MSS and resend
    /// from SND.UNA (as Linux's `tcp_simple_retransmit`; the congestion window stays).
    pub(crate) fn on_path_mtu<S: SegmentSink>(
        &mut self,
        out: &mut S,
        local_port: u16,
        remote: SocketAddrV4,
        mtu: usize,
    ) {
        let t = FourTuple { local_port, remote_ip: *remote.ip(), remote_port: remote.port() };
        let Some(sid) = self.lookup.get(&t) else { return };
        if !self.tcb(sid).0.path_mtu_dropped(mtu) {
            return;
        }
        self.mark_dirty(sid);
        let now = out.now();
        self.flush_dirty(out, now)
    }
}
