//! A rank that owns its stack: one rank per thread or process, each polling its own stack
//! on the real clock. The blocking operations are the non-blocking ones plus [`wait`].
//!
//! [`wait`]: Communicator::wait

use crate::bind;
use crate::doorbell::Doorbell;
use crate::dtype::{Element, ReduceOp};
use crate::endpoint::{Endpoint, MeshState, Request};
use crate::fabric::ShmFabric;
use crate::CollectiveError;
use link::{Instant, Link};
use net::Stack;
use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

/// Longest sleep on the doorbell before the rank polls anyway (the stack's own timers
/// shorten it).
const MAX_SLEEP: Duration = Duration::from_millis(1);

/// Default of [`Communicator::yield_before_sleep`]: sleep only after a long idle stretch
/// (64 yields, about 0.1 ms here). Sleeping at once measured worse: on this 2-core VM with
/// `linerate bench collective --ranks 2`, a 1 KiB all-reduce (+ barrier) took 24 us when
/// ranks slept after 8 idle spins against 9 us when they only yielded (the wake-up through
/// the kernel costs more than the yields it saves); a long wait (a slow peer, compute on
/// another rank) still leaves the core to the ranks with work.
const DEFAULT_YIELD_BEFORE_SLEEP: u32 = 64;

/// A rank with its own stack, advanced on the monotonic clock.
pub struct Communicator<L: Link> {
    stack: Stack<L>,
    ep: Endpoint,
    /// Spin this many idle rounds before yielding the core (other ranks may share it). The
    /// default when ranks outnumber cores, 8 (a few microseconds), hands the core over
    /// quickly: with 64, `linerate bench collective` on four ranks and two cores measured a
    /// 1 KiB all-reduce (+ barrier) at 130 us, with 8 at 45 us; two ranks did not suffer.
    /// `LINERATE_SPIN_BEFORE_YIELD` overrides the default (`off`: never yield).
    pub spin_before_yield: u32,
    /// On a shared-memory fabric: after spinning, yield this many idle rounds, then sleep
    /// in the kernel until a peer's frame rings our doorbell (or a timer is due). `None`
    /// never sleeps. `LINERATE_YIELD_BEFORE_SLEEP` overrides the default (`off` for `None`).
    pub yield_before_sleep: Option<u32>,
    /// Our doorbell if the link is a [`ShmFabric`].
    bell: Option<Arc<Doorbell>>,
    /// Times the wait loop slept on the doorbell.
    sleeps: u64,
    /// Whether `new` bound the thread to a CPU.
    bound: bool,
}

/// Idle rounds a rank bound to a CPU of its own (the ranks do not outnumber the CPUs)
/// spins before it yields (a few milliseconds): nobody else of the job needs that CPU. On
/// this 2-core VM, `lr-collective-rank --bench` on 2 ranks, each pinned with `taskset`,
/// measured a 1 KiB all-reduce (+ barrier) at 5.6-7.4 us busy-polling, against 10-16 us
/// unpinned and yielding after 8 rounds; unpinned busy-polling was as fast in most runs
/// but took 20-60 ms in some, when both ranks landed on one core and each spun through
/// its time slice. With 4 ranks on the 2 CPUs (bound round-robin, yielding after 8
/// rounds), three interleaved runs each measured the 1 KiB broadcast (+ barrier) at
/// 15-17 us bound against 20-43 us unbound, and the 64 KiB all-reduce at 243-258 us
/// against 417-572 us.
pub const BOUND_SPIN_BEFORE_YIELD: u32 = 10_000;

/// A `u32` setting from the environment, `None` for "off", or the default if unset.
fn env_setting(var: &str, default: Option<u32>) -> Option<u32> {
    match std::env::var(var) {
        Ok(v) if v.trim() == "off" => None,
        Ok(v) => v.trim().parse().ok().or(default),
        Err(_) => default,
    }
}

