//! A bounded FIFO of byte packets with metadata, in preallocated slots (no allocation after
//! construction). Used for socket receive queues and packets waiting for ARP.

/// A FIFO of up to `capacity` packets of up to `slot_size` bytes, each with metadata `M`.
#[derive(Debug)]
pub struct PacketQueue<M: Copy + Default> {
    data: Box<[u8]>,
    meta: Box<[(M, u32)]>,
    slot_size: usize,
    head: usize,
    len: usize,
}

impl<M: Copy + Default> PacketQueue<M> {
    /// A queue of `capacity` packets of at most `slot_size` bytes each.
    pub fn new(capacity: usize, slot_size: usize) -> Self {
        let capacity = capacity.max(1);
        PacketQueue {
            data: vec![0u8; capacity * slot_size].into_boxed_slice(),
            meta: vec![(M::default(), 0); capacity].into_boxed_slice(),
            slot_size,
            head: 0,
            len: 0,
        }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no slot is free.
    pub fn is_full(&self) -> bool {
        self.len == self.meta.len()
    }

    /// Append a packet built in place by `fill`, which gets the whole slot and returns the
    /// length used, or `None` to abandon. Returns false if the queue is full or `fill` abandoned.
    pub fn push_with(&mut self, meta: M, fill: impl FnOnce(&mut [u8]) -> Option<usize>) -> bool {
        if self.is_full() {
            return false;
        }
        let idx = (self.head + self.len) % self.meta.len();
        let slot = &mut self.data[idx * self.slot_size..(idx + 1) * self.slot_size];
        let Some(n) = fill(slot) else { return false };
        self.meta[idx] = (meta, n.min(self.slot_size) as u32);
        self.len += 1;
        true
    }

    /// Append a copy of `bytes`. Returns false if the queue is full or `bytes` exceeds a slot.
    pub fn push(&mut self, meta: M, bytes: &[u8]) -> bool {
        if bytes.len() > self.slot_size {
            return false;
        }
        self.push_with(meta, |slot| {
            slot[..bytes.len()].copy_from_slice(bytes);
            Some(bytes.len())
        })
    }

    /// The oldest packet, without removing it.
    pub fn front(&self) -> Option<(M, &[u8])> {
        if self.is_empty() {
            return None;
        }
        let (m, n) = self.meta[self.head];
        let start = self.head * self.slot_size;
        Some((m, &self.data[start..start + n as usize]))
    }

    /// Remove the oldest packet.
    pub fn pop_front(&mut self) {
        if !self.is_empty() {
            self.head = (self.head + 1) % self.meta.len();
            self.len -= 1;
        }
    }

    /// Copy the oldest packet into `buf` (truncating), remove it, and return its metadata and
    /// full length.
    pub fn pop_into(&mut self, buf: &mut [u8]) -> Option<(M, usize)> {
        let (m, data) = self.front()?;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        let full = data.len();
        self.pop_front();
        Some((m, full))
    }

    /// Keep only the packets for which `keep` returns true, in order; `on_removed` sees each
    /// removed packet.
    pub fn retain(&mut self, mut keep: impl FnMut(&M, &[u8]) -> bool, mut on_removed: impl FnMut(&M, &[u8])) {
        let cap = self.meta.len();
        let mut write = 0;
        for read in 0..self.len {
            let ri = (self.head + read) % cap;
            let (m, n) = self.meta[ri];
            let rs = ri * self.slot_size;
            let keep_it = keep(&m, &self.data[rs..rs + n as usize]);
            if keep_it {
                let wi = (self.head + write) % cap;
                if wi != ri {
                    let ws = wi * self.slot_size;
                    self.data.copy_within(rs..rs + n as usize, ws);
                    self.meta[wi] = (m, n);
                }
                write += 1;
            } else {
                on_removed(&m, &self.data[rs..rs + n as usize]);
            }
        }
        self.len = write;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_order_capacity_and_wrap() {
        let mut q: PacketQueue<u32> = PacketQueue::new(3, 4);
        for i in 0..3 {
            assert!(q.push(i, &[i as u8; 2]));
        }
        assert!(!q.push(9, b"x"));
        assert!(!PacketQueue::<u32>::new(1, 4).push(0, b"toolong"));
        let mut buf = [0u8; 4];
        assert_eq!(q.pop_into(&mut buf), Some((0, 2)));
        assert!(q.push(3, b"abcd"));
        let order: Vec<u32> = std::iter::from_fn(|| q.pop_into(&mut buf).map(|(m, _)| m)).collect();
        assert_eq!(order, vec![1, 2, 3]);
        assert_eq!(&buf, b"abcd");
        assert!(q.push(7, b""));
        assert_eq!(q.pop_into(&mut buf), Some((7, 0)));
    }

    #[test]
    fn retain_keeps_order() {
        let mut q: PacketQueue<u32> = PacketQueue::new(4, 2);
        q.pop_front();
        for i in 0..4 {
            q.push(i, &[i as u8]);
        }
        q.pop_front();
        q.push(4, &[4]);
        let mut removed = vec![];
        q.retain(|m, _| m % 2 == 0, |m, _| removed.push(*m));
        assert_eq!(removed, vec![1, 3]);
        let mut buf = [0u8; 2];
        assert_eq!(q.pop_into(&mut buf), Some((2, 1)));
        assert_eq!(buf[0], 2);
        assert_eq!(q.pop_into(&mut buf), Some((4, 1)));
        assert!(q.is_empty());
    }
}
