//! Flow keys and a bounded flow table (a map from key to a slot of a preallocated slab, with a
//! free list), and the per-direction TCP stream state the IDS keeps.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use accel::ids::StreamPatterns;
use link::Instant;

/// A conversation, independent of direction: endpoints sorted, plus the IP protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    /// The lower (address, port) endpoint.
    pub lo: (Ipv4Addr, u16),
    /// The higher endpoint.
    pub hi: (Ipv4Addr, u16),
    /// IP protocol number.
    pub proto: u8,
}

impl FlowKey {
    /// The key of a packet from `src:sport` to `dst:dport`, and the packet's direction
    /// (0: from `lo` to `hi`, 1: from `hi` to `lo`).
    pub fn of(src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16, proto: u8) -> (FlowKey, usize) {
        let (a, b) = ((src, sport), (dst, dport));
        if a <= b {
            (FlowKey { lo: a, hi: b, proto }, 0)
        } else {
            (FlowKey { lo: b, hi: a, proto }, 1)
        }
    }

    /// The key of an IPv4 frame with TCP or UDP ports (other protocols get ports 0), if it parses.
    pub fn of_frame(frame: &[u8]) -> Option<FlowKey> {
        let h = middlebox::parse::parse(frame).ok()?.ipv4?;
        let (sp, dp) = h.ports.unwrap_or((0, 0));
        Some(FlowKey::of(h.src, sp, h.dst, dp, h.proto).0)
    }
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} <-> {}:{} proto {}", self.lo.0, self.lo.1, self.hi.0, self.hi.1, self.proto)
    }
}

/// A bounded table of flows: `key -> index` plus a slab of entries reused through a free list.
#[derive(Debug)]
pub struct FlowTable<F> {
    map: HashMap<FlowKey, u32>,
    slab: Vec<Option<(FlowKey, F)>>,
    free: Vec<u32>,
    capacity: usize,
}

impl<F> FlowTable<F> {
    /// A table for up to `capacity` flows (the map is sized at start-up).
    pub fn new(capacity: usize) -> Self {
        FlowTable { map: HashMap::with_capacity(capacity), slab: Vec::new(), free: Vec::new(), capacity }
    }

    /// Flows in the table.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the table holds no flow.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The index of `key`.
    pub fn find(&self, key: &FlowKey) -> Option<u32> {
        self.map.get(key).copied()
    }

    /// The index of `key`, inserting `make()` if absent; `None` when the table is full.
    pub fn find_or_insert(&mut self, key: FlowKey, make: impl FnOnce() -> F) -> Option<u32> {
        if let Some(&i) = self.map.get(&key) {
            return Some(i);
        }
        if self.map.len() >= self.capacity {
            return None;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some((key, make()));
                i
            }
            None => {
                self.slab.push(Some((key, make())));
                (self.slab.len() - 1) as u32
            }
        };
        self.map.insert(key, i);
        Some(i)
    }

    /// Entry `i`.
    pub fn get_mut(&mut self, i: u32) -> Option<&mut F> {
        self.slab.get_mut(i as usize).and_then(|e| e.as_mut()).map(|(_, f)| f)
    }

    /// Entry `i`, with its key.
    pub fn entry(&self, i: u32) -> Option<(&FlowKey, &F)> {
        self.slab.get(i as usize).and_then(|e| e.as_ref()).map(|(k, f)| (k, f))
    }

    /// Remove entry `i`, returning it.
    pub fn remove(&mut self, i: u32) -> Option<(FlowKey, F)> {
        let e = self.slab.get_mut(i as usize)?.take()?;
        self.map.remove(&e.0);
        self.free.push(i);
        Some(e)
    }

    /// Indices of every flow.
    pub fn indices(&self) -> Vec<u32> {
        self.map.values().copied().collect()
    }
}

/// One direction of a TCP conversation as the IDS sees it: the next sequence number it
/// expects, the stream bytes so far (bounded), and the out-of-order segments it holds.
#[derive(Debug)]
pub struct Direction<H> {
    /// Next expected sequence number (None until a SYN or the first segment).
    pub next: Option<u32>,
    /// Stream bytes since the start of the direction (or since the last slide).
    pub buf: Vec<u8>,
    /// True once the direction may match a rule (a fast pattern was seen, or it is HTTP):
    /// from then on every new segment is matched against the whole buffer.
    pub armed: bool,
    /// The fast patterns present in `buf` (kept as it grows, so it is never scanned twice).
    pub pats: StreamPatterns,
    /// Out-of-order segments, kept sorted by sequence number.
    pub held: Vec<(u32, H)>,
    /// A FIN was accepted in order.
    pub fin: bool,
}

