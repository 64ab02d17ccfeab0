//! An RDMA node fed a sequence of packets (2-byte length prefix, 1-byte peer choice each);
//! a packet whose first byte is even gets a valid CRC fixed up, so the fuzzer reaches the
//! receiver's and sender's logic past the checksum. Every datagram must be accounted for
//! and nothing may be written outside the region.
#![no_main]

use libfuzzer_sys::fuzz_target;
use link::{mem, Instant, LinkConfig};
use net::{Config, Stack};
use rdma::wire::{packet_crc, HEADER_LEN};
use rdma::{Counter, Peer, RdmaConfig, RdmaNode};

fuzz_target!(|data: &[u8]| {
    let (la, _lb) = mem::pair(LinkConfig::default().depth(64));
    let mut sc = Config::host("10.0.0.2/24");
    sc.socket_rx_queue = 8;
    sc.arp_max_pending = 8;
    sc.arp_cache_size = 8;
    let mut stack = Stack::new(sc, la).expect("valid config");
    // Small tables keep set-up cheap, so most time goes into the packets.
    let cfg = RdmaConfig {
        escape_capacity: 8,
        recent_capacity: 16,
        max_ops: 8,
        max_in_flight: 64,
        command_queue: 8,
        max_regions: 2,
        ..RdmaConfig::default().registration(64, 64)
    };
    let mut node = RdmaNode::new(&mut stack, cfg).expect("valid config");
    let key = node.register(vec![0u8; 4096]).expect("room");
    let mut rest = data;
    let mut t = 0;
    while rest.len() >= 3 {
        let n = (u16::from_be_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 3);
        let who = rest[2];
        let mut p = rest[3..3 + n].to_vec();
        rest = &rest[3 + n..];
        if who % 2 == 0 && p.len() >= HEADER_LEN {
            // Aim at the registered region most of the time.
            if who % 4 == 0 {
                p[24..28].copy_from_slice(&key.0.to_be_bytes());
            }
            let plen = (u16::from_be_bytes([p[6], p[7]]) as usize).min(p.len() - HEADER_LEN);
            let crc = packet_crc(&p, &p[HEADER_LEN..HEADER_LEN + plen]);
            p[44..48].copy_from_slice(&crc.to_be_bytes());
        }
        let peer = Peer::Udp(std::net::SocketAddrV4::new([10, 0, 0, 1 + who % 3].into(), 4791).into());
        node.handle_packet(peer, &p, Instant::from_micros(t));
        t += 100;
        if t % 1000 == 0 {
            node.poll(&mut stack, Instant::from_micros(t)).expect("mem link does not fail");
        }
    }
    node.poll(&mut stack, Instant::from_millis(10_000)).expect("mem link does not fail");
    let c = node.counters();
    assert_eq!(c.get(Counter::rx_datagrams), c.get(Counter::rx_packets) + c.parse_drops());
    assert_eq!(c.verdicts(), c.get(Counter::rx_packets));
    assert_eq!(node.region(key).map(|r| r.len()), Some(4096));
});
