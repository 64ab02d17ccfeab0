//! One rank's end of a communicator: its connections, message queues and operations in
//! progress. It never owns or polls the stack: [`Endpoint::progress`] is called with the
//! rank's stack after the stack's own `poll`, so the same code runs with all ranks as
//! virtual-time hosts in one thread (a driver polls every stack and endpoint in turn) and
//! with one rank per thread or process (see [`crate::Communicator`]).
//!
//! - `config`: the settings ([`Config`], the algorithm choices) and [`Counters`];
//! - `mesh`: setting up the full mesh of connections (directly, or bootstrapped through
//!   rank 0) and tearing it down;
//! - `engine`: moving messages between the stack and the peers' queues and advancing each
//!   operation along its schedule, and collecting results;
//! - `ops`: the operations a rank starts (`isend`, `iallreduce`, ...);
//! - `pipes`, `op_pipes`, `direct`: the shared-memory pipes, operations' messages straight
//!   between their buffers and the rings, and blocking receives straight into the caller's
//!   memory.

use crate::doorbell::Doorbell;
use crate::dtype::{from_bytes, from_bytes_into, reduce_bytes, to_bytes_in, DType, Element, ReduceOp};
use crate::frame::{
    decode_addrs, decode_hello, encode, encode_addrs, encode_elems_in, encode_hello, encode_in, Kind, Msg, Parser,
    PumpEnd, PumpError,
};
use crate::pipe::{PipeRead, ShmPipe};
use crate::pool::BufPool;
use crate::schedule::{self, Action, Buf, Init, Mode, Schedule};
use crate::CollectiveError;
use link::{Instant, Link};
use net::{Stack, TcpHandle, TcpListener};
use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;
use std::net::SocketAddr;

/// Messages from this size on (header included) go to the stack as transfers, without a copy
/// into its send buffer; smaller ones are cheaper to copy.
const TRANSFER_MIN: usize = 64 * 1024;

mod config;
mod direct;
mod engine;
mod mesh;
mod op_pipes;
mod ops;
mod pipes;

pub use config::{AllreduceAlgo, Config, Counters, MeshState, TreeAlgo};
pub(crate) use direct::DirectRecv;

struct Peer {
    conn: Option<TcpHandle>,
    /// Payload bytes in `inbox`.
    inbox_bytes: usize,
    /// Reading is paused: `inbox_bytes` reached [`Config::max_unmatched`].
    paused: bool,
    /// The connection is established and identified.
    up: bool,
    retry_at: Option<Instant>,
    parser: Parser,
    inbox: VecDeque<Msg>,
    /// Framed messages to send; the stack has taken the first `out_off` bytes of the first.
    outbox: VecDeque<Vec<u8>>,
    out_off: usize,
    lost: Option<String>,
    /// Messages of operations go through a shared-memory pipe ([`Config::shm`]) instead of
    /// the connection (which then carries only the set-up).
    pipe_wanted: bool,
    /// The pipe, once created (lower rank) or opened (higher rank).
    pipe: Option<ShmPipe>,
    pipe_parser: Parser,
    /// Framed messages for the pipe; it has taken the first `pipe_off` bytes of the first.
    pipe_out: VecDeque<Vec<u8>>,
    pipe_off: usize,
    /// The peer's doorbell (rung after writing into or reading from the pipe), if it has one.
    bell: Option<Doorbell>,
    /// A direct receive (see `direct`) or an operation's receive (see `op_pipes`) wants the
    /// next message of this kind, tag, step and length from the pipe.
    claim: Option<Claim>,
    /// The claimed message's header was read: payload bytes still in the pipe for the
    /// direct receive (nothing else reads the pipe meanwhile).
    held: Option<usize>,
    /// An operation's message is partly written into the pipe (nothing else writes until
    /// it is whole).
    streaming: bool,
    /// Operations' messages posted for the pipe and not yet written whole ([`PipeSend`]).
    queued_direct: usize,
    /// Whether `pipe_wanted` is decided: at once without [`Config::host`], else once the
    /// peer's hello told its host name.
    host_known: bool,
}

