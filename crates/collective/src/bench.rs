//! Latency of the collectives, for benchmark commands (not tests): each sample is an
//! operation followed by a barrier, started right after a barrier, so that a broadcast
//! counts until the last rank has it; the barrier alone is measured beside. The same
//! definition is used for the OpenMPI peer program of `linerate bench collective`.
//! [`connect_setup`] is the paper's Fig. 5a (connection set-up), [`goodput`] its Fig. 5b, and
//! [`tcp_goodput`] the same transfer on one plain linerate TCP connection (no framing, no
//! matching) as the baseline of the collective layer.

use crate::{AllreduceAlgo, CollectiveError, Communicator, ReduceOp};
use link::Link;
use std::net::SocketAddr;

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
        let mut out = vec![0i32; bytes / 4];
        for op in OPS {
            let mut t = Vec::new();
            for _ in 0..reps_for(bytes) {
                c.barrier()?;
                let start = std::time::Instant::now();
                // The default algorithms as MPI programs call them: from a send buffer into a
                // receive buffer (all-reduce), in the caller's buffer (broadcast); the others
                // started explicitly.
                let req = match op {
                    "barrier" => None,
                    "allreduce" => {
                        c.allreduce_into(&data, &mut out, ReduceOp::Sum)?;
                        None
                    }
                    "bcast" => {
                        c.bcast_in_place(&mut out, 0)?;
                        None
                    }
                    "allreduce-rd" => {
                        Some(c.endpoint().iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::RecursiveDoubling))
                    }
                    "allreduce-ring" => Some(c.endpoint().iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::Ring)),
                    _ => Some(c.endpoint().iallreduce_with(&data, ReduceOp::Sum, AllreduceAlgo::ReduceBcast)),
                };
                if let Some(req) = req {
                    c.wait(req)?;
                }
                c.barrier()?;
                t.push(start.elapsed().as_secs_f64() * 1e6);
            }
            t.sort_by(f64::total_cmp);
            rows.push(LatencyRow { bytes, op, median_us: t[t.len() / 2] });
            if std::env::var_os("LINERATE_BENCH_TRACE").is_some() {
                eprintln!("rank {}: {bytes} B {op} done", c.rank());
            }
        }
    }
    Ok(rows)
}

