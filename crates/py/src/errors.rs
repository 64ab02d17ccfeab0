//! Errors of the stack as the standard Python exceptions a socket raises: `OSError` subclasses
//! with `errno` set (ConnectionRefusedError, ConnectionResetError, TimeoutError,
//! BlockingIOError, BrokenPipeError, ...), and `ValueError` for unusable arguments.

use link::LinkError;
use net::tcp::TcpError;
use net::{NetError, SendError};
use pyo3::exceptions::{
    PyBlockingIOError, PyBrokenPipeError, PyConnectionAbortedError, PyConnectionRefusedError, PyConnectionResetError,
    PyOSError, PyRuntimeError, PyTimeoutError, PyValueError,
};
use pyo3::PyErr;
use testbed::TestbedError;

/// `OSError(errno, message)`; Python picks the subclass the errno maps to.
pub fn os(errno: i32, msg: impl Into<String>) -> PyErr {
    PyOSError::new_err((errno, msg.into()))
}

/// `ValueError(message)` for arguments that cannot be used.
pub fn val<E: std::fmt::Display>(e: E) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// `RuntimeError(message)` for misuse that is not an OS-style failure (re-entrant calls).
pub fn rt<E: std::fmt::Display>(e: E) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A socket that was closed: `OSError(EBADF)`.
pub fn closed(what: &str) -> PyErr {
    os(libc::EBADF, format!("{what} is closed"))
}

/// Nothing to read (or no room to write) right now: `BlockingIOError(EAGAIN)`.
pub fn would_block(what: &str) -> PyErr {
    PyBlockingIOError::new_err((libc::EAGAIN, what.to_string()))
}

/// A blocking call whose timeout passed: `TimeoutError(ETIMEDOUT, "timed out")`, as `socket`.
pub fn timed_out() -> PyErr {
    PyTimeoutError::new_err((libc::ETIMEDOUT, "timed out"))
}

/// An operation a host of this kind does not have: `OSError(EOPNOTSUPP)`.
pub fn unsupported(what: &str) -> PyErr {
    os(libc::EOPNOTSUPP, what.to_string())
}

/// How a connection ended, as the exception `socket` raises for it.
pub fn tcp(e: &TcpError) -> PyErr {
    let msg = e.to_string();
    match e {
        TcpError::Refused => PyConnectionRefusedError::new_err((libc::ECONNREFUSED, msg)),
        TcpError::Reset => PyConnectionResetError::new_err((libc::ECONNRESET, msg)),
        TcpError::TimedOut => PyTimeoutError::new_err((libc::ETIMEDOUT, msg)),
        TcpError::Aborted => PyConnectionAbortedError::new_err((libc::ECONNABORTED, msg)),
        // An ending added to the stack later and not mapped here yet: a plain OSError.
        _ => os(libc::EIO, msg),
    }
}

/// A stack error (any operation's, through [`NetError`]) as the matching Python exception.
pub fn net(e: impl Into<NetError>) -> PyErr {
    let e: NetError = e.into();
    let msg = e.to_string();
    match e {
        NetError::BadAddress(_) | NetError::BadConfig(_) => PyValueError::new_err(msg),
        NetError::PortInUse(_) | NetError::EtherTypeInUse(_) => os(libc::EADDRINUSE, msg),
        NetError::NoFreePort => os(libc::EADDRNOTAVAIL, msg),
        NetError::BadHandle => os(libc::EBADF, msg),
        NetError::TooLarge { .. } => os(libc::EMSGSIZE, msg),
        NetError::NoRoute(_) => os(libc::EHOSTUNREACH, msg),
        NetError::TableFull => os(libc::ENOBUFS, msg),
        NetError::NotConnected => os(libc::ENOTCONN, msg),
        NetError::Tcp(t) => tcp(&t),
        NetError::Link(l) => link(l),
        // A failure added to the stack later and not mapped here yet: a plain OSError.
        _ => os(libc::EIO, msg),
    }
}

/// Writing where the connection no longer takes data: `BrokenPipeError(EPIPE)`, else as [`net`].
pub fn send(e: SendError) -> PyErr {
    match e {
        SendError::NotConnected => PyBrokenPipeError::new_err((libc::EPIPE, "the connection no longer takes data")),
        e => net(e),
    }
}

/// A link error: the kernel's errno when there is one.
pub fn link(e: LinkError) -> PyErr {
    let msg = e.to_string();
    match e {
        LinkError::Os { source, .. } => os(source.raw_os_error().unwrap_or(libc::EIO), msg),
        LinkError::Config(_) => PyValueError::new_err(msg),
        LinkError::Closed => PyBrokenPipeError::new_err((libc::EPIPE, msg)),
        LinkError::Pcap(_) => os(libc::EIO, msg),
        _ => os(libc::EIO, msg),
    }
}

/// A testbed error: set-up failures are `OSError`, the rest as [`net`] and [`link`].
pub fn testbed(e: TestbedError) -> PyErr {
    match e {
        TestbedError::Setup(s) => os(libc::EIO, format!("testbed set-up: {s}")),
        TestbedError::Net(n) => net(n),
        TestbedError::Link(l) => link(l),
    }
}

/// An accelerator error: unreadable files are `OSError` with the kernel's errno, bad
/// contents `ValueError`.
pub fn accel(e: accel::AccelError) -> PyErr {
    let msg = e.to_string();
    match e {
        accel::AccelError::Io { source, .. } => os(source.raw_os_error().unwrap_or(libc::EIO), msg),
        _ => PyValueError::new_err(msg),
    }
}
