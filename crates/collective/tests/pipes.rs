//! The shared-memory pipes between ranks of one machine ([`collective::pipe`]): three ranks
//! as threads of this process on a fabric with `Config::shm` set. The operations' messages
//! must go through the pipes (the fabric's TCP carries only the set-up), results must be
//! exact, and no pipe file may be left. No timing is asserted; the operation timeout only
//! bounds a broken run.

use collective::{
    fabric_addrs, fabric_host_config, fabric_link_config, Communicator, Config, Endpoint, ReduceOp, ShmFabric,
    Transport,
};
use link::Link;
use std::time::Duration;

const N: usize = 3;

/// What a rank reports: bytes it put on the fabric, then its all-reduce, broadcast, received
/// and all-gather results.
type Outcome = (u64, Vec<f64>, Vec<i32>, Vec<u8>, Vec<i64>);

/// Runs rank `r` of job `name`: large and small operations; returns the bytes its stack
/// put on the fabric and its results.
fn rank(name: &str, r: usize, shm: Option<String>) -> Outcome {
    let fab = ShmFabric::join(name, r, N, fabric_link_config(), Duration::from_secs(20)).unwrap();
    let stack = net::Stack::new(fabric_host_config(r, N).unwrap(), fab).unwrap();
    let cfg = Config { timeout: Duration::from_secs(60), shm, pipe_ring: 64 * 1024, ..Config::default() };
    let mut c = Communicator::new_with_binding(stack, Endpoint::new(r, fabric_addrs(N), cfg).unwrap(), false).unwrap();
    c.connect().unwrap();
    // 8 MiB all-reduce (ring), through rings of 64 KiB: many wrap-arounds.
    let x: Vec<f64> = (0..1 << 20).map(|i| (i % 1000) as f64 * (r + 1) as f64).collect();
    let sum = c.allreduce(&x, ReduceOp::Sum).unwrap();
    let mut in_place = x.clone();
    c.allreduce_in_place(&mut in_place, ReduceOp::Sum).unwrap();
    assert!(in_place == sum, "rank {r}: the in-place all-reduce differs");
    let b = c.bcast(&vec![r as i32 * 7 + 1; 300_000], 2).unwrap();
    // Point-to-point around the ring, 3 MiB each, and a zero-length message.
    let payload: Vec<u8> = (0..3 << 20).map(|i| (i * (r + 3) % 251) as u8).collect();
    let req = c.endpoint().isend((r + 1) % N, 9, &payload).unwrap();
    let got = c.recv::<u8>((r + N - 1) % N, 9, 3 << 20).unwrap();
    c.wait(req).unwrap();
    c.send((r + 1) % N, 10, &[] as &[u8]).unwrap();
    assert!(c.recv::<u8>((r + N - 1) % N, 10, 0).unwrap().is_empty());
    let g = c.allgather(&[r as i64, -(r as i64)]).unwrap();
    c.barrier().unwrap();
    let sent = c.stack().link().stats().tx_bytes;
    c.finalize().unwrap();
    (sent, sum, b, got, g)
}

fn run(tag: &str, transport: Transport) -> Vec<Outcome> {
    let name = format!("coll-pipes-{tag}-{}", std::process::id());
    let shm = transport.shm_job(true, Some(&name)).unwrap();
    let handles: Vec<_> = (0..N)
        .map(|r| {
            let (name, shm) = (name.clone(), shm.clone());
            std::thread::spawn(move || rank(&name, r, shm))
        })
        .collect();
    let out: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with(&format!("linerate-{name}-")))
        .collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
    for (r, (_, sum, b, got, g)) in out.iter().enumerate() {
        assert!(sum.iter().enumerate().all(|(i, &v)| v == (i % 1000) as f64 * 6.0), "rank {r}: all-reduce");
        assert!(b.iter().all(|&v| v == 15) && b.len() == 300_000, "rank {r}: broadcast");
        let from = (r + N - 1) % N;
        assert!(got.iter().enumerate().all(|(i, &v)| v == (i * (from + 3) % 251) as u8), "rank {r}: recv");
        assert_eq!(g, &vec![0, 0, 1, -1, 2, -2], "rank {r}: all-gather");
    }
    out
}

#[test]
fn large_and_small_operations_go_through_the_pipes_exactly_and_leave_no_file() {
    let out = run("shm", Transport::Auto);
    for (r, (sent, ..)) in out.iter().enumerate() {
        // Each rank moves more than 10 MiB; the set-up over TCP is a few kilobytes.
        assert!(*sent < 256 * 1024, "rank {r} sent {sent} bytes over the fabric's TCP: the pipes were bypassed");
    }
}

