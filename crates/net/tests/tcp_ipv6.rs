//! TCP over IPv6 between two dual-stack hosts on a mem link, in virtual time: one listener
//! takes IPv4 and IPv6 connections in the same run, link-local connections, the IPv6 MSS,
//! resets for a closed port, SYN cookies over IPv6, Packet Too Big (a forged one ignored),
//! and the refusal of an IPv6 connect on a host without IPv6. Every frame is accounted for.

use link::{mem, Instant, LinkConfig};
use net::{Config, ConnectError, Counter, Recv, Stack, TcpError, TcpHandle};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

const A6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
const B6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

type Host = Stack<mem::MemLink>;

struct Pair {
    a: Host,
    b: Host,
    now: Instant,
}

fn cfg(ip: &str, ip6: &str) -> Config {
    let mut c = Config::host(ip).ipv6_addr(ip6).unwrap();
    c.tcp.secret = [3, 4];
    c.tcp.max_sessions = 64;
    c
}

impl Pair {
    /// Two dual-stack hosts, past duplicate address detection.
    fn new(b_cfg: impl FnOnce(Config) -> Config) -> Pair {
        let (la, lb) = mem::pair(LinkConfig::default());
        let a = Stack::new(cfg("10.0.0.1/24", "fd77::1/64"), la).unwrap();
        let b = Stack::new(b_cfg(cfg("10.0.0.2/24", "fd77::2/64")), lb).unwrap();
        let mut p = Pair { a, b, now: Instant::ZERO };
        p.run_until(Duration::from_millis(1500), |_| false);
        p
    }

    fn run_until(&mut self, limit: Duration, mut f: impl FnMut(&mut Self) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if f(self) {
                return true;
            }
            self.now = self.now + Duration::from_micros(20);
            self.a.poll(self.now).unwrap();
            self.b.poll(self.now).unwrap();
        }
        f(self)
    }

    /// Connect a to `to`; the listener `l` of b accepts. (client, server) handles.
    fn connect(&mut self, l: net::TcpListener, to: SocketAddr) -> (TcpHandle, TcpHandle) {
        let c = self.a.tcp_connect(to).unwrap();
        let mut server = None;
        let ok = self.run_until(Duration::from_secs(5), |p| {
            server = server.or_else(|| p.b.tcp_accept(l));
            server.is_some() && p.a.tcp_connect_result(c).unwrap() == Some(Ok(()))
        });
        assert!(ok, "no connection to {to}: {:?}", self.a.tcp_connect_result(c));
        (c, server.unwrap())
    }

    /// Send `data` from `from` (a's handle) to `to` (b's handle); what b received.
    fn transfer(&mut self, from: TcpHandle, to: TcpHandle, data: &[u8]) -> Vec<u8> {
        let (mut sent, mut got) = (0, Vec::new());
        let mut buf = vec![0u8; 65536];
        let ok = self.run_until(Duration::from_secs(10), |p| {
            if sent < data.len() {
                sent += p.a.tcp_send(from, &data[sent..]).unwrap();
            }
            while let Recv::Data(n) = p.b.tcp_recv(to, &mut buf).unwrap() {
                got.extend_from_slice(&buf[..n]);
            }
            got.len() == data.len()
        });
        assert!(ok, "transfer incomplete: {} of {} bytes", got.len(), data.len());
        got
    }

    fn accounted(&self) {
        for s in [&self.a, &self.b] {
            s.counters().rx_accounting().check().unwrap();
        }
    }
}

fn pattern(n: usize, k: u32) -> Vec<u8> {
    (0..n as u32).map(|i| (i.wrapping_mul(k) ^ (i >> 11)) as u8).collect()
}

