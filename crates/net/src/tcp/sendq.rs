//! A session's send queue: the bytes from `SND.UNA` on, in the send ring (what `tcp_send`
//! copied in) followed by whole buffers handed over with the transfer API, which stay where
//! the application put them. Segments are copied from either straight into the frame, so a
//! transfer's bytes are copied once on their way out (the ring's, twice). A transfer whose
//! bytes are all acknowledged goes to a short list the application can take buffers back
//! from, to fill again without touching fresh memory.

use super::ringbuf::RingBuf;
use std::collections::VecDeque;
use wire::checksum;

/// Acknowledged transfer buffers a session keeps for the application to take back; older
/// ones go back to the allocator.
pub const RECLAIM_KEEP: usize = 4;

/// Bytes of acknowledged transfer buffers a session keeps at most, beside the newest one
/// (always kept, whatever its size).
pub const RECLAIM_KEEP_BYTES: usize = 16 << 20;

/// The send ring and the transfers queued after it.
#[derive(Debug, Default)]
pub struct SendQueue {
    /// Data from `tcp_send`, first in sequence order.
    pub ring: RingBuf,
    /// Transfer buffers after the ring's data, each with how many of its bytes were acknowledged.
    transfers: VecDeque<(Vec<u8>, usize)>,
    /// Unacknowledged transfer bytes.
    transfer_len: usize,
    /// Acknowledged transfer buffers, the newest last.
    done: VecDeque<Vec<u8>>,
    /// Capacity of the buffers in `done`.
    done_bytes: usize,
}

impl SendQueue {
    /// A queue whose ring holds `capacity` bytes, parked (see `storage`).
    pub fn parked(capacity: usize) -> Self {
        SendQueue { ring: RingBuf::parked(capacity), ..Default::default() }
    }

    /// Unacknowledged bytes: the ring's and the transfers'.
    #[inline]
    pub fn len(&self) -> usize {
        self.ring.len() + self.transfer_len
    }

    /// Free bytes in the ring.
    #[inline]
    pub fn free(&self) -> usize {
        self.ring.free()
    }

    /// What the buffer takes before it counts as full: the ring's capacity less everything
    /// queued, transfers included.
    #[inline]
    pub fn room(&self) -> usize {
        self.ring.capacity().saturating_sub(self.len())
    }

    /// The ring's capacity.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    /// True if transfers are queued (the ring takes no more data until they are acknowledged,
    /// so the order of the bytes is the order they were handed over).
    #[inline]
    pub fn has_transfers(&self) -> bool {
        !self.transfers.is_empty()
    }

    /// Copy as much of `data` into the ring as fits; 0 while transfers are queued.
    #[inline]
    pub fn enqueue(&mut self, data: &[u8]) -> usize {
        if self.has_transfers() {
            return 0;
        }
        self.ring.enqueue(data)
    }

    /// Queue a whole buffer after everything queued so far, without copying it.
    pub fn push_transfer(&mut self, data: Vec<u8>) {
        if !data.is_empty() {
            self.transfer_len += data.len();
            self.transfers.push_back((data, 0));
        }
    }

    /// Copy `out.len()` bytes (or fewer, at the end) from `offset` into `out`; returns the count.
    #[cfg(test)]
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> usize {
        self.pieces(offset, out.len(), |at, piece| out[at..at + piece.len()].copy_from_slice(piece))
    }

    /// [`Self::copy_out`] that also returns the ones-complement sum of the bytes copied (as
    /// [`checksum::ones_sum`] of `out[..n]`), taken in the same pass: a segment's payload on its
    /// way into a frame, checksummed as it is copied, so the frame is never read back.
    #[inline]
    pub fn copy_out_summed(&self, offset: usize, out: &mut [u8]) -> (usize, u64) {
        let mut sum = 0;
        let n = self.pieces(offset, out.len(), |at, piece| {
            let part = checksum::copy_with_sum(&mut out[at..at + piece.len()], piece);
            // A piece that starts at an odd offset of the payload has its 16-bit lanes swapped.
            let part = if at % 2 == 1 { checksum::at_odd_offset(part) } else { part };
            sum = checksum::combine(sum, part);
        });
        (n, sum)
    }

    /// Hand `f` the queued bytes from `offset` on, at most `len` of them, as contiguous pieces
    /// (the ring's one or two, then the transfers'), each with its offset in the run; returns
    /// the bytes handed.
    #[inline]
    fn pieces(&self, offset: usize, len: usize, mut f: impl FnMut(usize, &[u8])) -> usize {
        let mut n = 0;
        let (a, b) = self.ring.peek(offset, len);
        for piece in [a, b] {
            if !piece.is_empty() {
                f(n, piece);
                n += piece.len();
            }
        }
        if n == len || self.transfers.is_empty() {
            return n;
        }
        let mut skip = (offset + n).saturating_sub(self.ring.len());
        for (buf, acked) in &self.transfers {
            let rest = &buf[*acked..];
            if skip >= rest.len() {
                skip -= rest.len();
                continue;
            }
            let take = (rest.len() - skip).min(len - n);
            f(n, &rest[skip..skip + take]);
            n += take;
            skip = 0;
            if n == len {
                break;
            }
        }
        n
    }

