//! One rank's end of a communicator: its connections, message queues and operations in
//! progress. It never owns or polls the stack: [`Endpoint::progress`] is called with the
//! rank's stack after the stack's own `poll`, so the same code runs with all ranks as
//! virtual-time hosts in one thread (a driver polls every stack and endpoint in turn) and
//! with one rank per thread or process (see [`crate::Communicator`]).

use crate::dtype::{from_bytes, from_bytes_into, reduce_bytes, to_bytes_in, DType, Element, ReduceOp};
use crate::frame::{
    decode_addrs, encode, encode_addrs, encode_elems_in, encode_in, Kind, Msg, Parser, PumpEnd, PumpError,
};
use crate::pool::BufPool;
use crate::schedule::{self, Action, Buf, Init, Mode, Schedule};
use crate::CollectiveError;
use link::{Instant, Link};
use net::{Stack, TcpHandle, TcpListener};
use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;
use std::net::SocketAddrV4;
use std::time::Duration;

/// Messages from this size on (header included) go to the stack as transfers, without a copy
/// into its send buffer; smaller ones are cheaper to copy.
const TRANSFER_MIN: usize = 64 * 1024;

/// How all-reduce is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AllreduceAlgo {
    /// Chosen from the size and the rank count (see [`Config::small_allreduce`]).
    Auto,
    /// EasyNet's: all-to-one reduce at rank 0, then one-to-all broadcast.
    ReduceBcast,
    /// Ring reduce-scatter, then ring all-gather (bandwidth-optimal for large buffers).
    Ring,
    /// Recursive doubling (latency-optimal for small buffers).
    RecursiveDoubling,
}

/// How broadcast and reduce are carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TreeAlgo {
    /// The root talks to every rank directly (EasyNet's one-to-all and all-to-one).
    Flat,
    /// A binary tree rooted at the root.
    Tree,
    /// A chain of ranks from the root, pipelined in segments of [`Config::chain_segment`]
    /// bytes (bandwidth-optimal for large buffers).
    Chain,
}

/// Settings of an endpoint: a plain struct with defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// TCP port every rank listens on.
    pub port: u16,
    /// How long an operation may take before it fails with [`CollectiveError::Timeout`].
    pub timeout: Duration,
    /// How long the full mesh may take to connect.
    pub connect_timeout: Duration,
    /// Pause before a refused connection is tried again (the peer may not listen yet).
    pub connect_retry: Duration,
    /// Largest message accepted from a peer.
    pub max_message: usize,
    /// All-reduce algorithm.
    pub allreduce: AllreduceAlgo,
    /// With [`AllreduceAlgo::Auto`]: buffers up to this many bytes use recursive doubling,
    /// larger ones the ring (or reduce + broadcast when there are fewer elements than ranks).
    pub small_allreduce: usize,
    /// Broadcast algorithm.
    pub bcast: TreeAlgo,
    /// Reduce algorithm.
    pub reduce: TreeAlgo,
    /// Segment size of the pipelined chain algorithms.
    pub chain_segment: usize,
    /// Bytes of received messages from one peer that no posted operation has taken yet (the
    /// unmatched-message queue). At this bound the endpoint stops reading that peer's
    /// connection, so TCP's window holds the sender back; an operation that then cannot find
    /// its message fails at its timeout with [`CollectiveError::UnmatchedLimit`].
    pub max_unmatched: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 7470,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(30),
            connect_retry: Duration::from_millis(20),
            max_message: 1 << 30,
            allreduce: AllreduceAlgo::Auto,
            small_allreduce: 16 * 1024,
            bcast: TreeAlgo::Flat,
            reduce: TreeAlgo::Flat,
            chain_segment: 64 * 1024,
            max_unmatched: 64 << 20,
        }
    }
}

/// Counters of an endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages handed to the stack.
    pub msgs_sent: u64,
    /// Payload bytes handed to the stack.
    pub bytes_sent: u64,
    /// Complete messages received.
    pub msgs_received: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Operations that completed.
    pub ops_completed: u64,
    /// Operations that failed (timeout, lost peer, protocol error).
    pub ops_failed: u64,
    /// Connections refused or failed during set-up and tried again.
    pub connect_retries: u64,
    /// Connections dropped for breaking the protocol (bad frame, bad hello).
    pub protocol_errors: u64,
    /// Times reading a peer was paused because its unmatched messages reached
    /// [`Config::max_unmatched`].
    pub unmatched_pauses: u64,
    /// Most bytes of unmatched messages ever queued from one peer.
    pub unmatched_peak_bytes: u64,
}

