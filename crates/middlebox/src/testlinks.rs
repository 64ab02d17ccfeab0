//! Links for tests and benchmarks: a port that generates frames from templates (like Rosebud's
//! tester FPGA) and counts or inspects what it is sent, without any other thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use link::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};

/// Counters of a [`TestLink`], readable while the runtime owns the link.
#[derive(Debug, Default)]
pub struct Tally {
    generated: AtomicU64,
    frames: AtomicU64,
    bytes: AtomicU64,
    kept: Mutex<Vec<Vec<u8>>>,
}

impl Tally {
    /// Frames the link generated (handed to the middlebox).
    pub fn generated(&self) -> u64 {
        self.generated.load(Ordering::Acquire)
    }

    /// Frames the middlebox sent to the link.
    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::Acquire)
    }

    /// Bytes the middlebox sent to the link.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// Take the frames kept so far (links made with `keep`).
    pub fn take_kept(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A frame inspector: sees every frame the middlebox sends to the link.
pub type Inspector = Box<dyn FnMut(&[u8]) + Send>;

/// A port that generates frames and absorbs (counts, keeps or inspects) what it is sent.
pub struct TestLink {
    frames: Vec<Vec<u8>>,
    next: usize,
    remaining: u64,
    stamp: Option<usize>,
    seq: u64,
    keep: bool,
    inspector: Option<Inspector>,
    tally: Arc<Tally>,
    stats: LinkStats,
    max_frame: usize,
}

impl TestLink {
    /// A link that generates `count` frames cycling through `frames` (none if `frames` is empty).
    pub fn generator(frames: Vec<Vec<u8>>, count: u64) -> Self {
        let remaining = if frames.is_empty() { 0 } else { count };
        TestLink {
            frames,
            next: 0,
            remaining,
            stamp: None,
            seq: 0,
            keep: false,
            inspector: None,
            tally: Arc::new(Tally::default()),
            stats: LinkStats::default(),
            max_frame: MAX_FRAME,
        }
    }

    /// A link that generates nothing and only absorbs.
    pub fn sink() -> Self {
        Self::generator(Vec::new(), 0)
    }

    /// Write a little-endian u64 sequence number (0, 1, ...) at `offset` of every generated
    /// frame long enough to hold it.
    pub fn stamp_seq(mut self, offset: usize) -> Self {
        self.stamp = Some(offset);
        self
    }

    /// Keep a copy of every frame sent to the link (see [`Tally::take_kept`]).
    pub fn keep(mut self) -> Self {
        self.keep = true;
        self
    }

    /// Show every frame sent to the link to `f`.
    pub fn inspect(mut self, f: impl FnMut(&[u8]) + Send + 'static) -> Self {
        self.inspector = Some(Box::new(f));
        self
    }

    /// The counters, shared.
    pub fn tally(&self) -> Arc<Tally> {
        self.tally.clone()
    }
}

impl Link for TestLink {
    fn max_frame(&self) -> usize {
        self.max_frame
    }

    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let mut n = 0;
        while self.remaining > 0 && !batch.is_full() {
            let f = &self.frames[self.next];
            let ok = match self.stamp {
                None => batch.push(f),
                Some(off) => {
                    let seq = self.seq;
                    batch.push_with(|slot| {
                        let Some(dst) = slot.get_mut(..f.len()) else { return 0 };
                        dst.copy_from_slice(f);
                        if let Some(s) = dst.get_mut(off..off + 8) {
                            s.copy_from_slice(&seq.to_le_bytes());
                        }
                        f.len()
                    })
                }
            };
            self.next += 1;
            if self.next == self.frames.len() {
                self.next = 0;
            }
            self.remaining -= 1;
            self.seq += 1;
            if ok {
                n += 1;
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += f.len() as u64;
            } else {
                self.stats.rx_dropped_no_room += 1;
            }
        }
        if n > 0 {
            self.tally.generated.fetch_add(n as u64, Ordering::Release);
        }
        Ok(n)
    }

    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let n = batch.len();
        let bytes = batch.bytes() as u64;
        if let Some(i) = self.inspector.as_mut() {
            for f in batch.iter() {
                i(f);
            }
        }
        if self.keep {
            self.tally.kept.lock().unwrap_or_else(|e| e.into_inner()).extend(batch.iter().map(<[u8]>::to_vec));
        }
        batch.clear();
        self.stats.tx_frames += n as u64;
        self.stats.tx_bytes += bytes;
        self.tally.bytes.fetch_add(bytes, Ordering::Release);
        self.tally.frames.fetch_add(n as u64, Ordering::Release);
        Ok(n)
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }

    fn kind(&self) -> &'static str {
        "test"
    }
}

