//! Every operation, element type and reduction operator on 1, 2, 3, 4 and 7 ranks of the
//! in-process testbed (virtual time), against references computed here.

mod common;

use collective::{bf16, f16, AllreduceAlgo, CollectiveError, Element, Endpoint, ReduceOp, Request, TreeAlgo};
use common::{Rng, World};
use std::fmt::Debug;
use std::time::Duration;

/// Test-side view of an element type: built from an `i64`, with its integer wrap-around.
trait TE: Element + PartialEq + Debug {
    const INT: bool;
    fn from_i64(v: i64) -> Self;
    /// Truncates to the type's width (integers) or keeps the value (floats).
    fn wrap(v: i64) -> i64;
}

impl TE for i32 {
    const INT: bool = true;
    fn from_i64(v: i64) -> Self {
        v as i32
    }
    fn wrap(v: i64) -> i64 {
        v as i32 as i64
    }
}
impl TE for i64 {
    const INT: bool = true;
    fn from_i64(v: i64) -> Self {
        v
    }
    fn wrap(v: i64) -> i64 {
        v
    }
}
impl TE for f32 {
    const INT: bool = false;
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    fn wrap(v: i64) -> i64 {
        v
    }
}
impl TE for f64 {
    const INT: bool = false;
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    fn wrap(v: i64) -> i64 {
        v
    }
}
impl TE for f16 {
    const INT: bool = false;
    fn from_i64(v: i64) -> Self {
        f16::from_f64(v as f64)
    }
    fn wrap(v: i64) -> i64 {
        v
    }
}
impl TE for bf16 {
    const INT: bool = false;
    fn from_i64(v: i64) -> Self {
        bf16::from_f64(v as f64)
    }
    fn wrap(v: i64) -> i64 {
        v
    }
}

const OPS: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min];

/// Values whose reductions are exact in every type: small integers for floats (products of
/// +-1 and +-2 stay within 2^7 on 7 ranks), the full range for integers (which wrap).
fn values<T: TE>(rng: &mut Rng, op: ReduceOp, len: usize) -> Vec<i64> {
    (0..len)
        .map(|_| {
            if T::INT {
                T::wrap(rng.next() as i64)
            } else if op == ReduceOp::Prod {
                [-2, -1, 1, 2][rng.below(4) as usize]
            } else {
                rng.below(17) as i64 - 8
            }
        })
        .collect()
}

/// The plain reference: fold over ranks in `i64` arithmetic (wrapping like the integers).
fn reference<T: TE>(op: ReduceOp, per_rank: &[Vec<i64>]) -> Vec<T> {
    (0..per_rank[0].len())
        .map(|e| {
            let v = per_rank.iter().map(|x| x[e]).reduce(|a, b| match op {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
                ReduceOp::Max => a.max(b),
                ReduceOp::Min => a.min(b),
                other => panic!("this test has no reference for {other:?}: add one with the new operation"),
            });
            T::from_i64(T::wrap(v.unwrap_or(0)))
        })
        .collect()
}

fn conv<T: TE>(v: &[i64]) -> Vec<T> {
    v.iter().map(|&x| T::from_i64(x)).collect()
}

/// What one started operation must produce on each rank.
struct Case<T> {
    label: String,
    reqs: Vec<(usize, Request<T>)>,
    expect: Vec<Vec<T>>,
}

fn start_all<T: TE>(w: &mut World, f: impl Fn(usize, &mut Endpoint) -> Request<T>) -> Vec<(usize, Request<T>)> {
    (0..w.n()).map(|r| (r, f(r, &mut w.eps[r]))).collect()
}

