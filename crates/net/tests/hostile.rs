//! What peers send cannot stop, lock out or fool the host: martian and off-link sources,
//! IPv4 fragments (reassembly, hostile sets, fragmentation on send), path MTU messages. Every
//! test checks the frame accounting: rx_frames = rx_delivered + every receive drop.

use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Counter, ReasmLimits, Stack};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::ethernet::ethertype;
use wire::ipv4::protocol;
use wire::{
    EthernetFrame, EthernetRepr, IcmpMessage, IcmpRepr, Ipv4Packet, Ipv4Repr, MacAddr, TcpRepr, UdpPacket, UdpRepr,
};

const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const PEER_MAC: MacAddr = MacAddr([0x02, 0xaa, 0, 0, 0, 1]);

/// The host on a stack; the test holds the far end of its link.
struct Bench {
    host: Stack<mem::MemLink>,
    wire: mem::MemLink,
    now: Instant,
}

impl Bench {
    fn new(cfg: Config) -> Bench {
        let (h, w) = mem::pair(LinkConfig::default());
        let mut b = Bench { host: Stack::new(cfg, h).unwrap(), wire: w, now: Instant::ZERO };
        // Teach the host the peer's MAC (and the gateway's, if it has one).
        let mut arp = [0u8; 28];
        for ip in [PEER, Ipv4Addr::new(10, 0, 0, 254)] {
            wire::ArpRepr {
                op: wire::ArpOp::Request,
                sender_mac: PEER_MAC,
                sender_ip: ip,
                target_mac: MacAddr::ZERO,
                target_ip: HOST,
            }
            .emit(&mut arp)
            .unwrap();
            b.exchange(&[eth(ethertype::ARP, &arp)]);
        }
        b
    }

    /// Put `frames` on the wire in one batch, poll once, return what the host sent.
    fn exchange(&mut self, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
        for chunk in frames.chunks(32) {
            let mut b = FrameBatch::new(chunk.len(), 1600);
            for f in chunk {
                assert!(b.push(f));
            }
            assert_eq!(self.wire.tx_batch(self.now, &mut b).unwrap(), chunk.len());
            self.host.poll(self.now).expect("poll never fails on what a peer sends");
        }
        if frames.is_empty() {
            self.host.poll(self.now).unwrap();
        }
        self.assert_accounted();
        let mut out = vec![];
        let mut rx = FrameBatch::new(64, 1600);
        loop {
            rx.clear();
            if self.wire.rx_batch(self.now, &mut rx).unwrap() == 0 {
                return out;
            }
            out.extend(rx.iter().map(|f| f.to_vec()));
        }
    }

    /// Every received frame has one verdict; every datagram reassembly began has one outcome
    /// or is still in progress.
    fn assert_accounted(&self) {
        let c = self.host.counters();
        c.rx_accounting().check().unwrap();
        let ended = [
            Counter::ipv4_reassembled,
            Counter::ipv4_reasm_timeout,
            Counter::ipv4_reasm_evicted,
            Counter::ipv4_reasm_overlap,
        ];
        let ended: u64 = ended.iter().map(|&k| c.get(k)).sum();
        let in_progress = self.host.reassembly_in_progress() as u64;
        assert_eq!(c.get(Counter::ipv4_reasm_started), ended + in_progress, "reassembly outcomes per datagram");
    }

    fn count(&self, c: Counter) -> u64 {
        self.host.counters().get(c)
    }
}

fn eth(et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + payload.len()];
    EthernetRepr { src: PEER_MAC, dst: MacAddr([2, 0, 10, 0, 0, 2]), ethertype: et, vlan: None }.emit(&mut f).unwrap();
    f[14..].copy_from_slice(payload);
    f
}

fn ip_packet(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, ident: u16, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20 + l4.len()];
    Ipv4Repr { src, dst, protocol: proto, payload_len: l4.len(), ttl: 64, ident, dont_frag: false, dscp_ecn: 0 }
        .emit(&mut p)
        .unwrap();
    p[20..].copy_from_slice(l4);
    p
}