#[test]
fn one_listener_takes_ipv4_and_ipv6_connections_in_the_same_run() {
    let mut p = Pair::new(|c| c);
    let l = p.b.tcp_listen(80, 8).unwrap();
    let (c4, s4) = p.connect(l, SocketAddrV4::new(p.b.ip(), 80).into());
    let (c6, s6) = p.connect(l, (B6, 80).into());
    // Each side sees the other's address of the family it connected over.
    assert_eq!(p.b.tcp_peer(s4).unwrap().ip(), IpAddr::from([10, 0, 0, 1]));
    assert_eq!(p.b.tcp_peer(s6).unwrap().ip(), IpAddr::V6(A6));
    assert_eq!(p.b.tcp_local(s6).unwrap(), SocketAddr::from((B6, 80)));
    assert_eq!(p.a.tcp_local(c6).unwrap().ip(), IpAddr::V6(A6));
    assert_eq!(p.a.tcp_peer(c6).unwrap(), SocketAddr::from((B6, 80)));
    // The IPv6 header is 20 bytes longer: the MSS is 60 bytes under the MTU (with the
    // timestamp option, 12 less per segment).
    let (m4, m6) = (p.a.tcp_stats(c4).unwrap().mss, p.a.tcp_stats(c6).unwrap().mss);
    assert_eq!(m4 - m6, 20, "MSS over IPv4 {m4}, over IPv6 {m6}");
    assert!(m6 <= 1500 - 60, "MSS over IPv6 {m6}");

    let (d4, d6) = (pattern(700_000, 7), pattern(900_000, 13));
    assert!(p.transfer(c4, s4, &d4) == d4, "IPv4 bytes differ");
    assert!(p.transfer(c6, s6, &d6) == d6, "IPv6 bytes differ");
    // And back, from the accepted side.
    std::mem::swap(&mut p.a, &mut p.b);
    let back = pattern(300_000, 31);
    assert!(p.transfer(s6, c6, &back) == back, "IPv6 bytes back differ");
    std::mem::swap(&mut p.a, &mut p.b);
    assert_eq!(p.b.counters().get(Counter::tcp_passive_opens), 2);
    p.accounted();
}

#[test]
fn link_local_addresses_carry_connections_too() {
    let mut p = Pair::new(|c| c);
    let ll =
        p.b.ipv6_addrs().iter().map(|h| h.cidr.addr).find(|a| a.segments()[0] == 0xfe80).expect("a link-local address");
    let l = p.b.tcp_listen(7000, 4).unwrap();
    let (c, s) = p.connect(l, (ll, 7000).into());
    assert_eq!(p.b.tcp_local(s).unwrap().ip(), IpAddr::V6(ll));
    let d = pattern(100_000, 3);
    assert!(p.transfer(c, s, &d) == d);
    p.accounted();
}

#[test]
fn a_closed_port_answers_with_a_reset_over_ipv6() {
    let mut p = Pair::new(|c| c);
    let c = p.a.tcp_connect((B6, 81)).unwrap();
    assert!(p.run_until(Duration::from_secs(2), |p| p.a.tcp_connect_result(c).unwrap().is_some()));
    assert_eq!(p.a.tcp_connect_result(c).unwrap(), Some(Err(TcpError::Refused)));
    assert_eq!(p.b.counters().get(Counter::tcp_resets_sent), 1);
    assert_eq!(p.b.counters().get(Counter::rx_drop_tcp_no_session), 1);
    p.accounted();
}

#[test]
fn syn_cookies_open_ipv6_connections_when_the_half_open_queue_is_full() {
    let mut p = Pair::new(|mut c| {
        c.tcp.syn_backlog = 0;
        c
    });
    let l = p.b.tcp_listen(80, 8).unwrap();
    let (c, s) = p.connect(l, (B6, 80).into());
    assert!(p.b.counters().get(Counter::tcp_syncookies_sent) >= 1);
    assert!(p.b.counters().get(Counter::tcp_syncookies_accepted) >= 1);
    let d = pattern(50_000, 5);
    assert!(p.transfer(c, s, &d) == d);
    p.accounted();
}

#[test]
fn an_ipv6_connect_needs_a_usable_ipv6_address_and_a_route() {
    let (la, _lb) = mem::pair(LinkConfig::default());
    let mut v4_only = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    assert!(matches!(v4_only.tcp_connect((B6, 80)), Err(ConnectError::NoRoute(IpAddr::V6(a))) if a == B6));
    let mut p = Pair::new(|c| c);
    let off_link: Ipv6Addr = "2001:db8::1".parse().unwrap();
    assert!(matches!(p.a.tcp_connect((off_link, 80)), Err(ConnectError::NoRoute(_))), "no default router");
    assert!(matches!(p.a.tcp_connect((Ipv6Addr::UNSPECIFIED, 80)), Err(ConnectError::NoRoute(_))));
    assert!(matches!(p.a.tcp_connect(("ff02::1".parse::<Ipv6Addr>().unwrap(), 80)), Err(ConnectError::NoRoute(_))));
    assert!(matches!(p.a.tcp_connect((B6, 0)), Err(ConnectError::NoRoute(_))));
}