impl Counters {
    /// Every counter with its name, in declaration order (for tables and `linerate stats`).
    pub fn named(&self) -> [(&'static str, u64); 10] {
        [
            ("msgs_sent", self.msgs_sent),
            ("bytes_sent", self.bytes_sent),
            ("msgs_received", self.msgs_received),
            ("bytes_received", self.bytes_received),
            ("ops_completed", self.ops_completed),
            ("ops_failed", self.ops_failed),
            ("connect_retries", self.connect_retries),
            ("protocol_errors", self.protocol_errors),
            ("unmatched_pauses", self.unmatched_pauses),
            ("unmatched_peak_bytes", self.unmatched_peak_bytes),
        ]
    }
}

/// State of the full mesh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeshState {
    /// Not every connection is up yet.
    Connecting,
    /// Every peer is connected.
    Ready,
}

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
}

impl Peer {
    /// Takes the first queued message that satisfies `f`.
    fn take(&mut self, f: impl Fn(&Msg) -> bool) -> Option<Msg> {
        let m = self.inbox.remove(self.inbox.iter().position(f)?)?;
        self.inbox_bytes -= m.payload.len();
        Some(m)
    }
}

struct Pending {
    conn: TcpHandle,
    parser: Parser,
    msgs: VecDeque<Msg>,
}

struct Op {
    name: &'static str,
    kind: Kind,
    tag: u32,
    dtype: DType,
    rop: ReduceOp,
    sched: Schedule,
    input: Vec<u8>,
    work: Vec<u8>,
    step: usize,
    posted: bool,
    deadline: Option<Instant>,
    outcome: Option<Result<(), CollectiveError>>,
}

