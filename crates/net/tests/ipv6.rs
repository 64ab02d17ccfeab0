//! IPv6 between two stacks on a mem link, virtual time: duplicate address detection,
//! neighbour resolution, echo over global and link-local addresses, fragments, and hostile
//! Neighbor Discovery and extension headers injected as frames, and UDP over IPv6 (echo,
//! fragments, errors, one socket for both families). Every frame is accounted for.

use link::{mem, Instant, Link, LinkConfig};
use net::{AddrState, Config, Counter, NeighborState, Stack, UdpHandle, UdpSendError};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6};
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

// ---- UDP over IPv6 ----

/// Move datagrams between A and B for up to `ms` virtual milliseconds until `done`.
fn run_until(p: &mut Pair, ms: u64, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
    for _ in 0..ms * 20 {
        p.now = p.now + Duration::from_micros(50);
        p.a.poll(p.now).unwrap();
        p.b.poll(p.now).unwrap();
        if done(p) {
            return true;
        }
    }
    false
}

/// A's datagram of `len` bytes to `dst` on B's port 7, echoed by B to its sender; returns
/// what A and B saw (sender, bytes).
fn udp_round_trip(p: &mut Pair, a_sock: UdpHandle, b_sock: UdpHandle, dst: SocketAddr, len: usize) -> [SocketAddr; 2] {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
    assert!(p.a.udp_send_to(a_sock, dst, &data).unwrap());
    let mut at_b = None;
    assert!(run_until(p, 200, |p| {
        at_b = p.b.udp_recv_with(b_sock, |from, d| (from, d.to_vec())).unwrap();
        at_b.is_some()
    }));
    let (from_a, got) = at_b.unwrap();
    assert!(got == data, "{len} bytes arrived intact at B");
    assert!(p.b.udp_send_to(b_sock, from_a, &got).unwrap());
    let mut at_a = None;
    assert!(run_until(p, 200, |p| {
        at_a = p.a.udp_recv_with(a_sock, |from, d| (from, d.to_vec())).unwrap();
        at_a.is_some()
    }));
    let (from_b, back) = at_a.unwrap();
    assert!(back == data, "{len} bytes came back intact to A");
    [from_a, from_b]
}

fn v6(ip: Ipv6Addr, port: u16) -> SocketAddr {
    SocketAddr::V6(SocketAddrV6::new(ip, port, 0, 0))
}

#[test]
fn udp_echo_over_global_and_link_local_addresses() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(1100));
    let (sa, sb) = (p.a.udp_bind(4000).unwrap(), p.b.udp_bind(7).unwrap());
    let [from_a, from_b] = udp_round_trip(&mut p, sa, sb, v6(B6, 7), 100);
    assert_eq!((from_a, from_b), (v6(A6, 4000), v6(B6, 7)));
    let (a_ll, b_ll) = (p.a.ipv6_addrs()[0].cidr.addr, p.b.ipv6_addrs()[0].cidr.addr);
    let [from_a, from_b] = udp_round_trip(&mut p, sa, sb, v6(b_ll, 7), 100);
    assert_eq!((from_a, from_b), (v6(a_ll, 4000), v6(b_ll, 7)), "link-local to link-local");
    for s in [&p.a, &p.b] {
        assert_eq!(s.counters().get(Counter::udp_tx_datagrams), 2);
        assert_eq!(s.counters().get(Counter::udp_rx_datagrams), 2);
    }
    p.accounted();
}

#[test]
fn udp_datagrams_of_9000_and_60000_bytes_go_in_fragments_both_ways() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(1100));
    let (sa, sb) = (p.a.udp_bind(4000).unwrap(), p.b.udp_bind(7).unwrap());
    for len in [9000, 60000] {
        udp_round_trip(&mut p, sa, sb, v6(B6, 7), len);
    }
    for s in [&p.a, &p.b] {
        assert_eq!(s.counters().get(Counter::ipv6_fragmented_sent), 2);
        assert_eq!(s.counters().get(Counter::ipv6_reassembled), 2);
        // 9,008 bytes in 1,448-byte pieces: 7 fragments; 60,008: 42.
        assert_eq!(s.counters().get(Counter::ipv6_frags_sent), 7 + 42);
        assert_eq!(s.counters().get(Counter::udp_rx_datagrams), 2);
    }
    // Above the path MTU with fragmentation forbidden: refused, naming what fits.
    p.a.udp_set_dont_fragment(sa, true).unwrap();
    match p.a.udp_send_to(sa, v6(B6, 7), &[0; 1453]) {
        Err(UdpSendError::TooLarge { len: 1453, max: 1452 }) => {}
        other => panic!("{other:?}"),
    }
    assert!(p.a.udp_send_to(sa, v6(B6, 7), &[0; 1452]).unwrap());
    p.accounted();
}

