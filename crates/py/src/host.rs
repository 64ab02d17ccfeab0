//! `linerate.Host`: a linerate host on a testbed (virtual time), on a TAP device in a network
//! namespace of its own, or on one end of a shared-memory link (both on wall-clock time).

use std::net::Ipv4Addr;
use std::time::Duration;

use link::shm::ShmLink;
use link::spec::{LinkSpec, OpenOptions};
use link::{Link, LinkConfig};
use net::{Config, Stack, TcpHandle};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use testbed::netns::Netns;
use testbed::{HostId, HostStack, TapSetup, Testbed};

use crate::buf::bytes_like;
use crate::errors::{self, closed, unsupported, val};
use crate::live::{self, Shared};
use crate::ready::{Interest, Readiness};
use crate::sockets::{PyRawSocket, PyTcpConn, PyTcpListener, PyUdpSocket};
use crate::{parse_ip, rdma, rx_bypass, PyTestbed};

/// What a live host runs on (kept alive as long as the host).
enum Medium {
    /// A TAP device in namespace `ns` (deleted with it), whose Linux side is `linux_ip`.
    Tap { ns: Netns, linux_ip: Ipv4Addr },
    /// One end of the shared-memory link at `path`.
    Shm { path: String },
    /// A link named by a spec (`af_xdp:IFACE`, `af_packet:IFACE`, ...), run as `mode`.
    Link { spec: String, mode: String },
}

/// A host on a real link, polled on the wall clock.
pub(crate) struct LiveHost {
    pub(crate) stack: HostStack,
    medium: Medium,
    /// Exceptions of RX-bypass callables, re-raised by `Host.run`.
    handler_errors: rx_bypass::HandlerErrors,
    /// RDMA nodes on this host (`Host.rdma()`), polled with the stack.
    pub(crate) rdma: Vec<::rdma::RdmaNode>,
    /// The sockets' readiness descriptors (`fileno()`).
    pub(crate) ready: Readiness,
    /// True if a poll thread of its own polls the host (then waits do not poll).
    pub(crate) background: bool,
}

impl LiveHost {
    /// Poll the stack and its RDMA nodes once, then refresh the sockets' readiness;
    /// returns the frames and packets moved.
    pub(crate) fn poll_once(&mut self) -> PyResult<usize> {
        let now = link::Instant::now();
        let mut moved = live::as_poller(|| self.stack.poll(now)).map_err(errors::net)?;
        for n in &mut self.rdma {
            moved += n.poll(&mut self.stack, now).map_err(|e| errors::rt(e.to_string()))?;
            moved += usize::from(n.pending_writes() > 0);
        }
        self.refresh_ready();
        Ok(moved)
    }

    /// Bring the sockets' readiness descriptors up to date.
    pub(crate) fn refresh_ready(&mut self) {
        self.ready.refresh(&mut self.stack);
    }

    /// Keep an error of the poll thread for `Host.run` to raise.
    pub(crate) fn keep_error(&self, e: PyErr) {
        if let Ok(mut v) = self.handler_errors.lock() {
            if v.is_empty() {
                v.push(e);
            }
        }
    }
}

/// Run a live host until `done` says so or `limit` has passed; true if `done` said so.
pub(crate) fn poll_until(
    py: Python<'_>,
    shared: &Shared,
    limit: Duration,
    mut done: impl FnMut(&mut LiveHost) -> bool,
) -> PyResult<bool> {
    Ok(live::wait(py, shared, Some(limit), |l| Ok(done(l).then_some(())))?.is_some())
}

/// A host as sockets see it: one of a testbed, or a live one (None once closed).
pub(crate) enum HostRef {
    /// Host `id` of testbed `tb`.
    Virtual { tb: Py<PyTestbed>, id: HostId },
    /// A host on a TAP or shared memory, shared by the `Host` and its sockets.
    Live(Shared),
}

impl HostRef {
    /// Another reference to the same host.
    pub(crate) fn clone_ref(&self, py: Python<'_>) -> HostRef {
        match self {
            HostRef::Virtual { tb, id } => HostRef::Virtual { tb: tb.clone_ref(py), id: *id },
            HostRef::Live(l) => HostRef::Live(l.clone()),
        }
    }

