//! Seeded, deterministic impairments on a link's transmit direction: loss, duplication,
//! reordering, delay with jitter, and a rate limit with a bounded queue.
//!
//! Frames given to `tx_batch` are copied into a preallocated queue ordered by departure
//! time and handed to the inner link once `now` reaches it. Both `tx_batch` and `rx_batch`
//! release due frames, so polling either side makes progress. Same seed, same frames and
//! same sequence of `now` values give the same output.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::{FrameBatch, Instant, Link, LinkError, LinkStats};

/// What to do to transmitted frames. The default impairs nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    /// Probability (0..=1) that a frame is dropped.
    pub loss: f64,
    /// Probability (0..=1) that a frame is sent twice.
    pub duplicate: f64,
    /// Probability (0..=1) that a frame is held back by an extra `reorder_hold` (by default
    /// `max(delay + jitter, 1 ms)`), so that later frames overtake it.
    pub reorder: f64,
    /// How long a reordered frame is held back beyond the others; zero for the default
    /// `max(delay + jitter, 1 ms)`. With `delay` zero this is exactly what Linux's netem does
    /// to its reordered share with `delay`: hold those, pass the rest at once.
    pub reorder_hold: Duration,
    /// Fixed one-way delay.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `0..=jitter` per frame (frames keep their order).
    pub jitter: Duration,
    /// Serialisation rate in bits per second; `None` for unlimited.
    pub rate_bps: Option<u64>,
    /// Frames the queue holds; a frame arriving at a full queue is dropped (`impair_rate_dropped`).
    pub queue_limit: usize,
    /// Seed of the random draws.
    pub seed: u64,
}

impl Default for Impairment {
    fn default() -> Self {
        Impairment {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_hold: Duration::ZERO,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            rate_bps: None,
            queue_limit: 10_000,
            seed: 1,
        }
    }
}

impl Impairment {
    /// Largest queue accepted.
    pub const MAX_QUEUE: usize = 1 << 20;

    /// Check the values; the error names the wrong one.
    pub fn validate(&self) -> Result<(), LinkError> {
        for (name, p) in [("loss", self.loss), ("duplicate", self.duplicate), ("reorder", self.reorder)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(LinkError::Config(format!("impairment {name} probability {p} is outside 0..=1")));
            }
        }
        if self.rate_bps == Some(0) {
            return Err(LinkError::Config("impairment rate_bps must be positive (None for unlimited)".into()));
        }
        if self.queue_limit == 0 || self.queue_limit > Self::MAX_QUEUE {
            return Err(LinkError::Config(format!(
                "impairment queue_limit {} is outside 1..={}",
                self.queue_limit,
                Self::MAX_QUEUE
            )));
        }
        Ok(())
    }
}

/// A small PRNG: xorshift64* seeded through splitmix64.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (no draw when `p` is 0).
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// Uniform in 0..=n.
    fn up_to(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % (n + 1)
        }
    }
}

/// A queued frame: departure time, arrival order, and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    due: u64,
    seq: u64,
    slot: u32,
    len: u32,
}

/// Counters of the wrapper itself.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    lost: u64,
    duplicated: u64,
    reordered: u64,
    rate_dropped: u64,
    oversize: u64,
}

/// A link whose transmit direction is impaired as configured.
pub struct Impaired<L: Link> {
    inner: L,
    cfg: Impairment,
    rng: Rng,
    slot_size: usize,
    /// `queue_limit` slots of `slot_size` bytes.
    data: Box<[u8]>,
    free: Vec<u32>,
    queue: BinaryHeap<Reverse<Held>>,
    /// Frames due and handed to the inner link, possibly waiting for room there.
    out: FrameBatch,
    next_seq: u64,
    max_released: Option<u64>,
    rate_free_at: u64,
    last_due: u64,
    counters: Counters,
}

/// Frames handed to the inner link per call.
const OUT_BATCH: usize = 64;

