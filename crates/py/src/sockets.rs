//! The sockets of a host (`UdpSocket`, `RawSocket`, `TcpListener`, `TcpConn`), shaped like
//! Python's: blocking by default on a live host (`settimeout`/`setblocking`), non-blocking on
//! a testbed, a `fileno()` for selectors and asyncio on a live host, bytes-like data,
//! `OSError` subclasses with errno, context managers, idempotent `close()`, and a `repr` with
//! addresses and state.

use std::net::SocketAddr;
use std::time::Duration;

use net::{RawHandle, Recv, TcpHandle, TcpListener, UdpHandle};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::address;
use crate::buf::{bytes_like, WritableBuffer};
use crate::errors::{self, closed, timed_out, val, would_block};
use crate::host::HostRef;
use crate::ready::{Interest, Readiness};

/// A datagram and its sender as Python sees them: `(data, (ip, port))`.
type Datagram<'py> = (Bound<'py, PyBytes>, PyObject);

/// Largest UDP datagram and raw frame handed to Python.
const MAX_DATAGRAM: usize = 65536;

/// A host and whether the socket on it was closed: what every socket class shares.
pub(crate) struct SocketCore {
    host: HostRef,
    closed: bool,
    what: &'static str,
    /// How long blocking calls wait: `None` for ever, zero not at all (non-blocking).
    timeout: Option<Duration>,
}

/// The largest timeout taken, in seconds (a day).
const MAX_TIMEOUT_S: f64 = 86_400.0;

impl SocketCore {
    fn new(host: HostRef, what: &'static str) -> Self {
        let timeout = host.default_timeout();
        SocketCore { host, closed: false, what, timeout }
    }

    /// As `socket.settimeout`: `None` blocks, 0 is non-blocking, else seconds to wait.
    fn set_timeout(&mut self, seconds: Option<f64>) -> PyResult<()> {
        self.timeout = match seconds {
            None => None,
            Some(t) if (0.0..=MAX_TIMEOUT_S).contains(&t) => Some(Duration::from_secs_f64(t)),
            Some(t) => return Err(val(format!("timeout {t} is outside 0..={MAX_TIMEOUT_S} seconds"))),
        };
        Ok(())
    }

    /// The timeout in seconds, as `socket.gettimeout` (None: blocking).
    fn timeout(&self) -> Option<f64> {
        self.timeout.map(|d| d.as_secs_f64())
    }

    /// Wait (as the timeout says) until `take` yields: `BlockingIOError` (`what`) when
    /// non-blocking, `TimeoutError` when the timeout passes.
    fn wait<T>(
        &self,
        py: Python<'_>,
        what: &str,
        take: impl FnMut(&mut testbed::HostStack, &mut Readiness) -> PyResult<Option<T>>,
    ) -> PyResult<T> {
        if self.closed {
            return Err(closed(self.what));
        }
        match self.host.wait_for(py, self.timeout, take)? {
            Some(v) => Ok(v),
            None if self.timeout == Some(Duration::ZERO) => Err(would_block(what)),
            None => Err(timed_out()),
        }
    }

    /// The readiness descriptor of `interest` (live hosts only).
    fn fileno(&self, py: Python<'_>, interest: Interest) -> PyResult<i32> {
        if self.closed {
            return Ok(-1);
        }
        self.host.fileno(py, interest)
    }

    /// Run `f` on the host's stack; `OSError(EBADF)` once the socket is closed.
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut testbed::HostStack) -> PyResult<T>) -> PyResult<T> {
        if self.closed {
            return Err(closed(self.what));
        }
        self.host.with(py, f)
    }

    /// Close once with `f`; later calls do nothing. A handle the stack already released
    /// (a reset connection) is not an error.
    fn close<E: Into<net::NetError>>(
        &mut self,
        py: Python<'_>,
        interest: Interest,
        f: impl FnOnce(&mut testbed::HostStack) -> Result<(), E>,
    ) -> PyResult<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.host.forget(py, interest);
        match self.host.with(py, |s| Ok(f(s).map_err(Into::into))) {
            Ok(Ok(())) | Ok(Err(net::NetError::BadHandle)) => Ok(()),
            // A live host closed first took its sockets with it.
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOSError>(py) => Ok(()),
            Ok(Err(e)) => Err(errors::net(e)),
            Err(e) => Err(e),
        }
    }

    fn state(&self) -> &'static str {
        if self.closed {
            "closed"
        } else {
            "open"
        }
    }
}

