//! The four rings of an XDP socket, mapped from the kernel: single-producer single-consumer
//! queues of `entries` slots (a power of two) with free-running 32-bit indices.
//!
//! The fill and TX rings are ours to produce and the kernel's to consume; the RX and
//! completion rings the other way round. Indices are read with acquire and written with
//! release ordering, which pairs with the kernel's barriers around its own accesses.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use super::sys::RingOffset;
use crate::LinkError;

/// One mapped ring whose slots are `T` (a `u64` address or an `XdpDesc`).
pub struct MappedRing<T> {
    map: *mut libc::c_void,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    slots: *mut T,
    mask: u32,
    /// Our copy of the index we move (producer for fill/TX, consumer for RX/completion).
    local: u32,
    /// The other side's index as last read.
    cached: u32,
}

// SAFETY: the mapping belongs to this ring alone; the raw pointers point into it and are
// only used through &mut self (or &self for the flag read), so moving it to another thread is sound.
unsafe impl<T: Send> Send for MappedRing<T> {}

impl<T: Copy> MappedRing<T> {
    /// Map the ring of `entries` slots at page offset `pgoff` of socket `fd`, laid out as `off`.
    pub fn map(
        fd: &OwnedFd,
        off: &RingOffset,
        entries: u32,
        pgoff: libc::off_t,
        producer_side: bool,
    ) -> Result<MappedRing<T>, LinkError> {
        let map_len = off.desc as usize + entries as usize * std::mem::size_of::<T>();
        // SAFETY: a shared mapping of the socket's ring; the kernel sized it for `entries` slots.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(LinkError::last_os("mmap of an AF_XDP ring"));
        }
        let base = map as *mut u8;
        // SAFETY: the offsets come from the kernel (XDP_MMAP_OFFSETS) and lie inside the mapping.
        let (producer, consumer, flags, slots) = unsafe {
            (
                base.add(off.producer as usize) as *const AtomicU32,
                base.add(off.consumer as usize) as *const AtomicU32,
                base.add(off.flags as usize) as *const AtomicU32,
                base.add(off.desc as usize) as *mut T,
            )
        };
        let mut ring =
            MappedRing { map, map_len, producer, consumer, flags, slots, mask: entries - 1, local: 0, cached: 0 };
        // Start from the kernel's indices (zero on a fresh socket).
        // SAFETY: producer and consumer point at the ring's live index words.
        unsafe {
            let (p, c) = ((*ring.producer).load(Ordering::Acquire), (*ring.consumer).load(Ordering::Acquire));
            if producer_side {
                ring.local = p;
                ring.cached = c.wrapping_add(entries);
            } else {
                ring.local = c;
                ring.cached = p;
            }
        }
        Ok(ring)
    }

    /// Number of slots.
    pub fn entries(&self) -> u32 {
        self.mask + 1
    }

    /// True when the kernel asks for a system call to make progress on this ring.
    pub fn needs_wakeup(&self) -> bool {
        // SAFETY: flags points at the ring's live flags word.
        unsafe { (*self.flags).load(Ordering::Relaxed) & super::sys::XDP_RING_NEED_WAKEUP != 0 }
    }

    // ---- producer side (fill, TX) ----

    /// Free slots we may write, up to `want` (refreshing the consumer index only when needed).
    pub fn free(&mut self, want: u32) -> u32 {
        let free = self.cached.wrapping_sub(self.local);
        if free >= want {
            return free;
        }
        // SAFETY: consumer points at the ring's live consumer index.
        self.cached = unsafe { (*self.consumer).load(Ordering::Acquire) }.wrapping_add(self.mask + 1);
        self.cached.wrapping_sub(self.local)
    }

    /// Write slot `local + i` (not yet visible to the kernel). The caller checked `free`.
    pub fn write(&mut self, i: u32, value: T) {
        let idx = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: idx <= mask lies inside the slot array.
        unsafe { self.slots.add(idx).write(value) };
    }

    /// Make `n` written slots visible to the kernel.
    pub fn submit(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        // SAFETY: producer points at the ring's live producer index; release orders the slot writes before it.
        unsafe { (*self.producer).store(self.local, Ordering::Release) };
    }

    /// Slots written and submitted that the kernel has not consumed yet.
    pub fn in_flight(&self) -> u32 {
        // SAFETY: consumer points at the ring's live consumer index.
        let c = unsafe { (*self.consumer).load(Ordering::Acquire) };
        self.local.wrapping_sub(c)
    }

    // ---- consumer side (RX, completion) ----

    /// Slots ready to read, up to `max`.
    pub fn ready(&mut self, max: u32) -> u32 {
        let mut n = self.cached.wrapping_sub(self.local);
        if n == 0 {
            // SAFETY: producer points at the ring's live producer index.
            self.cached = unsafe { (*self.producer).load(Ordering::Acquire) };
            n = self.cached.wrapping_sub(self.local);
        }
        n.min(max)
    }

    /// Read slot `local + i` (the caller checked `ready`).
    pub fn read(&self, i: u32) -> T {
        let idx = (self.local.wrapping_add(i) & self.mask) as usize;
        // SAFETY: idx <= mask lies inside the slot array; the acquire load in `ready` ordered it.
        unsafe { self.slots.add(idx).read() }
    }

    /// Give `n` read slots back to the kernel.
    pub fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        // SAFETY: consumer points at the ring's live consumer index; release orders our reads before it.
        unsafe { (*self.consumer).store(self.local, Ordering::Release) };
    }
}

impl<T> Drop for MappedRing<T> {
    fn drop(&mut self) {
        // SAFETY: map/map_len is the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.map, self.map_len) };
    }
}
