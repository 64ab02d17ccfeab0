//! A receiver fed random and mutated RDMA packets keeps serving: nothing panics, every
//! datagram is accounted for under one reason, and a legitimate write afterwards lands.

mod common;

use common::{assert_accounted, drain, pattern, Net};
use rdma::wire::{NackReason, PacketType, RdmaRepr, FLAGS_ALL, HEADER_LEN};
use rdma::{Counter, Peer, RdmaConfig, Status};
use std::net::SocketAddrV4;
use std::time::Duration;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A packet that is well formed on the wire (valid CRC), with fields drawn to hit every
/// branch of the receiver: right and wrong keys, consistent and inconsistent lengths,
/// every type and flag.
fn plausible(rng: &mut Rng, key: u32) -> Vec<u8> {
    let types = [
        PacketType::RegisterFirst,
        PacketType::Data,
        PacketType::Notify,
        PacketType::Ack,
        PacketType::Nack(NackReason::ALL[rng.below(8) as usize]),
    ];
    let count = 1 + rng.below(4) as u32;
    let stride = [16u16, 100, 1000][rng.below(3) as usize];
    let op_len = (count - 1) * u32::from(stride) + 1 + rng.below(u64::from(stride)) as u32;
    let index = if rng.below(8) == 0 { rng.next() as u32 } else { rng.below(u64::from(count) + 1) as u32 };
    let r = RdmaRepr {
        ty: types[rng.below(5) as usize],
        flags: rng.next() as u8 & FLAGS_ALL,
        op_id: rng.below(6),
        index,
        count,
        key: if rng.below(4) == 0 { rng.next() as u32 } else { key },
        op_len: if rng.below(8) == 0 { rng.next() as u32 } else { op_len },
        offset: if rng.below(8) == 0 { rng.next() } else { rng.below(60_000) },
        stride,
        span: 0,
    };
    let plen =
        if index + 1 < count { usize::from(stride) } else { (op_len - (count - 1) * u32::from(stride)) as usize };
    let plen = if rng.below(6) == 0 { rng.below(1200) as usize } else { plen.min(1400) };
    let payload = pattern(plen, rng.next());
    let mut b = vec![0u8; HEADER_LEN + plen];
    r.emit(&mut b, &payload).unwrap();
    b
}

fn mutate(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    match rng.below(4) {
        0 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
        1 => {
            for _ in 0..=rng.below(4) {
                let i = rng.below(b.len() as u64) as usize;
                if !b.is_empty() {
                    b[i] = rng.next() as u8;
                }
            }
        }
        2 => b = (0..rng.below(200)).map(|_| rng.next() as u8).collect(),
        _ => {}
    }
    b
}

#[test]
fn random_and_mutated_packets_are_counted_and_the_node_keeps_serving() {
    let mut net = Net::new(2, None, RdmaConfig::default());
    let victim = net.nodes[1].register(vec![0u8; 64 * 1024]).unwrap();
    let spare = net.nodes[1].register(vec![0u8; 4096]).unwrap();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    // Straight into the node, from a few made-up peers.
    for i in 0..20_000 {
        let p = plausible(&mut rng, victim.0);
        let p = if i % 2 == 0 { mutate(&mut rng, p) } else { p };
        let peer = Peer::Udp(SocketAddrV4::new([10, 0, 9, (i % 5) as u8].into(), 4791).into());
        let now = net.now();
        net.nodes[1].handle_packet(peer, &p, now);
    }
    // And over the network from a plain UDP socket on host 0, through the poll path.
    let dst = match net.addr(1) {
        Peer::Udp(a) => a,
        Peer::Eth(_) => unreachable!(),
    };
    let raw = net.tb.host(net.ids[0]).udp_bind(5555).unwrap();
    for _ in 0..200 {
        for _ in 0..10 {
            let p = plausible(&mut rng, victim.0);
            let p = mutate(&mut rng, p);
            let _ = net.tb.host(net.ids[0]).udp_send_to(raw, dst, &p);
        }
        net.step();
    }
    net.run_for(Duration::from_millis(50));
    let c = net.nodes[1].counters();
    assert!(c.get(Counter::rx_datagrams) >= 20_000 + 1000, "the network path delivered garbage too");
    assert!(c.parse_drops() > 0 && c.get(Counter::drop_bad_crc) > 0 && c.get(Counter::drop_truncated) > 0);
    assert!(c.get(Counter::nack_malformed) > 0 && c.get(Counter::nack_out_of_bounds) > 0);
    assert!(c.get(Counter::nack_unknown_key) > 0 && c.get(Counter::drop_ack_stray) > 0);
    assert!(c.get(Counter::rx_data_placed) > 0, "well-formed writes into the victim were placed");
    assert_accounted(&net.nodes[1]);
    // The spare region saw nothing, and a real write into it still works.
    assert!(net.nodes[1].region(spare).unwrap().iter().all(|b| *b == 0));
    let to = net.addr(1);
    net.nodes[0].post_write(to, spare, 10, pattern(3000, 77)).unwrap();
    let mut done = Vec::new();
    assert!(net.run_until(Duration::from_secs(1), |n| {
        drain(n.nodes[0].completions(), &mut done);
        !done.is_empty()
    }));
    assert_eq!(done[0].status, Status::Ok);
    assert!(net.nodes[1].region(spare).unwrap()[10..3010] == pattern(3000, 77)[..]);
    assert_accounted(&net.nodes[1]);
}
