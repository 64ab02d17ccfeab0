//! A communicator's settings and counters.

use std::time::Duration;

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
    /// Flat below [`Config::pipelined_from`] bytes, the pipelined chain from there on.
    Auto,
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
    /// How long an operation may take before it fails with [`crate::CollectiveError::Timeout`].
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
    /// Segment size of the pipelined algorithms (chain broadcast and reduce, the ring's
    /// chunks).
    pub chain_segment: usize,
    /// With [`TreeAlgo::Auto`]: broadcasts and reduces of at least this many bytes run as
    /// the pipelined chain, smaller ones flat.
    pub pipelined_from: usize,
    /// Bytes of received messages from one peer that no posted operation has taken yet (the
    /// unmatched-message queue). At this bound the endpoint stops reading that peer's
    /// connection, so TCP's window holds the sender back; an operation that then cannot find
    /// its message fails at its timeout with [`crate::CollectiveError::UnmatchedLimit`].
    pub max_unmatched: usize,
    /// The job's name for shared-memory pipes ([`crate::pipe`]) to every peer: the
    /// operations' messages go through them, the TCP connections carry only the set-up.
    /// `None` (the default): everything over TCP. [`crate::Transport`] picks it per job.
    pub shm: Option<String>,
    /// Bytes of each direction's ring of a pipe (a power of two).
    pub pipe_ring: usize,
    /// This rank's host name, sent in the set-up's hello: with [`Config::shm`] set, pipes go
    /// only to the peers that report the same name (the others stay on TCP). `None` (the
    /// default): pipes to every peer when `shm` is set.
    pub host: Option<String>,
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
            bcast: TreeAlgo::Auto,
            reduce: TreeAlgo::Flat,
            chain_segment: 64 * 1024,
            pipelined_from: 256 * 1024,
            max_unmatched: 64 << 20,
            shm: None,
            pipe_ring: crate::pipe::DEFAULT_PIPE_RING,
            host: None,
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
    /// Messages written straight into a pipe from the caller's memory (point-to-point) or an
    /// operation's buffer (collectives), without a message buffer.
    pub direct_sends: u64,
    /// Messages read straight from a pipe into the caller's memory (point-to-point) or
    /// copied or reduced into an operation's buffer (collectives), without a message buffer.
    pub direct_recvs: u64,
    /// Bytes copied beyond what the transport needs: the caller's data copied into an
    /// operation's or message's buffer to be sent (non-blocking operations, `isend`, any
    /// message over TCP), and payloads read into a message buffer on arrival (over TCP
    /// always; over a pipe when no receive was waiting for the message yet). 0 where
    /// messages go straight between the caller's buffers and the pipes (blocking
    /// send/receive, `allreduce_in_place`, `bcast_in_place`, `isend_borrowed`, a receive
    /// posted before its message arrived).
    pub staged_bytes: u64,
    /// Peers whose messages go through a shared-memory pipe (the others: TCP).
    pub pipe_peers: u64,
}

impl Counters {
    /// Every counter with its name, in declaration order (for tables and `linerate stats`).
    pub fn named(&self) -> [(&'static str, u64); 14] {
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
            ("direct_sends", self.direct_sends),
            ("direct_recvs", self.direct_recvs),
            ("staged_bytes", self.staged_bytes),
            ("pipe_peers", self.pipe_peers),
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
