//! Python bindings of RDMA nodes on testbed hosts: register a numpy array (or any object
//! with `tobytes()`), write into a remote node's region, poll notifications and completions.
//!
//! ```python
//! import numpy as np, linerate as lr
//! net = lr.Testbed()
//! a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
//! ra, rb = a.rdma(), b.rdma()
//! key = rb.register(np.zeros(1000, dtype=np.float32))
//! ra.write(rb.address, key, 0, np.arange(10, dtype=np.float32))
//! net.run(ms=1)
//! print(rb.poll_notification(), np.frombuffer(rb.region(key), dtype=np.float32)[:10])
//! ra.write(rb.address, key, 40, np.ones(4, dtype=np.float32))
//! print(rb.wait_notification(ms=10))    # runs virtual time until it lands
//! out = np.empty(14, dtype=np.float32); rb.read_into(key, out)
//! ```
//!
//! `register(array)` registers a writable C-contiguous numpy array **in place**: the array is
//! the region, remote writes land in its memory (no copy in or out). The node keeps a
//! reference to the array (so it cannot be freed) and a view of it (so numpy refuses to
//! resize it) until `deregister(key)`, which hands the array back; after that, writes to the
//! key are NACKed `deregistered` and counted. Anything else (bytes, a read-only or
//! non-contiguous array), or `copy=True`, is copied into memory the node owns, read back with
//! `region(key)`, `read_into(key, array)` or `deregister(key)` (bytes).
//!
//! Every setting of `rdma::RdmaConfig` is a key of the `config` dict that node constructors
//! take (`config={"segment_size": 262144, "rto": 0.002, "transport": "eth"}`), with the
//! Rust field's name; `node.config()` gives them all back, and `linerate.rdma.default_config()`
//! the defaults. An unknown name or a wrong value is one `ValueError`.
//! Between processes and on live links, `linerate.rdma.ShmNode` (see `rdma_shm.rs`) runs a
//! node on its own polling thread.

use crate::{rt, val, PyTestbed};
use numpy::PyReadwriteArrayDyn;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::types::{PyBytes, PyDict};
use rdma::{
    Completion, CompletionKind, ExternalMem, Peer, RdmaConfig, RdmaNode, RegionKey, RegionMem, SettingValue, Status,
    WriteOptions,
};

/// Where a `Host.rdma()` node lives.
pub(crate) enum NodeAt {
    /// On a testbed host: the testbed polls it as it runs (virtual time).
    Testbed(Py<PyTestbed>),
    /// On a live host (TAP, shared memory): polled with the host's stack (wall-clock time).
    Live(crate::live::Shared),
}

/// An RDMA node of a host (created by `Host.rdma()`): on a testbed host the testbed polls it
/// as it runs; on a live host it is polled with the host.
#[pyclass(name = "RdmaNode", module = "linerate.rdma", unsendable)]
pub(crate) struct PyRdmaNode {
    pub(crate) at: NodeAt,
    pub(crate) idx: usize,
}

/// The bytes of `obj`: `bytes` as they are, anything else (numpy arrays, bytearray,
/// memoryview) through its `tobytes()`.
pub(crate) fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if !obj.hasattr("tobytes")? {
        let kind = obj.get_type().name()?;
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a bytes-like object or numpy array is required, not '{kind}'"
        )));
    }
    let b = obj.call_method0("tobytes")?;
    Ok(b.downcast_into::<PyBytes>().map_err(|e| val(e.to_string()))?.as_bytes().to_vec())
}

/// What keeps an array registered in place alive: the caller's array (given back by
/// `deregister`) and a flat byte view of it (whose reference makes numpy refuse to resize it).
struct ArrayOwner {
    array: Py<PyAny>,
    _view: Py<PyAny>,
}

/// `data` as region memory: a writable C-contiguous numpy array in place (unless `copy`),
/// anything else copied.
pub(crate) fn region_mem(data: &Bound<'_, PyAny>, copy: bool) -> PyResult<RegionMem> {
    let in_place = !copy
        && data.hasattr("__array_interface__")?
        && data
            .getattr("flags")
            .and_then(|f| Ok(f.getattr("c_contiguous")?.is_truthy()? && f.getattr("writeable")?.is_truthy()?))?;
    if !in_place {
        return Ok(RegionMem::Owned(bytes_of(data)?.into_boxed_slice()));
    }
    let view = data.call_method1("view", ("u1",))?.call_method1("reshape", (-1,))?;
    let arr = view.downcast::<numpy::PyArray1<u8>>().map_err(|e| val(e.to_string()))?;
    let len = numpy::PyUntypedArrayMethods::len(arr);
    let ptr = if len == 0 {
        std::ptr::NonNull::dangling()
    } else {
        std::ptr::NonNull::new(numpy::PyArrayMethods::data(arr)).ok_or_else(|| val("the array has no memory"))?
    };
    let owner = ArrayOwner { array: data.clone().unbind(), _view: view.clone().unbind() };
    // SAFETY: the array's memory is `len` writable bytes at `ptr`; the owner holds the array
    // (it is not freed) and a view of it (numpy refuses to resize or reallocate an array
    // another array references) until the region is deregistered or the node dropped.
    Ok(RegionMem::External(unsafe { ExternalMem::new(ptr, len, Box::new(owner)) }))
}

