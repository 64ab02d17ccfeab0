//! RDMA writes in both directions between two testbed hosts over the impairment grid
//! (loss 0-10% x reordering x duplication x delay): every write lands exactly once with the
//! right bytes, every op completes exactly once on each side, nothing outside the written
//! ranges changes, and the counters add up.

mod common;

use common::{assert_accounted, drain, fnv, pattern, Net};
use link::impair::Impairment;
use rdma::{Completion, CompletionKind, Counter, RdmaConfig, RegionKey, Status, Transport, WriteOptions};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

const REGION: usize = 256 * 1024;
const GUARD: u8 = 0xee;

/// (offset, len, forced registration) of the writes each side posts.
const WRITES: &[(u64, usize, Option<bool>)] = &[
    (0, 100, None),                // registered, one packet
    (1000, 6000, None),            // registered, several packets
    (10_000, 20_000, None),        // unregistered by size
    (40_000, 100_000, Some(true)), // segmented, registered segments
    (150_000, 50_000, None),       // segmented, unregistered segments
    (210_000, 3000, Some(false)),  // small, forced unregistered
];

fn cfg(transport: Transport) -> RdmaConfig {
    let mut c = RdmaConfig { transport, register_threshold: 8 * 1024, ..RdmaConfig::default() };
    c = c.segmentation(48 * 1024, 16 * 1024).registration(64, 64);
    c
}

/// Ops a write becomes on the wire: (op count, of which registered).
fn ops_of(len: usize, reg: Option<bool>, c: &RdmaConfig, stride: usize) -> Vec<(u64, bool)> {
    let segs: Vec<usize> = if len > c.segment_threshold {
        (0..len.div_ceil(c.segment_size)).map(|i| c.segment_size.min(len - i * c.segment_size)).collect()
    } else {
        vec![len]
    };
    segs.iter()
        .map(|&s| {
            let count = s.div_ceil(stride);
            (count as u64, reg.unwrap_or(s <= c.register_threshold) && count <= c.mask_width)
        })
        .collect()
}

struct Totals {
    retransmits: u64,
    duplicates: u64,
    escape: u64,
}

