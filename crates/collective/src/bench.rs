//! Latency of the collectives, for benchmark commands (not tests): each sample is an
//! operation followed by a barrier, started right after a barrier, so that a broadcast
//! counts until the last rank has it; the barrier alone is measured beside. The same
//! definition is used for the OpenMPI peer program of `linerate bench collective`.

use crate::{AllreduceAlgo, CollectiveError, Communicator, ReduceOp, TreeAlgo};
use link::Link;

/// What is measured per size.
pub const OPS: [&str; 6] = ["barrier", "allreduce", "allreduce-rd", "allreduce-ring", "allreduce-rb", "bcast"];

/// One measured figure.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyRow {
    /// Message size in bytes (i32 elements).
    pub bytes: usize,
    /// One of [`OPS`].
    pub op: &'static str,
    /// Median over the repetitions, in microseconds.
    pub median_us: f64,
}

/// Repetitions for a size: many for small messages, at least 5.
pub fn reps_for(bytes: usize) -> usize {
    (2_000_000 / bytes.max(1)).clamp(5, 200)
}

/// Measures every op of [`OPS`] at every size (bytes, a multiple of 4) on every rank; all
/// ranks must call it with the same sizes. Returns this rank's medians.
pub fn latency<L: Link>(c: &mut Communicator<L>, sizes: &[usize]) -> Result<Vec<LatencyRow>, CollectiveError> {
    let mut rows = Vec::new();
    for &bytes in sizes {
        let data = vec![1i32; bytes / 4];
        for op in OPS {
            let mut t = Vec::new();
            for _ in 0..reps_for(bytes) {
                c.barrier()?;
                let start = std::time::Instant::now();
                let ep = c.endpoint();
                let req = match op {
                    "barrier" => None,
                    "allreduce" => Some(ep.iallreduce(&data, ReduceOp::Sum)?),
                    "allreduce-rd" => Some(ep.iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::RecursiveDoubling)),
                    "allreduce-ring" => Some(ep.iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::Ring)),
                    "allreduce-rb" => Some(ep.iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::ReduceBcast)),
                    _ => Some(ep.ibcast_with(&data, 0, TreeAlgo::Flat)?),
                };
                if let Some(req) = req {
                    c.wait(req)?;
                }
                c.barrier()?;
                t.push(start.elapsed().as_secs_f64() * 1e6);
            }
            t.sort_by(f64::total_cmp);
            rows.push(LatencyRow { bytes, op, median_us: t[t.len() / 2] });
        }
    }
    Ok(rows)
}

/// The sizes of the paper's Fig. 6: 64 B to 2 MiB in steps of 8x, and 8 MiB.
pub fn fig6_sizes() -> Vec<usize> {
    vec![64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 8 << 20]
}

/// The sizes of the paper's Fig. 5b: 1 KiB to 64 MiB.
pub fn fig5_sizes() -> Vec<usize> {
    vec![1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20, 32 << 20, 64 << 20]
}

/// Point-to-point goodput from rank 0 to rank 1 (other ranks only take part in the
/// barriers): rank 0 times sending `bytes` until rank 1's one-element acknowledgement is
/// back. Returns rank 0's rows as op "sendrecv" with the median in microseconds.
pub fn goodput<L: Link>(c: &mut Communicator<L>, sizes: &[usize]) -> Result<Vec<LatencyRow>, CollectiveError> {
    let mut rows = Vec::new();
    if c.size() < 2 {
        return Ok(rows);
    }
    for &bytes in sizes {
        let data = vec![7i32; bytes / 4];
        let reps = (64_000_000 / bytes.max(1)).clamp(3, 50);
        let mut t = Vec::new();
        for _ in 0..reps {
            c.barrier()?;
            let start = std::time::Instant::now();
            match c.rank() {
                0 => {
                    let s = c.endpoint().isend(1, 7, &data)?;
                    c.wait(s)?;
                    c.recv::<i32>(1, 8, 1)?;
                }
                1 => {
                    c.recv::<i32>(0, 7, data.len())?;
                    c.send(0, 8, &[1i32])?;
                }
                _ => {}
            }
            t.push(start.elapsed().as_secs_f64() * 1e6);
        }
        t.sort_by(f64::total_cmp);
        rows.push(LatencyRow { bytes, op: "sendrecv", median_us: t[t.len() / 2] });
    }
    Ok(rows)
}
