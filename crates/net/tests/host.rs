//! Deterministic tests of the host stack: two stacks back to back on a mem link, virtual time,
//! exact frames asserted where it matters.

use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Counter, Stack};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::ethernet::ethertype;
use wire::{
    ArpOp, ArpRepr, EthernetFrame, EthernetRepr, IcmpMessage, IcmpRepr, Ipv4Packet, Ipv4Repr, MacAddr, UdpPacket,
    UdpRepr,
};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Host B on a stack, with its far link end held by the test ("the wire").
struct Bench {
    host: Stack<mem::MemLink>,
    wire: mem::MemLink,
    now: Instant,
    rx: FrameBatch,
}

impl Bench {
    fn new(cfg: Config) -> Bench {
        let (h, w) = mem::pair(LinkConfig::default());
        Bench { host: Stack::new(cfg, h).unwrap(), wire: w, now: Instant::ZERO, rx: FrameBatch::new(64, 1600) }
    }

    /// Put frames on the wire, poll once, and return what the host sent.
    fn exchange(&mut self, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut b = FrameBatch::new(frames.len().max(1), 1600);
        for f in frames {
            assert!(b.push(f));
        }
        if !frames.is_empty() {
            assert_eq!(self.wire.tx_batch(self.now, &mut b).unwrap(), frames.len());
        }
        self.host.poll(self.now).unwrap();
        self.collect()
    }

    fn collect(&mut self) -> Vec<Vec<u8>> {
        let mut out = vec![];
        loop {
            self.rx.clear();
            if self.wire.rx_batch(self.now, &mut self.rx).unwrap() == 0 {
                return out;
            }
            out.extend(self.rx.iter().map(|f| f.to_vec()));
        }
    }

    fn advance(&mut self, d: Duration) -> Vec<Vec<u8>> {
        self.now = self.now + d;
        self.exchange(&[])
    }
}

fn peer_mac() -> MacAddr {
    MacAddr([0x02, 0xaa, 0, 0, 0, 1])
}

fn eth(dst: MacAddr, et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + payload.len()];
    EthernetRepr { src: peer_mac(), dst, ethertype: et, vlan: None }.emit(&mut f).unwrap();
    f[14..].copy_from_slice(payload);
    f
}

fn arp(op: ArpOp, target_ip: Ipv4Addr, dst: MacAddr) -> Vec<u8> {
    let mut p = [0u8; 28];
    ArpRepr { op, sender_mac: peer_mac(), sender_ip: A, target_mac: MacAddr::ZERO, target_ip }.emit(&mut p).unwrap();
    eth(dst, ethertype::ARP, &p)
}

fn ipv4(dst_mac: MacAddr, proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20 + l4.len()];
    Ipv4Repr {
        src: A,
        dst: B,
        protocol: proto,
        payload_len: l4.len(),
        ttl: 64,
        ident: 1,
        dont_frag: true,
        dscp_ecn: 0,
    }
    .emit(&mut p)
    .unwrap();
    p[20..].copy_from_slice(l4);
    eth(dst_mac, ethertype::IPV4, &p)
}

fn echo_request(seq: u16, data: &[u8]) -> Vec<u8> {
    let repr = IcmpRepr { message: IcmpMessage::EchoRequest { ident: 0x1234, seq }, data };
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut b).unwrap();
    b
}

fn udp(dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 8 + payload.len()];
    b[8..].copy_from_slice(payload);
    UdpRepr { src_port: 40000, dst_port }.emit(&mut b, A, B, payload.len()).unwrap();
    b
}

/// A bench whose host has announced itself and learned the peer from an ARP request.
fn resolved_bench() -> Bench {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    let sent = b.exchange(&[]);
    assert_eq!(sent.len(), 1, "gratuitous ARP at start-up");
    let ga = ArpRepr::parse(EthernetFrame::new_checked(&sent[0][..]).unwrap().payload()).unwrap();
    assert_eq!((ga.op, ga.sender_ip, ga.target_ip), (ArpOp::Request, B, B));
    let reply = b.exchange(&[arp(ArpOp::Request, B, MacAddr::BROADCAST)]);
    assert_eq!(reply.len(), 1);
    let e = EthernetFrame::new_checked(&reply[0][..]).unwrap();
    assert_eq!((e.dst(), e.src(), e.ethertype()), (peer_mac(), b.host.mac(), ethertype::ARP));
    let r = ArpRepr::parse(e.payload()).unwrap();
    assert_eq!(
        (r.op, r.sender_mac, r.sender_ip, r.target_mac, r.target_ip),
        (ArpOp::Reply, b.host.mac(), B, peer_mac(), A)
    );
    assert_eq!(b.host.arp_lookup(A), Some(peer_mac()));
    b
}

