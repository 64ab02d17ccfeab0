//! Errors of the stack's API: one type per operation (or family of operations with the same
//! failures), each listing only what that operation can meet, and [`NetError`], the umbrella
//! every one of them converts into (so `?` works in code that returns `NetError`).
//!
//! | Operation | Error |
//! |---|---|
//! | [`Config::parse_host`](crate::Config::parse_host), [`Config::validate`](crate::Config::validate), [`Stack::new`](crate::Stack::new) | [`ConfigError`] |
//! | [`Stack::poll`](crate::Stack::poll), [`Stack::flush`](crate::Stack::flush), [`Stack::inject`](crate::Stack::inject) | [`link::LinkError`] |
//! | [`Stack::udp_bind`](crate::Stack::udp_bind) | [`BindError`] |
//! | [`Stack::udp_send_to`](crate::Stack::udp_send_to), [`Stack::udp_send_with`](crate::Stack::udp_send_with) | [`UdpSendError`] |
//! | [`Stack::raw_bind`](crate::Stack::raw_bind) | [`RawBindError`] |
//! | [`Stack::raw_send`](crate::Stack::raw_send), [`Stack::raw_send_with`](crate::Stack::raw_send_with) | [`RawSendError`] |
//! | [`Stack::ping`](crate::Stack::ping) | [`PingError`] |
//! | [`Stack::tcp_listen`](crate::Stack::tcp_listen) | [`ListenError`] |
//! | [`Stack::tcp_connect`](crate::Stack::tcp_connect), [`Stack::tcp_connect_from`](crate::Stack::tcp_connect_from) | [`ConnectError`] |
//! | [`Stack::tcp_send`](crate::Stack::tcp_send), [`Stack::tcp_send_transfer`](crate::Stack::tcp_send_transfer) | [`SendError`] |
//! | [`Stack::tcp_recv`](crate::Stack::tcp_recv), [`Stack::tcp_at_eof`](crate::Stack::tcp_at_eof) | [`RecvError`] |
//! | [`Stack::tcp_recv_consume`](crate::Stack::tcp_recv_consume), [`Stack::tcp_shutdown`](crate::Stack::tcp_shutdown), [`Stack::tcp_close`](crate::Stack::tcp_close), [`Stack::tcp_abort`](crate::Stack::tcp_abort), [`Stack::tcp_unlisten`](crate::Stack::tcp_unlisten) | [`ControlError`] |
//! | [`Stack::tcp_set_rx_bypass`](crate::Stack::tcp_set_rx_bypass) | [`BypassError`] |
//! | [`Stack::tcp_watch`](crate::Stack::tcp_watch) | [`TooManyWatchers`] |
//! | every other call taking a socket handle (queries, options, `udp_recv_from`, `raw_recv`, `udp_close`, ...) | [`BadHandle`] |

/// The error of [`Stack::poll`](crate::Stack::poll), [`Stack::flush`](crate::Stack::flush) and
/// [`Stack::inject`](crate::Stack::inject), and the `Link` variant of the others.
pub use link::LinkError;
use std::net::Ipv4Addr;
use wire::MacAddr;

use crate::tcp::TcpError;

