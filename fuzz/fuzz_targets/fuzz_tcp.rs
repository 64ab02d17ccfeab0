//! TCP: parse header and options, re-emit via `TcpRepr`, reparse, compare.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;
use wire::{TcpRepr, TcpSegment};

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fuzz_target!(|data: &[u8]| {
    let Ok(seg) = TcpSegment::new_checked(data) else {
        return;
    };
    let _ = seg.verify_checksum(SRC, DST);
    for opt in seg.options() {
        let _ = opt;
    }
    let Ok(repr) = TcpRepr::parse(&seg) else {
        return;
    };
    let payload = seg.payload();
    let hl = repr.header_len();
    let mut buf = vec![0u8; hl + payload.len()];
    buf[hl..].copy_from_slice(payload);
    let Ok(n) = repr.emit(&mut buf, SRC, DST, payload.len()) else {
        // Only possible if canonical options make the segment exceed 65535 bytes.
        assert!(hl + payload.len() > 65535);
        return;
    };
    assert_eq!(n, buf.len());
    let again = TcpSegment::new_checked(&buf[..]).expect("emitted segment parses");
    assert!(again.verify_checksum(SRC, DST));
    let back = TcpRepr::parse(&again).expect("emitted options parse");
    // SACK blocks beyond the 40-byte option room are trimmed on emit.
    let mut expected = repr;
    let kept = repr.options.emitted_sack_blocks();
    for s in expected.options.sack_blocks.iter_mut().skip(kept) {
        *s = None;
    }
    assert_eq!(back, expected);
    assert_eq!(again.payload(), payload);
});
