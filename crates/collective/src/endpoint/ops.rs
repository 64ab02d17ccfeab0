//! The operations a rank starts: point-to-point, and every collective with its algorithm.

use super::*;

impl Endpoint {
    /// Point-to-point send of `data` to `peer` with `tag`; the data is copied, so the caller
    /// may reuse it at once. Over a connection the request completes once the message is
    /// queued for the stack; over a shared-memory pipe once the message is in the pipe's
    /// ring. Order per (peer, tag) is kept.
    pub fn isend<T: Element>(&mut self, peer: usize, tag: u32, data: &[T]) -> Result<Request<T>, CollectiveError> {
        self.check_peer(peer)?;
        if self.live_pipe(peer) {
            let input = self.bytes_of(data);
            self.staged(input.len());
            return Ok(self.send_op(peer, tag, OpBuf::Owned(input)));
        }
        // Framed straight from `data` (one copy); the operation has nothing left to do.
        self.staged(std::mem::size_of_val(data));
        let buf = self.pool.take(crate::frame::HEADER_LEN + std::mem::size_of_val(data));
        self.peers[peer].queue(encode_elems_in(buf, Kind::P2p, tag, 0, data));
        let s = Schedule { steps: Vec::new(), init: Init::Zeros(0), result: 0..0 };
        Ok(self.start_op("send", Kind::P2p, tag, ReduceOp::Sum, s, Vec::new()))
    }

    /// [`Endpoint::isend`] without a copy (as `MPI_Isend`): over a shared-memory pipe the
    /// message is written into the ring straight from `data` as the ring has room, and the
    /// request completes once all of it is there. Over a connection (or on a big-endian
    /// machine) the data is copied as by `isend`.
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until the request is collected
    /// ([`Endpoint::test`], a communicator's `wait`) or [`Endpoint::detach`]ed.
    pub unsafe fn isend_borrowed<T: Element>(
        &mut self,
        peer: usize,
        tag: u32,
        data: &[T],
    ) -> Result<Request<T>, CollectiveError> {
        self.check_peer(peer)?;
        if !cfg!(target_endian = "little") || !self.live_pipe(peer) {
            return self.isend(peer, tag, data);
        }
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let lent = OpBuf::Lent { ptr: std::ptr::NonNull::from(bytes).cast(), len: bytes.len() };
        Ok(self.send_op(peer, tag, lent))
    }

    /// A send operation of `input` to `peer` through its pipe, its message posted at once (so
    /// that messages to a peer enter its pipe in the order they were sent).
    fn send_op<T: Element>(&mut self, peer: usize, tag: u32, input: OpBuf) -> Request<T> {
        let len = input.len();
        let s = Schedule {
            steps: vec![schedule::Step {
                actions: vec![Action::Send { peer, buf: Buf::Input, range: 0..len, wire: 0 }],
            }],
            init: Init::Zeros(0),
            result: 0..0,
        };
        let mut op = engine::new_op::<T>("send", Kind::P2p, tag, ReduceOp::Sum, s);
        op.input = input;
        self.post_send(&mut op, peer, Buf::Input, &(0..len), 0);
        op.posted = true;
        self.push_op(op)
    }

    /// Lets the caller drop the buffer of a borrowed send ([`Endpoint::isend_borrowed`]) whose
    /// request it will not collect: what is not yet written is copied, and the operation is
    /// removed once it ends (a finished one at once).
    pub fn detach<T>(&mut self, req: Request<T>) {
        let Some(op) = self.ops.get_mut(&req.id()) else { return };
        if op.outcome.is_some() {
            if let Some(op) = self.ops.remove(&req.id()) {
                self.recycle(op);
            }
            return;
        }
        if let OpBuf::Lent { .. } = op.input {
            let mut own = self.pool.take(op.input.len());
            own.extend_from_slice(&op.input);
            self.counters.staged_bytes += own.len() as u64;
            op.input = OpBuf::Owned(own);
        }
        op.detached = true;
    }

    /// The first point-to-point message that has arrived and is not yet taken by a receive,
    /// from `peer` (any peer if `None`, looked at in rank order) whose tag `t` satisfies
    /// `t & tag_mask == tag & tag_mask` (a mask of 0 takes any tag): `(peer, tag, bytes)`.
    /// Like `MPI_Iprobe`: a receive posted next for that peer and tag gets this message.
    pub fn probe(&self, peer: Option<usize>, tag: u32, tag_mask: u32) -> Option<(usize, u32, usize)> {
        let found = |p: usize| {
            self.peers
                .get(p)?
                .inbox
                .iter()
                .find(|m| m.kind == Kind::P2p && m.tag & tag_mask == tag & tag_mask)
                .map(|m| (p, m.tag, m.payload.len()))
        };
        match peer {
            Some(p) => found(p),
            None => (0..self.size()).find_map(found),
        }
    }