    /// Run `f` on the host's stack.
    pub(crate) fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut HostStack) -> PyResult<T>) -> PyResult<T> {
        match self {
            HostRef::Virtual { tb, id } => {
                let mut t = tb.try_borrow_mut(py).map_err(errors::rt)?;
                f(t.tb.host(*id))
            }
            HostRef::Live(l) => {
                let mut g = live::lock(py, l)?;
                let l = g.as_mut().ok_or_else(|| closed("host"))?;
                let out = f(&mut l.stack);
                l.refresh_ready();
                out
            }
        }
    }

    /// Run `f` on the host's testbed; live hosts have none (`OSError(EOPNOTSUPP)`, `what`).
    fn with_testbed<T>(
        &self,
        py: Python<'_>,
        what: &str,
        f: impl FnOnce(&mut PyTestbed, HostId) -> PyResult<T>,
    ) -> PyResult<T> {
        match self {
            HostRef::Virtual { tb, id } => f(&mut *tb.try_borrow_mut(py).map_err(errors::rt)?, *id),
            HostRef::Live(_) => Err(unsupported(&format!("{what} needs a testbed host"))),
        }
    }

    /// Run the network until `done` holds for the host's stack or `limit` has passed: virtual
    /// time on a testbed, wall-clock time on a live host.
    fn run_until(
        &self,
        py: Python<'_>,
        limit: Duration,
        mut done: impl FnMut(&mut HostStack) -> bool,
    ) -> PyResult<bool> {
        match self {
            HostRef::Virtual { tb, id } => {
                let mut t = tb.try_borrow_mut(py).map_err(errors::rt)?;
                let mut hit = false;
                t.tb.run_until(limit, |tb| {
                    hit = done(tb.host(*id));
                    hit
                })
                .map_err(errors::testbed)?;
                Ok(hit)
            }
            HostRef::Live(l) => poll_until(py, l, limit, |l| done(&mut l.stack)),
        }
    }

    /// Move frames once: a testbed step (collecting a bench host's output), or one poll.
    fn step(&self, py: Python<'_>) -> PyResult<()> {
        match self {
            HostRef::Virtual { tb, id } => {
                let mut t = tb.try_borrow_mut(py).map_err(errors::rt)?;
                t.tb.step().map_err(errors::testbed)?;
                if t.tb.is_bench(*id) {
                    t.tb.bench_collect(*id).map_err(errors::testbed)?;
                }
                Ok(())
            }
            HostRef::Live(l) => live::lock(py, l)?.as_mut().ok_or_else(|| closed("host"))?.poll_once().map(drop),
        }
    }

    /// How long a new socket's blocking calls wait: live hosts block (`None`: for ever), a
    /// testbed's sockets do not (the program drives virtual time).
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        match self {
            HostRef::Virtual { .. } => Some(Duration::ZERO),
            HostRef::Live(_) => None,
        }
    }

    /// Call `take` until it yields or `timeout` has passed (then `None`): a zero timeout tries
    /// once; on a testbed the wait runs virtual time (at most an hour of it when `timeout`
    /// is `None`), on a live host the wall clock.
    pub(crate) fn wait_for<T>(
        &self,
        py: Python<'_>,
        timeout: Option<Duration>,
        mut take: impl FnMut(&mut HostStack, &mut Readiness) -> PyResult<Option<T>>,
    ) -> PyResult<Option<T>> {
        match self {
            HostRef::Virtual { tb, id } => {
                let mut t = tb.try_borrow_mut(py).map_err(errors::rt)?;
                let mut none = Readiness::default();
                if let Some(v) = take(t.tb.host(*id), &mut none)? {
                    return Ok(Some(v));
                }
                if timeout == Some(Duration::ZERO) {
                    return Ok(None);
                }
                let (mut got, mut failed) = (None, None);
                t.tb.run_until(timeout.unwrap_or(Duration::from_secs(3600)), |tb| {
                    match take(tb.host(*id), &mut none) {
                        Ok(v) => got = v,
                        Err(e) => failed = Some(e),
                    }
                    got.is_some() || failed.is_some()
                })
                .map_err(errors::testbed)?;
                failed.map_or(Ok(got), Err)
            }
            HostRef::Live(l) if timeout == Some(Duration::ZERO) => {
                let mut g = live::lock(py, l)?;
                let l = g.as_mut().ok_or_else(|| closed("host"))?;
                let got = take(&mut l.stack, &mut l.ready);
                l.refresh_ready();
                got
            }
            HostRef::Live(l) => live::wait(py, l, timeout, |l| take(&mut l.stack, &mut l.ready)),
        }
    }

    /// The readiness descriptor of a live host's socket (`fileno()`); testbed sockets have
    /// none (`OSError(EOPNOTSUPP)`).
    pub(crate) fn fileno(&self, py: Python<'_>, what: Interest) -> PyResult<i32> {
        match self {
            HostRef::Virtual { .. } => Err(unsupported("fileno() needs a live host (a testbed runs on virtual time)")),
            HostRef::Live(l) => {
                let mut g = live::lock(py, l)?;
                let l = g.as_mut().ok_or_else(|| closed("host"))?;
                l.ready
                    .fileno(&mut l.stack, what)
                    .map_err(|e| errors::os(e.raw_os_error().unwrap_or(libc::EIO), e.to_string()))
            }
        }
    }

    /// Forget the readiness descriptor of a socket that closed (a no-op on a testbed or a
    /// closed host).
    pub(crate) fn forget(&self, py: Python<'_>, what: Interest) {
        if let HostRef::Live(l) = self {
            if let Ok(mut g) = live::lock(py, l) {
                if let Some(l) = g.as_mut() {
                    l.ready.forget(&mut l.stack, what);
                }
            }
        }
    }

    /// Address and medium, for `repr`.
    pub(crate) fn describe(&self, py: Python<'_>) -> String {
        let medium = match self {
            HostRef::Virtual { .. } => "testbed".to_string(),
            // Waits for the poll thread to let go (the GIL released meanwhile), so the
            // description never depends on whether the thread happened to hold the host.
            HostRef::Live(l) => match py.allow_threads(|| {
                l.lock().ok().map(|g| match g.as_ref() {
                    Some(LiveHost { medium: Medium::Tap { ns, .. }, .. }) => {
                        Some(format!("TAP in namespace {}", ns.name()))
                    }
                    Some(LiveHost { medium: Medium::Shm { path }, .. }) => Some(format!("shared memory {path}")),
                    Some(LiveHost { medium: Medium::Link { spec, mode }, .. }) => Some(format!("{spec} ({mode})")),
                    None => None,
                })
            }) {
                Some(Some(m)) => m,
                Some(None) => return "closed".to_string(),
                None => "live".to_string(),
            },
        };
        match self.with(py, |s| Ok(s.ip())) {
            Ok(ip) => format!("{ip} on {medium}"),
            Err(_) => medium,
        }
    }
}

