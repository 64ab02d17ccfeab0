//! The operation engine: messages between the stack and the peers' queues, each operation
//! advanced along its schedule, results collected.

use super::*;

impl Endpoint {
    pub(super) fn read_all<L: Link>(&mut self, stack: &mut Stack<L>) {
        for (j, p) in self.peers.iter_mut().enumerate() {
            let (Some(h), true, None) = (p.conn, p.up, &p.lost) else { continue };
            if j == self.rank {
                continue;
            }
            if p.inbox_full(self.cfg.max_unmatched, &mut self.counters) {
                continue;
            }
            let before = p.inbox.len();
            let r = p.parser.pump(stack, h, self.cfg.max_message, &mut p.inbox, &mut self.pool);
            p.count_arrivals(before, &mut self.counters);
            match r {
                Ok(PumpEnd::WouldBlock | PumpEnd::Held) => {}
                Ok(PumpEnd::Eof) => p.lost = Some("the peer closed its connection".into()),
                Err(PumpError::Net(e)) => p.lost = Some(e.to_string()),
                Err(PumpError::Frame(e)) => {
                    p.lost = Some(format!("protocol violation: {e}"));
                    self.counters.protocol_errors += 1;
                    let _ = stack.tcp_abort(h);
                }
            }
        }
    }

    /// Hands queued messages to the connections: one of at least [`TRANSFER_MIN`] bytes as
    /// a transfer (sent from where it lies; the stack gives it back once acknowledged, and it
    /// returns to the pool), a smaller one copied into the send buffer as far as it has room
    /// (then it goes back to the pool at once).
    pub(super) fn flush<L: Link>(&mut self, stack: &mut Stack<L>) {
        for p in &mut self.peers {
            let (Some(h), true, None) = (p.conn, p.up, &p.lost) else { continue };
            while let Ok(Some(done)) = stack.tcp_reclaim_transfer(h) {
                self.pool.give(done);
            }
            while let Some(m) = p.outbox.front() {
                if p.out_off == 0 && m.len() >= TRANSFER_MIN {
                    let m = p.outbox.pop_front().expect("the front message");
                    let len = m.len();
                    if let Err(e) = stack.tcp_send_transfer(h, m) {
                        p.lost = Some(e.to_string());
                        break;
                    }
                    self.counters.msgs_sent += 1;
                    self.counters.bytes_sent += len.saturating_sub(crate::frame::HEADER_LEN) as u64;
                    continue;
                }
                let n = match stack.tcp_send(h, &m[p.out_off..]) {
                    Ok(n) => n,
                    Err(e) => {
                        p.lost = Some(e.to_string());
                        break;
                    }
                };
                p.out_off += n;
                if p.out_off < m.len() {
                    break;
                }
                p.out_off = 0;
                message_sent(&mut p.outbox, &mut self.pool, &mut self.counters);
            }
        }
    }

    pub(super) fn advance_ops(&mut self, now: Instant) {
        // Take the table out so each operation can borrow the endpoint while it advances.
        let mut ops = std::mem::take(&mut self.ops);
        self.pipe_busy.fill(false);
        for (&id, op) in ops.iter_mut().filter(|(_, o)| o.outcome.is_none()) {
            if let Some(res) = self.advance(id, op, now) {
                if res.is_ok() {
                    self.counters.ops_completed += 1;
                } else {
                    self.counters.ops_failed += 1;
                }
                self.release_pipes(id, op);
                op.outcome = Some(res);
            }
        }
        let gone: Vec<u64> = ops.iter().filter(|(_, o)| o.detached && o.outcome.is_some()).map(|(&id, _)| id).collect();
        for id in gone {
            if let Some(op) = ops.remove(&id) {
                self.recycle(op);
            }
        }
        self.ops = ops;
    }

