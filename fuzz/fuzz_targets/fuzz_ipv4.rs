//! IPv4: parse, re-emit the (option-less) header via `Ipv4Repr`, reparse, compare.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::{Ipv4Packet, Ipv4Repr};

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Ipv4Packet::new_checked(data) else {
        return;
    };
    let _ = (packet.options().len(), packet.verify_checksum(), packet.frag_offset());
    let repr = Ipv4Repr::parse(&packet);
    let payload = packet.payload();
    assert_eq!(payload.len(), repr.payload_len);
    let mut buf = vec![0u8; Ipv4Repr::HEADER_LEN + payload.len()];
    let hl = repr.emit(&mut buf).expect("fits: parsed total length <= 65535");
    buf[hl..].copy_from_slice(payload);
    let again = Ipv4Packet::new_checked(&buf[..]).expect("emitted packet parses");
    assert!(again.verify_checksum());
    assert_eq!(Ipv4Repr::parse(&again), repr);
    assert_eq!(again.payload(), payload);
});
