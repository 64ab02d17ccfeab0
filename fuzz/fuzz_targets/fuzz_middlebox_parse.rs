//! The middlebox header parser (`middlebox::parse::parse`) on arbitrary bytes: it never
//! panics, and what it reports agrees with the frame: the network header starts where the
//! Ethernet header (with its VLAN tags) ends, ports and TCP fields are the bytes at their
//! places, the payload range lies inside the IPv4 packet, Ethernet padding after the packet
//! changes nothing (parse of the frame cut at the IPv4 total length gives the same answer),
//! and the IDS flow key of the frame exists exactly when an IPv4 header was found.
#![no_main]

use apps::ids::FlowKey;
use libfuzzer_sys::fuzz_target;
use middlebox::parse::parse;
use wire::{protocol, EthernetFrame, Ipv4Packet};

fuzz_target!(|data: &[u8]| {
    let parsed = parse(data);
    let key = FlowKey::of_frame(data);
    let h = match parsed {
        Ok(h) => h,
        Err(e) => {
            assert!(!e.reason().is_empty());
            assert!(key.is_none());
            return;
        }
    };
    let eth = EthernetFrame::new_checked(data).expect("parse accepted the Ethernet header");
    assert_eq!(h.l3, eth.header_len());
    assert_eq!(h.ethertype, eth.ethertype());
    assert!(h.l3 <= data.len());
    let Some(ip) = &h.ipv4 else {
        assert_ne!(h.ethertype, wire::ethertype::IPV4);
        assert!(key.is_none());
        return;
    };
    assert!(key.is_some());
    let p = Ipv4Packet::new_checked(&data[h.l3..]).expect("parse accepted the IPv4 header");
    let l4 = h.l3 + p.header_len();
    let end = h.l3 + usize::from(p.total_len());
    assert_eq!((ip.src, ip.dst, ip.proto, ip.fragment), (p.src(), p.dst(), p.protocol(), p.is_fragment()));
    assert!(
        l4 <= ip.payload.start && ip.payload.start <= ip.payload.end && ip.payload.end <= end,
        "payload {:?} outside the IPv4 packet {l4}..{end}",
        ip.payload
    );
    let be16 = |i: usize| u16::from_be_bytes([data[i], data[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    if let Some((sp, dp)) = ip.ports {
        assert!(matches!(ip.proto, protocol::TCP | protocol::UDP) && p.frag_offset() == 0);
        assert_eq!((sp, dp), (be16(l4), be16(l4 + 2)));
    }
    if let Some(t) = ip.tcp {
        assert_eq!(ip.proto, protocol::TCP);
        assert_eq!((t.seq, t.ack, t.flags), (be32(l4 + 4), be32(l4 + 8), data[l4 + 13]));
        assert_eq!(ip.payload.start, l4 + usize::from(data[l4 + 12] >> 4) * 4);
    }
    // Bytes after the IPv4 packet (Ethernet padding) change nothing.
    assert_eq!(parse(&data[..end]), Ok(h.clone()));
});