/// A UDP socket of a host.
#[pyclass(name = "UdpSocket", module = "linerate", unsendable)]
pub(crate) struct PyUdpSocket {
    core: SocketCore,
    h: UdpHandle,
}

impl PyUdpSocket {
    /// What this socket's `fileno` waits for.
    fn interest(&self) -> Interest {
        Interest::Udp(self.h)
    }

    pub(crate) fn new(host: HostRef, h: UdpHandle) -> Self {
        PyUdpSocket { core: SocketCore::new(host, "UDP socket"), h }
    }
}

#[pymethods]
impl PyUdpSocket {
    /// The local port.
    #[getter]
    fn port(&self, py: Python<'_>) -> PyResult<u16> {
        self.core.with(py, |s| s.udp_port(self.h).map_err(errors::net))
    }

    /// ICMP errors received about datagrams this socket sent.
    #[getter]
    fn icmp_errors(&self, py: Python<'_>) -> PyResult<u64> {
        self.core.with(py, |s| s.udp_icmp_errors(self.h).map_err(errors::net))
    }

    /// As `socket.sendto`: send a datagram (any bytes-like object) to `(ip, port)`; returns
    /// its size. When the link is full it waits as the timeout says (non-blocking:
    /// BlockingIOError). Too large: `OSError(EMSGSIZE)`.
    fn sendto(&self, py: Python<'_>, data: &Bound<'_, PyAny>, addr: &Bound<'_, PyAny>) -> PyResult<usize> {
        let data = bytes_like(data)?;
        let dst = address::from_py(addr)?;
        self.core.wait(py, "the link is full", |s, _| {
            Ok(s.udp_send_to(self.h, dst, &data).map_err(errors::net)?.then_some(data.len()))
        })
    }

