//! Python RDMA nodes between processes: each process owns a linerate stack on one end of a
//! shared-memory link (`link::shm::ShmLink`, the link of the Rust two-process test) and an
//! RDMA node on it, advanced by a background thread the way a NIC works beside the CPU.
//!
//! ```python
//! import numpy as np, linerate as lr
//! a = lr.rdma.ShmNode.create("demo", "10.0.0.1/24")       # process 1: creates the link
//! b = lr.rdma.ShmNode.open("demo", "10.0.0.2/24")         # process 2: opens it
//! key = b.register(np.zeros(1 << 20, dtype=np.uint8))     # process 2; tells process 1 the key
//! a.write(("10.0.0.2", 18791), key, 0, np.arange(100, dtype=np.float32))
//! c = b.wait_notification(timeout=5.0)                    # blocks without the GIL
//! x = np.empty(100, dtype=np.float32); b.read_into(key, x)  # or np.frombuffer(b.region(key), ...)
//! ```
//!
//! Regions are copies: `register` copies the array into memory the node owns (the array
//! stays the caller's, and later changes to it are not seen by peers); remote writes land in
//! that copy, read back with `region(key)` (bytes) or `read_into(key, array)` (into a
//! contiguous numpy array), and `deregister(key)` returns the final bytes.
//!
//! The thread polls without pause while writes are in flight or packets arrive, and when
//! idle parks for a growing interval (up to [`MAX_IDLE_PARK`]); posting a write wakes it.

use crate::rdma::{bytes_of, completion, read_region_into};
use crate::{parse_ip, rt, val};
use link::shm::ShmLink;
use link::{Instant, Link, LinkConfig};
use net::{Config, Stack};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rdma::{Completion, NotifyQueue, Peer, RdmaConfig, RdmaNode, RegionKey, WriteOptions};
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest park of an idle polling thread (the worst added delay before it sees a packet):
/// well below the senders' 1 ms minimum retransmission timeout, so a parked receiver does
/// not make its peers resend.
pub const MAX_IDLE_PARK: Duration = Duration::from_micros(250);
/// Shortest park once idle.
const MIN_IDLE_PARK: Duration = Duration::from_micros(20);
/// Idle polls spent spinning before the first park.
const IDLE_SPINS: u32 = 2000;
/// Longest the polling thread waits for a Python call to take the lock.
const STEP_ASIDE: Duration = Duration::from_millis(1);

/// The stack and node, owned by the polling thread between Python calls.
struct Core {
    stack: Stack<ShmLink>,
    node: RdmaNode,
}

/// What the Python object and the polling thread share.
struct Shared {
    /// `None` once closed.
    core: Mutex<Option<Core>>,
    stop: AtomicBool,
    /// Why the polling thread stopped (a link error such as the peer closing), if it did.
    failed: Mutex<Option<String>>,
    /// Python calls waiting for the lock: the polling thread, which re-locks at once while
    /// busy, steps aside for them.
    callers: AtomicUsize,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, Option<Core>> {
        // A panic while polling cannot leave a half-updated node that matters more than
        // the error the thread recorded; keep serving reads.
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock, for a Python call: announced, so that a busy polling thread lets it in.
    fn core_for_caller(&self) -> MutexGuard<'_, Option<Core>> {
        self.callers.fetch_add(1, Ordering::AcqRel);
        let g = self.core();
        self.callers.fetch_sub(1, Ordering::AcqRel);
        g
    }

