//! UDP: parse, re-emit via `UdpRepr` with a fresh checksum, reparse, compare.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;
use wire::{UdpPacket, UdpRepr};

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = UdpPacket::new_checked(data) else {
        return;
    };
    let _ = packet.verify_checksum(SRC, DST);
    let repr = UdpRepr::parse(&packet);
    let payload = packet.payload();
    let mut buf = vec![0u8; UdpRepr::HEADER_LEN + payload.len()];
    buf[UdpRepr::HEADER_LEN..].copy_from_slice(payload);
    let n = repr.emit(&mut buf, SRC, DST, payload.len()).expect("fits");
    assert_eq!(n, usize::from(packet.len()));
    let again = UdpPacket::new_checked(&buf[..]).expect("emitted datagram parses");
    assert!(again.verify_checksum(SRC, DST));
    assert_eq!(UdpRepr::parse(&again), repr);
    assert_eq!(again.payload(), payload);
});
