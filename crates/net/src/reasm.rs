//! IPv4 and IPv6 reassembly (RFC 791, RFC 815, RFC 8200 section 4.5) with limits against
//! fragment attacks; one reassembler per family.
//!
//! Fragments are kept per datagram (source, destination, protocol, identification) as a
//! sorted list of pieces until they cover the whole datagram, which is then rebuilt behind
//! the first fragment's header (for IPv6, the fixed header and the unfragmentable extension
//! headers, without the fragment header, RFC 8200 section 4.5). What an attacker can make us hold is bounded:
//!
//! - memory: every piece is charged its length plus [`PIECE_OVERHEAD`], every datagram
//!   [`DATAGRAM_OVERHEAD`]; over the per-source cap the source's oldest datagram is given up,
//!   over the total cap or the datagram count the oldest datagram of anyone;
//! - time: a datagram not complete within the timeout is given up (and, if its first fragment
//!   came, answered with ICMP time exceeded, code 1, as RFC 792 asks);
//! - overlaps: a fragment that overlaps another one of its datagram (other than an exact
//!   duplicate, which is dropped alone) discards the whole datagram and every fragment of it
//!   that comes later, as RFC 5722 requires for IPv6 and Linux does for IPv4;
//! - tiny fragments (RFC 1858): a first fragment too short for the transport header, or a
//!   later one that starts inside it, is dropped; so are fragments with MF set whose length is
//!   not a multiple of 8, empty ones, and ones that end beyond 65,535 bytes.
//!
//! Every fragment gets a verdict: queued, completing (the datagram is then processed as if it
//! had arrived whole) or dropped under one counted reason. Datagrams given up later (timeout,
//! eviction) are counted apart, per datagram.

use crate::counters::Counter;
use link::Instant;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::Duration;
use wire::ipv4::protocol;
use wire::ipv6::next_header;
use wire::{FragmentHeader, Ipv4Packet, Ipv6Packet};

/// Bytes charged per datagram in progress besides its pieces.
pub const DATAGRAM_OVERHEAD: usize = 192;
/// Bytes charged per stored piece besides its payload.
pub const PIECE_OVERHEAD: usize = 48;

/// Limits of the reassembler (part of [`crate::Config`]).
#[derive(Debug, Clone, Copy)]
pub struct ReasmLimits {
    /// A datagram not complete after this long is given up.
    pub timeout: Duration,
    /// Bytes all datagrams in progress may hold together.
    pub max_bytes: usize,
    /// Bytes the datagrams of one source may hold together.
    pub max_bytes_per_source: usize,
    /// Datagrams in progress at once.
    pub max_datagrams: usize,
}

