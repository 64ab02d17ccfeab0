//! Slot memory: the packet memory of one unit, preallocated as `count` slots of `size` bytes.
//!
//! Like an RPU's packet memory, a slot belongs to exactly one party at a time: the
//! distributor (while the slot is free, while it copies a frame in, and after the unit hands
//! the descriptor back) or the unit (from the moment it pops the descriptor until it pushes
//! it out). Ownership moves only through the descriptor queues, whose Release/Acquire pair
//! orders the bytes written before the hand-over. This module holds the raw memory; the
//! ownership discipline is kept by `distributor` and `unit`, the only callers.

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::MiddleboxError;

/// Largest slot size accepted: a 9216-byte jumbo frame plus tag room.
pub const MAX_SLOT_SIZE: usize = 16 * 1024;
/// Largest number of slots per unit.
pub const MAX_SLOTS: usize = 4096;

/// How many packet slots a unit has and how large each is (what a unit announces to the LB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotSpec {
    /// Number of slots (at least 1, at most [`MAX_SLOTS`]).
    pub count: usize,
    /// Bytes per slot: the largest frame the unit accepts plus room for host tags
    /// (at least 64, at most [`MAX_SLOT_SIZE`]).
    pub size: usize,
}

impl Default for SlotSpec {
    fn default() -> Self {
        SlotSpec { count: 64, size: 2048 }
    }
}

impl SlotSpec {
    /// A spec of `count` slots of `size` bytes.
    pub fn new(count: usize, size: usize) -> Self {
        SlotSpec { count, size }
    }

    /// Check the values; the error names the bad one.
    pub fn validate(&self) -> Result<(), MiddleboxError> {
        if self.count == 0 || self.count > MAX_SLOTS {
            return Err(MiddleboxError::Config(format!("slot count {} is outside 1..={MAX_SLOTS}", self.count)));
        }
        if self.size < 64 || self.size > MAX_SLOT_SIZE {
            return Err(MiddleboxError::Config(format!("slot size {} is outside 64..={MAX_SLOT_SIZE}", self.size)));
        }
        Ok(())
    }
}

/// The preallocated packet memory of one unit.
#[derive(Debug)]
pub(crate) struct SlotMemory {
    ptr: NonNull<u8>,
    layout: Layout,
    count: usize,
    size: usize,
    stride: usize,
}

// SAFETY: the memory is plain bytes; each slot is accessed by one thread at a time, as the
// descriptor queues hand slots over (see the module documentation).
unsafe impl Send for SlotMemory {}
// SAFETY: as above.
unsafe impl Sync for SlotMemory {}

impl SlotMemory {
    /// Allocate zeroed memory for `spec`.
    pub(crate) fn new(spec: SlotSpec) -> Result<Self, MiddleboxError> {
        spec.validate()?;
        let stride = spec.size.next_multiple_of(64);
        let bytes = stride * spec.count;
        let layout = Layout::from_size_align(bytes, 4096)
            .map_err(|e| MiddleboxError::Config(format!("slot memory of {bytes} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size (count >= 1, stride >= 64).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| MiddleboxError::Config(format!("cannot allocate {bytes} bytes of slot memory")))?;
        Ok(SlotMemory { ptr, layout, count: spec.count, size: spec.size, stride })
    }

    /// Number of slots.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Bytes per slot.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The whole of slot `i`, readable.
    ///
    /// # Safety
    /// The caller must own slot `i` (see the module documentation) for the life of the slice,
    /// so that nobody writes it meanwhile.
    pub(crate) unsafe fn slot(&self, i: u32) -> &[u8] {
        let i = i as usize;
        assert!(i < self.count, "slot {i} out of range");
        // SAFETY: i < count, so [i * stride, i * stride + size) lies inside the allocation;
        // exclusivity is the caller's promise.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(i * self.stride), self.size) }
    }

    /// The whole of slot `i`, writable.
    ///
    /// # Safety
    /// The caller must own slot `i` exclusively for the life of the slice, and must not hold
    /// another slice of the same slot meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slot_mut(&self, i: u32) -> &mut [u8] {
        let i = i as usize;
        assert!(i < self.count, "slot {i} out of range");
        // SAFETY: in bounds as in `slot`; exclusivity is the caller's promise.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(i * self.stride), self.size) }
    }
}

impl Drop for SlotMemory {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with exactly this layout and is freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_validation() {
        assert!(SlotSpec::default().validate().is_ok());
        assert!(SlotSpec::new(0, 2048).validate().is_err());
        assert!(SlotSpec::new(8, 32).validate().is_err());
        assert!(SlotSpec::new(8, MAX_SLOT_SIZE + 1).validate().is_err());
    }

    #[test]
    fn slots_are_separate() {
        let m = SlotMemory::new(SlotSpec::new(3, 100)).unwrap();
        // SAFETY: single-threaded test; each slice is dropped before the next access.
        unsafe {
            m.slot_mut(0).fill(1);
            m.slot_mut(2).fill(3);
            assert!(m.slot(1).iter().all(|&b| b == 0));
            assert_eq!(m.slot(0).len(), 100);
            assert!(m.slot(2).iter().all(|&b| b == 3));
        }
    }
}