fn echo(seq: u16, data: &[u8]) -> Vec<u8> {
    let repr = IcmpRepr { message: IcmpMessage::EchoRequest { ident: 7, seq }, data };
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut b).unwrap();
    b
}

fn echo_from(src: Ipv4Addr, seq: u16) -> Vec<u8> {
    eth(ethertype::IPV4, &ip_packet(src, HOST, protocol::ICMP, seq, &echo(seq, b"ping")))
}

fn syn_from(src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq: 1000,
        ack: 0,
        flags: wire::tcp::flags::SYN,
        window: 65535,
        urgent: 0,
        options: Default::default(),
    };
    let mut l4 = vec![0u8; repr.header_len()];
    repr.emit(&mut l4, src, dst, 0).unwrap();
    eth(ethertype::IPV4, &ip_packet(src, dst, protocol::TCP, 9, &l4))
}

/// The ICMP echo replies among `frames`, as (destination MAC, destination IP, seq).
fn echo_replies(frames: &[Vec<u8>]) -> Vec<(MacAddr, Ipv4Addr, u16)> {
    frames
        .iter()
        .filter_map(|f| {
            let e = EthernetFrame::new_checked(&f[..]).ok()?;
            let ip = Ipv4Packet::new_checked(e.payload()).ok()?;
            match IcmpRepr::parse(ip.payload()).ok()?.message {
                IcmpMessage::EchoReply { seq, .. } => Some((e.dst(), ip.dst(), seq)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn off_link_and_martian_sources_are_counted_drops_and_the_batch_goes_on() {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    b.host.tcp_listen(80, 128).unwrap();
    let cases = [
        (echo_from(Ipv4Addr::new(192, 168, 99, 1), 1), Counter::rx_drop_ipv4_no_route),
        (syn_from(Ipv4Addr::new(192, 168, 99, 1), HOST), Counter::rx_drop_ipv4_no_route),
        (echo_from(Ipv4Addr::new(0, 0, 0, 0), 2), Counter::rx_drop_ipv4_martian_src),
        (echo_from(Ipv4Addr::new(0, 1, 2, 3), 3), Counter::rx_drop_ipv4_martian_src),
        (echo_from(Ipv4Addr::new(127, 0, 0, 1), 4), Counter::rx_drop_ipv4_martian_src),
        (echo_from(Ipv4Addr::new(224, 0, 0, 1), 5), Counter::rx_drop_ipv4_martian_src),
        (echo_from(Ipv4Addr::new(255, 255, 255, 255), 6), Counter::rx_drop_ipv4_martian_src),
        (echo_from(Ipv4Addr::new(240, 0, 0, 1), 7), Counter::rx_drop_ipv4_martian_src),
        (echo_from(HOST, 8), Counter::rx_drop_ipv4_martian_src),
        (echo_from(Ipv4Addr::new(10, 0, 0, 255), 9), Counter::rx_drop_ipv4_martian_src),
        (syn_from(PEER, Ipv4Addr::new(127, 0, 0, 1)), Counter::rx_drop_ipv4_martian_dst),
        (syn_from(PEER, Ipv4Addr::new(255, 255, 255, 255)), Counter::rx_drop_tcp_broadcast),
    ];
    let mut frames: Vec<Vec<u8>> = cases.iter().map(|(f, _)| f.clone()).collect();
    frames.push(echo_from(PEER, 100));
    let before: Vec<u64> = cases.iter().map(|(_, c)| b.count(*c)).collect();
    let out = b.exchange(&frames);
    let mut expected = std::collections::HashMap::new();
    for (i, (_, c)) in cases.iter().enumerate() {
        *expected.entry(*c).or_insert(before[i]) += 1;
    }
    for (c, n) in expected {
        assert_eq!(b.count(c), n, "{}", c.name());
    }
    // The good echo behind all of them in the same batch is answered, and only it.
    assert_eq!(echo_replies(&out), vec![(PEER_MAC, PEER, 100)]);
}

#[test]
fn a_gateway_routes_replies_to_off_link_sources() {
    let gw = Ipv4Addr::new(10, 0, 0, 254);
    let mut b = Bench::new(Config::host("10.0.0.2/24").gateway(gw));
    let far = Ipv4Addr::new(192, 168, 99, 1);
    let out = b.exchange(&[echo_from(far, 1)]);
    assert_eq!(echo_replies(&out), vec![(PEER_MAC, far, 1)], "sent to the gateway's MAC");
    assert_eq!(b.count(Counter::rx_drop_ipv4_no_route), 0);
}

/// Two stacks on one mem link, polled together for `steps` rounds of 1 ms.
fn run_pair(a: &mut Stack<mem::MemLink>, b: &mut Stack<mem::MemLink>, now: &mut Instant, steps: u32) {
    for _ in 0..steps {
        *now = *now + Duration::from_millis(1);
        a.poll(*now).unwrap();
        b.poll(*now).unwrap();
    }
}

#[test]
fn udp_datagrams_up_to_65507_bytes_cross_in_fragments() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    let (ta, rb) = (a.udp_bind(0).unwrap(), b.udp_bind(7).unwrap());
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 70_000];
    for (i, len) in [1473usize, 8000, 65507, 1472, 0].into_iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|j| (j * 31 + i) as u8).collect();
        assert!(a.udp_send_to(ta, SocketAddrV4::new(HOST, 7), &data).unwrap());
        run_pair(&mut a, &mut b, &mut now, 5);
        let (n, from) = b.udp_recv_from(rb, &mut buf).unwrap().expect("datagram arrived");
        assert_eq!((n, from.ip()), (len, PEER.into()));
        assert!(buf[..n] == data[..], "datagram of {len} bytes intact");
    }
    assert!(a.udp_send_to(ta, SocketAddrV4::new(HOST, 7), &vec![0; 65508]).is_err());
    // Don't-fragment: refused above the path MTU, with the largest payload that fits.
    a.udp_set_dont_fragment(ta, true).unwrap();
    match a.udp_send_to(ta, SocketAddrV4::new(HOST, 7), &[0; 1473]) {
        Err(net::UdpSendError::TooLarge { len: 1473, max: 1472 }) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(a.udp_send_to(ta, SocketAddrV4::new(HOST, 7), &[0; 1472]).unwrap());
    assert_eq!(a.counters().get(Counter::tx_drop_too_big), 1);
    assert_eq!(a.counters().get(Counter::ipv4_fragmented_sent), 3);
    assert_eq!(b.counters().get(Counter::ipv4_reassembled), 3);
    assert_eq!(b.reassembly_usage(), (0, 0));
    for s in [&a, &b] {
        let c = s.counters();
        assert_eq!(c.get(Counter::rx_delivered) + c.rx_drops(), c.get(Counter::rx_frames));
    }
}

#[test]
fn pings_of_1473_8000_and_65000_bytes_are_answered() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    let mut now = Instant::ZERO;
    for (seq, len) in [1473usize, 8000, 65000].into_iter().enumerate() {
        assert!(a.ping(HOST, seq as u16, len).unwrap());
        run_pair(&mut a, &mut b, &mut now, 5);
        let r = a.ping_reply().expect("echo reply");
        assert_eq!((r.seq, r.len), (seq as u16, len));
    }
}

/// An IPv4 fragment of `whole` (an L4 payload) from the peer.
fn fragment(ident: u16, proto: u8, whole: &[u8], offset: usize, len: usize, more: bool) -> Vec<u8> {
    let mut p = ip_packet(PEER, HOST, proto, ident, &whole[offset..offset + len]);
    let mut v = Ipv4Packet::new_unchecked(&mut p[..]);
    v.set_frag(false, more, offset);
    v.fill_checksum();
    eth(ethertype::IPV4, &p)
}

fn udp_l4(dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 8 + payload.len()];
    b[8..].copy_from_slice(payload);
    UdpRepr { src_port: 5000, dst_port }.emit(&mut b, PEER, HOST, payload.len()).unwrap();
    b
}

