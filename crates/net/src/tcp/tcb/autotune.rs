//! Buffers that follow the path. Once per round trip (measured at the receiver from the
//! timestamps the peer echoes) the receive buffer grows to at least twice what the peer
//! delivered in that round trip, while the application keeps up: dynamic right-sizing, as
//! Linux's receive-buffer auto-tuning, so the offered window stays ahead of the sender's
//! slow start; growth stops once a round delivers no more than the one before (the window is
//! not the limit then). The send buffer grows to twice the usable window (the smaller of cwnd and the
//! peer's window) when the application keeps it full, as Linux's send-buffer expansion. Both
//! stop at the configured maxima, so memory per session stays bounded.

use super::super::clock::ts_clock;
use super::super::memory::{MemAccount, MemLevel};
use super::super::TcpConfig;
use super::tables::RxSar;
use super::TcbMut;
use link::Instant;
use std::time::Duration;

/// The largest receive buffer auto-tuning grows to while a whole window arrives within a
/// millisecond (so the RTT is below the 1 ms timestamp tick, and the timestamps, echoed late
/// under load, overstate it): the bandwidth-delay product of 16 Gbit/s at 1 ms. Larger buffers only fall out of the caches there: on the shared-memory link one
/// connection ran at 35-45 Gbit/s with 256 KiB to 2 MiB buffers and at 12-30 Gbit/s once they
/// had grown to 32 MiB.
const SUB_MS_RX_MAX: usize = 2 << 20;

impl TcbMut<'_> {
    /// A segment echoing our timestamp `ecr` arrived: sample the receiver's RTT estimate
    /// (RFC 7323 timestamps measure it at the receiver too; 1 ms tick, at least 1 ms).
    pub(crate) fn sample_rcv_rtt(&mut self, cfg: &TcpConfig, ecr: u32, now: Instant) {
        if self.bufs.rx.capacity() >= cfg.rx_buffer_max {
            return; // nothing left to tune
        }
        let ms = ts_clock(now).wrapping_sub(ecr);
        if ecr == 0 || ms >= 60_000 {
            return;
        }
        // In whole microseconds: integer arithmetic, where `Duration`'s is tens of
        // instructions, on a path every data segment takes.
        let sample = u64::from(ms.max(1)) * 1000;
        let rx = &mut *self.rx;
        let smoothed = match rx.rcv_rtt {
            None => sample,
            Some(old) => (old.as_micros() as u64 * 7 + sample) / 8,
        };
        rx.rcv_rtt = Some(Duration::from_micros(smoothed));
    }

    /// In-order data arrived: once per receiver RTT, offer at least twice what the peer
    /// delivered in the last RTT (growing the buffer up to the maximum) if the application
    /// keeps up. Without an RTT estimate (no timestamps, nothing sent) the buffer stays.
    /// Returns whether the buffer grew (an ACK announcing the wider window is then due).
    pub(crate) fn autotune_rx(&mut self, cfg: &TcpConfig, mem: &mut MemAccount, now: Instant) -> bool {
        let max = cfg.rx_buffer_max;
        if self.bufs.rx.capacity() >= max || mem.level() != MemLevel::Normal {
            return false; // (under memory pressure buffers do not grow)
        }
        let srtt = self.tx.rtt.srtt();
        let rx = &mut *self.rx;
        let ring = &mut self.bufs.rx;
        let cap = ring.capacity();
        let Some(rtt) = rx.rcv_rtt.or(srtt) else { return false };
        time_window(rx, now);
        let sub_ms = rx.window_time.is_some_and(|w| w < Duration::from_millis(1));
        let max = if sub_ms { max.min(SUB_MS_RX_MAX.max(cap)) } else { max };
        let Some(since) = rx.tune_time else {
            rx.tune_time = Some(now);
            rx.tune_mark = rx.rcv_nxt;
            return false;
        };
        if now - since < rtt {
            return false;
        }
        let delivered = rx.tune_mark.bytes_to(rx.rcv_nxt) as usize;
        let elapsed = (now - since).as_nanos().max(1) as f64;
        rx.tune_time = Some(now);
        rx.tune_mark = rx.rcv_nxt;
        // Growing pays only while it raises the rate: once a round's rate is no more than a
        // quarter above the last one's, the path (or the host) is the limit, not the window.
        // (Without this, a sub-millisecond path measured with the 1 ms timestamp tick would
        // grow the buffer to its maximum, and out of the caches, for nothing.)
        let rate = delivered as f64 / elapsed;
        let rising = rate > rx.tune_rate * 1.25;
        rx.tune_rate = rate;
        let want = delivered.saturating_mul(2);
        let reader_keeps_up = ring.len() <= cap / 2;
        if cap >= max || cap == 0 || want <= cap || !reader_keeps_up || !rising {
            return false;
        }
        // At most a doubling per round trip, like the sender's slow start.
        let before = ring.storage_len();
        ring.grow(want.next_power_of_two().min(cap * 2).min(max));
        mem.charge(ring.storage_len().saturating_sub(before));
        rx.ack_now = true; // announce the wider window at once
        true
    }

    /// An ACK advanced: grow the send buffer towards twice the usable window if the
    /// application keeps it full. Returns whether it grew.
    pub(crate) fn autotune_tx(&mut self, cfg: &TcpConfig, mem: &mut MemAccount) -> bool {
        let max = cfg.tx_buffer_max;
        let tx = &*self.tx;
        let b = &mut *self.bufs;
        let cap = b.tx.capacity();
        if cap >= max || cap == 0 || mem.level() != MemLevel::Normal {
            return false;
        }
        let app_limited = b.tx.free() > cap / 4 && !b.tx.has_transfers();
        let usable = tx.cc.cwnd.min(tx.snd_wnd) as usize;
        if app_limited || usable * 2 <= cap {
            return false;
        }
        let grown = (usable * 2).next_power_of_two().min(max);
        let before = b.tx.ring.storage_len();
        b.tx.ring.grow(grown);
        mem.charge(b.tx.ring.storage_len().saturating_sub(before));
        true
    }
}

