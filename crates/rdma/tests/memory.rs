//! Every queue an RDMA node grows stays within the bound its configuration sets, under a
//! hostile sender, a lossy one and an application that stops taking completions; what
//! was refused beyond a bound is counted by reason.

mod common;

use common::{assert_accounted, drain, pattern, Net};
use link::impair::Impairment;
use rdma::wire::{PacketType, RdmaRepr, FLAG_REGISTERED, HEADER_LEN};
use rdma::{Counter, Peer, RdmaConfig, RdmaError, RdmaNode, Status};
use std::net::SocketAddrV4;
use std::time::Duration;

/// Small tables, so that each bound is reached quickly.
fn small() -> RdmaConfig {
    RdmaConfig {
        escape_capacity: 16,
        notify_capacity: 200,
        recent_capacity: 100,
        rx_batch: 8,
        ..RdmaConfig::default().registration(64, 64)
    }
}

fn packet(ty: PacketType, registered: bool, op_id: u64, index: u32, count: u32, key: u32) -> Vec<u8> {
    let stride = 100u16;
    let r = RdmaRepr {
        ty,
        flags: if registered { FLAG_REGISTERED } else { 0 },
        op_id,
        index,
        count,
        key,
        op_len: count * u32::from(stride),
        offset: 0,
        stride,
        span: 0,
    };
    let plen = if ty == PacketType::Notify { 0 } else { usize::from(stride) };
    let mut b = vec![0u8; HEADER_LEN + plen];
    r.emit(&mut b, &pattern(plen, op_id)).unwrap();
    b
}

/// No queue of `node` is past its bound; returns the bytes its queues hold.
fn assert_bounded(node: &RdmaNode) -> usize {
    let m = node.memory();
    assert!(m.over_bound().is_empty(), "queues past their bound: {:?}", m.over_bound());
    assert!(m.bytes() <= m.bound_bytes());
    m.bytes()
}

#[test]
fn a_hostile_sender_fills_every_receive_queue_to_its_bound_and_no_further() {
    let mut net = Net::new(2, None, small());
    let key = net.nodes[1].register(vec![0u8; 1 << 20]).unwrap().0;
    let bound = net.nodes[1].memory().bound_bytes();
    let mut peak = 0;
    // 400 spoofed sources, each: an op that registers and never finishes, an early packet
    // of an op that never registers, a one-packet op that completes, an unregistered op's
    // Notify. Nobody polls the node (its answers pile up) or takes its notifications.
    for i in 0..400u64 {
        let peer = Peer::Udp(SocketAddrV4::new([10, 9, (i / 200) as u8, (i % 200) as u8].into(), 18791).into());
        let now = net.now();
        let pkts = [
            packet(PacketType::RegisterFirst, true, 4 * i, 0, 4, key),
            packet(PacketType::Data, true, 4 * i + 1, 2, 4, key),
            packet(PacketType::RegisterFirst, true, 4 * i + 2, 0, 1, key),
            packet(PacketType::Notify, false, 4 * i + 3, 1, 1, key),
        ];
        for p in &pkts {
            net.nodes[1].handle_packet(peer, p, now);
            peak = peak.max(assert_bounded(&net.nodes[1]));
        }
    }
    let m = net.nodes[1].memory();
    for (name, full) in [("registered_ops", 64), ("escape", 16), ("answers", 8 * 16), ("recent_ops", 100)] {
        assert_eq!(m.get(name).unwrap().len, full, "{name} is at its bound");
    }
    // Completions waiting plus registered ops fill notify_capacity.
    assert_eq!(m.get("notifications").unwrap().len + m.get("registered_ops").unwrap().len, 200);
    let c = net.nodes[1].counters();
    for why in [
        Counter::nack_table_full,
        Counter::nack_escape_full,
        Counter::nack_queue_full,
        Counter::recent_evicted,
        Counter::drop_answer_backlog,
    ] {
        assert!(c.get(why) > 0, "{} counted", why.name());
    }
    assert_accounted(&net.nodes[1]);
    assert!(peak <= bound, "peak {peak} B within the bound {bound} B");
    // Time frees what the hostile sender left: escape timers and idle entries.
    net.run_for(Duration::from_secs(1));
    let c = net.nodes[1].counters();
    assert_eq!(c.get(Counter::drop_escape_expired), 16);
    assert_eq!(c.get(Counter::drop_entry_expired), 64);
    let m = net.nodes[1].memory();
    assert_eq!(
        (m.get("escape").unwrap().len, m.get("registered_ops").unwrap().len, m.get("answers").unwrap().len),
        (0, 0, 0)
    );
    // The application takes its notifications; a real write then lands and is notified.
    let mut seen = Vec::new();
    drain(net.nodes[1].notifications(), &mut seen);
    assert_eq!(seen.len(), 200 - 64);
    let to = net.addr(1);
    net.nodes[0].post_write(to, rdma::RegionKey(key), 5000, pattern(20_000, 9)).unwrap();
    let mut done = Vec::new();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        drain(n.nodes[0].completions(), &mut done);
        !done.is_empty()
    }));
    assert_eq!(done[0].status, Status::Ok);
    assert_eq!(&net.nodes[1].region(rdma::RegionKey(key)).unwrap()[5000..25_000], &pattern(20_000, 9)[..]);
    assert_accounted(&net.nodes[1]);
}