    /// Point-to-point receive of exactly `count` elements from `peer` with `tag`.
    pub fn irecv<T: Element>(&mut self, peer: usize, tag: u32, count: usize) -> Result<Request<T>, CollectiveError> {
        self.check_peer(peer)?;
        let len = count * T::DTYPE.size();
        let s = Schedule {
            steps: vec![schedule::Step {
                actions: vec![Action::Recv { peer, range: 0..len, mode: Mode::Copy, wire: 0 }],
            }],
            init: Init::Zeros(len),
            result: 0..len,
        };
        Ok(self.start_op("recv", Kind::P2p, tag, ReduceOp::Sum, s, Vec::new()))
    }

    /// Broadcast from `root` (algorithm [`Config::bcast`]): every rank passes a buffer of the
    /// same length; the result is the root's.
    pub fn ibcast<T: Element>(&mut self, data: &[T], root: usize) -> Result<Request<T>, CollectiveError> {
        let algo = self.cfg.bcast;
        self.ibcast_with(data, root, algo)
    }

    /// Broadcast with an explicit algorithm.
    pub fn ibcast_with<T: Element>(
        &mut self,
        data: &[T],
        root: usize,
        algo: TreeAlgo,
    ) -> Result<Request<T>, CollectiveError> {
        self.check_root(root)?;
        let s = self.bcast_schedule(data.len() * T::DTYPE.size(), root, algo);
        Ok(self.coll("broadcast", ReduceOp::Sum, s, data))
    }

    /// Broadcast in the caller's `buf` (lent for a blocking call, see
    /// [`Endpoint::start_lent`]).
    pub(crate) fn ibcast_lent<T: Element>(
        &mut self,
        buf: &mut [T],
        root: usize,
    ) -> Result<Request<T>, CollectiveError> {
        self.check_root(root)?;
        let s = self.bcast_schedule(std::mem::size_of_val(buf), root, self.cfg.bcast);
        Ok(self.start_lent("broadcast", ReduceOp::Sum, s, buf))
    }

    /// This rank's broadcast schedule of `len` bytes.
    fn bcast_schedule(&self, len: usize, root: usize, algo: TreeAlgo) -> Schedule {
        let (r, n) = (self.rank, self.size());
        match self.auto_tree(algo, len) {
            TreeAlgo::Flat | TreeAlgo::Auto => schedule::bcast_flat(r, n, root, len),
            TreeAlgo::Tree => schedule::bcast_tree(r, n, root, len),
            TreeAlgo::Chain => schedule::bcast_chain(r, n, root, len, self.cfg.chain_segment),
        }
    }

    /// Reduce to `root` (algorithm [`Config::reduce`]); the root's result is the reduction,
    /// other ranks get an empty vector.
    pub fn ireduce<T: Element>(
        &mut self,
        data: &[T],
        op: ReduceOp,
        root: usize,
    ) -> Result<Request<T>, CollectiveError> {
        let algo = self.cfg.reduce;
        self.ireduce_with(data, op, root, algo)
    }

    /// Reduce with an explicit algorithm.
    pub fn ireduce_with<T: Element>(
        &mut self,
        data: &[T],
        op: ReduceOp,
        root: usize,
        algo: TreeAlgo,
    ) -> Result<Request<T>, CollectiveError> {
        self.check_root(root)?;
        let (r, n, len) = (self.rank, self.size(), data.len() * T::DTYPE.size());
        let s = match self.auto_tree(algo, len) {
            TreeAlgo::Flat | TreeAlgo::Auto => schedule::reduce_flat(r, n, root, len),
            TreeAlgo::Tree => schedule::reduce_tree(r, n, root, len),
            TreeAlgo::Chain => schedule::reduce_chain(r, n, root, len, T::DTYPE.size(), self.cfg.chain_segment),
        };
        Ok(self.coll("reduce", op, s, data))
    }

    /// `algo`, or for [`TreeAlgo::Auto`] the one it picks for `len` bytes.
    pub fn auto_tree(&self, algo: TreeAlgo, len: usize) -> TreeAlgo {
        match algo {
            TreeAlgo::Auto if len >= self.cfg.pipelined_from => TreeAlgo::Chain,
            TreeAlgo::Auto => TreeAlgo::Flat,
            a => a,
        }
    }

    /// The algorithm [`AllreduceAlgo::Auto`] picks for `elems` elements of `esize` bytes.
    pub fn auto_allreduce(&self, elems: usize, esize: usize) -> AllreduceAlgo {
        if elems * esize <= self.cfg.small_allreduce {
            AllreduceAlgo::RecursiveDoubling
        } else if elems >= self.size() {
            AllreduceAlgo::Ring
        } else {
            AllreduceAlgo::ReduceBcast
        }
    }

    /// All-reduce (algorithm [`Config::allreduce`]): every rank gets the reduction.
    pub fn iallreduce<T: Element>(&mut self, data: &[T], op: ReduceOp) -> Result<Request<T>, CollectiveError> {
        let algo = self.cfg.allreduce;
        Ok(self.iallreduce_with(data, op, algo))
    }

