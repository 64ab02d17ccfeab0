//! A fixed-capacity byte ring: the per-session send buffer (data kept until acknowledged) and
//! receive buffer (in-order data not yet read, plus out-of-order data written ahead of it).
//! An empty ring can give its storage back (`detach`, see `storage`) and keeps its capacity.

/// A byte ring of fixed capacity. `len` bytes starting at `head` are readable; the rest is free
/// and may be written ahead at an offset (for out-of-order data) before being committed.
/// A parked ring has a capacity but no storage yet; it gets it on the first write.
#[derive(Debug, Default)]
pub struct RingBuf {
    /// The storage: `cap` bytes, or none while parked.
    buf: Box<[u8]>,
    cap: usize,
    head: usize,
    len: usize,
}

impl RingBuf {
    /// A ring of `capacity` bytes.
    #[cfg(test)]
    pub fn new(capacity: usize) -> Self {
        RingBuf { buf: vec![0u8; capacity].into_boxed_slice(), cap: capacity, head: 0, len: 0 }
    }

    /// A ring of `capacity` bytes without storage until it is written (see `storage`).
    pub fn parked(capacity: usize) -> Self {
        RingBuf { buf: Box::default(), cap: capacity, head: 0, len: 0 }
    }

    /// True if the ring has a capacity but no storage.
    #[inline]
    pub fn is_parked(&self) -> bool {
        self.buf.len() < self.cap
    }

    /// Give a parked ring its storage (`block` must be `capacity()` bytes).
    pub fn attach(&mut self, block: Box<[u8]>) {
        debug_assert!(self.is_parked() && block.len() == self.cap);
        if self.is_parked() && block.len() == self.cap {
            self.buf = block;
            self.head = 0;
        }
    }

    /// Take the storage of an empty ring, which stays usable (parked). The caller guarantees
    /// nothing was written ahead of the (empty) readable data. `None` if the ring holds data
    /// or is already parked.
    pub fn detach(&mut self) -> Option<Box<[u8]>> {
        if self.len != 0 || self.buf.is_empty() {
            return None;
        }
        self.head = 0;
        Some(std::mem::take(&mut self.buf))
    }

    /// Bytes of storage the ring holds (0 when parked).
    #[inline]
    pub fn storage_len(&self) -> usize {
        self.buf.len()
    }

    /// Set the capacity of a parked, empty ring (its storage will come at that size).
    pub fn set_parked_capacity(&mut self, capacity: usize) {
        if self.buf.is_empty() && self.len == 0 {
            self.cap = capacity;
        }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Readable bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing is readable.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Free bytes.
    pub fn free(&self) -> usize {
        self.cap - self.len
    }

    #[inline]
    fn wrap(&self, pos: usize) -> usize {
        let cap = self.cap;
        if pos >= cap {
            pos - cap
        } else {
            pos
        }
    }

    /// Append as much of `data` as fits; returns the number of bytes taken.
    #[inline]
    pub fn enqueue(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.free());
        self.write_at(0, &data[..n]);
        self.len += n;
        n
    }

    /// Storage of its own, for a parked ring written without a pool.
    #[cold]
    fn own_storage(&mut self) {
        self.buf = vec![0u8; self.cap].into_boxed_slice();
        self.head = 0;
    }

    /// Write `data` into the free space, `offset` bytes after the readable data, without
    /// making it readable. Returns the number of bytes written (clipped to the free space).
    #[inline]
    pub fn write_at(&mut self, offset: usize, data: &[u8]) -> usize {
        if offset >= self.free() {
            return 0;
        }
        let n = data.len().min(self.free() - offset);
        if n > 0 && self.is_parked() {
            self.own_storage();
        }
        let cap = self.cap;
        let start = self.wrap(self.head + self.len + offset);
        let first = n.min(cap - start);
        self.buf[start..start + first].copy_from_slice(&data[..first]);
        self.buf[..n - first].copy_from_slice(&data[first..n]);
        n
    }

