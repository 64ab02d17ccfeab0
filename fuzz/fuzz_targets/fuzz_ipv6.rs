//! IPv6: the fixed header, the extension-header chain walk, ICMPv6 (checksum verified,
//! re-emitted and reparsed) and Neighbor Discovery (parsed, re-emitted with the options it
//! held, reparsed to the same message).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::ipv6_ext::{walk, ChainLimits};
use wire::ndp::{self, NdpOption};
use wire::{Icmpv6Repr, Ipv6Packet, Ipv6Repr};

fuzz_target!(|data: &[u8]| {
    let Ok(p) = Ipv6Packet::new_checked(data) else {
        return;
    };
    let h = Ipv6Repr::parse(&p);
    let mut again = vec![0u8; 40];
    assert_eq!(h.emit(&mut again), Ok(40));
    assert_eq!(&again[..], &data[..40]);
    let Ok(chain) = walk(h.next_header, p.payload(), &ChainLimits::default()) else {
        return;
    };
    assert!(chain.upper_offset <= p.payload().len());
    let upper = &p.payload()[chain.upper_offset..];
    if chain.upper != wire::next_header::ICMPV6 || chain.fragment.is_some() {
        return;
    }
    let Ok(icmp) = Icmpv6Repr::parse(upper, h.src, h.dst) else {
        return;
    };
    let mut buf = vec![0u8; icmp.buffer_len()];
    assert_eq!(icmp.emit(&mut buf, h.src, h.dst), Ok(upper.len()));
    assert_eq!(Icmpv6Repr::parse(&buf, h.src, h.dst), Ok(icmp));
    if let Ok((m, opts)) = ndp::parse(upper, h.src, h.dst, h.hop_limit) {
        let list: Vec<NdpOption<'_>> = opts.iter().collect();
        let mut out = vec![0u8; upper.len() + 8 * list.len()];
        let n = ndp::emit(&m, &list, &mut out, h.src, h.dst).unwrap();
        let (m2, opts2) = ndp::parse(&out[..n], h.src, h.dst, 255).unwrap();
        assert_eq!(m2, m);
        assert_eq!(opts2.iter().count(), list.len());
    }
});
