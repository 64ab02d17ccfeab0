//! Replicated evaluators: worker threads fed by bounded queues, and the re-sequencing buffer
//! that puts finished requests back in arrival order.

use super::record::{emit_response_header, RequestHeader, Status, FLAG_LOG, FLAG_MASK, HEADER_LEN};
use super::Peer;
use spn::{CompiledSpn, Evaluator, Missing, Output, U8Part};
use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Empty polls a worker spins before it blocks on its queue (waking an idle core costs
/// tens of microseconds here).
const WORKER_SPIN: u32 = 20_000;

/// One request on its way through the service, with its buffers (recycled).
pub(crate) struct Job {
    /// Arrival order.
    pub seq: u64,
    /// Who asked.
    pub peer: Peer,
    /// The request's header.
    pub header: RequestHeader,
    /// The received record (header and body); its length is `len`.
    pub req: Vec<u8>,
    /// Bytes of `req` received.
    pub len: usize,
    /// The response record.
    pub resp: Vec<u8>,
    /// Evaluation results.
    values: Vec<f64>,
    /// Inputs that took the log-space fallback in this job.
    pub fallbacks: u64,
    /// Nanoseconds spent evaluating this job.
    pub eval_ns: u64,
    /// Evaluations this job started (1 for the first job of each gathered evaluation).
    pub evaluations: u64,
    /// When the request was taken in (its answer's latency is measured from here).
    pub arrived: std::time::Instant,
}

impl Job {
    /// A job with a receive buffer of `record` bytes.
    pub fn new(record: usize) -> Job {
        Job {
            seq: 0,
            peer: Peer::Udp(std::net::SocketAddr::from(([0u8; 4], 0))),
            header: RequestHeader { flags: 0, count: 0, vector_len: 0, id: 0 },
            req: vec![0; record],
            len: 0,
            resp: Vec::with_capacity(record),
            values: Vec::new(),
            fallbacks: 0,
            eval_ns: 0,
            evaluations: 0,
            arrived: std::time::Instant::now(),
        }
    }

    /// Make the response an error record with `status`.
    pub fn reject(&mut self, status: Status) {
        self.resp.clear();
        self.resp.resize(HEADER_LEN, 0);
        emit_response_header(&self.header, status, &mut self.resp);
    }

    /// Vectors the request carries.
    pub fn vectors(&self) -> usize {
        usize::from(self.header.count)
    }

    /// The request's output kind.
    fn output(&self) -> Output {
        if self.header.flags & FLAG_LOG != 0 {
            Output::LogLikelihood
        } else {
            Output::Likelihood
        }
    }

    /// True if the request's body is all in its buffer.
    fn has_body(&self) -> bool {
        self.req.len() >= HEADER_LEN + self.header.body_len()
    }

    /// This request as one part of a gathered evaluation, or None if its body is not all
    /// there (cannot happen for a validated request).
    fn part(&mut self) -> Option<U8Part<'_>> {
        let h = self.header;
        let (n, vl) = (usize::from(h.count), usize::from(h.vector_len));
        if !self.has_body() {
            return None;
        }
        let body = &self.req[HEADER_LEN..HEADER_LEN + h.body_len()];
        let (inputs, masks) = body.split_at(n * vl);
        let missing = if h.flags & FLAG_MASK != 0 { Missing::Bits(masks) } else { Missing::None };
        self.values.resize(n, 0.0);
        Some(U8Part { inputs, missing, out: &mut self.values })
    }

    /// Write the response record from the evaluation results.
    fn respond(&mut self) {
        self.resp.clear();
        self.resp.resize(HEADER_LEN + 8 * self.values.len(), 0);
        emit_response_header(&self.header, Status::Ok, &mut self.resp);
        for (dst, v) in self.resp[HEADER_LEN..].chunks_exact_mut(8).zip(&self.values) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// Evaluate (validated) requests and write their responses: requests that want the same
/// output are evaluated together, so a batch of the evaluator's lanes takes vectors from as
/// many requests as it needs (a request of fewer vectors than lanes costs its share of a
/// batch, not a whole one). Each job's `eval_ns` is its share of the time by vectors; the
/// fallbacks and the evaluation itself are counted on the first job of each run.
pub(crate) fn evaluate_jobs<'j>(jobs: impl IntoIterator<Item = &'j mut Job>, ev: &mut Evaluator) {
    let mut run: Vec<&mut Job> = Vec::new();
    for job in jobs {
        if run.first().is_some_and(|f| f.output() != job.output()) {
            evaluate_run(&mut run, ev);
            run.clear();
        }
        run.push(job);
    }
    evaluate_run(&mut run, ev);
}

/// Evaluate requests that all want the same output, in one gathered evaluation.
fn evaluate_run(run: &mut [&mut Job], ev: &mut Evaluator) {
    let Some(output) = run.first().map(|j| j.output()) else { return };
    let before = ev.fallbacks();
    let t0 = std::time::Instant::now();
    let mut parts = Vec::with_capacity(run.len());
    parts.extend(run.iter_mut().filter_map(|j| j.part()));
    let ok = ev.eval_u8_parts(&mut parts, output).is_ok();
    drop(parts);
    let ns = t0.elapsed().as_nanos() as u64;
    let total = run.iter().map(|j| j.vectors() as u64).sum::<u64>().max(1);
    for (i, job) in run.iter_mut().enumerate() {
        job.eval_ns = ns * job.vectors() as u64 / total;
        job.fallbacks = if i == 0 { ev.fallbacks() - before } else { 0 };
        job.evaluations = u64::from(i == 0);
        if ok && job.has_body() {
            job.respond();
        } else {
            job.reject(Status::Internal);
        }
    }
}

/// Worker threads, each with its own evaluator and a bounded input queue.
pub(crate) struct Pool {
    inputs: Vec<SyncSender<Job>>,
    results: Receiver<Job>,
    threads: Vec<JoinHandle<()>>,
    next: usize,
}

impl Pool {
    /// Start `workers` threads with queues of `depth` jobs each.
    pub fn new(model: &Arc<CompiledSpn>, workers: usize, depth: usize) -> std::io::Result<Pool> {
        let (done_tx, results) = mpsc::channel();
        let mut inputs = Vec::with_capacity(workers);
        let mut threads = Vec::with_capacity(workers);
        for w in 0..workers {
            let (tx, rx) = mpsc::sync_channel::<Job>(depth.max(1));
            let done = done_tx.clone();
            let mut ev = Evaluator::new(Arc::clone(model));
            let t =
                std::thread::Builder::new().name(format!("spn-worker-{w}")).spawn(move || worker(rx, done, &mut ev))?;
            inputs.push(tx);
            threads.push(t);
        }
        Ok(Pool { inputs, results, threads, next: 0 })
    }

    /// Hand a job to the next worker with room (round robin); gives it back if all are full.
    #[allow(clippy::result_large_err)] // The job itself comes back, to be queued again.
    pub fn submit(&mut self, mut job: Job) -> Result<(), Job> {
        for _ in 0..self.inputs.len() {
            let w = self.next;
            self.next = (self.next + 1) % self.inputs.len();
            match self.inputs[w].try_send(job) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(j)) | Err(TrySendError::Disconnected(j)) => job = j,
            }
        }
        Err(job)
    }

    /// A finished job, if any.
    pub fn try_result(&mut self) -> Option<Job> {
        self.results.try_recv().ok()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.inputs.clear(); // Closing the queues ends the workers.
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A worker: spin on the queue, then block; evaluate what is queued together; hand the jobs
/// back.
fn worker(rx: Receiver<Job>, done: mpsc::Sender<Job>, ev: &mut Evaluator) {
    let mut idle = 0u32;
    let mut jobs = Vec::new();
    loop {
        let job = match rx.try_recv() {
            Ok(j) => j,
            Err(TryRecvError::Empty) if idle < WORKER_SPIN => {
                idle += 1;
                std::hint::spin_loop();
                continue;
            }
            Err(TryRecvError::Empty) => match rx.recv() {
                Ok(j) => j,
                Err(_) => return,
            },
            Err(TryRecvError::Disconnected) => return,
        };
        idle = 0;
        // Gather what else is queued (up to GATHER_BATCHES batches) and evaluate it together.
        let mut vectors = job.vectors();
        jobs.push(job);
        while vectors < super::server::GATHER_BATCHES * ev.lanes() {
            match rx.try_recv() {
                Ok(j) => {
                    vectors += j.vectors();
                    jobs.push(j);
                }
                Err(_) => break,
            }
        }
        evaluate_jobs(jobs.iter_mut(), ev);
        for job in jobs.drain(..) {
            if done.send(job).is_err() {
                return;
            }
        }
    }
}

/// Finished jobs held until every earlier one is finished, so answers leave in arrival order.
#[derive(Default)]
pub(crate) struct Reorder {
    /// Sequence number of `slots[0]`.
    base: u64,
    slots: VecDeque<Option<Job>>,
}

impl Reorder {
    /// Reserve the next sequence number.
    pub fn reserve(&mut self) -> u64 {
        self.slots.push_back(None);
        self.base + self.slots.len() as u64 - 1
    }

    /// Store a finished job in its place.
    pub fn complete(&mut self, job: Job) {
        if let Some(slot) = job.seq.checked_sub(self.base).and_then(|i| self.slots.get_mut(i as usize)) {
            *slot = Some(job);
        }
    }

    /// The oldest job, if it is finished.
    pub fn pop_ready(&mut self) -> Option<Job> {
        if matches!(self.slots.front(), Some(Some(_))) {
            self.base += 1;
            return self.slots.pop_front().flatten();
        }
        None
    }

    /// Put back a job taken by [`Reorder::pop_ready`] (its answer could not be sent yet).
    pub fn unpop(&mut self, job: Job) {
        self.base -= 1;
        self.slots.push_front(Some(job));
    }

    /// True once every job before sequence number `seq` has been popped (answered).
    pub fn answered_before(&self, seq: u64) -> bool {
        self.base >= seq
    }

    /// Requests received and not yet answered.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorder_releases_in_sequence() {
        let mut r = Reorder::default();
        let seqs: Vec<u64> = (0..3).map(|_| r.reserve()).collect();
        assert_eq!(seqs, [0, 1, 2]);
        let job = |s| {
            let mut j = Job::new(16);
            j.seq = s;
            j
        };
        r.complete(job(2));
        assert!(r.pop_ready().is_none());
        r.complete(job(0));
        let first = r.pop_ready().map(|j| j.seq);
        assert_eq!(first, Some(0));
        assert!(r.pop_ready().is_none());
        r.complete(job(1));
        let j = r.pop_ready().unwrap();
        r.unpop(j);
        let order: Vec<u64> = std::iter::from_fn(|| r.pop_ready().map(|j| j.seq)).collect();
        assert_eq!(order, [1, 2]);
        assert_eq!(r.len(), 0);
    }
}
