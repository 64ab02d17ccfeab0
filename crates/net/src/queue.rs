//! A bounded FIFO of byte packets with metadata, stored back to back in one byte ring. Used
//! for socket receive queues (where a reassembled 64 KiB datagram and a 60-byte one share the
//! same bytes) and packets waiting for ARP. A queue is either preallocated
//! ([`PacketQueue::with_limits`]: no allocation after construction) or grows on demand up to
//! its limits ([`PacketQueue::on_demand`], [`PacketQueue::growth_for`], [`PacketQueue::grow_to`]:
//! UDP sockets, whose owner charges the growth to the stack's memory budget).

/// Smallest byte ring an on-demand queue allocates.
const MIN_GROW_BYTES: usize = 2048;
/// Fewest records an on-demand queue allocates.
const MIN_GROW_RECORDS: usize = 8;

/// A FIFO of up to `max_packets` packets of up to `max_packet` bytes each, holding at most
/// `max_bytes` bytes in all, each packet with metadata `M`.
#[derive(Debug)]
pub struct PacketQueue<M: Copy + Default> {
    data: Box<[u8]>,
    /// Ring of records: metadata, start offset in `data`, length.
    meta: Box<[(M, u32, u32)]>,
    max_packet: usize,
    /// Limits an on-demand queue grows to (a preallocated one is at them from the start).
    max_packets: usize,
    max_bytes: usize,
    head: usize,
    len: usize,
    /// Next free byte offset in `data`.
    wr: usize,
}

impl<M: Copy + Default> PacketQueue<M> {
    /// A queue of `capacity` packets of at most `slot_size` bytes each.
    pub fn new(capacity: usize, slot_size: usize) -> Self {
        let capacity = capacity.max(1);
        Self::with_limits(capacity, capacity * slot_size.max(1), slot_size)
    }

    /// A queue of at most `max_packets` packets and `max_bytes` bytes, packets of at most
    /// `max_packet` bytes (`max_bytes` is raised to hold at least one largest packet).
    pub fn with_limits(max_packets: usize, max_bytes: usize, max_packet: usize) -> Self {
        let mut q = Self::on_demand(max_packets, max_bytes, max_packet);
        q.grow_to(q.max_bytes, q.max_packets);
        q
    }

    /// Like [`Self::with_limits`], but holding no storage until it is grown.
    pub fn on_demand(max_packets: usize, max_bytes: usize, max_packet: usize) -> Self {
        PacketQueue {
            data: Box::default(),
            meta: Box::default(),
            max_packet,
            max_packets: max_packets.max(1),
            max_bytes: max_bytes.max(max_packet).max(1),
            head: 0,
            len: 0,
            wr: 0,
        }
    }

    /// Bytes of storage held: the byte ring and the records.
    pub fn storage_len(&self) -> usize {
        Self::storage_of(self.data.len(), self.meta.len())
    }

    /// Bytes of storage of a byte ring of `bytes` and `records` records.
    pub fn storage_of(bytes: usize, records: usize) -> usize {
        bytes + records * std::mem::size_of::<(M, u32, u32)>()
    }

    /// The storage (byte ring, records) a queue whose push of `need` bytes failed would grow
    /// to so that it fits, or `None` if the queue is at its limits (or `need` is too large).
    pub fn growth_for(&self, need: usize) -> Option<(usize, usize)> {
        if need > self.max_packet {
            return None;
        }
        let records = if self.is_full() {
            if self.meta.len() >= self.max_packets {
                return None;
            }
            // Not clamp: a queue allowed fewer records than the smallest growth step.
            (self.meta.len() * 2).max(MIN_GROW_RECORDS).min(self.max_packets)
        } else {
            self.meta.len()
        };
        let mut bytes = self.data.len();
        if self.place(need).is_none() {
            let want = self.bytes_held() + need.max(1);
            bytes = want.next_power_of_two().max(bytes * 2).max(MIN_GROW_BYTES).min(self.max_bytes);
            if bytes < want || bytes <= self.data.len() {
                return None;
            }
        }
        Some((bytes, records))
    }

    /// Bytes the queued packets occupy in the ring (an empty packet takes one).
    fn bytes_held(&self) -> usize {
        (0..self.len).map(|i| self.meta[(self.head + i) % self.meta.len()].2.max(1) as usize).sum()
    }

