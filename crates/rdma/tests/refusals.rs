//! Writes that must be refused: wrong keys, ranges outside a region, deregistered regions
//! (also while the write is in flight), full tables, and a receiver that is not there.
//! Memory is never touched by a refused write.

mod common;

use common::{assert_accounted, drain, pattern, Net};
use link::impair::Impairment;
use link::{mem, Instant, LinkConfig};
use net::{Config, Stack};
use rdma::wire::{RdmaRepr, FLAG_REGISTERED};
use rdma::{Completion, Counter, NackReason, Peer, RdmaConfig, RdmaNode, RegionKey, Status, WriteOptions};
use std::time::Duration;

fn one_write(net: &mut Net, key: RegionKey, offset: u64, len: usize, reg: Option<bool>) -> Completion {
    let to = net.addr(1);
    net.nodes[0].post_write_with(to, key, offset, pattern(len, 1), WriteOptions { registered: reg }).unwrap();
    let mut done = Vec::new();
    assert!(net.run_until(Duration::from_secs(3), |n| {
        drain(n.nodes[0].completions(), &mut done);
        !done.is_empty()
    }));
    done[0]
}

#[test]
fn bad_keys_and_ranges_are_nacked_and_memory_untouched() {
    let mut net = Net::new(2, None, RdmaConfig::default());
    let key = net.nodes[1].register(vec![7u8; 10_000]).unwrap();
    let gone = net.nodes[1].register(vec![9u8; 100]).unwrap();
    assert_eq!(&net.nodes[1].deregister(gone).unwrap()[..], &[9u8; 100][..]);
    type Case = (RegionKey, u64, usize, Option<bool>, NackReason, Counter);
    let cases: &[Case] = &[
        (RegionKey(0x00ff_0033), 0, 100, None, NackReason::UnknownKey, Counter::nack_unknown_key),
        (RegionKey(0x00ff_0033), 0, 5000, Some(false), NackReason::UnknownKey, Counter::nack_unknown_key),
        (gone, 0, 10, None, NackReason::Deregistered, Counter::nack_deregistered),
        (gone, 0, 3000, Some(false), NackReason::Deregistered, Counter::nack_deregistered),
        (key, 9_990, 11, None, NackReason::OutOfBounds, Counter::nack_out_of_bounds),
        (key, 5000, 5001, Some(false), NackReason::OutOfBounds, Counter::nack_out_of_bounds),
        (key, u64::MAX - 10, 5, None, NackReason::OutOfBounds, Counter::nack_out_of_bounds),
    ];
    for &(k, off, len, reg, why, counter) in cases {
        let before = net.nodes[1].counters().get(counter);
        let c = one_write(&mut net, k, off, len, reg);
        assert_eq!(c.status, Status::Nacked(why), "{k:?} {off} {len}");
        assert!(net.nodes[1].counters().get(counter) > before, "{why:?} counted");
    }
    assert!(net.nodes[1].region(key).unwrap().iter().all(|b| *b == 7), "refused writes touched memory");
    assert!(net.nodes[1].notifications().poll().is_none(), "nothing refused was posted");
    // A good write still works afterwards, right up to the last byte.
    let c = one_write(&mut net, key, 9_990, 10, None);
    assert_eq!(c.status, Status::Ok);
    assert_eq!(&net.nodes[1].region(key).unwrap()[9_990..], &pattern(10, 1)[..]);
    assert_eq!(net.nodes[0].counters().get(Counter::tx_writes_failed), cases.len() as u64);
    assert_accounted(&net.nodes[1]);
    assert_accounted(&net.nodes[0]);
}

