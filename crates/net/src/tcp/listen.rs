//! Segments that find no connection: passive opens on a listening port (with SYN cookies when
//! the half-open queue is full), a new SYN on a 4-tuple still in TIME-WAIT (RFC 6191), and the
//! RFC 9293 3.10.7.1-2 answers for everything else (CLOSED: reset; LISTEN: drop or reset).

use super::clock::ts_clock;
use super::engine::TcpEngine;
use super::lookup::FourTuple;
use super::rx::Verdict;
use super::seq::Seq;
use super::sink::SegmentSink;
use super::syncookie::cookie_tsval;
use super::TcpState;
use crate::counters::Counter;
use std::time::Duration;
use wire::tcp::flags::{ACK, FIN, RST, SYN};
use wire::{TcpOptions, TcpRepr};

/// How long after the last cookie we sent an ACK is still checked for one (two time slots).
const COOKIE_WINDOW: Duration = Duration::from_secs(128);

impl TcpEngine {
    /// A segment for no session. On a listening port (RFC 9293 3.10.7.2): a RST is ignored,
    /// a SYN opens a connection (SYN with FIN is dropped, as Linux does), an ACK is checked for a
    /// SYN cookie and otherwise reset, and anything else is dropped. On a closed port everything
    /// but a RST is answered with a RST (3.10.7.1).
    pub(super) fn on_no_session<S: SegmentSink>(
        &mut self,
        out: &mut S,
        tuple: FourTuple,
        repr: &TcpRepr,
        payload: &[u8],
    ) -> Verdict {
        let f = repr.flags;
        let len = payload.len() as u32;
        if !self.listeners.contains_key(&tuple.local_port) {
            self.send_reset(out, tuple, repr.seq, repr.ack, f, len);
            return Err(Counter::rx_drop_tcp_no_session);
        }
        if f & RST != 0 {
            return Err(Counter::rx_drop_tcp_rst_ignored);
        }
        if f & SYN != 0 && f & FIN != 0 {
            return Err(Counter::rx_drop_tcp_syn_fin);
        }
        if f & ACK == 0 {
            return if f & SYN != 0 {
                self.on_listen_syn(out, tuple, repr)
            } else {
                Err(Counter::rx_drop_tcp_listen_no_syn)
            };
        }
        let cookies_in_use = self.last_cookie.is_some_and(|t| out.now() - t <= COOKIE_WINDOW);
        if f & SYN == 0 && cookies_in_use {
            if let Some(v) = self.accept_cookie(out, tuple, repr, payload) {
                return v;
            }
            self.send_reset(out, tuple, repr.seq, repr.ack, f, len);
            return Err(Counter::rx_drop_tcp_bad_cookie);
        }
        self.send_reset(out, tuple, repr.seq, repr.ack, f, len);
        Err(Counter::rx_drop_tcp_no_session)
    }

    /// A SYN to a listener: a half-open session, or a SYN cookie when the half-open queue is
    /// full; dropped when the accept queue or the session table is full.
    fn on_listen_syn<S: SegmentSink>(&mut self, out: &mut S, tuple: FourTuple, repr: &TcpRepr) -> Verdict {
        let Some(l) = self.listeners.get(&tuple.local_port) else { return Err(Counter::rx_drop_tcp_no_session) };
        if l.ready.len() >= l.backlog {
            return Err(Counter::rx_drop_tcp_backlog_full);
        }
        let queue_full = l.half_open >= self.cfg.syn_backlog || l.half_open + l.ready.len() >= l.backlog;
        if !queue_full {
            // A full session table drops the SYN: a cookie could not be honoured either, and
            // the peer's SYN retransmission may find room.
            return self.passive_open(out, tuple, repr);
        }
        if !self.cfg.syn_cookies {
            return Err(Counter::rx_drop_tcp_backlog_full);
        }
        self.send_cookie_syn_ack(out, tuple, repr);
        Ok(())
    }

    fn passive_open<S: SegmentSink>(&mut self, out: &mut S, tuple: FourTuple, repr: &TcpRepr) -> Verdict {
        let Ok(sid) = self.alloc(tuple, TcpState::SynReceived, out.now()) else {
            return Err(Counter::rx_drop_tcp_table_full);
        };
        let (mut tcb, ctx) = self.tcb(sid);
        tcb.held_by(tuple.local_port);
        tcb.accept_syn(&ctx, repr);
        if let Some(l) = self.listeners.get_mut(&tuple.local_port) {
            l.half_open += 1;
        }
        self.mark_dirty(sid);
        out.counters().bump(Counter::tcp_passive_opens);
        Ok(())
    }

