//! ARP: parse, re-emit via `ArpRepr`, reparse, compare (bytes and repr).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::ArpRepr;

fuzz_target!(|data: &[u8]| {
    let Ok(repr) = ArpRepr::parse(data) else {
        return;
    };
    let mut buf = [0u8; ArpRepr::LEN];
    assert_eq!(repr.emit(&mut buf), Ok(ArpRepr::LEN));
    assert_eq!(&buf[..], &data[..ArpRepr::LEN]);
    assert_eq!(ArpRepr::parse(&buf), Ok(repr));
});
