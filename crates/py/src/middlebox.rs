//! Python bindings of the middlebox runtime, for prototyping unit programs in Python (Rosebud's
//! Python simulation framework): a `Runtime` stepped deterministically from Python, with queue
//! ports fed and drained from Python, and unit programs that are Python objects with the same
//! API as Rust programs (`on_packet(ctx, pkt)`, `on_message`, `on_timer`, `on_flush`, `dump`).
//!
//! ```python
//! import linerate as lr
//! class Drop443:
//!     def on_packet(self, ctx, pkt):
//!         data = ctx.data(pkt)
//!         if data[36:38] == b"\x01\xbb":
//!             ctx.drop(pkt, "port_443")
//!         else:
//!             ctx.forward(pkt, 1 - ctx.port(pkt))
//! rt = lr.middlebox.Runtime(ports=2, units=[Drop443(), "forward"], policy="hash")
//! rt.send(0, frame); rt.run(); out = rt.recv(1)
//! ```
//!
//! Python programs run on the thread that calls `step`/`run` (slow path: a GIL round per call).
//! A packet a Python program neither sends nor keeps (no reference left after `on_packet`) is
//! dropped as `not_sent`.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use link::Instant;
use middlebox::programs::{Forwarder, ToHost};
use middlebox::testlinks::{QueueHandle, QueueLink};
use middlebox::{policy, Ctx, Message, Packet, Program, Runtime, RuntimeConfig, SlotSpec, Source};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// Distinct drop reasons Python programs may name (each is leaked once to get a `&'static str`).
const MAX_REASONS: usize = 256;

/// A `&'static str` for a Python-chosen drop reason.
fn reason(s: &str) -> &'static str {
    static SEEN: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut set = SEEN.get_or_init(|| Mutex::new(HashSet::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = set.get(s) {
        return r;
    }
    if set.len() >= MAX_REASONS {
        return "python_other";
    }
    let r: &'static str = Box::leak(s.to_string().into_boxed_str());
    set.insert(r);
    r
}

/// A packet held by a Python program (the token moves out when the packet is sent).
#[pyclass(name = "Packet", module = "linerate.middlebox")]
struct PyPacket {
    pkt: Option<Packet>,
}

#[pymethods]
impl PyPacket {
    /// Frame length.
    fn __len__(&self) -> usize {
        self.pkt.as_ref().map_or(0, Packet::len)
    }

    /// The symmetric flow hash of the load balancer.
    #[getter]
    fn hash(&self) -> u32 {
        self.pkt.as_ref().map_or(0, Packet::hash)
    }

    /// The ingress port (65535 for host and loopback frames).
    #[getter]
    fn port(&self) -> u16 {
        self.pkt.as_ref().map_or(u16::MAX, Packet::port)
    }

    /// True once the packet has been sent or dropped.
    #[getter]
    fn done(&self) -> bool {
        self.pkt.is_none()
    }
}

/// The unit's side of a callback; valid only during the callback that received it.
#[pyclass(name = "Ctx", module = "linerate.middlebox", unsendable)]
struct PyCtx {
    ctx: *mut Ctx<'static>,
}

impl PyCtx {
    fn ctx(&mut self) -> PyResult<&mut Ctx<'static>> {
        if self.ctx.is_null() {
            return Err(PyRuntimeError::new_err("a Ctx is only valid during the callback that received it"));
        }
        // SAFETY: the pointer is set by `call` to a `Ctx` that outlives the Python call and is
        // reset to null before `call` returns; `unsendable` keeps it on this thread.
        Ok(unsafe { &mut *self.ctx })
    }
}

fn take(pkt: &Bound<'_, PyPacket>) -> PyResult<Packet> {
    pkt.borrow_mut().pkt.take().ok_or_else(|| PyValueError::new_err("this packet was already sent or dropped"))
}

#[pymethods]
impl PyCtx {
    /// This unit's number.
    fn unit_id(&mut self) -> PyResult<usize> {
        Ok(self.ctx()?.unit_id())
    }

    /// Number of units.
    fn units(&mut self) -> PyResult<usize> {
        Ok(self.ctx()?.units())
    }

    /// Number of ports.
    fn ports(&mut self) -> PyResult<usize> {
        Ok(self.ctx()?.ports())
    }

    /// The current time in nanoseconds.
    fn now(&mut self) -> PyResult<u64> {
        Ok(self.ctx()?.now().as_nanos())
    }

    /// The ingress port of `pkt`.
    fn port(&mut self, pkt: &Bound<'_, PyPacket>) -> PyResult<u16> {
        self.ctx()?;
        Ok(pkt.borrow().port())
    }

