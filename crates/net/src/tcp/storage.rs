//! Ring storage shared by a stack's sessions. A send ring holds memory only while it holds
//! unacknowledged or unsent data, a receive ring only while it holds data the application
//! has not read (or out-of-order data): an empty ring parks its storage here, and the next
//! ring that needs memory takes the most recently parked block, still warm in the caches.
//! So ten thousand connections whose receivers keep up share a handful of blocks instead of
//! each touching its own (which evicts every other one), and idle sessions hold no buffer
//! memory at all. Rings park only while the stack holds more than [`CROWD`] sessions (with
//! few, each keeps its storage and the busy path pays nothing for the pool), and only rings
//! of the configured starting size: a ring that auto-tuning grew belongs to a busy
//! connection and keeps its storage. A session that ends parks its storage always.

use super::memory::{MemAccount, MemLevel};
use super::ringbuf::RingBuf;

/// Most bytes one pool keeps for reuse; blocks parked beyond it go back to the allocator.
pub const POOL_BYTES: usize = 16 << 20;

/// Sessions a stack holds before emptied rings start parking their storage.
pub const CROWD: usize = 64;

/// Free ring storage of one size, last in first out.
#[derive(Debug, Default)]
pub struct StoragePool {
    /// The size of every block (the configured starting size of the rings it serves).
    size: usize,
    /// Parked blocks, the most recently parked last.
    blocks: Vec<Box<[u8]>>,
    /// True while the stack holds more than [`CROWD`] sessions: emptied rings park.
    crowded: bool,
}

impl StoragePool {
    /// A pool for rings of `size` bytes.
    pub fn new(size: usize) -> Self {
        StoragePool { size, blocks: Vec::new(), crowded: false }
    }

    /// The stack now holds `sessions` sessions.
    #[inline]
    pub fn set_sessions(&mut self, sessions: usize) {
        self.crowded = sessions > CROWD;
    }

    /// Give `ring` storage if it has none: the most recently parked block if it is of this
    /// pool's size, else a fresh one, charged to `mem` (under memory pressure a fresh one of
    /// `min` bytes, if smaller). False if the ring has no storage: the budget's limit is
    /// reached.
    #[inline]
    pub fn unpark(&mut self, ring: &mut RingBuf, mem: &mut MemAccount, min: usize) -> bool {
        !ring.is_parked() || self.attach(ring, mem, min)
    }

    fn attach(&mut self, ring: &mut RingBuf, mem: &mut MemAccount, min: usize) -> bool {
        if ring.capacity() == self.size {
            if let Some(block) = self.blocks.pop() {
                ring.attach(block);
                return true;
            }
        }
        let mut cap = ring.capacity();
        if mem.level() != MemLevel::Normal && cap > min && ring.is_empty() {
            cap = min;
        }
        if !mem.fits(cap) {
            return false;
        }
        ring.set_parked_capacity(cap);
        mem.charge(cap);
        ring.attach(vec![0u8; cap].into_boxed_slice());
        true
    }

    /// Under memory pressure, give back the storage of an emptied ring, grown or not (it
    /// gets the pool's size back, its storage the next time it is written). True if it did.
    #[inline]
    pub fn shed(&mut self, ring: &mut RingBuf, mem: &MemAccount) -> bool {
        if mem.level() == MemLevel::Normal || !ring.is_empty() || ring.is_parked() {
            return false;
        }
        if ring.capacity() == self.size {
            self.keep(ring);
        } else {
            drop(ring.detach());
            ring.set_parked_capacity(self.size);
        }
        true
    }

    /// Take `ring`'s storage back if the ring is empty and of this pool's size, and the stack
    /// is crowded. The caller guarantees nothing was written ahead of the readable data (no
    /// out-of-order bytes).
    #[inline]
    pub fn park(&mut self, ring: &mut RingBuf) {
        if self.crowded {
            self.park_now(ring);
        }
    }

    /// Take `ring`'s storage back if the ring is empty, crowded or not (its session ended):
    /// into the pool if it is of this pool's size, else back to the allocator (a grown or
    /// shrunk ring; the ring gets the pool's size back).
    #[inline]
    pub fn park_now(&mut self, ring: &mut RingBuf) {
        if !ring.is_empty() || ring.is_parked() {
            return;
        }
        if ring.capacity() == self.size {
            self.keep(ring);
        } else {
            drop(ring.detach());
            ring.set_parked_capacity(self.size);
        }
    }

    fn keep(&mut self, ring: &mut RingBuf) {
        if let Some(block) = ring.detach() {
            if (self.blocks.len() + 1) * self.size <= POOL_BYTES.max(self.size) {
                self.blocks.push(block);
            }
        }
    }

