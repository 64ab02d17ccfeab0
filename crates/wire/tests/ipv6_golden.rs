//! IPv6 packets built by another implementation (scapy 2.5, `bytes(IPv6(...)/...)`; the
//! expression is beside each), parsed by `wire` and, where `wire` can build the same packet,
//! built again byte for byte: the layout and every checksum agree with an independent
//! implementation, not only with our own emitters.

use std::net::Ipv6Addr;
use wire::icmpv6::Icmpv6Message;
use wire::ndp::{self, NdpMessage, NdpOption, PrefixInfo};
use wire::{ipv6_ext, next_header, Icmpv6Packet, Icmpv6Repr, Ipv6Packet, Ipv6Repr, MacAddr, TcpRepr, TcpSegment};
use wire::{UdpPacket, UdpRepr};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

const MAC: MacAddr = MacAddr([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);

/// The IPv6 header of `bytes`, checked, and its payload.
fn ip(bytes: &[u8]) -> (Ipv6Repr, Vec<u8>) {
    let p = Ipv6Packet::new_checked(bytes).unwrap();
    (Ipv6Repr::parse(&p), p.payload().to_vec())
}

/// Builds a whole packet: `repr`'s header, then `body` written by `f` into the payload.
fn build(repr: Ipv6Repr, f: impl FnOnce(&mut [u8]) -> usize) -> Vec<u8> {
    let mut b = vec![0u8; 40 + repr.payload_len];
    let n = f(&mut b[40..]);
    assert_eq!(n, repr.payload_len);
    repr.emit(&mut b).unwrap();
    b
}

#[test]
fn neighbor_solicitation() {
    // IPv6(src="fd77::1", dst="ff02::1:ff00:2", hlim=255)/ICMPv6ND_NS(tgt="fd77::2")
    //   /ICMPv6NDOptSrcLLAddr(lladdr="02:11:22:33:44:55")
    let bytes = hex("6000000000203afffd770000000000000000000000000001ff0200000000000000000001ff0000028700161100000000fd7700000000000000000000000000020101021122334455");
    let (h, body) = ip(&bytes);
    assert!(Icmpv6Packet::new_checked(&body[..]).unwrap().verify_checksum(h.src, h.dst));
    let (m, o) = ndp::parse(&body, h.src, h.dst, h.hop_limit).unwrap();
    assert_eq!(m, NdpMessage::NeighborSolicit { target: a("fd77::2") });
    assert_eq!(o.source_link_addr(), Some(MAC));
    let again = build(h, |b| ndp::emit(&m, &[NdpOption::SourceLinkAddr(MAC)], b, h.src, h.dst).unwrap());
    assert_eq!(again, bytes);
}

#[test]
fn neighbor_advertisement() {
    // IPv6(src="fd77::2", dst="fd77::1", hlim=255)/ICMPv6ND_NA(tgt="fd77::2", R=0, S=1, O=1)
    //   /ICMPv6NDOptDstLLAddr(lladdr="02:11:22:33:44:55")
    let bytes = hex("6000000000203afffd770000000000000000000000000002fd7700000000000000000000000000018800b49d60000000fd7700000000000000000000000000020201021122334455");
    let (h, body) = ip(&bytes);
    let (m, o) = ndp::parse(&body, h.src, h.dst, h.hop_limit).unwrap();
    assert_eq!(m, NdpMessage::NeighborAdvert { router: false, solicited: true, override_: true, target: a("fd77::2") });
    assert_eq!(o.target_link_addr(), Some(MAC));
    let again = build(h, |b| ndp::emit(&m, &[NdpOption::TargetLinkAddr(MAC)], b, h.src, h.dst).unwrap());
    assert_eq!(again, bytes);
}

#[test]
fn router_advertisement_with_mtu_and_prefix() {
    // IPv6(src="fe80::1", dst="ff02::1", hlim=255)/ICMPv6ND_RA(chlim=64, M=0, O=1,
    //   routerlifetime=1800)/ICMPv6NDOptSrcLLAddr(...)/ICMPv6NDOptMTU(mtu=1500)
    //   /ICMPv6NDOptPrefixInfo(prefixlen=64, L=1, A=1, validlifetime=86400,
    //   preferredlifetime=14400, prefix="2001:db8:1::")
    let bytes = hex("6000000000403afffe800000000000000000000000000001ff0200000000000000000000000000018600c4f7404807080000000000000000010102112233445505010000000005dc030440c000015180000038400000000020010db8000100000000000000000000");
    let (h, body) = ip(&bytes);
    let (m, o) = ndp::parse(&body, h.src, h.dst, h.hop_limit).unwrap();
    let prefix = PrefixInfo {
        prefix_len: 64,
        on_link: true,
        autonomous: true,
        valid_lifetime: 86_400,
        preferred_lifetime: 14_400,
        prefix: a("2001:db8:1::"),
    };
    assert_eq!(o.prefixes().collect::<Vec<_>>(), [prefix]);
    assert_eq!(o.mtu(), Some(1500));
    let opts = [NdpOption::SourceLinkAddr(MAC), NdpOption::Mtu(1500), NdpOption::Prefix(prefix)];
    let again = build(h, |b| ndp::emit(&m, &opts, b, h.src, h.dst).unwrap());
    assert_eq!(again, bytes);
}

#[test]
fn echo_request() {
    // IPv6(src="fd77::1", dst="fd77::2", hlim=64)/ICMPv6EchoRequest(id=0x1c2b, seq=1, data=b"linerate")
    let bytes = hex("6000000000103a40fd770000000000000000000000000001fd7700000000000000000000000000028000a7001c2b00016c696e6572617465");
    let (h, body) = ip(&bytes);
    let r = Icmpv6Repr::parse(&body, h.src, h.dst).unwrap();
    assert_eq!(r.message, Icmpv6Message::EchoRequest { ident: 0x1c2b, seq: 1 });
    assert_eq!(r.data, b"linerate");
    assert_eq!(build(h, |b| r.emit(b, h.src, h.dst).unwrap()), bytes);
}

#[test]
fn packet_too_big_quoting_a_datagram() {
    // IPv6(src="fd77::2", dst="fd77::1")/ICMPv6PacketTooBig(mtu=1280)/IPv6(src="fd77::1",
    //   dst="fd77::2")/UDP(sport=5, dport=6)
    let bytes = hex("6000000000383a40fd770000000000000000000000000002fd77000000000000000000000000000102008c6b000005006000000000081140fd770000000000000000000000000001fd77000000000000000000000000000200050006000804e1");
    let (h, body) = ip(&bytes);
    let r = Icmpv6Repr::parse(&body, h.src, h.dst).unwrap();
    assert_eq!(r.message, Icmpv6Message::PacketTooBig { mtu: 1280 });
    let quoted = Ipv6Packet::new_checked(r.data).unwrap();
    assert_eq!((quoted.src(), quoted.next_header()), (a("fd77::1"), next_header::UDP));
    assert_eq!(build(h, |b| r.emit(b, h.src, h.dst).unwrap()), bytes);
}

#[test]
fn udp_datagram() {
    // IPv6(src="fd77::1", dst="fd77::2", hlim=64)/UDP(sport=4000, dport=7)/Raw(b"hello")
    let bytes = hex(
        "60000000000d1140fd770000000000000000000000000001fd7700000000000000000000000000020fa00007000db16868656c6c6f",
    );
    let (h, body) = ip(&bytes);
    let u = UdpPacket::new_checked(&body[..]).unwrap();
    assert!(u.verify_checksum(h.src, h.dst));
    assert_eq!((u.src_port(), u.dst_port(), u.payload()), (4000, 7, &b"hello"[..]));
    let again = build(h, |b| {
        b[8..13].copy_from_slice(b"hello");
        UdpRepr { src_port: 4000, dst_port: 7 }.emit(b, h.src, h.dst, 5).unwrap()
    });
    assert_eq!(again, bytes);
    // Over IPv6 a zero checksum is not "none" but wrong (RFC 8200 section 8.1).
    let mut zero = body.clone();
    zero[6..8].fill(0);
    assert!(!UdpPacket::new_checked(&zero[..]).unwrap().verify_checksum(h.src, h.dst));
}

#[test]
fn tcp_syn() {
    // IPv6(src="fd77::1", dst="fd77::2", hlim=64)/TCP(sport=40000, dport=80, seq=1000,
    //   flags="S", window=65535, options=[("MSS", 1440), ("NOP", None), ("WScale", 7)])
    let bytes = hex("60000000001c0640fd770000000000000000000000000001fd7700000000000000000000000000029c400050000003e8000000007002ffffe8c10000020405a001030307");
    let (h, body) = ip(&bytes);
    let seg = TcpSegment::new_checked(&body[..]).unwrap();
    assert!(seg.verify_checksum(h.src, h.dst));
    let r = TcpRepr::parse(&seg).unwrap();
    assert_eq!((r.src_port, r.seq, r.options.mss, r.options.window_scale), (40000, 1000, Some(1440), Some(7)));
    let mut again = body.clone();
    again[16..18].fill(0);
    TcpSegment::new_checked(&mut again[..]).unwrap().fill_checksum(h.src, h.dst);
    assert_eq!(again, body);
}

#[test]
fn extension_header_chain() {
    // IPv6(...)/IPv6ExtHdrHopByHop(options=[RouterAlert()])/IPv6ExtHdrDestOpt(options=
    //   [PadN(optdata=b"\0\0\0\0")])/IPv6ExtHdrFragment(offset=0, m=0, id=42)/UDP(sport=1,
    //   dport=2)/Raw(b"x")
    let bytes = hex("6000000000210040fd770000000000000000000000000001fd7700000000000000000000000000023c000502000001002c00010400000000110000000000002a0001000200098ce678");
    let (h, body) = ip(&bytes);
    let c = ipv6_ext::walk(h.next_header, &body, &ipv6_ext::ChainLimits::default()).unwrap();
    assert_eq!((c.upper, c.upper_offset, c.headers), (next_header::UDP, 24, 3));
    let f = c.fragment.unwrap();
    assert!(f.is_atomic());
    assert_eq!(f.ident, 42);
    let u = UdpPacket::new_checked(&body[c.upper_offset..]).unwrap();
    assert!(u.verify_checksum(h.src, h.dst));
    assert_eq!(u.payload(), b"x");
}