fn every_operation<T: TE>(w: &mut World, seed: u64) {
    let n = w.n();
    let mut rng = Rng(seed);
    let mut cases: Vec<Case<T>> = Vec::new();
    const LEN: usize = 13;
    const CHUNK: usize = 3;
    for op in OPS {
        let xs: Vec<Vec<i64>> = (0..n).map(|_| values::<T>(&mut rng, op, LEN)).collect();
        let red = reference::<T>(op, &xs);
        let algos =
            [AllreduceAlgo::ReduceBcast, AllreduceAlgo::Ring, AllreduceAlgo::RecursiveDoubling, AllreduceAlgo::Auto];
        for algo in algos {
            let reqs = start_all(w, |r, ep| ep.iallreduce_with(&conv::<T>(&xs[r]), op, algo));
            cases.push(Case { label: format!("all-reduce {algo:?} {op:?}"), reqs, expect: vec![red.clone(); n] });
        }
        for algo in [TreeAlgo::Flat, TreeAlgo::Tree, TreeAlgo::Chain] {
            let root = n / 2;
            let reqs = start_all(w, |r, ep| ep.ireduce_with(&conv::<T>(&xs[r]), op, root, algo).unwrap());
            let expect = (0..n).map(|r| if r == root { red.clone() } else { Vec::new() }).collect();
            cases.push(Case { label: format!("reduce {algo:?} {op:?} root {root}"), reqs, expect });
        }
        // Reduce-scatter: n chunks per rank.
        let ys: Vec<Vec<i64>> = (0..n).map(|_| values::<T>(&mut rng, op, n * CHUNK)).collect();
        let full = reference::<T>(op, &ys);
        let reqs = start_all(w, |r, ep| ep.ireduce_scatter(&conv::<T>(&ys[r]), op).unwrap());
        let expect = (0..n).map(|r| full[r * CHUNK..(r + 1) * CHUNK].to_vec()).collect();
        cases.push(Case { label: format!("reduce-scatter {op:?}"), reqs, expect });
    }
    let xs: Vec<Vec<i64>> = (0..n).map(|_| values::<T>(&mut rng, ReduceOp::Sum, LEN)).collect();
    for algo in [TreeAlgo::Flat, TreeAlgo::Tree, TreeAlgo::Chain] {
        let root = n - 1;
        let reqs = start_all(w, |r, ep| ep.ibcast_with(&conv::<T>(&xs[r]), root, algo).unwrap());
        cases.push(Case { label: format!("broadcast {algo:?}"), reqs, expect: vec![conv(&xs[root]); n] });
    }
    // Scatter from rank 0 of n chunks.
    let all: Vec<i64> = values::<T>(&mut rng, ReduceOp::Sum, n * CHUNK);
    let reqs = start_all(w, |r, ep| {
        let data = if r == 0 { conv::<T>(&all) } else { Vec::new() };
        ep.iscatter(&data, CHUNK, 0).unwrap()
    });
    let expect = (0..n).map(|r| conv(&all[r * CHUNK..(r + 1) * CHUNK])).collect();
    cases.push(Case { label: "scatter".into(), reqs, expect });
    // Gather to the middle rank, all-gather: rank order.
    let cs: Vec<Vec<i64>> = (0..n).map(|_| values::<T>(&mut rng, ReduceOp::Sum, CHUNK)).collect();
    let cat: Vec<T> = cs.iter().flat_map(|c| conv::<T>(c)).collect();
    let root = n / 2;
    let reqs = start_all(w, |r, ep| ep.igather(&conv::<T>(&cs[r]), root).unwrap());
    let expect = (0..n).map(|r| if r == root { cat.clone() } else { Vec::new() }).collect();
    cases.push(Case { label: "gather".into(), reqs, expect });
    let reqs = start_all(w, |r, ep| ep.iallgather(&conv::<T>(&cs[r])));
    cases.push(Case { label: "all-gather".into(), reqs, expect: vec![cat; n] });
    // All-to-all: chunk j of rank i goes to rank j at position i.
    let a2a: Vec<Vec<i64>> = (0..n).map(|_| values::<T>(&mut rng, ReduceOp::Sum, n * CHUNK)).collect();
    let reqs = start_all(w, |r, ep| ep.ialltoall(&conv::<T>(&a2a[r])).unwrap());
    let expect =
        (0..n).map(|j| (0..n).flat_map(|i| conv::<T>(&a2a[i][j * CHUNK..(j + 1) * CHUNK])).collect()).collect();
    cases.push(Case { label: "all-to-all".into(), reqs, expect });
    // Point-to-point around the ring, two messages with different tags each.
    if n > 1 {
        let mut reqs = Vec::new();
        let mut expect = Vec::new();
        for (r, x) in xs.iter().enumerate() {
            for tag in [5u32, 9] {
                let data = conv::<T>(&x[..(tag as usize)]);
                reqs.push((r, w.eps[r].isend((r + 1) % n, tag, &data).unwrap()));
                expect.push(Vec::new());
            }
        }
        // Receive tag 9 first: matching is by tag, not by arrival.
        for r in 0..n {
            let from = (r + n - 1) % n;
            for tag in [9u32, 5] {
                reqs.push((r, w.eps[r].irecv::<T>(from, tag, tag as usize).unwrap()));
                expect.push(conv(&xs[from][..(tag as usize)]));
            }
        }
        let res = w.run_pairs(reqs, Duration::from_secs(10));
        for (i, (got, want)) in res.into_iter().zip(expect).enumerate() {
            assert_eq!(got.unwrap(), want, "send/recv #{i} on {n} ranks");
        }
    }
    // Run every collective concurrently (they were all started, in the same order on every rank).
    let barrier: Vec<(usize, Request<i32>)> = (0..n).map(|r| (r, w.eps[r].ibarrier())).collect();
    let mut flat = Vec::new();
    let mut owners = Vec::new();
    for (ci, c) in cases.iter_mut().enumerate() {
        for (k, req) in c.reqs.drain(..).enumerate() {
            flat.push(req);
            owners.push((ci, k));
        }
    }
    let res = w.run_pairs(flat, Duration::from_secs(30));
    for (got, (ci, k)) in res.into_iter().zip(owners) {
        let c = &cases[ci];
        match got {
            Ok(v) => assert_eq!(v, c.expect[k], "{} on rank {k} of {n} ({})", c.label, std::any::type_name::<T>()),
            Err(e) => panic!("{} on rank {k} of {n}: {e}", c.label),
        }
    }
    for r in w.run_pairs(barrier, Duration::from_secs(10)) {
        assert_eq!(r.unwrap(), Vec::<i32>::new());
    }
}

