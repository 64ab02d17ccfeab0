//! IPv6 between two stacks on a mem link, virtual time: duplicate address detection,
//! neighbour resolution, echo over global and link-local addresses, fragments, and hostile
//! Neighbor Discovery and extension headers injected as frames. Every frame is accounted for.

use link::{mem, Instant, Link, LinkConfig};
use net::{AddrState, Config, Counter, NeighborState, Stack};
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;
use wire::ethernet::ethertype;
use wire::ipv6::next_header;
use wire::{EthernetRepr, Icmpv6Message, Icmpv6Repr, Ipv6AddrKind, Ipv6Repr, MacAddr, NdpMessage, NdpOption};

const A6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
const B6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);
const EVIL_MAC: MacAddr = MacAddr([0x02, 0xee, 0, 0, 0, 1]);

struct Pair {
    a: Stack<mem::MemLink>,
    b: Stack<mem::MemLink>,
    now: Instant,
}

impl Pair {
    fn new(a6: &str, b6: &str) -> Pair {
        let (la, lb) = mem::pair(LinkConfig::default());
        let a = Stack::new(Config::host("10.0.0.1/24").ipv6_addr(a6).unwrap(), la).unwrap();
        let b = Stack::new(Config::host("10.0.0.2/24").ipv6_addr(b6).unwrap(), lb).unwrap();
        Pair { a, b, now: Instant::ZERO }
    }

    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.a.poll(self.now).unwrap();
            self.b.poll(self.now).unwrap();
            self.now = self.now + Duration::from_millis(1);
        }
    }

    fn ping(&mut self, dst: Ipv6Addr, seq: u16, len: usize) -> Option<net::PingReply> {
        assert!(self.a.ping(dst, seq, len).unwrap());
        for _ in 0..2000 {
            self.now = self.now + Duration::from_micros(50);
            self.a.poll(self.now).unwrap();
            self.b.poll(self.now).unwrap();
            if let Some(r) = self.a.ping_reply() {
                return Some(r);
            }
        }
        None
    }

    fn accounted(&self) {
        for s in [&self.a, &self.b] {
            s.counters().rx_accounting().check().unwrap();
        }
    }
}

fn state(s: &Stack<mem::MemLink>, a: Ipv6Addr) -> AddrState {
    s.ipv6_addrs().iter().find(|h| h.cidr.addr == a).expect("address").state
}

#[test]
fn addresses_pass_dad_then_echo_works_over_global_and_link_local_addresses() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(500));
    assert_eq!(state(&p.b, B6), AddrState::Tentative);
    // A tentative address is not used: no route for a ping yet.
    assert!(p.a.ping(B6, 0, 8).is_err());
    p.run(Duration::from_millis(600));
    assert_eq!(state(&p.a, A6), AddrState::Preferred);
    assert_eq!(state(&p.b, B6), AddrState::Preferred);
    // Link-local and global: a DAD solicitation and an announcement each.
    assert_eq!(p.b.counters().get(Counter::ndp_dad_succeeded), 2);
    assert_eq!(p.b.counters().get(Counter::ndp_solicits_sent), 2);
    assert_eq!(p.b.counters().get(Counter::ndp_adverts_sent), 2);

    let r = p.ping(B6, 1, 56).expect("echo reply");
    assert_eq!((r.from, r.seq, r.len, r.ttl), (IpAddr::V6(B6), 1, 56, 64));
    let neighbors = p.a.ipv6_neighbors();
    assert!(neighbors.iter().any(|n| n.0 == B6 && n.1 == p.b.mac() && n.2 == NeighborState::Reachable));
    // B learned A from the solicitation's source link-layer address.
    assert!(p.b.ipv6_neighbors().iter().any(|n| n.0 == A6 && n.1 == p.a.mac()));

    let b_ll = p.b.ipv6_addrs()[0].cidr.addr;
    assert!(b_ll.is_link_local());
    let r = p.ping(b_ll, 2, 100).expect("link-local echo reply");
    assert_eq!(r.from, IpAddr::V6(b_ll));
    assert_eq!(p.b.counters().get(Counter::icmpv6_echo_replied), 2);
    p.accounted();
}