#[test]
fn the_tcp_override_keeps_every_message_on_the_fabric_tcp() {
    let out = run("tcp", Transport::Tcp);
    for (r, (sent, ..)) in out.iter().enumerate() {
        assert!(*sent > 10 << 20, "rank {r} sent only {sent} bytes over TCP with transport=tcp");
    }
}

/// Rank `r` of 2 of job `name` on a fabric, its operations' messages through pipes with rings
/// of `ring` bytes, with operation timeout `timeout`, its mesh connected.
fn pipe_rank(name: &str, r: usize, ring: usize, timeout: Duration) -> Communicator<ShmFabric> {
    let fab = ShmFabric::join(name, r, 2, fabric_link_config(), Duration::from_secs(20)).unwrap();
    let stack = net::Stack::new(fabric_host_config(r, 2).unwrap(), fab).unwrap();
    let shm = Transport::Auto.shm_job(true, Some(name)).unwrap();
    let cfg = Config { timeout, shm, pipe_ring: ring, ..Config::default() };
    let mut c = Communicator::new_with_binding(stack, Endpoint::new(r, fabric_addrs(2), cfg).unwrap(), false).unwrap();
    c.connect().unwrap();
    c
}

/// Runs `rank(name, r)` for ranks 0 and 1, each on a thread; their results in rank order.
fn on_two_threads<T: Send + 'static>(name: &str, rank: fn(&str, usize) -> T) -> Vec<T> {
    let handles: Vec<_> = (0..2)
        .map(|r| {
            let name = name.to_string();
            std::thread::spawn(move || rank(&name, r))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// What a rank of the direct-transfer test reports: its counters' direct sends and
/// receives, and the error of the receive whose length does not match.
type DirectOutcome = (u64, u64, Option<String>);

/// Rank `r` of 2 for [`blocking_send_and_recv_into_go_straight_between_the_callers_memory_and_the_pipe`].
fn direct_rank(name: &str, r: usize) -> DirectOutcome {
    let mut c = pipe_rank(name, r, 64 * 1024, Duration::from_secs(60));
    let a: Vec<u8> = (0..(1 << 20) + 3).map(|i| (i * 7 % 253) as u8).collect();
    let b: Vec<u32> = (0..(3 << 20) / 4).map(|i| i * 2_654_435_761).collect();
    let back: Vec<f64> = (0..(5 << 20) / 8).map(|i| i as f64 * 0.5).collect();
    let mut mismatch = None;
    if r == 0 {
        c.send(1, 1, &a).unwrap();
        c.send(1, 2, &b).unwrap();
        let mut got = vec![0f64; back.len()];
        c.recv_into(1, 3, &mut got).unwrap();
        assert!(got == back, "rank 0: the 5 MiB reply differs");
        c.send(1, 4, &[1u8; 100]).unwrap();
    } else {
        // Tag 2 first: the tag-1 message before it in the pipe waits in the inbox, and the
        // tag-2 payload goes straight into `gb`.
        let mut gb = vec![0u32; b.len()];
        c.recv_into(0, 2, &mut gb).unwrap();
        let mut ga = vec![0u8; a.len()];
        c.recv_into(0, 1, &mut ga).unwrap();
        assert!(ga == a && gb == b, "rank 1: a message differs");
        c.send(0, 3, &back).unwrap();
        let mut short = vec![0u8; 200];
        mismatch = Some(c.recv_into(0, 4, &mut short).unwrap_err().to_string());
    }
    // Counted before the barrier, whose own messages go through the pipe directly too.
    let k = c.endpoint().counters().clone();
    c.barrier().unwrap();
    c.finalize().unwrap();
    (k.direct_sends, k.direct_recvs, mismatch)
}

#[test]
fn blocking_send_and_recv_into_go_straight_between_the_callers_memory_and_the_pipe() {
    let name = format!("coll-direct-{}", std::process::id());
    let out: Vec<DirectOutcome> = on_two_threads(&name, direct_rank);
    // Rank 0 sent three messages straight from its memory and received the reply straight
    // into its buffer; rank 1 received tag 2 directly, tag 1 (already waiting) the ordinary
    // way, and sent the reply directly.
    assert_eq!((out[0].0, out[0].1), (3, 1), "rank 0 direct sends/receives");
    assert_eq!((out[1].0, out[1].1), (1, 1), "rank 1 direct sends/receives");
    let e = out[1].2.as_deref().unwrap_or_default();
    assert!(e.contains("100 bytes where 200 were expected"), "a receive of the wrong length: {e}");
}

#[test]
fn only_ranks_naming_the_same_host_get_pipes_the_others_stay_on_tcp() {
    // Ranks 0 and 1 say they are on machine "m1", rank 2 on "m2": one pipe (0-1), TCP for
    // everything with rank 2, and every result still exact.
    let name = format!("coll-hostnames-{}", std::process::id());
    let handles: Vec<_> = (0..N)
        .map(|r| {
            let name = name.clone();
            std::thread::spawn(move || {
                let fab = ShmFabric::join(&name, r, N, fabric_link_config(), Duration::from_secs(20)).unwrap();
                let stack = net::Stack::new(fabric_host_config(r, N).unwrap(), fab).unwrap();
                let host = Some(if r < 2 { "m1" } else { "m2" }.to_string());
                let cfg =
                    Config { timeout: Duration::from_secs(60), shm: Some(name.clone()), host, ..Config::default() };
                let mut c =
                    Communicator::new_with_binding(stack, Endpoint::new(r, fabric_addrs(N), cfg).unwrap(), false)
                        .unwrap();
                c.connect().unwrap();
                let x: Vec<i64> = (0..300_000).map(|i| i * (r as i64 + 1)).collect();
                let sum = c.allreduce(&x, ReduceOp::Sum).unwrap();
                assert!(sum.iter().enumerate().all(|(i, &v)| v == i as i64 * 6), "rank {r}: all-reduce");
                let pipes = c.endpoint().counters().pipe_peers;
                let on_tcp = c.stack().link().stats().tx_bytes;
                c.finalize().unwrap();
                (pipes, on_tcp)
            })
        })
        .collect();
    let out: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 1, 0], "peers through pipes per rank");
    // Rank 2 sends its all-reduce share (~1.6 MB) over TCP.
    assert!(out[2].1 > 1 << 20, "rank 2 sent only {} bytes over TCP", out[2].1);
}

