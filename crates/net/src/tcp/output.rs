//! The transmit side of the engine: the flush of the sessions marked dirty, the writer of the
//! segments a connection's output yields, and resets for segments that belong to no
//! connection. What one connection sends is decided by its view (`tcb::output`), which
//! yields each segment as a `Transmit`; the engine is the only caller of the sink.

use super::engine::TcpEngine;
use super::lookup::FourTuple;
use super::seq::Seq;
use super::sink::SegmentSink;
use super::tcb::transmit::{Emit, Transmit};
use crate::counters::Counter;
use link::Instant;
use wire::tcp::flags::{ACK, FIN, RST, SYN};
use wire::{TcpOptions, TcpRepr};

/// The engine's writer of what a connection's output yields: the header, and the payload
/// copied from the send queue straight into the frame the sink lends, summed for the checksum
/// in the same pass (the frame, in the link's memory, which the peer reads next, is never read
/// back).
impl<S: SegmentSink> Emit for S {
    #[inline(always)]
    fn ip_mtu(&self) -> usize {
        self.mtu()
    }

    #[inline(always)]
    fn emit(&mut self, seg: &Transmit<'_>) -> bool {
        let hl = seg.repr.header_len();
        let len = seg.len;
        self.send_segment(seg.tuple, hl + len, |buf, addrs| {
            let (copied, sum) = seg.queue.copy_out_summed(seg.data_off, &mut buf[hl..hl + len]);
            debug_assert_eq!(copied, len);
            let _ = seg.repr.emit_summed_addrs(buf, addrs, len, sum);
        })
    }
}

impl TcpEngine {
    /// Run the output of every session marked as having something to send when the flush
    /// starts (sessions marked again meanwhile wait for the next flush). When the link is
    /// full the rest stay queued, in order, for the next poll.
    pub(crate) fn flush_dirty<S: SegmentSink>(&mut self, out: &mut S, now: Instant) {
        for _ in 0..self.shared.dirty.len() {
            if !out.has_room() {
                break;
            }
            let Some(sid) = self.pop_dirty() else { break };
            self.output(out, sid, now);
        }
    }

    /// Send whatever session `sid` may send now.
    #[inline]
    pub(crate) fn output<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) {
        let (mut tcb, mut ctx) = self.tcb(sid);
        tcb.output(&mut ctx, out, now);
    }

    /// Answer a segment that belongs to no connection with a reset (RFC 9293 3.10.7.1).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_reset<S: SegmentSink>(
        &mut self,
        out: &mut S,
        tuple: FourTuple,
        seg_seq: u32,
        seg_ack: u32,
        seg_flags: u8,
        seg_len: u32,
    ) {
        if seg_flags & RST != 0 {
            return;
        }
        let (seq, ack, flags) = if seg_flags & ACK != 0 {
            (seg_ack, 0, RST)
        } else {
            let syn_fin = (seg_flags & SYN != 0) as u32 + (seg_flags & FIN != 0) as u32;
            (0, (Seq(seg_seq) + (seg_len + syn_fin)).0, RST | ACK)
        };
        let repr = TcpRepr {
            src_port: tuple.local_port,
            dst_port: tuple.remote_port,
            seq,
            ack,
            flags,
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
        };
        if out.send_segment(&tuple, repr.header_len(), |buf, addrs| {
            let _ = repr.emit_summed_addrs(buf, addrs, 0, 0);
        }) {
            out.counters().bump(Counter::tcp_resets_sent);
        }
    }

    /// Send a reset on an existing connection (abort).
    pub(crate) fn send_abort_reset<S: SegmentSink>(&mut self, out: &mut S, sid: u32) {
        let (mut tcb, mut ctx) = self.tcb(sid);
        tcb.send_abort_reset(&mut ctx, out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::sink::recorder::{Recorder, LOCAL, PEER};
    use super::super::unit_util::*;
    use wire::tcp::flags::ACK;

    #[test]
    fn new_data_goes_in_full_segments_up_to_the_initial_window() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        queue(&mut e, sid, &[9u8; 100_000]);
        let segs = flush(&mut e, &mut out);
        assert_eq!(segs.len(), 10, "IW = 10 segments (RFC 6928)");
        for (i, (h, p)) in segs.iter().enumerate() {
            assert_eq!((h.seq, p.len()), (our + i as u32 * MSS as u32, MSS as usize));
        }
        // Their ACK doubles the window (slow start): twenty more.
        let ack = from_peer(PEER_ISS + 1, our + 10 * MSS as u32, ACK, 1000, Default::default(), &[]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &ack), Ok(()));
        assert_eq!(flush(&mut e, &mut out).len(), 20);
    }

    #[test]
    fn the_peer_window_bounds_what_is_sent() {
        let mut e = engine();
        let mut out = Recorder::new();
        // 20 << 7 = 2,560 bytes offered.
        let (sid, our) = established(&mut e, &mut out, 20);
        queue(&mut e, sid, &[9u8; 100_000]);
        let segs = flush(&mut e, &mut out);
        let sent: usize = segs.iter().map(|(_, p)| p.len()).sum();
        assert!(sent <= 2560, "{sent} bytes sent into a 2,560-byte window");
        assert_eq!((segs[0].0.seq, segs[0].1.len()), (our, MSS as usize));
    }

    #[test]
    fn a_failed_send_counts_as_lost_and_the_retransmission_timer_covers_it() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        out.failing = true;
        queue(&mut e, sid, &[9u8; 1000]);
        flush(&mut e, &mut out);
        assert_eq!(out.failures, 1);
        assert_eq!(e.row(sid).snd_max().0, our + 1000, "as if sent");
        out.failing = false;
        let deadline = e.next_deadline().expect("the retransmission (or probe) timer");
        out.now = deadline;
        e.on_timers(&mut out, deadline);
        let again = out.take();
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].0.seq, again[0].1.len()), (our, 1000), "sent again");
    }
}