#[test]
fn a_lossy_sender_past_a_slow_receivers_bounds_is_refused_then_served_in_full() {
    let imp = Impairment { loss: 0.05, reorder: 0.05, seed: 24, ..Impairment::default() };
    let mut net = Net::new(2, Some(imp), RdmaConfig { notify_capacity: 80, escape_capacity: 4, ..small() });
    let key = net.nodes[1].register(vec![0u8; 150 * 4000]).unwrap();
    let to = net.addr(1);
    let writes = 150;
    let mut posted = 0;
    let mut done = Vec::new();
    let mut seen = Vec::new();
    let mut steps = 0u64;
    let ok = net.run_until(Duration::from_secs(20), |n| {
        while posted < writes {
            match n.nodes[0].post_write(to, key, posted as u64 * 4000, pattern(4000, posted as u64)) {
                Ok(_) => posted += 1,
                Err(RdmaError::QueueFull | RdmaError::CompletionsFull) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_bounded(&n.nodes[0]);
        assert_bounded(&n.nodes[1]);
        drain(n.nodes[0].completions(), &mut done);
        // The receiving application is slow: it takes notifications only every 20 ms.
        steps += 1;
        if steps.is_multiple_of(2000) {
            drain(n.nodes[1].notifications(), &mut seen);
        }
        done.len() == writes
    });
    assert!(ok, "{} of {writes} writes completed", done.len());
    assert!(done.iter().all(|c| c.status == Status::Ok), "{:?}", done.iter().find(|c| c.status != Status::Ok));
    drain(net.nodes[1].notifications(), &mut seen);
    let mut ops: Vec<u64> = seen.iter().map(|c| c.op_id).collect();
    ops.sort_unstable();
    ops.dedup();
    assert_eq!((seen.len(), ops.len()), (writes, writes), "every write notified once");
    {
        let region = net.nodes[1].region(key).unwrap();
        for w in 0..writes {
            assert_eq!(&region[w * 4000..(w + 1) * 4000], &pattern(4000, w as u64)[..], "write {w}");
        }
    }
    let c = net.nodes[1].counters();
    assert!(c.get(Counter::nack_queue_full) > 0, "the slow application held the senders back");
    assert_accounted(&net.nodes[1]);
}

#[test]
fn an_application_that_takes_no_completions_is_refused_new_writes_counted() {
    let cfg =
        RdmaConfig { command_queue: 8, max_ops: 4, notify_capacity: 65, ..RdmaConfig::default().registration(64, 64) };
    let mut net = Net::new(2, None, cfg);
    let key = net.nodes[1].register(vec![0u8; 1 << 16]).unwrap();
    let to = net.addr(1);
    let (mut accepted, mut queue_full, mut completions_full) = (0u64, 0u64, 0u64);
    for _ in 0..40 {
        loop {
            match net.nodes[0].post_write(to, key, 0, vec![7u8; 2000]) {
                Ok(_) => accepted += 1,
                Err(RdmaError::QueueFull) => {
                    queue_full += 1;
                    break;
                }
                Err(RdmaError::CompletionsFull) => {
                    completions_full += 1;
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_bounded(&net.nodes[0]);
        net.run_until(Duration::from_millis(50), |n| n.nodes[0].pending_writes() == 0);
        drain(net.nodes[1].notifications(), &mut Vec::new());
    }
    let m = net.nodes[0].memory();
    assert_eq!(m.get("completions").unwrap().len, 65, "the completion queue is full, not past it");
    assert_eq!(accepted, 65);
    let c = net.nodes[0].counters();
    assert_eq!(c.get(Counter::tx_refused_queue_full), queue_full);
    assert_eq!(c.get(Counter::tx_refused_completions_full), completions_full);
    assert!(queue_full > 0 && completions_full > 0);
    // Taking completions makes room again.
    let mut got = Vec::new();
    drain(net.nodes[0].completions(), &mut got);
    assert_eq!(got.len(), 65);
    assert!(got.iter().all(|c| c.status == Status::Ok));
    net.nodes[0].post_write(to, key, 0, vec![1u8; 10]).unwrap();
}