/// What can go wrong when using a [`Stack`](crate::Stack): every operation's own error
/// converts into this one, variant for variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    NoRoute(std::net::IpAddr),
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
    Tcp(#[from] TcpError),
    /// The host's IPv6 addresses were still in duplicate address detection at the end of
    /// the wait ([`crate::Stack::settle_ipv6`]).
    #[error("the host's IPv6 addresses did not leave duplicate address detection within {0:?}")]
    DadTimeout(std::time::Duration),
    /// The link failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// A socket handle that is not (or no longer) open: the only failure of the calls that just
/// look at or set up one socket (`udp_port`, `udp_recv_from`, `raw_recv`, `tcp_state`,
/// `tcp_stats`, `tcp_set_cc`, `udp_close`, `raw_close`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the socket handle is invalid or already closed")]
pub struct BadHandle;

/// Why a configuration cannot be used ([`Config::parse_host`](crate::Config::parse_host),
/// [`Config::validate`](crate::Config::validate), [`Stack::new`](crate::Stack::new)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The host address string is not `a.b.c.d` or `a.b.c.d/len` of a unicast address.
    #[error("'{0}' is not a valid IPv4 host address (expected a.b.c.d or a.b.c.d/len)")]
    BadAddress(String),
    /// The IPv6 address string is not `addr` or `addr/len` of a unicast address.
    #[error("'{0}' is not a valid IPv6 host address (expected e.g. fd77::2 or fd77::2/64)")]
    BadIpv6Address(String),
    /// IPv6 is on but the MTU is below its minimum of 1280 bytes (RFC 8200).
    #[error("IPv6 needs an MTU of at least 1280 bytes, not {0}")]
    Ipv6MtuTooSmall(usize),
    /// The MTU is outside what the stack supports (68 to 9216 bytes).
    #[error("the MTU of {0} bytes is outside 68..=9216")]
    MtuOutOfRange(usize),
    /// A queue or cache size is zero.
    #[error("queue and cache sizes must be at least 1")]
    ZeroSize,
    /// The MAC address is not a unicast address.
    #[error("the MAC address {0} is not a unicast address")]
    MacNotUnicast(MacAddr),
    /// The MTU needs larger frames than the link carries.
    #[error("an MTU of {mtu} bytes needs frames of {frame} bytes but the link carries at most {link_max}")]
    MtuAboveLink {
        /// The configured MTU.
        mtu: usize,
        /// The frame size it needs (Ethernet header included).
        frame: usize,
        /// The largest frame the link carries.
        link_max: usize,
    },
}

/// Why [`Stack::udp_bind`](crate::Stack::udp_bind) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// Another socket of the stack is bound to this port.
    #[error("UDP port {0} is already in use")]
    PortInUse(u16),
    /// Port 0 asked for an ephemeral port and every one is taken.
    #[error("no ephemeral UDP port is free")]
    NoFreePort,
    /// As many sockets as `Config::udp_max_sockets` allows are bound.
    #[error("{0} UDP sockets are bound, the most this stack allows (Config::udp_max_sockets)")]
    TooManySockets(usize),
}

/// Why [`Stack::tcp_listen`](crate::Stack::tcp_listen) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenError {
    /// Something already listens on this port.
    #[error("TCP port {0} is already listened on")]
    PortInUse(u16),
    /// Port 0 cannot be listened on.
    #[error("TCP port 0 cannot be listened on")]
    PortZero,
}

/// Why [`Stack::raw_bind`](crate::Stack::raw_bind) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RawBindError {
    /// The EtherType belongs to the stack (IPv4, ARP, VLAN tags) or is below 0x0600 (an
    /// 802.3 length, not a type).
    #[error("EtherType 0x{0:04x} is reserved by the stack")]
    Reserved(u16),
    /// Another raw socket of the stack is bound to this EtherType.
    #[error("EtherType 0x{0:04x} is already bound")]
    InUse(u16),
}

/// Why [`Stack::udp_send_to`](crate::Stack::udp_send_to) or
/// [`Stack::udp_send_with`](crate::Stack::udp_send_with) failed (a full link is not a
/// failure: the call returns `Ok(false)`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UdpSendError {
    /// The socket handle is invalid or already closed.
    #[error("the UDP socket is invalid or already closed")]
    BadHandle,
    /// The destination is not a reachable unicast or broadcast address (for IPv6: the
    /// stack has no IPv6 address, no usable source address or no route towards it).
    #[error("no route to {0}")]
    NoRoute(std::net::IpAddr),
    /// The payload is larger than one datagram (or, with don't-fragment set, than the path MTU).
    #[error("a payload of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// Requested payload size, bytes.
        len: usize,
        /// Largest payload that can be sent, bytes.
        max: usize,
    },
    /// The link failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why [`Stack::raw_send`](crate::Stack::raw_send) or
/// [`Stack::raw_send_with`](crate::Stack::raw_send_with) failed (a full link is not a
/// failure: the call returns `Ok(false)`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RawSendError {
    /// The socket handle is invalid or already closed.
    #[error("the raw socket is invalid or already closed")]
    BadHandle,
    /// The payload does not fit in one frame of the stack's MTU.
    #[error("a payload of {len} bytes exceeds the MTU of {max}")]
    TooLarge {
        /// Requested payload size, bytes.
        len: usize,
        /// Largest payload that fits, bytes.
        max: usize,
    },
    /// The link failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why [`Stack::ping`](crate::Stack::ping) failed (a full link is not a failure: the call