    /// The frame of `pkt`.
    fn data<'py>(&mut self, py: Python<'py>, pkt: &Bound<'py, PyPacket>) -> PyResult<Bound<'py, PyBytes>> {
        let ctx = self.ctx()?;
        let p = pkt.borrow();
        let p = p.pkt.as_ref().ok_or_else(|| PyValueError::new_err("this packet was already sent or dropped"))?;
        Ok(PyBytes::new(py, ctx.data(p)))
    }

    /// Replace the frame of `pkt` with `data` (at most the slot size).
    fn set_data(&mut self, pkt: &Bound<'_, PyPacket>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = &*crate::buf::bytes_like(data)?;
        let ctx = self.ctx()?;
        let mut b = pkt.borrow_mut();
        let p = b.pkt.as_mut().ok_or_else(|| PyValueError::new_err("this packet was already sent or dropped"))?;
        if !ctx.set_len(p, data.len()) {
            return Err(PyValueError::new_err(format!(
                "{} bytes do not fit a slot of {}",
                data.len(),
                ctx.slot_size()
            )));
        }
        ctx.data_mut(p).copy_from_slice(data);
        Ok(())
    }

    /// Send `pkt` out of `port`.
    fn forward(&mut self, pkt: &Bound<'_, PyPacket>, port: u16) -> PyResult<()> {
        let ctx = self.ctx()?;
        ctx.forward(take(pkt)?, port);
        Ok(())
    }

    /// Drop `pkt`, counted under `reason`.
    #[pyo3(signature = (pkt, reason = "python_drop"))]
    fn drop(&mut self, pkt: &Bound<'_, PyPacket>, reason: &str) -> PyResult<()> {
        let ctx = self.ctx()?;
        ctx.discard(take(pkt)?, self::reason(reason));
        Ok(())
    }

    /// Send `pkt` to the host with `tags`.
    #[pyo3(signature = (pkt, tags = Vec::new()))]
    #[allow(clippy::wrong_self_convention)] // the Python API's name, as Ctx::to_host's
    fn to_host(&mut self, pkt: &Bound<'_, PyPacket>, tags: Vec<u32>) -> PyResult<()> {
        let ctx = self.ctx()?;
        ctx.to_host(take(pkt)?, &tags);
        Ok(())
    }

    /// Send `pkt` to unit `unit` (loopback).
    #[allow(clippy::wrong_self_convention)] // the Python API's name, as Ctx::to_unit's
    fn to_unit(&mut self, pkt: &Bound<'_, PyPacket>, unit: usize) -> PyResult<()> {
        let ctx = self.ctx()?;
        ctx.to_unit(take(pkt)?, unit);
        Ok(())
    }

    /// Broadcast a state update to every unit; False if the outbox is full.
    fn broadcast(&mut self, addr: u32, value: u64) -> PyResult<bool> {
        Ok(self.ctx()?.broadcast(addr, value))
    }

    /// Call `on_timer` at `at_ns`.
    fn set_timer(&mut self, at_ns: u64) -> PyResult<()> {
        self.ctx()?.set_timer(Instant::from_nanos(at_ns));
        Ok(())
    }

    /// Stop at a breakpoint after this callback, handing `pkt` and the unit's state to the host.
    fn trap(&mut self, pkt: &Bound<'_, PyPacket>, reason: &str) -> PyResult<()> {
        let ctx = self.ctx()?;
        let b = pkt.borrow();
        let p = b.pkt.as_ref().ok_or_else(|| PyValueError::new_err("this packet was already sent or dropped"))?;
        ctx.trap(p, reason);
        Ok(())
    }
}

/// A unit program written in Python.
struct PyProgram {
    obj: Py<PyAny>,
    name: String,
}

impl PyProgram {
    /// Call `method(ctx, *args)` if the object has it; a Python exception becomes a panic,
    /// which the unit catches and counts (`program_panics`).
    fn call<'py>(
        &self,
        py: Python<'py>,
        ctx: &mut Ctx<'_>,
        method: &str,
        args: impl FnOnce(Bound<'py, PyCtx>) -> PyResult<Bound<'py, pyo3::types::PyTuple>>,
    ) -> Option<Bound<'py, PyAny>> {
        let obj = self.obj.bind(py);
        if !obj.hasattr(method).unwrap_or(false) {
            return None;
        }
        // The pointer is only used while `ctx` is borrowed here (see `PyCtx::ctx`); the cast
        // erases the borrow's lifetime, which clippy does not see as a change of type.
        #[allow(clippy::unnecessary_cast)]
        let raw = ctx as *mut Ctx<'_> as *mut Ctx<'static>;
        let c = match Bound::new(py, PyCtx { ctx: raw }) {
            Ok(c) => c,
            Err(e) => panic!("python: {e}"),
        };
        let r = args(c.clone()).and_then(|a| obj.call_method1(method, a));
        c.borrow_mut().ctx = std::ptr::null_mut();
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                e.print(py);
                panic!("python {}.{method}: {e}", self.name);
            }
        }
    }
}