/// A linerate host: on a `Testbed` (virtual time), on a TAP device (`Host.on_tap`), or on a
/// shared-memory link (`Host.on_shm`). Its sockets behave like Python's (blocking by default on a
/// live host, polled by a thread of its own; non-blocking on a testbed).
#[pyclass(name = "Host", module = "linerate", unsendable)]
pub(crate) struct PyHost {
    pub(crate) host: HostRef,
    /// "testbed", "tap" or "shm".
    pub(crate) kind: &'static str,
}

impl PyHost {
    /// A live host; `background`: polled by a thread of its own from now on.
    fn live(stack: HostStack, medium: Medium, background: bool) -> PyResult<PyHost> {
        let kind = match medium {
            Medium::Tap { .. } => "tap",
            Medium::Shm { .. } => "shm",
            Medium::Link { .. } => "link",
        };
        let live = LiveHost {
            stack,
            medium,
            handler_errors: Default::default(),
            rdma: Vec::new(),
            ready: Readiness::default(),
            background,
        };
        let shared: Shared = std::sync::Arc::new(std::sync::Mutex::new(Some(live)));
        if background {
            live::spawn_poller(&shared)
                .map_err(|e| errors::os(e.raw_os_error().unwrap_or(libc::EAGAIN), e.to_string()))?;
        }
        Ok(PyHost { host: HostRef::Live(shared), kind })
    }

