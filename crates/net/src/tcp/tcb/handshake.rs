//! Opening a connection: what the peer's SYN (or the ACK returning a SYN cookie) sets in the
//! send and receive sequence variables, and the options both sides agree on.

use super::super::seq::Seq;
use super::super::syncookie::CookieState;
use super::tables::{RxSar, TxSar};
use super::{Ctx, TcbMut};
use wire::TcpRepr;

/// Window scaling (RFC 7323 2.2) is on only if both sides offered it; shifts of at most 14.
fn agree_window_scale(rx: &mut RxSar, tx: &mut TxSar, ours: Option<u8>, theirs: Option<u8>) {
    match (ours, theirs) {
        (Some(ours), Some(theirs)) => {
            rx.ws_ok = true;
            rx.rcv_shift = ours.min(14);
            tx.snd_shift = theirs.min(14);
        }
        _ => {
            rx.ws_ok = false;
            rx.rcv_shift = 0;
            tx.snd_shift = 0;
        }
    }
}

impl TcbMut<'_> {
    /// Take the peer's SYN: initial receive sequence and the options both sides agree on.
    pub(crate) fn accept_syn(&mut self, ctx: &Ctx, repr: &TcpRepr) {
        let o = &repr.options;
        let rx = &mut *self.rx;
        let tx = &mut *self.tx;
        rx.irs = Seq(repr.seq);
        rx.rcv_nxt = rx.irs + 1;
        rx.rcv_adv = rx.rcv_nxt;
        rx.tune_mark = rx.rcv_nxt;
        agree_window_scale(rx, tx, ctx.cfg.window_scale, o.window_scale);
        rx.sack_ok = ctx.cfg.sack && o.sack_permitted;
        rx.ts_ok = ctx.cfg.timestamps && o.timestamps.is_some();
        if let Some((tsval, _)) = o.timestamps {
            rx.ts_recent = tsval;
        }
        let peer_mss = o.mss.unwrap_or(536).max(64);
        let overhead = if rx.ts_ok { 12 } else { 0 };
        tx.mss = peer_mss.min(ctx.local_mss) - overhead;
        tx.cc.set_mss(tx.mss as u32);
        tx.snd_wnd = repr.window as u32;
        tx.max_snd_wnd = tx.snd_wnd;
        tx.snd_wl1 = Seq(repr.seq);
        tx.snd_wl2 = Seq(repr.ack);
    }

    /// The sequence state of a connection opened by a cookie, as if its SYN had been kept.
    pub(crate) fn restore_from_cookie(&mut self, ctx: &Ctx, ack: &TcpRepr, iss: u32, st: CookieState) {
        let (cfg, local_mss) = (ctx.cfg, ctx.local_mss);
        let rx = &mut *self.rx;
        let tx = &mut *self.tx;
        *tx = TxSar::new(iss, local_mss, cfg.cc, cfg.min_rto, cfg.max_rto);
        tx.reordering = cfg.dup_thresh;
        tx.snd_una = Seq(ack.ack);
        tx.snd_nxt = tx.snd_una;
        tx.snd_max = tx.snd_una;
        tx.retx_high = tx.snd_una;
        rx.irs = Seq(ack.seq) - 1;
        rx.rcv_nxt = Seq(ack.seq);
        rx.tune_mark = rx.rcv_nxt;
        rx.rcv_adv = rx.rcv_nxt + cfg.rx_buffer.min(65535) as u32;
        rx.last_ack_sent = rx.rcv_nxt;
        rx.ts_ok = cfg.timestamps && ack.options.timestamps.is_some();
        if let Some((tsval, _)) = ack.options.timestamps {
            rx.ts_recent = tsval;
        }
        // Without timestamps the cookie could not carry the peer's window scale.
        let theirs = if rx.ts_ok { st.window_scale } else { None };
        agree_window_scale(rx, tx, cfg.window_scale, theirs);
        rx.sack_ok = cfg.sack && st.sack_permitted && rx.ts_ok;
        let overhead = if rx.ts_ok { 12 } else { 0 };
        tx.mss = st.mss.min(local_mss) - overhead;
        tx.cc.set_mss(tx.mss as u32);
        tx.snd_wnd = u32::from(ack.window) << tx.snd_shift;
        tx.max_snd_wnd = tx.snd_wnd;
        tx.snd_wl1 = Seq(ack.seq);
        tx.snd_wl2 = Seq(ack.ack);
    }
}