fn every_type(n: usize) {
    // Chain segments of 8 bytes: the 13-element buffers go in several pipelined segments.
    let cfg = collective::Config { chain_segment: 8, ..collective::Config::default() };
    let mut w = World::with(n, cfg, None);
    every_operation::<i32>(&mut w, 1);
    every_operation::<i64>(&mut w, 2);
    every_operation::<f32>(&mut w, 3);
    every_operation::<f64>(&mut w, 4);
    every_operation::<f16>(&mut w, 5);
    every_operation::<bf16>(&mut w, 6);
    for ep in &w.eps {
        let c = ep.counters();
        assert_eq!((c.ops_failed, c.protocol_errors), (0, 0), "rank {}", ep.rank());
        assert_eq!(ep.in_flight(), 0);
    }
}

#[test]
fn every_operation_type_and_op_on_1_rank() {
    every_type(1);
}

#[test]
fn every_operation_type_and_op_on_2_ranks() {
    every_type(2);
}

#[test]
fn every_operation_type_and_op_on_3_ranks() {
    every_type(3);
}

#[test]
fn every_operation_type_and_op_on_4_ranks() {
    every_type(4);
}

#[test]
fn every_operation_type_and_op_on_7_ranks() {
    every_type(7);
}

fn random_f64(n: usize, len: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = Rng(seed);
    (0..n).map(|_| (0..len).map(|_| (rng.unit() - 0.5) * 1e3 / (1.0 + rng.unit() * 1e3)).collect()).collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn tree_ref(xs: &[Vec<f64>], v: usize, n: usize, root: usize, e: usize) -> f64 {
    let mut acc = xs[(v + root) % n][e];
    for c in [2 * v + 1, 2 * v + 2] {
        if c < n {
            acc += tree_ref(xs, c, n, root, e);
        }
    }
    acc
}

#[test]
fn float_reductions_follow_the_documented_order_bit_for_bit() {
    for n in [3usize, 4, 7] {
        let len = 29;
        let xs = random_f64(n, len, 40 + n as u64);
        let mut w = World::new(n);
        // Flat reduce: rank order.
        let root = 1;
        let got = w.all(|r, ep| ep.ireduce_with(&xs[r], ReduceOp::Sum, root, TreeAlgo::Flat).unwrap());
        let want: Vec<f64> = (0..len).map(|e| xs.iter().skip(1).fold(xs[0][e], |a, x| a + x[e])).collect();
        assert_eq!(bits(&got[root]), bits(&want), "flat reduce on {n}");
        // Tree reduce: own value, then children.
        let got = w.all(|r, ep| ep.ireduce_with(&xs[r], ReduceOp::Sum, root, TreeAlgo::Tree).unwrap());
        let want: Vec<f64> = (0..len).map(|e| tree_ref(&xs, 0, n, root, e)).collect();
        assert_eq!(bits(&got[root]), bits(&want), "tree reduce on {n}");
        // Ring: chunk c accumulated from rank c+1 around to rank c.
        let got = w.all(|r, ep| ep.iallreduce_with(&xs[r], ReduceOp::Sum, AllreduceAlgo::Ring));
        let want: Vec<f64> = (0..len)
            .map(|e| {
                let c = (0..n).find(|&c| collective::schedule::part(len, n, c, 1).contains(&e)).unwrap();
                (2..=n).fold(xs[(c + 1) % n][e], |a, k| a + xs[(c + k) % n][e])
            })
            .collect();
        for (r, g) in got.iter().enumerate() {
            assert_eq!(bits(g), bits(&want), "ring all-reduce on rank {r} of {n}");
        }
        // Chain reduce: x0 op (x1 op (... op x(n-1))) in ranks relative to the root.
        let got = w.all(|r, ep| ep.ireduce_with(&xs[r], ReduceOp::Sum, root, TreeAlgo::Chain).unwrap());
        let want: Vec<f64> = (0..len)
            .map(|e| (0..n - 1).rev().fold(xs[(n - 1 + root) % n][e], |a, v| xs[(v + root) % n][e] + a))
            .collect();
        assert_eq!(bits(&got[root]), bits(&want), "chain reduce on {n}");
        // Recursive doubling and reduce+broadcast: every rank the same bits, and the same
        // bits again on a second run.
        for algo in [AllreduceAlgo::RecursiveDoubling, AllreduceAlgo::ReduceBcast] {
            let a = w.all(|r, ep| ep.iallreduce_with(&xs[r], ReduceOp::Sum, algo));
            let b = w.all(|r, ep| ep.iallreduce_with(&xs[r], ReduceOp::Sum, algo));
            for r in 0..n {
                assert_eq!(bits(&a[r]), bits(&a[0]), "{algo:?} rank {r} of {n}");
                assert_eq!(bits(&a[r]), bits(&b[r]), "{algo:?} repeat on rank {r} of {n}");
                let exact: f64 = (0..n).map(|k| xs[k][0]).sum();
                assert!((a[r][0] - exact).abs() <= 1e-9 * (1.0 + exact.abs()));
            }
        }
    }
}

#[test]
fn large_all_reduce_uses_the_ring_and_is_exact() {
    for n in [4usize, 7] {
        let mut w = World::new(n);
        let len = 50_000;
        let mut rng = Rng(n as u64);
        let xs: Vec<Vec<i64>> = (0..n).map(|_| (0..len).map(|_| rng.below(2001) as i64 - 1000).collect()).collect();
        assert_eq!(w.eps[0].auto_allreduce(len, 4), AllreduceAlgo::Ring);
        let got = w.all(|r, ep| ep.iallreduce(&conv::<f32>(&xs[r]), ReduceOp::Sum).unwrap());
        let want = reference::<f32>(ReduceOp::Sum, &xs);
        for g in &got {
            assert_eq!(g, &want);
        }
        let got = w.all(|r, ep| ep.iallreduce_with(&xs[r], ReduceOp::Max, AllreduceAlgo::ReduceBcast));
        assert_eq!(got[n - 1], reference::<i64>(ReduceOp::Max, &xs));
    }
}

#[test]
fn large_all_gather_and_reduce_scatter_travel_in_segments_and_are_exact() {
    // 3 and 4 ranks, chunks of 100,000 i64 (800 KB): the ring's steps go in segments of
    // `chain_segment` (64 KiB), each copied or reduced as it arrives.
    for n in [3usize, 4] {
        let mut w = World::new(n);
        let chunk = 100_000;
        let mut rng = Rng(10 + n as u64);
        let ys: Vec<Vec<i64>> =
            (0..n).map(|_| (0..n * chunk).map(|_| rng.below(2001) as i64 - 1000).collect()).collect();
        let full = reference::<i64>(ReduceOp::Sum, &ys);
        let got = w.all(|r, ep| ep.ireduce_scatter(&ys[r], ReduceOp::Sum).unwrap());
        for (r, g) in got.iter().enumerate() {
            assert!(g[..] == full[r * chunk..(r + 1) * chunk], "reduce-scatter on {n} ranks: rank {r}");
        }
        let cs: Vec<Vec<i64>> = (0..n).map(|r| ys[r][..chunk].to_vec()).collect();
        let cat: Vec<i64> = cs.concat();
        let got = w.all(|r, ep| ep.iallgather(&cs[r]));
        assert!(got.iter().all(|g| *g == cat), "all-gather on {n} ranks");
    }
}

#[test]
fn mismatched_lengths_are_a_reported_error_not_a_panic() {
    let mut w = World::new(2);
    let reqs = vec![
        (0, w.eps[0].iallreduce_with(&[1i32, 2, 3], ReduceOp::Sum, AllreduceAlgo::RecursiveDoubling)),
        (1, w.eps[1].iallreduce_with(&[1i32, 2], ReduceOp::Sum, AllreduceAlgo::RecursiveDoubling)),
    ];
    let res = w.run_pairs(reqs, Duration::from_secs(20));
    for r in res {
        assert!(matches!(r, Err(CollectiveError::Protocol { .. })), "{r:?}");
    }
    assert!(w.eps[0].ibcast(&[1i32], 5).is_err());
    assert!(w.eps[0].isend(0, 1, &[1i32]).is_err());
    assert!(w.eps[0].ireduce_scatter(&[1i32, 2, 3], ReduceOp::Sum).is_err());
}

#[test]
fn a_stream_of_chunks_is_consumed_while_later_chunks_are_in_flight() {
    let mut w = World::new(2);
    let total = 400_000; // 1.6 MB of i32: many windows' worth
    let data: Vec<i32> = (0..total as i32).collect();
    let sends = w.eps[0].isend_stream(1, 42, &data, 50_000).unwrap();
    let mut rx = w.eps[1].irecv_stream::<i32>(0, 42, total, 50_000).unwrap();
    assert_eq!(rx.remaining(), 8);
    let mut got = Vec::new();
    let mut overlapped = false;
    for _ in 0..1_000_000 {
        while let Some(chunk) = rx.next_chunk(&mut w.eps[1]).unwrap() {
            // "Compute" on the chunk; note whether later chunks were still on the way.
            overlapped |= rx.remaining() > 0 && w.eps[1].counters().msgs_received < 8;
            got.extend(chunk);
        }
        if rx.is_done() {
            break;
        }
        w.step();
    }
    assert_eq!(got, data);
    assert_eq!(rx.received(), 8);
    assert!(overlapped, "every chunk had arrived before the first was handed out");
    for s in sends {
        assert_eq!(w.eps[0].test(&s).unwrap(), Some(Vec::new()));
    }
    assert!(w.eps[0].isend_stream(1, 1, &data, 0).is_err());
}

/// Large messages in a row (their buffers come back from the endpoint's pool with the last
/// one's bytes in them), received both as new vectors and into the caller's memory; a
/// receive into a buffer of the wrong length is an error, not a partial copy.
#[test]
fn repeated_large_messages_and_receives_into_caller_memory() {
    let mut w = World::new(2);
    let mut into = vec![0i64; 40_000];
    for round in 0..6i64 {
        let data: Vec<i64> = (0..40_000).map(|i| i * 3 + round).collect();
        let s = w.eps[0].isend(1, 4, &data).unwrap();
        let r = w.eps[1].irecv::<i64>(0, 4, data.len()).unwrap();
        let mut done = false;
        for _ in 0..100_000 {
            if round % 2 == 0 {
                done = w.eps[1].test_into(&r, &mut into).unwrap();
            } else if let Some(v) = w.eps[1].test(&r).unwrap() {
                into = v;
                done = true;
            }
            if done {
                break;
            }
            w.step();
        }
        assert!(done, "round {round}: the receive did not finish");
        assert_eq!(into, data, "round {round}");
        assert_eq!(w.run_pairs(vec![(0, s)], Duration::from_secs(1)).pop().unwrap().unwrap(), Vec::<i64>::new());
        // The all-reduce's working buffers are pooled too: stale bytes must not leak in.
        let sums = w.all(|_, ep| ep.iallreduce_with(&data[..9000], ReduceOp::Sum, AllreduceAlgo::Ring));
        let want: Vec<i64> = data[..9000].iter().map(|x| 2 * x).collect();
        assert_eq!(sums, vec![want.clone(), want], "round {round}");
    }
    let _ = w.eps[0].isend(1, 5, &[1i64, 2, 3]).unwrap();
    let r = w.eps[1].irecv::<i64>(0, 5, 3).unwrap();
    let mut short = [0i64; 2];
    let err = loop {
        match w.eps[1].test_into(&r, &mut short) {
            Ok(false) => w.step(),
            Ok(true) => panic!("3 elements went into a buffer of 2"),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, CollectiveError::BadArgument(_)), "{err}");
}

#[test]
fn probe_finds_the_first_unreceived_message_by_peer_and_tag_mask() {
    let mut w = World::new(3);
    // Rank 0 and rank 1 each send two messages to rank 2, on tags of two contexts.
    let sends = vec![
        (0, w.eps[0].isend(2, 0x10_0005, &[1u8, 2, 3]).unwrap()),
        (0, w.eps[0].isend(2, 0x20_0001, &[9u8; 10]).unwrap()),
        (1, w.eps[1].isend(2, 0x20_0007, &[7u8; 8]).unwrap()),
    ];
    w.run_pairs(sends, Duration::from_secs(10)).into_iter().for_each(|r| assert!(r.is_ok()));
    for _ in 0..2000 {
        if w.eps[2].probe(Some(1), 0, 0).is_some() && w.eps[2].probe(Some(0), 0x20_0000, 0xFFF0_0000).is_some() {
            break;
        }
        w.step();
    }
    // Exact tag, any peer; a context's any tag from one peer; any tag from anyone.
    assert_eq!(w.eps[2].probe(None, 0x10_0005, u32::MAX), Some((0, 0x10_0005, 3)));
    assert_eq!(w.eps[2].probe(Some(1), 0x20_0000, 0xFFF0_0000), Some((1, 0x20_0007, 8)));
    assert_eq!(w.eps[2].probe(Some(0), 0x20_0000, 0xFFF0_0000), Some((0, 0x20_0001, 10)));
    assert_eq!(w.eps[2].probe(None, 0, 0), Some((0, 0x10_0005, 3)));
    assert_eq!(w.eps[2].probe(None, 0x30_0000, 0xFFF0_0000), None);
    assert_eq!(w.eps[0].probe(None, 0, 0), None);
    // A receive takes the probed message; the probe then sees the next one.
    let rx = w.eps[2].irecv::<u8>(0, 0x10_0005, 3).unwrap();
    let got = w.run_pairs(vec![(2, rx)], Duration::from_secs(10));
    assert_eq!(got[0].as_ref().unwrap(), &vec![1u8, 2, 3]);
    assert_eq!(w.eps[2].probe(Some(0), 0, 0), Some((0, 0x20_0001, 10)));
}

#[test]
fn narrow_and_unsigned_integers_reduce_with_bitwise_and_logical_operators() {
    for n in [1, 2, 3, 4] {
        let mut w = World::new(n);
        let xs: Vec<Vec<u8>> = (0..n).map(|r| vec![r as u8 * 100, 0b1010 | r as u8, 255, (r % 2) as u8]).collect();
        // A logical operator sees every input as its truth value (also a rank's value alone).
        let fold = |f: fn(u8, u8) -> u8, logical: bool| {
            let truth = |v: u8| if logical { u8::from(v != 0) } else { v };
            (0..4).map(|i| xs.iter().map(|x| truth(x[i])).reduce(f).unwrap()).collect::<Vec<_>>()
        };
        for (op, f) in [
            (ReduceOp::Sum, (|a: u8, b: u8| a.wrapping_add(b)) as fn(u8, u8) -> u8),
            (ReduceOp::Band, |a, b| a & b),
            (ReduceOp::Bor, |a, b| a | b),
            (ReduceOp::Bxor, |a, b| a ^ b),
            (ReduceOp::Land, |a, b| u8::from(a != 0 && b != 0)),
            (ReduceOp::Lor, |a, b| u8::from(a != 0 || b != 0)),
        ] {
            let want = fold(f, op.is_logical());
            for algo in [AllreduceAlgo::Ring, AllreduceAlgo::RecursiveDoubling, AllreduceAlgo::ReduceBcast] {
                let got = w.all(|r, ep| ep.iallreduce_with(&xs[r], op, algo));
                assert!(got.iter().all(|g| *g == want), "{n} ranks {op:?} {algo:?}: {got:?} != {want:?}");
            }
        }
        let ys: Vec<Vec<u32>> = (0..n).map(|r| vec![u32::MAX - r as u32, r as u32]).collect();
        let got = w.all(|r, ep| ep.iallreduce(&ys[r], ReduceOp::Max).unwrap());
        assert_eq!(got[0], vec![u32::MAX, n as u32 - 1]);
    }
}
