//! Two in-process links connected back to back by two heap rings.

use crate::ring::{self, RingConsumer, RingLayout, RingProducer};
use crate::{FrameBatch, Instant, Link, LinkConfig, LinkError, LinkStats};

/// One end of an in-process pair (see [`pair`]). Lock-free; the two ends may live on different threads.
pub struct MemLink {
    tx: RingTx,
    rx: RingConsumer,
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
    Ok((MemLink { tx: RingTx::new(a_tx, max_frame), rx: a_rx }, MemLink { tx: RingTx::new(b_tx, max_frame), rx: b_rx }))
}

impl MemLink {
    /// Hand up to `max` received frames to `f` in place, without copying; returns how many.
    pub fn rx_with(&mut self, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
        ring_rx_with(&mut self.rx, max, f)
    }
}

/// Shared by the ring-backed links: hand up to `max` frames to `f` where they lie in the
/// ring, report `Closed` once drained.
pub(crate) fn ring_rx_with(rx: &mut RingConsumer, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
    // Read the flag first: frames published before the peer closed are still delivered.
    let closed = rx.is_peer_closed();
    let n = rx.pop_with(max, f);
    if n == 0 && closed && max > 0 {
        return Err(LinkError::Closed);
    }
    Ok(n)
}

/// The transmit side of a ring-backed link, itself a [`Link`] that never receives: what the
/// link lends beside frames it hands out in place ([`Link::rx_in_place`]), so that replies
/// go out while the received frames are still borrowed from the receive ring.
pub struct RingTx {
    tx: RingProducer,
    max_frame: usize,
}

impl RingTx {
    pub(crate) fn new(tx: RingProducer, max_frame: usize) -> RingTx {
        RingTx { tx, max_frame }
    }

    /// The producer end of the transmit ring.
    pub(crate) fn producer(&self) -> &RingProducer {
        &self.tx
    }

    /// Receive in place from `rx`, lending this transmit side to `f`.
    pub(crate) fn serve_in_place(
        &mut self,
        rx: &mut RingConsumer,
        max: usize,
        f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Result<usize, LinkError> {
        ring_rx_with(rx, max, |frame| f(self, frame))
    }
}

impl Link for RingTx {
    fn max_frame(&self) -> usize {
        self.max_frame
    }
    fn rx_batch(&mut self, _now: Instant, _batch: &mut FrameBatch) -> Result<usize, LinkError> {
        Ok(0)
    }
    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        ring_tx(&mut self.tx, batch)
    }
    fn stats(&self) -> LinkStats {
        let t = self.tx.stats();
        LinkStats {
            tx_frames: t.frames,
            tx_bytes: t.bytes,
            dropped_oversize: t.dropped_oversize,
            ..LinkStats::default()
        }
    }
    fn kind(&self) -> &'static str {
        "ring-tx"
    }
    fn tx_in_place(
        &mut self,
        _now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        Some(ring_tx_in_place(&mut self.tx, build))
    }
}

/// Shared by the ring-backed links: build a frame in the transmit ring's next slot (staged
/// until the next `tx_batch`), `Closed` if nobody will read.
pub(crate) fn ring_tx_in_place(
    tx: &mut RingProducer,
    build: &mut dyn FnMut(&mut [u8]) -> usize,
) -> Result<bool, LinkError> {
    if tx.is_peer_closed() {
        return Err(LinkError::Closed);
    }
    Ok(tx.stage_with(build).unwrap_or(false))
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
        self.tx.max_frame
    }
    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        ring_rx(&mut self.rx, batch)
    }
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.tx.tx_batch(now, batch)
    }
    fn stats(&self) -> LinkStats {
        ring_stats(self.tx.producer(), &self.rx)
    }
    fn kind(&self) -> &'static str {
        "mem"
    }
    fn rx_in_place(
        &mut self,
        _now: Instant,
        max: usize,
        f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Option<Result<usize, LinkError>> {
        Some(self.tx.serve_in_place(&mut self.rx, max, f))
    }
    fn tx_in_place(
        &mut self,
        now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        self.tx.tx_in_place(now, build)
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
    fn frames_handled_in_place_can_be_answered_through_the_lent_transmit_side() {
        let (mut a, mut b) = pair(LinkConfig::default());
        let now = Instant::ZERO;
        let mut batch = FrameBatch::new(8, 2048);
        for k in 0..3u8 {
            assert!(batch.push(&[k; 64]));
        }
        assert_eq!(a.tx_batch(now, &mut batch).unwrap(), 3);
        let mut seen = Vec::new();
        let mut answer = |tx: &mut dyn Link, frame: &[u8]| {
            seen.push(frame[0]);
            let mut reply = FrameBatch::new(1, 2048);
            assert!(reply.push(&[frame[0] + 10; 60]));
            assert_eq!(tx.tx_batch(now, &mut reply).unwrap(), 1);
        };
        // At most `max` frames per call, in order.
        assert_eq!(b.rx_in_place(now, 2, &mut answer).unwrap().unwrap(), 2);
        assert_eq!(b.rx_in_place(now, 8, &mut answer).unwrap().unwrap(), 1);
        assert_eq!(seen, [0, 1, 2]);
        let mut got = FrameBatch::new(8, 2048);
        assert_eq!(a.rx_batch(now, &mut got).unwrap(), 3);
        assert_eq!(got.iter().map(|f| f[0]).collect::<Vec<_>>(), [10, 11, 12]);
        let (sa, sb) = (a.stats(), b.stats());
        assert_eq!((sb.rx_frames, sb.rx_bytes, sb.tx_frames), (3, 3 * 64, 3));
        assert_eq!((sa.tx_frames, sa.rx_frames), (3, 3));
        drop(a);
        let err = b.rx_in_place(now, 8, &mut |_, _| panic!("no frame is left")).unwrap();
        assert!(matches!(err, Err(LinkError::Closed)), "{err:?}");
    }

    #[test]
    fn frames_built_in_place_leave_at_the_next_tx_batch_before_its_own() {
        let (mut a, mut b) = pair(LinkConfig::default().depth(4));
        let now = Instant::ZERO;
        let build = |k: u8| {
            move |buf: &mut [u8]| {
                assert_eq!(buf.len(), 1518, "the whole slot, max_frame bytes");
                buf[..60].fill(k);
                60
            }
        };
        assert!(a.tx_in_place(now, &mut build(1)).unwrap().unwrap());
        assert!(a.tx_in_place(now, &mut build(2)).unwrap().unwrap());
        let mut got = FrameBatch::new(8, 2048);
        assert_eq!(b.rx_batch(now, &mut got).unwrap(), 0, "not handed over yet");
        let mut batch = FrameBatch::new(4, 2048);
        assert!(batch.push(&[3; 60]));
        assert_eq!(a.tx_batch(now, &mut batch).unwrap(), 1);
        assert!(a.tx_in_place(now, &mut build(4)).unwrap().unwrap());
        assert!(!a.tx_in_place(now, &mut build(5)).unwrap().unwrap(), "the ring is full");
        assert_eq!(a.tx_batch(now, &mut FrameBatch::new(1, 64)).unwrap(), 0, "an empty batch hands them over");
        assert_eq!(b.rx_batch(now, &mut got).unwrap(), 4);
        assert_eq!(got.iter().map(|f| f[0]).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(a.stats().tx_frames, 4);
        drop(b);
        let closed = a.tx_in_place(now, &mut build(6)).unwrap();
        assert!(matches!(closed, Err(LinkError::Closed)), "{closed:?}");
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