    /// All-reduce with an explicit algorithm.
    pub fn iallreduce_with<T: Element>(&mut self, data: &[T], op: ReduceOp, algo: AllreduceAlgo) -> Request<T> {
        let s = self.allreduce_schedule(data.len(), T::DTYPE.size(), algo);
        self.coll("all-reduce", op, s, data)
    }

    /// All-reduce in the caller's `buf`, which holds this rank's input (lent for a blocking
    /// call, see [`Endpoint::start_lent`]; not for logical operators, whose input is
    /// rewritten first).
    pub(crate) fn iallreduce_lent<T: Element>(&mut self, buf: &mut [T], op: ReduceOp) -> Request<T> {
        debug_assert!(!op.is_logical());
        let s = self.allreduce_schedule(buf.len(), T::DTYPE.size(), self.cfg.allreduce);
        self.start_lent("all-reduce", op, s, buf)
    }

    /// This rank's all-reduce schedule of `elems` elements of `es` bytes.
    fn allreduce_schedule(&self, elems: usize, es: usize, algo: AllreduceAlgo) -> Schedule {
        let (r, n) = (self.rank, self.size());
        let algo = if algo == AllreduceAlgo::Auto { self.auto_allreduce(elems, es) } else { algo };
        match algo {
            AllreduceAlgo::ReduceBcast | AllreduceAlgo::Auto => schedule::allreduce_reduce_bcast(r, n, elems * es),
            AllreduceAlgo::Ring => schedule::allreduce_ring(r, n, elems, es, self.cfg.chain_segment),
            AllreduceAlgo::RecursiveDoubling => schedule::allreduce_doubling(r, n, elems * es),
        }
    }

    /// Scatter from `root`: the root passes `size * chunk` elements, the other ranks' `data`
    /// is ignored (pass an empty slice); rank `i` gets chunk `i`.
    pub fn iscatter<T: Element>(
        &mut self,
        data: &[T],
        chunk: usize,
        root: usize,
    ) -> Result<Request<T>, CollectiveError> {
        self.check_root(root)?;
        if self.rank == root && data.len() != chunk * self.size() {
            return Err(CollectiveError::BadArgument(format!(
                "scatter root passes {} elements, expected {} x {chunk}",
                data.len(),
                self.size()
            )));
        }
        let s = schedule::scatter(self.rank, self.size(), root, chunk * T::DTYPE.size());
        Ok(self.coll("scatter", ReduceOp::Sum, s, data))
    }

    /// Gather to `root` in rank order; other ranks get an empty vector.
    pub fn igather<T: Element>(&mut self, data: &[T], root: usize) -> Result<Request<T>, CollectiveError> {
        self.check_root(root)?;
        let s = schedule::gather(self.rank, self.size(), root, data.len() * T::DTYPE.size());
        Ok(self.coll("gather", ReduceOp::Sum, s, data))
    }

    /// All-gather: every rank gets every rank's buffer, in rank order.
    pub fn iallgather<T: Element>(&mut self, data: &[T]) -> Request<T> {
        let s = schedule::allgather(self.rank, self.size(), data.len() * T::DTYPE.size(), self.cfg.chain_segment);
        self.coll("all-gather", ReduceOp::Sum, s, data)
    }

    /// Reduce-scatter: `data` is `size` chunks of equal length; rank `i` gets chunk `i`
    /// reduced over all ranks.
    pub fn ireduce_scatter<T: Element>(&mut self, data: &[T], op: ReduceOp) -> Result<Request<T>, CollectiveError> {
        let n = self.size();
        if !data.len().is_multiple_of(n) {
            return Err(CollectiveError::BadArgument(format!("{} elements are not {n} equal chunks", data.len())));
        }
        let s = schedule::reduce_scatter(self.rank, n, data.len() / n, T::DTYPE.size(), self.cfg.chain_segment);
        Ok(self.coll("reduce-scatter", op, s, data))
    }

    /// All-to-all: `data` is `size` chunks of equal length; chunk `j` goes to rank `j`, and
    /// the result holds what every rank sent us, in rank order.
    pub fn ialltoall<T: Element>(&mut self, data: &[T]) -> Result<Request<T>, CollectiveError> {
        let n = self.size();
        if !data.len().is_multiple_of(n) {
            return Err(CollectiveError::BadArgument(format!("{} elements are not {n} equal chunks", data.len())));
        }
        let s = schedule::alltoall(self.rank, n, data.len() / n * T::DTYPE.size());
        Ok(self.coll("all-to-all", ReduceOp::Sum, s, data))
    }

    /// Barrier: completes once every rank has entered it (the result is an empty vector).
    pub fn ibarrier(&mut self) -> Request<i32> {
        let s = schedule::barrier(self.rank, self.size());
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.start_op("barrier", Kind::Coll, seq, ReduceOp::Sum, s, Vec::new())
    }
}