    /// Bytes the pool holds for reuse.
    pub fn held(&self) -> usize {
        self.blocks.len() * self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_ring_parks_and_the_next_takes_its_block() {
        let mut pool = StoragePool::new(4096);
        let mut a = RingBuf::parked(4096);
        pool.unpark(&mut a, &mut MemAccount::new(usize::MAX, usize::MAX), 0);
        pool.park(&mut a);
        assert!(!a.is_parked(), "with few sessions, rings keep their storage");
        assert_eq!(a.enqueue(b"x"), 1);
        a.consume(1);
        pool.set_sessions(CROWD + 1);
        let mut b = RingBuf::parked(4096);
        pool.unpark(&mut a, &mut MemAccount::new(usize::MAX, usize::MAX), 0);
        assert_eq!(a.enqueue(b"hello"), 5);
        pool.park(&mut a);
        assert!(!a.is_parked(), "a ring holding data keeps its storage");
        a.consume(5);
        pool.park(&mut a);
        assert!(a.is_parked());
        assert_eq!((a.capacity(), a.free(), pool.held()), (4096, 4096, 4096));
        pool.unpark(&mut b, &mut MemAccount::new(usize::MAX, usize::MAX), 0);
        assert_eq!(pool.held(), 0);
        assert_eq!(b.enqueue(b"xyz"), 3);
        assert_eq!(b.contiguous(), b"xyz");
    }

    #[test]
    fn the_pool_is_bounded_and_grown_rings_keep_their_storage() {
        let size = POOL_BYTES / 2;
        let mut pool = StoragePool::new(size);
        pool.set_sessions(CROWD + 1);
        let mut rings: Vec<RingBuf> = (0..3).map(|_| RingBuf::new(size)).collect();
        for r in &mut rings {
            pool.park(r);
            assert!(r.is_parked());
        }
        assert_eq!(pool.held(), POOL_BYTES, "the third block went back to the allocator");
        let mut grown = RingBuf::new(64);
        grown.grow(128);
        let mut small = StoragePool::new(64);
        small.park_now(&mut grown);
        assert!(grown.is_parked() && grown.capacity() == 64, "an ended session's grown ring is freed");
        assert_eq!(small.held(), 0, "and not pooled");
        let mut other = RingBuf::parked(32);
        pool.unpark(&mut other, &mut MemAccount::new(usize::MAX, usize::MAX), 0);
        assert_eq!(pool.held(), POOL_BYTES, "a ring of another size takes a fresh block");
        assert_eq!(other.write_at(0, &[7; 32]), 32);
    }

    #[test]
    fn a_parked_ring_writes_without_a_pool() {
        // Storage is allocated on demand if a caller writes without unparking first.
        let mut r = RingBuf::parked(16);
        assert_eq!(r.write_at(2, b"ab"), 2);
        assert_eq!(r.write_at(0, b"xy"), 2);
        r.commit(4);
        let mut out = [0u8; 4];
        assert_eq!(r.copy_out(0, &mut out), 4);
        assert_eq!(&out, b"xyab");
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn the_budget_limits_fresh_storage_and_pressure_shrinks_new_rings() {
        let mut pool = StoragePool::new(4096);
        let mut mem = MemAccount::new(8192, 10_000);
        let mut a = RingBuf::parked(4096);
        assert!(pool.unpark(&mut a, &mut mem, 1024));
        assert_eq!((a.storage_len(), mem.used), (4096, 4096));
        let mut b = RingBuf::parked(4096);
        assert!(pool.unpark(&mut b, &mut mem, 1024));
        assert_eq!(mem.level(), MemLevel::Pressure);
        // Under pressure a new ring gets the minimum size.
        let mut c = RingBuf::parked(4096);
        assert!(pool.unpark(&mut c, &mut mem, 1024));
        assert_eq!((c.capacity(), c.storage_len(), mem.used), (1024, 1024, 9216));
        // At the limit nothing more.
        let mut d = RingBuf::parked(4096);
        assert!(!pool.unpark(&mut d, &mut mem, 1024));
        assert!(d.is_parked());
        // An emptied ring sheds its storage under pressure (here into the pool), and the
        // pool's block serves the next ring of its size without a new charge.
        assert!(pool.shed(&mut a, &mem));
        assert!(a.is_parked() && pool.held() == 4096);
        assert!(pool.unpark(&mut d, &mut mem, 1024));
        assert_eq!((d.storage_len(), mem.used), (4096, 9216));
        // A grown ring that sheds frees its storage and gets the pool's size back.
        let mut g = RingBuf::new(64);
        g.grow(8192);
        assert!(pool.shed(&mut g, &mem));
        assert_eq!((g.capacity(), g.storage_len()), (4096, 0));
    }
}