#[test]
fn a_host_joining_with_an_address_in_use_gives_it_up() {
    let mut p = Pair::new("fd77::5/64", "fd77::5/64");
    // A alone first: its address passes DAD.
    for _ in 0..1100 {
        p.a.poll(p.now).unwrap();
        p.now = p.now + Duration::from_millis(1);
    }
    p.run(Duration::from_millis(1500));
    let dup: Ipv6Addr = "fd77::5".parse().unwrap();
    assert_eq!(state(&p.a, dup), AddrState::Preferred);
    // A answered B's DAD solicitation; B gives the address up and never uses it.
    assert_eq!(state(&p.b, dup), AddrState::Duplicate);
    assert_eq!(p.b.counters().get(Counter::ndp_dad_failed), 1);
    assert_eq!(p.b.ipv6_addrs()[0].state, AddrState::Preferred);
    assert!(p.b.ping(dup, 0, 8).is_err());
    p.accounted();
}

#[test]
fn an_unanswered_neighbour_gives_up_after_three_solicitations() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(1100));
    let ghost: Ipv6Addr = "fd77::99".parse().unwrap();
    let before = p.a.counters().get(Counter::ndp_solicits_sent);
    assert!(p.a.ping(ghost, 0, 8).unwrap());
    p.run(Duration::from_secs(4));
    assert_eq!(p.a.counters().get(Counter::ndp_solicits_sent) - before, 3);
    assert_eq!(p.a.counters().get(Counter::tx_drop_ndp_unresolved), 1);
    assert!(p.a.ipv6_neighbors().iter().all(|n| n.0 != ghost));
    p.accounted();
}

/// A frame from EVIL_MAC carrying an IPv6 packet.
fn frame(src: Ipv6Addr, dst: Ipv6Addr, dst_mac: MacAddr, hop_limit: u8, nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 40 + payload.len()];
    EthernetRepr { src: EVIL_MAC, dst: dst_mac, ethertype: ethertype::IPV6, vlan: None }.emit(&mut f).unwrap();
    let ip =
        Ipv6Repr { src, dst, next_header: nh, payload_len: payload.len(), hop_limit, traffic_class: 0, flow_label: 0 };
    ip.emit(&mut f[14..]).unwrap();
    f[54..].copy_from_slice(payload);
    f
}