impl Peer {
    /// Takes the first queued message that satisfies `f`.
    fn take(&mut self, f: impl Fn(&Msg) -> bool) -> Option<Msg> {
        let m = self.inbox.remove(self.inbox.iter().position(f)?)?;
        self.inbox_bytes -= m.payload.len();
        Some(m)
    }

    /// Back-pressure: whether reading must pause because the inbox holds `max` bytes or
    /// more (counted once per pause), leaving the bytes in the transport until an operation
    /// takes messages.
    fn inbox_full(&mut self, max: usize, counters: &mut Counters) -> bool {
        if self.inbox_bytes >= max {
            if !self.paused {
                self.paused = true;
                counters.unmatched_pauses += 1;
            }
            return true;
        }
        self.paused = false;
        false
    }

    /// Counts the messages the inbox got from index `before` on.
    fn count_arrivals(&mut self, before: usize, counters: &mut Counters) {
        for m in self.inbox.range(before..) {
            counters.bytes_received += m.payload.len() as u64;
            counters.staged_bytes += m.payload.len() as u64;
            self.inbox_bytes += m.payload.len();
        }
        counters.unmatched_peak_bytes = counters.unmatched_peak_bytes.max(self.inbox_bytes as u64);
        counters.msgs_received += (self.inbox.len() - before) as u64;
    }

    /// Whether a message of `kind`, `tag` and protocol step `step` waits in the inbox.
    fn has(&self, kind: Kind, tag: u32, step: u32) -> bool {
        self.inbox.iter().any(|m| m.kind == kind && m.tag == tag && m.step == step)
    }

    /// Queues a framed message of an operation on the peer's transport (pipe or connection).
    fn queue(&mut self, m: Vec<u8>) {
        if self.pipe_wanted {
            self.pipe_out.push_back(m);
        } else {
            self.outbox.push_back(m);
        }
    }

    /// Whether the transport to this peer is complete (connection up, its kind decided, pipe
    /// if wanted).
    fn ready(&self) -> bool {
        self.up && self.host_known && (!self.pipe_wanted || self.pipe.is_some())
    }
}

/// The message a receive waits for straight out of a pipe: the parser holds its header, and
/// whoever claimed it reads the payload where it wants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Claim {
    kind: Kind,
    tag: u32,
    wire: u32,
    len: usize,
    /// The operation that claimed it (`None`: a blocking point-to-point receive).
    op: Option<u64>,
}

impl Claim {
    /// What the parser holds at: (kind, tag, step, length).
    fn key(&self) -> (Kind, u32, u32, usize) {
        (self.kind, self.tag, self.wire, self.len)
    }
}

/// A message of an operation written into a pipe straight from the operation's buffer (no
/// message buffer): its header, then `range` of `buf`, from byte `off` of the two on.
struct PipeSend {
    peer: usize,
    hdr: [u8; crate::frame::HEADER_LEN],
    buf: Buf,
    range: std::ops::Range<usize>,
    off: usize,
}

struct Pending {
    conn: TcpHandle,
    parser: Parser,
    msgs: VecDeque<Msg>,
}

/// An operation's working buffer: its own (pooled), or the caller's memory lent for the
/// length of a blocking call (see `lent`).
enum OpBuf {
    Owned(Vec<u8>),
    /// The caller's buffer. Valid while the operation is in the table: the blocking call that
    /// lent it removes the operation before it returns, on errors and unwinding too.
    Lent {
        ptr: std::ptr::NonNull<u8>,
        len: usize,
    },
}

// SAFETY: a lent buffer is only touched by the thread running the blocking call that lent it
// (through the endpoint, which that call borrows mutably), while the call runs.
unsafe impl Send for OpBuf {}

impl std::ops::Deref for OpBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            OpBuf::Owned(v) => v,
            // SAFETY: see `OpBuf::Lent`: the memory outlives the operation.
            OpBuf::Lent { ptr, len } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl std::ops::DerefMut for OpBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            OpBuf::Owned(v) => v,
            // SAFETY: as in `deref`; the lender gave it up mutably for the call.
            OpBuf::Lent { ptr, len } => unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), *len) },
        }
    }
}