impl<H> Default for Direction<H> {
    fn default() -> Self {
        Direction {
            next: None,
            buf: Vec::new(),
            armed: false,
            pats: StreamPatterns::new(),
            held: Vec::new(),
            fin: false,
        }
    }
}

/// Sequence number comparison with wrap-around: `a - b` as a signed distance.
pub fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

impl<H> Direction<H> {
    /// Keep segment `h` starting at `seq` until the gap before it fills.
    pub fn hold(&mut self, seq: u32, h: H) {
        let at = self.held.partition_point(|(s, _)| seq_diff(*s, seq) <= 0);
        self.held.insert(at, (seq, h));
    }

    /// Take the first held segment if it starts at or before the next expected byte.
    pub fn take_ready(&mut self) -> Option<(u32, H)> {
        let next = self.next?;
        match self.held.first() {
            Some((s, _)) if seq_diff(*s, next) <= 0 => Some(self.held.remove(0)),
            _ => None,
        }
    }

    /// Append new stream bytes, sliding (keeping the last `keep` bytes) when the buffer would
    /// exceed `cap`. Returns the offset in `buf` where the new bytes start and whether it slid.
    pub fn append(&mut self, bytes: &[u8], cap: usize, keep: usize) -> (usize, bool) {
        let mut slid = false;
        if self.buf.len() + bytes.len() > cap {
            let keep = keep.min(self.buf.len());
            let cut = self.buf.len() - keep;
            self.buf.drain(..cut);
            slid = true;
            if bytes.len() > cap {
                self.buf.clear();
                let from = bytes.len() - cap;
                self.buf.extend_from_slice(&bytes[from..]);
                return (0, true);
            }
        }
        let at = self.buf.len();
        self.buf.extend_from_slice(bytes);
        (at, slid)
    }
}

/// When a flow was last seen, for idle eviction.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen(pub Instant);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_direction_free() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let b = Ipv4Addr::new(10, 0, 0, 2);
        let (k1, d1) = FlowKey::of(a, 1000, b, 80, 6);
        let (k2, d2) = FlowKey::of(b, 80, a, 1000, 6);
        assert_eq!(k1, k2);
        assert_ne!(d1, d2);
    }

    #[test]
    fn table_is_bounded_and_reuses_entries() {
        let mut t: FlowTable<u32> = FlowTable::new(2);
        let k = |p| FlowKey::of(Ipv4Addr::LOCALHOST, p, Ipv4Addr::LOCALHOST, 1, 6).0;
        let i = t.find_or_insert(k(5), || 5).unwrap();
        assert_eq!(t.find_or_insert(k(5), || 0), Some(i));
        t.find_or_insert(k(6), || 6).unwrap();
        assert_eq!(t.find_or_insert(k(7), || 7), None);
        assert_eq!(t.remove(i).unwrap().1, 5);
        assert_eq!(t.find_or_insert(k(7), || 7), Some(i));
        assert_eq!(*t.get_mut(i).unwrap(), 7);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn held_segments_come_back_in_sequence_order() {
        let mut d: Direction<&str> = Direction { next: Some(u32::MAX - 5), ..Default::default() };
        d.hold(10, "c");
        d.hold(u32::MAX - 1, "b");
        assert!(d.take_ready().is_none());
        d.next = Some(u32::MAX - 1);
        assert_eq!(d.take_ready(), Some((u32::MAX - 1, "b")));
        assert!(d.take_ready().is_none());
        d.next = Some(12);
        assert_eq!(d.take_ready(), Some((10, "c")));
    }

    #[test]
    fn append_slides_at_the_cap() {
        let mut d: Direction<()> = Direction::default();
        assert_eq!(d.append(b"abcdef", 8, 3), (0, false));
        assert_eq!(d.append(b"ghij", 8, 3), (3, true));
        assert_eq!(d.buf, b"defghij");
        assert_eq!(d.append(b"0123456789", 8, 3), (0, true));
        assert_eq!(d.buf, b"23456789");
    }
}
