//! A bounded, lock-free single-producer / single-consumer queue of small `Copy` items
//! (descriptors, messages): the AXI-stream FIFO between the load balancer and a unit.
//!
//! Indices grow monotonically; the slot of index `i` is `i & mask`. Each side keeps its own
//! index and a cached copy of the other's, reloads the other's only when the cache says there
//! is not enough room or data, and publishes its own index once per batch (Release/Acquire).

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An index alone on its own pair of cache lines, so producer and consumer do not false-share.
#[repr(align(128))]
struct Padded(AtomicU64);

struct Shared<T> {
    head: Padded,
    tail: Padded,
    buf: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: u64,
}

// SAFETY: the ring only moves `T: Send` values between the one producer and the one consumer;
// a slot is written only by the producer before it publishes `head` (Release) and read only by
// the consumer after it observed that `head` (Acquire) and before it publishes `tail`.
unsafe impl<T: Send> Sync for Shared<T> {}
// SAFETY: as above; the buffer holds plain `T: Send` values.
unsafe impl<T: Send> Send for Shared<T> {}

/// The writing end of a queue made by [`channel`].
pub struct Producer<T> {
    shared: Arc<Shared<T>>,
    head: u64,
    cached_tail: u64,
}

/// The reading end of a queue made by [`channel`].
pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
    tail: u64,
    cached_head: u64,
}

/// A queue holding up to `capacity` items (rounded up to a power of two, at least 2).
pub fn channel<T: Copy + Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let cap = capacity.max(2).next_power_of_two();
    let buf = (0..cap).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect::<Vec<_>>();
    let shared = Arc::new(Shared {
        head: Padded(AtomicU64::new(0)),
        tail: Padded(AtomicU64::new(0)),
        buf: buf.into_boxed_slice(),
        mask: cap as u64 - 1,
    });
    (Producer { shared: shared.clone(), head: 0, cached_tail: 0 }, Consumer { shared, tail: 0, cached_head: 0 })
}

impl<T: Copy + Send> Producer<T> {
    /// Number of items the queue holds at most.
    pub fn capacity(&self) -> usize {
        self.shared.buf.len()
    }

    fn free_cached(&self) -> u64 {
        self.shared.buf.len() as u64 - self.head.wrapping_sub(self.cached_tail)
    }

    /// Free places right now (reloads the consumer's index).
    pub fn free(&mut self) -> usize {
        self.cached_tail = self.shared.tail.0.load(Ordering::Acquire);
        self.free_cached() as usize
    }

    /// Append as many items from the front of `items` as fit and publish them at once;
    /// returns how many were appended.
    #[must_use = "items past the returned count were not appended (queue full) and must be retried or counted as dropped"]
    pub fn push_slice(&mut self, items: &[T]) -> usize {
        if items.is_empty() {
            return 0;
        }
        let mut free = self.free_cached();
        if free < items.len() as u64 {
            self.cached_tail = self.shared.tail.0.load(Ordering::Acquire);
            free = self.free_cached();
        }
        let n = (items.len() as u64).min(free) as usize;
        if n == 0 {
            return 0;
        }
        // At most two contiguous runs: up to the end of the ring, then from its start.
        let at = (self.head & self.shared.mask) as usize;
        let first = n.min(self.shared.buf.len() - at);
        // SAFETY: indices head .. head + n are within the free window (head - tail <= capacity
        // - n), so the consumer reads none of these places until we publish `head` below; the
        // runs [at, at + first) and [0, n - first) lie inside the ring, and `UnsafeCell<
        // MaybeUninit<T>>` has the layout of `T`.
        unsafe {
            let base = self.shared.buf.as_ptr() as *mut T;
            std::ptr::copy_nonoverlapping(items.as_ptr(), base.add(at), first);
            std::ptr::copy_nonoverlapping(items.as_ptr().add(first), base, n - first);
        }
        if n > 0 {
            self.head = self.head.wrapping_add(n as u64);
            self.shared.head.0.store(self.head, Ordering::Release);
        }
        n
    }

    /// Append one item; false when the queue is full.
    #[must_use = "false means the queue was full and the item was not appended"]
    pub fn push(&mut self, item: T) -> bool {
        self.push_slice(std::slice::from_ref(&item)) == 1
    }
}

impl<T: Copy + Send> Consumer<T> {
    /// Items published and not yet taken (reloads the producer's index).
    pub fn len(&mut self) -> usize {
        self.cached_head = self.shared.head.0.load(Ordering::Acquire);
        self.cached_head.wrapping_sub(self.tail) as usize
    }

