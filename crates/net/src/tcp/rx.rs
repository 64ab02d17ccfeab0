//! The receive side of the engine (RFC 9293 section 3.10.7): checks a segment, demultiplexes
//! it to its session (or to `listen` when it finds none), lets the session's view take it
//! (`tcb::input`) and then does what the view decided only the engine can do.

use super::engine::TcpEngine;
use super::lookup::{FourTuple, SegAddr};
use super::sink::SegmentSink;
use super::tcb::input::End;
use super::TcpState;
use crate::counters::Counter;
use wire::tcp::flags::{ACK, FIN, RST, SYN};
use wire::{TcpRepr, TcpSegment};

pub use super::tcb::input::Verdict;

impl TcpEngine {
    /// Process one TCP segment (`l4`: header and payload) from `src` to `dst` (our address).
    pub(crate) fn on_segment<S: SegmentSink, A: SegAddr>(&mut self, out: &mut S, src: A, dst: A, l4: &[u8]) -> Verdict {
        let seg = match TcpSegment::new_checked(l4) {
            Ok(s) => s,
            Err(_) => return Err(Counter::rx_drop_tcp_malformed),
        };
        if !seg.verify_checksum(src, dst) {
            return Err(Counter::rx_drop_tcp_bad_checksum);
        }
        let repr = match TcpRepr::parse(&seg) {
            Ok(r) => r,
            Err(_) => return Err(Counter::rx_drop_tcp_bad_options),
        };
        if repr.src_port == 0 || repr.dst_port == 0 {
            return Err(Counter::rx_drop_tcp_malformed);
        }
        out.counters().bump(Counter::tcp_rx_segments);
        let payload = seg.payload();
        let mut found = self.lookup.find(dst, repr.dst_port, src, repr.src_port);
        if let Some(sid) = found {
            if self.row(sid).state() == TcpState::TimeWait
                && repr.flags & (SYN | ACK | RST | FIN) == SYN
                && self.listeners.contains_key(&repr.dst_port)
                && self.time_wait_allows_syn(sid, &repr)
            {
                // RFC 6191: the old incarnation gives way to the new one.
                self.finish(sid, None);
                out.counters().bump(Counter::tcp_time_wait_reused);
                found = None;
            }
        }
        let verdict = match found {
            Some(sid) => {
                let v = self.input(out, sid, &repr, payload);
                self.activity.mark(sid);
                let now = out.now();
                let (mut tcb, mut ctx) = self.tcb(sid);
                if tcb.settle(&mut ctx, now) {
                    // The engine, not the view's input, sends: a duplicate ACK goes at once.
                    tcb.output(&mut ctx, out, now);
                }
                v
            }
            None => {
                let tuple = FourTuple {
                    local_port: repr.dst_port,
                    remote_ip: src.into(),
                    remote_port: repr.src_port,
                    local_ip: dst.into(),
                };
                self.on_no_session(out, tuple, &repr, payload)
            }
        };
        if self.time_wait_reclaimed > 0 {
            out.counters().add(Counter::tcp_time_wait_reclaimed, std::mem::take(&mut self.time_wait_reclaimed));
        }
        // Sessions marked dirty send at the end of the poll's receive batch, so one ACK can
        // cover several segments of the batch.
        verdict
    }