impl Default for ReasmLimits {
    fn default() -> Self {
        ReasmLimits {
            timeout: Duration::from_secs(30),
            max_bytes: 4 << 20,
            max_bytes_per_source: 1 << 20,
            max_datagrams: 1024,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    ident: u32,
}

/// The IP family a reassembler serves: it picks the drop counters and how a datagram is
/// rebuilt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

/// The drop counters of one family.
struct DropReasons {
    malformed: Counter,
    tiny: Counter,
    duplicate: Counter,
    overlap: Counter,
}

impl Family {
    fn reasons(self) -> DropReasons {
        match self {
            Family::V4 => DropReasons {
                malformed: Counter::rx_drop_ipv4_frag_malformed,
                tiny: Counter::rx_drop_ipv4_frag_tiny,
                duplicate: Counter::rx_drop_ipv4_frag_duplicate,
                overlap: Counter::rx_drop_ipv4_frag_overlap,
            },
            Family::V6 => DropReasons {
                malformed: Counter::rx_drop_ipv6_frag_malformed,
                tiny: Counter::rx_drop_ipv6_frag_tiny,
                duplicate: Counter::rx_drop_ipv6_frag_duplicate,
                overlap: Counter::rx_drop_ipv6_frag_overlap,
            },
        }
    }
}

/// One fragment, family-independent: where its data goes and what precedes it.
struct Piece<'a> {
    key: Key,
    /// What precedes the data in the first fragment and is kept for the rebuilt datagram.
    header: &'a [u8],
    data: &'a [u8],
    start: usize,
    more: bool,
    /// Largest end offset a datagram may reach.
    max_end: usize,
}

#[derive(Debug)]
struct Datagram {
    serial: u64,
    deadline: Instant,
    /// Header of the first fragment (options included), once it came.
    header: Option<Box<[u8]>>,
    /// The first 8 bytes after the first fragment's header (for ICMP time exceeded).
    first_bytes: [u8; 8],
    /// Pieces sorted by start offset, never overlapping.
    pieces: Vec<(u16, Box<[u8]>)>,
    /// Payload length, known once the last fragment (MF clear) came.
    total: Option<usize>,
    received: usize,
    charged: usize,
    /// Discarded after an overlap: later fragments are dropped until the timeout.
    dead: bool,
}

/// What happened to a fragment.
#[derive(Debug, PartialEq, Eq)]
pub enum FragVerdict {
    /// Stored; the datagram is not complete yet.
    Queued,
    /// It completed its datagram, now in [`Reassembler::take_complete`].
    Complete,
    /// Dropped for this reason.
    Dropped(Counter),
}

/// A datagram given up on timeout whose first fragment had come: its IP header and first
/// 8 payload bytes to quote in an ICMP time exceeded.
#[derive(Debug)]
pub struct Expired {
    /// Source of the datagram (the ICMP error goes there).
    pub src: IpAddr,
    /// Header and first 8 bytes of the datagram.
    pub quote: Vec<u8>,
}

/// The reassembly state of one stack.
#[derive(Debug)]
pub struct Reassembler {
    family: Family,
    limits: ReasmLimits,
    map: HashMap<Key, Datagram>,
    /// Datagrams by age (serial), with stale entries skipped lazily.
    order: VecDeque<(u64, Key)>,
    per_source: HashMap<IpAddr, usize>,
    bytes: usize,
    next_serial: u64,
    complete: Vec<u8>,
    /// Datagrams given up on timeout (counted once each).
    pub timed_out: u64,
    /// Datagrams given up to make room.
    pub evicted: u64,
    /// Datagrams begun (a first fragment of theirs stored).
    pub started: u64,
    /// Datagrams discarded for an overlap.
    pub overlapped: u64,
}

/// Shortest transport header a first fragment must carry whole (RFC 1858).
fn min_transport_header(proto: u8) -> usize {
    match proto {
        protocol::TCP => 20,
        _ => 8,
    }
}

/// Where, in an IPv6 packet's first `unfrag` bytes (fixed header and extension headers that
/// passed the chain walk), the next-header field of the last header sits: the field that
/// named the fragment header and names the upper layer once it is gone.
fn last_next_header_field(packet: &[u8], unfrag: usize) -> usize {
    let (mut field, mut at) = (6, 40);
    while at < unfrag {
        let len = match packet[field] {
            next_header::AUTH => (usize::from(packet[at + 1]) + 2) * 4,
            _ => (usize::from(packet[at + 1]) + 1) * 8,
        };
        field = at;
        at += len;
    }
    field
}

impl Reassembler {
    /// An IPv4 reassembler with `limits`.
    pub fn new(limits: ReasmLimits) -> Self {
        Self::of(Family::V4, limits)
    }

    /// An IPv6 reassembler with `limits`.
    pub fn new_v6(limits: ReasmLimits) -> Self {
        Self::of(Family::V6, limits)
    }

    fn of(family: Family, limits: ReasmLimits) -> Self {
        Reassembler {
            family,
            limits,
            map: HashMap::new(),
            order: VecDeque::new(),
            per_source: HashMap::new(),
            bytes: 0,
            next_serial: 0,
            complete: Vec::new(),
            timed_out: 0,
            evicted: 0,
            started: 0,
            overlapped: 0,
        }
    }

    /// Datagrams in progress (discarded ones waiting out their timeout included).
    pub fn datagrams(&self) -> usize {
        self.map.len()
    }

    /// Datagrams still being reassembled (not discarded): with the per-datagram outcomes,
    /// `started = reassembled + timed_out + evicted + overlapped + in_progress`.
    pub fn in_progress(&self) -> usize {
        self.map.values().filter(|d| !d.dead).count()
    }

    /// Bytes charged for datagrams in progress.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The datagram the last [`FragVerdict::Complete`] finished: a whole IPv4 packet.
    pub fn take_complete(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.complete)
    }

    /// Give back the buffer of [`Self::take_complete`] for reuse.
    pub fn give_back(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.complete = buf;
    }

