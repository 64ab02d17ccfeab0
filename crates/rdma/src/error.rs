//! Errors of the RDMA API.

/// What can go wrong when using an [`RdmaNode`](crate::RdmaNode).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RdmaError {
    /// The configuration is unusable.
    #[error("bad RDMA configuration: {0}")]
    BadConfig(String),
    /// The command queue is full: poll and post again.
    #[error("the command queue is full")]
    QueueFull,
    /// Send completions nobody has taken fill the completion queue (with the writes that
    /// will post one): take some from `completions()` and post again.
    #[error("the send completion queue is full: take completions before posting more writes")]
    CompletionsFull,
    /// No more regions can be registered.
    #[error("the region table is full")]
    TooManyRegions,
    /// No such region (never registered or deregistered).
    #[error("no region with key {0:#x}")]
    NoSuchRegion(u32),
    /// The write is empty or larger than the protocol carries.
    #[error("bad write length {0}")]
    BadLength(u64),
    /// The transport does not match the peer (a MAC for a UDP node, or the reverse).
    #[error("peer {0} is not reachable over this node's transport")]
    WrongTransport(crate::Peer),
    /// The stack failed.
    #[error(transparent)]
    Net(#[from] net::NetError),
}

net::from_operation_errors!(RdmaError; with_link);