#[test]
fn answers_arp_and_learns_the_requester() {
    let b = resolved_bench();
    assert_eq!(b.host.counters().get(Counter::arp_replies_sent), 1);
}

#[test]
fn echo_reply_mirrors_the_request_exactly() {
    let mut b = resolved_bench();
    let data: Vec<u8> = (0..56).collect();
    let out = b.exchange(&[ipv4(b.host.mac(), 1, &echo_request(7, &data))]);
    assert_eq!(out.len(), 1);
    let e = EthernetFrame::new_checked(&out[0][..]).unwrap();
    assert_eq!(e.dst(), peer_mac());
    let ip = Ipv4Packet::new_checked(e.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.src(), ip.dst(), ip.protocol(), ip.ttl()), (B, A, 1, 64));
    let icmp = IcmpRepr::parse(ip.payload()).unwrap();
    assert_eq!(icmp.message, IcmpMessage::EchoReply { ident: 0x1234, seq: 7 });
    assert_eq!(icmp.data, &data[..]);
}

#[test]
fn closed_udp_port_gets_port_unreachable_quoting_the_datagram() {
    let mut b = resolved_bench();
    let sent = ipv4(b.host.mac(), 17, &udp(9999, b"hello"));
    let out = b.exchange(std::slice::from_ref(&sent));
    assert_eq!(out.len(), 1);
    let ip =
        Ipv4Packet::new_checked(EthernetFrame::new_checked(&out[0][..]).unwrap().payload()).unwrap().payload().to_vec();
    let icmp = IcmpRepr::parse(&ip).unwrap();
    assert_eq!(icmp.message, IcmpMessage::DestUnreachable { code: 3, next_hop_mtu: 0 });
    assert_eq!(icmp.data, &sent[14..]);
    assert_eq!(b.host.counters().get(Counter::rx_drop_udp_no_socket), 1);
}

#[test]
fn udp_delivery_with_sender_address() {
    let mut b = resolved_bench();
    let s = b.host.udp_bind(5000).unwrap();
    b.exchange(&[ipv4(b.host.mac(), 17, &udp(5000, b"payload"))]);
    let mut buf = [0u8; 64];
    assert_eq!(b.host.udp_recv_from(s, &mut buf).unwrap(), Some((7, SocketAddrV4::new(A, 40000).into())));
    assert_eq!(&buf[..7], b"payload");
}

#[test]
fn packets_wait_for_arp_then_go_out_in_order() {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    b.exchange(&[]);
    let s = b.host.udp_bind(0).unwrap();
    for i in 0..3u8 {
        b.host.udp_send_to(s, SocketAddrV4::new(A, 9), &[i]).unwrap();
    }
    let out = b.exchange(&[]);
    assert_eq!(out.len(), 1, "one ARP request, datagrams held");
    let mut reply = [0u8; 28];
    ArpRepr { op: ArpOp::Reply, sender_mac: peer_mac(), sender_ip: A, target_mac: b.host.mac(), target_ip: B }
        .emit(&mut reply)
        .unwrap();
    let out = b.exchange(&[eth(b.host.mac(), ethertype::ARP, &reply)]);
    assert_eq!(out.len(), 3);
    for (i, f) in out.iter().enumerate() {
        let e = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(e.dst(), peer_mac());
        let ip = Ipv4Packet::new_checked(e.payload()).unwrap();
        assert_eq!(&ip.payload()[8..], &[i as u8]);
    }
}

#[test]
fn arp_retries_on_schedule_then_drops_and_counts() {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    b.exchange(&[]);
    let s = b.host.udp_bind(0).unwrap();
    b.host.udp_send_to(s, SocketAddrV4::new(A, 9), b"x").unwrap();
    assert_eq!(b.exchange(&[]).len(), 1);
    assert_eq!(b.advance(Duration::from_millis(499)).len(), 0);
    assert_eq!(b.advance(Duration::from_millis(1)).len(), 1, "retry after 500 ms");
    assert_eq!(b.advance(Duration::from_millis(500)).len(), 1);
    assert_eq!(b.advance(Duration::from_millis(500)).len(), 1);
    assert_eq!(b.host.counters().get(Counter::tx_drop_arp_unresolved), 0);
    assert_eq!(b.advance(Duration::from_millis(500)).len(), 0, "4 tries, then give up");
    assert_eq!(b.host.counters().get(Counter::tx_drop_arp_unresolved), 1);
}

#[test]
fn arp_entries_expire() {
    let mut b = resolved_bench();
    b.advance(Duration::from_secs(59));
    assert!(b.host.arp_lookup(A).is_some());
    b.advance(Duration::from_secs(2));
    assert!(b.host.arp_lookup(A).is_none());
}

