//! Path MTU discovery for TCP, exact segments in virtual time (RFC 1191 6.4, RFC 5927): an
//! ICMP "fragmentation needed" quoting a segment in flight shrinks the MSS and what was in
//! flight is sent again in segments that fit; one quoting nothing in flight changes nothing.

mod tcp_behaviour_util;

use net::Counter;
use tcp_behaviour_util::*;
use wire::ethernet::ethertype;
use wire::ipv4::protocol;
use wire::{EthernetRepr, IcmpMessage, IcmpRepr, Ipv4Repr};

/// The frame of an ICMP fragmentation-needed message from the peer quoting `quoted` (the IP
/// packet of one of the host's segments).
fn frag_needed(b: &Bench, quoted: &[u8], mtu: u16) -> Vec<u8> {
    let msg = IcmpRepr { message: IcmpMessage::DestUnreachable { code: 4, next_hop_mtu: mtu }, data: quoted };
    let mut l4 = vec![0u8; msg.buffer_len()];
    msg.emit(&mut l4).unwrap();
    let ip = Ipv4Repr {
        src: PEER,
        dst: b.host.ip(),
        protocol: protocol::ICMP,
        payload_len: l4.len(),
        ttl: 64,
        ident: 1,
        dont_frag: false,
        dscp_ecn: 0,
    };
    let mut f = vec![0u8; 14 + 20 + l4.len()];
    EthernetRepr { src: PEER_MAC, dst: b.host.mac(), ethertype: ethertype::IPV4, vlan: None }.emit(&mut f).unwrap();
    ip.emit(&mut f[14..]).unwrap();
    f[34..].copy_from_slice(&l4);
    f
}

/// What a router quotes of the host's 1500-byte segment at `seq`: its IPv4 header and the
/// first 8 bytes of TCP (ports and sequence number).
fn quote(b: &Bench, c: &Conn, seq: u32) -> Vec<u8> {
    let ip = Ipv4Repr {
        src: b.host.ip(),
        dst: PEER,
        protocol: protocol::TCP,
        payload_len: 1480,
        ttl: 64,
        ident: 9,
        dont_frag: true,
        dscp_ecn: 0,
    };
    let mut q = vec![0u8; 28];
    ip.emit(&mut q).unwrap();
    q[20..22].copy_from_slice(&c.host_port.to_be_bytes());
    q[22..24].copy_from_slice(&c.peer_port.to_be_bytes());
    q[24..28].copy_from_slice(&seq.to_be_bytes());
    q
}

#[test]
fn fragmentation_needed_for_a_segment_in_flight_shrinks_the_mss_and_resends() {
    let mut b = Bench::new(config());
    let (c, _, _) = passive_open(&mut b, 80, 40000, PeerOpts::default(), ms(1));
    assert_eq!(b.host.tcp_send(c.h, &pattern(4000)).unwrap(), 4000);
    let out = b.flush();
    assert_eq!(out.iter().map(|s| s.len()).collect::<Vec<_>>(), vec![1460, 1460, 1080]);
    // A message quoting a sequence number not in flight is not believed (RFC 5927).
    let stale = frag_needed(&b, &quote(&b, &c, c.iss.wrapping_sub(5000)), 1000);
    assert_eq!(b.send_frame(stale), vec![]);
    assert_eq!(b.host.path_mtu(PEER), 1500);
    // The real one: everything in flight goes again in segments of 1000 - 40 bytes.
    let real = frag_needed(&b, &quote(&b, &c, out[0].seq()), 1000);
    let resent = b.send_frame(real);
    assert_eq!(b.host.path_mtu(PEER), 1000);
    assert_eq!(b.counter(Counter::icmp_pmtu_updates), 1);
    assert_eq!(b.host.tcp_stats(c.h).unwrap().mss, 960);
    let seqs: Vec<(u32, usize)> = resent.iter().map(|s| (s.seq() - c.iss - 1, s.len())).collect();
    assert_eq!(seqs, vec![(0, 960), (960, 960), (1920, 960), (2880, 960), (3840, 160)]);
}
