//! The SPN service on a stack: receives request records (UDP or raw Ethernet), evaluates them
//! inline or on replicated workers, and answers every well-formed request exactly once, in
//! arrival order.

use super::pool::{Job, Pool, Reorder};
use super::record::{check_request, Drop as Dropped, Verdict, HEADER_LEN};
use super::{Peer, SpnCounters, Transport};
use link::Link;
use net::{NetError, Stack};
use spn::{CompiledSpn, Evaluator};
use std::collections::VecDeque;
use std::sync::Arc;

/// How the service evaluates.
#[derive(Debug, Clone)]
pub struct SpnServiceConfig {
    /// Worker threads with their own evaluator (0: evaluate in the polling thread).
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

/// The service bound to a UDP port or an EtherType of one stack. Call [`SpnService::serve`]
/// after every poll of the stack.
pub struct SpnService {
    model: Arc<CompiledSpn>,
    transport: Transport,
    inline: Option<Evaluator>,
    pool: Option<Pool>,
    reorder: Reorder,
    /// Jobs received but refused by full worker queues, submitted first next time.
    stalled: VecDeque<Job>,
    free: Vec<Job>,
    cfg: SpnServiceConfig,
    counters: SpnCounters,
    /// Largest record received or sent.
    record: usize,
    /// Most values one response can carry.
    max_values: usize,
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
        SpnService::new(Transport::Udp(h), record, model, cfg).inspect_err(|_| {
            let _ = stack.udp_close(h);
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
        SpnService::new(Transport::Raw(h), record, model, cfg).inspect_err(|_| {
            let _ = stack.raw_close(h);
        })
    }

    fn new(
        transport: Transport,
        record: usize,
        model: Arc<CompiledSpn>,
        cfg: SpnServiceConfig,
    ) -> Result<SpnService, NetError> {
        let (inline, pool) = if cfg.workers == 0 {
            (Some(Evaluator::new(Arc::clone(&model))), None)
        } else {
            let pool = Pool::new(&model, cfg.workers, cfg.queue_depth)
                .map_err(|e| NetError::BadConfig(format!("cannot start SPN workers: {e}")))?;
            (None, Some(pool))
        };
        Ok(SpnService {
            model,
            transport,
            inline,
            pool,
            reorder: Reorder::default(),
            stalled: VecDeque::new(),
            free: Vec::new(),
            cfg,
            counters: SpnCounters::default(),
            record,
            max_values: record.saturating_sub(HEADER_LEN) / 8,
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

    /// Most vectors one request may carry (the response must fit one datagram or frame).
    pub fn max_vectors(&self) -> usize {
        self.max_values
    }

    /// Requests received and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.reorder.len()
    }

    /// Collect finished work, answer what is ready in order, take new requests. Returns the
    /// number of records received plus answers sent (0: idle). Call after each poll.
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        self.collect();
        let mut work = self.answer(stack)?;
        while self.reorder.len() < self.cfg.max_in_flight.max(1) && self.stalled.is_empty() {
            match self.receive(stack)? {
                Some(n) => work += n,
                None => break,
            }
        }
        self.collect();
        work += self.answer(stack)?;
        Ok(work)
    }

    /// Move finished jobs into the re-sequencing buffer and resubmit stalled ones.
    fn collect(&mut self) {
        let Some(pool) = self.pool.as_mut() else { return };
        while let Some(job) = pool.try_result() {
            self.counters.fallbacks += job.fallbacks;
            self.counters.eval_ns += job.eval_ns;
            self.reorder.complete(job);
        }
        while let Some(job) = self.stalled.pop_front() {
            if let Err(job) = pool.submit(job) {
                self.stalled.push_front(job);
                break;
            }
        }
    }

    /// Send every answer that is next in order; stop when the link is full.
    fn answer<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut sent = 0;
        while let Some(job) = self.reorder.pop_ready() {
            let ok = match (self.transport, job.peer) {
                (Transport::Udp(h), Peer::Udp(to)) => stack.udp_send_to(h, to, &job.resp)?,
                (Transport::Raw(h), Peer::Raw(to)) => stack.raw_send(h, to, &job.resp)?,
                _ => true, // Cannot happen: peers come from the same transport.
            };
            if !ok {
                self.reorder.unpop(job);
                break;
            }
            sent += 1;
            self.counters.responses += 1;
            self.free.push(job);
        }
        Ok(sent)
    }

    /// Receive and dispatch one record; None if nothing is waiting.
    fn receive<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<Option<usize>, NetError> {
        let mut job = self.free.pop().unwrap_or_else(|| Job::new(self.record));
        job.req.resize(self.record.max(HEADER_LEN), 0);
        let got = match self.transport {
            Transport::Udp(h) => stack.udp_recv_from(h, &mut job.req)?.map(|(n, from)| (n, Peer::Udp(from))),
            Transport::Raw(h) => stack.raw_recv(h, &mut job.req)?.map(|(n, from)| (n, Peer::Raw(from))),
        };
        let Some((len, peer)) = got else {
            self.free.push(job);
            return Ok(None);
        };
        job.len = len;
        job.peer = peer;
        self.counters.records += 1;
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
        match verdict {
            Err(Dropped::Short) => {
                self.counters.dropped_short += 1;
                self.free.push(job);
            }
            Err(Dropped::BadMagic) => {
                self.counters.dropped_bad_magic += 1;
                self.free.push(job);
            }
            Ok(Verdict::Reject(h, status)) => {
                self.counters.error_records += 1;
                job.header = h;
                job.reject(status);
                job.seq = self.reorder.reserve();
                self.reorder.complete(job);
            }
            Ok(Verdict::Evaluate(h)) => {
                self.counters.requests += 1;
                self.counters.vectors += u64::from(h.count);
                job.header = h;
                job.seq = self.reorder.reserve();
                match (self.inline.as_mut(), self.pool.as_mut()) {
                    (Some(ev), _) => {
                        job.evaluate(ev);
                        self.counters.fallbacks += job.fallbacks;
                        self.counters.eval_ns += job.eval_ns;
                        self.reorder.complete(job);
                    }
                    (None, Some(pool)) => {
                        if let Err(job) = pool.submit(job) {
                            self.counters.stalls += 1;
                            self.stalled.push_back(job);
                        }
                    }
                    (None, None) => {
                        job.reject(super::record::Status::Internal);
                        self.reorder.complete(job);
                    }
                }
            }
        }
        Ok(Some(1))
    }
}
