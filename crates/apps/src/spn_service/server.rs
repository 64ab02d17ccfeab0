//! The SPN service on a stack: receives request records (UDP datagrams, raw Ethernet frames, or
//! back to back on TCP connections), evaluates them inline or on replicated workers, and
//! answers every well-formed request exactly once, in arrival order (per connection on TCP).

use super::pool::{evaluate_jobs, Job, Pool, Reorder};
use super::record::{check_header, check_request, Drop as Dropped, Status, Verdict, HEADER_LEN};
use super::{Peer, SpnCounters, Transport};
use crate::tcp_conns::{is_connection_error, ConnSet, Step};
use link::Link;
use net::{NetError, Recv, Stack, TcpHandle};
use spn::{CompiledSpn, Evaluator};
use std::sync::Arc;

/// How the service evaluates.
#[derive(Debug, Clone)]
pub struct SpnServiceConfig {
    /// Worker threads with their own evaluator, besides the polling thread, which evaluates
    /// its share too (requests go round robin over the polling thread and the workers, and to
    /// the polling thread whenever the workers' queues are full). 0: the polling thread
    /// evaluates everything. One evaluator per core is `workers = cores - 1`.
    pub workers: usize,
    /// Requests each worker's queue holds.
    pub queue_depth: usize,
    /// Requests received and not yet answered, at most (beyond this the service stops
    /// reading and requests wait in the socket's queue).
    pub max_in_flight: usize,
}

impl Default for SpnServiceConfig {
    fn default() -> Self {
        SpnServiceConfig { workers: 0, queue_depth: 4, max_in_flight: 64 }
    }
}

/// Batches of the evaluator's lanes gathered at most before an inline evaluation (more
/// requests than that waiting are evaluated in several goes, so the first of them is not
/// held back long). Evaluating all that waits at once leaves at most one partial batch per
/// evaluation; flushing at every full batch would leave one per batch when requests are not
/// a multiple of it (two 145-vector requests against 224 lanes: 224 + 66).
pub(crate) const GATHER_BATCHES: usize = 8;

/// Connections a TCP service lets wait for acceptance.
const TCP_BACKLOG: usize = 64;
/// A TCP connection with more answer bytes than this queued is not read until they drain
/// (and a TCP client sends no more while this much of its requests are unacknowledged).
pub(crate) const TCP_SEND_BACKLOG: usize = 1 << 20;

/// Where one TCP connection's byte stream stands.
#[derive(Default)]
struct Stream {
    /// The record being received (`len` bytes so far), if one has begun.
    partial: Option<Job>,
    /// Bytes the partial record needs in all (0: its header is not complete yet).
    want: usize,
    /// Bytes of a rejected record's body still to read and discard.
    skip: usize,
    /// Sequence number after this connection's last request.
    end: u64,
    /// Read no more: close once every answer before this sequence number is sent.
    close_at: Option<u64>,
}

impl SpnCounters {
    /// Add an evaluated job's figures.
    fn add_evaluated(&mut self, job: &Job) {
        self.fallbacks += job.fallbacks;
        self.eval_ns += job.eval_ns;
        self.evaluations += job.evaluations;
    }
}

/// The service bound to a UDP port, a TCP port or an EtherType of one stack. Call [`SpnService::serve`]
/// after every poll of the stack.
pub struct SpnService {
    model: Arc<CompiledSpn>,
    transport: Transport,
    /// The polling thread's own evaluator.
    inline: Evaluator,
    pool: Option<Pool>,
    /// Requests dispatched so far (for the round robin over the polling thread and the pool).
    dispatched: u64,
    reorder: Reorder,
    /// Requests waiting for inline evaluation, gathered until nothing more is waiting to be
    /// received or they fill [`GATHER_BATCHES`] batches of the evaluator's lanes.
    pending: Vec<Job>,
    /// Vectors in `pending`.
    pending_vectors: usize,
    free: Vec<Job>,
    cfg: SpnServiceConfig,
    counters: SpnCounters,
    /// Largest record received or sent.
    record: usize,
    /// Most values one response can carry.
    max_values: usize,
    /// The accepted connections of a TCP service.
    conns: Option<ConnSet<Stream>>,
    /// Time from taking a request in to handing its answer to the stack.
    latency: super::LatencyHistogram,
}

