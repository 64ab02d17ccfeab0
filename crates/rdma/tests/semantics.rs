//! What the paper's mechanisms buy, on virtual time: a registered receive is notified one
//! round trip before an unregistered one (paper Fig. 5), and a segmented large write lets
//! the receiver compute on the first segments while the rest is in flight (Fig. 2).

mod common;

use common::{drain, pattern, Net};
use link::impair::Impairment;
use link::Instant;
use rdma::{Completion, CompletionKind, RdmaConfig, Status, WriteOptions};
use std::time::Duration;

/// Virtual times at which (receiver notification, sender completion) arrive for one write.
fn timing(registered: bool, len: usize) -> (Duration, Duration) {
    // 100 µs on each host's link: 200 µs one way between two hosts.
    let imp = Impairment { delay: Duration::from_micros(100), seed: 5, ..Impairment::default() };
    let mut net = Net::new(2, Some(imp), RdmaConfig::default());
    let key = net.nodes[1].register(vec![0u8; len]).unwrap();
    let dst = net.addr(1);
    // Warm up ARP in both directions with a first write, then measure the second.
    net.nodes[0].post_write(dst, key, 0, vec![1u8; 8]).unwrap();
    assert!(net.run_until(Duration::from_secs(1), |n| n.nodes[0].completions().poll().is_some()));
    net.run_for(Duration::from_millis(5));
    while net.nodes[1].notifications().poll().is_some() {}
    let start = net.now();
    net.nodes[0].post_write_with(dst, key, 0, pattern(len, 3), WriteOptions { registered: Some(registered) }).unwrap();
    let (mut recv, mut sent): (Option<Instant>, Option<Instant>) = (None, None);
    assert!(net.run_until(Duration::from_secs(1), |n| {
        if recv.is_none() && n.nodes[1].notifications().poll().is_some() {
            recv = Some(n.now());
        }
        if sent.is_none() && n.nodes[0].completions().poll().is_some() {
            sent = Some(n.now());
        }
        recv.is_some() && sent.is_some()
    }));
    assert!(*net.nodes[1].region(key).unwrap() == pattern(len, 3)[..]);
    (recv.unwrap() - start, sent.unwrap() - start)
}

#[test]
fn registered_receive_is_notified_one_round_trip_sooner() {
    for len in [64, 1024, 8000] {
        let (reg_recv, reg_send) = timing(true, len);
        let (unreg_recv, unreg_send) = timing(false, len);
        // Registered: the receiver knows after one way (200 µs); the sender after the ACK
        // came back, one more way later.
        assert!(reg_recv + Duration::from_micros(150) <= reg_send, "{len}: {reg_recv:?} vs {reg_send:?}");
        // Unregistered: the receiver learns it from the Notify, a round trip (400 µs) later.
        assert!(reg_recv + Duration::from_micros(300) <= unreg_recv, "{len}: {reg_recv:?} vs {unreg_recv:?}");
        assert!(unreg_send + Duration::from_micros(150) <= unreg_recv, "{len}: notify follows the last ACK");
        assert!(reg_recv >= Duration::from_micros(200), "{len}: nothing arrives faster than the link");
    }
}

#[test]
fn segmented_write_lets_the_receiver_compute_on_early_segments() {
    const LEN: usize = 1 << 20;
    const SEG: usize = 64 * 1024;
    // A 1 Gbit/s link: 1 MiB takes about 8.5 ms to cross.
    let imp =
        Impairment { rate_bps: Some(1_000_000_000), delay: Duration::from_micros(5), seed: 8, ..Impairment::default() };
    let cfg = RdmaConfig::default().segmentation(256 * 1024, SEG).registration(64, 64);
    let mut net = Net::new(2, Some(imp), cfg);
    let key = net.nodes[1].register(vec![0u8; LEN]).unwrap();
    let dst = net.addr(1);
    let data = pattern(LEN, 11);
    let start = net.now();
    net.nodes[0].post_write_with(dst, key, 0, data.clone(), WriteOptions { registered: Some(true) }).unwrap();
    // The receiver "computes" (a checksum) on every segment as soon as it is notified.
    let mut computed: Vec<(u32, Duration, u64)> = Vec::new();
    let mut sent: Vec<Completion> = Vec::new();
    let mut notes = Vec::new();
    assert!(net.run_until(Duration::from_secs(2), |n| {
        notes.clear();
        drain(n.nodes[1].notifications(), &mut notes);
        for c in &notes {
            assert_eq!(c.kind, CompletionKind::RecvRegistered);
            let seg = c.segment_index();
            let range = c.offset as usize..(c.offset + c.len) as usize;
            assert_eq!(range.start, seg as usize * SEG);
            let guard = n.nodes[1].region(key).unwrap();
            let region: &[u8] = &guard;
            // Notified means complete: the whole segment is in place at this moment.
            assert!(region[range.clone()] == data[range.clone()], "segment {seg} incomplete when notified");
            assert!(c.segment && c.last_segment == (seg as usize == LEN / SEG - 1));
            let sum = region[range].iter().map(|b| u64::from(*b)).sum();
            computed.push((seg, n.now() - start, sum));
        }
        drain(n.nodes[0].completions(), &mut sent);
        !sent.is_empty() && computed.len() == LEN / SEG
    }));
    let done = net.now() - start;
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].status, sent[0].len, sent[0].segment), (Status::Ok, LEN as u64, true));
    let mut segs: Vec<u32> = computed.iter().map(|c| c.0).collect();
    segs.sort();
    assert_eq!(segs, (0..(LEN / SEG) as u32).collect::<Vec<_>>(), "each segment notified once");
    for (seg, _, sum) in &computed {
        let r = *seg as usize * SEG..(*seg as usize + 1) * SEG;
        assert_eq!(*sum, data[r].iter().map(|b| u64::from(*b)).sum::<u64>());
    }
    // Overlap: the first segment was computed on long before the write finished.
    let first = computed.iter().map(|c| c.1).min().unwrap();
    assert!(first * 4 < done, "first segment at {first:?}, write done at {done:?}");
}