/// What a rank of the unaligned-ring test reports: its all-reduce results (f64 sum, i64
/// max into a caller's buffer, u16 sum), its in-place broadcast, and the staged bytes and direct receives of the broadcast
/// whose root started late.
type UnalignedOutcome = (Vec<f64>, Vec<i64>, Vec<u16>, Vec<u16>, u64, u64);

/// Rank `r` of 2 for [`operations_reduce_straight_out_of_unaligned_rings_and_stage_nothing_when_posted_first`].
fn unaligned_rank(name: &str, r: usize) -> UnalignedOutcome {
    let mut c = pipe_rank(name, r, 64 * 1024, Duration::from_secs(60));
    // Odd-length messages first: every later element lies across the rings' positions at
    // odd offsets, so reductions straight out of a ring meet elements split by its end.
    let odd = vec![r as u8; 1001 + 6 * r];
    c.send(1 - r, 1, &odd).unwrap();
    assert_eq!(c.recv::<u8>(1 - r, 1, 1007 - 6 * r).unwrap(), vec![1 - r as u8; 1007 - 6 * r]);
    let f: Vec<f64> = (0..(1 << 17) + 3).map(|i| (i % 977) as f64 * (r + 1) as f64).collect();
    let sum = c.allreduce(&f, ReduceOp::Sum).unwrap();
    // The same reductions working in the caller's buffers (lent to the operation).
    let mut f_in_place = f.clone();
    c.allreduce_in_place(&mut f_in_place, ReduceOp::Sum).unwrap();
    assert!(f_in_place == sum, "rank {r}: the in-place f64 sum differs");
    let m: Vec<i64> = (0..100_003).map(|i| if (i + r).is_multiple_of(2) { i as i64 } else { -(i as i64) }).collect();
    let mut max = vec![0i64; m.len()];
    c.allreduce_into(&m, &mut max, ReduceOp::Max).unwrap();
    let s: Vec<u16> = (0..300_001).map(|i| (i % 60_000) as u16 + r as u16).collect();
    let su = c.allreduce(&s, ReduceOp::Sum).unwrap();
    c.barrier().unwrap();
    // The root starts late: rank 1's broadcast is posted first, so every message of it goes
    // from the ring straight into its buffer and nothing is staged.
    if r == 0 {
        std::thread::sleep(Duration::from_millis(300));
    }
    let before = c.endpoint().counters().clone();
    let mut b = vec![(r as u16 + 1) * 11; (1 << 20) + 1];
    c.bcast_in_place(&mut b, 0).unwrap();
    let after = c.endpoint().counters().clone();
    let owned = c.bcast(&vec![(r as u16 + 1) * 11; (1 << 20) + 1], 0).unwrap();
    assert!(owned == b, "rank {r}: the in-place broadcast differs");
    c.barrier().unwrap();
    c.finalize().unwrap();
    (sum, max, su, b, after.staged_bytes - before.staged_bytes, after.direct_recvs - before.direct_recvs)
}