/// A link that never receives and discards what it is sent (an output that is only recorded,
/// e.g. wrapped in a `link::pcap::PcapWriter`).
#[derive(Debug, Default)]
pub struct NullLink {
    stats: LinkStats,
}

impl NullLink {
    /// A new null link.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Link for NullLink {
    fn max_frame(&self) -> usize {
        MAX_FRAME
    }

    fn rx_batch(&mut self, _now: Instant, _batch: &mut FrameBatch) -> Result<usize, LinkError> {
        Ok(0)
    }

    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let n = batch.len();
        self.stats.tx_frames += n as u64;
        self.stats.tx_bytes += batch.iter().map(|f| f.len() as u64).sum::<u64>();
        batch.clear();
        Ok(n)
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }

    fn kind(&self) -> &'static str {
        "null"
    }
}

/// The two queues behind a [`QueueLink`].
#[derive(Debug, Default)]
struct Queues {
    to_mb: Mutex<std::collections::VecDeque<Vec<u8>>>,
    from_mb: Mutex<std::collections::VecDeque<Vec<u8>>>,
}

/// A port fed and drained by code outside the middlebox (a test bench, Python): frames
/// [`QueueHandle::send`] puts in arrive on the port; frames the middlebox sends out of the port
/// wait for [`QueueHandle::recv_all`].
#[derive(Debug)]
pub struct QueueLink {
    q: Arc<Queues>,
    stats: LinkStats,
}

/// The outside end of a [`QueueLink`].
#[derive(Debug, Clone)]
pub struct QueueHandle {
    q: Arc<Queues>,
}

impl QueueLink {
    /// A queue port and its outside handle.
    pub fn new() -> (QueueLink, QueueHandle) {
        let q = Arc::new(Queues::default());
        (QueueLink { q: q.clone(), stats: LinkStats::default() }, QueueHandle { q })
    }
}

impl QueueHandle {
    /// Queue `frame` to arrive on the port.
    pub fn send(&self, frame: &[u8]) {
        self.q.to_mb.lock().unwrap_or_else(|e| e.into_inner()).push_back(frame.to_vec());
    }

    /// Take every frame the middlebox sent out of the port.
    pub fn recv_all(&self) -> Vec<Vec<u8>> {
        self.q.from_mb.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect()
    }

    /// Frames queued to arrive and not yet taken by the middlebox.
    pub fn pending(&self) -> usize {
        self.q.to_mb.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Link for QueueLink {
    fn max_frame(&self) -> usize {
        MAX_FRAME
    }

    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let mut q = self.q.to_mb.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        while !batch.is_full() {
            let Some(f) = q.pop_front() else { break };
            if batch.push(&f) {
                n += 1;
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += f.len() as u64;
            } else {
                self.stats.dropped_oversize += 1;
            }
        }
        Ok(n)
    }

    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let n = batch.len();
        let mut q = self.q.from_mb.lock().unwrap_or_else(|e| e.into_inner());
        for f in batch.iter() {
            self.stats.tx_frames += 1;
            self.stats.tx_bytes += f.len() as u64;
            q.push_back(f.to_vec());
        }
        batch.clear();
        Ok(n)
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }

    fn kind(&self) -> &'static str {
        "queue"
    }
}
