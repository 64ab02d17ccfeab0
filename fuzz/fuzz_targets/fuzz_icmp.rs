//! ICMP: parse (checksum verified), re-emit via `IcmpRepr`, reparse, compare.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::{IcmpPacket, IcmpRepr};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = IcmpPacket::new_checked(data) {
        let _ = (p.message(), p.data().len(), p.verify_checksum());
    }
    let Ok(repr) = IcmpRepr::parse(data) else {
        return;
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    assert_eq!(repr.emit(&mut buf), Ok(data.len()));
    assert_eq!(IcmpRepr::parse(&buf), Ok(repr));
});