/// Register `mem` on `node`.
pub(crate) fn register_mem(node: &mut RdmaNode, mem: RegionMem) -> PyResult<u32> {
    match mem {
        RegionMem::Owned(b) => node.register(b),
        RegionMem::External(e) => node.register_mem(e),
    }
    .map(|k| k.0)
    .map_err(val)
}

/// What `deregister` hands back: the caller's array for one registered in place, else the
/// final bytes.
pub(crate) fn deregistered(py: Python<'_>, mem: RegionMem) -> PyObject {
    match mem {
        RegionMem::External(e) => match e.into_owner().downcast::<ArrayOwner>() {
            Ok(o) => o.array.clone_ref(py),
            Err(_) => py.None(),
        },
        RegionMem::Owned(b) => PyBytes::new(py, &b).into_any().unbind(),
    }
}

/// A configuration from a dict of settings (`RdmaConfig`'s field names) over the defaults,
/// with `port` (if given) as the UDP port unless the dict sets `transport`.
pub(crate) fn config_from(cfg: Option<&Bound<'_, PyDict>>, port: Option<u16>) -> PyResult<RdmaConfig> {
    let mut c = RdmaConfig::default();
    if let Some(p) = port {
        c = c.udp(p);
    }
    for (k, v) in cfg.into_iter().flat_map(|d| d.iter()) {
        let name: String = k.extract().map_err(|_| val("setting names are strings"))?;
        let value = if v.is_none() {
            SettingValue::Unset
        } else if let Ok(s) = v.extract::<String>() {
            SettingValue::Text(s)
        } else if v.is_instance_of::<pyo3::types::PyBool>() {
            return Err(val(format!("setting {name} takes a number, not a bool")));
        } else if let Ok(i) = v.extract::<u64>() {
            SettingValue::Int(i)
        } else if let Ok(f) = v.extract::<f64>() {
            SettingValue::Secs(f)
        } else {
            return Err(val(format!("setting {name}: {} is not a number, string or None", v.repr()?)));
        };
        c.set(&name, value).map_err(val)?;
    }
    c.validate().map_err(val)?;
    Ok(c)
}

/// A configuration as a dict of its settings (durations in seconds, `None` for unset).
pub(crate) fn config_dict<'py>(py: Python<'py>, c: &RdmaConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in c.settings() {
        match v {
            SettingValue::Int(i) => d.set_item(name, i)?,
            SettingValue::Secs(s) => d.set_item(name, s)?,
            SettingValue::Unset => d.set_item(name, py.None())?,
            SettingValue::Text(t) => d.set_item(name, t)?,
        }
    }
    Ok(d)
}

/// The default settings (`linerate.rdma.default_config()`).
#[pyfunction]
pub(crate) fn default_config(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    config_dict(py, &RdmaConfig::default())
}

/// The names of every setting, in the order of the Rust struct (`linerate.rdma.SETTINGS`).
pub(crate) fn setting_names(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, RdmaConfig::setting_names().collect::<Vec<_>>())
}

/// A peer from Python: `(ip, port)` (or IPv6's 4-tuple) for UDP nodes, a MAC string for
/// raw-Ethernet ones.
pub(crate) fn peer_of(dst: &Bound<'_, PyAny>) -> PyResult<Peer> {
    if dst.is_instance_of::<pyo3::types::PyTuple>() {
        return Ok(Peer::Udp(crate::address::from_py(dst)?));
    }
    let mac: String = dst.extract().map_err(|_| val("dst must be (ip, port) or a MAC address string"))?;
    Ok(Peer::Eth(mac.parse().map_err(|_| val(format!("{mac:?} is not a MAC address")))?))
}

/// A node's address for Python: `(ip, port)` over UDP, the MAC string over raw Ethernet.
pub(crate) fn address_of(py: Python<'_>, p: Peer) -> PyResult<PyObject> {
    Ok(match p {
        Peer::Udp(a) => crate::address::to_py(py, a)?,
        Peer::Eth(m) => m.to_string().into_pyobject(py)?.into_any().unbind(),
    })
}