impl OpBuf {
    /// The pooled vector, if the buffer is the operation's own.
    fn owned_mut(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            OpBuf::Owned(v) => Some(v),
            OpBuf::Lent { .. } => None,
        }
    }

    /// The received message `payload` becomes the whole buffer: an own buffer is swapped for
    /// it, a lent one gets it copied in. Returns the vector left over (for the pool).
    fn take_over(&mut self, payload: Vec<u8>) -> Vec<u8> {
        match self {
            OpBuf::Owned(v) => std::mem::replace(v, payload),
            OpBuf::Lent { .. } => {
                self.copy_from_slice(&payload);
                payload
            }
        }
    }

    /// The own vector, for the pool (`None` for a lent buffer).
    fn into_vec(self) -> Option<Vec<u8>> {
        match self {
            OpBuf::Owned(v) => Some(v),
            OpBuf::Lent { .. } => None,
        }
    }
}

struct Op {
    name: &'static str,
    kind: Kind,
    tag: u32,
    dtype: DType,
    rop: ReduceOp,
    sched: Schedule,
    input: OpBuf,
    work: OpBuf,
    step: usize,
    posted: bool,
    /// Actions of the current step already applied (receives are applied in the listed
    /// order as their messages arrive, so a segment is reduced or copied while the next
    /// ones are still on their way).
    applied: usize,
    deadline: Option<Instant>,
    outcome: Option<Result<(), CollectiveError>>,
    /// The current step's messages being written straight into pipes, in posting order.
    pipe_sends: VecDeque<PipeSend>,
    /// Bytes of an element split by the ring's end while reducing straight out of a pipe.
    carry: ([u8; 16], usize),
    /// Nobody will collect it (see [`Endpoint::detach`]): removed once it ends.
    detached: bool,
}

/// The peers whose message for a step's receive (of operation `kind`/`tag`) has not
/// arrived yet, in the step's order (a peer may repeat).
fn missing<'a>(peers: &'a [Peer], kind: Kind, tag: u32, actions: &'a [Action]) -> impl Iterator<Item = usize> + 'a {
    actions.iter().filter_map(move |a| match a {
        Action::Recv { peer, wire, .. } if !peers[*peer].has(kind, tag, *wire) => Some(*peer),
        _ => None,
    })
}

/// A started operation whose result has elements of type `T`. Finish it with
/// [`Endpoint::test`] (or a communicator's `wait`).
#[derive(Debug)]
#[must_use = "an operation's result is only collected through its request"]
pub struct Request<T> {
    id: u64,
    _t: PhantomData<fn() -> T>,
}

impl<T> Request<T> {
    /// The request's number (unique within its endpoint).
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// One rank of a communicator.
pub struct Endpoint {
    rank: usize,
    size: usize,
    /// Every rank's listening address, as far as known (bootstrap learns them from rank 0).
    addrs: Vec<Option<SocketAddr>>,
    /// Whether `addrs` is complete (always in deterministic addressing).
    table_known: bool,
    table_sent: bool,
    cfg: Config,
    listener: Option<TcpListener>,
    peers: Vec<Peer>,
    pending: Vec<Pending>,
    started: bool,
    setup_deadline: Option<Instant>,
    setup_error: Option<(usize, Vec<usize>)>,
    ops: BTreeMap<u64, Op>,
    next_id: u64,
    next_seq: u32,
    now: Instant,
    counters: Counters,
    /// Message and working buffers done with, for the next ones.
    pool: BufPool,
    /// The peers whose pipe an operation could not finish writing to in this round of
    /// `advance_ops` (later operations wait their turn; see `write_pipe_sends`).
    pipe_busy: Vec<bool>,
    /// Bytes operations moved straight through pipes (part of a message counts as progress).
    streamed: u64,
}

/// Most buffers an endpoint keeps for reuse ([`BufPool`]): a few messages per peer in flight
/// plus the working buffers of an operation.
const POOL_BUFS: usize = 32;

/// Most bytes of buffers an endpoint keeps for reuse: room for a 64 MiB send/recv or
/// all-reduce (the message, the payload, the working buffers) without page faults.
const POOL_BYTES: usize = 320 << 20;

impl Endpoint {
    /// Rank `rank` of a world whose rank `i` listens at `addrs[i]` (deterministic addressing:
    /// every rank knows every address). The port of `addrs[rank]` overrides `cfg.port`.
    pub fn new(rank: usize, addrs: Vec<SocketAddr>, mut cfg: Config) -> Result<Endpoint, CollectiveError> {
        if rank >= addrs.len() {
            return Err(CollectiveError::BadArgument(format!("rank {rank} of a world of {}", addrs.len())));
        }
        cfg.port = addrs[rank].port();
        let size = addrs.len();
        Ok(Endpoint::with_table(rank, size, addrs.into_iter().map(Some).collect(), true, true, cfg))
    }