fn run_case(imp: Impairment, transport: Transport, totals: &mut Totals) {
    let config = cfg(transport);
    let mut net = Net::new(2, Some(imp), config.clone());
    let keys: Vec<RegionKey> = (0..2).map(|i| net.nodes[i].register(vec![GUARD; REGION]).unwrap()).collect();
    let mut expect = [vec![GUARD; REGION], vec![GUARD; REGION]];
    let mut write_ids = [Vec::new(), Vec::new()];
    for (src, dst) in [(0usize, 1usize), (1, 0)] {
        let to = net.addr(dst);
        for (w, &(off, len, reg)) in WRITES.iter().enumerate() {
            let data = pattern(len, (src * 100 + w) as u64 + imp.seed);
            expect[dst][off as usize..off as usize + len].copy_from_slice(&data);
            let id =
                net.nodes[src].post_write_with(to, keys[dst], off, data, WriteOptions { registered: reg }).unwrap();
            write_ids[src].push(id);
        }
    }
    let mut sent: [Vec<Completion>; 2] = [Vec::new(), Vec::new()];
    let mut recv: [Vec<Completion>; 2] = [Vec::new(), Vec::new()];
    let finished = net.run_until(Duration::from_secs(5), |n| {
        for i in 0..2 {
            drain(n.nodes[i].completions(), &mut sent[i]);
            drain(n.nodes[i].notifications(), &mut recv[i]);
        }
        sent.iter().all(|s| s.len() == WRITES.len()) && n.nodes.iter().all(|x| x.pending_writes() == 0)
    });
    assert!(finished, "{imp:?}: writes did not complete: {:?}", sent.iter().map(Vec::len).collect::<Vec<_>>());
    // Let late duplicates and Notify retransmissions play out; nothing new may complete.
    net.run_for(Duration::from_millis(300));
    let stride = net.nodes[0].packet_payload();
    for i in 0..2 {
        drain(net.nodes[i].completions(), &mut sent[i]);
        drain(net.nodes[i].notifications(), &mut recv[i]);
        // A copy: the node's counters are read below, which a held region would block.
        let copy = net.nodes[i].region(keys[i]).unwrap().to_vec();
        let region: &[u8] = &copy;
        if region != &expect[i][..] {
            let bad: Vec<usize> = (0..REGION).filter(|&j| region[j] != expect[i][j]).collect();
            eprintln!(
                "diff at {} bytes: first {:?} last {:?}; counters {:?}",
                bad.len(),
                bad.first(),
                bad.last(),
                net.nodes[i].counters().iter().filter(|x| x.1 > 0).collect::<Vec<_>>()
            );
            eprintln!("peer {:?}", net.nodes[1 - i].counters().iter().filter(|x| x.1 > 0).collect::<Vec<_>>());
        }
        assert!(region == &expect[i][..], "{imp:?}: region {i} hash {:x} != {:x}", fnv(region), fnv(&expect[i]));
        // Sender side: one Ok completion per write.
        let mut ids: Vec<u64> = sent[i].iter().map(|c| c.write_id()).collect();
        ids.sort();
        assert_eq!(ids, write_ids[i], "{imp:?}: send completions of node {i}");
        assert!(sent[i].iter().all(|c| c.status == Status::Ok && c.kind == CompletionKind::Send));
        // Receiver side: one completion per op, registered ones locally, the others notified.
        let src = 1 - i;
        let mut want: BTreeMap<(u64, u32), bool> = BTreeMap::new();
        let mut packets = 0;
        for (w, &(_, len, reg)) in WRITES.iter().enumerate() {
            for (seg, (count, registered)) in ops_of(len, reg, &config, stride).into_iter().enumerate() {
                want.insert((write_ids[src][w], seg as u32), registered);
                packets += count;
            }
        }
        let got: Vec<((u64, u32), bool)> = recv[i]
            .iter()
            .map(|c| ((c.write_id(), c.segment_index()), c.kind == CompletionKind::RecvRegistered))
            .collect();
        let unique: HashSet<_> = got.iter().map(|x| x.0).collect();
        assert_eq!(unique.len(), got.len(), "{imp:?}: an op completed twice at node {i}");
        assert_eq!(got.into_iter().collect::<BTreeMap<_, _>>(), want, "{imp:?}: receive completions of node {i}");
        let c = net.nodes[i].counters();
        let regs = want.values().filter(|r| **r).count() as u64;
        assert_eq!(c.get(Counter::rx_completed_registered), regs);
        assert_eq!(c.get(Counter::rx_completed_notified), want.len() as u64 - regs);
        // The peer sent each data packet once for the first time; the rest were retransmissions.
        let pc = net.nodes[src].counters();
        assert_eq!(pc.get(Counter::tx_data_packets), packets, "{imp:?}");
        assert_eq!(pc.get(Counter::tx_writes_completed), WRITES.len() as u64);
        assert_eq!((pc.get(Counter::tx_writes_failed), pc.get(Counter::tx_ops_failed)), (0, 0));
        assert_eq!(c.nacks_sent(), c.get(Counter::nack_escape_full) + c.get(Counter::nack_table_full));
        if imp.loss == 0.0 && imp.duplicate == 0.0 && imp.reorder == 0.0 {
            assert_eq!(pc.get(Counter::tx_retransmits), 0, "{imp:?}: clean links need no retransmission");
        }
        assert_accounted(&net.nodes[i]);
        totals.retransmits += pc.get(Counter::tx_retransmits);
        totals.duplicates += c.get(Counter::drop_dup_registered) + c.get(Counter::drop_dup_completed);
        totals.escape += c.get(Counter::rx_escape_parked);
    }
}

fn grid(transport: Transport) {
    let mut totals = Totals { retransmits: 0, duplicates: 0, escape: 0 };
    let mut seed = 7;
    for loss in [0.0, 0.01, 0.05, 0.10] {
        for reorder in [0.0, 0.1] {
            for duplicate in [0.0, 0.1] {
                for delay_us in [0, 50] {
                    seed += 1;
                    let imp = Impairment {
                        loss,
                        reorder,
                        duplicate,
                        delay: Duration::from_micros(delay_us),
                        seed,
                        ..Impairment::default()
                    };
                    run_case(imp, transport, &mut totals);
                }
            }
        }
    }
    // The grid exercised what it is meant to.
    assert!(totals.retransmits > 0 && totals.duplicates > 0 && totals.escape > 0);
}

#[test]
fn impairment_grid_over_udp() {
    grid(Transport::Udp { port: rdma::DEFAULT_UDP_PORT });
}

#[test]
fn impairment_grid_over_raw_ethernet() {
    grid(Transport::Eth { ethertype: rdma::DEFAULT_ETHERTYPE });
}
