//! Errors of the stack's API.

/// What can go wrong when using a [`Stack`](crate::Stack).
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// An address string could not be parsed.
    #[error("'{0}' is not a valid IPv4 host address (expected a.b.c.d or a.b.c.d/len)")]
    BadAddress(String),
    /// The configuration is unusable.
    #[error("bad configuration: {0}")]
    BadConfig(String),
    /// The port is already bound.
    #[error("port {0} is already in use")]
    PortInUse(u16),
    /// No free ephemeral port is left.
    #[error("no ephemeral port is free")]
    NoFreePort,
    /// A socket handle that is not (or no longer) open.
    #[error("invalid or closed socket handle")]
    BadHandle,
    /// The payload does not fit in one frame.
    #[error("payload of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// Requested size.
        len: usize,
        /// Largest size that fits.
        max: usize,
    },
    /// The destination cannot be reached (no route, or it is not a unicast host).
    #[error("no route to {0}")]
    NoRoute(std::net::Ipv4Addr),
    /// The EtherType is already bound or reserved by the stack.
    #[error("EtherType 0x{0:04x} is reserved or already bound")]
    EtherTypeInUse(u16),
    /// A table (sessions) is full.
    #[error("the session table is full")]
    TableFull,
    /// The connection is not in a state that allows this.
    #[error("the connection is not open for this operation")]
    NotConnected,
    /// The connection ended abnormally.
    #[error(transparent)]
    Tcp(#[from] crate::tcp::TcpError),
    /// The link failed.
    #[error(transparent)]
    Link(#[from] link::LinkError),
}
