//! One connection read: what the application's queries, the engine's checks and the tests
//! see of a session's rows through [`TcbRef`], without reaching its fields.

use super::super::lookup::FourTuple;
use super::super::ringbuf::RingBuf;
use super::super::sendq::SendQueue;
use super::super::seq::{gt, le, lt, Seq};
use super::super::{TcpConnStats, TcpError, TcpState};
use super::TcbRef;
use wire::TcpRepr;

impl<'a> TcbRef<'a> {
    /// The connection's state.
    #[inline]
    pub(crate) fn state(&self) -> TcpState {
        self.state.state
    }

    /// True while the session's slot holds a connection.
    #[inline]
    pub(crate) fn in_use(&self) -> bool {
        self.state.in_use
    }

    /// The slot's generation (bumped when the slot is reused).
    #[inline]
    pub(crate) fn gen(&self) -> u32 {
        self.state.gen
    }

    /// True once the application gave the handle up.
    #[inline]
    pub(crate) fn released(&self) -> bool {
        self.state.released
    }

    /// The listener that created it (passive opens), until accepted.
    #[inline]
    pub(crate) fn listener(&self) -> Option<u16> {
        self.state.listener
    }

    /// Our port and the peer.
    #[inline]
    pub(crate) fn tuple(&self) -> FourTuple {
        self.state.tuple
    }

    /// Why the connection ended, if abnormally.
    #[inline]
    pub(crate) fn error(&self) -> Option<TcpError> {
        self.state.error
    }

    /// The application asked to close our direction (a FIN follows the data).
    #[inline]
    pub(crate) fn fin_queued(&self) -> bool {
        self.tx.fin_queued
    }

    /// The peer's FIN has been received.
    #[inline]
    pub(crate) fn fin_received(&self) -> bool {
        self.rx.fin_received
    }

    /// The send queue (ring and transfers), to read its fill and room.
    #[inline]
    pub(crate) fn send_queue(&self) -> &'a SendQueue {
        &self.bufs.tx
    }

    /// The receive ring: in-order data not yet read.
    #[inline]
    pub(crate) fn recv_ring(&self) -> &'a RingBuf {
        &self.bufs.rx
    }

    /// True if `seq` is in flight (SND.UNA <= seq < SND.MAX): what an ICMP message must
    /// quote to be believed (RFC 5927 4.1).
    pub(crate) fn in_flight_has(&self, seq: u32) -> bool {
        le(self.tx.snd_una, seq) && lt(seq, self.tx.snd_max)
    }

    /// RFC 6191 (and RFC 1122 4.2.2.13): a new SYN may reopen this connection's 4-tuple in
    /// TIME-WAIT if it cannot be confused with it: a timestamp above TS.Recent, or without
    /// timestamps a sequence number above RCV.NXT.
    pub(crate) fn time_wait_allows_syn(&self, repr: &TcpRepr) -> bool {
        let rx = self.rx;
        match (rx.ts_ok, repr.options.timestamps) {
            (true, Some((tsval, _))) => gt(tsval, rx.ts_recent),
            _ => Seq(repr.seq) > rx.rcv_nxt,
        }
    }

    /// The connection's statistics, but for its addresses (`local_port` and `remote` are
    /// left at their defaults for the caller, which knows the address family).
    pub(crate) fn stats(&self) -> TcpConnStats {
        let (tx, rx) = (self.tx, self.rx);
        TcpConnStats {
            state: self.state.state,
            cwnd: tx.cc.cwnd,
            ssthresh: tx.cc.ssthresh,
            srtt: tx.rtt.srtt(),
            rttvar: tx.rtt.rttvar(),
            rto: tx.rtt.rto(),
            retransmits: tx.retransmits,
            timeouts: tx.timeouts,
            fast_recoveries: tx.fast_recoveries,
            bytes_acked: tx.bytes_acked,
            bytes_received: rx.bytes_received,
            mss: tx.mss,
            snd_wnd: tx.snd_wnd,
            rcv_wnd: rx.rcv_nxt.bytes_to(rx.rcv_adv),
            wscale: rx.ws_ok.then_some((rx.rcv_shift, tx.snd_shift)),
            sack: rx.sack_ok,
            timestamps: rx.ts_ok,
            cc: tx.cc.algorithm(),
            snd_una: tx.snd_una.0,
            snd_nxt: tx.snd_nxt.0,
            rcv_nxt: rx.rcv_nxt.0,
            rack_lost: tx.rack_lost,
            tlp_probes: tx.tlp_probes,
            dsacks_received: tx.dsacks_received,
            dsacks_sent: rx.dsacks_sent,
            recoveries_undone: tx.undone,
            spurious_rtos: tx.spurious_rtos,
            tx_buffer: self.bufs.tx.capacity(),
            rx_buffer: self.bufs.rx.capacity(),
            ..TcpConnStats::default()
        }
    }

    /// Highest sequence number sent so far (SND.MAX).
    #[cfg(test)]
    pub(crate) fn snd_max(&self) -> Seq {
        self.tx.snd_max
    }

    /// Right edge of the window we last advertised.
    #[cfg(test)]
    pub(crate) fn rcv_adv(&self) -> Seq {
        self.rx.rcv_adv
    }
}
