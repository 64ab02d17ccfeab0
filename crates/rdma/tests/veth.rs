//! RDMA over UDP between two linerate hosts in two Linux network namespaces joined by a
//! veth pair (AF_PACKET links), over IPv4 and over IPv6: writes in both directions at once,
//! registered and unregistered, small and segmented; hashes and completions checked on both
//! sides, and no packet sent in fragments (IPv6 packets carry 20 payload bytes fewer).
//!
//! Needs root (it creates the namespaces and removes them again); without root it fails
//! with the reason rather than passing silently.

mod common;

use common::{fnv, pattern};
use link::packet::create_in_netns;
use link::Instant;
use net::{AddrState, Counter};
use net::{Config, Stack};
use rdma::{Completion, Peer, RdmaConfig, RdmaNode, Status, WriteOptions};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::time::Duration;
use testbed::{netns_unavailable, Netns};

const REGION: usize = 1 << 20;
const WRITES: &[(usize, usize, Option<bool>)] =
    &[(0, 100, None), (1000, 9000, Some(true)), (20_000, 30_000, Some(false)), (100_000, 600_000, None)];

#[test]
fn rdma_over_veth_between_namespaces_both_directions() {
    rdma_over_veth(false);
}

#[test]
fn rdma_over_ipv6_on_a_veth_between_namespaces_both_directions_unfragmented() {
    rdma_over_veth(true);
}

/// Poll both stacks until their IPv6 addresses have passed duplicate address detection (at
/// most 5 s).
fn wait_out_dad(stacks: &mut [Stack<link::packet::PacketLink>; 2]) {
    let start = Instant::now();
    while stacks.iter().any(|s| s.ipv6_addrs().iter().any(|a| a.state == AddrState::Tentative)) {
        assert!(Instant::now() - start < Duration::from_secs(5), "IPv6 addresses still tentative after 5 s");
        for s in stacks.iter_mut() {
            s.poll(Instant::now()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The writes of `WRITES` both ways between two namespaces, the peers named by their IPv6
/// addresses when `ipv6`.
fn rdma_over_veth(ipv6: bool) {
    if let Some(why) = netns_unavailable() {
        panic!("cannot run the veth test: {why}");
    }
    let tag = if ipv6 { "6" } else { "" };
    let a = Netns::create(&format!("lr-rdma{tag}-a")).expect("namespace a");
    let b = Netns::create(&format!("lr-rdma{tag}-b")).expect("namespace b");
    // No kernel addresses on the veth ends: only the linerate hosts answer there.
    a.ip(&["link", "add", "lrr0", "mtu", "1500", "type", "veth", "peer", "name", "lrr1", "netns", b.name()]).unwrap();
    a.ip(&["link", "set", "lrr0", "up"]).unwrap();
    b.ip(&["link", "set", "lrr1", "up"]).unwrap();
    let la = create_in_netns(a.name(), "lrr0", 1500).expect("AF_PACKET in a");
    let lb = create_in_netns(b.name(), "lrr1", 1500).expect("AF_PACKET in b");
    let host = |v4: &str, v6: &str| Config::host(v4).ipv6_addr(v6).unwrap();
    let mut stacks = [
        Stack::new(host("10.66.0.1/24", "fd66::1/64"), la).unwrap(),
        Stack::new(host("10.66.0.2/24", "fd66::2/64"), lb).unwrap(),
    ];
    wait_out_dad(&mut stacks);
    let port = rdma::DEFAULT_UDP_PORT;
    let addr = |i: u8| -> SocketAddr {
        if ipv6 {
            SocketAddrV6::new(format!("fd66::{i}").parse().unwrap(), port, 0, 0).into()
        } else {
            SocketAddrV4::new([10, 66, 0, i].into(), port).into()
        }
    };
    let cfg = RdmaConfig::default().segmentation(256 * 1024, 64 * 1024);
    let mut nodes = [RdmaNode::new(&mut stacks[0], cfg.clone()).unwrap(), RdmaNode::new(&mut stacks[1], cfg).unwrap()];
    let keys = [nodes[0].register(vec![0u8; REGION]).unwrap(), nodes[1].register(vec![0u8; REGION]).unwrap()];
    let addrs = [Peer::Udp(addr(1)), Peer::Udp(addr(2))];
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
        let c = stacks[i].counters();
        let fragmented = c.get(Counter::ipv4_fragmented_sent) + c.get(Counter::ipv6_fragmented_sent);
        assert_eq!(fragmented, 0, "side {i}: packets sent in fragments");
    }
    if ipv6 {
        assert_eq!(nodes[0].packet_payload6(), nodes[0].packet_payload() - 20);
    }
    drop(nodes);
    drop(stacks);
    drop((a, b));
}