    /// As `socket.recvfrom`: the next datagram (cut to `bufsize`) as `(data, (ip, port))`,
    /// waiting as the timeout says (non-blocking: BlockingIOError).
    #[pyo3(signature = (bufsize = 65536))]
    fn recvfrom<'py>(&self, py: Python<'py>, bufsize: usize) -> PyResult<Datagram<'py>> {
        let mut buf = vec![0u8; bufsize.min(MAX_DATAGRAM)];
        let (n, from) = self
            .core
            .wait(py, "no datagram is waiting", |s, _| s.udp_recv_from(self.h, &mut buf).map_err(errors::net))?;
        Ok((PyBytes::new(py, &buf[..n.min(buf.len())]), address::to_py(py, from)?))
    }

    /// As `socket.recvfrom_into`: the next datagram into `buffer` (a bytearray or writable
    /// memoryview; at most `nbytes`, 0: its size; longer datagrams are cut), as
    /// `(nbytes, (ip, port))`, waiting as the timeout says.
    #[pyo3(signature = (buffer, nbytes = 0))]
    fn recvfrom_into(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>, nbytes: usize) -> PyResult<(usize, PyObject)> {
        let out = WritableBuffer::get(buffer)?;
        if nbytes > out.len() {
            return Err(val(format!("nbytes {nbytes} is larger than the buffer ({})", out.len())));
        }
        let max = if nbytes == 0 { out.len() } else { nbytes };
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let (n, from) = self
            .core
            .wait(py, "no datagram is waiting", |s, _| s.udp_recv_from(self.h, &mut buf).map_err(errors::net))?;
        let n = n.min(max);
        out.fill(&buf[..n])?;
        Ok((n, address::to_py(py, from)?))
    }

    /// The local `(ip, port)`, as `socket.getsockname`.
    fn getsockname(&self, py: Python<'_>) -> PyResult<(String, u16)> {
        self.core.with(py, |s| Ok((s.ip().to_string(), s.udp_port(self.h).map_err(errors::net)?)))
    }

    /// Old name (deprecated): send a datagram to `(ip, port)` without waiting; False if the
    /// link is full. Use `sendto`.
    fn send_to(&self, py: Python<'_>, data: &Bound<'_, PyAny>, addr: &Bound<'_, PyAny>) -> PyResult<bool> {
        let data = bytes_like(data)?;
        let dst = address::from_py(addr)?;
        self.core.with(py, |s| s.udp_send_to(self.h, dst, &data).map_err(errors::net))
    }

    /// Old name (deprecated): the next datagram as `(data, (ip, port))`, or None if none is
    /// waiting, without waiting. Use `recvfrom`.
    fn recv_from<'py>(&self, py: Python<'py>) -> PyResult<Option<Datagram<'py>>> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let got = self.core.with(py, |s| s.udp_recv_from(self.h, &mut buf).map_err(errors::net))?;
        got.map(|(n, from)| Ok((PyBytes::new(py, &buf[..n.min(buf.len())]), address::to_py(py, from)?))).transpose()
    }

    /// Old name (deprecated) of `recvfrom_into` that never waits: BlockingIOError if no
    /// datagram is waiting.
    fn recv_from_into(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<(usize, PyObject)> {
        let out = WritableBuffer::get(buffer)?;
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let got = self.core.with(py, |s| s.udp_recv_from(self.h, &mut buf).map_err(errors::net))?;
        let (n, from) = got.ok_or_else(|| would_block("no datagram is waiting"))?;
        let n = n.min(out.len());
        out.fill(&buf[..n])?;
        Ok((n, address::to_py(py, from)?))
    }

    /// Close the socket (idempotent); later use raises `OSError(EBADF)`.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let h = self.h;
        self.core.close(py, Interest::Udp(h), |s| s.udp_close(h))
    }

    /// `with host.udp_bind() as s:` closes the socket at the end of the block.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Close the socket (see `close`).
    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self, py: Python<'_>) -> String {
        let port = self.port(py).map(|p| p.to_string()).unwrap_or_else(|_| "?".into());
        format!("<linerate.UdpSocket {}:{port} {}>", self.core.host.describe(py), self.core.state())
    }
}

/// A raw Ethernet socket of a host, bound to one EtherType.
#[pyclass(name = "RawSocket", module = "linerate", unsendable)]
pub(crate) struct PyRawSocket {
    core: SocketCore,
    h: RawHandle,
}

impl PyRawSocket {
    pub(crate) fn new(host: HostRef, h: RawHandle) -> Self {
        PyRawSocket { core: SocketCore::new(host, "raw socket"), h }
    }
}

#[pymethods]
impl PyRawSocket {
    /// Send `payload` (any bytes-like object) in one frame to MAC `dst` ("aa:bb:cc:dd:ee:ff");
    /// False if the link is full.
    fn send(&self, py: Python<'_>, dst: &str, payload: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mac: wire::MacAddr = dst.parse().map_err(|_| val(format!("'{dst}' is not a MAC address")))?;
        let payload = bytes_like(payload)?;
        self.core.with(py, |s| s.raw_send(self.h, mac, &payload).map_err(errors::net))
    }

    /// The next frame's payload and sender MAC, or None.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyBytes>, String)>> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let got = self.core.with(py, |s| s.raw_recv(self.h, &mut buf).map_err(errors::net))?;
        Ok(got.map(|(n, from)| (PyBytes::new(py, &buf[..n.min(buf.len())]), from.to_string())))
    }

    /// Close the socket (idempotent); later use raises `OSError(EBADF)`.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let h = self.h;
        self.core.close(py, Interest::Raw(h), |s| s.raw_close(h))
    }

    /// `with host.raw_bind(t) as s:` closes the socket at the end of the block.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Close the socket (see `close`).
    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<linerate.RawSocket {} {}>", self.core.host.describe(py), self.core.state())
    }
}

