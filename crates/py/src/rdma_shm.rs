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
//! The same class runs a node on an existing interface through AF_PACKET
//! (`ShmNode.on_af_packet("veth0", "10.66.0.1/24")`) or on a TAP device in a namespace of
//! its own (`ShmNode.on_tap("10.77.0.2/24")`); `linerate.rdma.Node` names it too. Every
//! constructor takes `config={...}`, the settings of `rdma::RdmaConfig` by name.
//!
//! `register(array)` registers a writable C-contiguous numpy array in place: remote writes
//! land in the array's memory as the polling thread receives them (read it after the
//! notification; the node holds the array until `deregister(key)` returns it). Other data is
//! copied into memory the node owns, read back with `region(key)` (bytes) or
//! `read_into(key, array)`.
//!
//! The thread polls without pause while writes are in flight or packets arrive, and when
//! idle parks for a growing interval (up to [`MAX_IDLE_PARK`]); posting a write wakes it.

use crate::rdma::{
    address_of, bytes_of, completion, config_dict, config_from, deregistered, peer_of, read_region_into, region_mem,
    register_mem,
};
use crate::{rt, val};
use link::shm::ShmLink;
use link::{Instant, Link, LinkConfig};
use net::{Config, Stack};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rdma::{Completion, NotifyQueue, Peer, RdmaConfig, RdmaNode, RegionKey, WriteOptions};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;
use testbed::Netns;

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
    stack: Stack<Box<dyn Link>>,
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

/// An RDMA node on a live link, driven by its own background thread: one end of a
/// shared-memory link between two processes (`ShmNode.create` / `.open`), an existing
/// interface through AF_PACKET (`ShmNode.on_af_packet`) or a TAP device in a namespace of its
/// own (`ShmNode.on_tap`). `linerate.rdma.Node` is the same class.
#[pyclass(name = "ShmNode", module = "linerate.rdma")]
pub(crate) struct PyShmNode {
    shared: Arc<Shared>,
    poller: Option<JoinHandle<()>>,
    recv_q: NotifyQueue,
    send_q: NotifyQueue,
    address: Peer,
    cfg: RdmaConfig,
    /// The namespace of a TAP node (deleted when the node closes).
    ns: Option<Netns>,
}