impl Program for PyProgram {
    fn name(&self) -> &str {
        &self.name
    }

    fn on_start(&mut self, ctx: &mut Ctx<'_>) {
        Python::with_gil(|py| {
            self.call(py, ctx, "on_start", |c| pyo3::types::PyTuple::new(py, [c]));
        });
    }

    fn on_packet(&mut self, ctx: &mut Ctx<'_>, pkt: Packet) {
        Python::with_gil(|py| {
            let p = match Bound::new(py, PyPacket { pkt: Some(pkt) }) {
                Ok(p) => p,
                Err(e) => panic!("python: {e}"),
            };
            if self.obj.bind(py).hasattr("on_packet").unwrap_or(false) {
                let p2 = p.clone();
                self.call(py, ctx, "on_packet", move |c| pyo3::types::PyTuple::new(py, [c.into_any(), p2.into_any()]));
            }
            // Neither sent nor kept by Python (only our reference is left): drop it.
            if p.get_refcnt() == 1 {
                if let Some(pkt) = p.borrow_mut().pkt.take() {
                    ctx.discard(pkt, "not_sent");
                }
            }
        });
    }

    fn on_message(&mut self, ctx: &mut Ctx<'_>, msg: &Message) {
        let from = match msg.from {
            Source::Unit(u) => i64::from(u),
            Source::Host | Source::Port(_) => -1,
        };
        Python::with_gil(|py| {
            self.call(py, ctx, "on_message", |c| {
                pyo3::types::PyTuple::new(
                    py,
                    [
                        c.into_any(),
                        msg.addr.into_pyobject(py)?.into_any(),
                        msg.value.into_pyobject(py)?.into_any(),
                        from.into_pyobject(py)?.into_any(),
                    ],
                )
            });
        });
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        Python::with_gil(|py| {
            self.call(py, ctx, "on_timer", |c| pyo3::types::PyTuple::new(py, [c]));
        });
    }

    fn on_flush(&mut self, ctx: &mut Ctx<'_>) {
        Python::with_gil(|py| {
            self.call(py, ctx, "on_flush", |c| pyo3::types::PyTuple::new(py, [c]));
        });
    }

    fn dump(&self) -> String {
        Python::with_gil(|py| {
            let obj = self.obj.bind(py);
            match obj.call_method0("dump") {
                Ok(v) => v.str().map(|s| s.to_string()).unwrap_or_default(),
                Err(_) => obj.repr().map(|s| s.to_string()).unwrap_or_default(),
            }
        })
    }
}

/// A unit program from a Python value: an object with `on_packet`, a `Firewall` or `Ids`, or
/// "forward" / "to_host".
fn program(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Box<dyn Program>> {
    if let Some(p) = crate::middlebox_apps::program(obj) {
        return Ok(p);
    }
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "forward" => Ok(Box::new(Forwarder::cross())),
            "to_host" => Ok(Box::new(ToHost)),
            _ => Err(PyValueError::new_err(format!("unknown built-in program '{s}' (forward, to_host)"))),
        };
    }
    if !obj.hasattr("on_packet")? {
        return Err(PyValueError::new_err("a unit program needs an on_packet(ctx, pkt) method"));
    }
    let name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "python".into());
    let _ = py;
    Ok(Box::new(PyProgram { obj: obj.clone().unbind(), name: format!("py:{name}") }))
}

/// A middlebox stepped from Python: queue ports, Python or built-in unit programs.
#[pyclass(name = "Runtime", module = "linerate.middlebox", unsendable)]
struct PyRuntime {
    rt: Runtime,
    ports: Vec<QueueHandle>,
    now: u64,
}