    /// Move the queued packets, in order, into new storage of `bytes` and `records` (as
    /// [`Self::growth_for`] gave; never fewer than what is queued).
    pub fn grow_to(&mut self, bytes: usize, records: usize) {
        let mut data = vec![0u8; bytes.max(self.bytes_held())].into_boxed_slice();
        let mut meta = vec![(M::default(), 0, 0); records.max(self.len)].into_boxed_slice();
        let mut wr = 0;
        for (i, rec) in meta.iter_mut().enumerate().take(self.len) {
            let (m, at, n) = self.meta[(self.head + i) % self.meta.len()];
            data[wr..wr + n as usize].copy_from_slice(&self.data[at as usize..(at + n) as usize]);
            *rec = (m, wr as u32, n);
            wr += n.max(1) as usize;
        }
        (self.data, self.meta, self.head, self.wr) = (data, meta, 0, wr);
    }

    /// Give back the storage of an empty queue; returns the bytes freed (0 if not empty).
    pub fn release(&mut self) -> usize {
        if !self.is_empty() {
            return 0;
        }
        let freed = self.storage_len();
        (self.data, self.meta, self.head, self.wr) = (Box::default(), Box::default(), 0, 0);
        freed
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no record is free (bytes may run out earlier: see [`Self::push_with`]).
    pub fn is_full(&self) -> bool {
        self.len == self.meta.len()
    }

    /// Where `need` contiguous bytes fit, if they do.
    fn place(&self, need: usize) -> Option<usize> {
        let cap = self.data.len();
        let need = need.max(1);
        if self.is_empty() {
            return (need <= cap).then_some(0);
        }
        let rd = self.meta[self.head].1 as usize;
        if self.wr > rd {
            if self.wr + need <= cap {
                Some(self.wr)
            } else {
                (need <= rd).then_some(0)
            }
        } else {
            (self.wr + need <= rd).then_some(self.wr)
        }
    }

    /// Append a packet built in place by `fill`, which gets `reserve` bytes (at most the
    /// largest packet) and returns the length used, or `None` to abandon. Returns false if the
    /// queue has no room or `fill` abandoned.
    pub fn push_with(&mut self, meta: M, reserve: usize, fill: impl FnOnce(&mut [u8]) -> Option<usize>) -> bool {
        if self.is_full() || reserve > self.max_packet {
            return false;
        }
        let Some(at) = self.place(reserve) else { return false };
        let Some(n) = fill(&mut self.data[at..at + reserve]) else { return false };
        let n = n.min(reserve);
        let idx = (self.head + self.len) % self.meta.len();
        self.meta[idx] = (meta, at as u32, n as u32);
        self.len += 1;
        self.wr = at + n.max(1);
        true
    }

    /// Append a copy of `bytes`. Returns false if there is no room or `bytes` is too large.
    pub fn push(&mut self, meta: M, bytes: &[u8]) -> bool {
        self.push_with(meta, bytes.len(), |slot| {
            slot.copy_from_slice(bytes);
            Some(bytes.len())
        })
    }

    /// The oldest packet, without removing it.
    pub fn front(&self) -> Option<(M, &[u8])> {
        if self.is_empty() {
            return None;
        }
        let (m, at, n) = self.meta[self.head];
        Some((m, &self.data[at as usize..(at + n) as usize]))
    }

    /// Remove the oldest packet.
    pub fn pop_front(&mut self) {
        if !self.is_empty() {
            self.head = (self.head + 1) % self.meta.len();
            self.len -= 1;
            if self.len == 0 {
                self.head = 0;
                self.wr = 0;
            }
        }
    }

    /// Hand the oldest packet to `f` in place (no copy), remove it, and return what `f`
    /// returned.
    pub fn pop_with<R>(&mut self, f: impl FnOnce(M, &[u8]) -> R) -> Option<R> {
        let (m, data) = self.front()?;
        let r = f(m, data);
        self.pop_front();
        Some(r)
    }

    /// Copy the oldest packet into `buf` (truncating), remove it, and return its metadata and
    /// full length.
    pub fn pop_into(&mut self, buf: &mut [u8]) -> Option<(M, usize)> {
        self.pop_with(|m, data| {
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            (m, data.len())
        })
    }

    /// Keep only the packets for which `keep` returns true, in order; `on_removed` sees each
    /// removed packet. (Not a hot path: kept packets are moved through a scratch copy.)
    pub fn retain(&mut self, mut keep: impl FnMut(&M, &[u8]) -> bool, mut on_removed: impl FnMut(&M, &[u8])) {
        let mut kept: Vec<(M, Vec<u8>)> = Vec::new();
        while let Some((m, data)) = self.front() {
            if keep(&m, data) {
                kept.push((m, data.to_vec()));
            } else {
                on_removed(&m, data);
            }
            self.pop_front();
        }
        for (m, data) in kept {
            self.push(m, &data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_of_fewer_records_than_the_growth_step_grows_to_its_limit() {
        let mut q: PacketQueue<u8> = PacketQueue::on_demand(4, 1 << 16, 100);
        for i in 0..4u8 {
            if !q.push(i, &[i; 10]) {
                let (bytes, records) = q.growth_for(10).expect("room to grow");
                assert!(records <= 4);
                q.grow_to(bytes, records);
                assert!(q.push(i, &[i; 10]));
            }
        }
        assert!(!q.push(9, &[9; 10]));
        assert_eq!(q.growth_for(10), None);
    }

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
    fn pop_with_lends_the_packet_in_place_then_removes_it() {
        let mut q: PacketQueue<u32> = PacketQueue::new(2, 8);
        assert_eq!(q.pop_with(|_, _| ()), None);
        assert!(q.push(5, b"hello"));
        assert!(q.push(6, b"x"));
        let front_ptr = q.front().unwrap().1.as_ptr();
        assert_eq!(q.pop_with(|m, d| (m, d.to_vec(), d.as_ptr() == front_ptr)), Some((5, b"hello".to_vec(), true)));
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_with(|m, d| (m, d.len())), Some((6, 1)));
        assert!(q.is_empty());
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

    #[test]
    fn variable_sizes_share_the_bytes_and_wrap() {
        let mut q: PacketQueue<u32> = PacketQueue::with_limits(100, 100, 60);
        assert!(q.push(0, &[0; 60]));
        assert!(!q.push(1, &[1; 50]), "only 40 bytes left");
        assert!(q.push(1, &[1; 40]));
        let mut buf = [0u8; 64];
        assert_eq!(q.pop_into(&mut buf), Some((0, 60)));
        // 60 bytes free at the front: a 50-byte packet wraps there.
        assert!(q.push(2, &[2; 50]));
        assert!(!q.push(3, &[3; 20]), "10 bytes between the tail and the head");
        assert!(q.push(3, &[3; 10]));
        assert_eq!(q.pop_into(&mut buf), Some((1, 40)));
        assert_eq!(q.pop_into(&mut buf), Some((2, 50)));
        assert_eq!(&buf[..50], &[2; 50]);
        assert_eq!(q.pop_into(&mut buf), Some((3, 10)));
        assert!(q.is_empty());
        assert!(!q.push(9, &[0; 61]), "larger than the largest packet");
        for i in 0..200u32 {
            let n = (i as usize * 7) % 61;
            assert!(q.push(i, &vec![i as u8; n]));
            assert_eq!(q.pop_into(&mut buf), Some((i, n)));
            assert!(buf[..n].iter().all(|&b| b == i as u8));
        }
    }

    #[test]
    fn on_demand_grows_in_order_to_its_limits_and_releases() {
        let mut q: PacketQueue<u32> = PacketQueue::on_demand(20, 5000, 3000);
        assert_eq!(q.storage_len(), 0);
        assert!(!q.push(0, b"a"), "no storage yet");
        let rec = std::mem::size_of::<(u32, u32, u32)>();
        assert_eq!(q.growth_for(1), Some((MIN_GROW_BYTES, MIN_GROW_RECORDS)));
        q.grow_to(MIN_GROW_BYTES, MIN_GROW_RECORDS);
        assert_eq!(q.storage_len(), MIN_GROW_BYTES + MIN_GROW_RECORDS * rec);
        for i in 0..8u32 {
            assert!(q.push(i, &[i as u8; 100]));
        }
        q.pop_front();
        // Full in records: the ring keeps its bytes and the records double.
        assert!(q.push(8, &[8; 100]));
        assert!(!q.push(9, &[9; 100]));
        assert_eq!(q.growth_for(100), Some((MIN_GROW_BYTES, 16)));
        q.grow_to(MIN_GROW_BYTES, 16);
        assert!(q.push(9, &[9; 100]));
        // Out of bytes: the ring grows to the next power of two, capped at the limit.
        assert!(!q.push(10, &[10; 2000]));
        assert_eq!(q.growth_for(2000), Some((4096, 16)));
        q.grow_to(4096, 16);
        assert!(q.push(10, &[10; 2000]));
        assert_eq!(q.growth_for(2000), Some((5000, 16)));
        assert_eq!(q.growth_for(3000), None, "more than the limit holds");
        assert_eq!(q.growth_for(3001), None, "larger than the largest packet");
        let mut buf = [0u8; 3000];
        for i in 1..=10u32 {
            let n = if i == 10 { 2000 } else { 100 };
            assert_eq!(q.pop_into(&mut buf), Some((i, n)));
            assert!(buf[..n].iter().all(|&b| b == i as u8));
        }
        assert_eq!(q.release(), 4096 + 16 * rec);
        assert_eq!(q.storage_len(), 0);
        let mut full: PacketQueue<u32> = PacketQueue::with_limits(2, 100, 100);
        assert!(full.push(1, &[1; 60]) && full.push(2, &[2; 40]));
        assert_eq!(full.growth_for(1), None, "a preallocated queue is at its limits");
    }
}
