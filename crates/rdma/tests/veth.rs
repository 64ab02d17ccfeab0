//! RDMA over UDP between two linerate hosts in two Linux network namespaces joined by a
//! veth pair (AF_PACKET links): writes in both directions at once, registered and
//! unregistered, small and segmented; hashes and completions checked on both sides.
//!
//! Needs root (it creates the namespaces and removes them again); without root it fails
//! with the reason rather than passing silently.

mod common;

use common::{fnv, pattern};
use link::packet::create_in_netns;
use link::Instant;
use net::{Config, Stack};
use rdma::{Completion, Peer, RdmaConfig, RdmaNode, Status, WriteOptions};
use std::net::SocketAddrV4;
use std::time::Duration;
use testbed::{netns_unavailable, Netns};

const REGION: usize = 1 << 20;
const WRITES: &[(usize, usize, Option<bool>)] =
    &[(0, 100, None), (1000, 9000, Some(true)), (20_000, 30_000, Some(false)), (100_000, 600_000, None)];

#[test]
fn rdma_over_veth_between_namespaces_both_directions() {
    if let Some(why) = netns_unavailable() {
        panic!("cannot run the veth test: {why}");
    }
    let a = Netns::create("lr-rdma-a").expect("namespace a");
    let b = Netns::create("lr-rdma-b").expect("namespace b");
    // No kernel addresses on the veth ends: only the linerate hosts answer there.
    a.ip(&["link", "add", "lrr0", "mtu", "1500", "type", "veth", "peer", "name", "lrr1", "netns", b.name()]).unwrap();
    a.ip(&["link", "set", "lrr0", "up"]).unwrap();
    b.ip(&["link", "set", "lrr1", "up"]).unwrap();
    let la = create_in_netns(a.name(), "lrr0", 1500).expect("AF_PACKET in a");
    let lb = create_in_netns(b.name(), "lrr1", 1500).expect("AF_PACKET in b");
    let mut stacks =
        [Stack::new(Config::host("10.66.0.1/24"), la).unwrap(), Stack::new(Config::host("10.66.0.2/24"), lb).unwrap()];
    let cfg = RdmaConfig::default().segmentation(256 * 1024, 64 * 1024);
    let mut nodes = [RdmaNode::new(&mut stacks[0], cfg.clone()).unwrap(), RdmaNode::new(&mut stacks[1], cfg).unwrap()];
    let keys = [nodes[0].register(vec![0u8; REGION]).unwrap(), nodes[1].register(vec![0u8; REGION]).unwrap()];
    let addrs = [
        Peer::Udp(SocketAddrV4::new([10, 66, 0, 1].into(), rdma::DEFAULT_UDP_PORT).into()),
        Peer::Udp(SocketAddrV4::new([10, 66, 0, 2].into(), rdma::DEFAULT_UDP_PORT).into()),
    ];
    let mut expect = [vec![0u8; REGION], vec![0u8; REGION]];
    for (src, dst) in [(0usize, 1usize), (1, 0)] {
        for (i, &(off, len, reg)) in WRITES.iter().enumerate() {
            let data = pattern(len, (src * 10 + i) as u64);
            expect[dst][off..off + len].copy_from_slice(&data);
            nodes[src]
                .post_write_with(addrs[dst], keys[dst], off as u64, data, WriteOptions { registered: reg })
                .unwrap();
        }
    }
    let ops: usize = WRITES.iter().map(|&(_, len, _)| if len > 256 * 1024 { len.div_ceil(64 * 1024) } else { 1 }).sum();
    let mut sent: [Vec<Completion>; 2] = [Vec::new(), Vec::new()];
    let mut recv: [Vec<Completion>; 2] = [Vec::new(), Vec::new()];
    let start = Instant::now();
    // Bounded in time (real links); nothing is asserted about how long it takes.
    while Instant::now() - start < Duration::from_secs(30) {
        for i in 0..2 {
            let now = Instant::now();
            stacks[i].poll(now).unwrap();
            nodes[i].poll(&mut stacks[i], now).unwrap();
            while let Some(c) = nodes[i].completions().poll() {
                sent[i].push(c);
            }
            while let Some(c) = nodes[i].notifications().poll() {
                recv[i].push(c);
            }
        }
        if sent.iter().all(|s| s.len() == WRITES.len()) && recv.iter().all(|r| r.len() == ops) {
            break;
        }
    }
    for i in 0..2 {
        assert_eq!(sent[i].len(), WRITES.len(), "side {i}: send completions");
        assert!(sent[i].iter().all(|c| c.status == Status::Ok), "side {i}: {:?}", sent[i]);
        let mut ids: Vec<u64> = recv[i].iter().map(|c| c.op_id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!((recv[i].len(), ids.len()), (ops, ops), "side {i}: each op notified once");
        let guard = nodes[i].region(keys[i]).unwrap();
        let region: &[u8] = &guard;
        assert!(region == &expect[i][..], "side {i}: region hash {:x} != {:x}", fnv(region), fnv(&expect[i]));
    }
    drop(nodes);
    drop(stacks);
    drop((a, b));
}
