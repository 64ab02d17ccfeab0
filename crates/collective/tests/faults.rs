//! Faults: impaired links (TCP carries the collectives through loss and reordering), a rank
//! that hangs and a rank that dies; the others fail within the timeout, naming the ranks.

mod common;

use collective::{AllreduceAlgo, CollectiveError, Config, ReduceOp, TreeAlgo};
use common::{Rng, World};
use link::impair::Impairment;
use std::time::Duration;

#[test]
fn collectives_are_correct_over_lossy_reordering_links() {
    let imp = Impairment { loss: 0.02, reorder: 0.02, duplicate: 0.01, seed: 11, ..Default::default() };
    let n = 4;
    let mut w = World::with(n, Config::default(), Some(imp));
    let mut rng = Rng(3);
    let len = 20_000;
    let xs: Vec<Vec<i64>> = (0..n).map(|_| (0..len).map(|_| rng.next() as i64).collect()).collect();
    let want: Vec<i64> = (0..len).map(|e| xs.iter().fold(0i64, |a, x| a.wrapping_add(x[e]))).collect();
    for algo in [AllreduceAlgo::Ring, AllreduceAlgo::RecursiveDoubling, AllreduceAlgo::ReduceBcast] {
        let got = w.all(|r, ep| ep.iallreduce_with(&xs[r], ReduceOp::Sum, algo));
        for (r, g) in got.iter().enumerate() {
            assert!(g == &want, "{algo:?} on rank {r} differs");
        }
    }
    let got = w.all(|r, ep| ep.ibcast_with(&xs[r], 2, TreeAlgo::Tree).unwrap());
    assert!(got.iter().all(|g| g == &xs[2]));
    let got = w.all(|r, ep| ep.ialltoall(&xs[r]).unwrap());
    let c = len / n;
    for (j, g) in got.iter().enumerate() {
        let want: Vec<i64> = (0..n).flat_map(|i| xs[i][j * c..(j + 1) * c].to_vec()).collect();
        assert!(g == &want, "all-to-all at rank {j}");
    }
    // The links really were impaired: some segment was retransmitted somewhere.
    let retrans: u64 = (0..n).map(|i| w.tb.host_ref(w.ids[i]).counters().get(net::Counter::tcp_retransmits)).sum();
    assert!(retrans > 0, "no retransmission: the impairment did nothing");
}

fn short_timeout() -> Config {
    Config { timeout: Duration::from_millis(200), ..Config::default() }
}

#[test]
fn a_hung_rank_is_named_by_the_others_within_the_timeout() {
    let n = 4;
    let mut w = World::with(n, short_timeout(), None);
    // Warm up: one all-reduce that works.
    let ok = w.all(|r, ep| ep.iallreduce_with(&[r as i32], ReduceOp::Sum, AllreduceAlgo::ReduceBcast));
    assert_eq!(ok[3], vec![6]);
    // Rank 2 hangs: its stack still answers TCP, but it never enters the next all-reduce.
    w.hung[2] = true;
    let reqs = (0..n)
        .filter(|&r| r != 2)
        .map(|r| (r, w.eps[r].iallreduce_with(&[1i32; 100], ReduceOp::Sum, AllreduceAlgo::ReduceBcast)))
        .collect();
    let start = w.tb.now();
    let res = w.run_pairs(reqs, Duration::from_secs(5));
    let took = w.tb.now() - start;
    assert!(took <= Duration::from_millis(210), "failed only after {took:?}");
    for (i, r) in res.into_iter().enumerate() {
        let rank = [0, 1, 3][i];
        match r {
            // The root waits for rank 2's contribution in the reduce step.
            Err(CollectiveError::Timeout { op, step, waiting_for, .. }) if rank == 0 => {
                assert_eq!((op, step, waiting_for), ("all-reduce", 0, vec![2]));
            }
            // The others wait for the root's broadcast, which never comes.
            Err(CollectiveError::Timeout { waiting_for, step, .. }) => assert_eq!((waiting_for, step), (vec![0], 1)),
            other => panic!("rank {rank}: {other:?}"),
        }
    }
}