/// A listening TCP port of a host.
#[pyclass(name = "TcpListener", module = "linerate", unsendable)]
pub(crate) struct PyTcpListener {
    core: SocketCore,
    l: TcpListener,
}

impl PyTcpListener {
    /// What this socket's `fileno` waits for.
    fn interest(&self) -> Interest {
        Interest::Listener(self.l)
    }

    pub(crate) fn new(host: HostRef, l: TcpListener) -> Self {
        PyTcpListener { core: SocketCore::new(host, "listener"), l }
    }
}

#[pymethods]
impl PyTcpListener {
    /// As `socket.accept`: the next established connection and its peer, `(conn, (ip,
    /// port))`, waiting as the timeout says (non-blocking: BlockingIOError). The connection
    /// blocks as new sockets of the host do.
    fn accept(&self, py: Python<'_>) -> PyResult<(PyTcpConn, PyObject)> {
        let (h, peer) = self.core.wait(py, "no connection is waiting", |s, r| match r.accept(s, self.l) {
            Some(h) => Ok(Some((h, s.tcp_peer(h).map_err(errors::net)?))),
            None => Ok(None),
        })?;
        let conn = PyTcpConn::new(self.core.host.clone_ref(py), h, Some(peer));
        Ok((conn, address::to_py(py, peer)?))
    }

    /// The port.
    #[getter]
    fn port(&self) -> u16 {
        self.l.port()
    }

    /// Stop listening (idempotent); accepted connections stay open.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let l = self.l;
        self.core.close(py, Interest::Listener(l), |s| s.tcp_unlisten(l))
    }

    /// `with host.tcp_listen(p) as l:` stops listening at the end of the block.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Stop listening (see `close`).
    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self, py: Python<'_>) -> String {
        let state = if self.core.closed { "closed" } else { "listening" };
        format!("<linerate.TcpListener {}:{} {state}>", self.core.host.describe(py), self.l.port())
    }
}

/// A TCP connection of a host.
#[pyclass(name = "TcpConn", module = "linerate", unsendable)]
pub(crate) struct PyTcpConn {
    core: SocketCore,
    h: TcpHandle,
    /// The remote address.
    peer: Option<SocketAddr>,
}

impl PyTcpConn {
    /// What this socket's `fileno` waits for.
    fn interest(&self) -> Interest {
        Interest::Tcp(self.h)
    }

    pub(crate) fn new(host: HostRef, h: TcpHandle, peer: Option<SocketAddr>) -> Self {
        PyTcpConn { core: SocketCore::new(host, "connection"), h, peer }
    }

    /// Receive up to `max` bytes (none at end of stream), waiting as the timeout says.
    fn recv_wait(&self, py: Python<'_>, max: usize) -> PyResult<Vec<u8>> {
        let mut buf = vec![0u8; max];
        let n = self.core.wait(py, "no data is ready", |s, _| {
            Ok(match s.tcp_recv(self.h, &mut buf).map_err(errors::net)? {
                Recv::Data(n) => Some(n),
                Recv::Eof => Some(0),
                Recv::WouldBlock => None,
            })
        })?;
        buf.truncate(n);
        Ok(buf)
    }
}

#[pymethods]
impl PyTcpConn {
    /// True once established; raises how the connection failed (ConnectionRefusedError,
    /// ConnectionResetError, TimeoutError, ConnectionAbortedError).
    #[getter]
    fn connected(&self, py: Python<'_>) -> PyResult<bool> {
        self.core.with(py, |s| match s.tcp_connect_result(self.h).map_err(errors::net)? {
            None => Ok(false),
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(errors::tcp(&e)),
        })
    }

