//! The receive registration table (paper 3.2-3.3): one entry per registered op in flight,
//! each with a bitmask of the packets that have arrived.
//!
//! Entries and masks are preallocated (`entries` x `mask_width` bits) and found by
//! (source, op id). As in the paper, an op of `count` packets starts from a mask whose bits
//! `count..width` are already ones ("shift in zeroes" for the expected packets), each
//! arriving packet sets its bit, a packet whose bit is already set is a duplicate, and an
//! all-ones mask means the op is complete.

use crate::peer::Peer;
use link::Instant;
use std::cell::Cell;
use std::collections::HashMap;

/// Bytes of one entry's fixed fields as stored here (peer, op id, key, offset, lengths,
/// count, stride, flags, time), without the mask.
pub const ENTRY_FIXED_BYTES: usize = std::mem::size_of::<Entry>();

/// What one data packet did to its entry's mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Its bit was already set: a duplicate.
    Duplicate,
    /// Its bit was new; packets are still missing.
    Set,
    /// Its bit was the last zero: the op is complete.
    Complete,
}

/// Why an op could not be registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// No free entry.
    Full,
    /// More packets than the mask is wide (or none).
    TooManyPackets,
}

/// The fields of a registered op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The sender.
    pub peer: Peer,
    /// Its op id.
    pub op_id: u64,
    /// Target region key.
    pub key: u32,
    /// Region offset of the op's first byte.
    pub offset: u64,
    /// Bytes of the op.
    pub op_len: u32,
    /// Packets of the op.
    pub count: u32,
    /// Payload bytes per packet but the last.
    pub stride: u16,
    /// Wire flags of the op.
    pub flags: u8,
    /// Last time a packet of the op arrived.
    pub last_seen: Instant,
}

/// The registration table.
pub struct RegTable {
    entries: Vec<Option<Entry>>,
    masks: Box<[u64]>,
    words: usize,
    width: usize,
    free: Vec<u32>,
    index: HashMap<(Peer, u64), u32>,
    /// (peer, op id, slot) of the op found last: the packets of an op arrive one after
    /// another, and they skip the keyed hash of the index (about a fifth of a packet's
    /// receive work at full rate).
    last: Cell<Option<(Peer, u64, u32)>>,
}

impl RegTable {
    /// A table of `entries` entries with masks of `width` bits (rounded up to a multiple
    /// of 64 for storage; bits past `width` are treated as already set).
    pub fn new(entries: usize, width: usize) -> Self {
        let entries = entries.max(1);
        let width = width.max(1);
        let words = width.div_ceil(64);
        RegTable {
            entries: vec![None; entries],
            masks: vec![0u64; entries * words].into_boxed_slice(),
            words,
            width,
            free: (0..entries as u32).rev().collect(),
            index: HashMap::with_capacity(entries),
            last: Cell::new(None),
        }
    }

    /// Bytes a table of `entries` x `width` bits occupies (entries, masks and the index),
    /// for the paper's Table 1 grid.
    pub fn memory_bytes(entries: usize, width: usize) -> usize {
        let idx_entry = std::mem::size_of::<((Peer, u64), u32)>() + 1;
        entries * (std::mem::size_of::<Option<Entry>>() + width.div_ceil(64) * 8 + 4 + idx_entry)
    }

    /// Mask width in packets.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when no op is registered.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Capacity in entries.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// The slot of (peer, op id), if registered.
    pub fn lookup(&self, peer: Peer, op_id: u64) -> Option<u32> {
        if let Some((p, o, slot)) = self.last.get() {
            if o == op_id && p == peer {
                return Some(slot);
            }
        }
        let slot = self.index.get(&(peer, op_id)).copied()?;
        self.last.set(Some((peer, op_id, slot)));
        Some(slot)
    }

    /// The entry in `slot`.
    pub fn entry(&self, slot: u32) -> Option<&Entry> {
        self.entries.get(slot as usize).and_then(Option::as_ref)
    }

    /// Register an op (not yet marked: call [`RegTable::mark`] for the packet that
    /// registered it). Returns its slot.
    pub fn register(&mut self, e: Entry) -> Result<u32, RegisterError> {
        if e.count == 0 || e.count as usize > self.width {
            return Err(RegisterError::TooManyPackets);
        }
        if let Some(s) = self.lookup(e.peer, e.op_id) {
            return Ok(s);
        }
        let slot = self.free.pop().ok_or(RegisterError::Full)?;
        let m = &mut self.masks[slot as usize * self.words..(slot as usize + 1) * self.words];
        // Initial mask: ones everywhere, then zeroes shifted in for the expected packets.
        m.fill(!0);
        let count = e.count as usize;
        for (w, word) in m.iter_mut().enumerate() {
            let lo = w * 64;
            if count >= lo + 64 {
                *word = 0;
            } else if count > lo {
                *word = !0u64 << (count - lo);
            }
        }
        self.index.insert((e.peer, e.op_id), slot);
        self.last.set(Some((e.peer, e.op_id, slot)));
        self.entries[slot as usize] = Some(e);
        Ok(slot)
    }