#[test]
fn hostile_fragment_sets_are_counted_and_bounded() {
    let limits = ReasmLimits { max_bytes: 1 << 20, max_bytes_per_source: 512 << 10, ..Default::default() };
    let mut cfg = Config::host("10.0.0.2/24");
    cfg.reasm = limits;
    let mut b = Bench::new(cfg);
    let sock = b.host.udp_bind(9).unwrap();
    let whole = udp_l4(9, &[0x5a; 3000]);
    // Overlap: the datagram is discarded, even once all its bytes came.
    let out = b.exchange(&[
        fragment(1, protocol::UDP, &whole, 0, 1480, true),
        fragment(1, protocol::UDP, &whole, 1472, 1008, true),
        fragment(1, protocol::UDP, &whole, 1480, 1480, true),
        fragment(1, protocol::UDP, &whole, 2960, whole.len() - 2960, false),
    ]);
    assert!(out.is_empty());
    assert_eq!(b.count(Counter::rx_drop_ipv4_frag_overlap), 3);
    assert_eq!((b.count(Counter::ipv4_reasm_started), b.count(Counter::ipv4_reasm_overlap)), (1, 1));
    let mut buf = [0u8; 4000];
    assert!(b.host.udp_recv_from(sock, &mut buf).unwrap().is_none());
    // Tiny TCP first fragment (RFC 1858) and a fragment of odd length with MF set.
    let tcp_whole = [0u8; 64];
    b.exchange(&[fragment(2, protocol::TCP, &tcp_whole, 0, 8, true), fragment(3, protocol::UDP, &whole, 0, 100, true)]);
    assert_eq!(b.count(Counter::rx_drop_ipv4_frag_tiny), 1);
    assert_eq!(b.count(Counter::rx_drop_ipv4_frag_malformed), 1);
    // A never-completed datagram times out and is answered with ICMP time exceeded.
    b.exchange(&[fragment(4, protocol::UDP, &whole, 0, 1480, true)]);
    b.now = b.now + Duration::from_secs(31);
    let out = b.exchange(&[]);
    assert_eq!(b.count(Counter::ipv4_reasm_timeout), 1);
    let time_exceeded = out.iter().any(|f| {
        let e = EthernetFrame::new_checked(&f[..]).unwrap();
        let ip = Ipv4Packet::new_checked(e.payload()).unwrap();
        matches!(IcmpRepr::parse(ip.payload()).map(|r| r.message), Ok(IcmpMessage::TimeExceeded { code: 1 }))
    });
    assert!(time_exceeded);
    // 10,000 incomplete datagrams: memory stays within the limits, the oldest are given up.
    let frames: Vec<Vec<u8>> =
        (0..10_000u16).map(|i| fragment(1000 + i, protocol::UDP, &whole, 0, 1480, true)).collect();
    b.exchange(&frames);
    let (datagrams, bytes) = b.host.reassembly_usage();
    assert!(bytes <= limits.max_bytes_per_source, "{bytes} bytes held");
    assert!(datagrams <= limits.max_datagrams);
    assert!(b.count(Counter::ipv4_reasm_evicted) >= 9_000);
    // And a good fragmented datagram still gets through.
    b.exchange(&[
        fragment(7, protocol::UDP, &whole, 2960, whole.len() - 2960, false),
        fragment(7, protocol::UDP, &whole, 0, 1480, true),
        fragment(7, protocol::UDP, &whole, 1480, 1480, true),
    ]);
    let (n, _) = b.host.udp_recv_from(sock, &mut buf).unwrap().expect("reassembled");
    assert_eq!(&buf[..n], &[0x5a; 3000][..]);
}

