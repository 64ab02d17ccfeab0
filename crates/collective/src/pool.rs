//! Reuse of message buffers within one endpoint.
//!
//! Every message an endpoint sends or receives needs a byte buffer, and every operation a
//! working buffer. Freshly allocated, a large buffer is a new mapping from the kernel:
//! about one page fault per 4 KiB written, and the pages go back on free. A [`BufPool`]
//! keeps buffers that operations are done with and hands them out again, so a run of
//! operations of similar sizes touches warm memory.

/// Buffers an endpoint has finished with, kept for the next message or operation.
#[derive(Debug)]
pub struct BufPool {
    /// Empty buffers with capacity, smallest first.
    free: Vec<Vec<u8>>,
    /// Sum of the capacities in `free`.
    bytes: usize,
    /// Most bytes of capacity kept.
    max_bytes: usize,
    /// Most buffers kept.
    max_bufs: usize,
}

/// Buffers smaller than this are not kept. Small ones are cheap to allocate, but glibc's
/// per-thread cache stops at about 1 KiB: a 1 KiB message with its header (1,048 bytes)
/// took malloc's and free's slow paths, so from half a KiB on buffers are kept (callgrind,
/// `coll_cost` on 2 ranks: a 1 KiB all-reduce 24,596 -> 23,864 instructions with 512
/// instead of 4,096 here).
const MIN_KEPT: usize = 512;

impl BufPool {
    /// A pool keeping at most `max_bufs` buffers of at most `max_bytes` capacity in all.
    pub fn new(max_bufs: usize, max_bytes: usize) -> Self {
        BufPool { free: Vec::new(), bytes: 0, max_bytes, max_bufs }
    }

    /// An empty buffer with room for at least `len` bytes: the smallest kept one that is
    /// large enough and not more than four times too large, or a new one.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        self.take_or_new(len, len)
    }

    /// [`BufPool::take`], except that a new buffer gets capacity `fresh` (a receiver
    /// reserves at most part of an announced length until the bytes arrive).
    pub fn take_or_new(&mut self, len: usize, fresh: usize) -> Vec<u8> {
        match self.free.iter().position(|b| b.capacity() >= len) {
            Some(i) if self.free[i].capacity() <= 4 * len.max(MIN_KEPT) => {
                let b = self.free.remove(i);
                self.bytes -= b.capacity();
                b
            }
            _ => Vec::with_capacity(fresh),
        }
    }

    /// Hands back a buffer nobody uses any more. Kept if it is worth keeping and fits the
    /// bounds (a larger buffer displaces the smallest kept ones); otherwise freed.
    pub fn give(&mut self, mut b: Vec<u8>) {
        let cap = b.capacity();
        if cap < MIN_KEPT || cap > self.max_bytes {
            return;
        }
        while !self.free.is_empty() && (self.free.len() >= self.max_bufs || self.bytes + cap > self.max_bytes) {
            if self.free[0].capacity() >= cap {
                return;
            }
            let old = self.free.remove(0);
            self.bytes -= old.capacity();
        }
        b.clear();
        let at = self.free.partition_point(|x| x.capacity() < cap);
        self.free.insert(at, b);
        self.bytes += cap;
    }

    /// Buffers kept.
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// Whether no buffer is kept.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }

    /// Bytes of capacity kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_buffer_is_handed_out_again_within_the_bounds() {
        let mut p = BufPool::new(2, 1 << 20);
        let b = p.take(100_000);
        let ptr = b.as_ptr();
        p.give(b);
        assert_eq!((p.len(), p.bytes()), (1, 100_000));
        let again = p.take(50_000);
        assert_eq!(again.as_ptr(), ptr, "the kept buffer is reused");
        assert!(again.is_empty() && p.is_empty());
        // Too small to keep, too large to keep.
        p.give(Vec::with_capacity(100));
        p.give(Vec::with_capacity(2 << 20));
        assert!(p.is_empty());
        // At the count bound a larger buffer displaces the smallest; a smaller one is dropped.
        p.give(Vec::with_capacity(10_000));
        p.give(Vec::with_capacity(20_000));
        p.give(Vec::with_capacity(30_000));
        assert_eq!((p.len(), p.bytes()), (2, 50_000));
        p.give(Vec::with_capacity(5_000));
        assert_eq!((p.len(), p.bytes()), (2, 50_000));
        // The byte bound.
        p.give(Vec::with_capacity(1 << 20));
        assert_eq!((p.len(), p.bytes()), (1, 1 << 20));
        // A small request does not take a huge buffer.
        assert_eq!(p.take(10).capacity(), 10);
        assert_eq!(p.len(), 1);
    }
}
