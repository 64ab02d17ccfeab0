//! Two in-process links connected back to back by two heap rings.

use crate::ring::{self, RingConsumer, RingLayout, RingProducer};
use crate::{FrameBatch, Instant, Link, LinkConfig, LinkError, LinkStats};

/// One end of an in-process pair (see [`pair`]). Lock-free; the two ends may live on different threads.
pub struct MemLink {
    tx: RingProducer,
    rx: RingConsumer,
    max_frame: usize,
}

/// Two links wired back to back: what one sends, the other receives.
///
/// ```
/// use link::{mem, FrameBatch, Instant, Link, LinkConfig};
/// let (mut a, mut b) = mem::pair(LinkConfig::default().mtu(9000).depth(256));
/// assert_eq!(a.max_frame(), 9018);
/// let mut batch = FrameBatch::new(8, a.max_frame());
/// assert!(batch.push(b"any bytes: the link does not parse frames"));
/// assert_eq!(a.tx_batch(Instant::ZERO, &mut batch).unwrap(), 1);
/// let mut got = FrameBatch::new(8, b.max_frame());
/// assert_eq!(b.rx_batch(Instant::ZERO, &mut got).unwrap(), 1);
/// ```
///
/// # Panics
/// If `config` is invalid (see [`LinkConfig::validate`]); use [`try_pair`] to get the error instead.
pub fn pair(config: LinkConfig) -> (MemLink, MemLink) {
    match try_pair(config) {
        Ok(p) => p,
        Err(e) => panic!("link::mem::pair: {e}"),
    }
}

/// Like [`pair`], returning an error for an invalid configuration or a failed allocation.
pub fn try_pair(config: LinkConfig) -> Result<(MemLink, MemLink), LinkError> {
    config.validate()?;
    let layout = RingLayout::new(config.depth, config.max_frame())?;
    let (a_tx, b_rx) = ring::heap(layout)?;
    let (b_tx, a_rx) = ring::heap(layout)?;
    let max_frame = config.max_frame();
    Ok((MemLink { tx: a_tx, rx: a_rx, max_frame }, MemLink { tx: b_tx, rx: b_rx, max_frame }))
}

impl MemLink {
    /// Hand up to `max` received frames to `f` in place, without copying; returns how many.
    pub fn rx_with(&mut self, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
        let closed = self.rx.is_peer_closed();
        let n = self.rx.pop_with(max, f);
        if n == 0 && closed {
            return Err(LinkError::Closed);
        }
        Ok(n)
    }
}

/// Shared by the ring-backed links: receive into a batch, report `Closed` once drained.
pub(crate) fn ring_rx(rx: &mut RingConsumer, batch: &mut FrameBatch) -> Result<usize, LinkError> {
    // Read the flag first: frames published before the peer closed are still delivered.
    let closed = rx.is_peer_closed();
    let n = rx.pop_batch(batch);
    if n == 0 && closed && !batch.is_full() {
        return Err(LinkError::Closed);
    }
    Ok(n)
}

/// Shared by the ring-backed links: send from a batch, `Closed` if nobody will read.
pub(crate) fn ring_tx(tx: &mut RingProducer, batch: &mut FrameBatch) -> Result<usize, LinkError> {
    if tx.is_peer_closed() {
        return Err(LinkError::Closed);
    }
    Ok(tx.push_batch(batch).0)
}

/// Counters of a ring-backed link, from its two ring ends.
pub(crate) fn ring_stats(tx: &RingProducer, rx: &RingConsumer) -> LinkStats {
    let (t, r) = (tx.stats(), rx.stats());
    LinkStats {
        rx_frames: r.frames,
        rx_bytes: r.bytes,
        tx_frames: t.frames,
        tx_bytes: t.bytes,
        dropped_oversize: t.dropped_oversize + r.dropped_oversize + r.corrupt,
        ..LinkStats::default()
    }
}

impl Link for MemLink {
    fn max_frame(&self) -> usize {
        self.max_frame
    }
    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        ring_rx(&mut self.rx, batch)
    }
    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        ring_tx(&mut self.tx, batch)
    }
    fn stats(&self) -> LinkStats {
        ring_stats(&self.tx, &self.rx)
    }
    fn kind(&self) -> &'static str {
        "mem"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_both_ways_and_counters() {
        let (mut a, mut b) = pair(LinkConfig::default());
        let now = Instant::ZERO;
        let mut batch = FrameBatch::new(8, 2048);
        assert!(batch.push(&[0xaa; 60]));
        assert!(batch.push(&[0xbb; 1518]));
        assert!(batch.push(&[0xcc; 1519]));
        assert_eq!(a.tx_batch(now, &mut batch).unwrap(), 2);
        assert!(batch.is_empty());
        let mut got = FrameBatch::new(8, 2048);
        assert_eq!(b.rx_batch(now, &mut got).unwrap(), 2);
        assert_eq!(got.get(0), &[0xaa; 60]);
        assert_eq!(got.get(1).len(), 1518);
        let s = a.stats();
        assert_eq!((s.tx_frames, s.tx_bytes, s.dropped_oversize), (2, 60 + 1518, 1));
        assert_eq!(b.stats().rx_frames, 2);
        assert!(batch.push(b"back"));
        b.tx_batch(now, &mut batch).unwrap();
        let mut seen = Vec::new();
        assert_eq!(a.rx_with(8, |f| seen.extend_from_slice(f)).unwrap(), 1);
        assert_eq!(seen, b"back");
        assert_eq!(a.kind(), "mem");
        assert_eq!(a.max_frame(), 1518);
    }

    #[test]
    fn full_ring_leaves_frames_and_closed_after_drop() {
        let (mut a, mut b) = pair(LinkConfig::default().depth(2));
        let now = Instant::ZERO;
        let mut batch = FrameBatch::new(4, 64);
        for i in 0..3u8 {
            assert!(batch.push(&[i; 20]));
        }
        assert_eq!(a.tx_batch(now, &mut batch).unwrap(), 2);
        assert_eq!(batch.len(), 1);
        drop(a);
        let mut got = FrameBatch::new(4, 64);
        assert_eq!(b.rx_batch(now, &mut got).unwrap(), 2, "frames sent before the drop still arrive");
        got.clear();
        assert!(matches!(b.rx_batch(now, &mut got), Err(LinkError::Closed)));
        assert!(matches!(b.tx_batch(now, &mut batch), Err(LinkError::Closed)));
    }

    #[test]
    fn mem_link_is_send() {
        fn is_send<T: Send>() {}
        is_send::<MemLink>();
    }
}