#[test]
fn one_socket_receives_ipv4_and_ipv6_datagrams_in_the_same_run() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(1100));
    let (sa, sb) = (p.a.udp_bind(4000).unwrap(), p.b.udp_bind(7).unwrap());
    let v4_b: SocketAddr = "10.0.0.2:7".parse().unwrap();
    for i in 0..10u8 {
        let to = if i % 2 == 0 { v4_b } else { v6(B6, 7) };
        assert!(p.a.udp_send_to(sa, to, &[i; 32]).unwrap());
    }
    let mut got = Vec::new();
    assert!(run_until(&mut p, 100, |p| {
        while let Some(r) = p.b.udp_recv_with(sb, |from, d| (from, d[0])).unwrap() {
            got.push(r);
        }
        got.len() == 10
    }));
    got.sort_by_key(|r| r.1);
    let v4_a: SocketAddr = "10.0.0.1:4000".parse().unwrap();
    for (i, (from, tag)) in got.into_iter().enumerate() {
        assert_eq!(usize::from(tag), i);
        assert_eq!(from, if i % 2 == 0 { v4_a } else { v6(A6, 4000) });
    }
    assert_eq!(p.b.counters().get(Counter::udp_rx_datagrams), 10);
    p.accounted();
}

/// A UDP frame from A6 (EVIL_MAC) to `dst` port `port`, with its checksum as computed, or
/// forced to `checksum`.
fn udp_frame(dst: Ipv6Addr, dst_mac: MacAddr, port: u16, checksum: Option<u16>) -> Vec<u8> {
    let mut l4 = vec![0u8; 8 + 12];
    l4[8..].copy_from_slice(b"hello, there");
    wire::UdpRepr { src_port: 5555, dst_port: port }.emit(&mut l4, A6, dst, 12).unwrap();
    if let Some(c) = checksum {
        l4[6..8].copy_from_slice(&c.to_be_bytes());
    }
    frame(A6, dst, dst_mac, 64, next_header::UDP, &l4)
}

#[test]
fn udp_port_unreachable_zero_and_bad_checksums_are_counted() {
    let (mut b, _peer) = host_b_in_use();
    let mac = b.mac();
    let sock = b.udp_bind(7).unwrap();
    b.inject(&udp_frame(B6, mac, 7, None)).unwrap();
    assert_eq!(b.udp_recv_with(sock, |from, d| (from, d.len())).unwrap(), Some((v6(A6, 5555), 12)));
    b.inject(&udp_frame(B6, mac, 7, Some(0))).unwrap();
    let mut bad = udp_frame(B6, mac, 7, None);
    let last = bad.len() - 1;
    bad[last] ^= 0x55;
    b.inject(&bad).unwrap();
    // Shorter than a UDP header inside a whole IPv6 packet.
    b.inject(&frame(A6, B6, mac, 64, next_header::UDP, &[0, 1, 0, 7, 0])).unwrap();
    assert_eq!(b.udp_queued(sock).unwrap(), 0);
    // Nobody on port 9: a port unreachable to a unicast datagram, none to a group's.
    b.inject(&udp_frame(B6, mac, 9, None)).unwrap();
    b.inject(&udp_frame(net::ipv6::ALL_NODES, MacAddr([0x33, 0x33, 0, 0, 0, 1]), 9, None)).unwrap();
    for (c, n) in [
        (Counter::udp_rx_datagrams, 1),
        (Counter::rx_drop_udp6_zero_checksum, 1),
        (Counter::rx_drop_udp_bad_checksum, 1),
        (Counter::rx_drop_udp_truncated, 1),
        (Counter::rx_drop_udp_no_socket, 2),
        (Counter::icmpv6_errors_sent, 1),
    ] {
        assert_eq!(b.counters().get(c), n, "{}", c.name());
    }
    b.counters().rx_accounting().check().unwrap();
}

#[test]
fn a_port_unreachable_reaches_the_sending_socket_and_a_stack_without_ipv6_refuses() {
    let mut p = Pair::new("fd77::1/64", "fd77::2/64");
    p.run(Duration::from_millis(1100));
    let sa = p.a.udp_bind(0).unwrap();
    assert!(p.a.udp_send_to(sa, v6(B6, 9), b"anyone?").unwrap());
    assert!(run_until(&mut p, 100, |p| p.a.udp_icmp_errors(sa).unwrap() == 1));
    assert_eq!(p.b.counters().get(Counter::rx_drop_udp_no_socket), 1);
    assert_eq!(p.a.counters().get(Counter::icmpv6_errors_received), 1);
    p.accounted();

    let (l, _peer) = mem::pair(LinkConfig::default());
    let mut v4_only = Stack::new(Config::host("10.0.0.1/24"), l).unwrap();
    let s = v4_only.udp_bind(0).unwrap();
    match v4_only.udp_send_to(s, v6(B6, 7), b"x") {
        Err(UdpSendError::NoRoute(ip)) => assert_eq!(ip, IpAddr::V6(B6)),
        other => panic!("{other:?}"),
    }
    assert_eq!(v4_only.counters().get(Counter::tx_drop_ipv6_no_route), 1);
}