    /// Add an IPv4 fragment (a checked packet with MF set or a non-zero offset).
    pub fn insert<T: AsRef<[u8]>>(&mut self, ip: &Ipv4Packet<T>, now: Instant) -> FragVerdict {
        let b = ip.as_bytes();
        let piece = Piece {
            key: Key { src: ip.src().into(), dst: ip.dst().into(), proto: ip.protocol(), ident: u32::from(ip.ident()) },
            header: &b[..ip.header_len()],
            data: ip.payload(),
            start: ip.frag_offset() as usize,
            more: ip.more_frags(),
            max_end: 65535 - ip.header_len(),
        };
        let verdict = self.insert_piece(piece, now);
        if verdict == FragVerdict::Complete {
            let total = self.complete.len();
            let mut p = Ipv4Packet::new_unchecked(&mut self.complete[..]);
            p.set_total_len(total as u16);
            p.set_frag(false, false, 0);
            p.fill_checksum();
        }
        verdict
    }

    /// Add an IPv6 fragment: a checked packet whose chain (walked by `wire::ipv6_ext::walk`)
    /// has the fragment header `frag`, not an atomic one. The rebuilt datagram keeps the
    /// fixed header and the extension headers before the fragment header.
    pub fn insert_v6(&mut self, ip: &Ipv6Packet<&[u8]>, frag: &FragmentHeader, now: Instant) -> FragVerdict {
        let unfrag = 40 + frag.header_offset;
        let b = ip.as_bytes();
        let data_at = unfrag + FragmentHeader::LEN;
        let end = 40 + usize::from(ip.payload_len());
        if data_at > end {
            return FragVerdict::Dropped(self.family.reasons().malformed);
        }
        let piece = Piece {
            key: Key { src: ip.src().into(), dst: ip.dst().into(), proto: frag.next_header, ident: frag.ident },
            header: &b[..unfrag],
            data: &b[data_at..end],
            start: frag.offset,
            more: frag.more,
            max_end: 65535 - frag.header_offset,
        };
        let verdict = self.insert_piece(piece, now);
        if verdict == FragVerdict::Complete {
            let out = &mut self.complete;
            let payload = out.len() - 40;
            out[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
            let at = last_next_header_field(out, unfrag);
            out[at] = frag.next_header;
        }
        verdict
    }

    /// Store one fragment of either family; on completion the datagram is in `complete`,
    /// its header still the first fragment's (the caller fixes it).
    fn insert_piece(&mut self, f: Piece<'_>, now: Instant) -> FragVerdict {
        let reasons = self.family.reasons();
        let (key, data, start, more) = (f.key, f.data, f.start, f.more);
        let end = start + data.len();
        if data.is_empty() || (more && !data.len().is_multiple_of(8)) || end > f.max_end {
            return FragVerdict::Dropped(reasons.malformed);
        }
        let min_l4 = min_transport_header(key.proto);
        if (start == 0 && data.len() < min_l4) || (start > 0 && start < min_l4) {
            return FragVerdict::Dropped(reasons.tiny);
        }
        let charge = data.len() + PIECE_OVERHEAD;
        if !self.map.contains_key(&key) {
            self.make_room(key.src, charge + DATAGRAM_OVERHEAD, None);
            let serial = self.next_serial;
            self.next_serial += 1;
            self.map.insert(
                key,
                Datagram {
                    serial,
                    deadline: now + self.limits.timeout,
                    header: None,
                    first_bytes: [0; 8],
                    pieces: Vec::new(),
                    total: None,
                    received: 0,
                    charged: 0,
                    dead: false,
                },
            );
            self.order.push_back((serial, key));
            self.charge(key, DATAGRAM_OVERHEAD as isize);
            self.started += 1;
        } else {
            self.make_room(key.src, charge, Some(key));
        }
        let dg = self.map.get_mut(&key).expect("present");
        if dg.dead {
            return FragVerdict::Dropped(reasons.overlap);
        }
        match check_fit(dg, start, end, more) {
            Fit::Duplicate => return FragVerdict::Dropped(reasons.duplicate),
            Fit::Conflict => {
                self.overlapped += 1;
                self.kill(key);
                return FragVerdict::Dropped(reasons.overlap);
            }
            Fit::Ok(at) => {
                dg.pieces.insert(at, (start as u16, data.into()));
                dg.received += data.len();
                if !more {
                    dg.total = Some(end);
                }
                if start == 0 {
                    dg.header = Some(f.header.into());
                    dg.first_bytes.copy_from_slice(&data[..8]);
                }
            }
        }
        self.charge(key, charge as isize);
        let dg = &self.map[&key];
        if dg.total != Some(dg.received) {
            return FragVerdict::Queued;
        }
        let dg = self.remove(key).expect("present");
        let header = dg.header.expect("a complete datagram has its first fragment");
        let mut out = std::mem::take(&mut self.complete);
        out.clear();
        out.extend_from_slice(&header);
        for (_, piece) in &dg.pieces {
            out.extend_from_slice(piece);
        }
        self.complete = out;
        FragVerdict::Complete
    }

    /// Give up datagrams whose time is over; those whose first fragment came are returned for
    /// an ICMP time-exceeded message.
    pub fn expire(&mut self, now: Instant, expired: &mut Vec<Expired>) {
        while let Some(&(serial, key)) = self.order.front() {
            match self.map.get(&key) {
                Some(dg) if dg.serial == serial => {
                    if dg.deadline > now {
                        break;
                    }
                    let dg = self.remove(key).expect("present");
                    if !dg.dead {
                        self.timed_out += 1;
                        if let Some(h) = dg.header {
                            let mut quote = h.into_vec();
                            quote.extend_from_slice(&dg.first_bytes);
                            expired.push(Expired { src: key.src, quote });
                        }
                    }
                }
                _ => {
                    self.order.pop_front();
                }
            }
        }
    }

    /// The earliest instant a datagram times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.order
            .iter()
            .find_map(|(serial, key)| self.map.get(key).filter(|d| d.serial == *serial).map(|d| d.deadline))
    }