    /// The mask words of `slot` (bit i of word w is packet w*64+i).
    pub fn mask(&self, slot: u32) -> &[u64] {
        &self.masks[slot as usize * self.words..(slot as usize + 1) * self.words]
    }

    /// Record packet `index` of the op in `slot` (the caller checked index < count).
    pub fn mark(&mut self, slot: u32, index: u32, now: Instant) -> Mark {
        if let Some(e) = self.entries.get_mut(slot as usize).and_then(Option::as_mut) {
            e.last_seen = now;
        }
        let (w, b) = (index as usize / 64, index as usize % 64);
        if w >= self.words {
            return Mark::Duplicate;
        }
        let m = &mut self.masks[slot as usize * self.words..(slot as usize + 1) * self.words];
        let old = m[w];
        let new = old | 1u64 << b;
        if new == old {
            return Mark::Duplicate;
        }
        m[w] = new;
        if m.iter().all(|x| *x == !0) {
            Mark::Complete
        } else {
            Mark::Set
        }
    }

    /// Free `slot` and return its entry.
    pub fn remove(&mut self, slot: u32) -> Option<Entry> {
        let e = self.entries.get_mut(slot as usize)?.take()?;
        self.index.remove(&(e.peer, e.op_id));
        if self.last.get().is_some_and(|(_, _, s)| s == slot) {
            self.last.set(None);
        }
        self.free.push(slot);
        Some(e)
    }

    /// Slots whose entries match `pred`.
    pub fn slots_where(&self, mut pred: impl FnMut(&Entry) -> bool) -> Vec<u32> {
        self.index.values().copied().filter(|s| self.entry(*s).is_some_and(&mut pred)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddrV4;

    fn entry(op: u64, count: u32) -> Entry {
        Entry {
            peer: Peer::Udp(SocketAddrV4::new([10, 0, 0, 1].into(), 9).into()),
            op_id: op,
            key: 1,
            offset: 0,
            op_len: count * 512,
            count,
            stride: 512,
            flags: 0,
            last_seen: Instant::ZERO,
        }
    }

    #[test]
    fn papers_worked_example_4k_op_in_16k_mask() {
        // 16 KiB of 512 B packets is a 32-bit mask; a 4 KiB op has 8 packets.
        let mut t = RegTable::new(4, 32);
        let s = t.register(entry(1, 8)).unwrap();
        assert_eq!(t.mark(s, 0, Instant::ZERO), Mark::Set);
        // 'b1111.1111.1111.1111.1111.1111.0000.0001
        assert_eq!(t.mask(s)[0] as u32, 0b1111_1111_1111_1111_1111_1111_0000_0001);
        for i in 1..7 {
            assert_eq!(t.mark(s, i, Instant::ZERO), Mark::Set);
        }
        assert_eq!(t.mark(s, 3, Instant::ZERO), Mark::Duplicate);
        assert_eq!(t.mark(s, 7, Instant::ZERO), Mark::Complete);
        assert_eq!(t.mark(s, 7, Instant::ZERO), Mark::Duplicate);
    }

    #[test]
    fn wide_masks_full_table_and_reuse() {
        let mut t = RegTable::new(2, 1024);
        assert_eq!(t.register(entry(1, 1025)), Err(RegisterError::TooManyPackets));
        assert_eq!(t.register(entry(1, 0)), Err(RegisterError::TooManyPackets));
        let a = t.register(entry(1, 1024)).unwrap();
        let b = t.register(entry(2, 65)).unwrap();
        assert_eq!(t.register(entry(1, 1024)), Ok(a), "registering twice finds the entry");
        assert_eq!(t.register(entry(3, 1)), Err(RegisterError::Full));
        // Visit in a scrambled order; only the last new bit completes.
        let mut order: Vec<u32> = (0..1024).map(|i| (i * 389) % 1024).collect();
        let last = order.pop().unwrap();
        for i in order {
            assert_eq!(t.mark(a, i, Instant::ZERO), Mark::Set);
        }
        assert_eq!(t.mark(a, last, Instant::ZERO), Mark::Complete);
        for i in 0..64 {
            assert_eq!(t.mark(b, i, Instant::ZERO), Mark::Set);
        }
        assert_eq!(t.mark(b, 64, Instant::from_millis(3)), Mark::Complete);
        assert_eq!(t.entry(b).unwrap().last_seen, Instant::from_millis(3));
        assert_eq!(t.remove(a).unwrap().op_id, 1);
        assert!(t.lookup(entry(1, 1).peer, 1).is_none());
        let c = t.register(entry(3, 1)).unwrap();
        assert_eq!(c, a);
        assert_eq!(t.mark(c, 0, Instant::ZERO), Mark::Complete);
        assert_eq!(t.len(), 2);
        assert_eq!(t.slots_where(|e| e.op_id == 2), vec![b]);
    }

    #[test]
    fn memory_grows_with_width_and_entries() {
        let small = RegTable::memory_bytes(64, 64);
        assert!(RegTable::memory_bytes(64, 1024) > small);
        assert_eq!(RegTable::memory_bytes(1024, 64), 16 * small);
        const { assert!(ENTRY_FIXED_BYTES >= 40) };
    }
}