fn nd_frame(src: Ipv6Addr, dst: Ipv6Addr, dst_mac: MacAddr, msg: &NdpMessage, opts: &[NdpOption<'_>]) -> Vec<u8> {
    let mut icmp = vec![0u8; 256];
    let n = wire::ndp::emit(msg, opts, &mut icmp, src, dst).unwrap();
    frame(src, dst, dst_mac, 255, next_header::ICMPV6, &icmp[..n])
}

fn echo_frame(src: Ipv6Addr, dst: Ipv6Addr, dst_mac: MacAddr) -> Vec<u8> {
    let repr = Icmpv6Repr { message: Icmpv6Message::EchoRequest { ident: 7, seq: 1 }, data: b"ping" };
    let mut icmp = vec![0u8; repr.buffer_len()];
    repr.emit(&mut icmp, src, dst).unwrap();
    frame(src, dst, dst_mac, 64, next_header::ICMPV6, &icmp)
}

#[test]
fn hostile_neighbor_discovery_is_counted_and_bounded_and_the_host_keeps_answering() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    let (lb, mut peer) = mem::pair(LinkConfig::default());
    let mut drained = link::FrameBatch::new(64, 1600);
    p.b = {
        let mut cfg = Config::host("10.0.0.2/24").ipv6_addr("fd77::2/64").unwrap();
        cfg.ipv6.ndp.cache_size = 64;
        cfg.ipv6.ndp.max_routers = 4;
        Stack::new(cfg, lb).unwrap()
    };
    let b = &mut p.b;
    let mut now = Instant::ZERO;
    for _ in 0..1200 {
        b.poll(now).unwrap();
        now = now + Duration::from_millis(1);
    }
    let b_mac = b.mac();
    let sn = B6.solicited_node();
    let sn_mac = MacAddr([0x33, 0x33, 0xff, 0, 0, 2]);
    // A solicitation flood from 5,000 sources fills the cache only to its size.
    for i in 0..5000u16 {
        let src = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 1, 0, i);
        let ns = NdpMessage::NeighborSolicit { target: B6 };
        let mac = MacAddr([2, 0xee, 0, 0, (i >> 8) as u8, i as u8]);
        b.inject(&nd_frame(src, sn, sn_mac, &ns, &[NdpOption::SourceLinkAddr(mac)])).unwrap();
        b.poll(now).unwrap();
        drained.clear();
        peer.rx_batch(now, &mut drained).unwrap();
    }
    assert!(b.ipv6_neighbors().len() <= 64);
    assert_eq!(b.counters().get(Counter::ndp_adverts_sent), 2 + 5000);
    // A forged advertisement claiming our own address.
    let na = NdpMessage::NeighborAdvert { router: false, solicited: false, override_: true, target: B6 };
    b.inject(&nd_frame(
        A6,
        Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1),
        MacAddr([0x33, 0x33, 0, 0, 0, 1]),
        &na,
        &[NdpOption::TargetLinkAddr(EVIL_MAC)],
    ))
    .unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ndp_conflict), 1);
    // An unsolicited advertisement for a neighbour nobody asked about is not learned.
    let stranger: Ipv6Addr = "fd77::77".parse().unwrap();
    let na = NdpMessage::NeighborAdvert { router: false, solicited: false, override_: true, target: stranger };
    b.inject(&nd_frame(stranger, B6, b_mac, &na, &[NdpOption::TargetLinkAddr(EVIL_MAC)])).unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ndp_advert_no_entry), 1);
    // Solicitations that crossed a router (hop limit below 255) are refused.
    let mut ns = nd_frame(A6, sn, sn_mac, &NdpMessage::NeighborSolicit { target: B6 }, &[]);
    ns[14 + 7] = 64;
    b.inject(&ns).unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ndp_hop_limit), 1);
    // A router advertisement flood learns at most max_routers routers.
    for i in 0..100u16 {
        let src = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 1, i);
        let ra = NdpMessage::RouterAdvert {
            hop_limit: 64,
            managed: false,
            other: false,
            preference: 0,
            router_lifetime: 1800,
            reachable_ms: 0,
            retrans_ms: 0,
        };
        let all = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
        b.inject(&nd_frame(src, all, MacAddr([0x33, 0x33, 0, 0, 0, 1]), &ra, &[])).unwrap();
    }
    assert_eq!(b.counters().get(Counter::ndp_router_adverts_accepted), 4);
    assert_eq!(b.counters().get(Counter::rx_drop_ndp_router_table_full), 96);
    // After all that, the host still answers an echo.
    let before = b.counters().get(Counter::icmpv6_echo_replied);
    b.inject(&echo_frame(A6, B6, b_mac)).unwrap();
    assert_eq!(b.counters().get(Counter::icmpv6_echo_replied), before + 1);
    b.counters().rx_accounting().check().unwrap();
}

/// Host B (fd77::2/64, no duplicate address detection, so the address is in use at once),
/// polled once, with the far end of its link.
fn host_b_in_use() -> (Stack<mem::MemLink>, mem::MemLink) {
    let (lb, peer) = mem::pair(LinkConfig::default());
    let mut cfg = Config::host("10.0.0.2/24").ipv6_addr("fd77::2/64").unwrap();
    cfg.ipv6.ndp.dad_transmits = 0;
    let mut b = Stack::new(cfg, lb).unwrap();
    b.poll(Instant::ZERO).unwrap();
    (b, peer)
}