impl<L: Link> Impaired<L> {
    /// Wrap `inner`; allocates the whole queue now (`queue_limit * max_frame` bytes, lazily
    /// backed by the OS until touched).
    pub fn new(inner: L, cfg: Impairment) -> Result<Self, LinkError> {
        cfg.validate()?;
        let slot_size = inner.max_frame().max(1);
        let n = cfg.queue_limit;
        Ok(Impaired {
            rng: Rng::new(cfg.seed),
            slot_size,
            data: vec![0u8; n * slot_size].into_boxed_slice(),
            free: (0..n as u32).rev().collect(),
            queue: BinaryHeap::with_capacity(n),
            out: FrameBatch::new(OUT_BATCH, slot_size),
            next_seq: 0,
            max_released: None,
            rate_free_at: 0,
            last_due: 0,
            counters: Counters::default(),
            inner,
            cfg,
        })
    }

    /// The wrapped link.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The wrapped link, mutable.
    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    /// Frames held (queued or waiting for room in the inner link).
    pub fn held(&self) -> usize {
        self.queue.len() + self.out.len()
    }

    /// When the next queued frame is due, if any (lets a virtual-time testbed skip ahead).
    pub fn next_due(&self) -> Option<Instant> {
        if !self.out.is_empty() {
            return Some(Instant::ZERO);
        }
        self.queue.peek().map(|Reverse(h)| Instant::from_nanos(h.due))
    }

    /// Queue one copy of `frame` with its departure time.
    fn enqueue(&mut self, now: u64, frame: &[u8]) {
        let Some(slot) = self.free.pop() else {
            self.counters.rate_dropped += 1;
            return;
        };
        let mut depart = now;
        if let Some(rate) = self.cfg.rate_bps {
            let ser = (frame.len() as u128 * 8 * 1_000_000_000 / rate as u128).min(u64::MAX as u128) as u64;
            self.rate_free_at = self.rate_free_at.max(now).saturating_add(ser);
            depart = self.rate_free_at;
        }
        let delay = self.cfg.delay.as_nanos().min(u64::MAX as u128) as u64;
        let jitter = self.cfg.jitter.as_nanos().min(u64::MAX as u128) as u64;
        let mut due = depart.saturating_add(delay).saturating_add(self.rng.up_to(jitter));
        if self.rng.chance(self.cfg.reorder) {
            let hold = match self.cfg.reorder_hold.as_nanos().min(u64::MAX as u128) as u64 {
                0 => delay.saturating_add(jitter).max(1_000_000),
                h => h,
            };
            due = due.saturating_add(hold);
        } else {
            due = due.max(self.last_due);
            self.last_due = due;
        }
        let start = slot as usize * self.slot_size;
        self.data[start..start + frame.len()].copy_from_slice(frame);
        self.queue.push(Reverse(Held { due, seq: self.next_seq, slot, len: frame.len() as u32 }));
        self.next_seq += 1;
    }

    /// Hand every frame due at `now` to the inner link, as far as it takes them.
    fn release(&mut self, now: Instant) -> Result<(), LinkError> {
        // Bounded: each round moves up to OUT_BATCH frames out of a queue of queue_limit.
        for _ in 0..self.cfg.queue_limit / OUT_BATCH + 2 {
            if !self.out.is_empty() {
                self.inner.tx_batch(now, &mut self.out)?;
                if !self.out.is_empty() {
                    return Ok(());
                }
            }
            while !self.out.is_full() {
                match self.queue.peek() {
                    Some(Reverse(h)) if h.due <= now.as_nanos() => {}
                    _ => break,
                }
                let Some(Reverse(h)) = self.queue.pop() else {
                    break;
                };
                let start = h.slot as usize * self.slot_size;
                // Cannot fail: the batch is not full and a held frame fits a slot of it.
                let pushed = self.out.push(&self.data[start..start + h.len as usize]);
                debug_assert!(pushed, "a due frame did not fit the out batch");
                self.free.push(h.slot);
                match self.max_released {
                    Some(m) if h.seq < m => self.counters.reordered += 1,
                    _ => self.max_released = Some(h.seq),
                }
            }
            if self.out.is_empty() {
                return Ok(());
            }
        }
        Ok(())
    }
}

