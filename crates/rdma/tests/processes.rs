//! Two processes on a shared-memory link, writing into each other's regions at once, both
//! directions: registered and unregistered ops, small and segmented large ones. Each
//! process checks the bytes that landed in its region and the completions on both sides.
//!
//! The test re-runs its own binary as the second process (selected by an environment
//! variable), so it needs nothing but the test binary.

mod common;

use common::pattern;
use link::shm::ShmLink;
use link::{Instant, LinkConfig, LinkError};
use net::{Config, NetError, Stack};
use rdma::{CompletionKind, RdmaConfig, RdmaError, RdmaNode, Status, WriteOptions};
use std::net::SocketAddrV4;
use std::process::Command;
use std::time::Duration;

const CHILD_ENV: &str = "LINERATE_RDMA_SHM_CHILD";
const REGION: usize = 1 << 20;
const CTL_PORT: u16 = 9;
/// (offset, len, registered) of the writes each side posts; seeds differ per side.
const WRITES: &[(usize, usize, Option<bool>)] =
    &[(0, 200, None), (1000, 9000, Some(true)), (20_000, 40_000, Some(false)), (100_000, 700_000, None)];
/// Bound on the whole exchange (real time: two processes); far above what it takes.
const LIMIT: Duration = Duration::from_secs(60);

fn cfg() -> RdmaConfig {
    RdmaConfig::default().segmentation(256 * 1024, 64 * 1024)
}

/// Ops the peer's writes become: one per write below the segment threshold, else one per segment.
fn expected_ops() -> usize {
    WRITES.iter().map(|&(_, len, _)| if len > 256 * 1024 { len.div_ceil(64 * 1024) } else { 1 }).sum()
}

fn closed(e: &RdmaError) -> bool {
    matches!(e, RdmaError::Net(NetError::Link(LinkError::Closed)))
}

/// One side: `me` writes with seed `me`, expects the peer's writes with seed `peer`.
///
/// Shutdown: each side says "done" once its writes completed and the peer's landed. The
/// parent (`child_exited` given) then says "bye" until the child has exited; the child
/// exits at "bye". So the child never sends to a closed link, and the parent meets a
/// closed link only after the child is gone.
fn side(link: ShmLink, me: u8, peer: u8, mut child_exited: Option<&mut dyn FnMut() -> bool>) -> Result<(), String> {
    let mut stack = Stack::new(Config::host(&format!("10.0.0.{me}/24")), link).map_err(|e| e.to_string())?;
    let mut node = RdmaNode::new(&mut stack, cfg()).map_err(|e| e.to_string())?;
    let key = node.register(vec![0u8; REGION]).map_err(|e| e.to_string())?;
    let ctl = stack.udp_bind(CTL_PORT).map_err(|e| e.to_string())?;
    let peer_ctl = SocketAddrV4::new([10, 0, 0, peer].into(), CTL_PORT);
    let dst = rdma::Peer::Udp(SocketAddrV4::new([10, 0, 0, peer].into(), rdma::DEFAULT_UDP_PORT).into());
    // Both sides register their first region first, so the key is the same on both.
    for (i, &(off, len, reg)) in WRITES.iter().enumerate() {
        let data = pattern(len, u64::from(me) * 10 + i as u64);
        node.post_write_with(dst, key, off as u64, data, WriteOptions { registered: reg })
            .map_err(|e| e.to_string())?;
    }
    let (mut sent, mut recv) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let mut buf = [0u8; 64];
    let (mut peer_done, mut bye) = (false, false);
    loop {
        let now = Instant::now();
        let r = stack.poll(now).map_err(RdmaError::from).and_then(|_| node.poll(&mut stack, now));
        match r {
            Err(e) if bye && closed(&e) => break,
            Err(e) => return Err(e.to_string()),
            Ok(_) => {}
        }
        while let Some(c) = node.completions().poll() {
            sent.push(c);
        }
        while let Some(c) = node.notifications().poll() {
            recv.push(c);
        }
        while let Ok(Some((n, _))) = stack.udp_recv_from(ctl, &mut buf) {
            peer_done |= &buf[..n] == b"done";
            bye |= &buf[..n] == b"bye";
        }
        let done = sent.len() == WRITES.len() && recv.len() == expected_ops();
        match child_exited.as_mut() {
            // The child: leave when the parent says so (it is done, and so are we).
            None if bye && done => break,
            None if done => {
                let _ = stack.udp_send_to(ctl, peer_ctl, b"done");
            }
            Some(exited) if done && peer_done => {
                bye = true;
                if exited() {
                    break;
                }
                let _ = stack.udp_send_to(ctl, peer_ctl, b"bye");
            }
            _ => {}
        }
        if now - start > LIMIT {
            return Err(format!(
                "side {me}: {} of {} writes, {} of {} ops",
                sent.len(),
                WRITES.len(),
                recv.len(),
                expected_ops()
            ));
        }
    }
    if let Some(bad) = sent.iter().find(|c| c.status != Status::Ok) {
        return Err(format!("side {me}: a write ended with {:?}", bad.status));
    }
    let mut ops: Vec<u64> = recv.iter().map(|c| c.op_id).collect();
    ops.sort();
    ops.dedup();
    if ops.len() != expected_ops() || recv.iter().any(|c| c.kind == CompletionKind::Send) {
        return Err(format!("side {me}: receive completions {recv:?}"));
    }
    let mut expect = vec![0u8; REGION];
    for (i, &(off, len, _)) in WRITES.iter().enumerate() {
        expect[off..off + len].copy_from_slice(&pattern(len, u64::from(peer) * 10 + i as u64));
    }
    if node.region(key).as_deref() != Some(&expect[..]) {
        return Err(format!(
            "side {me}: region bytes differ (hash {:x} vs {:x})",
            common::fnv(node.region(key).as_deref().unwrap_or(&[])),
            common::fnv(&expect)
        ));
    }
    Ok(())
}

#[test]
fn two_processes_write_into_each_other_over_shm() {
    if let Ok(name) = std::env::var(CHILD_ENV) {
        // The second process.
        let link = ShmLink::open(&name, Duration::from_secs(20)).expect("open the parent's link");
        side(link, 2, 1, None).unwrap();
        return;
    }
    let name = format!("rdma-test-{}", std::process::id());
    let link = ShmLink::create(&name, LinkConfig::default()).expect("shm link");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args(["--exact", "two_processes_write_into_each_other_over_shm", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &name)
        .spawn()
        .expect("spawn the second process");
    let mut status = None;
    let mut exited = || {
        status = status.or_else(|| child.try_wait().ok().flatten());
        status.is_some()
    };
    let mine = side(link, 1, 2, Some(&mut exited));
    let status = match (status, &mine) {
        (Some(s), _) => s,
        // The child closed its link and is on its way out.
        (None, Ok(())) => child.wait().expect("child"),
        (None, Err(_)) => {
            // We failed first: do not leave the child behind.
            let _ = child.kill();
            child.wait().expect("child")
        }
    };
    mine.unwrap();
    assert!(status.success(), "the second process failed: {status}");
}
