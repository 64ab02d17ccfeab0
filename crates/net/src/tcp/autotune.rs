//! Buffers that follow the path. Once per round trip (measured at the receiver from the
//! timestamps the peer echoes) the receive buffer grows to at least twice what the peer
//! delivered in that round trip, while the application keeps up: dynamic right-sizing, as
//! Linux's receive-buffer auto-tuning, so the offered window stays ahead of the sender's
//! slow start; growth stops once a round delivers no more than the one before (the window is
//! not the limit then). The send buffer grows to twice the usable window (the smaller of cwnd and the
//! peer's window) when the application keeps it full, as Linux's send-buffer expansion. Both
//! stop at the configured maxima, so memory per session stays bounded.

use super::engine::TcpEngine;
use super::memory::MemLevel;
use super::output::ts_clock;
use super::sink::SegmentSink;
use crate::counters::Counter;
use link::Instant;
use std::time::Duration;

/// The largest receive buffer auto-tuning grows to while a whole window arrives within a
/// millisecond (so the RTT is below the 1 ms timestamp tick, and the timestamps, echoed late
/// under load, overstate it): the bandwidth-delay product of 16 Gbit/s at 1 ms. Larger buffers only fall out of the caches there: on the shared-memory link one
/// connection ran at 35-45 Gbit/s with 256 KiB to 2 MiB buffers and at 12-30 Gbit/s once they
/// had grown to 32 MiB.
const SUB_MS_RX_MAX: usize = 2 << 20;

impl TcpEngine {
    /// A segment echoing our timestamp `ecr` arrived: sample the receiver's RTT estimate
    /// (RFC 7323 timestamps measure it at the receiver too; 1 ms tick, at least 1 ms).
    pub(super) fn sample_rcv_rtt(&mut self, sid: u32, ecr: u32, now: Instant) {
        if self.bufs[sid as usize].rx.capacity() >= self.cfg.rx_buffer_max {
            return; // nothing left to tune
        }
        let ms = ts_clock(now).wrapping_sub(ecr);
        if ecr == 0 || ms >= 60_000 {
            return;
        }
        // In whole microseconds: integer arithmetic, where `Duration`'s is tens of
        // instructions, on a path every data segment takes.
        let sample = u64::from(ms.max(1)) * 1000;
        let rx = &mut self.rx[sid as usize];
        let smoothed = match rx.rcv_rtt {
            None => sample,
            Some(old) => (old.as_micros() as u64 * 7 + sample) / 8,
        };
        rx.rcv_rtt = Some(Duration::from_micros(smoothed));
    }

    /// In-order data arrived: once per receiver RTT, offer at least twice what the peer
    /// delivered in the last RTT (growing the buffer up to the maximum) if the application
    /// keeps up. Without an RTT estimate (no timestamps, nothing sent) the buffer stays.
    pub(super) fn autotune_rx<S: SegmentSink>(&mut self, out: &mut S, sid: u32, now: Instant) {
        let max = self.cfg.rx_buffer_max;
        if self.bufs[sid as usize].rx.capacity() >= max || self.mem.level() != MemLevel::Normal {
            return; // (under memory pressure buffers do not grow)
        }
        let srtt = self.tx[sid as usize].rtt.srtt();
        let rx = &mut self.rx[sid as usize];
        let ring = &mut self.bufs[sid as usize].rx;
        let cap = ring.capacity();
        let Some(rtt) = rx.rcv_rtt.or(srtt) else { return };
        time_window(rx, now);
        let sub_ms = rx.window_time.is_some_and(|w| w < Duration::from_millis(1));
        let max = if sub_ms { max.min(SUB_MS_RX_MAX.max(cap)) } else { max };
        let Some(since) = rx.tune_time else {
            rx.tune_time = Some(now);
            rx.tune_mark = rx.rcv_nxt;
            return;
        };
        if now - since < rtt {
            return;
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
            return;
        }
        // At most a doubling per round trip, like the sender's slow start.
        let before = ring.storage_len();
        ring.grow(want.next_power_of_two().min(cap * 2).min(max));
        self.mem.charge(ring.storage_len().saturating_sub(before));
        rx.ack_now = true; // announce the wider window at once
        out.counters().bump(Counter::tcp_rx_buffer_grown);
    }

    /// An ACK advanced: grow the send buffer towards twice the usable window if the
    /// application keeps it full.
    pub(super) fn autotune_tx<S: SegmentSink>(&mut self, out: &mut S, sid: u32) {
        let max = self.cfg.tx_buffer_max;
        let tx = &self.tx[sid as usize];
        let b = &mut self.bufs[sid as usize];
        let cap = b.tx.capacity();
        if cap >= max || cap == 0 || self.mem.level() != MemLevel::Normal {
            return;
        }
        let app_limited = b.tx.free() > cap / 4 && !b.tx.has_transfers();
        let usable = tx.cc.cwnd.min(tx.snd_wnd) as usize;
        if app_limited || usable * 2 <= cap {
            return;
        }
        let grown = (usable * 2).next_power_of_two().min(max);
        let before = b.tx.ring.storage_len();
        b.tx.ring.grow(grown);
        self.mem.charge(b.tx.ring.storage_len().saturating_sub(before));
        out.counters().bump(Counter::tcp_tx_buffer_grown);
    }
}

/// Time the window the receiver offered: when RCV.NXT passes the end of the window being
/// timed, sample how long it took to arrive and start timing the window offered now.
fn time_window(rx: &mut super::conn::RxSar, now: Instant) {
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