    /// True when nothing is waiting (reloads the producer's index).
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Move up to `max` items to the end of `out`, releasing their places at once; returns how many.
    pub fn pop_into(&mut self, out: &mut Vec<T>, max: usize) -> usize {
        let mut avail = self.cached_head.wrapping_sub(self.tail);
        if avail < max as u64 {
            self.cached_head = self.shared.head.0.load(Ordering::Acquire);
            avail = self.cached_head.wrapping_sub(self.tail);
        }
        let n = avail.min(max as u64) as usize;
        if n == 0 {
            // The idle poll: no copy calls, no store.
            return 0;
        }
        let at = (self.tail & self.shared.mask) as usize;
        let first = n.min(self.shared.buf.len() - at);
        out.reserve(n);
        // SAFETY: indices tail .. tail + n are below head (Acquire-loaded), so the producer
        // wrote and published these places and will not overwrite them until we publish
        // `tail` below; the two runs lie inside the ring, `UnsafeCell<MaybeUninit<T>>` has the
        // layout of `T`, and `out` has room for `n` more items, which are initialised before
        // its length grows.
        unsafe {
            let base = self.shared.buf.as_ptr() as *const T;
            let dst = out.as_mut_ptr().add(out.len());
            std::ptr::copy_nonoverlapping(base.add(at), dst, first);
            std::ptr::copy_nonoverlapping(base, dst.add(first), n - first);
            out.set_len(out.len() + n);
        }
        if n > 0 {
            self.tail = self.tail.wrapping_add(n as u64);
            self.shared.tail.0.store(self.tail, Ordering::Release);
        }
        n
    }

    /// Take one item.
    pub fn pop(&mut self) -> Option<T> {
        if self.cached_head == self.tail {
            self.cached_head = self.shared.head.0.load(Ordering::Acquire);
            if self.cached_head == self.tail {
                return None;
            }
        }
        let i = (self.tail & self.shared.mask) as usize;
        // SAFETY: tail < head (Acquire-loaded): the slot is published and ours until `tail` moves.
        let item = unsafe { (*self.shared.buf[i].get()).assume_init() };
        self.tail = self.tail.wrapping_add(1);
        self.shared.tail.0.store(self.tail, Ordering::Release);
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_capacity() {
        let (mut p, mut c) = channel::<u32>(3);
        assert_eq!(p.capacity(), 4);
        assert_eq!(p.push_slice(&[1, 2, 3, 4, 5]), 4);
        assert!(!p.push(6));
        assert_eq!(c.len(), 4);
        let mut out = Vec::new();
        assert_eq!(c.pop_into(&mut out, 2), 2);
        assert_eq!(out, vec![1, 2]);
        assert!(p.push(7));
        assert_eq!(c.pop(), Some(3));
        assert_eq!(c.pop_into(&mut out, 10), 2);
        assert_eq!(out, vec![1, 2, 4, 7]);
        assert_eq!(c.pop(), None);
        assert!(c.is_empty());
    }

    #[test]
    fn runs_wrap_around_the_ring() {
        let (mut p, mut c) = channel::<u32>(8);
        let mut out = Vec::new();
        let mut next = 0u32;
        let mut expect = 0u32;
        for round in 0..50 {
            let batch: Vec<u32> = (next..next + 1 + round % 7).collect();
            let n = p.push_slice(&batch);
            next += n as u32;
            out.clear();
            c.pop_into(&mut out, 1 + round as usize % 5);
            for &v in &out {
                assert_eq!(v, expect);
                expect += 1;
            }
        }
        out.clear();
        c.pop_into(&mut out, 8);
        for &v in &out {
            assert_eq!(v, expect);
            expect += 1;
        }
        assert_eq!(expect, next);
    }

    #[test]
    fn two_threads_keep_order() {
        const N: u64 = 200_000;
        let (mut p, mut c) = channel::<u64>(64);
        let t = std::thread::spawn(move || {
            let mut next = 0u64;
            let start = std::time::Instant::now();
            while next < N {
                assert!(start.elapsed().as_secs() < 30, "producer stuck");
                let batch: Vec<u64> = (next..(next + 8).min(N)).collect();
                let n = p.push_slice(&batch);
                next += n as u64;
                if n == 0 {
                    std::thread::yield_now();
                }
            }
        });
        let mut expect = 0u64;
        let mut out = Vec::new();
        let start = std::time::Instant::now();
        while expect < N {
            assert!(start.elapsed().as_secs() < 30, "consumer stuck at {expect}");
            out.clear();
            if c.pop_into(&mut out, 16) == 0 {
                std::thread::yield_now();
            }
            for &v in &out {
                assert_eq!(v, expect);
                expect += 1;
            }
        }
        t.join().unwrap();
    }
}
