//! The IPv6 receive path of a whole host with VALID checksums: the input describes frames
//! (source and destination from a mix of the host's addresses, its groups, the peer, link-local,
//! multicast, unspecified, loopback), a chain of extension headers (hop-by-hop, destination
//! options with arbitrary options, routing with segments left, fragment headers with arbitrary
//! offsets and flags) and an upper layer (ICMPv6 of any type with a correct checksum, Neighbor
//! Discovery messages with arbitrary options, UDP, TCP or an unknown protocol). Each frame
//! enters a dual-stack host (10.0.0.2/24, fd77::2/64, no DAD) through its link and one `poll`;
//! after every frame `poll` returned `Ok` and every received frame is accounted for once.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Stack};
use std::net::Ipv6Addr;
use std::time::Duration;
use wire::ipv6::next_header;
use wire::{EthernetRepr, Ipv6AddrKind, Ipv6Repr, MacAddr};

const HOST: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);
const PEER: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);

#[derive(Arbitrary, Debug, Clone, Copy)]
enum AddrSpec {
    Host,
    Peer,
    LinkLocal(u16),
    AllNodes,
    SolicitedNode,
    Multicast(u16),
    Unspecified,
    Loopback,
    Other(u16),
}

#[derive(Arbitrary, Debug)]
enum Ext {
    HopByHop(Vec<u8>),
    DestOpts(Vec<u8>),
    Routing { kind: u8, segments_left: u8 },
    Fragment { offset: u16, more: bool, ident: u8 },
}

#[derive(Arbitrary, Debug)]
enum Upper {
    Icmp { kind: u8, code: u8, body: Vec<u8> },
    Ndp { kind: u8, target: AddrSpec, flags: u8, options: Vec<(u8, Vec<u8>)> },
    Udp { port: u16, payload: Vec<u8> },
    Tcp { port: u16, flags: u8 },
    Unknown(u8, Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct FrameSpec {
    src: AddrSpec,
    dst: AddrSpec,
    hop_limit: u8,
    exts: Vec<Ext>,
    upper: Upper,
}

fn addr(a: AddrSpec) -> Ipv6Addr {
    match a {
        AddrSpec::Host => HOST,
        AddrSpec::Peer => PEER,
        AddrSpec::LinkLocal(x) => Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, x),
        AddrSpec::AllNodes => Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
        AddrSpec::SolicitedNode => HOST.solicited_node(),
        AddrSpec::Multicast(x) => Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, x),
        AddrSpec::Unspecified => Ipv6Addr::UNSPECIFIED,
        AddrSpec::Loopback => Ipv6Addr::LOCALHOST,
        AddrSpec::Other(x) => Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x),
    }
}

/// The upper layer's protocol and bytes, its checksum filled for `src`/`dst`.
fn upper_bytes(u: &Upper, src: Ipv6Addr, dst: Ipv6Addr) -> (u8, Vec<u8>) {
    let sum = |proto: u8, b: &mut Vec<u8>, at: usize| {
        let c = wire::checksum::transport_checksum(src, dst, proto, b);
        b[at..at + 2].copy_from_slice(&c.to_be_bytes());
    };
    match u {
        Upper::Icmp { kind, code, body } => {
            let mut b = vec![*kind, *code, 0, 0];
            b.extend(body.iter().take(1500));
            while b.len() < 8 {
                b.push(0);
            }
            sum(next_header::ICMPV6, &mut b, 2);
            (next_header::ICMPV6, b)
        }
        Upper::Ndp { kind, target, flags, options } => {
            let mut b = vec![133 + kind % 5, 0, 0, 0, *flags, 0, 0, 0];
            b.extend(addr(*target).octets());
            b.extend([0u8; 16]);
            for (t, data) in options.iter().take(8) {
                let len = (data.len().min(62) + 2).div_ceil(8);
                let mut o = vec![*t, len as u8];
                o.extend(data.iter().take(len * 8 - 2));
                o.resize(len * 8, 0);
                b.extend(o);
            }
            sum(next_header::ICMPV6, &mut b, 2);
            (next_header::ICMPV6, b)
        }
        Upper::Udp { port, payload } => {
            let len = 8 + payload.len().min(2000);
            let mut b = vec![0u8; 8];
            b[0..2].copy_from_slice(&40000u16.to_be_bytes());
            b[2..4].copy_from_slice(&port.to_be_bytes());
            b[4..6].copy_from_slice(&(len as u16).to_be_bytes());
            b.extend(payload.iter().take(2000));
            sum(next_header::UDP, &mut b, 6);
            (next_header::UDP, b)
        }
        Upper::Tcp { port, flags } => {
            let mut b = vec![0u8; 20];
            b[0..2].copy_from_slice(&40000u16.to_be_bytes());
            b[2..4].copy_from_slice(&port.to_be_bytes());
            b[12] = 5 << 4;
            b[13] = *flags;
            sum(next_header::TCP, &mut b, 16);
            (next_header::TCP, b)
        }
        Upper::Unknown(p, b) => (*p, b.iter().take(1500).copied().collect()),
    }
}