    /// Answer a SYN statelessly: our ISS is a cookie, the peer's options ride in our TSval.
    fn send_cookie_syn_ack<S: SegmentSink>(&mut self, out: &mut S, tuple: FourTuple, repr: &TcpRepr) {
        let now = out.now();
        let syn = &repr.options;
        let iss = self.cookies.make(&tuple, repr.seq, syn.mss.unwrap_or(536), now);
        let mss = if tuple.is_v6() { self.local_mss6 } else { self.local_mss };
        let mut options = TcpOptions { mss: Some(mss), ..Default::default() };
        // Window scale and SACK survive only inside the timestamp (see `syncookie`).
        if let (true, Some((tsval, _))) = (self.cfg.timestamps, syn.timestamps) {
            options.timestamps = Some((cookie_tsval(ts_clock(now), syn), tsval));
            if syn.window_scale.is_some() {
                options.window_scale = self.cfg.window_scale.map(|w| w.min(14));
            }
            options.sack_permitted = self.cfg.sack && syn.sack_permitted;
        }
        let syn_ack = TcpRepr {
            src_port: tuple.local_port,
            dst_port: tuple.remote_port,
            seq: iss,
            ack: (Seq(repr.seq) + 1).0,
            flags: SYN | ACK,
            window: self.cfg.rx_buffer.min(65535) as u16,
            urgent: 0,
            options,
        };
        if out.send_segment(&tuple, syn_ack.header_len(), |buf, addrs| {
            let _ = syn_ack.emit_summed_addrs(buf, addrs, 0, 0);
        }) {
            out.counters().bump(Counter::tcp_syncookies_sent);
            out.counters().bump(Counter::tcp_tx_segments);
        }
        self.last_cookie = Some(now);
    }

    /// An ACK to a listener that may return one of our cookies: if it does, the connection
    /// is created ESTABLISHED and the segment processed in it. `None` if it does not.
    fn accept_cookie<S: SegmentSink>(
        &mut self,
        out: &mut S,
        tuple: FourTuple,
        repr: &TcpRepr,
        payload: &[u8],
    ) -> Option<Verdict> {
        let now = out.now();
        let (iss, peer_isn) = ((Seq(repr.ack) - 1).0, (Seq(repr.seq) - 1).0);
        let tsecr = repr.options.timestamps.map(|t| t.1);
        let st = self.cookies.check(&tuple, peer_isn, iss, tsecr, now)?;
        let l = self.listeners.get(&tuple.local_port)?;
        if l.ready.len() >= l.backlog {
            // As Linux: the peer retransmits and finds room later.
            return Some(Err(Counter::rx_drop_tcp_backlog_full));
        }
        let Ok(sid) = self.alloc(tuple, TcpState::Established, now) else {
            return Some(Err(Counter::rx_drop_tcp_table_full));
        };
        let (mut tcb, ctx) = self.tcb(sid);
        tcb.restore_from_cookie(&ctx, repr, iss, st);
        tcb.held_by(tuple.local_port);
        if let Some(l) = self.listeners.get_mut(&tuple.local_port) {
            l.ready.push_back(sid);
        }
        out.counters().bump(Counter::tcp_syncookies_accepted);
        out.counters().bump(Counter::tcp_established_passive);
        let v = self.input(out, sid, repr, payload);
        self.activity.mark(sid);
        let (mut tcb, mut ctx) = self.tcb(sid);
        // Nothing is held out of order yet: the ACK waits for the end of the batch.
        let _ = tcb.settle(&mut ctx, out.now());
        Some(v)
    }

    /// RFC 6191 (and RFC 1122 4.2.2.13): a new SYN may reopen a 4-tuple in TIME-WAIT if it
    /// cannot be confused with the old connection: a timestamp above TS.Recent, or without
    /// timestamps a sequence number above RCV.NXT.
    pub(super) fn time_wait_allows_syn(&self, sid: u32, repr: &TcpRepr) -> bool {
        self.row(sid).time_wait_allows_syn(repr)
    }

    /// Give up the oldest released session in TIME-WAIT to make room; false if there is none.
    /// (Counted in `time_wait_reclaimed`, moved to the counters by the receive path.)
    pub(super) fn reclaim_time_wait(&mut self) -> bool {
        while let Some((sid, gen)) = self.time_wait.pop_front() {
            let s = self.row(sid);
            if s.in_use() && s.gen() == gen && s.state() == TcpState::TimeWait && s.released() {
                self.free_session(sid);
                self.time_wait_reclaimed += 1;
                return true;
            }
        }
        false
    }

    /// Session `sid` entered TIME-WAIT (its view armed the linger timer): buffers parked if
    /// done, and in line to be reclaimed first when the table is full.
    pub(super) fn queue_time_wait(&mut self, sid: u32) {
        self.park_buffers_if_done(sid);
        let gen = self.row(sid).gen();
        self.time_wait.push_back((sid, gen));
        if self.time_wait.len() > 2 * self.capacity() {
            let mut queue = std::mem::take(&mut self.time_wait);
            queue.retain(|&(s, g)| {
                let e = self.row(s);
                e.in_use() && e.gen() == g && e.state() == TcpState::TimeWait
            });
            self.time_wait = queue;
        }
    }
}