/// returns `Ok(false)`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PingError {
    /// The destination is not a reachable host.
    #[error("no route to {0}")]
    NoRoute(std::net::IpAddr),
    /// The request is larger than the largest IP packet.
    #[error("an echo payload of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// Requested payload size, bytes.
        len: usize,
        /// Largest payload, bytes.
        max: usize,
    },
    /// The link failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why [`Stack::tcp_connect`](crate::Stack::tcp_connect) or
/// [`Stack::tcp_connect_from`](crate::Stack::tcp_connect_from) failed at once (a refused or
/// timed-out connection is reported later by
/// [`Stack::tcp_connect_result`](crate::Stack::tcp_connect_result)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Every ephemeral port already has a connection to this destination (`tcp_connect`).
    #[error("no ephemeral port is free towards this destination")]
    NoFreePort,
    /// The local port already has a connection to this destination (`tcp_connect_from`).
    #[error("local port {0} already has a connection to this destination")]
    PortInUse(u16),
    /// The destination is not a reachable unicast host (or its port is 0).
    #[error("no route to {0}")]
    NoRoute(std::net::IpAddr),
    /// The stack's session table is full.
    #[error("the TCP session table is full")]
    TableFull,
    /// The link failed while sending the SYN.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why [`Stack::tcp_send`](crate::Stack::tcp_send) or
/// [`Stack::tcp_send_transfer`](crate::Stack::tcp_send_transfer) failed (a full send
/// buffer is not a failure: `tcp_send` returns `Ok(0)`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The connection handle is invalid or already closed.
    #[error("the TCP connection handle is invalid or already closed")]
    BadHandle,
    /// Our direction is closed (shut down, or the connection is over).
    #[error("the connection no longer takes data")]
    NotConnected,
    /// The connection ended abnormally (refused, reset, timed out, aborted).
    #[error(transparent)]
    Connection(#[from] TcpError),
    /// The link failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why [`Stack::tcp_recv`](crate::Stack::tcp_recv) or
/// [`Stack::tcp_at_eof`](crate::Stack::tcp_at_eof) failed (nothing to read is not a
/// failure: [`Recv::WouldBlock`](crate::Recv::WouldBlock)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecvError {
    /// The connection handle is invalid or already closed.
    #[error("the TCP connection handle is invalid or already closed")]
    BadHandle,
    /// The connection ended abnormally and everything received before was read.
    #[error(transparent)]
    Connection(#[from] TcpError),
    /// The link failed while sending the window update that reading allowed (`tcp_recv`).
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why a call that takes a connection (or listener) handle and may send at once failed:
/// [`Stack::tcp_recv_consume`](crate::Stack::tcp_recv_consume) (window update),
/// [`Stack::tcp_shutdown`](crate::Stack::tcp_shutdown) and
/// [`Stack::tcp_close`](crate::Stack::tcp_close) (FIN), [`Stack::tcp_abort`](crate::Stack::tcp_abort)
/// and [`Stack::tcp_unlisten`](crate::Stack::tcp_unlisten) (RST).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The handle is invalid or already closed.
    #[error("the TCP handle is invalid or already closed")]
    BadHandle,
    /// The link failed.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// Why [`Stack::tcp_set_rx_bypass`](crate::Stack::tcp_set_rx_bypass) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BypassError {
    /// The connection handle is invalid or already closed.
    #[error("the TCP connection handle is invalid or already closed")]
    BadHandle,
    /// No RX-bypass handler is installed ([`Stack::tcp_set_rx_handler`](crate::Stack::tcp_set_rx_handler)).
    #[error("RX bypass needs a handler (tcp_set_rx_handler)")]
    NoHandler,
    /// The link failed while sending the window update for the data handed over.
    #[error(transparent)]
    Link(#[from] LinkError),
}

/// [`Stack::tcp_watch`](crate::Stack::tcp_watch) failed: the stack already has
/// [`MAX_WATCHERS`](crate::tcp::MAX_WATCHERS) watchers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("too many activity watchers on one stack")]
pub struct TooManyWatchers;

/// A failure of the transmit path inside the stack (routing, size, link); each API error
/// takes the variants its operation can meet.
#[derive(Debug)]
pub(crate) enum TxError {
    NoRoute(Ipv4Addr),
    TooLarge { len: usize, max: usize },
    Link(LinkError),
}

impl From<LinkError> for TxError {
    fn from(e: LinkError) -> Self {
        TxError::Link(e)
    }
}

impl From<TxError> for UdpSendError {
    fn from(e: TxError) -> Self {
        match e {
            TxError::NoRoute(a) => UdpSendError::NoRoute(a.into()),
            TxError::TooLarge { len, max } => UdpSendError::TooLarge { len, max },
            TxError::Link(e) => UdpSendError::Link(e),
        }
    }
}

impl From<TxError> for PingError {
    fn from(e: TxError) -> Self {
        match e {
            TxError::NoRoute(a) => PingError::NoRoute(a.into()),
            TxError::TooLarge { len, max } => PingError::TooLarge { len, max },
            TxError::Link(e) => PingError::Link(e),
        }
    }
}

/// `From<BadHandle>` for the errors whose `BadHandle` variant says the same.
macro_rules! from_bad_handle {
    ($($error:ident),*) => {
        $(impl From<BadHandle> for $error {
            fn from(_: BadHandle) -> Self {
                $error::BadHandle
            }
        })*
    };
}

from_bad_handle!(UdpSendError, RawSendError, SendError, RecvError, ControlError, BypassError);

impl From<ControlError> for RecvError {
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::BadHandle => RecvError::BadHandle,
            ControlError::Link(e) => RecvError::Link(e),
        }
    }
}

