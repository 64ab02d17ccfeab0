//! A batch of frames in one preallocated buffer: the unit every `Link` moves.

/// A fixed-capacity batch of frames stored in one contiguous, preallocated buffer.
///
/// Slot `i` occupies `data[i * slot_size ..][.. slot_size]`; `lens[i]` is the frame length.
/// Frames are built in place with [`FrameBatch::push_with`] or copied in with
/// [`FrameBatch::push`]. Nothing allocates after construction.
///
/// A frame may carry a stamp: the wall-clock time it was captured, in nanoseconds since the
/// Unix epoch, when something knows it (a pcap replay does; see [`FrameBatch::push_stamped`]).
/// Capture writers record a stamped frame with its stamp instead of the time it passed.
#[derive(Debug, Clone)]
pub struct FrameBatch {
    data: Box<[u8]>,
    lens: Box<[u32]>,
    /// Capture time per slot, nanoseconds since the Unix epoch; 0 = not known.
    stamps: Box<[u64]>,
    count: usize,
    slot_size: usize,
    bytes: usize,
}

impl FrameBatch {
    /// A batch of `capacity` slots, each able to hold a frame of `slot_size` bytes.
    pub fn new(capacity: usize, slot_size: usize) -> Self {
        assert!(capacity > 0 && slot_size > 0, "a batch needs at least one non-empty slot");
        FrameBatch {
            data: vec![0u8; capacity * slot_size].into_boxed_slice(),
            lens: vec![0u32; capacity].into_boxed_slice(),
            stamps: vec![0u64; capacity].into_boxed_slice(),
            count: 0,
            slot_size,
            bytes: 0,
        }
    }

    /// Number of frames in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the batch holds no frame.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Maximum number of frames.
    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// True when no slot is free.
    pub fn is_full(&self) -> bool {
        self.count == self.lens.len()
    }

    /// Largest frame a slot can hold.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Total bytes of the frames in the batch.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Forget all frames (buffers are kept).
    pub fn clear(&mut self) {
        self.count = 0;
        self.bytes = 0;
    }

    /// Copy `frame` into the next free slot. Returns false (and copies nothing) when the batch
    /// is full or the frame is larger than a slot.
    #[must_use = "false means the frame was not added (batch full or frame too large): it is lost unless retried"]
    #[inline]
    pub fn push(&mut self, frame: &[u8]) -> bool {
        self.push_with(|slot| {
            if frame.len() > slot.len() {
                return 0;
            }
            slot[..frame.len()].copy_from_slice(frame);
            frame.len()
        })
    }

    /// Build a frame in place: `build` gets the whole free slot and returns the frame length
    /// (0 to abandon). Returns false if the batch was full or `build` abandoned the slot.
    #[must_use = "false means no frame was added (batch full or build abandoned it): it is lost unless retried"]
    #[inline]
    pub fn push_with(&mut self, build: impl FnOnce(&mut [u8]) -> usize) -> bool {
        if self.is_full() {
            return false;
        }
        let start = self.count * self.slot_size;
        let slot = &mut self.data[start..start + self.slot_size];
        let len = build(slot).min(self.slot_size);
        if len == 0 {
            return false;
        }
        self.lens[self.count] = len as u32;
        self.stamps[self.count] = 0;
        self.count += 1;
        self.bytes += len;
        true
    }

    /// Copy `frame` into the next free slot with its capture time `stamp` (nanoseconds since
    /// the Unix epoch; 0 means unknown). Returns false as [`FrameBatch::push`] does.
    #[must_use = "false means the frame was not added (batch full or frame too large): it is lost unless retried"]
    #[inline]
    pub fn push_stamped(&mut self, frame: &[u8], stamp: u64) -> bool {
        if !self.push(frame) {
            return false;
        }
        self.stamps[self.count - 1] = stamp;
        true
    }

    /// The capture time of frame `i` (nanoseconds since the Unix epoch), if it carries one.
    #[inline]
    pub fn stamp(&self, i: usize) -> Option<u64> {
        assert!(i < self.count, "frame index out of range");
        Some(self.stamps[i]).filter(|&s| s != 0)
    }

    /// The frame in slot `i`.
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        assert!(i < self.count, "frame index out of range");
        let start = i * self.slot_size;
        &self.data[start..start + self.lens[i] as usize]
    }

    /// The frame in slot `i`, writable.
    pub fn get_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.count, "frame index out of range");
        let start = i * self.slot_size;
        &mut self.data[start..start + self.lens[i] as usize]
    }

    /// Iterate over the frames in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.count).map(move |i| self.get(i))
    }

    /// Drop the first `n` frames, moving the rest to the front (used after a partial send).
    pub fn consume_front(&mut self, n: usize) {
        let n = n.min(self.count);
        if n == 0 {
            return;
        }
        self.bytes -= self.lens[..n].iter().map(|&l| l as usize).sum::<usize>();
        for i in n..self.count {
            let (from, to) = (i * self.slot_size, (i - n) * self.slot_size);
            let len = self.lens[i] as usize;
            self.data.copy_within(from..from + len, to);
            self.lens[i - n] = self.lens[i];
            self.stamps[i - n] = self.stamps[i];
        }
        self.count -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_get_and_limits() {
        let mut b = FrameBatch::new(2, 8);
        assert!(b.push(b"abc"));
        assert!(!b.push(b"too long frame"));
        assert!(b.push_with(|s| {
            s[..2].copy_from_slice(b"xy");
            2
        }));
        assert!(b.is_full());
        assert!(!b.push(b"z"));
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![&b"abc"[..], &b"xy"[..]]);
        b.consume_front(1);
        assert_eq!(b.len(), 1);
        assert_eq!(b.get(0), b"xy");
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn stamps_follow_their_frames() {
        let mut b = FrameBatch::new(3, 8);
        assert!(b.push_stamped(b"a", 7));
        assert!(b.push(b"b"));
        assert!(b.push_stamped(b"c", 9));
        assert_eq!((b.stamp(0), b.stamp(1), b.stamp(2)), (Some(7), None, Some(9)));
        b.consume_front(1);
        assert_eq!((b.stamp(0), b.stamp(1)), (None, Some(9)));
        b.clear();
        assert!(b.push(b"d"));
        assert_eq!(b.stamp(0), None, "a reused slot does not keep an old stamp");
        assert!(!b.push_stamped(b"too long frame", 1));
    }

    #[test]
    fn abandoned_build_takes_no_slot() {
        let mut b = FrameBatch::new(1, 8);
        assert!(!b.push_with(|_| 0));
        assert!(b.is_empty());
    }
}