impl<L: Link + 'static> Communicator<L> {
    /// Wraps a stack and an endpoint, and starts the full mesh.
    ///
    /// On a [`ShmFabric`] (all ranks on this machine) the calling thread is bound to one of
    /// the CPUs it may use, round-robin by rank (see [`crate::bind`]), as `mpirun` binds
    /// ranks to cores. When the ranks do not outnumber those CPUs, a rank busy-polls
    /// ([`BOUND_SPIN_BEFORE_YIELD`] idle rounds before yielding); otherwise it yields after
    /// 8 idle rounds, like OpenMPI when oversubscribed. Either way it sleeps on the fabric's
    /// doorbell after [`Communicator::yield_before_sleep`] idle yields. `LINERATE_BIND=off`
    /// keeps the thread unbound and yielding early.
    pub fn new(stack: Stack<L>, ep: Endpoint) -> Result<Self, CollectiveError> {
        let bind = std::env::var("LINERATE_BIND").map_or(true, |v| v.trim() != "off");
        Self::new_with_binding(stack, ep, bind)
    }

    /// [`Communicator::new`] with the CPU binding chosen by the caller instead of by
    /// `LINERATE_BIND`: a host process with threads of its own (Python, whose later threads
    /// would inherit the one-CPU mask) binds only when asked to.
    pub fn new_with_binding(mut stack: Stack<L>, mut ep: Endpoint, bind: bool) -> Result<Self, CollectiveError> {
        ep.start(&mut stack)?;
        let bell = (stack.link() as &dyn Any).downcast_ref::<ShmFabric>().map(ShmFabric::doorbell);
        let may_bind = bell.is_some() && bind;
        let cpus = if may_bind { bind::allowed_cpus() } else { Vec::new() };
        let bound = bind::cpu_for(ep.rank(), &cpus).is_some_and(bind::bind_thread);
        let spin = if bound && ep.size() <= cpus.len() { BOUND_SPIN_BEFORE_YIELD } else { 8 };
        Ok(Communicator {
            stack,
            ep,
            spin_before_yield: env_setting("LINERATE_SPIN_BEFORE_YIELD", Some(spin)).unwrap_or(u32::MAX),
            yield_before_sleep: env_setting("LINERATE_YIELD_BEFORE_SLEEP", Some(DEFAULT_YIELD_BEFORE_SLEEP)),
            bell,
            sleeps: 0,
            bound,
        })
    }
}

impl<L: Link> Communicator<L> {
    /// Whether this rank's thread was bound to a CPU (see [`Communicator::new`]).
    pub fn bound(&self) -> bool {
        self.bound
    }

    /// Times the wait loop slept in the kernel on the fabric's doorbell.
    pub fn sleeps(&self) -> u64 {
        self.sleeps
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.ep.rank()
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.ep.size()
    }

    /// The endpoint, to start non-blocking operations.
    pub fn endpoint(&mut self) -> &mut Endpoint {
        &mut self.ep
    }

    /// The stack.
    pub fn stack(&mut self) -> &mut Stack<L> {
        &mut self.stack
    }

    /// [`Endpoint::diagnose`] with this rank's stack: what every peer and operation is at.
    pub fn diagnose(&self) -> String {
        self.ep.diagnose(&self.stack)
    }

    /// One round: poll the stack, then progress the endpoint. Returns whether anything moved.
    pub fn poll(&mut self) -> Result<bool, CollectiveError> {
        let now = Instant::now();
        let moved = self.stack.poll(now)? > 0;
        let progressed = self.ep.progress(&mut self.stack, now)?;
        // What the endpoint just sent leaves now, not at the next poll: a rank whose operation
        // completed here goes back to its own work (or to sleep), and would otherwise hold its
        // peers' last message of the operation back until it polls again.
        self.stack.flush()?;
        Ok(progressed || moved)
    }