impl<L: Link> Link for Impaired<L> {
    fn max_frame(&self) -> usize {
        self.inner.max_frame()
    }

    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.release(now)?;
        self.inner.rx_batch(now, batch)
    }

    /// Takes every frame of the batch (lost and queue-full frames are counted, not left).
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.release(now)?;
        let n = batch.len();
        for i in 0..n {
            let frame = batch.get(i);
            if frame.len() > self.slot_size {
                self.counters.oversize += 1;
                continue;
            }
            if self.rng.chance(self.cfg.loss) {
                self.counters.lost += 1;
                continue;
            }
            let copies = if self.rng.chance(self.cfg.duplicate) { 2 } else { 1 };
            // Split borrows: the frame lives in `batch`, the queue in `self`.
            for c in 0..copies {
                let frame = batch.get(i);
                if c == 1 {
                    self.counters.duplicated += 1;
                }
                self.enqueue(now.as_nanos(), frame);
            }
        }
        batch.clear();
        self.release(now)?;
        Ok(n)
    }

    fn stats(&self) -> LinkStats {
        let mut s = self.inner.stats();
        s.impair_lost += self.counters.lost;
        s.impair_duplicated += self.counters.duplicated;
        s.impair_reordered += self.counters.reordered;
        s.impair_rate_dropped += self.counters.rate_dropped;
        s.dropped_oversize += self.counters.oversize;
        s
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn raw_fd(&self) -> Option<i32> {
        self.inner.raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{mem, LinkConfig};

    /// Send `n` numbered frames one per `gap_us`, polling both ends; returns the sequence
    /// numbers received and the final stats of the impaired side.
    fn run(cfg: Impairment, n: u32, gap_us: u64, size: usize) -> (Vec<u32>, LinkStats) {
        let (a, mut b) = mem::pair(LinkConfig::default().depth(16384));
        let mut a = Impaired::new(a, cfg).unwrap();
        let mut tx = FrameBatch::new(1, 1518);
        let mut rx = FrameBatch::new(64, 1518);
        let mut got = Vec::new();
        let mut t = 0u64;
        for i in 0..n {
            assert!(tx.push_with(|s| {
                s[..4].copy_from_slice(&i.to_le_bytes());
                size
            }));
            a.tx_batch(Instant::from_micros(t), &mut tx).unwrap();
            t += gap_us;
        }
        // Drain: poll until everything due has gone (bounded).
        for _ in 0..100_000 {
            a.rx_batch(Instant::from_micros(t), &mut rx).unwrap();
            rx.clear();
            if a.held() == 0 {
                break;
            }
            t += 100;
        }
        loop {
            rx.clear();
            if b.rx_batch(Instant::from_micros(t), &mut rx).unwrap() == 0 {
                break;
            }
            got.extend(rx.iter().map(|f| u32::from_le_bytes(f[..4].try_into().unwrap())));
        }
        (got, a.stats())
    }

    #[test]
    fn loss_is_in_band_and_deterministic() {
        let cfg = Impairment { loss: 0.1, seed: 42, ..Default::default() };
        let (got1, s1) = run(cfg, 10_000, 10, 64);
        let (got2, s2) = run(cfg, 10_000, 10, 64);
        assert!((800..=1200).contains(&s1.impair_lost), "lost {}", s1.impair_lost);
        assert_eq!(got1.len() as u64, 10_000 - s1.impair_lost);
        assert_eq!(got1, got2);
        assert_eq!(s1, s2);
        let (_, s3) = run(Impairment { seed: 43, ..cfg }, 10_000, 10, 64);
        assert_ne!(s3.impair_lost, 0);
    }

    #[test]
    fn delay_holds_frames_until_due() {
        let (a, mut b) = mem::pair(LinkConfig::default());
        let mut a = Impaired::new(a, Impairment { delay: Duration::from_millis(1), ..Default::default() }).unwrap();
        let mut batch = FrameBatch::new(4, 1518);
        assert!(batch.push(&[1; 60]));
        assert_eq!(a.tx_batch(Instant::ZERO, &mut batch).unwrap(), 1);
        let mut rx = FrameBatch::new(4, 1518);
        a.rx_batch(Instant::from_micros(999), &mut rx).unwrap();
        assert_eq!(b.rx_batch(Instant::from_micros(999), &mut rx).unwrap(), 0);
        assert_eq!(a.next_due(), Some(Instant::from_millis(1)));
        a.rx_batch(Instant::from_millis(1), &mut rx).unwrap();
        assert_eq!(b.rx_batch(Instant::from_millis(1), &mut rx).unwrap(), 1);
        assert_eq!(a.held(), 0);
    }

    #[test]
    fn rate_limit_spaces_departures_and_bounds_the_queue() {
        // 1000-byte frames at 8 Mbit/s: one per millisecond.
        let cfg = Impairment { rate_bps: Some(8_000_000), queue_limit: 4, ..Default::default() };
        let (a, mut b) = mem::pair(LinkConfig::default());
        let mut a = Impaired::new(a, cfg).unwrap();
        let mut batch = FrameBatch::new(8, 1518);
        for i in 0..6u8 {
            assert!(batch.push(&[i; 1000]));
        }
        assert_eq!(a.tx_batch(Instant::ZERO, &mut batch).unwrap(), 6);
        assert_eq!(a.stats().impair_rate_dropped, 2);
        let mut rx = FrameBatch::new(8, 1518);
        let mut arrivals = Vec::new();
        for ms in 0..6u64 {
            for step in [0u64, 999] {
                let now = Instant::from_micros(ms * 1000 + step);
                a.rx_batch(now, &mut rx).unwrap();
                rx.clear();
                for _ in 0..b.rx_batch(now, &mut rx).unwrap() {
                    arrivals.push(now.as_nanos() / 1000);
                }
            }
        }
        assert_eq!(arrivals, vec![1000, 2000, 3000, 4000]);
    }

    #[test]
    fn duplication_and_reordering_happen_when_configured() {
        let cfg = Impairment { duplicate: 0.05, reorder: 0.05, seed: 7, ..Default::default() };
        let (got, s) = run(cfg, 2_000, 10, 64);
        assert!(s.impair_duplicated > 0 && s.impair_reordered > 0, "{s:?}");
        assert_eq!(got.len() as u64, 2_000 + s.impair_duplicated);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 2_000, "every frame arrives at least once");
        assert_ne!(got, {
            let mut g = got.clone();
            g.sort();
            g
        });
    }

    #[test]
    fn bad_configuration_is_refused() {
        let (a, _b) = mem::pair(LinkConfig::default());
        assert!(Impaired::new(a, Impairment { loss: 1.5, ..Default::default() }).is_err());
        assert!(Impairment { rate_bps: Some(0), ..Default::default() }.validate().is_err());
        assert!(Impairment { queue_limit: 0, ..Default::default() }.validate().is_err());
    }

    #[test]
    fn rng_is_deterministic_and_spread() {
        let (mut r1, mut r2) = (Rng::new(5), Rng::new(5));
        let v: Vec<u64> = (0..4).map(|_| r1.next_u64()).collect();
        assert_eq!(v, (0..4).map(|_| r2.next_u64()).collect::<Vec<_>>());
        let mean = (0..10_000).map(|_| r1.unit()).sum::<f64>() / 10_000.0;
        assert!((0.45..0.55).contains(&mean), "{mean}");
    }
}