    /// Give up older datagrams until `need` more bytes fit for `src` and overall.
    fn make_room(&mut self, src: IpAddr, need: usize, keep: Option<Key>) {
        let new = keep.is_none() as usize;
        while self.map.len() + new > self.limits.max_datagrams.max(1) || self.bytes + need > self.limits.max_bytes {
            if !self.evict_oldest(|_| true, keep) {
                break;
            }
        }
        while self.per_source.get(&src).copied().unwrap_or(0) + need > self.limits.max_bytes_per_source {
            if !self.evict_oldest(|k| k.src == src, keep) {
                break;
            }
        }
    }

    /// Give up the oldest datagram matching `pick` (never `keep`); false if there is none.
    fn evict_oldest(&mut self, pick: impl Fn(&Key) -> bool, keep: Option<Key>) -> bool {
        let found = self.order.iter().position(|(serial, key)| {
            Some(*key) != keep && pick(key) && self.map.get(key).is_some_and(|d| d.serial == *serial)
        });
        let Some(i) = found else { return false };
        let (_, key) = self.order[i];
        if let Some(dg) = self.remove(key) {
            if !dg.dead {
                self.evicted += 1;
            }
        }
        true
    }

    /// Discard a datagram after an overlap: its pieces go, a tombstone stays until its
    /// deadline so that its later fragments are dropped too.
    fn kill(&mut self, key: Key) {
        let Some(dg) = self.map.get_mut(&key) else { return };
        let freed = dg.charged - DATAGRAM_OVERHEAD;
        dg.pieces = Vec::new();
        dg.header = None;
        dg.dead = true;
        self.charge(key, -(freed as isize));
    }

    fn remove(&mut self, key: Key) -> Option<Datagram> {
        let dg = self.map.remove(&key)?;
        self.bytes -= dg.charged;
        if let Some(b) = self.per_source.get_mut(&key.src) {
            *b -= dg.charged;
            if *b == 0 {
                self.per_source.remove(&key.src);
            }
        }
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order.retain(|(serial, k)| map.get(k).is_some_and(|d| d.serial == *serial));
        }
        Some(dg)
    }

    fn charge(&mut self, key: Key, delta: isize) {
        let Some(dg) = self.map.get_mut(&key) else { return };
        dg.charged = dg.charged.wrapping_add_signed(delta);
        self.bytes = self.bytes.wrapping_add_signed(delta);
        let b = self.per_source.entry(key.src).or_insert(0);
        *b = b.wrapping_add_signed(delta);
    }
}