    /// Drop `n` acknowledged bytes from the front: the ring's first, then the transfers'.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        let from_ring = n.min(self.ring.len());
        self.ring.consume(from_ring);
        if self.transfer_len > 0 {
            self.consume_transfers(n - from_ring);
        }
    }

    fn consume_transfers(&mut self, n: usize) {
        let mut left = n.min(self.transfer_len);
        self.transfer_len -= left;
        while left > 0 {
            let Some((buf, acked)) = self.transfers.front_mut() else { break };
            let take = left.min(buf.len() - *acked);
            *acked += take;
            left -= take;
            if *acked == buf.len() {
                let (buf, _) = self.transfers.pop_front().expect("the front transfer");
                self.keep(buf);
            }
        }
    }

    /// Keep an acknowledged buffer for `reclaim`: the newest always, older ones within the
    /// count and byte bounds.
    fn keep(&mut self, buf: Vec<u8>) {
        self.done_bytes += buf.capacity();
        self.done.push_back(buf);
        while self.done.len() > RECLAIM_KEEP || (self.done.len() > 1 && self.done_bytes > RECLAIM_KEEP_BYTES) {
            let old = self.done.pop_front().expect("a kept buffer");
            self.done_bytes -= old.capacity();
        }
    }

    /// Take back the most recently acknowledged transfer buffer, if one is kept.
    pub fn reclaim(&mut self) -> Option<Vec<u8>> {
        let buf = self.done.pop_back()?;
        self.done_bytes -= buf.capacity();
        Some(buf)
    }

    /// Drop everything queued and kept (the session is reused); the ring keeps its storage.
    pub fn clear(&mut self) {
        self.ring.consume(usize::MAX);
        self.transfers.clear();
        self.transfer_len = 0;
        self.done.clear();
        self.done_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> SendQueue {
        let mut q = SendQueue::parked(8);
        assert_eq!(q.enqueue(b"abcdef"), 6);
        q.push_transfer(b"GHI".to_vec());
        q.push_transfer(Vec::new());
        q.push_transfer(b"jklmn".to_vec());
        assert_eq!(q.enqueue(b"zz"), 0, "the ring waits behind the transfers");
        q
    }

    /// A queue whose ring data wraps around the end of its storage, then two transfers.
    fn wrapped_queue() -> SendQueue {
        let mut q = SendQueue::parked(8);
        assert_eq!(q.enqueue(b"abcdefg"), 7);
        q.consume(5);
        assert_eq!(q.enqueue(b"hijkl"), 5);
        q.push_transfer(b"MNO".to_vec());
        q.push_transfer(b"pq".to_vec());
        q
    }

    #[test]
    fn segments_read_across_the_ring_and_the_transfers() {
        for (q, all) in [(queue(), &b"abcdefGHIjklmn"[..]), (wrapped_queue(), &b"fghijklMNOpq"[..])] {
            assert_eq!(q.len(), all.len());
            for offset in 0..=all.len() {
                for len in 0..=all.len() + 2 {
                    let want = &all[offset.min(all.len())..(offset + len).min(all.len())];
                    let mut out = vec![0u8; len];
                    let n = q.copy_out(offset, &mut out);
                    assert_eq!(&out[..n], want, "offset {offset} len {len}");
                    // The summed copy: same bytes, and the sum of them, whatever the pieces' parity.
                    let mut out = vec![0u8; len];
                    let (n, sum) = q.copy_out_summed(offset, &mut out);
                    assert_eq!(&out[..n], want, "summed, offset {offset} len {len}");
                    assert_eq!(
                        checksum::fold(sum),
                        checksum::fold(checksum::ones_sum(want)),
                        "offset {offset} len {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn acknowledged_transfers_come_back_newest_first() {
        let mut q = queue();
        q.consume(4);
        let mut out = [0u8; 6];
        assert_eq!(q.copy_out(0, &mut out), 6);
        assert_eq!(&out, b"efGHIj");
        q.consume(4); // "efGH": the ring is empty, GHI not yet all acknowledged
        assert!(q.reclaim().is_none());
        assert_eq!(q.enqueue(b"x"), 0);
        q.consume(2); // "Ij"
        assert_eq!(q.reclaim().as_deref(), Some(&b"GHI"[..]));
        q.consume(100);
        assert_eq!(q.len(), 0);
        assert_eq!(q.reclaim().as_deref(), Some(&b"jklmn"[..]));
        assert!(q.reclaim().is_none());
        assert_eq!(q.enqueue(b"again"), 5, "with the transfers gone the ring takes data");
    }

    #[test]
    fn only_the_newest_acknowledged_buffers_are_kept() {
        let mut q = SendQueue::parked(8);
        for i in 0..10u8 {
            q.push_transfer(vec![i; 3]);
        }
        q.consume(30);
        let kept: Vec<u8> = std::iter::from_fn(|| q.reclaim()).map(|b| b[0]).collect();
        assert_eq!(kept, vec![9, 8, 7, 6]);
        q.push_transfer(vec![1; RECLAIM_KEEP_BYTES / 2 + 1]);
        q.push_transfer(vec![2; RECLAIM_KEEP_BYTES / 2 + 1]);
        q.push_transfer(vec![3; RECLAIM_KEEP_BYTES + 1]);
        q.consume(usize::MAX);
        assert_eq!(q.reclaim().map(|b| b[0]), Some(3), "the newest is kept whatever its size");
        assert!(q.reclaim().is_none(), "older ones beside it are over the byte bound");
        q.push_transfer(vec![4; 10]);
        q.push_transfer(vec![5; 10]);
        q.consume(usize::MAX);
        assert_eq!(q.reclaim().map(|b| b[0]), Some(5));
        assert_eq!(q.reclaim().map(|b| b[0]), Some(4));
    }
}