#[test]
fn fragmentation_needed_lowers_the_path_mtu() {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    let sock = b.host.udp_bind(5000).unwrap();
    let dst = SocketAddrV4::new(PEER, 6000);
    b.host.udp_send_to(sock, dst, &[1; 1400]).unwrap();
    let sent = b.exchange(&[]);
    assert_eq!(sent.len(), 1);
    // The "router" says: next hop MTU 1000; it quotes our packet.
    let quoted = &sent[0][14..14 + 28];
    let msg = IcmpRepr { message: IcmpMessage::DestUnreachable { code: 4, next_hop_mtu: 1000 }, data: quoted };
    let mut l4 = vec![0u8; msg.buffer_len()];
    msg.emit(&mut l4).unwrap();
    b.exchange(&[eth(ethertype::IPV4, &ip_packet(PEER, HOST, protocol::ICMP, 3, &l4))]);
    assert_eq!(b.host.path_mtu(PEER), 1000);
    assert_eq!(b.count(Counter::icmp_pmtu_updates), 1);
    b.host.udp_send_to(sock, dst, &[2; 1400]).unwrap();
    let sent = b.exchange(&[]);
    assert_eq!(sent.len(), 2, "fragmented to the new path MTU");
    for f in &sent {
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.total_len() <= 1000);
    }
    // A message claiming an MTU below 552 is clamped (no one can force tiny packets).
    let quoted = &sent[0][14..14 + 28];
    let msg = IcmpRepr { message: IcmpMessage::DestUnreachable { code: 4, next_hop_mtu: 100 }, data: quoted };
    let mut l4 = vec![0u8; msg.buffer_len()];
    msg.emit(&mut l4).unwrap();
    b.exchange(&[eth(ethertype::IPV4, &ip_packet(PEER, HOST, protocol::ICMP, 4, &l4))]);
    assert_eq!(b.host.path_mtu(PEER), 552);
    let _ = UdpPacket::new_checked(&sent[0][34..]);
}