    /// Runs operation `id` as far as it can go; `Some` once it finished or failed.
    fn advance(&mut self, id: u64, op: &mut Op, now: Instant) -> Option<Result<(), CollectiveError>> {
        let deadline = *op.deadline.get_or_insert(now + self.cfg.timeout);
        loop {
            let Some(step) = op.sched.steps.get(op.step) else { return Some(Ok(())) };
            if !op.posted {
                // By index: `post_send` borrows the operation (no list of the sends is made).
                for i in 0..step.actions.len() {
                    if let Action::Send { peer, buf, range, wire } = op.sched.steps[op.step].actions[i].clone() {
                        self.post_send(op, peer, buf, &range, wire);
                    }
                }
                op.posted = true;
            }
            if let Err(e) = self.write_pipe_sends(op) {
                return Some(Err(e));
            }
            // Apply receives and local moves in the listed order, as far as their messages
            // are here (and their ranges are not being sent from).
            if let Some(e) = self.apply_ready(id, op) {
                return Some(Err(e));
            }
            let Some(step) = op.sched.steps.get(op.step) else { return Some(Ok(())) };
            // Are the remaining messages of this step here and its own written? (No
            // allocation on this path: a waiting rank runs it on every poll round.)
            let rest = &step.actions[op.applied..];
            let waiting = || missing(&self.peers, op.kind, op.tag, rest);
            if op.applied < step.actions.len() || !op.pipe_sends.is_empty() {
                let lost = waiting().filter_map(|w| Some((w, self.peers[w].lost.as_ref()?))).min_by_key(|&(w, _)| w);
                if let Some((w, reason)) = lost {
                    return Some(Err(CollectiveError::PeerLost {
                        op: op.name,
                        step: op.step,
                        rank: w,
                        reason: reason.clone(),
                    }));
                }
                if now >= deadline {
                    let mut waiting: Vec<usize> = waiting().chain(op.pipe_sends.iter().map(|d| d.peer)).collect();
                    waiting.sort_unstable();
                    waiting.dedup();
                    if let Some(&w) = waiting.iter().find(|&&w| self.peers[w].inbox_bytes >= self.cfg.max_unmatched) {
                        return Some(Err(CollectiveError::UnmatchedLimit {
                            op: op.name,
                            step: op.step,
                            rank: w,
                            queued: self.peers[w].inbox_bytes,
                            limit: self.cfg.max_unmatched,
                        }));
                    }
                    return Some(Err(CollectiveError::Timeout {
                        op: op.name,
                        step: op.step,
                        waiting_for: waiting,
                        timeout: self.cfg.timeout,
                    }));
                }
                return None;
            }
            op.step += 1;
            op.posted = false;
            op.applied = 0;
        }
    }

    /// Applies the current step's actions from `op.applied` on in order, stopping at the
    /// first receive whose message has not arrived, or at a move into a range still being
    /// written into a pipe; an error ends the operation.
    fn apply_ready(&mut self, id: u64, op: &mut Op) -> Option<CollectiveError> {
        while let Some(a) = op.sched.steps.get(op.step)?.actions.get(op.applied).cloned() {
            match a {
                Action::Send { .. } => {}
                Action::Local { from, to, mode } => {
                    if op_pipes::sending_from(&op.pipe_sends, &to) {
                        return None;
                    }
                    let (Some(src), true) = (op.input.get(from.clone()), to.end <= op.work.len()) else {
                        return Some(CollectiveError::BadArgument("local move out of range".into()));
                    };
                    let dst = &mut op.work[to.clone()];
                    match mode {
                        Mode::Copy => dst.copy_from_slice(src),
                        Mode::Reduce => reduce_bytes(op.dtype, op.rop, dst, src),
                    }
                }
                Action::Recv { peer, range, mode, wire } => {
                    if op_pipes::sending_from(&op.pipe_sends, &range) {
                        return None;
                    }
                    let found = self.peers[peer].take(|m| m.kind == op.kind && m.tag == op.tag && m.step == wire);
                    let Some(m) = found else {
                        match self.pull_from_pipe(id, op, peer, &range, mode, wire) {
                            Ok(true) => {
                                op.applied += 1;
                                continue;
                            }
                            // Reading the pipe may have brought the message (whole, to the
                            // inbox): then apply it now.
                            Ok(false) if self.peers[peer].has(op.kind, op.tag, wire) => continue,
                            Ok(false) => return None,
                            Err(e) => return Some(e),
                        }
                    };
                    self.drop_idle_claim(id, peer);
                    // The message is the whole buffer (or the working buffer is still
                    // empty, see `Schedule::first_recv_fills`): take it over instead of
                    // copying.
                    let takes_over = matches!(mode, Mode::Copy)
                        && range.start == 0
                        && (range.end == op.work.len() || op.work.is_empty());
                    if m.payload.len() != range.len() || (range.end > op.work.len() && !takes_over) {
                        return Some(CollectiveError::Protocol {
                            rank: peer,
                            reason: format!(
                                "{} step {}: {} bytes where {} were expected (do all ranks pass the same lengths?)",
                                op.name,
                                op.step,
                                m.payload.len(),
                                range.len()
                            ),
                        });
                    }
                    let spent = match mode {
                        Mode::Copy if takes_over => op.work.take_over(m.payload),
                        Mode::Copy => {
                            op.work[range.clone()].copy_from_slice(&m.payload);
                            m.payload
                        }
                        Mode::Reduce => {
                            reduce_bytes(op.dtype, op.rop, &mut op.work[range.clone()], &m.payload);
                            m.payload
                        }
                    };
                    self.pool.give(spent);
                }
            }
            op.applied += 1;
        }
        None
    }

