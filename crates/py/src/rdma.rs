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
//! `register` copies the array into the node's own memory; remote writes land in that copy,
//! read back with `region(key)` (bytes), `read_into(key, array)` or `deregister(key)`.
//! Between processes, `linerate.rdma.ShmNode` (see `rdma_shm.rs`) does the same over a
//! shared-memory link.

use crate::{rt, val, PyTestbed};
use numpy::PyReadwriteArrayDyn;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rdma::{Completion, CompletionKind, Peer, RegionKey, Status, WriteOptions};
use std::net::SocketAddrV4;

/// An RDMA node of a testbed host (created by `Host.rdma()`); the testbed polls it as it runs.
#[pyclass(name = "RdmaNode", module = "linerate.rdma", unsendable)]
pub(crate) struct PyRdmaNode {
    pub(crate) tb: Py<PyTestbed>,
    pub(crate) idx: usize,
}

/// The bytes of `obj`: `bytes` as they are, anything else (numpy arrays, bytearray,
/// memoryview) through its `tobytes()`.
pub(crate) fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    let b = obj.call_method0("tobytes")?;
    Ok(b.downcast_into::<PyBytes>().map_err(|e| val(e.to_string()))?.as_bytes().to_vec())
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
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        let node = t.rdma.get_mut(self.idx).map(|(_, n)| n).ok_or_else(|| rt("no such RDMA node"))?;
        f(node)
    }

    /// Step the testbed until `take` yields a completion or `ms` of virtual time passed.
    fn wait_on(
        &self,
        py: Python<'_>,
        ms: f64,
        take: impl Fn(&rdma::RdmaNode) -> Option<Completion>,
    ) -> PyResult<Option<Completion>> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        let end = t.tb.now() + crate::duration_ms(ms)?;
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
}

#[pymethods]
impl PyRdmaNode {
    /// `(ip, port)` that peers write to.
    #[getter]
    fn address(&self, py: Python<'_>) -> PyResult<(String, u16)> {
        let t = self.tb.try_borrow_mut(py).map_err(rt)?;
        let (id, node) = t.rdma.get(self.idx).ok_or_else(|| rt("no such RDMA node"))?;
        match node.address(t.tb.host_ref(*id)) {
            Peer::Udp(a) => Ok((a.ip().to_string(), a.port())),
            Peer::Eth(m) => Err(rt(format!("node is on raw Ethernet ({m})"))),
        }
    }

    /// Register a copy of `data` (a numpy array, bytes, ...) as a region; returns its key.
    fn register(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u32> {
        let bytes = bytes_of(data)?;
        self.with(py, |n| n.register(bytes).map(|k| k.0).map_err(val))
    }

    /// The current bytes of region `key` (`np.frombuffer(..., dtype)` gives the array back).
    fn region<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(py, |n| {
            n.region(RegionKey(key)).map(<[u8]>::to_vec).ok_or_else(|| val(format!("no region {key:#x}")))
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Copy region `key` from byte `offset` into `out`, a writable contiguous numpy array
    /// of any dtype, filling it whole.
    #[pyo3(signature = (key, out, offset = 0))]
    fn read_into(&self, py: Python<'_>, key: u32, out: &Bound<'_, PyAny>, offset: usize) -> PyResult<()> {
        read_region_into(out, key, offset, |copy| self.with(py, |n| copy(n.region(RegionKey(key)))))
    }

    /// Deregister region `key`; returns its final bytes. Writes still in flight are refused.
    fn deregister<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.with(py, |n| n.deregister(RegionKey(key)).map_err(val))?;
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
        let ip = crate::parse_ip(&dst.0)?;
        let bytes = bytes_of(data)?;
        let to = Peer::Udp(SocketAddrV4::new(ip, dst.1));
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

    /// The oldest notification, running the testbed (virtual time) for up to `ms`
    /// milliseconds until one arrives; None if none did.
    #[pyo3(signature = (ms = 1000.0))]
    fn wait_notification<'py>(&self, py: Python<'py>, ms: f64) -> PyResult<Option<Bound<'py, PyDict>>> {
        let c = self.wait_on(py, ms, |n| n.notifications().poll())?;
        c.map(|c| completion(py, &c)).transpose()
    }

    /// The oldest completion of this node's writes, running the testbed for up to `ms`
    /// milliseconds of virtual time until one arrives; None if none did.
    #[pyo3(signature = (ms = 1000.0))]
    fn wait_completion<'py>(&self, py: Python<'py>, ms: f64) -> PyResult<Option<Bound<'py, PyDict>>> {
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