    /// The connection state, e.g. "Established" ("Closed" once closed here).
    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<String> {
        if self.core.closed {
            return Ok("Closed".into());
        }
        self.core.with(py, |s| Ok(format!("{:?}", s.tcp_state(self.h).map_err(errors::net)?)))
    }

    /// The remote `(ip, port)`.
    #[getter]
    fn peer(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.peer.map(|a| address::to_py(py, a)).transpose()
    }

    /// The connection's session slot (what RX-bypass handlers and activity report).
    #[getter]
    fn slot(&self) -> u32 {
        self.h.slot()
    }

    /// Switch RX bypass on (in-order payload goes to the host's handler, see
    /// `Host.set_rx_handler`; data already buffered goes first) or off.
    fn set_rx_bypass(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.core.with(py, |s| s.tcp_set_rx_bypass(self.h, on).map_err(errors::net))
    }

    /// Queue as much of `data` (any bytes-like object) as fits; returns the number of bytes
    /// taken, at least 1 for non-empty data. When the send buffer is full it waits as the
    /// timeout says (non-blocking: BlockingIOError, EAGAIN; timed out: TimeoutError). After our shutdown:
    /// BrokenPipeError; after a reset: ConnectionResetError.
    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
        let data = bytes_like(data)?;
        if data.is_empty() {
            return Ok(0);
        }
        self.core.wait(py, "the send buffer is full", |s, _| {
            let n = s.tcp_send(self.h, &data).map_err(errors::send)?;
            Ok((n > 0).then_some(n))
        })
    }

    /// As `socket.sendall`: hand over the whole buffer (any bytes-like object); the stack
    /// segments and sends it as the windows allow.
    fn sendall(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.send_all(py, data)
    }

    /// The remote `(ip, port)`, as `socket.getpeername`.
    fn getpeername(&self, py: Python<'_>) -> PyResult<PyObject> {
        self.peer(py)?.ok_or_else(|| errors::os(libc::ENOTCONN, "not connected"))
    }

    /// Old name (deprecated) of `sendall`.
    fn send_all(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = bytes_like(data)?.into_owned();
        self.core.with(py, |s| s.tcp_send_transfer(self.h, data).map_err(errors::send))
    }

    /// Up to `max` received bytes; b"" at end of stream; waits as the timeout says while
    /// nothing is ready (non-blocking: BlockingIOError, EAGAIN; timed out: TimeoutError), as
    /// `socket.recv`. A reset connection raises ConnectionResetError.
    #[pyo3(signature = (max = 65536))]
    fn recv<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Bound<'py, PyBytes>> {
        if max == 0 || max > 1 << 30 {
            return Err(val(format!("max {max} is outside 1..=2**30")));
        }
        let data = self.recv_wait(py, max)?;
        Ok(PyBytes::new(py, &data))
    }

    /// Like `socket.recv_into`: received bytes into `buffer` (bytearray, writable memoryview),
    /// at most `nbytes` (0: the buffer's size); returns the count, 0 at end of stream;
    /// waits as `recv` does.
    #[pyo3(signature = (buffer, nbytes = 0))]
    fn recv_into(&self, py: Python<'_>, buffer: &Bound<'_, PyAny>, nbytes: usize) -> PyResult<usize> {
        let out = WritableBuffer::get(buffer)?;
        if nbytes > out.len() {
            return Err(val(format!("nbytes {nbytes} is larger than the buffer ({})", out.len())));
        }
        let max = if nbytes == 0 { out.len() } else { nbytes };
        if max == 0 {
            return Ok(0);
        }
        let data = self.recv_wait(py, max)?;
        out.fill(&data)?;
        Ok(data.len())
    }

    /// Close our direction (FIN after queued data); receiving continues.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        self.core.with(py, |s| s.tcp_shutdown(self.h).map_err(errors::net))
    }

    /// Close and release the connection (idempotent): queued data and a FIN still go out.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let h = self.h;
        self.core.close(py, Interest::Tcp(h), |s| s.tcp_close(h))
    }

    /// Abort with a reset.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        self.core.with(py, |s| s.tcp_abort(self.h).map_err(errors::net))
    }

    /// `with host.tcp_connect(addr) as c:` closes the connection at the end of the block.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Close the connection (see `close`).
    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self, py: Python<'_>) -> String {
        let state = self.state(py).unwrap_or_else(|_| "?".into());
        let peer = self.peer.map(|p| format!(" -> {p}")).unwrap_or_default();
        format!("<linerate.TcpConn {} slot {}{peer} {state}>", self.core.host.describe(py), self.h.slot())
    }

    /// Per-connection statistics as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let st = self.core.with(py, |s| s.tcp_stats(self.h).map_err(errors::net))?;
        let d = PyDict::new(py);
        d.set_item("state", format!("{:?}", st.state))?;
        d.set_item("cwnd", st.cwnd)?;
        d.set_item("ssthresh", st.ssthresh)?;
        d.set_item("srtt_us", st.srtt.map(|d| d.as_secs_f64() * 1e6))?;
        d.set_item("rttvar_us", st.rttvar.as_secs_f64() * 1e6)?;
        d.set_item("rto_ms", st.rto.as_secs_f64() * 1e3)?;
        d.set_item("retransmits", st.retransmits)?;
        d.set_item("timeouts", st.timeouts)?;
        d.set_item("fast_recoveries", st.fast_recoveries)?;
        d.set_item("bytes_acked", st.bytes_acked)?;
        d.set_item("bytes_received", st.bytes_received)?;
        d.set_item("mss", st.mss)?;
        d.set_item("sack", st.sack)?;
        d.set_item("timestamps", st.timestamps)?;
        d.set_item("wscale", st.wscale)?;
        d.set_item("cc", format!("{:?}", st.cc))?;
        d.set_item("rack_lost", st.rack_lost)?;
        d.set_item("tlp_probes", st.tlp_probes)?;
        d.set_item("dsacks_received", st.dsacks_received)?;
        d.set_item("dsacks_sent", st.dsacks_sent)?;
        d.set_item("recoveries_undone", st.recoveries_undone)?;
        d.set_item("spurious_rtos", st.spurious_rtos)?;
        d.set_item("tx_buffer", st.tx_buffer)?;
        d.set_item("rx_buffer", st.rx_buffer)?;
        Ok(d)
    }
}