impl PyShmNode {
    fn start(link: Box<dyn Link>, mtu: usize, cidr: &str, rcfg: RdmaConfig, ns: Option<Netns>) -> PyResult<Self> {
        let cfg = Config::parse_host(cidr).map_err(val)?.mtu(mtu);
        let mut stack = Stack::new(cfg, link).map_err(rt)?;
        let node = RdmaNode::new(&mut stack, rcfg.clone()).map_err(val)?;
        let address = node.address(&stack);
        let (recv_q, send_q) = (node.notifications().clone(), node.completions().clone());
        let shared = Arc::new(Shared {
            core: Mutex::new(Some(Core { stack, node })),
            stop: AtomicBool::new(false),
            failed: Mutex::new(None),
            callers: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let poller = std::thread::Builder::new().name("linerate-rdma".into()).spawn(move || run(s)).map_err(rt)?;
        Ok(PyShmNode { shared, poller: Some(poller), recv_q, send_q, address, cfg: rcfg, ns })
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

    /// Stop the polling thread, then drop the stack and its end of the link (and the TAP's
    /// namespace).
    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(p) = self.poller.take() {
            p.thread().unpark();
            let _ = p.join();
        }
        self.shared.core().take();
        self.ns.take();
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
    /// `config`: settings by name over the defaults (see `default_config()`).
    #[staticmethod]
    #[pyo3(signature = (name, cidr, port = None, mtu = 1500, config = None))]
    fn create(
        py: Python<'_>,
        name: &str,
        cidr: &str,
        port: Option<u16>,
        mtu: usize,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let rcfg = config_from(config, port)?;
        let link = py.allow_threads(|| ShmLink::create(name, LinkConfig::default().mtu(mtu))).map_err(rt)?;
        let mtu = link.max_frame() - 18;
        Self::start(Box::new(link), mtu, cidr, rcfg, None)
    }

    /// Open the link `name` another process created (side B), waiting up to `timeout`
    /// seconds for it, and start a node at `cidr` on it.
    #[staticmethod]
    #[pyo3(signature = (name, cidr, port = None, timeout = 10.0, config = None))]
    fn open(
        py: Python<'_>,
        name: &str,
        cidr: &str,
        port: Option<u16>,
        timeout: f64,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let rcfg = config_from(config, port)?;
        let t = crate::duration_ms(timeout * 1e3)?;
        let link = py.allow_threads(|| ShmLink::open(name, t)).map_err(rt)?;
        let mtu = link.max_frame() - 18;
        Self::start(Box::new(link), mtu, cidr, rcfg, None)
    }

    /// A node at `cidr` on the existing interface `ifname` through AF_PACKET (needs root;
    /// the interface should have no address of its own).
    #[staticmethod]
    #[pyo3(signature = (ifname, cidr, mtu = 1500, config = None))]
    fn on_af_packet(
        py: Python<'_>,
        ifname: &str,
        cidr: &str,
        mtu: usize,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let rcfg = config_from(config, None)?;
        let link = py
            .allow_threads(|| link::packet::PacketLink::open(ifname, mtu))
            .map_err(|e| rt(format!("cannot open AF_PACKET on {ifname:?}: {e}")))?;
        Self::start(Box::new(link), mtu, cidr, rcfg, None)
    }

    /// A node at `cidr` on a TAP device in a new namespace (`namespace` names it) whose Linux
    /// side is `linux_cidr` (needs root). Linux programs in the namespace reach the node, and
    /// an AF_PACKET node there (`linerate rdma write --af-packet lrtap0`) can write into it.
    #[staticmethod]
    #[pyo3(signature = (cidr = "10.77.0.2/24", linux_cidr = "10.77.0.1/24", mtu = 1500, prefix = "lr-pyrdma", config = None))]
    fn on_tap(
        py: Python<'_>,
        cidr: &str,
        linux_cidr: &str,
        mtu: usize,
        prefix: &str,
        config: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let rcfg = config_from(config, None)?;
        let (ns, tap) = py
            .allow_threads(|| -> Result<_, String> {
                let ns = Netns::create(prefix).map_err(|e| e.to_string())?;
                let tap =
                    link::tap::create_in_netns(ns.name(), testbed::tap::TAP_IFNAME, mtu).map_err(|e| e.to_string())?;
                let dev = testbed::tap::TAP_IFNAME;
                for args in [&["addr", "add", linux_cidr, "dev", dev][..], &["link", "set", dev, "up"]] {
                    ns.ip(args).map_err(|e| e.to_string())?;
                }
                Ok((ns, tap))
            })
            .map_err(rt)?;
        Self::start(Box::new(tap), mtu, cidr, rcfg, Some(ns))
    }

    /// The namespace of a node on a TAP (None otherwise).
    #[getter]
    fn namespace(&self) -> Option<String> {
        self.ns.as_ref().map(|n| n.name().to_string())
    }

    /// `(ip, port)` that peers write to (over raw Ethernet: the MAC address).
    #[getter]
    fn address(&self, py: Python<'_>) -> PyResult<PyObject> {
        address_of(py, self.address)
    }

    /// Every setting of the node's configuration by name.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        config_dict(py, &self.cfg)
    }

    /// Why the polling thread stopped (for instance the peer closed the link), or None
    /// while it runs.
    #[getter]
    fn error(&self) -> Option<String> {
        self.shared.failure()
    }

    /// Register `data` as a region; returns its key. A writable C-contiguous numpy array is
    /// registered in place (remote writes land in it while the polling thread runs) unless
    /// `copy`; anything else is copied.
    #[pyo3(signature = (data, copy = false))]
    fn register(&self, py: Python<'_>, data: &Bound<'_, PyAny>, copy: bool) -> PyResult<u32> {
        let mem = region_mem(data, copy)?;
        self.with(py, |c| register_mem(&mut c.node, mem))
    }

    /// The current bytes of region `key` (a copy).
    fn region<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(py, |c| {
            c.node.region(RegionKey(key)).map(|r| r.to_vec()).ok_or_else(|| val(format!("no region {key:#x}")))
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Copy region `key` from byte `offset` into `out`, a writable C-contiguous numpy
    /// array of any dtype, filling it whole.
    #[pyo3(signature = (key, out, offset = 0))]
    fn read_into(&self, key: u32, out: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
        read_region_into(out, key, offset, |f| match self.shared.core_for_caller().as_ref() {
            Some(c) => f(c.node.region(RegionKey(key)).as_deref()),
            None => Err(rt("the node is closed")),
        })
    }

    /// Deregister region `key`: returns the array registered in place (now the caller's
    /// alone), or a copied region's final bytes. Writes still in flight are refused.
    fn deregister(&self, py: Python<'_>, key: u32) -> PyResult<PyObject> {
        let mem = self.with(py, |c| c.node.deregister_mem(RegionKey(key)).map_err(val))?;
        Ok(deregistered(py, mem))
    }

    /// Write `data` into region `key` of the node at `dst` = `(ip, port)`, at `offset`.
    /// `registered`: force a registered (True) or unregistered (False) op; None decides by
    /// size. Returns the write id its completion carries.
    #[pyo3(signature = (dst, key, offset, data, registered = None))]
    fn write(
        &self,
        py: Python<'_>,
        dst: &Bound<'_, PyAny>,
        key: u32,
        offset: u64,
        data: &Bound<'_, PyAny>,
        registered: Option<bool>,
    ) -> PyResult<u64> {
        if let Some(e) = self.shared.failure() {
            return Err(rt(format!("the node stopped: {e}")));
        }
        let to = peer_of(dst)?;
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
    m.add_function(wrap_pyfunction!(crate::rdma::default_config, m)?)?;
    m.add("SETTINGS", crate::rdma::setting_names(m.py())?)?;
    Ok(())
}