impl SpnService {
    /// Serve `model` on UDP port `port` of `stack`.
    pub fn bind_udp<L: Link>(
        stack: &mut Stack<L>,
        port: u16,
        model: Arc<CompiledSpn>,
        cfg: SpnServiceConfig,
    ) -> Result<SpnService, NetError> {
        let record = stack.config().mtu.saturating_sub(28);
        let h = stack.udp_bind(port)?;
        SpnService::new(Transport::Udp(h), record, None, model, cfg).inspect_err(|_| {
            let _ = stack.udp_close(h);
        })
    }

    /// Serve `model` on TCP port `port` of `stack`: every accepted connection carries request
    /// records back to back (split across segments as may be) and gets its response records
    /// back in order, each handed to the stack with [`Stack::tcp_send_transfer`]. A request
    /// may carry up to 65,535 vectors (a stream has no datagram limit). A malformed request
    /// is answered with an error record; if its header cannot be trusted to give the record's
    /// length (not our magic or version, unknown flags) the connection is closed after the
    /// answers so far and counted in [`SpnCounters::streams_closed`].
    pub fn bind_tcp<L: Link>(
        stack: &mut Stack<L>,
        port: u16,
        model: Arc<CompiledSpn>,
        cfg: SpnServiceConfig,
    ) -> Result<SpnService, NetError> {
        let record = stack.config().mtu.saturating_sub(40);
        let conns = ConnSet::listen(stack, port, TCP_BACKLOG)?;
        let listener = conns.listener();
        SpnService::new(Transport::TcpListen(listener), record, Some(conns), model, cfg).inspect_err(|_| {
            let _ = stack.tcp_unlisten(listener);
        })
    }

    /// Serve `model` on raw Ethernet frames of EtherType `ethertype` of `stack`.
    pub fn bind_raw<L: Link>(
        stack: &mut Stack<L>,
        ethertype: u16,
        model: Arc<CompiledSpn>,
        cfg: SpnServiceConfig,
    ) -> Result<SpnService, NetError> {
        let record = stack.config().mtu;
        let h = stack.raw_bind(ethertype)?;
        SpnService::new(Transport::Raw(h), record, None, model, cfg).inspect_err(|_| {
            let _ = stack.raw_close(h);
        })
    }

    fn new(
        transport: Transport,
        record: usize,
        conns: Option<ConnSet<Stream>>,
        model: Arc<CompiledSpn>,
        cfg: SpnServiceConfig,
    ) -> Result<SpnService, NetError> {
        let inline = Evaluator::new(Arc::clone(&model));
        let pool = if cfg.workers == 0 {
            None
        } else {
            Some(
                Pool::new(&model, cfg.workers, cfg.queue_depth)
                    .map_err(|e| NetError::BadConfig(format!("cannot start SPN workers: {e}")))?,
            )
        };
        Ok(SpnService {
            model,
            transport,
            inline,
            pool,
            dispatched: 0,
            reorder: Reorder::default(),
            pending: Vec::new(),
            pending_vectors: 0,
            free: Vec::new(),
            cfg,
            counters: SpnCounters::default(),
            record,
            max_values: if conns.is_some() { usize::from(u16::MAX) } else { record.saturating_sub(HEADER_LEN) / 8 },
            conns,
            latency: super::LatencyHistogram::default(),
        })
    }

    /// The transport (socket) the service listens on.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The model served.
    pub fn model(&self) -> &Arc<CompiledSpn> {
        &self.model
    }

    /// What the service counted.
    pub fn counters(&self) -> SpnCounters {
        self.counters
    }

    /// Most vectors one request may carry (over UDP and raw Ethernet the response must fit one
    /// datagram or frame).
    pub fn max_vectors(&self) -> usize {
        self.max_values
    }

    /// Service latency of every answer so far: from taking the request in (after the stack
    /// received it) to handing the answer to the stack.
    pub fn latency(&self) -> &super::LatencyHistogram {
        &self.latency
    }