    /// The testbed and id of a testbed host; `OSError(EOPNOTSUPP)` for live hosts.
    pub(crate) fn testbed_parts(&self, py: Python<'_>) -> PyResult<(Py<PyTestbed>, HostId)> {
        match &self.host {
            HostRef::Virtual { tb, id } => Ok((tb.clone_ref(py), *id)),
            HostRef::Live(_) => Err(unsupported("this needs a testbed host")),
        }
    }

    /// The live host, or an error naming what needs one.
    fn with_live<T>(&self, py: Python<'_>, f: impl FnOnce(&mut LiveHost) -> PyResult<T>) -> PyResult<T> {
        match &self.host {
            HostRef::Live(l) => f(live::lock(py, l)?.as_mut().ok_or_else(|| closed("host"))?),
            HostRef::Virtual { .. } => Err(unsupported("only hosts on a TAP or shared memory have this")),
        }
    }
}

/// A host configuration from "a.b.c.d/len", an MTU and an optional gateway, validated.
fn host_config(cidr: &str, mtu: usize, gateway: Option<&str>) -> PyResult<Config> {
    if !(LinkConfig::MIN_MTU..=9000).contains(&mtu) {
        return Err(val(format!("mtu {mtu} is outside {}..=9000", LinkConfig::MIN_MTU)));
    }
    let mut cfg = Config::parse_host(cidr).map_err(errors::net)?.mtu(mtu);
    cfg.gateway = gateway.map(parse_ip).transpose()?;
    cfg.validate().map_err(errors::net)?;
    Ok(cfg)
}

