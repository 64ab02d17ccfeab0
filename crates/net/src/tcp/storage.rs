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
    /// pool's size, else a fresh one.
    #[inline]
    pub fn unpark(&mut self, ring: &mut RingBuf) {
        if ring.is_parked() {
            self.attach(ring);
        }
    }

    fn attach(&mut self, ring: &mut RingBuf) {
        let cap = ring.capacity();
        let parked = if cap == self.size { self.blocks.pop() } else { None };
        ring.attach(parked.unwrap_or_else(|| vec![0u8; cap].into_boxed_slice()));
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

    /// Take `ring`'s storage back if the ring is empty and of this pool's size, crowded or
    /// not (its session ended).
    #[inline]
    pub fn park_now(&mut self, ring: &mut RingBuf) {
        if ring.is_empty() && ring.capacity() == self.size && !ring.is_parked() {
            self.keep(ring);
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
    #[cfg(test)]
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
        pool.unpark(&mut a);
        pool.park(&mut a);
        assert!(!a.is_parked(), "with few sessions, rings keep their storage");
        assert_eq!(a.enqueue(b"x"), 1);
        a.consume(1);
        pool.set_sessions(CROWD + 1);
        let mut b = RingBuf::parked(4096);
        pool.unpark(&mut a);
        assert_eq!(a.enqueue(b"hello"), 5);
        pool.park(&mut a);
        assert!(!a.is_parked(), "a ring holding data keeps its storage");
        a.consume(5);
        pool.park(&mut a);
        assert!(a.is_parked());
        assert_eq!((a.capacity(), a.free(), pool.held()), (4096, 4096, 4096));
        pool.unpark(&mut b);
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
        assert!(!grown.is_parked());
        let mut other = RingBuf::parked(32);
        pool.unpark(&mut other);
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
