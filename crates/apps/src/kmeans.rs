//! Distributed K-Means over a communicator (seed 003, EasyNet-KM): each rank assigns its
//! own share of the samples with [`accel::kmeans`], one all-reduce adds up the partial sums
//! and counts of all ranks, and every rank updates the centres from the same totals.
//!
//! The iteration is split in two halves around the all-reduce, [`DistKmeans::start`] and
//! [`DistKmeans::finish`], so that it runs both with all ranks on one thread of virtual
//! time (a driver progresses every endpoint) and with one rank per thread or process
//! ([`DistKmeans::fit`] on a [`Communicator`]). Counts are exact; sums of integer-valued
//! data (Covertype's) are exact in `f64`, so then every rank count gives the single-process
//! result bit for bit.

use accel::kmeans::{assign, update_centres, Partials, Shape};
use accel::AccelError;
use collective::{CollectiveError, Communicator, Endpoint, ReduceOp, Request};
use link::Link;

/// Errors of the distributed K-Means.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KmeansError {
    /// The compute kernel refused its input.
    #[error(transparent)]
    Accel(#[from] AccelError),
    /// The all-reduce failed.
    #[error(transparent)]
    Collective(#[from] CollectiveError),
}

/// The range of samples rank `rank` of `size` owns out of `n` (contiguous, nearly equal).
pub fn share(n: usize, size: usize, rank: usize) -> std::ops::Range<usize> {
    let r = collective::schedule::part(n, size.max(1), rank, 1);
    r.start..r.end
}

/// One rank's part of a distributed K-Means.
#[derive(Debug, Clone)]
pub struct DistKmeans {
    shape: Shape,
    data: Vec<f32>,
    centres: Vec<f32>,
    labels: Vec<u32>,
    /// Iterations finished.
    pub iterations: usize,
    /// Inertia over all ranks of the last assignment.
    pub inertia: f64,
    /// Largest squared centre shift of the last update.
    pub last_shift: f64,
}

impl DistKmeans {
    /// A rank holding `data` (its own samples, row-major) and the common initial centres.
    pub fn new(shape: Shape, data: Vec<f32>, init: &[f32]) -> Result<DistKmeans, KmeansError> {
        let n = shape.check(&data, init)?;
        Ok(DistKmeans {
            shape,
            data,
            centres: init.to_vec(),
            labels: vec![0; n],
            iterations: 0,
            inertia: 0.0,
            last_shift: f64::INFINITY,
        })
    }

    /// First half of an iteration: assign the local samples and start the all-reduce of
    /// the packed partial sums and counts.
    pub fn start(&mut self, ep: &mut Endpoint) -> Result<Request<f64>, KmeansError> {
        let mut p = Partials::zeros(self.shape);
        assign(self.shape, &self.data, &self.centres, &mut self.labels, &mut p)?;
        Ok(ep.iallreduce(&p.to_packed(), ReduceOp::Sum)?)
    }

    /// Second half: update the centres from the reduced partials. Returns the largest
    /// squared shift of a centre.
    pub fn finish(&mut self, reduced: &[f64]) -> Result<f64, KmeansError> {
        let p = Partials::from_packed(self.shape, reduced)?;
        self.last_shift = update_centres(self.shape, &p, &mut self.centres)?;
        self.inertia = p.inertia;
        self.iterations += 1;
        Ok(self.last_shift)
    }

    /// Runs up to `max_iter` iterations on a communicator (stops once no centre moved more
    /// than `tol`, a decision every rank takes on the same numbers).
    pub fn fit<L: Link>(&mut self, comm: &mut Communicator<L>, max_iter: usize, tol: f64) -> Result<(), KmeansError> {
        for _ in 0..max_iter {
            let req = self.start(comm.endpoint())?;
            let reduced = comm.wait(req)?;
            if self.finish(&reduced)? <= tol {
                break;
            }
        }
        Ok(())
    }

    /// The current centres.
    pub fn centres(&self) -> &[f32] {
        &self.centres
    }

    /// Labels of the local samples from the last assignment.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }
}