enum Fit {
    /// Insert the piece at this index of `pieces`.
    Ok(usize),
    /// The same range is already there.
    Duplicate,
    /// It overlaps another piece or contradicts the known total length.
    Conflict,
}

fn check_fit(dg: &Datagram, start: usize, end: usize, more: bool) -> Fit {
    if let Some(total) = dg.total {
        if end > total || (!more && end != total) {
            return Fit::Conflict;
        }
    } else if !more && dg.pieces.last().is_some_and(|(s, p)| *s as usize + p.len() > end) {
        return Fit::Conflict;
    }
    let at = dg.pieces.partition_point(|(s, _)| (*s as usize) < start);
    if let Some((s, p)) = dg.pieces.get(at) {
        if *s as usize == start && p.len() == end - start {
            return Fit::Duplicate;
        }
        if (*s as usize) < end {
            return Fit::Conflict;
        }
    }
    if at > 0 {
        let (s, p) = &dg.pieces[at - 1];
        if *s as usize + p.len() > start {
            return Fit::Conflict;
        }
    }
    Fit::Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use wire::Ipv4Repr;

    fn frag(ident: u16, src: [u8; 4], offset: usize, more: bool, data: &[u8]) -> Vec<u8> {
        let repr = Ipv4Repr {
            src: Ipv4Addr::from(src),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            protocol: protocol::UDP,
            payload_len: data.len(),
            ttl: 64,
            ident,
            dont_frag: false,
            dscp_ecn: 0,
        };
        let mut buf = vec![0u8; 20 + data.len()];
        repr.emit(&mut buf).unwrap();
        buf[20..].copy_from_slice(data);
        let mut p = Ipv4Packet::new_unchecked(&mut buf[..]);
        p.set_frag(false, more, offset);
        p.fill_checksum();
        buf
    }

    fn put(r: &mut Reassembler, pkt: &[u8], now: Instant) -> FragVerdict {
        r.insert(&Ipv4Packet::new_checked(pkt).unwrap(), now)
    }

    const SRC: [u8; 4] = [10, 0, 0, 1];

    #[test]
    fn reassembles_in_any_order_and_rebuilds_the_header() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let pieces = [(1480, true), (2960, false), (0, true)];
        let mut r = Reassembler::new(ReasmLimits::default());
        for (i, &(off, more)) in pieces.iter().enumerate() {
            let end = if more { off + 1480 } else { data.len() };
            let v = put(&mut r, &frag(7, SRC, off, more, &data[off..end]), Instant::ZERO);
            assert_eq!(v, if i == 2 { FragVerdict::Complete } else { FragVerdict::Queued });
        }
        let out = r.take_complete();
        let p = Ipv4Packet::new_checked(&out[..]).unwrap();
        assert!(p.verify_checksum() && !p.is_fragment());
        assert_eq!(p.payload(), &data[..]);
        assert_eq!((r.datagrams(), r.bytes()), (0, 0));
    }

    #[test]
    fn duplicates_are_dropped_alone_overlaps_discard_the_datagram() {
        let mut r = Reassembler::new(ReasmLimits::default());
        let d = [1u8; 16];
        assert_eq!(put(&mut r, &frag(1, SRC, 0, true, &d), Instant::ZERO), FragVerdict::Queued);
        assert_eq!(
            put(&mut r, &frag(1, SRC, 0, true, &d), Instant::ZERO),
            FragVerdict::Dropped(Counter::rx_drop_ipv4_frag_duplicate)
        );
        assert_eq!(
            put(&mut r, &frag(1, SRC, 8, true, &d), Instant::ZERO),
            FragVerdict::Dropped(Counter::rx_drop_ipv4_frag_overlap)
        );
        // The datagram is gone for good: even the fragment that would complete it is dropped.
        assert_eq!(
            put(&mut r, &frag(1, SRC, 16, false, &d), Instant::ZERO),
            FragVerdict::Dropped(Counter::rx_drop_ipv4_frag_overlap)
        );
        assert_eq!(r.bytes(), DATAGRAM_OVERHEAD, "only the tombstone is charged");
        let mut ex = Vec::new();
        r.expire(Instant::ZERO + Duration::from_secs(31), &mut ex);
        assert!(ex.is_empty() && r.datagrams() == 0 && r.timed_out == 0);
    }

    #[test]
    fn tiny_malformed_and_contradictory_fragments_are_refused() {
        let mut r = Reassembler::new(ReasmLimits::default());
        let drop = |c| FragVerdict::Dropped(c);
        let mut tcp_first = frag(2, SRC, 0, true, &[0; 16]);
        tcp_first[9] = protocol::TCP;
        Ipv4Packet::new_unchecked(&mut tcp_first[..]).fill_checksum();
        assert_eq!(put(&mut r, &tcp_first, Instant::ZERO), drop(Counter::rx_drop_ipv4_frag_tiny), "16 < a TCP header");
        let mut tcp_inside = frag(2, SRC, 8, false, &[0; 16]);
        tcp_inside[9] = protocol::TCP;
        Ipv4Packet::new_unchecked(&mut tcp_inside[..]).fill_checksum();
        assert_eq!(
            put(&mut r, &tcp_inside, Instant::ZERO),
            drop(Counter::rx_drop_ipv4_frag_tiny),
            "offset 8 rewrites the header"
        );
        assert_eq!(
            put(&mut r, &frag(2, SRC, 0, true, &[0; 12]), Instant::ZERO),
            drop(Counter::rx_drop_ipv4_frag_malformed)
        );
        assert_eq!(
            put(&mut r, &frag(2, SRC, 65528, false, &[0; 16]), Instant::ZERO),
            drop(Counter::rx_drop_ipv4_frag_malformed)
        );
        assert_eq!(put(&mut r, &frag(3, SRC, 64, false, &[0; 8]), Instant::ZERO), FragVerdict::Queued);
        // A second "last" fragment with another end contradicts the first.
        assert_eq!(
            put(&mut r, &frag(3, SRC, 80, false, &[0; 8]), Instant::ZERO),
            drop(Counter::rx_drop_ipv4_frag_overlap)
        );
    }

    #[test]
    fn incomplete_datagrams_time_out_with_a_quote_of_the_first_fragment() {
        let mut r = Reassembler::new(ReasmLimits::default());
        put(&mut r, &frag(4, SRC, 0, true, &[9; 64]), Instant::ZERO);
        put(&mut r, &frag(5, SRC, 8, true, &[9; 64]), Instant::ZERO + Duration::from_secs(10));
        let mut ex = Vec::new();
        r.expire(Instant::ZERO + Duration::from_secs(30), &mut ex);
        assert_eq!((ex.len(), r.datagrams(), r.timed_out), (1, 1, 1));
        assert_eq!(ex[0].quote.len(), 28);
        assert_eq!(r.next_deadline(), Some(Instant::ZERO + Duration::from_secs(40)));
        r.expire(Instant::ZERO + Duration::from_secs(40), &mut ex);
        assert_eq!((ex.len(), r.datagrams(), r.timed_out, r.bytes()), (1, 0, 2, 0));
    }

    #[test]
    fn memory_stays_bounded_under_ten_thousand_incomplete_datagrams() {
        let limits = ReasmLimits { max_bytes: 256 << 10, max_bytes_per_source: 64 << 10, ..Default::default() };
        let mut r = Reassembler::new(limits);
        for i in 0..10_000u32 {
            let src = [10, 0, (i >> 8) as u8 % 4, i as u8];
            put(&mut r, &frag(i as u16, src, 0, true, &[0; 1024]), Instant::ZERO);
            assert!(r.bytes() <= limits.max_bytes);
            assert!(r.datagrams() <= limits.max_datagrams);
        }
        assert!(r.evicted > 9_000, "{}", r.evicted);
        // One source alone cannot take more than its share.
        let mut r = Reassembler::new(limits);
        for i in 0..1000u16 {
            put(&mut r, &frag(i, SRC, 0, true, &[0; 1024]), Instant::ZERO);
        }
        assert!(r.bytes() <= limits.max_bytes_per_source);
        // Another source's datagram still completes.
        put(&mut r, &frag(1, [10, 0, 0, 9], 0, true, &[5; 8]), Instant::ZERO);
        assert_eq!(put(&mut r, &frag(1, [10, 0, 0, 9], 8, false, &[5; 8]), Instant::ZERO), FragVerdict::Complete);
        assert!(r.order.len() <= 2 * r.datagrams() + 64);
    }
}
