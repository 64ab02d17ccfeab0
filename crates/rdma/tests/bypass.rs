//! The receive bypass over UDP: the stack hands each datagram to the node's handler during
//! its own poll, which places the payload straight from the frame into the region (no socket
//! queue), and every datagram stays accounted for. Also the defaults: a large write goes out
//! in registered segments, each completed at the receiver on its own.

mod common;

use common::{assert_accounted, drain, pattern, Net};
use rdma::config::DEFAULT_SEGMENT;
use rdma::{CompletionKind, Counter, RdmaConfig, Status};
use std::time::Duration;

#[test]
fn datagrams_are_placed_during_the_stack_poll_and_large_writes_are_registered_per_segment_by_default() {
    const LEN: usize = 1 << 20;
    let mut net = Net::new(2, None, RdmaConfig::default());
    let key = net.nodes[1].register(vec![0u8; LEN]).unwrap();
    let dst = net.addr(1);
    // Warm ARP up so the write's packets flow at once.
    net.nodes[0].post_write(dst, key, 0, vec![1u8; 10]).unwrap();
    assert!(net.run_until(Duration::from_secs(1), |n| n.nodes[0].completions().poll().is_some()));
    drain(net.nodes[1].notifications(), &mut Vec::new());
    let data = pattern(LEN, 5);
    net.nodes[0].post_write(dst, key, 0, data.clone()).unwrap();
    net.step();
    // Only the stacks run now: the receiver's node is not polled, yet its packets land.
    let before = net.nodes[1].counters().get(Counter::rx_bytes_placed);
    for _ in 0..50 {
        net.tb.step().unwrap();
    }
    let placed = net.nodes[1].counters().get(Counter::rx_bytes_placed) - before;
    assert!(placed > 0, "payload placed while only the stack was polled");
    let mut notes = Vec::new();
    let mut sent = Vec::new();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        drain(n.nodes[1].notifications(), &mut notes);
        drain(n.nodes[0].completions(), &mut sent);
        !sent.is_empty()
    }));
    drain(net.nodes[1].notifications(), &mut notes);
    assert_eq!(sent[0].status, Status::Ok);
    assert!(*net.nodes[1].region(key).unwrap() == data[..], "region differs");
    // Registered per segment by default: one local completion per 256 KiB segment.
    assert_eq!(notes.len(), LEN / DEFAULT_SEGMENT, "{notes:?}");
    for (i, c) in notes.iter().enumerate() {
        assert_eq!((c.kind, c.segment, c.len), (CompletionKind::RecvRegistered, true, DEFAULT_SEGMENT as u64));
        assert_eq!(c.offset, (i * DEFAULT_SEGMENT) as u64);
    }
    // Every UDP datagram the stack delivered reached the node, none was queued or lost.
    let id = net.ids[1];
    let stack = net.tb.host(id).counters().clone();
    let c = net.nodes[1].counters();
    assert_eq!(stack.get(net::Counter::udp_rx_datagrams), c.get(Counter::rx_datagrams));
    assert_eq!(stack.get(net::Counter::rx_drop_udp_rx_queue_full) + stack.get(net::Counter::rx_drop_udp_mem_limit), 0);
    assert_eq!(c.get(Counter::drop_busy), 0);
    assert_accounted(&net.nodes[1]);
    assert_accounted(&net.nodes[0]);
}

#[test]
fn a_region_held_across_the_stack_poll_drops_counted_datagrams_and_the_write_still_completes() {
    let mut net = Net::new(2, None, RdmaConfig::default());
    let key = net.nodes[1].register(vec![0u8; 200_000]).unwrap();
    let dst = net.addr(1);
    let data = pattern(200_000, 9);
    net.nodes[0].post_write(dst, key, 0, data.clone()).unwrap();
    // Run until packets flow, then hold the receiver's region while the stacks run.
    assert!(net.run_until(Duration::from_secs(1), |n| n.nodes[1].counters().get(Counter::rx_packets) > 0));
    {
        let held = net.nodes[1].region(key).unwrap();
        for _ in 0..20 {
            net.tb.step().unwrap();
        }
        drop(held);
    }
    let c = net.nodes[1].counters();
    assert!(c.get(Counter::drop_busy) > 0, "datagrams arrived while the region was held");
    let mut sent = Vec::new();
    assert!(net.run_until(Duration::from_secs(5), |n| {
        drain(n.nodes[0].completions(), &mut sent);
        !sent.is_empty()
    }));
    assert_eq!(sent[0].status, Status::Ok, "the sender resent what was dropped");
    assert!(*net.nodes[1].region(key).unwrap() == data[..]);
    assert_accounted(&net.nodes[1]);
}