    /// After a poll: while a caller waits for the lock, let it take it (bounded).
    fn step_aside(&self) {
        let until = std::time::Instant::now() + STEP_ASIDE;
        while self.callers.load(Ordering::Acquire) > 0 && std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    fn failure(&self) -> Option<String> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The polling loop: poll stack and node until told to stop or the link fails.
fn run(shared: Arc<Shared>) {
    let mut idle = 0u32;
    let mut park = MIN_IDLE_PARK;
    while !shared.stop.load(Ordering::Acquire) {
        let busy = {
            let mut c = shared.core();
            let Some(Core { stack, node }) = c.as_mut() else { return };
            let now = Instant::now();
            let r = stack
                .poll(now)
                .map_err(|e| e.to_string())
                .and_then(|_| node.poll(stack, now).map_err(|e| e.to_string()));
            match r {
                Ok(got) => got > 0 || node.pending_writes() > 0 || node.escape_len() > 0,
                Err(e) => {
                    *shared.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    return;
                }
            }
        };
        shared.step_aside();
        if busy {
            idle = 0;
            park = MIN_IDLE_PARK;
        } else if idle < IDLE_SPINS {
            idle += 1;
            std::hint::spin_loop();
        } else {
            std::thread::park_timeout(park);
            park = (park * 2).min(MAX_IDLE_PARK);
        }
    }
}

/// An RDMA node on one end of a shared-memory link between two processes, driven by its
/// own background thread (`lr.rdma.ShmNode.create(...)` / `.open(...)`).
#[pyclass(name = "ShmNode", module = "linerate.rdma")]
pub(crate) struct PyShmNode {
    shared: Arc<Shared>,
    poller: Option<JoinHandle<()>>,
    recv_q: NotifyQueue,
    send_q: NotifyQueue,
    address: SocketAddrV4,
}

impl PyShmNode {
    fn start(link: ShmLink, cidr: &str, port: u16) -> PyResult<Self> {
        let mtu = link.max_frame() - 18;
        let cfg = Config::parse_host(cidr).map_err(val)?.mtu(mtu);
        let mut stack = Stack::new(cfg, link).map_err(rt)?;
        let node = RdmaNode::new(&mut stack, RdmaConfig::default().udp(port)).map_err(val)?;
        let address = match node.address(&stack) {
            Peer::Udp(a) => a,
            Peer::Eth(m) => return Err(rt(format!("node is on raw Ethernet ({m})"))),
        };
        let (recv_q, send_q) = (node.notifications().clone(), node.completions().clone());
        let shared = Arc::new(Shared {
            core: Mutex::new(Some(Core { stack, node })),
            stop: AtomicBool::new(false),
            failed: Mutex::new(None),
            callers: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let poller = std::thread::Builder::new().name("linerate-rdma".into()).spawn(move || run(s)).map_err(rt)?;
        Ok(PyShmNode { shared, poller: Some(poller), recv_q, send_q, address })
    }

    /// Run `f` on the node with the GIL released; fails once the polling thread stopped.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Core) -> PyResult<T> + Send) -> PyResult<T> {
        let shared = &self.shared;
        py.allow_threads(|| match shared.core_for_caller().as_mut() {
            Some(c) => f(c),
            None => Err(rt("the node is closed")),
        })
    }

    fn wake(&self) {
        if let Some(p) = &self.poller {
            p.thread().unpark();
        }
    }

    fn wait_on<'py>(&self, py: Python<'py>, q: &NotifyQueue, timeout: f64) -> PyResult<Option<Bound<'py, PyDict>>> {
        let t = crate::duration_ms(timeout * 1e3)?;
        let c: Option<Completion> = py.allow_threads(|| q.wait(t));
        c.map(|c| completion(py, &c)).transpose()
    }

    /// Stop the polling thread, then drop the stack and its end of the link.
    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(p) = self.poller.take() {
            p.thread().unpark();
            let _ = p.join();
        }
        self.shared.core().take();
    }
}

impl Drop for PyShmNode {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[pymethods]
impl PyShmNode {
    /// Create the link `/dev/shm/linerate-<name>` (side A) and a node at `cidr` on it.
    #[staticmethod]
    #[pyo3(signature = (name, cidr, port = rdma::DEFAULT_UDP_PORT, mtu = 1500))]
    fn create(py: Python<'_>, name: &str, cidr: &str, port: u16, mtu: usize) -> PyResult<Self> {
        let link = py.allow_threads(|| ShmLink::create(name, LinkConfig::default().mtu(mtu))).map_err(rt)?;
        Self::start(link, cidr, port)
    }

    /// Open the link `name` another process created (side B), waiting up to `timeout`
    /// seconds for it, and start a node at `cidr` on it.
    #[staticmethod]
    #[pyo3(signature = (name, cidr, port = rdma::DEFAULT_UDP_PORT, timeout = 10.0))]
    fn open(py: Python<'_>, name: &str, cidr: &str, port: u16, timeout: f64) -> PyResult<Self> {
        let t = crate::duration_ms(timeout * 1e3)?;
        let link = py.allow_threads(|| ShmLink::open(name, t)).map_err(rt)?;
        Self::start(link, cidr, port)
    }