#[pymethods]
impl PyRuntime {
    /// `ports` queue ports; `units`: one program per unit (Python objects with `on_packet`, or
    /// "forward" / "to_host"); `policy`: "rr", "hash" or "least"; slots per unit and their size.
    #[new]
    #[pyo3(signature = (units, ports = 2, policy = "rr", slots = 64, slot_size = 2048))]
    fn new(
        py: Python<'_>,
        units: Vec<Bound<'_, PyAny>>,
        ports: usize,
        policy: &str,
        slots: usize,
        slot_size: usize,
    ) -> PyResult<Self> {
        let pol = policy::by_name(policy, units.len())
            .ok_or_else(|| PyValueError::new_err(format!("unknown policy '{policy}' (rr, hash, least)")))?;
        let cfg = RuntimeConfig {
            slots: SlotSpec::new(slots, slot_size),
            stats_interval: Duration::ZERO,
            ..RuntimeConfig::default()
        };
        let mut b = Runtime::builder_with(cfg).policy_boxed(pol);
        let mut handles = Vec::new();
        for _ in 0..ports {
            let (l, h) = QueueLink::new();
            b = b.port(l);
            handles.push(h);
        }
        for u in &units {
            b = b.unit_boxed(program(py, u)?);
        }
        let rt = b.build().map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyRuntime { rt, ports: handles, now: 0 })
    }

    /// Queue `frame` to arrive on `port`.
    fn send(&self, port: usize, frame: &Bound<'_, PyAny>) -> PyResult<()> {
        let frame = &*crate::buf::bytes_like(frame)?;
        self.ports.get(port).ok_or_else(|| PyValueError::new_err(format!("no port {port}")))?.send(frame);
        Ok(())
    }

    /// Frames that left by `port`.
    fn recv<'py>(&self, py: Python<'py>, port: usize) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let h = self.ports.get(port).ok_or_else(|| PyValueError::new_err(format!("no port {port}")))?;
        Ok(h.recv_all().iter().map(|f| PyBytes::new(py, f)).collect())
    }

    /// Inject a frame from the host (through the load balancer).
    fn inject(&self, frame: &Bound<'_, PyAny>) -> PyResult<()> {
        let frame = &*crate::buf::bytes_like(frame)?;
        self.rt.control().inject(middlebox::HOST_PORT, frame);
        Ok(())
    }

    /// Advance the virtual clock by `ns` nanoseconds.
    fn advance(&mut self, ns: u64) {
        self.now = self.now.saturating_add(ns);
    }

    /// Run `n` deterministic steps; returns the work done.
    #[pyo3(signature = (n = 1))]
    fn step(&mut self, n: usize) -> usize {
        (0..n).map(|_| self.rt.step(Instant::from_nanos(self.now))).sum()
    }

    /// Step until nothing moves and nothing is inside (at most `max_steps`); True if quiet.
    #[pyo3(signature = (max_steps = 100_000))]
    fn run(&mut self, max_steps: usize) -> bool {
        self.rt.run_until_quiet(Instant::from_nanos(self.now), max_steps)
    }

    /// Packets units sent to the host: list of (unit, tags, frame).
    fn host<'py>(&self, py: Python<'py>) -> Vec<(usize, Vec<u32>, Bound<'py, PyBytes>)> {
        self.rt
            .control()
            .host_recv_all()
            .into_iter()
            .map(|h| (h.meta.unit, h.tags, PyBytes::new(py, &h.frame)))
            .collect()
    }

    /// Every counter as a dict (`port0.rx_frames`, `unit1.drop.not_sent`, ...).
    fn stats<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.rt.stats().flat() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Pause unit `u`.
    fn pause(&self, u: usize) -> PyResult<()> {
        self.rt.control().pause(u).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Resume unit `u`.
    fn resume(&self, u: usize) -> PyResult<()> {
        self.rt.control().resume(u).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Replace unit `u`'s program (takes effect in the next step); returns the unit's pause in seconds.
    fn swap(&mut self, py: Python<'_>, u: usize, program: &Bound<'_, PyAny>) -> PyResult<f64> {
        let p = self::program(py, program)?;
        let pending = self.rt.control().swap(u, p).map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.rt.step(Instant::from_nanos(self.now));
        let r = pending.try_take().ok_or_else(|| PyRuntimeError::new_err("the swap did not complete"))?;
        Ok(r.pause.as_secs_f64())
    }

    /// Unit `u`'s state: program, state, held packets, the program's own dump.
    fn dump<'py>(&mut self, py: Python<'py>, u: usize) -> PyResult<Bound<'py, PyDict>> {
        let pending = self.rt.control().dump(u).map_err(|e| PyValueError::new_err(e.to_string()))?;
        self.rt.step(Instant::from_nanos(self.now));
        let d = pending.try_take().ok_or_else(|| PyRuntimeError::new_err("no dump"))?;
        let out = PyDict::new(py);
        out.set_item("program", d.program)?;
        out.set_item("state", d.state.name())?;
        out.set_item("held", PyList::new(py, d.held.iter().map(|(s, f)| (*s, PyBytes::new(py, f))))?)?;
        out.set_item("program_state", d.program_state)?;
        Ok(out)
    }

    /// Traps raised since the last call: list of (unit, reason, frame).
    fn traps<'py>(&self, py: Python<'py>) -> Vec<(usize, String, Bound<'py, PyBytes>)> {
        let c = self.rt.control();
        std::iter::from_fn(|| c.trap()).map(|t| (t.meta.unit, t.reason, PyBytes::new(py, &t.frame))).collect()
    }

    /// Broadcast a state update from the host.
    fn broadcast(&self, addr: u32, value: u64) {
        self.rt.control().broadcast(addr, value);
    }
}

/// Add the middlebox classes (`Runtime`, `Ctx`, `Packet`) to `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRuntime>()?;
    m.add_class::<PyCtx>()?;
    m.add_class::<PyPacket>()?;
    crate::middlebox_apps::register(m)?;
    Ok(())
}