    /// Requests received and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.reorder.len()
    }

    /// TCP connections accepted, finished and failed, and open now (all zero unless TCP).
    pub fn connections(&self) -> crate::tcp_conns::ConnCounts {
        self.conns.as_ref().map(|c| c.counts()).unwrap_or_default()
    }

    /// Collect finished work, answer what is ready in order, take new requests. Returns the
    /// number of records received plus answers sent (0: idle). Call after each poll.
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        self.collect();
        let mut work = self.answer(stack)?;
        if let Some(mut conns) = self.conns.take() {
            let r = conns.serve(stack, Stream::default, |stack, h, st| self.step_stream(stack, h, st));
            self.conns = Some(conns);
            work += r?;
        } else {
            while self.has_room() {
                match self.receive(stack)? {
                    Some(n) => work += n,
                    None => break,
                }
            }
        }
        self.evaluate_pending();
        self.collect();
        work += self.answer(stack)?;
        Ok(work)
    }

    /// True if another request may be taken in.
    fn has_room(&self) -> bool {
        self.reorder.len() < self.cfg.max_in_flight.max(1)
    }

    /// A recycled (or new) job with nothing received yet.
    fn fresh_job(&mut self) -> Job {
        let mut job = self.free.pop().unwrap_or_else(|| Job::new(self.record));
        job.len = 0;
        job
    }

    /// Move finished jobs into the re-sequencing buffer.
    fn collect(&mut self) {
        let Some(pool) = self.pool.as_mut() else { return };
        while let Some(job) = pool.try_result() {
            self.counters.add_evaluated(&job);
            self.reorder.complete(job);
        }
    }

    /// Send every answer that is next in order; stop when the link is full.
    fn answer<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut sent = 0;
        while let Some(mut job) = self.reorder.pop_ready() {
            let ok = match (self.transport, job.peer) {
                (Transport::Udp(h), Peer::Udp(to)) => stack.udp_send_to(h, to, &job.resp)?,
                (Transport::Raw(h), Peer::Raw(to)) => stack.raw_send(h, to, &job.resp)?,
                (Transport::TcpListen(_), Peer::Tcp(c)) => {
                    match stack.tcp_send_transfer(c, std::mem::take(&mut job.resp)).map_err(NetError::from) {
                        Ok(()) => true,
                        Err(e) if is_connection_error(&e) => {
                            // The connection is gone: nobody to answer (ConnSet counts it failed).
                            self.free.push(job);
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
                _ => true, // Cannot happen: peers come from the same transport.
            };
            if !ok {
                self.reorder.unpop(job);
                break;
            }
            sent += 1;
            self.counters.responses += 1;
            self.latency.record(job.arrived.elapsed());
            self.free.push(job);
        }
        Ok(sent)
    }

    /// Receive and dispatch one datagram or frame; None if nothing is waiting.
    fn receive<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<Option<usize>, NetError> {
        let mut job = self.fresh_job();
        job.req.resize(self.record.max(HEADER_LEN), 0);
        let got = match self.transport {
            Transport::Udp(h) => stack.udp_recv_from(h, &mut job.req)?.map(|(n, from)| (n, Peer::Udp(from))),
            Transport::Raw(h) => stack.raw_recv(h, &mut job.req)?.map(|(n, from)| (n, Peer::Raw(from))),
            Transport::Tcp(_) | Transport::TcpListen(_) => None,
        };
        let Some((len, peer)) = got else {
            self.free.push(job);
            return Ok(None);
        };
        job.len = len;
        job.peer = peer;
        // A record longer than the buffer was truncated: its length check fails below.
        let seen = &job.req[..len.min(job.req.len())];
        let padded = matches!(self.transport, Transport::Raw(_));
        let verdict = if len > job.req.len() {
            check_request(seen, self.model.num_vars(), self.max_values, false).map(|v| match v {
                Verdict::Evaluate(h) => Verdict::Reject(h, super::record::Status::BadLength),
                r => r,
            })
        } else {
            check_request(seen, self.model.num_vars(), self.max_values, padded)
        };
        self.dispatch(job, verdict);
        Ok(Some(1))
    }

    /// Count a received record and act on its verdict: drop it, answer it with an error
    /// record, or evaluate it (inline or on a worker). Returns its sequence number if it will
    /// be answered.
    fn dispatch(&mut self, mut job: Job, verdict: Result<Verdict, Dropped>) -> Option<u64> {
        self.counters.records += 1;
        job.arrived = std::time::Instant::now();
        match verdict {
            Err(Dropped::Short) => {
                self.counters.dropped_short += 1;
                self.free.push(job);
                None
            }
            Err(Dropped::BadMagic) => {
                self.counters.dropped_bad_magic += 1;
                self.free.push(job);
                None
            }
            Ok(Verdict::Reject(h, status)) => {
                self.counters.error_records += 1;
                job.header = h;
                job.reject(status);
                job.seq = self.reorder.reserve();
                let seq = job.seq;
                self.reorder.complete(job);
                Some(seq)
            }
            Ok(Verdict::Evaluate(h)) => {
                self.counters.requests += 1;
                self.counters.vectors += u64::from(h.count);
                job.header = h;
                job.seq = self.reorder.reserve();
                let seq = job.seq;
                // Round robin over the polling thread (turn 0) and the workers; a job the
                // workers have no room for is evaluated here rather than waiting.
                let turn = self.dispatched % (self.cfg.workers as u64 + 1);
                self.dispatched += 1;
                let job = match self.pool.as_mut() {
                    Some(pool) if turn != 0 => match pool.submit(job) {
                        Ok(()) => None,
                        Err(job) => {
                            self.counters.stalls += 1;
                            Some(job)
                        }
                    },
                    _ => Some(job),
                };
                if let Some(job) = job {
                    self.pending_vectors += job.vectors();
                    self.pending.push(job);
                    if self.pending_vectors >= GATHER_BATCHES * self.inline.lanes() {
                        self.evaluate_pending();
                    }
                }
                Some(seq)
            }
        }
    }

    /// Evaluate the requests gathered for inline evaluation, together (in batches of the
    /// evaluator's lanes across requests), and queue their answers.
    fn evaluate_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        evaluate_jobs(self.pending.iter_mut(), &mut self.inline);
        let mut done = std::mem::take(&mut self.pending);
        for job in done.drain(..) {
            self.counters.add_evaluated(&job);
            self.reorder.complete(job);
        }
        self.pending = done; // Keeps its capacity.
        self.pending_vectors = 0;
    }

    /// Serve one TCP connection: take in the complete request records its stream holds
    /// (keeping a partial one for later), skip the bodies of rejected ones, and finish the
    /// connection once the peer closed or the stream is beyond repair and every answer owed
    /// to it has been handed to the stack.
    fn step_stream<L: Link>(&mut self, stack: &mut Stack<L>, h: TcpHandle, st: &mut Stream) -> Result<Step, NetError> {
        let mut moved = 0;
        while st.close_at.is_none() && self.has_room() && stack.tcp_send_pending(h)? < TCP_SEND_BACKLOG {
            if st.skip > 0 {
                let n = stack.tcp_recv_borrow(h)?.len().min(st.skip);
                if n > 0 {
                    stack.tcp_recv_consume(h, n)?;
                    st.skip -= n;
                    moved += n;
                    continue;
                }
                if stack.tcp_at_eof(h)? {
                    st.close_at = Some(st.end);
                }
                break;
            }
            let mut job = st.partial.take().unwrap_or_else(|| self.fresh_job());
            let want = if st.want == 0 { HEADER_LEN } else { st.want };
            if job.req.len() < want {
                job.req.resize(want, 0);
            }
            match stack.tcp_recv(h, &mut job.req[job.len..want])? {
                Recv::Data(n) => {
                    job.len += n;
                    moved += n;
                }
                Recv::WouldBlock if job.len == 0 => {
                    self.free.push(job);
                    break;
                }
                Recv::WouldBlock => {
                    st.partial = Some(job);
                    break;
                }
                Recv::Eof => {
                    if job.len > 0 {
                        // A record cut short by the end of the stream.
                        self.counters.records += 1;
                        self.counters.dropped_short += 1;
                    }
                    self.free.push(job);
                    st.close_at = Some(st.end);
                    break;
                }
            }
            if job.len < want {
                st.partial = Some(job);
                continue;
            }
            job.peer = Peer::Tcp(h);
            if st.want > 0 {
                // The whole record is in: its header was judged already.
                st.want = 0;
                let verdict = Ok(Verdict::Evaluate(job.header));
                st.end = self.dispatch(job, verdict).map_or(st.end, |s| s + 1);
                continue;
            }
            match check_header(&job.req[..HEADER_LEN], self.model.num_vars(), self.max_values) {
                Ok(Verdict::Evaluate(hd)) => {
                    job.header = hd;
                    st.want = HEADER_LEN + hd.body_len();
                    st.partial = Some(job);
                }
                Ok(Verdict::Reject(hd, status)) => {
                    // Version and flags decide the record's length: without them the next
                    // record's start is unknown.
                    let lost = matches!(status, Status::BadVersion | Status::BadFlags);
                    let seq = self.dispatch(job, Ok(Verdict::Reject(hd, status)));
                    st.end = seq.map_or(st.end, |s| s + 1);
                    if lost {
                        self.counters.streams_closed += 1;
                        st.close_at = Some(st.end);
                    } else {
                        st.skip = hd.body_len();
                    }
                }
                Err(drop) => {
                    self.dispatch(job, Err(drop));
                    self.counters.streams_closed += 1;
                    st.close_at = Some(st.end);
                }
            }
        }
        match st.close_at {
            Some(at) if self.reorder.answered_before(at) => Ok(Step::Finished(moved)),
            _ => Ok(Step::Open(moved)),
        }
    }
}