impl From<ControlError> for BypassError {
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::BadHandle => BypassError::BadHandle,
            ControlError::Link(e) => BypassError::Link(e),
        }
    }
}

impl From<BadHandle> for NetError {
    fn from(_: BadHandle) -> Self {
        NetError::BadHandle
    }
}

impl From<ConfigError> for NetError {
    fn from(e: ConfigError) -> Self {
        match e {
            ConfigError::BadAddress(s) => NetError::BadAddress(s),
            other => NetError::BadConfig(other.to_string()),
        }
    }
}

impl From<BindError> for NetError {
    fn from(e: BindError) -> Self {
        match e {
            BindError::PortInUse(p) => NetError::PortInUse(p),
            BindError::NoFreePort => NetError::NoFreePort,
            BindError::TooManySockets(_) => NetError::TableFull,
        }
    }
}

impl From<ListenError> for NetError {
    fn from(e: ListenError) -> Self {
        match e {
            ListenError::PortInUse(p) => NetError::PortInUse(p),
            ListenError::PortZero => NetError::PortInUse(0),
        }
    }
}

impl From<RawBindError> for NetError {
    fn from(e: RawBindError) -> Self {
        match e {
            RawBindError::Reserved(t) | RawBindError::InUse(t) => NetError::EtherTypeInUse(t),
        }
    }
}

