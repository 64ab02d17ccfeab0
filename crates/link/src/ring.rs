//! A lock-free single-producer / single-consumer ring of frame slots over a raw memory region.
//!
//! The same ring works on heap memory ([`heap`], used by [`crate::mem`]) and on a shared
//! memory mapping ([`format()`] + [`attach_producer`] / [`attach_consumer`], used by
//! [`crate::shm`]). Layout, all offsets from the ring's start (128-byte aligned):
//!
//! | offset | content |
//! | --- | --- |
//! | 0 | header: magic, version, depth, slot size, max frame, slot stride, producer and consumer state |
//! | 128 | producer index (`head`, `AtomicU64`), alone on its cache line pair |
//! | 256 | consumer index (`tail`, `AtomicU64`), alone on its cache line pair |
//! | 384 | `depth` slots of `stride` bytes: `[u32 len][pad to 16][slot_size bytes]`, stride a multiple of 64 |
//!
//! Indices grow monotonically; slot = index & (depth - 1). Each side keeps its own index and a
//! cached copy of the other side's, reloads the other side's only when the cache says there is
//! not enough room or data, and publishes its own index once per batch (Release / Acquire).
//! Every value read from the shared region is bounds-checked, so a misbehaving peer can make
//! frames garbage but never makes this side read or write outside the region.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::{FrameBatch, LinkError, MAX_FRAME};

/// Magic number at the start of every ring header ("LRTRING1").
pub const RING_MAGIC: u64 = u64::from_le_bytes(*b"LRTRING1");
/// Version of the ring layout.
pub const RING_VERSION: u32 = 1;
/// Default number of slots.
pub const DEFAULT_DEPTH: usize = 1024;
/// Alignment a ring's start must have inside its memory region.
pub const RING_ALIGN: usize = 128;

const HEAD_OFF: usize = 128;
const TAIL_OFF: usize = 256;
const SLOTS_OFF: usize = 384;
/// Bytes before the frame data in a slot (the u32 length, padded).
const SLOT_HDR: usize = 16;

const SIDE_FREE: u32 = 0;
const SIDE_ATTACHED: u32 = 1;
const SIDE_CLOSED: u32 = 2;

/// The fixed part of a ring, at offset 0.
#[repr(C)]
struct Header {
    magic: u64,
    version: u32,
    depth: u32,
    slot_size: u32,
    max_frame: u32,
    stride: u32,
    _reserved: u32,
    producer: AtomicU32,
    consumer: AtomicU32,
}

/// Geometry of a ring: how many slots, how large, and how many bytes it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingLayout {
    depth: usize,
    max_frame: usize,
    slot_size: usize,
    stride: usize,
}

impl RingLayout {
    /// A ring of `depth` slots (a power of two) carrying frames up to `max_frame` bytes.
    pub fn new(depth: usize, max_frame: usize) -> Result<Self, LinkError> {
        if !depth.is_power_of_two() || depth < 2 || depth > u32::MAX as usize / 2 {
            return Err(LinkError::Config(format!("ring depth {depth} is not a power of two >= 2")));
        }
        if max_frame == 0 || max_frame > MAX_FRAME {
            return Err(LinkError::Config(format!("ring frame size {max_frame} is outside 1..={MAX_FRAME}")));
        }
        let slot_size = max_frame.next_multiple_of(64);
        let stride = (SLOT_HDR + slot_size).next_multiple_of(64);
        Ok(RingLayout { depth, max_frame, slot_size, stride })
    }

    /// Number of slots.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Largest frame the ring accepts.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Data bytes per slot (`max_frame` rounded up to 64).
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Distance between two slots in bytes.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Total bytes the ring occupies (a multiple of 64).
    pub fn bytes(&self) -> usize {
        SLOTS_OFF + self.depth * self.stride
    }
}