#[test]
fn malformed_frames_are_counted_by_reason_and_accounted() {
    let mut b = resolved_bench();
    let me = b.host.mac();
    let mut bad_ip_csum = ipv4(me, 1, &echo_request(1, b"x"));
    bad_ip_csum[24] ^= 0xff;
    let mut bad_icmp = ipv4(me, 1, &echo_request(1, b"x"));
    let last = bad_icmp.len() - 1;
    bad_icmp[last] ^= 0xff;
    let mut fragment = ipv4(me, 17, &udp(7, b"x"));
    fragment[20] = 0x20; // MF
    let mut fragment_ip = fragment[14..].to_vec();
    Ipv4Packet::new_checked(&mut fragment_ip[..]).unwrap().fill_checksum();
    let fragment = eth(me, ethertype::IPV4, &fragment_ip);
    // An ARP between two other hosts (sender not in our cache): not learned from.
    let mut stranger = [0u8; 28];
    let other = Ipv4Addr::new(10, 0, 0, 50);
    ArpRepr { op: ArpOp::Request, sender_mac: peer_mac(), sender_ip: other, target_mac: MacAddr::ZERO, target_ip: A }
        .emit(&mut stranger)
        .unwrap();
    let stranger_arp = eth(MacAddr::BROADCAST, ethertype::ARP, &stranger);
    let cases: Vec<(Vec<u8>, Counter)> = vec![
        (vec![1, 2, 3], Counter::rx_drop_eth_truncated),
        (ipv4(MacAddr([2, 9, 9, 9, 9, 9]), 1, &echo_request(1, b"x")), Counter::rx_drop_eth_not_for_us),
        (eth(me, 0x88b6, b"??"), Counter::rx_drop_eth_unknown_ethertype),
        (eth(me, ethertype::IPV4, &[0x45, 0, 0]), Counter::rx_drop_ipv4_truncated),
        (eth(me, ethertype::IPV4, &[0x65; 20]), Counter::rx_drop_ipv4_bad_version),
        (bad_ip_csum, Counter::rx_drop_ipv4_bad_checksum),
        (bad_icmp, Counter::rx_drop_icmp_bad_checksum),
        (fragment, Counter::rx_drop_ipv4_frag_malformed),
        (stranger_arp, Counter::rx_drop_arp_not_for_us),
        (eth(me, ethertype::ARP, &[0u8; 10]), Counter::rx_drop_arp_truncated),
        (ipv4(me, 6, &[0u8; 20]), Counter::rx_drop_tcp_malformed),
    ];
    for (frame, reason) in cases {
        let before = b.host.counters().get(reason);
        b.exchange(&[frame]);
        assert_eq!(b.host.counters().get(reason), before + 1, "{}", reason.name());
    }
    let c = b.host.counters();
    assert_eq!(c.get(Counter::rx_delivered) + c.rx_drops(), c.get(Counter::rx_frames));
}

#[test]
fn raw_ethernet_round_trip_between_two_stacks() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    assert!(a.raw_bind(ethertype::IPV4).is_err());
    let ra = a.raw_bind(0x88b5).unwrap();
    let rb = b.raw_bind(0x88b5).unwrap();
    a.raw_send(ra, b.mac(), b"raw!").unwrap();
    a.poll(Instant::ZERO).unwrap();
    b.poll(Instant::ZERO).unwrap();
    let mut buf = [0u8; 64];
    let (n, from) = loop {
        if let Some(r) = b.raw_recv(rb, &mut buf).unwrap() {
            break r;
        }
        b.poll(Instant::ZERO).unwrap();
    };
    assert_eq!((&buf[..4], from), (&b"raw!"[..], a.mac()));
    assert!(n >= 4);
}

#[test]
fn ping_between_two_stacks_measures_virtual_rtt() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    let mut now = Instant::ZERO;
    a.poll(now).unwrap();
    b.poll(now).unwrap();
    for seq in 0..5 {
        a.ping(B, seq, 56).unwrap();
        let reply = (0..100).find_map(|_| {
            now = now + Duration::from_micros(10);
            a.poll(now).unwrap();
            b.poll(now).unwrap();
            a.ping_reply()
        });
        let r = reply.expect("reply");
        assert_eq!((r.from, r.seq, r.len), (B.into(), seq, 56));
        assert!(r.rtt <= Duration::from_micros(50), "{:?}", r.rtt);
    }
    assert_eq!(b.counters().get(Counter::icmp_echo_replied), 5);
}

#[test]
fn broadcast_ping_is_not_answered() {
    let mut b = resolved_bench();
    let mut p = echo_request(1, b"x");
    let mut frame = ipv4(MacAddr::BROADCAST, 1, &p);
    let mut ip = frame[14..].to_vec();
    Ipv4Packet::new_checked(&mut ip[..]).unwrap().set_dst(Ipv4Addr::new(10, 0, 0, 255));
    Ipv4Packet::new_checked(&mut ip[..]).unwrap().fill_checksum();
    frame = eth(MacAddr::BROADCAST, ethertype::IPV4, &ip);
    p.clear();
    assert!(b.exchange(&[frame]).is_empty());
    assert_eq!(b.host.counters().get(Counter::rx_drop_icmp_broadcast_echo), 1);
}