impl From<UdpSendError> for NetError {
    fn from(e: UdpSendError) -> Self {
        match e {
            UdpSendError::BadHandle => NetError::BadHandle,
            UdpSendError::NoRoute(a) => NetError::NoRoute(a),
            UdpSendError::TooLarge { len, max } => NetError::TooLarge { len, max },
            UdpSendError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<RawSendError> for NetError {
    fn from(e: RawSendError) -> Self {
        match e {
            RawSendError::BadHandle => NetError::BadHandle,
            RawSendError::TooLarge { len, max } => NetError::TooLarge { len, max },
            RawSendError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<PingError> for NetError {
    fn from(e: PingError) -> Self {
        match e {
            PingError::NoRoute(a) => NetError::NoRoute(a),
            PingError::TooLarge { len, max } => NetError::TooLarge { len, max },
            PingError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<ConnectError> for NetError {
    fn from(e: ConnectError) -> Self {
        match e {
            ConnectError::NoFreePort => NetError::NoFreePort,
            ConnectError::PortInUse(p) => NetError::PortInUse(p),
            ConnectError::NoRoute(a) => NetError::NoRoute(a),
            ConnectError::TableFull => NetError::TableFull,
            ConnectError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<SendError> for NetError {
    fn from(e: SendError) -> Self {
        match e {
            SendError::BadHandle => NetError::BadHandle,
            SendError::NotConnected => NetError::NotConnected,
            SendError::Connection(e) => NetError::Tcp(e),
            SendError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<RecvError> for NetError {
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::BadHandle => NetError::BadHandle,
            RecvError::Connection(e) => NetError::Tcp(e),
            RecvError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<ControlError> for NetError {
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::BadHandle => NetError::BadHandle,
            ControlError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<BypassError> for NetError {
    fn from(e: BypassError) -> Self {
        match e {
            BypassError::BadHandle => NetError::BadHandle,
            BypassError::NoHandler => NetError::BadConfig(BypassError::NoHandler.to_string()),
            BypassError::Link(e) => NetError::Link(e),
        }
    }
}

impl From<TooManyWatchers> for NetError {
    fn from(e: TooManyWatchers) -> Self {
        NetError::BadConfig(e.to_string())
    }
}

/// Implement `From` of every per-operation error of `net` for an error type `$t` that already
/// has `From<NetError>`, so that `?` on any stack call works in functions returning `$t` (each
/// error goes through [`NetError`]). With `; with_link`, `From<link::LinkError>` too (the error
/// of [`Stack::poll`](crate::Stack::poll)), for types that have no variant of their own for it.
///
/// ```
/// #[derive(Debug, thiserror::Error)]
/// enum AppError {
///     #[error(transparent)]
///     Net(#[from] net::NetError),
/// }
/// net::from_operation_errors!(AppError);
///
/// fn bind(stack: &mut net::Stack<link::mem::MemLink>) -> Result<net::UdpHandle, AppError> {
///     Ok(stack.udp_bind(7)?)
/// }
/// # let (l, _peer) = link::mem::pair(link::LinkConfig::default());
/// # let mut s = net::Stack::new(net::Config::host("10.0.0.1/24"), l).unwrap();
/// # assert!(bind(&mut s).is_ok());
/// # assert!(matches!(bind(&mut s), Err(AppError::Net(net::NetError::PortInUse(7)))));
/// ```
#[macro_export]
macro_rules! from_operation_errors {
    ($t:ty; with_link) => {
        $crate::from_operation_errors!($t);
        impl ::core::convert::From<$crate::error::LinkError> for $t {
            fn from(e: $crate::error::LinkError) -> Self {
                <$t>::from($crate::NetError::from(e))
            }
        }
    };
    ($t:ty) => {
        $crate::from_operation_errors!(@each $t; BadHandle ConfigError BindError ListenError RawBindError
            UdpSendError RawSendError PingError ConnectError SendError RecvError ControlError BypassError
            TooManyWatchers);
    };
    (@each $t:ty; $($e:ident)*) => {
        $(
            impl ::core::convert::From<$crate::error::$e> for $t {
                fn from(e: $crate::error::$e) -> Self {
                    <$t>::from($crate::NetError::from(e))
                }
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_error_keeps_its_meaning_in_net_error() {
        assert!(matches!(NetError::from(BindError::PortInUse(7)), NetError::PortInUse(7)));
        assert!(matches!(NetError::from(RawBindError::Reserved(0x0800)), NetError::EtherTypeInUse(0x0800)));
        assert!(matches!(NetError::from(ConnectError::TableFull), NetError::TableFull));
        assert!(matches!(NetError::from(SendError::NotConnected), NetError::NotConnected));
        assert!(matches!(NetError::from(RecvError::Connection(TcpError::Reset)), NetError::Tcp(TcpError::Reset)));
        assert!(matches!(NetError::from(ControlError::Link(LinkError::Closed)), NetError::Link(LinkError::Closed)));
        assert!(matches!(NetError::from(BypassError::NoHandler), NetError::BadConfig(_)));
        assert!(matches!(NetError::from(ConfigError::BadAddress("x".into())), NetError::BadAddress(_)));
        assert!(matches!(NetError::from(ConfigError::ZeroSize), NetError::BadConfig(_)));
        assert!(matches!(NetError::from(BadHandle), NetError::BadHandle));
    }
}