#[test]
fn hostile_extension_headers_are_refused_with_their_reason() {
    let (mut b, _peer) = host_b_in_use();
    let mac = b.mac();
    // Routing header type 0 with segments left: refused, answered with a parameter problem.
    let rh0 = [next_header::NO_NEXT, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    b.inject(&frame(A6, B6, mac, 64, next_header::ROUTING, &rh0)).unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ipv6_ext_routing_header), 1);
    assert_eq!(b.counters().get(Counter::icmpv6_errors_sent), 1);
    // A chain of destination-options headers that never ends within the limits.
    let mut chain = Vec::new();
    for _ in 0..40 {
        chain.extend_from_slice(&[next_header::DEST_OPTS, 0, 1, 4, 0, 0, 0, 0]);
    }
    b.inject(&frame(A6, B6, mac, 64, next_header::DEST_OPTS, &chain)).unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ipv6_ext_too_long), 1);
    // Hop-by-hop after another header.
    let misplaced = [next_header::HOP_BY_HOP, 0, 1, 4, 0, 0, 0, 0, next_header::NO_NEXT, 0, 1, 4, 0, 0, 0, 0];
    b.inject(&frame(A6, B6, mac, 64, next_header::DEST_OPTS, &misplaced)).unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ipv6_ext_misplaced_hop_by_hop), 1);
    // An unknown upper layer: parameter problem code 1.
    b.inject(&frame(A6, B6, mac, 64, 253, b"data")).unwrap();
    assert_eq!(b.counters().get(Counter::rx_drop_ipv6_unknown_next_header), 1);
    assert_eq!(b.counters().get(Counter::icmpv6_errors_sent), 3);
    // Bad checksum, a multicast source, a packet for someone else, a truncated one.
    let mut bad = echo_frame(A6, B6, mac);
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    b.inject(&bad).unwrap();
    b.inject(&echo_frame("ff02::1".parse().unwrap(), B6, mac)).unwrap();
    b.inject(&echo_frame(A6, "fd77::3".parse().unwrap(), mac)).unwrap();
    b.inject(&echo_frame(A6, B6, mac)[..40]).unwrap();
    for c in [
        Counter::rx_drop_icmpv6_bad_checksum,
        Counter::rx_drop_ipv6_martian_src,
        Counter::rx_drop_ipv6_not_for_us,
        Counter::rx_drop_ipv6_truncated,
    ] {
        assert_eq!(b.counters().get(c), 1, "{}", c.name());
    }
    b.counters().rx_accounting().check().unwrap();
}

#[test]
fn large_echoes_go_out_in_fragments_and_come_back_reassembled() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(1100));
    for (seq, len) in [(1u16, 1453usize), (2, 3000), (3, 9000), (4, 65000)] {
        let r = p.ping(B6, seq, len).unwrap_or_else(|| panic!("no reply to {len} bytes"));
        assert_eq!((r.seq, r.len), (seq, len));
    }
    assert_eq!(p.b.counters().get(Counter::ipv6_reassembled), 4);
    assert_eq!(p.b.counters().get(Counter::ipv6_fragmented_sent), 4);
    assert_eq!(p.a.counters().get(Counter::ipv6_reassembled), 4);
    p.accounted();
}

fn fragment_frame(dst_mac: MacAddr, ident: u32, offset: usize, more: bool, data: &[u8]) -> Vec<u8> {
    let mut payload = vec![0u8; 8 + data.len()];
    let fh = wire::FragmentHeader { offset, more, ident, next_header: next_header::UDP, header_offset: 0 };
    fh.emit(&mut payload).unwrap();
    payload[8..].copy_from_slice(data);
    frame(A6, B6, dst_mac, 64, next_header::FRAGMENT, &payload)
}

#[test]
fn overlapping_duplicate_and_malformed_fragments_are_refused_and_late_ones_time_out() {
    let (mut b, _peer) = host_b_in_use();
    let mac = b.mac();
    b.inject(&fragment_frame(mac, 1, 0, true, &[0; 16])).unwrap();
    b.inject(&fragment_frame(mac, 1, 0, true, &[0; 16])).unwrap();
    b.inject(&fragment_frame(mac, 1, 8, true, &[0; 16])).unwrap();
    b.inject(&fragment_frame(mac, 1, 16, false, &[0; 8])).unwrap();
    b.inject(&fragment_frame(mac, 2, 0, true, &[0; 4])).unwrap();
    b.inject(&fragment_frame(mac, 3, 0, true, &[0; 12])).unwrap();
    b.inject(&fragment_frame(mac, 4, 65528, false, &[0; 16])).unwrap();
    b.inject(&fragment_frame(mac, 5, 0, true, &[0; 64])).unwrap();
    for (c, n) in [
        (Counter::ipv6_frags_queued, 2),
        (Counter::rx_drop_ipv6_frag_duplicate, 1),
        (Counter::rx_drop_ipv6_frag_overlap, 2),
        (Counter::rx_drop_ipv6_frag_malformed, 3),
        (Counter::ipv6_reasm_overlap, 1),
    ] {
        assert_eq!(b.counters().get(c), n, "{}", c.name());
    }
    b.poll(Instant::ZERO + Duration::from_secs(31)).unwrap();
    assert_eq!(b.counters().get(Counter::ipv6_reasm_timeout), 1);
    // Datagram 5's first fragment came: its source hears a time exceeded.
    assert_eq!(b.counters().get(Counter::icmpv6_errors_sent), 1);
    assert_eq!(b.reassembly_in_progress(), 0);
    b.counters().rx_accounting().check().unwrap();
}