/// Time the window the receiver offered: when RCV.NXT passes the end of the window being
/// timed, sample how long it took to arrive and start timing the window offered now.
fn time_window(rx: &mut RxSar, now: Instant) {
    match rx.window_timing {
        Some((_, end)) if rx.rcv_nxt < end => {}
        Some((since, _)) => {
            let sample = now - since;
            rx.window_time = Some(rx.window_time.map_or(sample, |old| old.min(sample)));
            rx.window_timing = Some((now, rx.rcv_nxt + rx.rcv_nxt.bytes_to(rx.rcv_adv)));
        }
        None => rx.window_timing = Some((now, rx.rcv_nxt + rx.rcv_nxt.bytes_to(rx.rcv_adv))),
    }
}

#[cfg(test)]
mod tests {
    //! The view alone (see `unit`).
    use super::super::super::memory::MemAccount;
    use super::super::super::TcpConfig;
    use super::super::unit::World;
    use link::Instant;
    use std::time::Duration;

    /// 64 KiB rings with storage that may grow to 1 MiB, a window of `wnd` bytes each way.
    fn world(wnd: u32) -> World {
        let mut w = World::new(TcpConfig { tx_buffer_max: 1 << 20, rx_buffer_max: 1 << 20, ..TcpConfig::default() });
        w.tx.snd_wnd = wnd;
        w.tx.cc.cwnd = wnd;
        w
    }

    fn at_ms(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    fn sample(w: &mut World, ecr: u32, ms: u64) {
        let (mut tcb, ctx, _) = w.view();
        tcb.sample_rcv_rtt(ctx.cfg, ecr, at_ms(ms));
    }

    fn tune_tx(w: &mut World) -> bool {
        let (mut tcb, ctx, _) = w.view();
        tcb.autotune_tx(ctx.cfg, ctx.mem)
    }

    fn tune_rx(w: &mut World, ms: u64) -> bool {
        let (mut tcb, ctx, _) = w.view();
        tcb.autotune_rx(ctx.cfg, ctx.mem, at_ms(ms))
    }

    #[test]
    fn the_receivers_rtt_is_the_echoed_timestamps_age_smoothed_by_an_eighth() {
        let mut w = world(1 << 20);
        sample(&mut w, 100, 108);
        assert_eq!(w.rx.rcv_rtt, Some(Duration::from_millis(8)));
        sample(&mut w, 200, 216);
        assert_eq!(w.rx.rcv_rtt, Some(Duration::from_millis(9)), "(8 * 7 + 16) / 8");
        sample(&mut w, 0, 300);
        assert_eq!(w.rx.rcv_rtt, Some(Duration::from_millis(9)), "a zero echo is no sample");
    }

    #[test]
    fn a_full_send_buffer_grows_to_twice_the_usable_window_and_is_charged() {
        let mut w = world(100_000);
        assert!(!tune_tx(&mut w), "the application leaves the buffer empty");
        assert_eq!(w.bufs.tx.capacity(), 64 << 10);
        w.queue(&[7u8; 60 << 10]);
        assert!(tune_tx(&mut w));
        assert_eq!(w.bufs.tx.capacity(), 256 << 10, "2 * 100,000 rounded up to a power of two");
        assert_eq!(w.shared.mem.used, (256 << 10) - (64 << 10), "the growth is charged to the budget");
        let mut w = world(20_000);
        w.queue(&[7u8; 60 << 10]);
        assert!(!tune_tx(&mut w), "twice a 20 kB window fits the buffer");
    }

    #[test]
    fn the_receive_buffer_grows_once_a_round_trip_delivered_more_than_half_of_it() {
        let mut w = world(1 << 20);
        assert!(!tune_rx(&mut w, 0), "no RTT estimate yet");
        w.rx.rcv_rtt = Some(Duration::from_millis(10));
        w.rx.rcv_adv = w.rx.rcv_nxt + (64 << 10);
        assert!(!tune_rx(&mut w, 0), "the first call starts the round");
        w.rx.rcv_nxt += 50_000;
        assert!(!tune_rx(&mut w, 5), "half a round trip is too soon");
        assert!(tune_rx(&mut w, 10));
        assert_eq!(w.bufs.rx.capacity(), 128 << 10, "at most a doubling per round trip");
        assert!(w.rx.ack_now, "the wider window is announced at once");
        w.shared.mem = MemAccount::new(0, usize::MAX / 2);
        w.rx.rcv_nxt += 200_000;
        assert!(!tune_rx(&mut w, 30), "no growth under memory pressure");
    }
}