    /// Make `n` bytes written ahead with `write_at(0, ..)` readable.
    pub fn commit(&mut self, n: usize) {
        self.len = (self.len + n).min(self.buf.len());
    }

    /// The readable bytes from `offset`, at most `max`, as up to two slices.
    #[inline]
    pub fn peek(&self, offset: usize, max: usize) -> (&[u8], &[u8]) {
        if offset >= self.len {
            return (&[], &[]);
        }
        let n = max.min(self.len - offset);
        let cap = self.cap;
        let start = self.wrap(self.head + offset);
        let first = n.min(cap - start);
        (&self.buf[start..start + first], &self.buf[..n - first])
    }

    /// The first contiguous run of readable bytes (zero-copy borrow).
    pub fn contiguous(&self) -> &[u8] {
        self.peek(0, self.len).0
    }

    /// Copy up to `out.len()` readable bytes from `offset` into `out`; returns the count.
    #[inline]
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> usize {
        let (a, b) = self.peek(offset, out.len());
        out[..a.len()].copy_from_slice(a);
        out[a.len()..a.len() + b.len()].copy_from_slice(b);
        a.len() + b.len()
    }

    /// Grow to `capacity` bytes (no-op if not larger), keeping the readable bytes and
    /// everything written ahead of them at the same offsets.
    pub fn grow(&mut self, capacity: usize) {
        let old = self.cap;
        if capacity <= old {
            return;
        }
        self.cap = capacity;
        if self.buf.is_empty() {
            return; // parked: the storage comes at the next write, at the new size
        }
        let mut buf = vec![0u8; capacity].into_boxed_slice();
        let first = old - self.head;
        buf[..first].copy_from_slice(&self.buf[self.head..]);
        buf[first..old].copy_from_slice(&self.buf[..self.head]);
        self.buf = buf;
        self.head = 0;
    }

    /// Drop `n` readable bytes from the front.
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.head = self.wrap(self.head + n);
        self.len -= n;
        // The head is never reset when the ring empties: data written ahead (out of order)
        // stays where `write_at` put it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_writes_ahead() {
        let mut r = RingBuf::new(8);
        assert_eq!(r.enqueue(b"abcdef"), 6);
        r.consume(4);
        assert_eq!(r.enqueue(b"ghijklmn"), 6);
        let mut out = [0u8; 8];
        assert_eq!(r.copy_out(0, &mut out), 8);
        assert_eq!(&out, b"efghijkl");
        assert_eq!(r.contiguous(), b"efgh");
        r.consume(8);
        assert!(r.is_empty());
        assert_eq!(r.write_at(3, b"XY"), 2);
        assert_eq!(r.write_at(0, b"abc"), 3);
        // Written-ahead data must survive the readable part emptying.
        let mut q = RingBuf::new(8);
        q.enqueue(b"xy");
        q.write_at(2, b"Z");
        q.consume(2);
        q.write_at(0, b"ab");
        q.commit(3);
        assert_eq!(q.copy_out(0, &mut out[..3]), 3);
        assert_eq!(&out[..3], b"abZ");
        r.commit(5);
        assert_eq!(r.copy_out(0, &mut out[..5]), 5);
        assert_eq!(&out[..5], b"abcXY");
        assert_eq!(r.write_at(3, b"0123456789"), 0, "offset past the free space");
    }

    #[test]
    fn grows_keeping_readable_and_written_ahead_bytes() {
        let mut r = RingBuf::new(8);
        r.enqueue(b"abcdef");
        r.consume(5);
        r.enqueue(b"ghij");
        assert_eq!(r.write_at(1, b"XY"), 2);
        r.grow(16);
        assert_eq!((r.capacity(), r.len()), (16, 5));
        let mut out = [0u8; 5];
        r.copy_out(0, &mut out);
        assert_eq!(&out, b"fghij");
        r.write_at(0, b"k");
        r.commit(3);
        let mut out = [0u8; 8];
        assert_eq!(r.copy_out(0, &mut out), 8);
        assert_eq!(&out, b"fghijkXY");
        assert_eq!(r.enqueue(b"0123456789"), 8);
    }
}