#[test]
fn a_rank_that_dies_mid_all_reduce_is_named_as_lost() {
    let n = 4;
    let mut w = World::with(n, short_timeout(), None);
    let len = 200_000; // large enough that the ring is still running when rank 1 dies
    let reqs: Vec<_> =
        (0..n).map(|r| (r, w.eps[r].iallreduce_with(&vec![1i64; len], ReduceOp::Sum, AllreduceAlgo::Ring))).collect();
    for _ in 0..30 {
        w.step();
    }
    let id = w.ids[1];
    w.eps[1].abort(w.tb.host(id));
    w.hung[1] = true;
    let start = w.tb.now();
    let res = w.run_pairs(reqs, Duration::from_secs(5));
    assert!(w.tb.now() - start <= Duration::from_millis(210));
    let mut named = 0;
    for (r, res) in res.into_iter().enumerate() {
        match res {
            Err(CollectiveError::PeerLost { rank: 1, op: "all-reduce", .. }) => named += 1,
            Err(CollectiveError::Timeout { op: "all-reduce", waiting_for, .. }) if r != 1 => {
                assert!(!waiting_for.is_empty());
            }
            Err(CollectiveError::PeerLost { rank: 1, .. }) if r == 1 => {}
            other => panic!("rank {r}: {other:?}"),
        }
    }
    // Rank 2 waits for rank 1 (its ring predecessor) and sees the reset.
    assert!(named >= 1, "nobody named rank 1");
}

#[test]
fn setup_times_out_naming_the_missing_ranks() {
    // Three addresses, but rank 2 never starts: ranks 0 and 1 report it.
    let cfg = Config { connect_timeout: Duration::from_millis(50), ..Config::default() };
    let mut tb = testbed::Testbed::default();
    let ids: Vec<_> = (1..=3).map(|i| tb.add_host(&format!("10.0.0.{i}/24")).unwrap()).collect();
    let addrs: Vec<_> = ids.iter().map(|&h| std::net::SocketAddr::new(tb.host_ref(h).ip().into(), 7470)).collect();
    let mut eps: Vec<_> = (0..2).map(|r| collective::Endpoint::new(r, addrs.clone(), cfg.clone()).unwrap()).collect();
    for _ in 0..10_000 {
        let now = tb.now();
        tb.step().unwrap();
        for (r, ep) in eps.iter_mut().enumerate() {
            ep.progress(tb.host(ids[r]), now).unwrap();
        }
        if eps.iter().all(|e| e.mesh_state().is_err()) {
            break;
        }
    }
    for ep in &eps {
        match ep.mesh_state() {
            Err(CollectiveError::SetupTimeout { waiting_for, .. }) => assert_eq!(waiting_for, vec![2]),
            other => panic!("rank {}: {other:?}", ep.rank()),
        }
    }
    assert!(tb.now() <= link::Instant::from_millis(60));
}

#[test]
fn unmatched_messages_are_bounded_and_a_blocked_receive_says_why() {
    // Rank 0 sends 40 messages of 4 KiB with tag 1 that rank 1 never receives, then one with
    // tag 2 that rank 1 waits for. With a 16 KiB bound rank 1 stops reading after about four
    // of them, so its receive cannot see tag 2 and fails naming the full queue.
    let cfg = Config { max_unmatched: 16 << 10, ..short_timeout() };
    let mut w = World::with(2, cfg, None);
    let chunk = vec![7i32; 1024];
    let mut reqs: Vec<_> = (0..40).map(|_| (0, w.eps[0].isend(1, 1, &chunk).unwrap())).collect();
    reqs.push((0, w.eps[0].isend(1, 2, &[9i32]).unwrap()));
    let sent = w.run_pairs(reqs, Duration::from_secs(5));
    assert!(sent.iter().all(|r| r.is_ok()));
    let rx = w.eps[1].irecv::<i32>(0, 2, 1).unwrap();
    let res = w.run_pairs(vec![(1, rx)], Duration::from_secs(5));
    match &res[0] {
        Err(CollectiveError::UnmatchedLimit { op: "recv", rank: 0, queued, limit, .. }) => {
            assert!(*queued >= *limit && *queued < *limit + (64 << 10), "queued {queued}");
        }
        other => panic!("expected UnmatchedLimit, got {other:?}"),
    }
    let c = w.eps[1].counters();
    assert_eq!(c.unmatched_pauses, 1);
    assert!(c.unmatched_peak_bytes >= 16 << 10 && c.unmatched_peak_bytes < 160 << 10, "{c:?}");
    // Taking the queued messages lets the rest in: all 40, then the one with tag 2.
    let reqs: Vec<_> = (0..40).map(|_| (1, w.eps[1].irecv::<i32>(0, 1, 1024).unwrap())).collect();
    let got = w.run_pairs(reqs, Duration::from_secs(5));
    assert!(got.iter().all(|g| g.as_ref().is_ok_and(|v| v == &chunk)));
    let rx = w.eps[1].irecv::<i32>(0, 2, 1).unwrap();
    assert_eq!(w.run_pairs(vec![(1, rx)], Duration::from_secs(5))[0].as_ref().unwrap(), &vec![9]);
}