/// A Packet Too Big from a router between the hosts, about `quoted` (an IPv6 packet a sent),
/// to a, as an Ethernet frame to a's MAC.
fn packet_too_big(a: &Host, router: Ipv6Addr, mtu: u32, quoted: &[u8]) -> Vec<u8> {
    let quote = &quoted[..quoted.len().min(1280 - 48)];
    let icmp = wire::Icmpv6Repr { message: wire::Icmpv6Message::PacketTooBig { mtu }, data: quote };
    let mut f = vec![0u8; 14 + 40 + icmp.buffer_len()];
    let eth =
        wire::EthernetRepr { src: wire::MacAddr([2, 0, 0, 0, 0, 0x99]), dst: a.mac(), ethertype: 0x86dd, vlan: None };
    eth.emit(&mut f).unwrap();
    let ip = wire::Ipv6Repr {
        src: router,
        dst: A6,
        next_header: 58,
        payload_len: icmp.buffer_len(),
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    };
    ip.emit(&mut f[14..]).unwrap();
    icmp.emit(&mut f[54..], router, A6).unwrap();
    f
}

/// The IPv6 TCP data segments (whole IPv6 packets) waiting on b's side of the link, taken off it.
fn take_data_packets(b: &mut Host, now: Instant) -> Vec<Vec<u8>> {
    let mut batch = link::FrameBatch::new(256, 2048);
    link::Link::rx_batch(b.link_mut(), now, &mut batch).unwrap();
    batch
        .iter()
        .filter(|f| f.len() > 14 + 40 + 32 && f[12..14] == [0x86, 0xdd] && f[14 + 6] == 6)
        .map(|f| f[14..].to_vec())
        .collect()
}

#[test]
fn packet_too_big_about_a_segment_in_flight_shrinks_the_mss_and_the_data_still_arrives() {
    let mut p = Pair::new(|c| c);
    let l = p.b.tcp_listen(80, 8).unwrap();
    let (c, s) = p.connect(l, (B6, 80).into());
    let before = p.a.tcp_stats(c).unwrap().mss;
    assert!(before > 1220, "MSS {before} before the Packet Too Big");
    let data = pattern(200_000, 5);
    let mut sent = p.a.tcp_send(c, &data).unwrap();
    // Only a polls: its segments wait on the link, where b's side takes them off (lost).
    p.now = p.now + Duration::from_micros(20);
    p.a.poll(p.now).unwrap();
    let in_flight = take_data_packets(&mut p.b, p.now);
    assert!(!in_flight.is_empty(), "a sent no full-sized segment");
    let router: Ipv6Addr = "fd77::fe".parse().unwrap();
    // A Packet Too Big quoting a segment that is not in flight (sequence number moved) is
    // ignored (RFC 5927): forged errors cannot shrink a connection.
    let mut forged = in_flight[0].clone();
    forged[40 + 4..40 + 8].copy_from_slice(&0xdead_beefu32.to_be_bytes());
    p.a.inject(&packet_too_big(&p.a, router, 1280, &forged)).unwrap();
    assert_eq!(p.a.tcp_stats(c).unwrap().mss, before, "a forged Packet Too Big shrank the MSS");
    // One quoting a real segment in flight shrinks it to fit 1,280 bytes.
    p.a.inject(&packet_too_big(&p.a, router, 1280, &in_flight[0])).unwrap();
    let after = p.a.tcp_stats(c).unwrap().mss;
    assert!(after <= 1280 - 60, "MSS {after} after a Packet Too Big of 1280");
    // The lost segments are sent again at the new size, and everything arrives intact.
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let ok = p.run_until(Duration::from_secs(20), |p| {
        if sent < data.len() {
            sent += p.a.tcp_send(c, &data[sent..]).unwrap();
        }
        while let Recv::Data(n) = p.b.tcp_recv(s, &mut buf).unwrap() {
            got.extend_from_slice(&buf[..n]);
        }
        got.len() == data.len()
    });
    assert!(ok && got == data, "{} of {} bytes arrived intact", got.len(), data.len());
    assert!(p.a.tcp_stats(c).unwrap().mss <= 1280 - 60);
}