    /// Session `sid` (not in LISTEN) takes a segment from its peer; then the engine does
    /// what the connection decided: answer with a reset, queue it on its listener or for
    /// TIME-WAIT reclaim, end it.
    pub(super) fn input<S: SegmentSink>(&mut self, out: &mut S, sid: u32, repr: &TcpRepr, payload: &[u8]) -> Verdict {
        let (mut tcb, mut ctx) = self.tcb(sid);
        let (verdict, after) = tcb.input(&mut ctx, out, repr, payload);
        if after.reset {
            let tuple = self.row(sid).tuple();
            self.send_reset(out, tuple, repr.seq, repr.ack, repr.flags, 0);
        }
        if let Some(l) = after.accept_queue.and_then(|p| self.listeners.get_mut(&p)) {
            l.half_open = l.half_open.saturating_sub(1);
            l.ready.push_back(sid);
        }
        if after.time_wait {
            self.queue_time_wait(sid);
        }
        match after.end {
            Some(End::Finish(error)) => self.finish(sid, error),
            Some(End::Free) => self.free_session(sid),
            None => {}
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::TcpConfig;
    use super::super::sink::recorder::{Recorder, LOCAL, PEER};
    use super::super::unit_util::*;
    use super::super::TcpState;
    use crate::counters::Counter;
    use wire::tcp::flags::{ACK, FIN, PSH};
    use wire::TcpOptions;

    const NONE: TcpOptions =
        TcpOptions { mss: None, window_scale: None, sack_permitted: false, timestamps: None, sack_blocks: [None; 4] };

    #[test]
    fn data_in_order_is_delivered_to_the_receive_buffer() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        let seg = from_peer(PEER_ISS + 1, our, ACK | PSH, 1000, NONE, &[7u8; 300]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Ok(()));
        assert_eq!(e.row(sid).recv_ring().len(), 300);
        assert_eq!(e.row(sid).stats().rcv_nxt, PEER_ISS + 301);
    }

    #[test]
    fn a_segment_past_the_offered_window_is_trimmed_to_its_right_edge() {
        let mut e = engine_with(TcpConfig { rx_buffer: 1024, ..TcpConfig::default() });
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        let offered = e.row(sid).rcv_adv().0.wrapping_sub(PEER_ISS + 1);
        assert_eq!(offered, 1024);
        let seg = from_peer(PEER_ISS + 1, our, ACK, 1000, NONE, &[1u8; 1400]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Ok(()));
        assert_eq!(e.row(sid).recv_ring().len(), 1024, "only what the window offered");
        assert_eq!(e.row(sid).stats().rcv_nxt, PEER_ISS + 1 + 1024);
        assert_eq!(out.counters.get(Counter::tcp_rx_trimmed), 1);
    }

    #[test]
    fn a_duplicate_below_rcv_nxt_is_reported_in_a_d_sack_block() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (_, our) = established(&mut e, &mut out, 1000);
        let seg = from_peer(PEER_ISS + 1, our, ACK, 1000, NONE, &[3u8; 500]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Ok(()));
        flush(&mut e, &mut out);
        // Counted as out of the window (RFC 9293 3.10.7.4), and answered with an ACK.
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &seg), Err(Counter::rx_drop_tcp_out_of_window));
        let acks = flush(&mut e, &mut out);
        let ack = acks.last().expect("the duplicate is answered at once").0;
        assert_eq!(ack.ack, PEER_ISS + 501);
        assert_eq!(ack.options.sack_blocks[0], Some((PEER_ISS + 1, PEER_ISS + 501)), "RFC 2883 D-SACK first");
        assert_eq!(out.counters.get(Counter::tcp_dsacks_sent), 1);
    }

    #[test]
    fn a_duplicate_above_rcv_nxt_is_reported_in_a_d_sack_block_then_the_sack_block() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (_, our) = established(&mut e, &mut out, 1000);
        let ahead = from_peer(PEER_ISS + 1001, our, ACK, 1000, NONE, &[3u8; 500]);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &ahead), Ok(()));
        flush(&mut e, &mut out);
        assert_eq!(e.on_segment(&mut out, PEER, LOCAL, &ahead), Ok(()));
        let ack = flush(&mut e, &mut out).last().expect("answered at once").0;
        assert_eq!(ack.ack, PEER_ISS + 1);
        let range = Some((PEER_ISS + 1001, PEER_ISS + 1501));
        assert_eq!(ack.options.sack_blocks[..2], [range, range], "the D-SACK, then the block it lies in");
    }

    #[test]
    fn a_link_that_fails_every_send_does_not_cut_receive_processing_short() {
        let mut e = engine();
        let mut out = Recorder::new();
        let (sid, our) = established(&mut e, &mut out, 1000);
        out.failing = true;
        // Out of order first (its duplicate ACK is sent at once and fails), then the hole
        // and a FIN.
        let later = from_peer(PEER_ISS + 101, our, ACK, 1000, NONE, &[2u8; 100]);
        let first = from_peer(PEER_ISS + 1, our, ACK, 1000, NONE, &[1u8; 100]);
        let fin = from_peer(PEER_ISS + 201, our, ACK | FIN, 1000, NONE, &[]);
        for seg in [&later, &first, &fin] {
            assert_eq!(e.on_segment(&mut out, PEER, LOCAL, seg), Ok(()));
        }
        flush(&mut e, &mut out);
        assert!(out.failures >= 1, "the sends were tried");
        assert_eq!(e.row(sid).recv_ring().len(), 200, "all data delivered in order");
        assert_eq!(e.row(sid).state(), TcpState::CloseWait, "the FIN was processed");
    }
}