fn ext_bytes(e: &Ext, next: u8) -> (u8, Vec<u8>) {
    let options = |kind: u8, opts: &Vec<u8>| {
        let body: Vec<u8> = opts.iter().take(200).copied().collect();
        let len = (body.len() + 2).div_ceil(8);
        let mut b = vec![next, (len - 1) as u8];
        b.extend(body);
        b.resize(len * 8, 1);
        (kind, b)
    };
    match e {
        Ext::HopByHop(o) => options(next_header::HOP_BY_HOP, o),
        Ext::DestOpts(o) => options(next_header::DEST_OPTS, o),
        Ext::Routing { kind, segments_left } => {
            let mut b = vec![next, 2, *kind, *segments_left, 0, 0, 0, 0];
            b.extend([0u8; 16]);
            (next_header::ROUTING, b)
        }
        Ext::Fragment { offset, more, ident } => {
            let off = (offset & 0xfff8) | u16::from(*more);
            let mut b = vec![next, 0];
            b.extend(off.to_be_bytes());
            b.extend(u32::from(*ident).to_be_bytes());
            (next_header::FRAGMENT, b)
        }
    }
}

fn frame(spec: &FrameSpec, host_mac: MacAddr) -> Vec<u8> {
    let (src, dst) = (addr(spec.src), addr(spec.dst));
    let (mut nh, mut payload) = upper_bytes(&spec.upper, src, dst);
    for e in spec.exts.iter().rev().take(12) {
        let (kind, mut b) = ext_bytes(e, nh);
        b.extend(payload);
        payload = b;
        nh = kind;
    }
    payload.truncate(9000 - 40);
    let dst_mac = if dst.is_multicast() {
        let o = dst.octets();
        MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
    } else {
        host_mac
    };
    let mut f = vec![0u8; 14 + 40 + payload.len()];
    let eth = EthernetRepr {
        src: MacAddr([2, 0, 0, 0, 0, 1]),
        dst: dst_mac,
        ethertype: wire::ethernet::ethertype::IPV6,
        vlan: None,
    };
    eth.emit(&mut f).unwrap();
    let ip = Ipv6Repr {
        src,
        dst,
        next_header: nh,
        payload_len: payload.len(),
        hop_limit: spec.hop_limit,
        traffic_class: 0,
        flow_label: 0,
    };
    ip.emit(&mut f[14..]).unwrap();
    f[54..].copy_from_slice(&payload);
    f
}

fuzz_target!(|specs: Vec<FrameSpec>| {
    let (host_link, mut wire_end) = mem::pair(LinkConfig::default().mtu(9000));
    let mut cfg = Config::host("10.0.0.2/24").mtu(9000).ipv6_addr("fd77::2/64").unwrap();
    cfg.ipv6.ndp.dad_transmits = 0;
    let mut host = Stack::new(cfg, host_link).unwrap();
    let _udp = host.udp_bind(7).unwrap();
    let mut now = Instant::ZERO;
    host.poll(now).unwrap();
    let mut batch = FrameBatch::new(64, 9100);
    for spec in specs.iter().take(32) {
        let f = frame(spec, host.mac());
        let mut one = FrameBatch::new(1, 9100);
        assert!(one.push(&f));
        wire_end.tx_batch(now, &mut one).unwrap();
        now = now + Duration::from_millis(10);
        host.poll(now).unwrap();
        batch.clear();
        while wire_end.rx_batch(now, &mut batch).unwrap() > 0 {
            batch.clear();
        }
        host.counters().rx_accounting().check().unwrap();
    }
});