#[test]
fn deregistration_while_a_write_is_in_flight_is_safe() {
    // A slow link (200 µs each way) keeps a 500 KB write in flight for a while.
    let imp = Impairment { delay: Duration::from_micros(200), seed: 3, ..Impairment::default() };
    let mut net = Net::new(2, Some(imp), RdmaConfig::default().window(16));
    let key = net.nodes[1].register(vec![0u8; 600_000]).unwrap();
    let to = net.addr(1);
    net.nodes[0].post_write(to, key, 0, pattern(500_000, 2)).unwrap();
    assert!(net.run_until(Duration::from_secs(1), |n| n.nodes[1].counters().get(Counter::rx_data_placed) > 40));
    let buf = net.nodes[1].deregister(key).unwrap();
    // The slot is reused at once under a new key: late packets with the old key must not reach it.
    let fresh = net.nodes[1].register(vec![0u8; 600_000]).unwrap();
    assert_ne!(fresh, key);
    let mut done = Vec::new();
    assert!(net.run_until(Duration::from_secs(3), |n| {
        drain(n.nodes[0].completions(), &mut done);
        !done.is_empty() && n.nodes[0].packets_in_flight() == 0
    }));
    net.run_for(Duration::from_millis(50));
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, Status::Nacked(NackReason::Deregistered));
    assert!(net.nodes[1].region(fresh).unwrap().iter().all(|b| *b == 0), "new region untouched");
    // What landed before deregistration is in the returned buffer, and only the write's bytes.
    let data = pattern(500_000, 2);
    let placed = buf.iter().zip(&data).filter(|(a, b)| a == b).count();
    assert!(placed > 40 * 1000);
    assert!(buf[500_000..].iter().all(|b| *b == 0));
    let c = net.nodes[1].counters();
    assert!(c.get(Counter::nack_deregistered) > 0);
    assert_accounted(&net.nodes[1]);
}

#[test]
fn a_receiver_that_is_not_there_gives_a_timeout_completion() {
    let cfg = RdmaConfig {
        rto: Duration::from_micros(200),
        max_rto: Duration::from_millis(2),
        max_tries: 5,
        ..RdmaConfig::default()
    };
    let mut net = Net::new(2, None, cfg);
    // Host 1 closes its RDMA socket: datagrams to it are dropped (ICMP port unreachable).
    let node = net.nodes.remove(1);
    let id = net.ids[1];
    let to = node.address(net.tb.host(id));
    node.close(net.tb.host(id)).unwrap();
    net.ids.truncate(1);
    let c = {
        net.nodes[0].post_write(to, RegionKey(0x0001_0001), 0, vec![1u8; 5000]).unwrap();
        let mut done = Vec::new();
        assert!(net.run_until(Duration::from_secs(1), |n| {
            drain(n.nodes[0].completions(), &mut done);
            !done.is_empty()
        }));
        done[0]
    };
    assert_eq!(c.status, Status::TimedOut);
    assert_eq!(net.nodes[0].packets_in_flight(), 0);
    assert_eq!(net.nodes[0].counters().get(Counter::tx_writes_failed), 1);
}

/// A node on a stack whose far end nobody polls: packets are fed straight to the node.
fn bench_node(cfg: RdmaConfig) -> (RdmaNode, Stack<mem::MemLink>, mem::MemLink) {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut s = Stack::new(Config::host("10.0.0.2/24"), la).unwrap();
    let n = RdmaNode::new(&mut s, cfg).unwrap();
    (n, s, lb)
}

fn packet(r: RdmaRepr, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 48 + payload.len()];
    r.emit(&mut b, payload).unwrap();
    b
}

