//! The collective layer's cost per operation, for callgrind: every rank of an `N`-rank
//! communicator joins one shared-memory fabric in this one thread, and the ranks are polled
//! in turn (stack, then endpoint) until the operation completes everywhere. With one thread
//! and no waiting, instruction counts are repeatable, so before/after figures of the
//! per-message path (framing, TCP, fabric, matching) come from
//!
//! ```text
//! valgrind --tool=callgrind cargo-built/coll_cost [--ranks N] [--bytes B] [--op OP] [--reps K]
//! ```
//! OP is `allreduce` (recursive doubling), `bcast` (flat), `barrier` or `idle` (poll rounds
//! with nothing to do). It prints the poll rounds used; divide the instruction count by
//! `--reps` (after subtracting a `--reps 0` run for the set-up).

use collective::{
    fabric_addrs, fabric_host_config, fabric_link_config, AllreduceAlgo, Config, Endpoint, MeshState, ReduceOp,
    ShmFabric, TreeAlgo,
};
use link::Instant;
use net::Stack;
use std::process::ExitCode;
use std::time::Duration;

/// Poll rounds (over all ranks) any one operation may take before the run counts as stalled.
const MAX_ROUNDS: u64 = 100_000;

struct Args {
    ranks: usize,
    bytes: usize,
    op: String,
    reps: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args { ranks: 2, bytes: 1024, op: "allreduce".into(), reps: 1000 };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let num = |v: &str| v.parse::<usize>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--ranks" => a.ranks = num(&v)?,
            "--bytes" => a.bytes = num(&v)?,
            "--reps" => a.reps = num(&v)?,
            "--op" => a.op = v,
            _ => return Err(format!("unknown argument {k:?}")),
        }
    }
    if a.ranks < 2 || a.ranks > 16 || !a.bytes.is_multiple_of(4) {
        return Err("--ranks 2..16, --bytes a multiple of 4".into());
    }
    if !["allreduce", "bcast", "barrier", "idle"].contains(&a.op.as_str()) {
        return Err(format!("--op {:?}: allreduce, bcast, barrier or idle", a.op));
    }
    Ok(a)
}

type Rank = (Stack<ShmFabric>, Endpoint);

/// Polls every rank once; returns whether anything moved.
fn round(ranks: &mut [Rank]) -> Result<bool, String> {
    let mut moved = false;
    for (s, e) in ranks.iter_mut() {
        let now = Instant::now();
        moved |= s.poll(now).map_err(|e| e.to_string())? > 0;
        moved |= e.progress(s, now).map_err(|e| e.to_string())?;
    }
    Ok(moved)
}

fn run(a: &Args) -> Result<u64, String> {
    let name = format!("coll-cost-{}", std::process::id());
    let n = a.ranks;
    let mut ranks: Vec<Rank> = Vec::new();
    for r in 0..n {
        let fab =
            ShmFabric::join(&name, r, n, fabric_link_config(), Duration::from_secs(5)).map_err(|e| e.to_string())?;
        let stack = Stack::new(fabric_host_config(r, n).map_err(|e| e.to_string())?, fab).map_err(|e| e.to_string())?;
        let ep = Endpoint::new(r, fabric_addrs(n), Config::default()).map_err(|e| e.to_string())?;
        ranks.push((stack, ep));
    }
    let mut rounds = 0u64;
    while ranks.iter().any(|(_, e)| !matches!(e.mesh_state(), Ok(MeshState::Ready))) {
        round(&mut ranks)?;
        rounds += 1;
        if rounds > MAX_ROUNDS {
            return Err("the mesh did not connect".into());
        }
    }
    let data = vec![1i32; a.bytes / 4];
    let mut total = 0u64;
    for _ in 0..a.reps {
        if a.op == "idle" {
            round(&mut ranks)?;
            total += 1;
            continue;
        }
        let mut reqs = Vec::new();
        for (_, e) in ranks.iter_mut() {
            reqs.push(match a.op.as_str() {
                "allreduce" => e.iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::RecursiveDoubling),
                "bcast" => e.ibcast_with(&data, 0, TreeAlgo::Flat).map_err(|e| e.to_string())?,
                _ => e.ibarrier(),
            });
        }
        let mut done = vec![false; n];
        let mut k = 0;
        while done.iter().any(|d| !d) {
            round(&mut ranks)?;
            total += 1;
            k += 1;
            for (i, (_, e)) in ranks.iter_mut().enumerate() {
                if !done[i] {
                    done[i] = e.test(&reqs[i]).map_err(|e| e.to_string())?.is_some();
                }
            }
            if k > MAX_ROUNDS {
                return Err(format!("{} stalled", a.op));
            }
        }
    }
    Ok(total)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("coll_cost: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&a) {
        Ok(rounds) => {
            println!("{} x {} of {} B on {} ranks: {rounds} poll rounds", a.reps, a.op, a.bytes, a.ranks);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("coll_cost: {e}");
            ExitCode::FAILURE
        }
    }
}