/// A region lookup handed to [`read_region_into`]: it calls the copy with the region's
/// bytes (`None`: no such region) while it holds whatever guards them.
pub(crate) type RegionCopy<'a> = &'a mut dyn FnMut(Option<&[u8]>) -> PyResult<()>;

/// Copy a region's bytes from `offset` into `out`, a writable contiguous numpy array of any
/// dtype, filling all of it. `with_region` looks the region up and calls the copy.
pub(crate) fn read_region_into(
    out: &Bound<'_, PyAny>,
    key: u32,
    offset: usize,
    with_region: impl FnOnce(RegionCopy<'_>) -> PyResult<()>,
) -> PyResult<()> {
    let bytes =
        out.call_method1("view", ("u1",)).map_err(|e| val(format!("out must be a contiguous numpy array: {e}")))?;
    let mut arr: PyReadwriteArrayDyn<'_, u8> = bytes.extract()?;
    let dst = arr.as_slice_mut().map_err(|_| val("out must be a contiguous numpy array"))?;
    with_region(&mut |src| {
        let src = src.ok_or_else(|| val(format!("no region {key:#x}")))?;
        match offset.checked_add(dst.len()) {
            Some(end) if end <= src.len() => {
                dst.copy_from_slice(&src[offset..end]);
                Ok(())
            }
            _ => Err(val(format!(
                "{} bytes at offset {offset} do not fit region {key:#x} of {} bytes",
                dst.len(),
                src.len()
            ))),
        }
    })
}

/// A completion as a Python dict.
pub(crate) fn completion<'py>(py: Python<'py>, c: &Completion) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let kind = match c.kind {
        CompletionKind::Send => "send",
        CompletionKind::RecvRegistered => "recv_registered",
        CompletionKind::RecvNotified => "recv_notified",
        // A kind added to rdma later and not named here yet.
        _ => "other",
    };
    let status = match c.status {
        Status::Ok => "ok".to_string(),
        Status::Nacked(r) => format!("nacked:{r}"),
        Status::TimedOut => "timed_out".into(),
        Status::SendFailed => "send_failed".into(),
        other => format!("{other:?}").to_lowercase(),
    };
    d.set_item("kind", kind)?;
    d.set_item("status", status)?;
    d.set_item("op_id", c.op_id)?;
    d.set_item("write_id", c.write_id())?;
    d.set_item("segment", c.segment_index())?;
    d.set_item("last_segment", c.last_segment)?;
    d.set_item("peer", c.peer.to_string())?;
    d.set_item("key", c.key.0)?;
    d.set_item("offset", c.offset)?;
    d.set_item("len", c.len)?;
    Ok(d)
}

impl PyRdmaNode {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut rdma::RdmaNode) -> PyResult<T>) -> PyResult<T> {
        match &self.at {
            NodeAt::Testbed(tb) => {
                let mut t = tb.try_borrow_mut(py).map_err(rt)?;
                let node = t.rdma.get_mut(self.idx).map(|(_, n)| n).ok_or_else(|| rt("no such RDMA node"))?;
                f(node)
            }
            NodeAt::Live(l) => {
                let mut l = crate::live::lock(py, l)?;
                let h = l.as_mut().ok_or_else(|| rt("the host is closed"))?;
                f(h.rdma.get_mut(self.idx).ok_or_else(|| rt("no such RDMA node"))?)
            }
        }
    }

    /// The node's address as peers name it.
    fn peer(&self, py: Python<'_>) -> PyResult<Peer> {
        match &self.at {
            NodeAt::Testbed(tb) => {
                let t = tb.try_borrow_mut(py).map_err(rt)?;
                let (id, node) = t.rdma.get(self.idx).ok_or_else(|| rt("no such RDMA node"))?;
                Ok(node.address(t.tb.host_ref(*id)))
            }
            NodeAt::Live(l) => {
                let l = crate::live::lock(py, l)?;
                let h = l.as_ref().ok_or_else(|| rt("the host is closed"))?;
                Ok(h.rdma.get(self.idx).ok_or_else(|| rt("no such RDMA node"))?.address(&h.stack))
            }
        }
    }

    /// Run the network until `take` yields a completion or `ms` passed (virtual time on a
    /// testbed, wall-clock time on a live host).
    fn wait_on(
        &self,
        py: Python<'_>,
        ms: f64,
        take: impl Fn(&rdma::RdmaNode) -> Option<Completion>,
    ) -> PyResult<Option<Completion>> {
        let limit = crate::duration_ms(ms)?;
        match &self.at {
            NodeAt::Testbed(tb) => {
                let mut t = tb.try_borrow_mut(py).map_err(rt)?;
                let end = t.tb.now() + limit;
                loop {
                    let node = t.rdma.get(self.idx).map(|(_, n)| n).ok_or_else(|| rt("no such RDMA node"))?;
                    if let Some(c) = take(node) {
                        return Ok(Some(c));
                    }
                    if t.tb.now() >= end {
                        return Ok(None);
                    }
                    t.step()?;
                }
            }
            NodeAt::Live(l) => {
                let mut got = None;
                let idx = self.idx;
                crate::host::poll_until(py, l, limit, |h| {
                    got = h.rdma.get(idx).and_then(&take);
                    got.is_some()
                })?;
                Ok(got)
            }
        }
    }
}