    /// One idle round of a wait loop: spin, then yield the core, then (on a fabric) sleep
    /// until a peer rings our doorbell.
    fn idle(&mut self, idle: &mut u32) -> Result<(), CollectiveError> {
        *idle = idle.saturating_add(1);
        if *idle <= self.spin_before_yield {
            std::hint::spin_loop();
            return Ok(());
        }
        let sleep_after = self.yield_before_sleep.map(|y| self.spin_before_yield.saturating_add(y));
        let Some(bell) = self.bell.clone().filter(|_| sleep_after.is_some_and(|s| *idle > s)) else {
            std::thread::yield_now();
            return Ok(());
        };
        // Announce the sleep, then look once more: a frame that arrived before a peer could
        // see the announcement is found here; one after it rings the bell.
        let token = bell.arm();
        if self.poll()? {
            bell.disarm();
            *idle = 0;
            return Ok(());
        }
        let now = Instant::now();
        let timeout = match self.stack.next_deadline() {
            Some(t) if t <= now => Duration::ZERO,
            Some(t) => (t - now).min(MAX_SLEEP),
            None => MAX_SLEEP,
        };
        if timeout.is_zero() {
            bell.disarm();
        } else if bell.sleep(token, timeout) {
            self.sleeps += 1;
        }
        Ok(())
    }

    /// One round of [`Communicator::poll`] for a caller's own wait loop: when nothing moved
    /// for more than [`Communicator::spin_before_yield`] rounds in a row (counted in `idle`,
    /// start it at 0), gives the core away, as the blocking operations do.
    pub fn poll_or_yield(&mut self, idle: &mut u32) -> Result<(), CollectiveError> {
        if self.poll()? {
            *idle = 0;
            Ok(())
        } else {
            self.idle(idle)
        }
    }

    /// Blocks until every connection is up (or the set-up timeout).
    pub fn connect(&mut self) -> Result<(), CollectiveError> {
        let mut idle = 0;
        while self.ep.mesh_state()? != MeshState::Ready {
            if self.poll()? {
                idle = 0;
            } else {
                self.idle(&mut idle)?;
            }
        }
        Ok(())
    }

    /// Blocks until `req` completes; returns its result (or the operation's error, which
    /// comes at the latest when the operation's timeout expires).
    pub fn wait<T: Element>(&mut self, req: Request<T>) -> Result<Vec<T>, CollectiveError> {
        self.block_on(|ep| ep.test(&req))
    }

    /// [`Communicator::wait`] that writes the result into `out` (see [`Endpoint::test_into`]).
    pub fn wait_into<T: Element>(&mut self, req: Request<T>, out: &mut [T]) -> Result<(), CollectiveError> {
        self.block_on(|ep| Ok(ep.test_into(&req, out)?.then_some(())))
    }

    /// Polls (spinning, yielding, sleeping when idle) until `done` gives a result.
    fn block_on<R>(
        &mut self,
        mut done: impl FnMut(&mut Endpoint) -> Result<Option<R>, CollectiveError>,
    ) -> Result<R, CollectiveError> {
        let mut idle = 0;
        loop {
            if let Some(v) = done(&mut self.ep)? {
                return Ok(v);
            }
            if self.poll()? {
                idle = 0;
            } else {
                self.idle(&mut idle)?;
            }
        }
    }

    /// Leaves the communicator cleanly (like `MPI_Finalize`): polls until everything this
    /// rank sent is acknowledged by its peers, then closes the connections. Without it, a
    /// rank that returns right after its last operation may take its last messages with it
    /// (the stack hands frames to the link at its next poll). Fails with
    /// [`CollectiveError::Timeout`] naming the peers that did not acknowledge in time.
    pub fn finalize(mut self) -> Result<(), CollectiveError> {
        let deadline = Instant::now() + self.ep.config().timeout;
        let mut idle = 0;
        loop {
            let polled = self.poll();
            let waiting = self.ep.unacknowledged(&self.stack);
            if waiting.is_empty() {
                break;
            }
            // A point-to-point link ends when its peer is gone: only an error if we still
            // had data for it.
            let moved = polled?;
            if Instant::now() >= deadline {
                return Err(CollectiveError::Timeout {
                    op: "finalize",
                    step: 0,
                    waiting_for: waiting,
                    timeout: self.ep.config().timeout,
                });
            }
            if moved {
                idle = 0;
            } else {
                self.idle(&mut idle)?;
            }
        }
        self.ep.close(&mut self.stack);
        for _ in 0..8 {
            if self.stack.poll(Instant::now()).is_err() {
                break;
            }
        }
        Ok(())
    }