#[pymethods]
impl PyHost {
    /// A host on a TAP device in a new network namespace `<prefix>-<pid>-<n>` (needs root):
    /// the Linux side of the TAP is `linux_cidr`, the linerate host `cidr`; over IPv6 too,
    /// `linux_cidr6` and `cidr6` (as `linerate tap`; `None` for either: IPv4 only; the host's
    /// duplicate address detection is over when this returns). `close()` (or
    /// leaving a `with` block) deletes the namespace and the TAP. `background=True`: a thread
    /// of its own polls the host (sockets block, `fileno()` works with selectors and
    /// asyncio); `False`: the program polls it with `run` (or blocking calls do).
    #[staticmethod]
    #[pyo3(signature = (cidr = "10.77.0.2/24", linux_cidr = "10.77.0.1/24", mtu = 1500, gateway = None, prefix = "lr-py", background = true, cidr6 = Some("fd77::2/64"), linux_cidr6 = Some("fd77::1/64")),
        text_signature = "(cidr='10.77.0.2/24', linux_cidr='10.77.0.1/24', mtu=1500, gateway=None, prefix='lr-py', background=True, cidr6='fd77::2/64', linux_cidr6='fd77::1/64')")]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    fn on_tap(
        cidr: &str,
        linux_cidr: &str,
        mtu: usize,
        gateway: Option<&str>,
        prefix: &str,
        background: bool,
        cidr6: Option<&str>,
        linux_cidr6: Option<&str>,
    ) -> PyResult<PyHost> {
        let mut cfg = host_config(cidr, mtu, gateway)?;
        let ipv6 = cidr6.zip(linux_cidr6);
        if let Some((host6, linux6)) = ipv6 {
            let (h, l) = (net::Ipv6Cidr::parse(host6).map_err(val)?, net::Ipv6Cidr::parse(linux6).map_err(val)?);
            if h.addr == l.addr || !l.contains(h.addr) {
                return Err(val(format!("cidr6 {host6} must be another address in linux_cidr6's prefix {linux6}")));
            }
            cfg = cfg.ipv6_addr(host6).map_err(val)?;
        }
        let linux = linux_cidr.split('/').next().unwrap_or("");
        parse_ip(linux)?;
        if !linux_cidr.contains('/') {
            return Err(val(format!("linux_cidr '{linux_cidr}' needs a prefix length (a.b.c.d/len)")));
        }
        let ok_prefix = !prefix.is_empty()
            && prefix.len() <= 24
            && prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok_prefix {
            return Err(val(format!("namespace prefix {prefix:?} must be 1..=24 characters of [A-Za-z0-9_-]")));
        }
        let mut setup = TapSetup::create(prefix, linux_cidr, cfg, None).map_err(errors::testbed)?;
        if let Some((_, linux6)) = ipv6 {
            setup.add_linux_ipv6(linux6).map_err(errors::testbed)?;
        }
        let TapSetup { ns, stack, linux_ip } = setup;
        PyHost::live(stack, Medium::Tap { ns, linux_ip }, background)
    }

    /// A host on the shared-memory link `name` (`/dev/shm/linerate-<name>`): `create=True`
    /// makes the link (side A, removed when this host closes), `create=False` opens it
    /// (side B), waiting up to `timeout` seconds for it to appear. `background` as for
    /// `on_tap`.
    #[staticmethod]
    #[pyo3(signature = (name, cidr, create, mtu = 1500, timeout = 10.0, background = true))]
    fn on_shm(name: &str, cidr: &str, create: bool, mtu: usize, timeout: f64, background: bool) -> PyResult<PyHost> {
        if !(0.0..=3600.0).contains(&timeout) {
            return Err(val(format!("timeout {timeout} is outside 0..=3600 seconds")));
        }
        let link = if create {
            let cfg = host_config(cidr, mtu, None)?;
            ShmLink::create(name, LinkConfig { mtu: cfg.mtu, ..Default::default() }).map_err(errors::link)?
        } else {
            ShmLink::open(name, Duration::from_secs_f64(timeout)).map_err(errors::link)?
        };
        // The opener takes the MTU the creator chose.
        let link_mtu = link.max_frame().saturating_sub(18);
        let cfg = host_config(cidr, link_mtu, None)?;
        let path = link.path().to_string();
        let stack = Stack::new(cfg, Box::new(link) as Box<dyn Link>).map_err(errors::net)?;
        PyHost::live(stack, Medium::Shm { path }, background)
    }

    /// A host on the link `spec` (`af_xdp:IFACE`, `af_packet:IFACE`, `tap:IFNAME`,
    /// `shm:NAME`), in network namespace `netns` if given (else this process's). AF_XDP and
    /// AF_PACKET hosts take the interface's MAC and (without `mtu`) its MTU; AF_XDP steers
    /// IPv4 and ARP for `cidr` to the host and passes every other frame to the kernel. One
    /// stack polls one queue here (`queues=1`); `linerate host --queues N` runs one per queue.
    /// `background` as for `on_tap`.
    #[staticmethod]
    #[pyo3(signature = (spec, cidr, queues = 1, mtu = None, gateway = None, netns = None, background = true))]
    fn on_link(
        spec: &str,
        cidr: &str,
        queues: u32,
        mtu: Option<usize>,
        gateway: Option<&str>,
        netns: Option<&str>,
        background: bool,
    ) -> PyResult<PyHost> {
        let parsed: LinkSpec = spec.parse().map_err(val)?;
        if queues != 1 {
            return Err(val(format!(
                "queues={queues}: a Python host polls one queue; run `linerate host --link {spec} --queues {queues}` for one stack per queue"
            )));
        }
        let mut cfg = host_config(cidr, mtu.unwrap_or(1500), gateway)?;
        let opts = OpenOptions { mtu, queues, addresses: vec![cfg.ip], ..OpenOptions::default() };
        let opened = match netns {
            Some(ns) => parsed.open_in_netns(ns, &opts),
            None => parsed.open(&opts),
        }
        .map_err(errors::link)?;
        if let Some(mac) = opened.mac {
            cfg.mac = wire::MacAddr(mac);
        }
        // The MSS that fills the link's MTU, as Linux derives it.
        cfg = cfg.mtu(opened.mtu).mss(opened.mtu.saturating_sub(40).min(u16::MAX as usize) as u16);
        cfg.validate().map_err(|e| val(e.to_string()))?;
        for w in &opened.warnings {
            Python::with_gil(|py| {
                PyErr::warn(
                    py,
                    &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                    &std::ffi::CString::new(w.as_str()).unwrap_or_default(),
                    1,
                )
            })?;
        }
        let link = opened.links.into_iter().next().ok_or_else(|| val(format!("{spec} opened no queue")))?;
        let stack = Stack::new(cfg, link).map_err(errors::net)?;
        PyHost::live(stack, Medium::Link { spec: parsed.to_string(), mode: opened.mode }, background)
    }

    /// The host's IPv4 address.
    #[getter]
    fn ip(&self, py: Python<'_>) -> PyResult<String> {
        self.host.with(py, |s| Ok(s.ip().to_string()))
    }

    /// The host's MAC address.
    #[getter]
    fn mac(&self, py: Python<'_>) -> PyResult<String> {
        self.host.with(py, |s| Ok(s.mac().to_string()))
    }

    /// Where the host runs: "testbed", "tap", "shm" or "link".
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// The network namespace of a TAP host (None for other hosts).
    #[getter]
    fn netns(&self, py: Python<'_>) -> Option<String> {
        self.with_live(py, |l| match &l.medium {
            Medium::Tap { ns, .. } => Ok(Some(ns.name().to_string())),
            Medium::Shm { .. } | Medium::Link { .. } => Ok(None),
        })
        .unwrap_or(None)
    }

    /// The address of the Linux side of a TAP host (None for other hosts).
    #[getter]
    fn linux_ip(&self, py: Python<'_>) -> Option<String> {
        self.with_live(py, |l| match &l.medium {
            Medium::Tap { linux_ip, .. } => Ok(Some(linux_ip.to_string())),
            Medium::Shm { .. } | Medium::Link { .. } => Ok(None),
        })
        .unwrap_or(None)
    }

    /// Run the network for `ms` milliseconds: the whole testbed (virtual time) for a testbed
    /// host, this host polled on the wall clock for a live one.
    #[pyo3(signature = (ms = 1.0))]
    fn run(&self, py: Python<'_>, ms: f64) -> PyResult<()> {
        let d = crate::duration_ms(ms)?;
        match &self.host {
            HostRef::Virtual { tb, .. } => tb.try_borrow_mut(py).map_err(errors::rt)?.advance(d),
            HostRef::Live(_) => {
                self.host.run_until(py, d, |_| false)?;
                self.with_live(py, |l| rx_bypass::take_error(&l.handler_errors))
            }
        }
    }

    /// Close a live host: its sockets stop working, its namespace and TAP (or its
    /// shared-memory link) go away. Idempotent; a testbed host lives as long as its testbed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if let HostRef::Live(l) = &self.host {
            let gone = live::lock(py, l)?.take();
            drop(gone);
        }
        Ok(())
    }

    /// `with Host.on_tap(...) as h:` closes the host at the end of the block.
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Close the host (see `close`).
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    /// What it is and its state, for `repr()`.
    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<linerate.Host {}>", self.host.describe(py))
    }

    /// Bind a UDP socket (port 0: ephemeral).
    #[pyo3(signature = (port = 0))]
    fn udp_bind(&self, py: Python<'_>, port: i64) -> PyResult<PyUdpSocket> {
        let port = crate::port(port)?;
        let h = self.host.with(py, |s| s.udp_bind(port).map_err(errors::net))?;
        Ok(PyUdpSocket::new(self.host.clone_ref(py), h))
    }

    /// Install the RX-bypass handler of this host: `callback(slot, data)` receives the
    /// in-order payload of every connection switched to bypass (`TcpConn.set_rx_bypass`),
    /// straight from the frame, while the network runs. It must not call into linerate; its
    /// exceptions are re-raised by `Testbed.run`/`step` (`Host.run` for live hosts).
    fn set_rx_handler(&self, py: Python<'_>, callback: PyObject) -> PyResult<()> {
        if !callback.bind(py).is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err("the RX handler must be callable"));
        }
        let errors = match &self.host {
            HostRef::Virtual { tb, .. } => tb.try_borrow(py).map_err(errors::rt)?.handler_errors.clone(),
            HostRef::Live(_) => self.with_live(py, |l| Ok(l.handler_errors.clone()))?,
        };
        self.host.with(py, |s| {
            s.tcp_set_rx_handler(rx_bypass::handler(callback, errors));
            Ok(())
        })
    }

    /// A new watcher of TCP connection activity; returns its number for `take_activity`.
    fn tcp_watch(&self, py: Python<'_>) -> PyResult<usize> {
        self.host.with(py, |s| s.tcp_watch().map(|w| w.index()).map_err(errors::net))
    }

    /// The slots (`TcpConn.slot`) of the connections with activity since watcher `watch`
    /// last looked: a segment was processed for them, or they ended.
    fn take_activity(&self, py: Python<'_>, watch: usize) -> PyResult<Vec<u32>> {
        self.host.with(py, |s| {
            let mut out = Vec::new();
            let w = net::TcpWatch::from_index(watch).ok_or_else(|| val(format!("no watcher {watch}")))?;
            s.tcp_take_activity(w, &mut out);
            Ok(out.into_iter().map(TcpHandle::slot).collect())
        })
    }

    /// Listen for TCP connections on `port`.
    #[pyo3(signature = (port, backlog = 128))]
    fn tcp_listen(&self, py: Python<'_>, port: i64, backlog: usize) -> PyResult<PyTcpListener> {
        let port = crate::port(port)?;
        if backlog == 0 || backlog > 65535 {
            return Err(val(format!("backlog {backlog} is outside 1..=65535")));
        }
        let l = self.host.with(py, |s| s.tcp_listen(port, backlog).map_err(errors::net))?;
        Ok(PyTcpListener::new(self.host.clone_ref(py), l))
    }

    /// Open a TCP connection to `(ip, port)`; the handshake completes as the network runs
    /// (see `TcpConn.connected`, which raises ConnectionRefusedError if the peer resets).
    fn tcp_connect(&self, py: Python<'_>, addr: &Bound<'_, PyAny>) -> PyResult<PyTcpConn> {
        let dst = crate::address::from_py(addr)?;
        let h = self.host.with(py, |s| s.tcp_connect(dst).map_err(errors::net))?;
        Ok(PyTcpConn::new(self.host.clone_ref(py), h, Some(dst)))
    }

    /// An RDMA node on this host, over UDP `port` (reliable connectionless writes, seed 001).
    /// `config`: settings by name over the defaults (`linerate.rdma.default_config()`;
    /// `transport="eth"` for raw Ethernet). A testbed polls it as it runs; on a live host
    /// (TAP, shared memory) it is polled with the host, whenever Python runs the host
    /// (`Host.run`, socket waits, the node's own `wait_*`). For a node that keeps serving on
    /// its own thread, see `linerate.rdma.Node`.
    #[pyo3(signature = (port = None, config = None))]
    fn rdma(
        &self,
        py: Python<'_>,
        port: Option<u16>,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<rdma::PyRdmaNode> {
        let cfg = rdma::config_from(config, port)?;
        match &self.host {
            HostRef::Virtual { tb, .. } => {
                let idx = self.host.with_testbed(py, "Host.rdma", |t, id| {
                    let node = ::rdma::RdmaNode::new(t.tb.host(id), cfg).map_err(|e| val(e.to_string()))?;
                    t.rdma.push((id, node));
                    Ok(t.rdma.len() - 1)
                })?;
                Ok(rdma::PyRdmaNode { at: rdma::NodeAt::Testbed(tb.clone_ref(py)), idx })
            }
            HostRef::Live(l) => {
                let idx = self.with_live(py, |h| {
                    let node = ::rdma::RdmaNode::new(&mut h.stack, cfg).map_err(|e| val(e.to_string()))?;
                    h.rdma.push(node);
                    Ok(h.rdma.len() - 1)
                })?;
                Ok(rdma::PyRdmaNode { at: rdma::NodeAt::Live(l.clone()), idx })
            }
        }
    }

    /// Bind a raw Ethernet socket to an EtherType.
    fn raw_bind(&self, py: Python<'_>, ethertype: u16) -> PyResult<PyRawSocket> {
        let h = self.host.with(py, |s| s.raw_bind(ethertype).map_err(errors::net))?;
        Ok(PyRawSocket::new(self.host.clone_ref(py), h))
    }

    /// Ping `dst` `count` times (running the network); returns the round-trip times in µs
    /// (virtual time on a testbed) of the replies that came back within `timeout` seconds
    /// each. `timeout_ms=` is the deprecated old keyword.
    #[pyo3(signature = (dst, count = 1, size = 56, timeout = 1.0, timeout_ms = None))]
    fn ping(
        &self,
        py: Python<'_>,
        dst: &str,
        count: u16,
        size: usize,
        timeout: f64,
        timeout_ms: Option<f64>,
    ) -> PyResult<Vec<f64>> {
        let timeout_ms = crate::seconds_or_old_ms(py, timeout, timeout_ms, "timeout_ms")?;
        let dst = parse_ip(dst)?;
        if size > 65000 {
            return Err(val(format!("ping size {size} exceeds 65000 bytes")));
        }
        let limit = crate::duration_ms(timeout_ms)?;
        let mut rtts = Vec::new();
        for seq in 0..count {
            self.host.with(py, |s| s.ping(dst, seq, size).map_err(errors::net))?;
            let mut got = None;
            self.host.run_until(py, limit, |s| {
                while let Some(r) = s.ping_reply() {
                    if r.seq == seq {
                        got = Some(r.rtt);
                    }
                }
                got.is_some()
            })?;
            if let Some(rtt) = got {
                rtts.push(rtt.as_nanos() as f64 / 1e3);
            }
        }
        Ok(rtts)
    }

    /// All counters as a dict name -> value.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let values: Vec<(&'static str, u64)> = self.host.with(py, |s| Ok(s.counters().iter().collect()))?;
        for (k, v) in values {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The ARP cache as a dict ip -> mac.
    fn arp_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (ip, mac) in self.host.with(py, |s| Ok(s.arp_entries()))? {
            d.set_item(ip.to_string(), mac.to_string())?;
        }
        Ok(d)
    }

    /// Feed one frame (any bytes-like object) straight into the host's receive path.
    fn inject(&self, py: Python<'_>, frame: &Bound<'_, PyAny>) -> PyResult<()> {
        let frame = bytes_like(frame)?;
        self.host.with(py, |s| s.inject(&frame).map_err(errors::net))
    }

    /// Feed many frames: `data` holds them back to back, `lengths` gives each one's size.
    fn inject_many(&self, py: Python<'_>, data: &Bound<'_, PyAny>, lengths: Vec<usize>) -> PyResult<()> {
        let data = bytes_like(data)?;
        if lengths.iter().try_fold(0usize, |a, &n| a.checked_add(n)) != Some(data.len()) {
            return Err(val("the lengths do not add up to the size of data"));
        }
        let mut off = 0;
        for (i, n) in lengths.into_iter().enumerate() {
            self.host.with(py, |s| s.inject(&data[off..off + n]).map_err(errors::net))?;
            off += n;
            if i % 256 == 255 {
                self.host.step(py)?;
            }
        }
        Ok(())
    }

    /// Feed `count` byte mutations (flips, random bytes, truncation, extension) of the
    /// `seeds` frames into the receive path, deterministically from `seed`.
    #[pyo3(signature = (seeds, count, seed = 1))]
    fn inject_mutations(&self, py: Python<'_>, seeds: Vec<Vec<u8>>, count: usize, seed: u64) -> PyResult<()> {
        if seeds.is_empty() {
            return Err(val("at least one seed frame is needed"));
        }
        let mut rng = seed | 1;
        let mut frame = Vec::with_capacity(16384);
        for i in 0..count {
            testbed::mutate::mutate(&seeds[i % seeds.len()], &mut rng, &mut frame);
            self.host.with(py, |s| s.inject(&frame).map_err(errors::net))?;
            if i % 256 == 255 {
                self.host.step(py)?;
            }
        }
        Ok(())
    }

    /// Put a frame on the wire towards a bench host (it is received at the next step).
    fn send_frame(&self, py: Python<'_>, frame: &Bound<'_, PyAny>) -> PyResult<bool> {
        let frame = bytes_like(frame)?;
        self.host.with_testbed(py, "Host.send_frame", |t, id| {
            require_bench(&t.tb, id)?;
            t.tb.bench_inject(id, &frame).map_err(errors::testbed)
        })
    }

    /// Every frame a bench host has sent since the last call.
    fn collect<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let frames = self.host.with_testbed(py, "Host.collect", |t, id| {
            require_bench(&t.tb, id)?;
            t.tb.bench_collect(id).map_err(errors::testbed)
        })?;
        Ok(frames.iter().map(|f| PyBytes::new(py, f)).collect())
    }
}

/// `ValueError` unless host `id` was added with `bench=True`.
fn require_bench(tb: &Testbed, id: HostId) -> PyResult<()> {
    if tb.is_bench(id) {
        Ok(())
    } else {
        Err(val("not a bench host (add it with Testbed.host(..., bench=True))"))
    }
}