/// A memory region rings can live in.
///
/// # Safety
/// `as_ptr()` must return the same pointer for the object's whole life, valid for reads and
/// writes of `len()` bytes, aligned to [`RING_ALIGN`], and shared with nobody who does not
/// follow the ring protocol.
pub unsafe trait RingMemory: Send + Sync + 'static {
    /// Start of the region.
    fn as_ptr(&self) -> *mut u8;
    /// Size of the region in bytes.
    fn len(&self) -> usize;
    /// True for an empty region.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A zeroed, page-aligned heap region.
#[derive(Debug)]
pub struct HeapMemory {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl HeapMemory {
    /// Allocate `len` zeroed bytes (page aligned).
    pub fn new(len: usize) -> Result<Self, LinkError> {
        let layout = Layout::from_size_align(len.max(1), 4096)
            .map_err(|e| LinkError::Config(format!("ring of {len} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            NonNull::new(raw).ok_or_else(|| LinkError::Config(format!("cannot allocate {len} bytes for a ring")))?;
        Ok(HeapMemory { ptr, layout })
    }
}

impl Drop for HeapMemory {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `alloc_zeroed` with exactly this layout and is freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

// SAFETY: the region is plain bytes; concurrent access goes through the ring protocol
// (atomics for indices and states, exclusive slot ownership between them).
unsafe impl Send for HeapMemory {}
// SAFETY: as above.
unsafe impl Sync for HeapMemory {}

// SAFETY: the allocation lives as long as the object, is 4096-aligned and `layout.size()` long.
unsafe impl RingMemory for HeapMemory {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.layout.size()
    }
}

/// Counters one side of a ring keeps locally.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Frames moved through this side.
    pub frames: u64,
    /// Bytes moved through this side.
    pub bytes: u64,
    /// Frames dropped because they were larger than the ring's frame size (producer) or the
    /// receiving batch's slot (consumer).
    pub dropped_oversize: u64,
    /// Slots with an impossible length found by the consumer (a misbehaving peer).
    pub corrupt: u64,
}

/// Where one ring is: the memory that keeps it alive and its validated geometry.
struct RingView {
    _mem: Arc<dyn RingMemory>,
    base: *mut u8,
    depth: u64,
    mask: u64,
    stride: usize,
    max_frame: usize,
}

impl RingView {
    fn header(&self) -> &Header {
        // SAFETY: `base` is 128-aligned and the region holds at least a header (checked at attach).
        unsafe { &*(self.base as *const Header) }
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: offset HEAD_OFF is inside the region and 8-aligned (checked at attach).
        unsafe { &*(self.base.add(HEAD_OFF) as *const AtomicU64) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: offset TAIL_OFF is inside the region and 8-aligned (checked at attach).
        unsafe { &*(self.base.add(TAIL_OFF) as *const AtomicU64) }
    }

    /// Start of the slot for `index`.
    fn slot(&self, index: u64) -> *mut u8 {
        let i = (index & self.mask) as usize;
        // SAFETY: i < depth and SLOTS_OFF + depth * stride <= region length (checked at attach).
        unsafe { self.base.add(SLOTS_OFF + i * self.stride) }
    }
}

/// Write a fresh ring header for `layout` at `offset` inside `mem` (indices zero, no side attached).
///
/// Only call this before any side is attached: it resets the ring.
pub fn format(mem: &Arc<dyn RingMemory>, offset: usize, layout: &RingLayout) -> Result<(), LinkError> {
    check_room(mem.as_ref(), offset, layout.bytes())?;
    // SAFETY: the range [offset, offset + bytes) is inside the region (checked above), the start
    // is 128-aligned, and no side is attached yet, so nobody else accesses it.
    unsafe {
        let base = mem.as_ptr().add(offset);
        std::ptr::write(
            base as *mut Header,
            Header {
                magic: RING_MAGIC,
                version: RING_VERSION,
                depth: layout.depth as u32,
                slot_size: layout.slot_size as u32,
                max_frame: layout.max_frame as u32,
                stride: layout.stride as u32,
                _reserved: 0,
                producer: AtomicU32::new(SIDE_FREE),
                consumer: AtomicU32::new(SIDE_FREE),
            },
        );
        std::ptr::write(base.add(HEAD_OFF) as *mut AtomicU64, AtomicU64::new(0));
        std::ptr::write(base.add(TAIL_OFF) as *mut AtomicU64, AtomicU64::new(0));
    }
    Ok(())
}

fn check_room(mem: &dyn RingMemory, offset: usize, bytes: usize) -> Result<(), LinkError> {
    if !(mem.as_ptr() as usize + offset).is_multiple_of(RING_ALIGN) {
        return Err(LinkError::Config(format!("ring offset {offset} is not {RING_ALIGN}-byte aligned")));
    }
    match offset.checked_add(bytes) {
        Some(end) if end <= mem.len() => Ok(()),
        _ => Err(LinkError::Config(format!(
            "ring of {bytes} bytes at offset {offset} does not fit a region of {} bytes",
            mem.len()
        ))),
    }
}

/// Validate the ring header at `offset` and build a view of it.
fn view(mem: Arc<dyn RingMemory>, offset: usize) -> Result<RingView, LinkError> {
    check_room(mem.as_ref(), offset, SLOTS_OFF)?;
    // SAFETY: a header fits at `offset` (checked above) and the start is aligned.
    let base = unsafe { mem.as_ptr().add(offset) };
    // SAFETY: as above; the plain header fields are only written by `format`.
    let h = unsafe { &*(base as *const Header) };
    if h.magic != RING_MAGIC {
        return Err(LinkError::Config(format!("no ring at offset {offset}: bad magic {:#018x}", h.magic)));
    }
    if h.version != RING_VERSION {
        return Err(LinkError::Config(format!("ring version {} (this build reads {RING_VERSION})", h.version)));
    }
    let layout = RingLayout::new(h.depth as usize, h.max_frame as usize)?;
    if layout.slot_size != h.slot_size as usize || layout.stride != h.stride as usize {
        return Err(LinkError::Config(format!(
            "ring slot size {} / stride {} do not match frame size {}",
            h.slot_size, h.stride, h.max_frame
        )));
    }
    check_room(mem.as_ref(), offset, layout.bytes())?;
    Ok(RingView {
        _mem: mem,
        base,
        depth: layout.depth as u64,
        mask: layout.depth as u64 - 1,
        stride: layout.stride,
        max_frame: layout.max_frame,
    })
}

fn claim(side: &AtomicU32, what: &str) -> Result<(), LinkError> {
    match side.compare_exchange(SIDE_FREE, SIDE_ATTACHED, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(()),
        Err(SIDE_CLOSED) => Err(LinkError::Config(format!("the ring's {what} has already closed"))),
        Err(_) => Err(LinkError::Config(format!("the ring already has a {what}"))),
    }
}

/// Attach as the (only) producer of the ring at `offset` in `mem`.
pub fn attach_producer(mem: Arc<dyn RingMemory>, offset: usize) -> Result<RingProducer, LinkError> {
    let ring = view(mem, offset)?;
    claim(&ring.header().producer, "producer")?;
    let head = ring.head().load(Ordering::Acquire);
    let cached_tail = ring.tail().load(Ordering::Acquire);
    Ok(RingProducer { ring, head, published: head, cached_tail, stats: RingStats::default() })
}

/// Attach as the (only) consumer of the ring at `offset` in `mem`.
pub fn attach_consumer(mem: Arc<dyn RingMemory>, offset: usize) -> Result<RingConsumer, LinkError> {
    let ring = view(mem, offset)?;
    claim(&ring.header().consumer, "consumer")?;
    let tail = ring.tail().load(Ordering::Acquire);
    let cached_head = ring.head().load(Ordering::Acquire);
    Ok(RingConsumer { ring, tail, cached_head, stats: RingStats::default() })
}

/// A new ring on the heap; returns its two ends.
pub fn heap(layout: RingLayout) -> Result<(RingProducer, RingConsumer), LinkError> {
    let mem: Arc<dyn RingMemory> = Arc::new(HeapMemory::new(layout.bytes())?);
    format(&mem, 0, &layout)?;
    Ok((attach_producer(mem.clone(), 0)?, attach_consumer(mem, 0)?))
}

/// The writing end of a ring. Dropping it marks the ring closed for the consumer.
pub struct RingProducer {
    ring: RingView,
    /// Next slot to write: frames below it are published or staged.
    head: u64,
    /// What the consumer has been told (`head` minus the staged frames).
    published: u64,
    cached_tail: u64,
    stats: RingStats,
}

// SAFETY: the producer is the only writer of `head` and of the slots it has not yet published;
// the raw pointer refers to memory kept alive by the `Arc` inside `RingView`.
unsafe impl Send for RingProducer {}

impl RingProducer {
    /// Copy frames from the front of `batch` into the ring and publish them at once.
    ///
    /// Returns `(sent, oversize_dropped)` and removes exactly those frames from the front of
    /// `batch`; frames that found the ring full stay in the batch, in order.
    pub fn push_batch(&mut self, batch: &mut FrameBatch) -> (usize, usize) {
        let n = batch.len();
        if n == 0 {
            self.publish();
            return (0, 0);
        }
        let mut free = self.free_cached();
        if free < n as u64 {
            self.cached_tail = self.ring.tail().load(Ordering::Acquire);
            free = self.free_cached();
        }
        let (mut i, mut sent, mut dropped, mut bytes) = (0usize, 0usize, 0usize, 0u64);
        while i < n {
            let frame = batch.get(i);
            let len = frame.len();
            if len > self.ring.max_frame {
                dropped += 1;
                i += 1;
                continue;
            }
            if free == 0 {
                break;
            }
            let slot = self.ring.slot(self.head);
            // SAFETY: the slot lies between the consumer's tail and our head + free, so the
            // consumer does not touch it until we publish; it holds SLOT_HDR + slot_size bytes
            // and len <= max_frame <= slot_size; slots are 64-aligned, so the u32 write is aligned.
            unsafe {
                (slot as *mut u32).write(len as u32);
                std::ptr::copy_nonoverlapping(frame.as_ptr(), slot.add(SLOT_HDR), len);
            }
            self.head = self.head.wrapping_add(1);
            free -= 1;
            sent += 1;
            bytes += len as u64;
            i += 1;
        }
        self.publish();
        batch.consume_front(i);
        self.stats.frames += sent as u64;
        self.stats.bytes += bytes;
        self.stats.dropped_oversize += dropped as u64;
        (sent, dropped)
    }

    /// Copy one frame in and publish it; false when the ring is full or the frame too large
    /// (the latter is counted as an oversize drop).
    #[must_use = "false means the frame was not published (ring full or frame too large): it is lost unless retried"]
    pub fn push(&mut self, frame: &[u8]) -> bool {
        if frame.len() > self.ring.max_frame {
            self.stats.dropped_oversize += 1;
            return false;
        }
        if self.free() == 0 {
            return false;
        }
        let slot = self.ring.slot(self.head);
        // SAFETY: as in `push_batch`: the slot is free and owned by the producer until published.
        unsafe {
            (slot as *mut u32).write(frame.len() as u32);
            std::ptr::copy_nonoverlapping(frame.as_ptr(), slot.add(SLOT_HDR), frame.len());
        }
        self.head = self.head.wrapping_add(1);
        self.publish();
        self.stats.frames += 1;
        self.stats.bytes += frame.len() as u64;
        true
    }

    /// Build a frame straight in the next free slot: `build` gets the slot (`max_frame`
    /// bytes) and returns the frame's length, 0 to abandon it. The frame is staged, not yet
    /// visible to the consumer: [`RingProducer::publish`] (or the next push) publishes every
    /// staged frame at once, in order before the frames that push adds. Returns `None` when
    /// the ring is full (`build` is not called), else whether a frame was staged.
    #[inline]
    pub fn stage_with(&mut self, build: impl FnOnce(&mut [u8]) -> usize) -> Option<bool> {
        if self.free_cached() == 0 {
            self.cached_tail = self.ring.tail().load(Ordering::Acquire);
            if self.free_cached() == 0 {
                return None;
            }
        }
        let slot = self.ring.slot(self.head);
        // SAFETY: the slot lies between the consumer's tail and our head + free, so the
        // consumer does not touch it until we publish; it holds SLOT_HDR + slot_size bytes with
        // max_frame <= slot_size, and nobody else holds a reference into it.
        let buf = unsafe { std::slice::from_raw_parts_mut(slot.add(SLOT_HDR), self.ring.max_frame) };
        let len = build(buf).min(self.ring.max_frame);
        if len == 0 {
            return Some(false);
        }
        // SAFETY: as above; slots are 64-aligned, so the u32 write is aligned.
        unsafe { (slot as *mut u32).write(len as u32) };
        self.head = self.head.wrapping_add(1);
        self.stats.frames += 1;
        self.stats.bytes += len as u64;
        if self.free_cached() > 0 {
            self.prefetch_for_write(self.head, len);
        }
        Some(true)
    }

    /// Ask for ownership of the first `len` bytes of slot `index` ahead of writing them (the
    /// consumer's core read them last): the next frame, likely as long as this one, then
    /// finds its lines ready instead of waiting for each as it is written. A hint only.
    #[inline]
    fn prefetch_for_write(&self, index: u64, len: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
            let slot = self.ring.slot(index);
            let end = (SLOT_HDR + len.min(self.ring.max_frame)).next_multiple_of(64);
            for off in (0..end).step_by(64) {
                // SAFETY: the address lies inside the slot (end <= stride, the slot's extent);
                // a prefetch never faults and changes no memory.
                unsafe { _mm_prefetch::<_MM_HINT_ET0>(slot.add(off) as *const i8) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (index, len);
    }

    /// Frames staged with [`RingProducer::stage_with`] and not yet published.
    pub fn staged(&self) -> usize {
        self.head.wrapping_sub(self.published) as usize
    }

    /// Make every staged frame visible to the consumer.
    #[inline]
    pub fn publish(&mut self) {
        if self.published != self.head {
            self.ring.head().store(self.head, Ordering::Release);
            self.published = self.head;
        }
    }

    fn free_cached(&self) -> u64 {
        self.ring.depth.saturating_sub(self.head.wrapping_sub(self.cached_tail))
    }

    /// Free slots right now (reloads the consumer's index).
    pub fn free(&mut self) -> usize {
        self.cached_tail = self.ring.tail().load(Ordering::Acquire);
        self.free_cached() as usize
    }

    /// Largest frame the ring accepts.
    pub fn max_frame(&self) -> usize {
        self.ring.max_frame
    }

    /// Number of slots.
    pub fn depth(&self) -> usize {
        self.ring.depth as usize
    }

    /// True once the consumer has gone away.
    pub fn is_peer_closed(&self) -> bool {
        self.ring.header().consumer.load(Ordering::Acquire) == SIDE_CLOSED
    }

    /// This side's counters.
    pub fn stats(&self) -> RingStats {
        self.stats
    }
}

impl Drop for RingProducer {
    fn drop(&mut self) {
        self.publish();
        self.ring.header().producer.store(SIDE_CLOSED, Ordering::Release);
    }
}

/// The reading end of a ring. Dropping it marks the ring closed for the producer.
pub struct RingConsumer {
    ring: RingView,
    tail: u64,
    cached_head: u64,
    stats: RingStats,
}

// SAFETY: the consumer is the only writer of `tail` and only reads slots the producer has
// published; the raw pointer refers to memory kept alive by the `Arc` inside `RingView`.
unsafe impl Send for RingConsumer {}

impl RingConsumer {
    /// Number of published slots we may read, at most `want` (reloads `head` only if needed).
    fn available(&mut self, want: usize) -> u64 {
        let want = want as u64;
        let avail = self.cached_head.wrapping_sub(self.tail).min(self.ring.depth);
        if avail >= want {
            return want;
        }
        self.cached_head = self.ring.head().load(Ordering::Acquire);
        self.cached_head.wrapping_sub(self.tail).min(self.ring.depth).min(want)
    }

    /// Read the slot at `tail`: its frame, or None if the length is impossible.
    fn frame_at(&self, index: u64) -> Option<&[u8]> {
        let slot = self.ring.slot(index);
        // SAFETY: the slot was published by the producer (index < head, Acquire-loaded) and is
        // not reused until we advance `tail`; it is 64-aligned.
        let len = unsafe { (slot as *const u32).read() } as usize;
        if len == 0 || len > self.ring.max_frame {
            return None;
        }
        // SAFETY: len <= max_frame <= slot_size, so the bytes lie inside the slot, which stays
        // ours until `tail` is published.
        Some(unsafe { std::slice::from_raw_parts(slot.add(SLOT_HDR), len) })
    }

    /// Copy ready frames into the free slots of `batch`; returns how many were appended.
    pub fn pop_batch(&mut self, batch: &mut FrameBatch) -> usize {
        let take = self.available(batch.capacity() - batch.len());
        let (mut got, mut bytes, mut oversize, mut corrupt) = (0usize, 0u64, 0u64, 0u64);
        for k in 0..take {
            match self.frame_at(self.tail.wrapping_add(k)) {
                None => corrupt += 1,
                Some(frame) => {
                    let pushed = batch.push_with(|slot| match slot.get_mut(..frame.len()) {
                        Some(dst) => {
                            dst.copy_from_slice(frame);
                            frame.len()
                        }
                        None => 0,
                    });
                    if pushed {
                        got += 1;
                        bytes += frame.len() as u64;
                    } else {
                        oversize += 1;
                    }
                }
            }
        }
        self.release(take, got, bytes, oversize, corrupt);
        got
    }

    /// Hand up to `max` ready frames to `f` in place (zero copy), then release their slots.
    /// Returns how many frames `f` saw.
    pub fn pop_with(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> usize {
        let take = self.available(max);
        let (mut got, mut bytes, mut corrupt) = (0usize, 0u64, 0u64);
        for k in 0..take {
            match self.frame_at(self.tail.wrapping_add(k)) {
                None => corrupt += 1,
                Some(frame) => {
                    f(frame);
                    got += 1;
                    bytes += frame.len() as u64;
                }
            }
        }
        self.release(take, got, bytes, 0, corrupt);
        got
    }

    fn release(&mut self, take: u64, got: usize, bytes: u64, oversize: u64, corrupt: u64) {
        if take == 0 {
            return;
        }
        self.tail = self.tail.wrapping_add(take);
        self.ring.tail().store(self.tail, Ordering::Release);
        self.stats.frames += got as u64;
        self.stats.bytes += bytes;
        self.stats.dropped_oversize += oversize;
        self.stats.corrupt += corrupt;
    }

    /// Frames published and not yet consumed (reloads the producer's index).
    pub fn ready(&mut self) -> usize {
        self.cached_head = self.ring.head().load(Ordering::Acquire);
        self.cached_head.wrapping_sub(self.tail).min(self.ring.depth) as usize
    }

    /// Largest frame the ring carries.
    pub fn max_frame(&self) -> usize {
        self.ring.max_frame
    }

    /// True once the producer has gone away. Check it *before* an empty `pop_*` to know the
    /// ring is drained: frames published before closing are still delivered.
    pub fn is_peer_closed(&self) -> bool {
        self.ring.header().producer.load(Ordering::Acquire) == SIDE_CLOSED
    }

    /// This side's counters.
    pub fn stats(&self) -> RingStats {
        self.stats
    }
}

impl Drop for RingConsumer {
    fn drop(&mut self) {
        self.ring.header().consumer.store(SIDE_CLOSED, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant as StdInstant};

    fn ring(depth: usize, max_frame: usize) -> (RingProducer, RingConsumer) {
        heap(RingLayout::new(depth, max_frame).unwrap()).unwrap()
    }

    #[test]
    fn layout_rounds_and_validates() {
        let l = RingLayout::new(8, 1518).unwrap();
        assert_eq!(l.slot_size(), 1536);
        assert_eq!(l.stride() % 64, 0);
        assert!(l.stride() >= 16 + 1536);
        assert_eq!(l.bytes(), 384 + 8 * l.stride());
        assert!(RingLayout::new(6, 100).is_err());
        assert!(RingLayout::new(8, MAX_FRAME + 1).is_err());
    }

    #[test]
    fn push_pop_single_thread() {
        let (mut p, mut c) = ring(8, 100);
        let mut b = FrameBatch::new(4, 128);
        assert!(b.push(b"one"));
        assert!(b.push(b"two"));
        assert_eq!(p.push_batch(&mut b), (2, 0));
        assert!(b.is_empty());
        let mut r = FrameBatch::new(4, 128);
        assert_eq!(c.pop_batch(&mut r), 2);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![&b"one"[..], &b"two"[..]]);
        assert_eq!(c.pop_batch(&mut r), 0);
        assert_eq!(c.stats().frames, 2);
        assert_eq!(c.stats().bytes, 6);
    }

    #[test]
    fn staged_frames_wait_for_publish_and_keep_their_place_before_pushed_ones() {
        let (mut p, mut c) = ring(4, 100);
        let put = |buf: &mut [u8], text: &[u8]| {
            buf[..text.len()].copy_from_slice(text);
            text.len()
        };
        assert_eq!(p.stage_with(|b| put(b, b"one")), Some(true));
        assert_eq!(p.stage_with(|_| 0), Some(false), "abandoned: no slot used");
        assert_eq!(p.stage_with(|b| put(b, b"two")), Some(true));
        assert_eq!(p.staged(), 2);
        let mut r = FrameBatch::new(8, 128);
        assert_eq!(c.pop_batch(&mut r), 0, "staged frames are not visible yet");
        // A push publishes the staged frames with it, after them.
        let mut b = FrameBatch::new(4, 128);
        assert!(b.push(b"three"));
        assert!(b.push(b"four"));
        assert!(b.push(b"five"));
        assert_eq!(p.push_batch(&mut b), (2, 0), "two slots were left");
        assert_eq!(p.staged(), 0);
        assert_eq!(p.stage_with(|b| put(b, b"six")), None, "full: build not called");
        assert_eq!(c.pop_batch(&mut r), 4);
        let got: Vec<&[u8]> = r.iter().collect();
        assert_eq!(got, vec![&b"one"[..], b"two", b"three", b"four"]);
        assert_eq!(p.stats().frames, 4);
        // Staged frames are published by `publish` and by dropping the producer.
        assert_eq!(p.stage_with(|b| put(b, b"six")), Some(true));
        p.publish();
        assert_eq!(p.stage_with(|b| put(b, b"seven")), Some(true));
        drop(p);
        r.clear();
        assert_eq!(c.pop_batch(&mut r), 2);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![&b"six"[..], b"seven"]);
        assert!(c.is_peer_closed());
    }

    #[test]
    fn wraparound_keeps_order() {
        let (mut p, mut c) = ring(4, 64);
        let mut b = FrameBatch::new(3, 64);
        let mut r = FrameBatch::new(3, 64);
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        for _ in 0..100 {
            while !b.is_full() {
                assert!(b.push(&next_in.to_le_bytes()));
                next_in += 1;
            }
            p.push_batch(&mut b);
            r.clear();
            c.pop_batch(&mut r);
            for f in r.iter() {
                assert_eq!(u32::from_le_bytes(f.try_into().unwrap()), next_out);
                next_out += 1;
            }
        }
        assert!(next_out > 250);
    }

    #[test]
    fn full_ring_leaves_frames_in_batch() {
        let (mut p, mut c) = ring(4, 64);
        let mut b = FrameBatch::new(6, 64);
        for i in 0..6u8 {
            assert!(b.push(&[i; 10]));
        }
        assert_eq!(p.push_batch(&mut b), (4, 0));
        assert_eq!(b.len(), 2);
        assert_eq!(b.get(0), &[4u8; 10]);
        assert_eq!(p.push_batch(&mut b), (0, 0));
        assert_eq!(c.pop_with(1, |f| assert_eq!(f, &[0u8; 10])), 1);
        assert_eq!(p.push_batch(&mut b), (1, 0));
        assert_eq!(b.get(0), &[5u8; 10]);
    }

    #[test]
    fn oversize_dropped_and_counted() {
        let (mut p, mut c) = ring(4, 64);
        let mut b = FrameBatch::new(3, 256);
        assert!(b.push(&[1; 64]));
        assert!(b.push(&[2; 65]));
        assert!(b.push(&[3; 10]));
        assert_eq!(p.push_batch(&mut b), (2, 1));
        assert!(b.is_empty());
        assert!(!p.push(&[0; 65]));
        assert_eq!(p.stats().dropped_oversize, 2);
        // A receiving batch with slots too small counts an oversize drop on the consumer.
        let mut small = FrameBatch::new(4, 32);
        assert_eq!(c.pop_batch(&mut small), 1);
        assert_eq!(small.get(0), &[3; 10]);
        assert_eq!(c.stats().dropped_oversize, 1);
    }

    #[test]
    fn closed_flags_follow_drops() {
        let (p, c) = ring(4, 64);
        assert!(!c.is_peer_closed());
        drop(p);
        assert!(c.is_peer_closed());
        let (p, c) = ring(4, 64);
        drop(c);
        assert!(p.is_peer_closed());
    }

    #[test]
    fn second_producer_is_refused() {
        let layout = RingLayout::new(4, 64).unwrap();
        let mem: Arc<dyn RingMemory> = Arc::new(HeapMemory::new(layout.bytes()).unwrap());
        format(&mem, 0, &layout).unwrap();
        let _p = attach_producer(mem.clone(), 0).unwrap();
        let err = attach_producer(mem.clone(), 0).err().unwrap();
        assert!(err.to_string().contains("already has a producer"), "{err}");
        assert!(attach_consumer(mem.clone(), 64).is_err());
    }

    #[test]
    fn two_threads_move_a_million_frames_in_order() {
        const N: u64 = 1_000_000;
        let limit = Duration::from_secs(30);
        let (mut p, mut c) = ring(1024, 64);
        let producer = std::thread::spawn(move || {
            let start = StdInstant::now();
            let mut b = FrameBatch::new(32, 64);
            let mut seq = 0u64;
            while seq < N || !b.is_empty() {
                if start.elapsed() > limit {
                    return Err(format!("producer timed out at {seq}"));
                }
                while seq < N && !b.is_full() {
                    assert!(b.push_with(|s| {
                        s[..8].copy_from_slice(&seq.to_le_bytes());
                        s[8..20].fill(seq as u8);
                        20
                    }));
                    seq += 1;
                }
                if p.push_batch(&mut b).0 == 0 {
                    std::hint::spin_loop();
                }
            }
            Ok(())
        });
        let start = StdInstant::now();
        let mut r = FrameBatch::new(32, 64);
        let mut expect = 0u64;
        while expect < N {
            assert!(start.elapsed() < limit, "consumer timed out at {expect}");
            r.clear();
            if c.pop_batch(&mut r) == 0 {
                std::thread::yield_now();
            }
            for f in r.iter() {
                let seq = u64::from_le_bytes(f[..8].try_into().unwrap());
                assert_eq!(seq, expect, "lost or reordered frame");
                assert!(f[8..20].iter().all(|&x| x == seq as u8));
                expect += 1;
            }
        }
        producer.join().unwrap().unwrap();
        assert_eq!(c.stats().frames, N);
    }
}