#[test]
fn operations_reduce_straight_out_of_unaligned_rings_and_stage_nothing_when_posted_first() {
    let name = format!("coll-unaligned-{}", std::process::id());
    let out: Vec<UnalignedOutcome> = on_two_threads(&name, unaligned_rank);
    for (r, (sum, max, su, b, ..)) in out.iter().enumerate() {
        assert!(sum.iter().enumerate().all(|(i, &v)| v == (i % 977) as f64 * 3.0), "rank {r}: f64 sum");
        assert!(max.iter().enumerate().all(|(i, &v)| v == i as i64), "rank {r}: i64 max");
        assert!(su.iter().enumerate().all(|(i, &v)| v == 2 * (i % 60_000) as u16 + 1), "rank {r}: u16 sum");
        assert!(b.len() == (1 << 20) + 1 && b.iter().all(|&v| v == 11), "rank {r}: broadcast");
    }
    let (staged, direct) = (out[1].4, out[1].5);
    assert_eq!(staged, 0, "rank 1 staged {staged} bytes of a broadcast it had posted before the root started");
    assert!(direct >= 32, "rank 1 received only {direct} broadcast messages straight from the ring");
}

/// Rank `r` of 2 for [`a_failed_operation_in_a_lent_buffer_is_removed_before_the_call_returns`]:
/// the error of an all-reduce whose lengths differ between the ranks, and the operations
/// still in flight afterwards.
fn mismatched_rank(name: &str, r: usize) -> (String, usize) {
    let mut c = pipe_rank(name, r, collective::pipe::DEFAULT_PIPE_RING, Duration::from_secs(3));
    let mut buf = vec![1.0f64; 100_000 + r];
    let e = c.allreduce_in_place(&mut buf, ReduceOp::Sum).unwrap_err().to_string();
    drop(buf);
    (e, c.endpoint().in_flight())
}

#[test]
fn a_failed_operation_in_a_lent_buffer_is_removed_before_the_call_returns() {
    let name = format!("coll-lent-fail-{}", std::process::id());
    for (r, (e, in_flight)) in on_two_threads(&name, mismatched_rank).into_iter().enumerate() {
        assert!(!e.is_empty(), "rank {r}: no error");
        assert_eq!(in_flight, 0, "rank {r}: the failed operation ({e}) is still in the endpoint");
    }
}

/// Rank `r` of 2 for [`borrowed_sends_keep_the_order_of_every_send_and_copy_nothing`]: what
/// rank 1 received, in order, and rank 0's staged-byte count of its borrowed sends.
fn borrowed_rank(name: &str, r: usize) -> (Vec<Vec<u32>>, u64) {
    let mut c = pipe_rank(name, r, 64 * 1024, Duration::from_secs(60));
    // Five messages of one tag, each larger than the ring, through borrowed, copying and
    // blocking sends mixed: rank 1 must get them in the order they were sent.
    let msgs: Vec<Vec<u32>> = (0..5u32).map(|k| (0..100_000 + k).map(|i| i * 31 + k).collect()).collect();
    let mut got = Vec::new();
    let mut staged = 0;
    if r == 0 {
        let before = c.endpoint().counters().staged_bytes;
        // SAFETY: `msgs` outlives the requests, which are waited for below.
        let a = unsafe { c.endpoint().isend_borrowed(1, 5, &msgs[0]) }.unwrap();
        let b = c.endpoint().isend(1, 5, &msgs[1]).unwrap();
        // SAFETY: as above.
        let d = unsafe { c.endpoint().isend_borrowed(1, 5, &msgs[2]) }.unwrap();
        c.send(1, 5, &msgs[3]).unwrap();
        // SAFETY: detached below before `msgs` goes away; it is copied then.
        let e = unsafe { c.endpoint().isend_borrowed(1, 5, &msgs[4]) }.unwrap();
        c.endpoint().detach(e);
        for q in [a, d] {
            c.wait(q).unwrap();
        }
        c.wait(b).unwrap();
        // Only the copying send and the detached one (not started: four messages of 400 KB
        // go through the 64 KiB ring before it) were copied; the blocking send lent its data.
        staged = c.endpoint().counters().staged_bytes - before;
        assert_eq!(staged, 400_004 + 400_016, "rank 0 staged bytes");
    } else {
        for k in 0..5 {
            got.push(c.recv::<u32>(0, 5, 100_000 + k).unwrap());
        }
    }
    c.barrier().unwrap();
    c.finalize().unwrap();
    (got, staged)
}

#[test]
fn borrowed_sends_keep_the_order_of_every_send_and_copy_nothing() {
    let name = format!("coll-borrowed-{}", std::process::id());
    let out = on_two_threads(&name, borrowed_rank);
    for (k, m) in out[1].0.iter().enumerate() {
        let k = k as u32;
        assert!(m.len() == 100_000 + k as usize, "message {k}: {} elements", m.len());
        assert!(m.iter().enumerate().all(|(i, &v)| v == i as u32 * 31 + k), "message {k} differs or came out of order");
    }
}