    pub(super) fn start_op<T: Element>(
        &mut self,
        name: &'static str,
        kind: Kind,
        tag: u32,
        rop: ReduceOp,
        sched: Schedule,
        input: Vec<u8>,
    ) -> Request<T> {
        let (input, work) = match sched.init {
            Init::Input if !sched.reads_input() => (Vec::new(), input),
            Init::Input => {
                let mut work = self.pool.take(input.len());
                work.extend_from_slice(&input);
                (input, work)
            }
            // The first message received becomes the working buffer: nothing to zero.
            Init::Zeros(n) if sched.first_recv_fills(n) => (input, Vec::new()),
            Init::Zeros(n) => {
                let mut work = self.pool.take(n);
                work.resize(n, 0);
                (input, work)
            }
        };
        let mut op = new_op::<T>(name, kind, tag, rop, sched);
        op.input = OpBuf::Owned(input);
        op.work = OpBuf::Owned(work);
        self.push_op(op)
    }

    /// Starts a collective whose working buffer is the caller's `buf` (lent, see
    /// [`OpBuf::Lent`]), which holds the input for [`Init::Input`]. For [`Init::Zeros`] it
    /// is not cleared: only for operations whose receives cover all of it (a broadcast).
    /// The caller must remove the operation (collect or [`Endpoint::abandon`]) before `buf`
    /// goes away.
    pub(crate) fn start_lent<T: Element>(
        &mut self,
        name: &'static str,
        rop: ReduceOp,
        sched: Schedule,
        buf: &mut [T],
    ) -> Request<T> {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let input = if sched.reads_input() {
            let mut v = self.pool.take(bytes.len());
            v.extend_from_slice(bytes);
            v
        } else {
            Vec::new()
        };
        let mut op = new_op::<T>(name, Kind::Coll, seq, rop, sched);
        op.input = OpBuf::Owned(input);
        op.work = OpBuf::Lent { ptr: std::ptr::NonNull::from(&mut *bytes).cast(), len: bytes.len() };
        self.push_op(op)
    }

    /// Removes operation `req` whatever its state (a blocking call that lent its buffer is
    /// leaving): its pipe claims and unwritten messages are dropped as when it fails.
    pub(crate) fn abandon<T>(&mut self, req: &Request<T>) {
        if let Some(mut op) = self.ops.remove(&req.id) {
            self.release_pipes(req.id, &mut op);
            self.recycle(op);
        }
    }

    /// An operation's own buffers go back to the pool.
    pub(super) fn recycle(&mut self, op: Op) {
        for b in [op.input, op.work] {
            if let Some(v) = b.into_vec() {
                self.pool.give(v);
            }
        }
    }

    pub(super) fn push_op<T>(&mut self, op: Op) -> Request<T> {
        let id = self.next_id;
        self.next_id += 1;
        self.ops.insert(id, op);
        Request { id, _t: PhantomData }
    }

    pub(super) fn coll<T: Element>(
        &mut self,
        name: &'static str,
        rop: ReduceOp,
        sched: Schedule,
        data: &[T],
    ) -> Request<T> {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        let mut input = self.bytes_of(data);
        self.staged(input.len());
        if rop.is_logical() {
            crate::dtype::truth_in_place(T::DTYPE, &mut input);
        }
        self.start_op(name, Kind::Coll, seq, rop, sched, input)
    }

    /// Counts `n` payload bytes copied into a message or operation buffer to be sent.
    pub(super) fn staged(&mut self, n: usize) {
        self.counters.staged_bytes += n as u64;
    }

    /// `data` as little-endian bytes in a pooled buffer.
    pub(super) fn bytes_of<T: Element>(&mut self, data: &[T]) -> Vec<u8> {
        let buf = self.pool.take(std::mem::size_of_val(data));
        to_bytes_in(buf, data)
    }