    /// `(ip, port)` that peers write to.
    #[getter]
    fn address(&self) -> (String, u16) {
        (self.address.ip().to_string(), self.address.port())
    }

    /// Why the polling thread stopped (for instance the peer closed the link), or None
    /// while it runs.
    #[getter]
    fn error(&self) -> Option<String> {
        self.shared.failure()
    }

    /// Register a copy of `data` (a numpy array, bytes, ...) as a region; returns its key.
    fn register(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u32> {
        let bytes = bytes_of(data)?;
        self.with(py, |c| c.node.register(bytes).map(|k| k.0).map_err(val))
    }

    /// The current bytes of region `key` (a copy).
    fn region<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(py, |c| {
            c.node.region(RegionKey(key)).map(<[u8]>::to_vec).ok_or_else(|| val(format!("no region {key:#x}")))
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Copy region `key` from byte `offset` into `out`, a writable C-contiguous numpy
    /// array of any dtype, filling it whole.
    #[pyo3(signature = (key, out, offset = 0))]
    fn read_into(&self, key: u32, out: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
        read_region_into(out, key, offset, |f| match self.shared.core_for_caller().as_ref() {
            Some(c) => f(c.node.region(RegionKey(key))),
            None => Err(rt("the node is closed")),
        })
    }

    /// Deregister region `key`; returns its final bytes. Writes still in flight are refused.
    fn deregister<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(py, |c| c.node.deregister(RegionKey(key)).map_err(val))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Write `data` into region `key` of the node at `dst` = `(ip, port)`, at `offset`.
    /// `registered`: force a registered (True) or unregistered (False) op; None decides by
    /// size. Returns the write id its completion carries.
    #[pyo3(signature = (dst, key, offset, data, registered = None))]
    fn write(
        &self,
        py: Python<'_>,
        dst: (String, u16),
        key: u32,
        offset: u64,
        data: &Bound<'_, PyAny>,
        registered: Option<bool>,
    ) -> PyResult<u64> {
        if let Some(e) = self.shared.failure() {
            return Err(rt(format!("the node stopped: {e}")));
        }
        let to = Peer::Udp(SocketAddrV4::new(parse_ip(&dst.0)?, dst.1));
        let bytes = bytes_of(data)?;
        let id = self.with(py, |c| {
            c.node.post_write_with(to, RegionKey(key), offset, bytes, WriteOptions { registered }).map_err(val)
        })?;
        self.wake();
        Ok(id)
    }

    /// The oldest notification of a remote write that landed here, or None at once.
    fn poll_notification<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.recv_q.poll().map(|c| completion(py, &c)).transpose()
    }

    /// The oldest completion of this node's own writes, or None at once.
    fn poll_completion<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.send_q.poll().map(|c| completion(py, &c)).transpose()
    }

    /// The oldest notification, waiting up to `timeout` seconds (a short spin, then the
    /// thread sleeps; the GIL is released meanwhile). None if the timeout passed.
    #[pyo3(signature = (timeout = 1.0))]
    fn wait_notification<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.wait_on(py, &self.recv_q, timeout)
    }

    /// The oldest completion of this node's writes, waiting up to `timeout` seconds
    /// (without the GIL). None if the timeout passed.
    #[pyo3(signature = (timeout = 1.0))]
    fn wait_completion<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.wait_on(py, &self.send_q, timeout)
    }

    /// Writes posted and not yet completed.
    fn pending_writes(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |c| Ok(c.node.pending_writes()))
    }

    /// The node's counters by name.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let all: Vec<(&'static str, u64)> = self.with(py, |c| Ok(c.node.counters().iter().collect()))?;
        let d = PyDict::new(py);
        for (k, v) in all {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Stop the polling thread and close this end of the link (the peer then sees it
    /// closed). Close only when no write to or from this node is still in flight.
    fn close(&mut self, py: Python<'_>) {
        py.allow_threads(|| self.shutdown());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&mut self, py: Python<'_>, _t: PyObject, _v: PyObject, _tb: PyObject) {
        self.close(py);
    }
}

/// The `linerate.rdma` submodule.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyShmNode>()?;
    m.add_class::<crate::rdma::PyRdmaNode>()?;
    Ok(())
}
