//! Ethernet: parse, re-emit the header via `EthernetRepr`, reparse, compare.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::{EthernetFrame, EthernetRepr};

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = EthernetFrame::new_checked(data) else {
        return;
    };
    let repr = EthernetRepr::parse(&frame);
    let _ = (frame.vlan_ids(), frame.payload().len());
    let mut buf = [0u8; 64];
    let n = repr.emit(&mut buf).expect("header fits");
    let again = EthernetFrame::new_checked(&buf[..n]).expect("emitted header parses");
    // A Q-in-Q frame keeps only its outer tag, so compare the repr, not the bytes.
    assert_eq!(EthernetRepr::parse(&again), repr);
});
