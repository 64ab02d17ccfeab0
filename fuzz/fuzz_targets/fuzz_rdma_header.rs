//! RDMA header: parse arbitrary bytes; on success, re-emit through `RdmaRepr` with the
//! same payload, parse again and compare. Inputs of odd length get their CRC
//! fixed up first, so the field checks behind the CRC are reached too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rdma::wire::{packet_crc, RdmaPacket, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let mut owned;
    let mut bytes = data;
    if data.len() >= HEADER_LEN && data.len() % 2 == 1 {
        owned = data.to_vec();
        let plen = (u16::from_be_bytes([owned[6], owned[7]]) as usize).min(owned.len() - HEADER_LEN);
        let crc = packet_crc(&owned, &owned[HEADER_LEN..HEADER_LEN + plen]);
        owned[44..48].copy_from_slice(&crc.to_be_bytes());
        bytes = &owned[..];
    }
    let Ok(p) = RdmaPacket::new_checked(bytes) else {
        return;
    };
    let repr = p.repr();
    let payload = p.payload();
    let mut buf = vec![0u8; HEADER_LEN + payload.len()];
    let n = repr.emit(&mut buf, payload).expect("fits");
    assert_eq!(&buf[..n], &bytes[..n], "a verified packet re-emits to the same bytes");
    let again = RdmaPacket::new_checked(&buf[..]).expect("emitted packet parses");
    assert_eq!(again.repr(), repr);
    assert_eq!(again.payload(), payload);
});
