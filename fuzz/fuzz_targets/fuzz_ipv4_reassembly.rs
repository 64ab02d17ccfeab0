//! IPv4 reassembly against any sequence of fragments (overlaps, duplicates, tiny, odd sizes,
//! contradicting ends, many idents, time passing): memory and datagram limits always hold, and
//! every datagram that completes carries exactly the bytes its fragments were cut from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use link::Instant;
use net::reasm::{FragVerdict, ReasmLimits, Reassembler, DATAGRAM_OVERHEAD};
use std::net::Ipv4Addr;
use std::time::Duration;
use wire::{Ipv4Packet, Ipv4Repr};

/// The byte at `pos` of datagram `ident`: fragments of one datagram always agree.
fn byte(ident: u16, pos: usize) -> u8 {
    (pos as u32).wrapping_mul(2654435761).wrapping_add(ident as u32 * 97) as u8 >> 1
}

fuzz_target!(|data: &[u8]| {
    let limits = ReasmLimits {
        timeout: Duration::from_millis(500),
        max_bytes: 16 << 10,
        max_bytes_per_source: 8 << 10,
        max_datagrams: 8,
    };
    let mut r = Reassembler::new(limits);
    let mut now = Instant::ZERO;
    let mut expired = Vec::new();
    for op in data.chunks_exact(6) {
        let ident = (op[0] % 6) as u16;
        let src = Ipv4Addr::new(10, 0, 0, 1 + (op[0] >> 6));
        let offset = (op[1] as usize % 64) * 8;
        let len = 1 + (u16::from_le_bytes([op[2], op[3]]) as usize % 1500);
        let more = op[4] & 1 == 1;
        let proto = if op[4] & 2 == 2 { 6 } else { 17 };
        now = now + Duration::from_millis(op[5] as u64 * 4);
        let repr = Ipv4Repr {
            src,
            dst: Ipv4Addr::new(10, 0, 0, 2),
            protocol: proto,
            payload_len: len,
            ttl: 64,
            ident,
            dont_frag: false,
            dscp_ecn: 0,
        };
        let mut pkt = vec![0u8; 20 + len];
        repr.emit(&mut pkt).unwrap();
        for i in 0..len {
            pkt[20 + i] = byte(ident, offset + i);
        }
        let mut p = Ipv4Packet::new_unchecked(&mut pkt[..]);
        p.set_frag(false, more, offset);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&pkt[..]).unwrap();
        if !p.is_fragment() {
            continue;
        }
        if r.insert(&p, now) == FragVerdict::Complete {
            let whole = r.take_complete();
            let w = Ipv4Packet::new_checked(&whole[..]).expect("a reassembled datagram parses");
            assert!(w.verify_checksum() && !w.is_fragment());
            assert_eq!(w.ident(), ident);
            for (i, b) in w.payload().iter().enumerate() {
                assert_eq!(*b, byte(ident, i), "byte {i} of datagram {ident}");
            }
            r.give_back(whole);
        }
        r.expire(now, &mut expired);
        expired.clear();
        assert!(r.datagrams() <= limits.max_datagrams);
        assert!(r.bytes() <= limits.max_bytes || r.datagrams() == 1, "{} bytes", r.bytes());
        assert!(r.bytes() >= r.datagrams() * DATAGRAM_OVERHEAD);
    }
});
