//! Many senders, one receiver: 64 hosts write two registered and one unregistered op into one
//! region of host 0 at once, on a lossy, reordering network. The receiver keeps no state
//! per sender beyond its tables; every write lands once and completes once on each side.

mod common;

use common::{assert_accounted, drain, pattern, Net};
use link::impair::Impairment;
use rdma::{Completion, CompletionKind, Counter, RdmaConfig, Status, WriteOptions};
use std::collections::HashSet;
use std::time::Duration;

const SENDERS: usize = 64;
const SLICE: usize = 8000;

#[test]
fn sixty_four_senders_write_into_one_receiver() {
    let imp = Impairment { loss: 0.01, reorder: 0.02, duplicate: 0.01, seed: 99, ..Impairment::default() };
    // 128 registered ops go through a 64-entry table (ops complete and free their entries
    // as they go; a full table would be NACKed and retried).
    let cfg = RdmaConfig::default().registration(64, 64).window(8);
    let mut net = Net::with(
        SENDERS + 1,
        Some(imp),
        |_| cfg.clone(),
        |i, mut c| {
            if i == 0 {
                c.socket_rx_queue = 2048;
                c.batch = 64;
            }
            c
        },
    );
    let key = net.nodes[0].register(vec![0u8; SENDERS * SLICE * 3]).unwrap();
    let dst = net.addr(0);
    let mut expect = vec![0u8; SENDERS * SLICE * 3];
    for s in 1..=SENDERS {
        for (j, reg, len) in [(0usize, true, 3000), (1, true, 1500), (2, false, SLICE)] {
            let off = ((s - 1) * 3 + j) * SLICE;
            let data = pattern(len, (s * 2 + j) as u64);
            expect[off..off + len].copy_from_slice(&data);
            net.nodes[s].post_write_with(dst, key, off as u64, data, WriteOptions { registered: Some(reg) }).unwrap();
        }
    }
    let mut sent: Vec<Vec<Completion>> = vec![Vec::new(); SENDERS + 1];
    let mut recv = Vec::new();
    let done = net.run_until(Duration::from_secs(10), |n| {
        for (node, got) in n.nodes.iter().zip(sent.iter_mut()).skip(1) {
            drain(node.completions(), got);
        }
        drain(n.nodes[0].notifications(), &mut recv);
        recv.len() == 3 * SENDERS && sent.iter().skip(1).all(|v| v.len() == 3)
    });
    assert!(done, "{} of {} receive completions", recv.len(), 3 * SENDERS);
    net.run_for(Duration::from_millis(200));
    drain(net.nodes[0].notifications(), &mut recv);
    assert!(*net.nodes[0].region(key).unwrap() == expect[..], "region differs");
    assert_eq!(recv.len(), 3 * SENDERS, "no op completed twice");
    let unique: HashSet<_> = recv.iter().map(|c| (c.peer, c.op_id)).collect();
    assert_eq!(unique.len(), 3 * SENDERS);
    assert_eq!(recv.iter().filter(|c| c.kind == CompletionKind::RecvRegistered).count(), 2 * SENDERS);
    for (node, got) in net.nodes.iter().zip(sent.iter_mut()).skip(1) {
        drain(node.completions(), got);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|c| c.status == Status::Ok));
        assert_accounted(node);
    }
    let c = net.nodes[0].counters();
    assert_eq!(c.get(Counter::rx_completed_registered), 2 * SENDERS as u64);
    assert_eq!(c.get(Counter::rx_completed_notified), SENDERS as u64);
    assert_eq!(net.nodes[0].registered_in_flight(), 0);
    assert_accounted(&net.nodes[0]);
}