/// The peers whose message for a step's receive (of operation `kind`/`tag`) has not
/// arrived yet, in the step's order (a peer may repeat).
fn missing<'a>(peers: &'a [Peer], kind: Kind, tag: u32, actions: &'a [Action]) -> impl Iterator<Item = usize> + 'a {
    actions.iter().filter_map(move |a| match a {
        Action::Recv { peer, wire, .. }
            if !peers[*peer].inbox.iter().any(|m| m.kind == kind && m.tag == tag && m.step == *wire) =>
        {
            Some(*peer)
        }
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
    addrs: Vec<Option<SocketAddrV4>>,
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
    pub fn new(rank: usize, addrs: Vec<SocketAddrV4>, mut cfg: Config) -> Result<Endpoint, CollectiveError> {
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
    pub fn bootstrap(
        rank: usize,
        size: usize,
        root: SocketAddrV4,
        mut cfg: Config,
    ) -> Result<Endpoint, CollectiveError> {
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
        addrs: Vec<Option<SocketAddrV4>>,
        known: bool,
        sent: bool,
        cfg: Config,
    ) -> Endpoint {
        let peers = (0..size)
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
            })
            .collect();
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
            counters: Counters::default(),
            pool: BufPool::new(POOL_BUFS, POOL_BYTES),
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
    pub fn peer_addr(&self, rank: usize) -> Option<SocketAddrV4> {
        self.addrs.get(rank).copied().flatten()
    }

    /// Operations started and not yet collected.
    pub fn in_flight(&self) -> usize {
        self.ops.len()
    }

    /// Starts the full mesh (paper VI-A): listens on our port (`listen_ports`) and issues
    /// the connects to every lower rank at once, pipelined (`open_connections`). Each
    /// connection starts with a hello naming the connecting rank. Progress it with
    /// [`Endpoint::progress`] and watch [`Endpoint::mesh_state`]. Operations may be started
    /// before the mesh is ready; their messages wait for their connections.
    pub fn start<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<(), CollectiveError> {
        if self.started {
            return Ok(());
        }
        if self.size() > 1 {
            self.listener = Some(stack.tcp_listen(self.cfg.port, self.size().max(16))?);
        }
        if self.addrs[self.rank].is_none() {
            self.addrs[self.rank] = Some(SocketAddrV4::new(stack.ip(), self.cfg.port));
        }
        self.started = true;
        for j in 0..self.rank {
            if self.addrs[j].is_some() {
                self.connect(stack, j)?;
            }
        }
        Ok(())
    }

    fn connect<L: Link>(&mut self, stack: &mut Stack<L>, j: usize) -> Result<(), CollectiveError> {
        let (Some(to), Some(me)) = (self.addrs[j], self.addrs[self.rank]) else { return Ok(()) };
        let h = stack.tcp_connect(to)?;
        let p = &mut self.peers[j];
        p.conn = Some(h);
        p.retry_at = None;
        p.parser = Parser::default();
        p.out_off = 0;
        p.outbox.push_front(encode(Kind::Hello, self.rank as u32, self.size as u32, &encode_addrs(&[me])));
        Ok(())
    }

    /// Whether every connection is up; an error if set-up timed out.
    pub fn mesh_state(&self) -> Result<MeshState, CollectiveError> {
        if let Some((rank, missing)) = &self.setup_error {
            return Err(CollectiveError::SetupTimeout { rank: *rank, waiting_for: missing.clone() });
        }
        Ok(if self.peers.iter().all(|p| p.up) { MeshState::Ready } else { MeshState::Connecting })
    }

    /// Leaves abruptly, as a crashed rank would: every connection is reset and every
    /// operation in progress fails. Peers waiting for us see [`CollectiveError::PeerLost`].
    pub fn abort<L: Link>(&mut self, stack: &mut Stack<L>) {
        for (j, p) in self.peers.iter_mut().enumerate() {
            if let Some(h) = p.conn.take() {
                let _ = stack.tcp_abort(h);
            }
            p.lost = Some("this rank aborted".into());
            p.up = j == self.rank;
        }
        for op in self.ops.values_mut() {
            if op.outcome.is_none() {
                op.outcome = Some(Err(CollectiveError::PeerLost {
                    op: op.name,
                    step: op.step,
                    rank: self.rank,
                    reason: "this rank aborted".into(),
                }));
            }
        }
    }

    /// Ranks to which sent data is not yet acknowledged (queued here or in the stack).
    pub fn unacknowledged<L: Link>(&self, stack: &Stack<L>) -> Vec<usize> {
        let mut v = Vec::new();
        for (j, p) in self.peers.iter().enumerate() {
            if p.lost.is_some() || j == self.rank {
                continue;
            }
            let in_stack = p.conn.map_or(0, |h| stack.tcp_send_pending(h).unwrap_or(0));
            if in_stack > 0 || !p.outbox.is_empty() {
                v.push(j);
            }
        }
        v
    }

    /// Closes every connection gracefully (FIN after the queued data). Call it once
    /// [`Endpoint::unacknowledged`] is empty, as [`crate::Communicator::finalize`] does.
    pub fn close<L: Link>(&mut self, stack: &mut Stack<L>) {
        for p in &mut self.peers {
            if let Some(h) = p.conn.take() {
                let _ = stack.tcp_close(h);
            }
            p.lost.get_or_insert_with(|| "closed by this rank".into());
        }
        if let Some(l) = self.listener.take() {
            let _ = stack.tcp_unlisten(l);
        }
    }

    /// A description of every peer's state, one line each, for diagnosing an operation that
    /// does not finish: the link's and the stack's non-zero counters, then per peer the
    /// connection (TCP state, windows, retransmissions, bytes queued
    /// and ready), the message being reassembled, the unmatched messages and the operations
    /// in progress with their steps.
    pub fn diagnose<L: Link>(&self, stack: &Stack<L>) -> String {
        let mut out = format!("link {:?}\n", stack.link().stats());
        let nonzero: Vec<_> = stack.counters().iter().filter(|(_, v)| *v > 0).collect();
        out += &format!("stack counters {nonzero:?}\n");
        for (id, op) in &self.ops {
            out += &format!("op #{id} {} seq {} step {}/{}\n", op.name, op.tag, op.step, op.sched.steps.len());
        }
        for (j, p) in self.peers.iter().enumerate().filter(|&(j, _)| j != self.rank) {
            out += &format!("rank {j}: up {} lost {:?} outbox {} ", p.up, p.lost, p.outbox.len());
            if let Some(h) = p.conn {
                if let Ok(st) = stack.tcp_stats(h) {
                    out += &format!(
                        "tcp {:?} cwnd {} snd_wnd {} rcv_wnd {} rto {:?} retrans {} timeouts {} snd_una {} snd_nxt {} rcv_nxt {} bufs {}/{} ",
                        st.state, st.cwnd, st.snd_wnd, st.rcv_wnd, st.rto, st.retransmits, st.timeouts, st.snd_una, st.snd_nxt, st.rcv_nxt, st.tx_buffer, st.rx_buffer
                    );
                }
                let pending = stack.tcp_send_pending(h).unwrap_or(0);
                let ready = stack.tcp_recv_ready(h).unwrap_or(0);
                out += &format!("send_pending {pending} recv_ready {ready} ");
            }
            let queued: Vec<_> = p.inbox.iter().take(8).map(|m| (m.kind, m.tag, m.step, m.payload.len())).collect();
            out += &format!("partial {:?} unmatched {} {queued:?}\n", p.parser.partial(), p.inbox.len());
        }
        out
    }

    /// Ranks that are not connected yet.
    pub fn unconnected(&self) -> Vec<usize> {
        (0..self.size()).filter(|&j| !self.peers[j].up).collect()
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
        let before = (self.counters.msgs_received, self.counters.msgs_sent, self.counters.ops_completed);
        self.setup_progress(stack, now)?;
        self.read_all(stack);
        self.advance_ops(now);
        self.flush(stack);
        let after = (self.counters.msgs_received, self.counters.msgs_sent, self.counters.ops_completed);
        Ok(before != after)
    }

    fn setup_progress<L: Link>(&mut self, stack: &mut Stack<L>, now: Instant) -> Result<(), CollectiveError> {
        self.bootstrap_progress(stack)?;
        if self.peers.iter().all(|p| p.up) {
            return Ok(());
        }
        let deadline = *self.setup_deadline.get_or_insert(now + self.cfg.connect_timeout);
        // Connections we initiate.
        for j in 0..self.rank {
            let p = &mut self.peers[j];
            if p.up {
                continue;
            }
            match p.conn {
                Some(h) => match stack.tcp_connect_result(h) {
                    Ok(Some(Ok(()))) => p.up = true,
                    Ok(None) => {}
                    Ok(Some(Err(_))) | Err(_) => {
                        let _ = stack.tcp_close(h);
                        p.conn = None;
                        p.outbox.retain(|m| m.get(3) != Some(&0));
                        p.retry_at = Some(now + self.cfg.connect_retry);
                        self.counters.connect_retries += 1;
                    }
                },
                None => {
                    if p.retry_at.is_some_and(|t| now >= t) {
                        self.connect(stack, j)?;
                    }
                }
            }
        }
        // Connections from higher ranks: accept, then wait for the hello.
        if let Some(l) = self.listener {
            while let Some(h) = stack.tcp_accept(l) {
                self.pending.push(Pending { conn: h, parser: Parser::default(), msgs: VecDeque::new() });
            }
        }
        let mut i = 0;
        while i < self.pending.len() {
            let pd = &mut self.pending[i];
            let r = pd.parser.pump(stack, pd.conn, self.cfg.max_message, &mut pd.msgs, &mut self.pool);
            let hello = pd.msgs.front().map(|m| (m.kind, m.tag as usize, m.step as usize, decode_addrs(&m.payload)));
            let verdict = match (r, hello) {
                (_, Some((Kind::Hello, j, size, Some(a)))) => {
                    if size == self.size() && j > self.rank && j < self.size() && !self.peers[j].up && a.len() == 1 {
                        if self.addrs[j].is_none() {
                            self.addrs[j] = Some(a[0]);
                        }
                        Some(Ok(j))
                    } else {
                        Some(Err(()))
                    }
                }
                (_, Some(_)) | (Err(_), _) | (Ok(PumpEnd::Eof), None) => Some(Err(())),
                (Ok(PumpEnd::WouldBlock), None) => None,
            };
            match verdict {
                None => i += 1,
                Some(Ok(j)) => {
                    let mut pd = self.pending.swap_remove(i);
                    pd.msgs.pop_front();
                    self.counters.msgs_received += 1;
                    let p = &mut self.peers[j];
                    p.conn = Some(pd.conn);
                    p.parser = pd.parser;
                    p.up = true;
                    self.counters.msgs_received += pd.msgs.len() as u64;
                    p.inbox_bytes += pd.msgs.iter().map(|m| m.payload.len()).sum::<usize>();
                    p.inbox.extend(pd.msgs);
                }
                Some(Err(())) => {
                    let pd = self.pending.swap_remove(i);
                    let _ = stack.tcp_abort(pd.conn);
                    self.counters.protocol_errors += 1;
                }
            }
        }
        if self.peers.iter().all(|p| p.up) {
            return Ok(());
        }
        if now >= deadline && self.setup_error.is_none() {
            self.setup_error = Some((self.rank, self.unconnected()));
        }
        Ok(())
    }

    /// Bootstrap through rank 0: rank 0 sends the table once everyone has arrived; the
    /// others connect to the ranks below them once the table is here.
    fn bootstrap_progress<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<(), CollectiveError> {
        if self.rank == 0 && !self.table_sent && self.peers.iter().all(|p| p.up) {
            let all: Option<Vec<SocketAddrV4>> = self.addrs.iter().copied().collect();
            if let Some(all) = all {
                let table = encode(Kind::Table, 0, self.size as u32, &encode_addrs(&all));
                for p in self.peers.iter_mut().skip(1) {
                    p.outbox.push_back(table.clone());
                }
                self.table_sent = true;
            }
        }
        if self.table_known || !self.peers[0].up {
            return Ok(());
        }
        let Some(m) = self.peers[0].take(|m| m.kind == Kind::Table) else { return Ok(()) };
        match decode_addrs(&m.payload) {
            Some(t) if t.len() == self.size && t[self.rank] == self.addrs[self.rank].unwrap_or(t[self.rank]) => {
                for (a, n) in self.addrs.iter_mut().zip(t) {
                    *a = Some(n);
                }
                self.table_known = true;
                for j in 1..self.rank {
                    self.connect(stack, j)?;
                }
            }
            _ => {
                self.peers[0].lost = Some("protocol violation: a bad address table".into());
                self.counters.protocol_errors += 1;
            }
        }
        Ok(())
    }

    fn read_all<L: Link>(&mut self, stack: &mut Stack<L>) {
        for (j, p) in self.peers.iter_mut().enumerate() {
            let (Some(h), true, None) = (p.conn, p.up, &p.lost) else { continue };
            if j == self.rank {
                continue;
            }
            if p.inbox_bytes >= self.cfg.max_unmatched {
                // Back-pressure: leave the bytes in TCP until an operation takes messages.
                if !p.paused {
                    p.paused = true;
                    self.counters.unmatched_pauses += 1;
                }
                continue;
            }
            p.paused = false;
            let before = p.inbox.len();
            let r = p.parser.pump(stack, h, self.cfg.max_message, &mut p.inbox, &mut self.pool);
            for m in p.inbox.range(before..) {
                self.counters.bytes_received += m.payload.len() as u64;
                p.inbox_bytes += m.payload.len();
            }
            self.counters.unmatched_peak_bytes = self.counters.unmatched_peak_bytes.max(p.inbox_bytes as u64);
            self.counters.msgs_received += (p.inbox.len() - before) as u64;
            match r {
                Ok(PumpEnd::WouldBlock) => {}
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
    fn flush<L: Link>(&mut self, stack: &mut Stack<L>) {
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
                let len = m.len();
                p.out_off = 0;
                if let Some(m) = p.outbox.pop_front() {
                    self.pool.give(m);
                }
                self.counters.msgs_sent += 1;
                self.counters.bytes_sent += len.saturating_sub(crate::frame::HEADER_LEN) as u64;
            }
        }
    }

    fn advance_ops(&mut self, now: Instant) {
        // Take the table out so each operation can borrow the endpoint while it advances.
        let mut ops = std::mem::take(&mut self.ops);
        for op in ops.values_mut().filter(|o| o.outcome.is_none()) {
            if let Some(res) = self.advance(op, now) {
                if res.is_ok() {
                    self.counters.ops_completed += 1;
                } else {
                    self.counters.ops_failed += 1;
                }
                op.outcome = Some(res);
            }
        }
        self.ops = ops;
    }

    /// Runs `op` as far as it can go; `Some` once it finished or failed.
    fn advance(&mut self, op: &mut Op, now: Instant) -> Option<Result<(), CollectiveError>> {
        let deadline = *op.deadline.get_or_insert(now + self.cfg.timeout);
        loop {
            let Some(step) = op.sched.steps.get(op.step) else { return Some(Ok(())) };
            if !op.posted {
                for a in &step.actions {
                    if let Action::Send { peer, buf, range, wire } = a {
                        let src = if *buf == Buf::Input { &op.input } else { &op.work };
                        let bytes = src.get(range.clone()).unwrap_or(&[]);
                        let buf = self.pool.take(crate::frame::HEADER_LEN + bytes.len());
                        self.peers[*peer].outbox.push_back(encode_in(buf, op.kind, op.tag, *wire, bytes));
                    }
                }
                op.posted = true;
            }
            // Are all messages of this step here? (No allocation on this path: a waiting
            // rank runs it on every poll round.)
            let waiting = || missing(&self.peers, op.kind, op.tag, &step.actions);
            if waiting().next().is_some() {
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
                    let mut waiting: Vec<usize> = waiting().collect();
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
            // Apply receives and local moves in the listed order.
            for a in &step.actions {
                match a {
                    Action::Send { .. } => {}
                    Action::Local { from, to, mode } => {
                        let (Some(src), true) = (op.input.get(from.clone()), to.end <= op.work.len()) else {
                            return Some(Err(CollectiveError::BadArgument("local move out of range".into())));
                        };
                        let dst = &mut op.work[to.clone()];
                        match mode {
                            Mode::Copy => dst.copy_from_slice(src),
                            Mode::Reduce => reduce_bytes(op.dtype, op.rop, dst, src),
                        }
                    }
                    Action::Recv { peer, range, mode, wire } => {
                        let found = self.peers[*peer].take(|m| m.kind == op.kind && m.tag == op.tag && m.step == *wire);
                        let Some(m) = found else {
                            return Some(Err(CollectiveError::Protocol {
                                rank: *peer,
                                reason: "message vanished".into(),
                            }));
                        };
                        // The message is the whole buffer (or the working buffer is still
                        // empty, see `Schedule::first_recv_fills`): take it over instead of
                        // copying.
                        let takes_over = matches!(mode, Mode::Copy)
                            && range.start == 0
                            && (range.end == op.work.len() || op.work.is_empty());
                        if m.payload.len() != range.len() || (range.end > op.work.len() && !takes_over) {
                            return Some(Err(CollectiveError::Protocol {
                                rank: *peer,
                                reason: format!(
                                    "{} step {}: {} bytes where {} were expected (do all ranks pass the same lengths?)",
                                    op.name,
                                    op.step,
                                    m.payload.len(),
                                    range.len()
                                ),
                            }));
                        }
                        let spent = match mode {
                            Mode::Copy if takes_over => std::mem::replace(&mut op.work, m.payload),
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
            }
            op.step += 1;
            op.posted = false;
        }
    }

    fn start_op<T: Element>(
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
        let id = self.next_id;
        self.next_id += 1;
        let op = Op {
            name,
            kind,
            tag,
            dtype: T::DTYPE,
            rop,
            sched,
            input,
            work,
            step: 0,
            posted: false,
            deadline: None,
            outcome: None,
        };
        self.ops.insert(id, op);
        Request { id, _t: PhantomData }
    }

    fn coll<T: Element>(&mut self, name: &'static str, rop: ReduceOp, sched: Schedule, data: &[T]) -> Request<T> {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        let mut input = self.bytes_of(data);
        if rop.is_logical() {
            crate::dtype::truth_in_place(T::DTYPE, &mut input);
        }
        self.start_op(name, Kind::Coll, seq, rop, sched, input)
    }

    /// `data` as little-endian bytes in a pooled buffer.
    fn bytes_of<T: Element>(&mut self, data: &[T]) -> Vec<u8> {
        let buf = self.pool.take(std::mem::size_of_val(data));
        to_bytes_in(buf, data)
    }

    fn check_root(&self, root: usize) -> Result<(), CollectiveError> {
        if root >= self.size() {
            return Err(CollectiveError::BadArgument(format!("root {root} in a world of {}", self.size())));
        }
        Ok(())
    }

    fn check_peer(&self, peer: usize) -> Result<(), CollectiveError> {
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
        self.pool.give(op.work);
        self.pool.give(op.input);
        r
    }

    /// The step of its schedule that request `req` is in (0-based; the step count once it
    /// finished), or `None` if it is not known (collected already).
    pub fn step_of<T>(&self, req: &Request<T>) -> Option<usize> {
        self.ops.get(&req.id).map(|op| op.step)
    }

    /// Point-to-point send of `data` to `peer` with `tag`. The data is copied, so the request
    /// completes once the message is queued for the stack; order per (peer, tag) is kept.
    pub fn isend<T: Element>(&mut self, peer: usize, tag: u32, data: &[T]) -> Result<Request<T>, CollectiveError> {
        self.check_peer(peer)?;
        // Framed straight from `data` (one copy); the operation has nothing left to do.
        let buf = self.pool.take(crate::frame::HEADER_LEN + std::mem::size_of_val(data));
        self.peers[peer].outbox.push_back(encode_elems_in(buf, Kind::P2p, tag, 0, data));
        let s = Schedule { steps: Vec::new(), init: Init::Zeros(0), result: 0..0 };
        Ok(self.start_op("send", Kind::P2p, tag, ReduceOp::Sum, s, Vec::new()))
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
        let (r, n, len) = (self.rank, self.size(), data.len() * T::DTYPE.size());
        let s = match algo {
            TreeAlgo::Flat => schedule::bcast_flat(r, n, root, len),
            TreeAlgo::Tree => schedule::bcast_tree(r, n, root, len),
            TreeAlgo::Chain => schedule::bcast_chain(r, n, root, len, self.cfg.chain_segment),
        };
        Ok(self.coll("broadcast", ReduceOp::Sum, s, data))
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
        let s = match algo {
            TreeAlgo::Flat => schedule::reduce_flat(r, n, root, len),
            TreeAlgo::Tree => schedule::reduce_tree(r, n, root, len),
            TreeAlgo::Chain => schedule::reduce_chain(r, n, root, len, T::DTYPE.size(), self.cfg.chain_segment),
        };
        Ok(self.coll("reduce", op, s, data))
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
        let (r, n, es) = (self.rank, self.size(), T::DTYPE.size());
        let algo = if algo == AllreduceAlgo::Auto { self.auto_allreduce(data.len(), es) } else { algo };
        let s = match algo {
            AllreduceAlgo::ReduceBcast | AllreduceAlgo::Auto => schedule::allreduce_reduce_bcast(r, n, data.len() * es),
            AllreduceAlgo::Ring => schedule::allreduce_ring(r, n, data.len(), es),
            AllreduceAlgo::RecursiveDoubling => schedule::allreduce_doubling(r, n, data.len() * es),
        };
        self.coll("all-reduce", op, s, data)
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
        let s = schedule::allgather(self.rank, self.size(), data.len() * T::DTYPE.size());
        self.coll("all-gather", ReduceOp::Sum, s, data)
    }

    /// Reduce-scatter: `data` is `size` chunks of equal length; rank `i` gets chunk `i`
    /// reduced over all ranks.
    pub fn ireduce_scatter<T: Element>(&mut self, data: &[T], op: ReduceOp) -> Result<Request<T>, CollectiveError> {
        let n = self.size();
        if !data.len().is_multiple_of(n) {
            return Err(CollectiveError::BadArgument(format!("{} elements are not {n} equal chunks", data.len())));
        }
        let s = schedule::reduce_scatter(self.rank, n, data.len() / n, T::DTYPE.size());
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