#[test]
fn zero_copy_udp_and_raw_sends_fill_the_frame_and_receives_lend_the_queued_payload() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    let (sa, sb) = (a.udp_bind(4000).unwrap(), b.udp_bind(5000).unwrap());
    let to_b = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5000);
    assert_eq!(b.udp_recv_with(sb, |_, _| unreachable!("nothing is queued")).unwrap(), None);
    // One datagram within the MTU and one that goes out in fragments: `fill` writes each once.
    let mut fills = 0;
    for len in [100usize, 4000] {
        let sent = a
            .udp_send_with(sa, to_b, len, |buf| {
                fills += 1;
                assert_eq!(buf.len(), len);
                buf.iter_mut().enumerate().for_each(|(i, x)| *x = (i * 7) as u8);
            })
            .unwrap();
        assert!(sent);
    }
    assert_eq!(fills, 2);
    // A refused datagram never calls `fill`.
    a.udp_set_dont_fragment(sa, true).unwrap();
    assert!(a.udp_send_with(sa, to_b, 4000, |_| panic!("refused datagrams are not filled")).is_err());
    let mut got = Vec::new();
    for _ in 0..100 {
        a.poll(Instant::ZERO).unwrap();
        b.poll(Instant::ZERO).unwrap();
        while let Some((from, data)) = b.udp_recv_with(sb, |from, d| (from, d.to_vec())).unwrap() {
            got.push((from, data));
        }
        if got.len() == 2 {
            break;
        }
    }
    assert_eq!(got.len(), 2, "both datagrams arrive");
    for ((from, data), len) in got.iter().zip([100usize, 4000]) {
        assert_eq!(*from, SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 4000).into());
        assert_eq!(data.len(), len);
        assert!(data.iter().enumerate().all(|(i, x)| *x == (i * 7) as u8));
    }
    assert_eq!(b.udp_queued(sb).unwrap(), 0, "a datagram lent to the closure is removed");
    // Raw Ethernet, the same way.
    let (ra, rb) = (a.raw_bind(0x88b5).unwrap(), b.raw_bind(0x88b5).unwrap());
    assert!(a.raw_send_with(ra, b.mac(), 5, |buf| buf.copy_from_slice(b"in pl")).unwrap());
    assert!(a.raw_send_with(ra, b.mac(), 2000, |_| panic!("above the MTU")).is_err());
    let mut raw = None;
    for _ in 0..100 {
        a.poll(Instant::ZERO).unwrap();
        b.poll(Instant::ZERO).unwrap();
        raw = b.raw_recv_with(rb, |mac, d| (mac, d[..5].to_vec())).unwrap();
        if raw.is_some() {
            break;
        }
    }
    assert_eq!(raw, Some((a.mac(), b"in pl".to_vec())));
    b.raw_close(rb).unwrap();
    assert!(b.raw_recv_with(rb, |_, _| ()).is_err());
    b.udp_close(sb).unwrap();
    assert!(b.udp_recv_with(sb, |_, _| ()).is_err());
}

#[test]
fn a_socket_may_send_without_udp_checksum_and_such_datagrams_are_delivered() {
    let mut b = resolved_bench();
    let s = b.host.udp_bind(6000).unwrap();
    let to = SocketAddrV4::new(A, 9);
    let checksum_of = |frame: &[u8]| {
        let eth = EthernetFrame::new_checked(frame).unwrap();
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum(B, A));
        assert_eq!(udp.payload(), b"data");
        udp.checksum()
    };
    b.host.udp_set_checksum(s, false).unwrap();
    b.host.udp_send_to(s, to, b"data").unwrap();
    let out = b.exchange(&[]);
    assert_eq!(checksum_of(&out[0]), 0, "checksum off: the field says none");
    b.host.udp_set_checksum(s, true).unwrap();
    b.host.udp_send_to(s, to, b"data").unwrap();
    let out = b.exchange(&[]);
    assert_ne!(checksum_of(&out[0]), 0);
    // Received datagrams with checksum 0 are delivered (RFC 768).
    let mut d = udp(6000, b"zero");
    d[6..8].copy_from_slice(&[0, 0]);
    b.exchange(&[ipv4(b.host.mac(), 17, &d)]);
    assert_eq!(b.host.udp_recv_with(s, |_, p| p.to_vec()).unwrap(), Some(b"zero".to_vec()));
    b.host.udp_close(s).unwrap();
    assert!(b.host.udp_set_checksum(s, false).is_err());
}