#[pymethods]
impl PyRdmaNode {
    /// `(ip, port)` that peers write to (over raw Ethernet: the MAC address).
    #[getter]
    fn address(&self, py: Python<'_>) -> PyResult<PyObject> {
        let p = self.peer(py)?;
        address_of(py, p)
    }

    /// Every setting of the node's configuration by name.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.with(py, |n| Ok(n.config().clone()))?;
        config_dict(py, &c)
    }

    /// Register `data` as a region; returns its key. A writable C-contiguous numpy array is
    /// registered in place (remote writes land in it) unless `copy`; anything else is copied.
    #[pyo3(signature = (data, copy = false))]
    fn register(&self, py: Python<'_>, data: &Bound<'_, PyAny>, copy: bool) -> PyResult<u32> {
        let mem = region_mem(data, copy)?;
        self.with(py, |n| register_mem(n, mem))
    }

    /// The current bytes of region `key` (`np.frombuffer(..., dtype)` gives the array back).
    fn region<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(py, |n| {
            n.region(RegionKey(key)).map(|r| r.to_vec()).ok_or_else(|| val(format!("no region {key:#x}")))
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Copy region `key` from byte `offset` into `out`, a writable contiguous numpy array
    /// of any dtype, filling it whole.
    #[pyo3(signature = (key, out, offset = 0))]
    fn read_into(&self, py: Python<'_>, key: u32, out: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
        read_region_into(out, key, offset, |copy| self.with(py, |n| copy(n.region(RegionKey(key)).as_deref())))
    }

    /// Deregister region `key`: returns the array registered in place (now the caller's
    /// alone), or a copied region's final bytes. Writes still in flight are refused.
    fn deregister(&self, py: Python<'_>, key: u32) -> PyResult<PyObject> {
        let mem = self.with(py, |n| n.deregister_mem(RegionKey(key)).map_err(val))?;
        Ok(deregistered(py, mem))
    }

    /// Write `data` into region `key` of the node at `dst` = `(ip, port)` (a MAC string over
    /// raw Ethernet), at `offset`. `registered`: force a registered (True) or unregistered
    /// (False) op; None decides by size. Returns the write id its completion carries.
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
        let to = peer_of(dst)?;
        let bytes = bytes_of(data)?;
        self.with(py, |n| {
            n.post_write_with(to, RegionKey(key), offset, bytes, WriteOptions { registered }).map_err(val)
        })
    }

    /// The oldest notification of a remote write that landed here, or None.
    fn poll_notification<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let c = self.with(py, |n| Ok(n.notifications().poll()))?;
        c.map(|c| completion(py, &c)).transpose()
    }

    /// The oldest completion of this node's own writes, or None.
    fn poll_completion<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let c = self.with(py, |n| Ok(n.completions().poll()))?;
        c.map(|c| completion(py, &c)).transpose()
    }

    /// The oldest notification, running the network for up to `timeout` seconds (virtual
    /// time on a testbed, wall-clock time on a live host) until one arrives; None if none did.
    /// `ms=` (milliseconds) is the deprecated old keyword.
    #[pyo3(signature = (timeout = 1.0, ms = None))]
    fn wait_notification<'py>(
        &self,
        py: Python<'py>,
        timeout: f64,
        ms: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let ms = crate::seconds_or_old_ms(py, timeout, ms, "ms")?;
        let c = self.wait_on(py, ms, |n| n.notifications().poll())?;
        c.map(|c| completion(py, &c)).transpose()
    }

    /// The oldest completion of this node's writes, running the network for up to
    /// `timeout` seconds until one arrives; None if none did. `ms=` is deprecated.
    #[pyo3(signature = (timeout = 1.0, ms = None))]
    fn wait_completion<'py>(
        &self,
        py: Python<'py>,
        timeout: f64,
        ms: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let ms = crate::seconds_or_old_ms(py, timeout, ms, "ms")?;
        let c = self.wait_on(py, ms, |n| n.completions().poll())?;
        c.map(|c| completion(py, &c)).transpose()
    }

    /// The node's counters by name.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let all: Vec<(&'static str, u64)> = self.with(py, |n| Ok(n.counters().iter().collect()))?;
        let d = PyDict::new(py);
        for (k, v) in all {
            d.set_item(k, v)?;
        }
        Ok(d)
    }
}