/// The `socket` methods every socket class shares, as one `#[pymethods]` block per class.
macro_rules! socket_mode_methods {
    ($($class:ident),*) => {$(
        #[pymethods]
        impl $class {
            /// A descriptor that is readable while a call would not block (live hosts), for
            /// `selectors` and asyncio; -1 once closed.
            fn fileno(&self, py: Python<'_>) -> PyResult<i32> {
                self.core.fileno(py, self.interest())
            }

            /// As `socket.settimeout`: None blocks, 0 never waits, else seconds to wait.
            #[pyo3(signature = (value))]
            fn settimeout(&mut self, value: Option<f64>) -> PyResult<()> {
                self.core.set_timeout(value)
            }

            /// The timeout in seconds (None: blocking), as `socket.gettimeout`.
            fn gettimeout(&self) -> Option<f64> {
                self.core.timeout()
            }

            /// As `socket.setblocking`: True is `settimeout(None)`, False `settimeout(0)`.
            fn setblocking(&mut self, flag: bool) -> PyResult<()> {
                self.core.set_timeout(if flag { None } else { Some(0.0) })
            }

            /// True unless the timeout is 0, as `socket.getblocking`.
            fn getblocking(&self) -> bool {
                self.core.timeout() != Some(0.0)
            }
        }
    )*};
}

socket_mode_methods!(PyUdpSocket, PyTcpListener, PyTcpConn);
