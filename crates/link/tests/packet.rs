//! AF_PACKET on both ends of a veth pair inside a namespace this test creates.

mod common;

use std::time::Duration;

use common::{can_run_as_root, frame, poll_until, Netns, ETHERTYPE};
use link::packet::PacketLink;
use link::{FrameBatch, Instant, Link};

/// Send `n` frames from `a`, collect the test frames arriving on `b` (bounded in time).
fn transfer(a: &mut PacketLink, b: &mut PacketLink, n: u32) -> Vec<Vec<u8>> {
    let mut tx = FrameBatch::new(16, 2048);
    let mut rx = FrameBatch::new(32, 2048);
    let mut got = Vec::new();
    let mut next = 0u32;
    poll_until(Duration::from_secs(10), || {
        while next < n && !tx.is_full() {
            assert!(tx.push(&frame(next)));
            next += 1;
        }
        a.tx_batch(Instant::now(), &mut tx).unwrap();
        rx.clear();
        b.rx_batch(Instant::now(), &mut rx).unwrap();
        got.extend(rx.iter().filter(|f| f[12..14] == ETHERTYPE).map(|f| f.to_vec()));
        got.len() >= n as usize
    });
    got
}

#[test]
fn veth_pair_carries_frames_both_ways() {
    if !can_run_as_root("veth_pair_carries_frames_both_ways") {
        return;
    }
    let ns = Netns::new();
    ns.ip(&["link", "add", "lrva", "type", "veth", "peer", "name", "lrvb"]).unwrap();
    ns.ip(&["link", "set", "lrva", "up"]).unwrap();
    ns.ip(&["link", "set", "lrvb", "up"]).unwrap();
    let mut a = link::packet::create_in_netns(&ns.name, "lrva", 1500).unwrap();
    let mut b = link::packet::create_in_netns(&ns.name, "lrvb", 1500).unwrap();
    assert_eq!(a.kind(), "af_packet");

    let got = transfer(&mut a, &mut b, 200);
    assert_eq!(got.len(), 200, "frames lost between lrva and lrvb");
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f, &frame(i as u32), "frame {i} differs");
    }
    // The sender must not see its own frames (PACKET_IGNORE_OUTGOING).
    let mut rx = FrameBatch::new(64, 2048);
    a.rx_batch(Instant::now(), &mut rx).unwrap();
    assert!(rx.iter().all(|f| f[12..14] != ETHERTYPE), "sender saw its own frames");

    let back = transfer(&mut b, &mut a, 50);
    assert_eq!(back.len(), 50);
    assert_eq!(back[49], frame(49));
    // Oversize frames are dropped and counted, not sent.
    let mut tx = FrameBatch::new(2, 4096);
    assert!(tx.push(&[0u8; 1519]));
    assert_eq!(a.tx_batch(Instant::now(), &mut tx).unwrap(), 0);
    assert!(tx.is_empty());
    assert_eq!(a.stats().dropped_oversize, 1);
    assert_eq!(b.stats().tx_frames, 50);
}