    pub(super) fn check_root(&self, root: usize) -> Result<(), CollectiveError> {
        if root >= self.size() {
            return Err(CollectiveError::BadArgument(format!("root {root} in a world of {}", self.size())));
        }
        Ok(())
    }

    pub(super) fn check_peer(&self, peer: usize) -> Result<(), CollectiveError> {
        if peer >= self.size() || peer == self.rank {
            return Err(CollectiveError::BadArgument(format!(
                "peer {peer} (we are rank {} of {})",
                self.rank,
                self.size()
            )));
        }
        Ok(())
    }

    /// Checks whether request `req` finished: `Ok(None)` while it runs, then its result
    /// (the request is collected; testing it again is [`CollectiveError::UnknownRequest`]).
    pub fn test<T: Element>(&mut self, req: &Request<T>) -> Result<Option<Vec<T>>, CollectiveError> {
        self.collect(req, |_, res| Ok(from_bytes(res)))
    }

    /// [`Endpoint::test`] that writes the result into `out` instead of a new vector (no
    /// allocation: a receive into the caller's memory, as `MPI_Recv`): `Ok(false)` while it
    /// runs, `Ok(true)` once the result is in `out`. `out` must hold exactly the result's
    /// elements, else [`CollectiveError::BadArgument`] (and the request is collected).
    pub fn test_into<T: Element>(&mut self, req: &Request<T>, out: &mut [T]) -> Result<bool, CollectiveError> {
        let done = self.collect(req, |name, res| {
            if res.len() != std::mem::size_of_val(out) {
                return Err(CollectiveError::BadArgument(format!(
                    "{name}: a result of {} bytes into a buffer of {}",
                    res.len(),
                    std::mem::size_of_val(out)
                )));
            }
            from_bytes_into(res, out);
            Ok(())
        })?;
        Ok(done.is_some())
    }

    /// [`Endpoint::test`] of an operation whose result is already where the caller wants it
    /// (a lent buffer): `Ok(Some(()))` once it finished and is collected.
    pub(crate) fn test_done<T>(&mut self, req: &Request<T>) -> Result<Option<()>, CollectiveError> {
        self.collect(req, |_, _| Ok(()))
    }

    /// Once `req` finished: collects it, hands its result bytes (or its error) to `f`, and
    /// returns the operation's buffers to the pool.
    fn collect<T, R>(
        &mut self,
        req: &Request<T>,
        f: impl FnOnce(&'static str, &[u8]) -> Result<R, CollectiveError>,
    ) -> Result<Option<R>, CollectiveError> {
        let Some(op) = self.ops.get(&req.id) else { return Err(CollectiveError::UnknownRequest) };
        if op.outcome.is_none() {
            return Ok(None);
        }
        let Some(mut op) = self.ops.remove(&req.id) else { return Err(CollectiveError::UnknownRequest) };
        let r = match op.outcome.take() {
            Some(Ok(())) => f(op.name, op.work.get(op.sched.result.clone()).unwrap_or(&[])).map(Some),
            Some(Err(e)) => Err(e),
            None => Err(CollectiveError::UnknownRequest),
        };
        self.recycle(op);
        r
    }

    /// The step of its schedule that request `req` is in (0-based; the step count once it
    /// finished), or `None` if it is not known (collected already).
    pub fn step_of<T>(&self, req: &Request<T>) -> Option<usize> {
        self.ops.get(&req.id).map(|op| op.step)
    }
}

/// An operation not yet started, with empty buffers.
pub(super) fn new_op<T: Element>(name: &'static str, kind: Kind, tag: u32, rop: ReduceOp, sched: Schedule) -> Op {
    Op {
        name,
        kind,
        tag,
        dtype: T::DTYPE,
        rop,
        sched,
        input: OpBuf::Owned(Vec::new()),
        work: OpBuf::Owned(Vec::new()),
        step: 0,
        posted: false,
        applied: 0,
        deadline: None,
        outcome: None,
        pipe_sends: VecDeque::new(),
        carry: ([0; 16], 0),
        detached: false,
    }
}

/// A message at the front of `queue` went out whole (over TCP or a pipe): its buffer goes back
/// to the pool and the counters count it.
pub(super) fn message_sent(queue: &mut VecDeque<Vec<u8>>, pool: &mut BufPool, counters: &mut Counters) {
    if let Some(m) = queue.pop_front() {
        counters.msgs_sent += 1;
        counters.bytes_sent += m.len().saturating_sub(crate::frame::HEADER_LEN) as u64;
        pool.give(m);
    }
}