#[test]
fn full_registration_table_and_escape_channel_are_nacked_and_counted() {
    let cfg = RdmaConfig { escape_timeout: Duration::from_millis(1), ..RdmaConfig::default().registration(64, 64) };
    let (mut node, mut stack, _far) = bench_node(cfg);
    let key = node.register(vec![0u8; 1 << 20]).unwrap();
    let peer = Peer::Udp("10.0.0.1:4791".parse().unwrap());
    let base = RdmaRepr {
        ty: rdma::wire::PacketType::RegisterFirst,
        flags: FLAG_REGISTERED,
        op_id: 0,
        index: 0,
        count: 2,
        key: key.0,
        op_len: 200,
        offset: 0,
        stride: 100,
        span: 0,
    };
    // 65 ops register and never complete: the 65th finds the table full.
    for op in 0..65u64 {
        node.handle_packet(peer, &packet(RdmaRepr { op_id: op, offset: op * 200, ..base }, &[1; 100]), Instant::ZERO);
    }
    let c = node.counters();
    assert_eq!((c.get(Counter::rx_ops_registered), c.get(Counter::nack_table_full)), (64, 1));
    assert_eq!(node.registered_in_flight(), 64);
    // 65 early packets of ops not registered: the 65th finds the escape channel full.
    for op in 100..165u64 {
        let r = RdmaRepr { ty: rdma::wire::PacketType::Data, op_id: op, index: 1, offset: op * 200, ..base };
        node.handle_packet(peer, &packet(r, &[2; 100]), Instant::ZERO);
    }
    let c = node.counters();
    assert_eq!((c.get(Counter::rx_escape_parked), c.get(Counter::nack_escape_full)), (64, 1));
    // Parked packets never reached memory; the registered first packets did.
    {
        let mem = node.region(key).unwrap();
        assert!(mem[100 * 200..].iter().all(|b| *b == 0));
        assert_eq!(mem[0], 1);
    }
    // Timers: parked packets expire, idle entries are freed; the node keeps serving.
    node.poll(&mut stack, Instant::from_millis(2)).unwrap();
    assert_eq!(node.counters().get(Counter::drop_escape_expired), 64);
    node.poll(&mut stack, Instant::from_secs_for_test(1)).unwrap();
    assert_eq!(node.counters().get(Counter::drop_entry_expired), 64);
    assert_eq!(node.registered_in_flight(), 0);
    node.handle_packet(
        peer,
        &packet(RdmaRepr { op_id: 999, count: 1, op_len: 5, ..base }, &[3; 5]),
        Instant::from_secs_for_test(1),
    );
    assert_eq!(node.counters().get(Counter::rx_completed_registered), 1);
    assert_eq!(node.notifications().poll().unwrap().op_id, 999);
    assert_accounted(&node);
}

trait Secs {
    fn from_secs_for_test(s: u64) -> Instant;
}
impl Secs for Instant {
    fn from_secs_for_test(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }
}

#[test]
fn a_full_notification_queue_refuses_new_ops_until_the_application_takes_completions() {
    let cfg = RdmaConfig { notify_capacity: 65, ..RdmaConfig::default().registration(64, 64) };
    let (mut node, _stack, _far) = bench_node(cfg);
    let key = node.register(vec![0u8; 1 << 16]).unwrap();
    let peer = Peer::Udp("10.0.0.1:4791".parse().unwrap());
    let one = |op: u64, ty| RdmaRepr {
        ty,
        flags: 0,
        op_id: op,
        index: 0,
        count: 1,
        key: key.0,
        op_len: 4,
        offset: op * 4,
        stride: 4,
        span: 0,
    };
    // 65 single-packet registered ops complete and wait in the queue: it is full.
    for op in 0..65u64 {
        let r = RdmaRepr { flags: FLAG_REGISTERED, ..one(op, rdma::wire::PacketType::RegisterFirst) };
        node.handle_packet(peer, &packet(r, &[1; 4]), Instant::ZERO);
    }
    assert_eq!(node.notifications().len(), 65);
    let r = RdmaRepr { flags: FLAG_REGISTERED, ..one(100, rdma::wire::PacketType::RegisterFirst) };
    node.handle_packet(peer, &packet(r, &[2; 4]), Instant::ZERO);
    // A Notify of an unregistered op is refused the same way.
    let n = RdmaRepr { index: 1, ..one(101, rdma::wire::PacketType::Notify) };
    node.handle_packet(peer, &packet(n, &[]), Instant::ZERO);
    assert_eq!(node.counters().get(Counter::nack_queue_full), 2);
    assert_eq!(node.region(key).unwrap()[400], 0, "the refused op did not land");
    // The application takes one completion: the retried op goes through, once.
    assert!(node.notifications().poll().is_some());
    node.handle_packet(peer, &packet(r, &[2; 4]), Instant::ZERO);
    assert_eq!(node.region(key).unwrap()[400], 2);
    assert_eq!(node.notifications().len(), 65);
    assert_eq!(node.counters().get(Counter::rx_completed_registered), 66);
    assert_accounted(&node);
}