#[test]
fn an_echo_request_with_record_route_comes_back_with_it_and_our_address() {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    // Record route with room for 3 addresses, one already recorded; then NOP padding.
    let mut options = vec![7u8, 15, 8, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let l4 = echo(5, b"rr");
    let repr = Ipv4Repr {
        src: PEER,
        dst: HOST,
        protocol: protocol::ICMP,
        payload_len: l4.len(),
        ttl: 64,
        ident: 5,
        dont_frag: false,
        dscp_ecn: 0,
    };
    let mut p = vec![0u8; 20 + options.len() + l4.len()];
    let hl = repr.emit_with_options(&mut p, &options).unwrap();
    p[hl..].copy_from_slice(&l4);
    let out = b.exchange(&[eth(ethertype::IPV4, &p)]);
    assert_eq!(echo_replies(&out).len(), 1);
    let ip = Ipv4Packet::new_checked(&out[0][14..]).unwrap();
    assert!(ip.verify_checksum());
    options[2] = 12;
    options[7..11].copy_from_slice(&HOST.octets());
    options[15] = 0;
    assert_eq!(ip.options(), &options[..]);
}

/// An echo request from the peer carrying IPv4 `options` (padded to 4 bytes with EOL).
fn echo_with_options(seq: u16, options: &[u8]) -> Vec<u8> {
    let mut options = options.to_vec();
    options.resize(options.len().div_ceil(4) * 4, 0);
    let l4 = echo(seq, b"opts");
    let repr = Ipv4Repr {
        src: PEER,
        dst: HOST,
        protocol: protocol::ICMP,
        payload_len: l4.len(),
        ttl: 64,
        ident: seq,
        dont_frag: false,
        dscp_ecn: 0,
    };
    let mut p = vec![0u8; 20 + options.len() + l4.len()];
    let hl = repr.emit_with_options(&mut p, &options).unwrap();
    p[hl..].copy_from_slice(&l4);
    eth(ethertype::IPV4, &p)
}

/// The (pointer, quoted header length) of every ICMP parameter problem in `frames`.
fn parameter_problems(frames: &[Vec<u8>]) -> Vec<(u8, usize)> {
    frames
        .iter()
        .filter_map(|f| {
            let ip = Ipv4Packet::new_checked(&f[14..]).ok()?;
            match IcmpRepr::parse(ip.payload()).ok()? {
                IcmpRepr { message: IcmpMessage::ParameterProblem { code: 0, pointer }, data } => {
                    assert!(ip.options().is_empty(), "an error carries no options of its own");
                    Some((pointer, usize::from(data[0] & 0xf) * 4))
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
fn source_routed_packets_are_dropped_and_malformed_options_get_a_parameter_problem_never_an_echo() {
    let mut b = Bench::new(Config::host("10.0.0.2/24"));
    // Loose and strict source routes, pointing at a hop or exhausted: dropped, as Linux does.
    let routes = [
        vec![131u8, 7, 4, 10, 0, 0, 9],
        vec![137u8, 7, 4, 10, 0, 0, 9],
        vec![131u8, 7, 8, 10, 0, 0, 9],
        vec![1u8, 137, 11, 4, 10, 0, 0, 9, 10, 0, 0, 8],
    ];
    for (i, o) in routes.iter().enumerate() {
        assert!(b.exchange(&[echo_with_options(i as u16, o)]).is_empty(), "source route {o:?} was answered");
    }
    assert_eq!(b.count(Counter::rx_drop_ipv4_source_route), 4);
    // Malformed: answered with a parameter problem pointing at the byte at fault (counted
    // from the start of the IPv4 header), never with an echo reply.
    let malformed: [(&[u8], u8); 6] = [
        (&[7, 7, 1, 0, 0, 0, 0], 22),        // record route, pointer 1
        (&[7, 0, 4, 0], 20),                 // length 0
        (&[1, 7, 1, 4], 21),                 // length 1 after a NOP
        (&[148, 12, 0, 0], 20),              // length past the header
        (&[68, 8, 4, 0, 0, 0, 0, 0], 22),    // timestamp, pointer 4
        (&[68, 8, 9, 0xf0, 0, 0, 0, 0], 23), // timestamp full, overflow 15
    ];
    for (i, (o, pointer)) in malformed.iter().enumerate() {
        let out = b.exchange(&[echo_with_options(100 + i as u16, o)]);
        assert!(echo_replies(&out).is_empty(), "{o:?} was echoed");
        assert_eq!(parameter_problems(&out), vec![(*pointer, 20 + o.len().div_ceil(4) * 4)], "{o:?}");
    }
    assert_eq!(b.count(Counter::rx_drop_ipv4_bad_options), 6);
    assert_eq!(b.count(Counter::icmp_param_problems_sent), 6);
    // Well-formed record route and timestamp still get their echo.
    let mut rr = vec![7u8, 11, 4];
    rr.resize(11, 0);
    assert_eq!(echo_replies(&b.exchange(&[echo_with_options(200, &rr)])).len(), 1);
    // The parameter problems are rate-limited like every ICMP error.
    let flood: Vec<Vec<u8>> = (0..3000u16).map(|i| echo_with_options(1000 + i, &[7, 7, 1, 0, 0, 0, 0])).collect();
    let out = b.exchange(&flood);
    let sent = parameter_problems(&out).len() as u64;
    assert!(sent < 3000 && sent > 0, "{sent} parameter problems for 3,000 bad packets in one instant");
    assert_eq!(b.count(Counter::tx_drop_icmp_rate_limited), 3000 - sent);
    assert_eq!(b.count(Counter::rx_drop_ipv4_bad_options), 3006);
}
