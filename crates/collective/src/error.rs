//! Errors of the communicator.

use std::time::Duration;

/// What can go wrong in a communicator or one of its operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CollectiveError {
    /// The network stack refused a call (a link failure, a full session table, ...).
    #[error(transparent)]
    Net(#[from] net::NetError),
    /// An operation could not finish within its timeout: `waiting_for` are the ranks whose
    /// messages of step `step` never arrived.
    #[error("{op} timed out after {timeout:?} in step {step}, waiting for ranks {waiting_for:?}")]
    Timeout {
        /// The operation ("all-reduce", "broadcast", ...).
        op: &'static str,
        /// The step of the operation's schedule it was in (0-based).
        step: usize,
        /// Ranks that did not arrive.
        waiting_for: Vec<usize>,
        /// The timeout that expired.
        timeout: Duration,
    },
    /// An operation timed out waiting for a message from `rank` while that rank's queue of
    /// received messages no operation had taken was full ([`crate::Config::max_unmatched`]):
    /// the message may be behind them, unread.
    #[error(
        "{op} timed out in step {step}: {queued} bytes of messages from rank {rank} match no posted operation \
         (limit {limit}); post the matching receives or raise Config::max_unmatched"
    )]
    UnmatchedLimit {
        /// The operation.
        op: &'static str,
        /// The step it was in.
        step: usize,
        /// The rank whose messages filled the queue.
        rank: usize,
        /// Bytes queued from it.
        queued: usize,
        /// The limit.
        limit: usize,
    },
    /// A peer's connection ended (reset, closed, retransmissions exhausted, or a protocol
    /// violation) while an operation still needed a message from it.
    #[error("{op} failed in step {step}: rank {rank} is lost ({reason})")]
    PeerLost {
        /// The operation.
        op: &'static str,
        /// The step it was in.
        step: usize,
        /// The rank whose connection ended.
        rank: usize,
        /// Why the connection ended.
        reason: String,
    },
    /// The full mesh of connections was not complete within the set-up timeout.
    #[error("connection set-up of rank {rank} timed out, no connection with ranks {waiting_for:?}")]
    SetupTimeout {
        /// The rank that gave up.
        rank: usize,
        /// Ranks it has no connection with.
        waiting_for: Vec<usize>,
    },
    /// A message from a peer broke the framing (bad magic, oversized, wrong length).
    #[error("protocol violation by rank {rank}: {reason}")]
    Protocol {
        /// The rank that sent it.
        rank: usize,
        /// What was wrong.
        reason: String,
    },
    /// The caller passed something unusable (a root out of range, lengths that differ).
    #[error("invalid argument: {0}")]
    BadArgument(String),
    /// The request is not (or no longer) known: it completed and was collected already.
    #[error("unknown or already collected request")]
    UnknownRequest,
    /// A rank on a link could not start: a bad link spec or address, a missing value, or an
    /// interface that cannot be opened (the sentence says which and what to do).
    #[error("{0}")]
    Join(String),
    /// Rank `rank` found no rank 0 listening at the rendezvous address within the set-up
    /// timeout.
    #[error(
        "rank {rank}: the root {root} did not answer within {timeout:?}: is rank 0 running and listening at \
         that address, on the same network as this rank?"
    )]
    RootUnreachable {
        /// The rank that gave up.
        rank: usize,
        /// The rendezvous address it tried.
        root: std::net::SocketAddr,
        /// The set-up timeout that expired.
        timeout: Duration,
    },
    /// The launch environment does not describe a rank (missing or malformed variables).
    #[error("launch environment: {0}")]
    Env(String),
}

net::from_operation_errors!(CollectiveError; with_link);