    /// Blocking send. To a peer reached through a shared-memory pipe, the bytes go straight
    /// from `data` into the pipe's ring (no message buffer, as [`Endpoint::isend_borrowed`];
    /// returns once the last byte is in the ring); otherwise as [`Endpoint::isend`] and a
    /// wait.
    pub fn send<T: Element>(&mut self, peer: usize, tag: u32, data: &[T]) -> Result<(), CollectiveError> {
        // SAFETY: `data` is borrowed for the whole call, and `wait_lent` removes the operation
        // before it returns (also on errors and unwinding).
        let r = unsafe { self.ep.isend_borrowed(peer, tag, data) }?;
        self.wait_lent(r)
    }

    fn direct_timeout(&self, op: &'static str, peer: usize) -> CollectiveError {
        CollectiveError::Timeout { op, step: 0, waiting_for: vec![peer], timeout: self.ep.config().timeout }
    }

    /// Blocking receive of `count` elements.
    pub fn recv<T: Element>(&mut self, peer: usize, tag: u32, count: usize) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.irecv(peer, tag, count)?;
        self.wait(r)
    }

    /// Blocking receive into `out` (exactly `out.len()` elements), without allocating. From
    /// a peer reached through a shared-memory pipe, the payload goes straight from the
    /// pipe's ring into `out` (unless a message of `tag` is already waiting).
    pub fn recv_into<T: Element>(&mut self, peer: usize, tag: u32, out: &mut [T]) -> Result<(), CollectiveError> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(out);
        if self.ep.direct_recv_begin(peer, tag, bytes.len()) {
            let r = self.direct_recv(peer, bytes);
            self.ep.direct_recv_end(peer);
            match r {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => return Err(e),
            }
        }
        let r = self.ep.irecv(peer, tag, out.len())?;
        self.wait_into(r, out)
    }

    /// The loop of a direct receive: `Ok(true)` once `out` holds the message, `Ok(false)`
    /// if it must be received the ordinary way.
    fn direct_recv(&mut self, peer: usize, out: &mut [u8]) -> Result<bool, CollectiveError> {
        let deadline = Instant::now() + self.ep.config().timeout;
        let mut idle = 0;
        let mut off = 0;
        loop {
            match self.ep.direct_recv_step(peer, out, &mut off)? {
                crate::endpoint::DirectRecv::Done => return Ok(true),
                crate::endpoint::DirectRecv::Fallback => return Ok(false),
                crate::endpoint::DirectRecv::Moved => {
                    idle = 0;
                    continue;
                }
                crate::endpoint::DirectRecv::Idle => {}
            }
            if self.poll()? {
                idle = 0;
                continue;
            }
            if Instant::now() >= deadline {
                return Err(self.direct_timeout("recv", peer));
            }
            self.idle(&mut idle)?;
        }
    }

    /// Blocking broadcast.
    pub fn bcast<T: Element>(&mut self, data: &[T], root: usize) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.ibcast(data, root)?;
        self.wait(r)
    }

    /// Broadcast in place, as `MPI_Bcast`: the root's `buf` ends up in every rank's `buf`
    /// (the same length everywhere). On a little-endian machine the operation works in `buf`
    /// itself: messages go from it and come into it (straight through the shared-memory
    /// pipes), with no message, input or result buffer.
    pub fn bcast_in_place<T: Element>(&mut self, buf: &mut [T], root: usize) -> Result<(), CollectiveError> {
        if !cfg!(target_endian = "little") {
            let r = self.ep.ibcast(buf, root)?;
            return self.wait_into(r, buf);
        }
        let r = self.ep.ibcast_lent(buf, root)?;
        self.wait_lent(r)
    }

    /// Blocking reduce.
    pub fn reduce<T: Element>(&mut self, data: &[T], op: ReduceOp, root: usize) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.ireduce(data, op, root)?;
        self.wait(r)
    }

    /// Blocking all-reduce.
    pub fn allreduce<T: Element>(&mut self, data: &[T], op: ReduceOp) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.iallreduce(data, op)?;
        self.wait(r)
    }

    /// All-reduce of `data` into `out` (as many elements), as `MPI_Allreduce` with a send and
    /// a receive buffer: `data` is copied into `out` and reduced there
    /// ([`Communicator::allreduce_in_place`]).
    pub fn allreduce_into<T: Element>(
        &mut self,
        data: &[T],
        out: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CollectiveError> {
        if data.len() != out.len() {
            return Err(CollectiveError::BadArgument(format!(
                "all-reduce of {} elements into a buffer of {}",
                data.len(),
                out.len()
            )));
        }
        out.copy_from_slice(data);
        self.allreduce_in_place(out, op)
    }

    /// All-reduce in place (`MPI_IN_PLACE`): `buf` holds this rank's input and gets the
    /// reduction. On a little-endian machine, and for the arithmetic operators, the operation
    /// works in `buf` itself: messages go from it, and arriving ones are reduced or copied
    /// into it (straight out of the shared-memory pipes), with no input or result buffer.
    pub fn allreduce_in_place<T: Element>(&mut self, buf: &mut [T], op: ReduceOp) -> Result<(), CollectiveError> {
        if !cfg!(target_endian = "little") || op.is_logical() {
            let r = self.ep.iallreduce(buf, op)?;
            return self.wait_into(r, buf);
        }
        let r = self.ep.iallreduce_lent(buf, op);
        self.wait_lent(r)
    }

    /// Waits for an operation working in a buffer the caller lent it; the operation is
    /// removed before this returns, also when it fails or the wait unwinds, so the endpoint
    /// never holds the buffer after the caller's borrow ends.
    fn wait_lent<T: Element>(&mut self, req: Request<T>) -> Result<(), CollectiveError> {
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.block_on(|ep| ep.test_done(&req))));
        match run {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.ep.abandon(&req);
                Err(e)
            }
            Err(panic) => {
                self.ep.abandon(&req);
                std::panic::resume_unwind(panic)
            }
        }
    }

    /// Blocking scatter.
    pub fn scatter<T: Element>(&mut self, data: &[T], chunk: usize, root: usize) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.iscatter(data, chunk, root)?;
        self.wait(r)
    }

    /// Blocking gather.
    pub fn gather<T: Element>(&mut self, data: &[T], root: usize) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.igather(data, root)?;
        self.wait(r)
    }

    /// Blocking all-gather.
    pub fn allgather<T: Element>(&mut self, data: &[T]) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.iallgather(data);
        self.wait(r)
    }

    /// Blocking reduce-scatter.
    pub fn reduce_scatter<T: Element>(&mut self, data: &[T], op: ReduceOp) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.ireduce_scatter(data, op)?;
        self.wait(r)
    }

    /// Blocking all-to-all.
    pub fn alltoall<T: Element>(&mut self, data: &[T]) -> Result<Vec<T>, CollectiveError> {
        let r = self.ep.ialltoall(data)?;
        self.wait(r)
    }

    /// Blocking barrier.
    pub fn barrier(&mut self) -> Result<(), CollectiveError> {
        let r = self.ep.ibarrier();
        self.wait(r).map(|_| ())
    }
}
