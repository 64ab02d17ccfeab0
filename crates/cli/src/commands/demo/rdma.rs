//! The demo's RDMA rows, on the in-process testbed (virtual time): registered, unregistered
//! and segmented writes over an impaired link (hashes checked), and 64 senders into one
//! receiver.

use super::{Outcome, Step};
use crate::bench_common::msg;
use net::Config;
use rdma::{RdmaConfig, RdmaNode, Status, WriteOptions};
use std::time::Duration;
/// Hosts 10.0.0.1.. on an in-process testbed, each with an RDMA node, links impaired by `imp`.
fn demo_net(
    n: usize,
    imp: Option<link::impair::Impairment>,
) -> Result<(testbed::Testbed, Vec<testbed::HostId>, Vec<RdmaNode>), String> {
    let mut tb = testbed::Testbed::new(testbed::TestbedConfig::default());
    let (mut ids, mut nodes) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut c = Config::host(&format!("10.0.{}.{}/16", i / 200, i % 200 + 1));
        c.arp_retry = Duration::from_millis(5);
        let impairment = imp.map(|m| link::impair::Impairment { seed: m.seed + i as u64, ..m });
        let id = tb.add_host_with(c, testbed::HostOptions { impairment, pcap: None }).map_err(msg)?;
        nodes.push(RdmaNode::new(tb.host(id), RdmaConfig::default().segmentation(256 << 10, 64 << 10)).map_err(msg)?);
        ids.push(id);
    }
    Ok((tb, ids, nodes))
}

/// Step the testbed (nodes first) until `done` or `limit` of virtual time.
fn demo_run(
    tb: &mut testbed::Testbed,
    ids: &[testbed::HostId],
    nodes: &mut [RdmaNode],
    limit: Duration,
    mut done: impl FnMut(&mut [RdmaNode]) -> bool,
) -> Result<bool, String> {
    let end = tb.now() + limit;
    while tb.now() < end {
        if done(nodes) {
            return Ok(true);
        }
        let now = tb.now();
        for (n, id) in nodes.iter_mut().zip(ids) {
            n.poll(tb.host(*id), now).map_err(msg)?;
        }
        tb.step().map_err(msg)?;
    }
    Ok(done(nodes))
}

fn demo_data(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

/// Registered, unregistered and segmented writes over an impaired link, hashes checked.
pub(crate) fn demo_impaired_step() -> Step {
    use rdma::Counter as C;
    let imp = link::impair::Impairment { loss: 0.02, duplicate: 0.01, reorder: 0.05, seed: 42, ..Default::default() };
    let (mut tb, ids, mut nodes) = demo_net(2, Some(imp))?;
    let key = nodes[1].register(vec![0u8; 4 << 20]).map_err(msg)?;
    let dst = nodes[1].address(tb.host(ids[1]));
    let mut expect = vec![0u8; 4 << 20];
    let mut writes = 0;
    let mut post = |nodes: &mut [RdmaNode], off: usize, len: usize, reg: Option<bool>| -> Result<(), String> {
        let d = demo_data(len, off as u64);
        expect[off..off + len].copy_from_slice(&d);
        nodes[0].post_write_with(dst, key, off as u64, d, WriteOptions { registered: reg }).map_err(msg)?;
        writes += 1;
        Ok(())
    };
    for i in 0..50 {
        post(&mut nodes, i * 4096, 4096, None)?;
    }
    for i in 0..10 {
        post(&mut nodes, (1 << 20) + i * 65536, 40_000, Some(false))?;
    }
    post(&mut nodes, 2 << 20, 1 << 20, None)?;
    // 50 + 10 single ops and 16 segments: 76 ops complete at the receiver, once each.
    let (mut ok, mut ops) = (0, std::collections::HashSet::new());
    let mut twice = 0;
    let finished = demo_run(&mut tb, &ids, &mut nodes, Duration::from_secs(10), |n| {
        while let Some(c) = n[0].completions().poll() {
            ok += usize::from(c.status == Status::Ok);
        }
        while let Some(c) = n[1].notifications().poll() {
            twice += usize::from(!ops.insert(c.op_id));
        }
        ok == writes && ops.len() == 76
    })?;
    if !finished || twice > 0 {
        return Err(format!("{ok} of {writes} writes completed, {} of 76 ops notified, {twice} twice", ops.len()));
    }
    if nodes[1].region(key).as_deref() != Some(&expect[..]) {
        return Err("the region's bytes differ from what was written".into());
    }
    let (s, r) = (nodes[0].counters(), nodes[1].counters());
    Ok(Outcome::measured(
        format!(
            "{writes} writes (50 registered 4 KiB, 10 unregistered 40 KB, 1 MiB in 16 segments): region hash matches; {} ops notified at the receiver, each once; {} retransmissions, {} duplicates dropped, {} packets through the escape channel",
            r.get(C::rx_completed_registered) + r.get(C::rx_completed_notified),
            s.get(C::tx_retransmits),
            r.get(C::drop_dup_registered) + r.get(C::drop_dup_completed),
            r.get(C::rx_escape_parked),
        ),
        (tb.now() - link::Instant::ZERO).as_secs_f64(),
        crate::output::Unit::Seconds,
        "virtual time for every write to land",
    ))
}

/// 64 senders write into one receiver at once.
pub(crate) fn demo_many_step() -> Step {
    const SENDERS: usize = 64;
    const LEN: usize = 8000;
    let (mut tb, ids, mut nodes) = demo_net(SENDERS + 1, None)?;
    let key = nodes[0].register(vec![0u8; SENDERS * LEN]).map_err(msg)?;
    let dst = nodes[0].address(tb.host(ids[0]));
    let mut expect = vec![0u8; SENDERS * LEN];
    for (s, node) in nodes.iter_mut().enumerate().skip(1) {
        let off = (s - 1) * LEN;
        let d = demo_data(LEN, s as u64);
        expect[off..off + LEN].copy_from_slice(&d);
        let reg = WriteOptions { registered: Some(s % 2 == 0) };
        node.post_write_with(dst, key, off as u64, d, reg).map_err(msg)?;
    }
    let mut got = 0;
    let finished = demo_run(&mut tb, &ids, &mut nodes, Duration::from_secs(10), |n| {
        while n[0].notifications().poll().is_some() {
            got += 1;
        }
        got == SENDERS
    })?;
    if !finished || nodes[0].region(key).as_deref() != Some(&expect[..]) {
        return Err(format!("{got} of {SENDERS} writes were notified, or the bytes differ"));
    }
    Ok(Outcome::measured(
        format!(
            "{SENDERS} senders (half registered, half unregistered) wrote 8 KB each into one region; all landed, hash matches; the receiver keeps no per-sender state"
        ),
        (tb.now() - link::Instant::ZERO).as_secs_f64(),
        crate::output::Unit::Seconds,
        "virtual time for every write to land",
    ))
}