    /// Rank `rank` of `size` that knows only rank 0's address `root` (bootstrap through rank
    /// 0, as from [`crate::Launch`]): every rank connects to rank 0 first and names its own
    /// listening address (its stack's IP and `cfg.port`; rank 0 listens at `root`); once all
    /// have arrived, rank 0 sends everyone the table of addresses and the mesh completes.
    pub fn bootstrap(rank: usize, size: usize, root: SocketAddr, mut cfg: Config) -> Result<Endpoint, CollectiveError> {
        if rank >= size {
            return Err(CollectiveError::BadArgument(format!("rank {rank} of a world of {size}")));
        }
        if rank == 0 {
            cfg.port = root.port();
        }
        let mut addrs = vec![None; size];
        addrs[0] = Some(root);
        Ok(Endpoint::with_table(rank, size, addrs, rank == 0 || size == 1, size == 1, cfg))
    }

    fn with_table(
        rank: usize,
        size: usize,
        addrs: Vec<Option<SocketAddr>>,
        known: bool,
        sent: bool,
        cfg: Config,
    ) -> Endpoint {
        let peers: Vec<Peer> = (0..size)
            .map(|j| Peer {
                conn: None,
                inbox_bytes: 0,
                paused: false,
                up: j == rank,
                retry_at: None,
                parser: Parser::default(),
                inbox: VecDeque::new(),
                outbox: VecDeque::new(),
                out_off: 0,
                lost: None,
                pipe_wanted: cfg.shm.is_some() && j != rank && cfg.host.is_none(),
                pipe: None,
                pipe_parser: Parser::default(),
                pipe_out: VecDeque::new(),
                pipe_off: 0,
                bell: None,
                claim: None,
                held: None,
                streaming: false,
                queued_direct: 0,
                host_known: cfg.host.is_none() || j == rank,
            })
            .collect();
        let counters =
            Counters { pipe_peers: peers.iter().filter(|p| p.pipe_wanted).count() as u64, ..Counters::default() };
        Endpoint {
            rank,
            size,
            addrs,
            table_known: known,
            table_sent: sent,
            cfg,
            listener: None,
            peers,
            pending: Vec::new(),
            started: false,
            setup_deadline: None,
            setup_error: None,
            ops: BTreeMap::new(),
            next_id: 0,
            next_seq: 0,
            now: Instant::ZERO,
            counters,
            pool: BufPool::new(POOL_BUFS, POOL_BYTES),
            pipe_busy: vec![false; size],
            streamed: 0,
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Rank `rank`'s listening address, if known.
    pub fn peer_addr(&self, rank: usize) -> Option<SocketAddr> {
        self.addrs.get(rank).copied().flatten()
    }

    /// Operations started and not yet collected.
    pub fn in_flight(&self) -> usize {
        self.ops.len()
    }

    /// One round of progress at time `now` (call it after `stack.poll(now)`): accepts and
    /// identifies connections, reads messages, advances every operation, hands queued
    /// messages to the stack and expires timeouts. Returns whether anything happened.
    /// Only a failure of the stack itself is an error here; operations report theirs
    /// through their requests.
    pub fn progress<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<bool, CollectiveError> {
        self.now = now;
        if !self.started {
            self.start(stack)?;
        }
        let before = (self.counters.msgs_received, self.counters.msgs_sent, self.counters.ops_completed, self.streamed);
        self.setup_progress(stack, now)?;
        self.read_all(stack);
        // Operations first: a receive waiting for a pipe's next message claims it before the
        // pipe is read, and the message goes straight into the operation's buffer.
        self.advance_ops(now);
        self.read_pipes();
        self.flush(stack);
        self.flush_pipes();
        let after = (self.counters.msgs_received, self.counters.msgs_sent, self.counters.ops_completed, self.streamed);
        Ok(before != after)
    }
}