/// The sizes of the paper's Fig. 6: 64 B to 2 MiB in steps of 8x, 1 KiB, and 8 MiB.
pub fn fig6_sizes() -> Vec<usize> {
    vec![64, 512, 1 << 10, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 8 << 20]
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
        let mut into = vec![0i32; bytes / 4];
        let reps = (64_000_000 / bytes.max(1)).clamp(3, 50);
        let mut t = Vec::new();
        for _ in 0..reps {
            c.barrier()?;
            let start = std::time::Instant::now();
            match c.rank() {
                0 => {
                    c.send(1, 7, &data)?;
                    c.recv::<i32>(1, 8, 1)?;
                }
                1 => {
                    c.recv_into(0, 7, &mut into)?;
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

/// The connection counts of the paper's Fig. 5a: 1 to 64.
pub fn fig5a_counts() -> Vec<usize> {
    vec![1, 2, 4, 8, 16, 32, 64]
}

/// Connection set-up (Fig. 5a): rank 0 issues `k` connects to rank 1 at once (pipelined, as
/// `open_connections` does) and times until all are established; rank 1 listens on its
/// port + 1 and accepts them; both then close them. Other ranks only take part in the
/// barriers. Returns rank 0's rows as op "connect" (`bytes` is the connection count), the
/// median of `reps` repetitions in microseconds.
pub fn connect_setup<L: Link>(
    c: &mut Communicator<L>,
    counts: &[usize],
    reps: usize,
) -> Result<Vec<LatencyRow>, CollectiveError> {
    let mut rows = Vec::new();
    if c.size() < 2 {
        return Ok(rows);
    }
    let peer = c.endpoint().peer_addr(1).ok_or_else(|| CollectiveError::BadArgument("rank 1 has no address".into()))?;
    let to = SocketAddr::new(peer.ip(), peer.port().wrapping_add(1));
    let listener = match c.rank() {
        1 => Some(c.stack().tcp_listen(to.port(), counts.iter().copied().max().unwrap_or(1))?),
        _ => None,
    };
    let limit = c.endpoint().config().connect_timeout;
    for &k in counts {
        let mut t = Vec::new();
        for _ in 0..reps.max(1) {
            c.barrier()?;
            let start = std::time::Instant::now();
            let timed_out =
                |what: &str| CollectiveError::BadArgument(format!("{what} {k} connections took over {limit:?}"));
            if c.rank() == 0 {
                let hs = (0..k).map(|_| c.stack().tcp_connect(to)).collect::<Result<Vec<_>, _>>()?;
                let mut idle = 0;
                loop {
                    c.poll_or_yield(&mut idle)?;
                    let mut up = 0;
                    for &h in &hs {
                        match c.stack().tcp_connect_result(h)? {
                            Some(Ok(())) => up += 1,
                            Some(Err(e)) => return Err(CollectiveError::BadArgument(format!("connect: {e:?}"))),
                            None => {}
                        }
                    }
                    if up == k {
                        break;
                    }
                    if start.elapsed() > limit {
                        return Err(timed_out("opening"));
                    }
                }
                t.push(start.elapsed().as_secs_f64() * 1e6);
                for h in hs {
                    c.stack().tcp_close(h)?;
                }
            } else if let Some(l) = listener {
                let (mut got, mut idle) = (Vec::new(), 0);
                while got.len() < k {
                    c.poll_or_yield(&mut idle)?;
                    while let Some(h) = c.stack().tcp_accept(l) {
                        got.push(h);
                    }
                    if start.elapsed() > limit {
                        return Err(timed_out("accepting"));
                    }
                }
                for h in got {
                    c.stack().tcp_close(h)?;
                }
            }
        }
        if c.rank() == 0 {
            t.sort_by(f64::total_cmp);
            rows.push(LatencyRow { bytes: k, op: "connect", median_us: t[t.len() / 2] });
        }
    }
    c.barrier()?;
    if let Some(l) = listener {
        c.stack().tcp_unlisten(l)?;
    }
    Ok(rows)
}

/// Rank 0 -> rank 1 over one plain TCP connection of the ranks' stacks (rank 1 listens on
/// its port + 2): what [`goodput`] measures, without the collective layer. Rank 0 writes
/// `bytes` as buffer space allows; rank 1 reads them into a reusable buffer (one copy, as a
/// socket application would) and answers with 4 bytes. Returns rank 0's rows as op "tcp".
pub fn tcp_goodput<L: Link>(c: &mut Communicator<L>, sizes: &[usize]) -> Result<Vec<LatencyRow>, CollectiveError> {
    let mut rows = Vec::new();
    if c.size() < 2 {
        return Ok(rows);
    }
    let peer = c.endpoint().peer_addr(1).ok_or_else(|| CollectiveError::BadArgument("rank 1 has no address".into()))?;
    let to = SocketAddr::new(peer.ip(), peer.port().wrapping_add(2));
    let limit = c.endpoint().config().timeout;
    let stalled = |what: &str| CollectiveError::BadArgument(format!("plain TCP {what} took over {limit:?}"));
    let listener = if c.rank() == 1 { Some(c.stack().tcp_listen(to.port(), 1)?) } else { None };
    c.barrier()?;
    let mut idle = 0;
    let start = std::time::Instant::now();
    let conn = match (c.rank(), listener) {
        (0, _) => {
            let h = c.stack().tcp_connect(to)?;
            while c.stack().tcp_connect_result(h)?.is_none() {
                c.poll_or_yield(&mut idle)?;
                if start.elapsed() > limit {
                    return Err(stalled("connect"));
                }
            }
            Some(h)
        }
        (_, Some(l)) => loop {
            if let Some(h) = c.stack().tcp_accept(l) {
                break Some(h);
            }
            c.poll_or_yield(&mut idle)?;
            if start.elapsed() > limit {
                return Err(stalled("accept"));
            }
        },
        _ => None,
    };
    let mut scratch = vec![0u8; 256 << 10];
    for &bytes in sizes {
        let data = vec![7u8; bytes];
        let reps = (64_000_000 / bytes.max(1)).clamp(3, 50);
        let mut t = Vec::new();
        for _ in 0..reps {
            c.barrier()?;
            let start = std::time::Instant::now();
            if let Some(h) = conn {
                // Rank 0 sends `bytes` and reads 4; rank 1 reads `bytes` and sends 4.
                let (out, want): (&[u8], usize) = if c.rank() == 0 { (&data, 4) } else { (&[], bytes) };
                let (mut sent, mut got, mut replied) = (0, 0, c.rank() == 0);
                while sent < out.len() || got < want || !replied {
                    if sent < out.len() {
                        sent += c.stack().tcp_send(h, &out[sent..])?;
                    }
                    if let net::Recv::Data(n) = c.stack().tcp_recv(h, &mut scratch)? {
                        got += n;
                    }
                    if got >= want && !replied {
                        replied = c.stack().tcp_send(h, &[1, 2, 3, 4])? == 4;
                    }
                    c.poll_or_yield(&mut idle)?;
                    if start.elapsed() > limit {
                        return Err(stalled("transfer"));
                    }
                }
            }
            t.push(start.elapsed().as_secs_f64() * 1e6);
        }
        if c.rank() == 0 {
            t.sort_by(f64::total_cmp);
            rows.push(LatencyRow { bytes, op: "tcp", median_us: t[t.len() / 2] });
        }
    }
    c.barrier()?;
    if let Some(h) = conn {
        c.stack().tcp_close(h)?;
    }
    if let Some(l) = listener {
        c.stack().tcp_unlisten(l)?;
    }
    Ok(rows)
}
