//! Python bindings of linerate: testbeds of hosts, hosts on TAP devices and shared memory,
//! UDP/TCP/raw sockets shaped like Python's, ping, counters, frame injection/collection for
//! test benches (the scapy bridge lives in Python), middlebox, SPN, RDMA and collectives.

mod address;
mod buf;
mod collective;
mod errors;
mod host;
mod live;
mod middlebox;
mod middlebox_apps;
mod rdma;
mod rdma_shm;
mod ready;
mod rx_bypass;
mod sockets;
mod spn;

use errors::{rt, val};
use link::impair::Impairment;
use net::Config;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::net::Ipv4Addr;
use std::time::Duration;
use testbed::{HostId, HostOptions, Testbed, TestbedConfig};

fn parse_ip(s: &str) -> PyResult<Ipv4Addr> {
    s.parse().map_err(|_| PyValueError::new_err(format!("'{s}' is not an IPv4 address")))
}

/// A TCP/UDP port: `ValueError` outside 0..=65535.
fn port(p: i64) -> PyResult<u16> {
    u16::try_from(p).map_err(|_| PyValueError::new_err(format!("port {p} is outside 0..=65535")))
}

/// A timeout in milliseconds from `seconds`, or from the deprecated millisecond keyword `old`
/// (named `old_name`) if given, with a `DeprecationWarning`.
fn seconds_or_old_ms(py: Python<'_>, seconds: f64, old: Option<f64>, old_name: &str) -> PyResult<f64> {
    match old {
        None => Ok(seconds * 1e3),
        Some(ms) => {
            let msg = format!("{old_name}= (milliseconds) is deprecated: give the timeout in seconds");
            let c = std::ffi::CString::new(msg).map_err(val)?;
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyDeprecationWarning>(), &c, 1)?;
            Ok(ms)
        }
    }
}

/// A duration of `ms` milliseconds: finite, 0 up to one day.
fn duration_ms(ms: f64) -> PyResult<Duration> {
    if !(0.0..=86_400_000.0).contains(&ms) {
        return Err(val(format!("{ms} ms is outside 0..=86400000")));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

/// The smallest testbed MTU: the datagram size every IPv4 host must take.
const MIN_TESTBED_MTU: usize = 576;

/// An in-process network of linerate hosts on one Ethernet segment, on virtual time.
#[pyclass(name = "Testbed", module = "linerate", unsendable)]
pub(crate) struct PyTestbed {
    pub(crate) tb: Testbed,
    /// RDMA nodes of the hosts (`Host.rdma()`), polled before every step.
    pub(crate) rdma: Vec<(HostId, ::rdma::RdmaNode)>,
    /// Exceptions of RX-bypass callables, re-raised by `run`/`step`.
    pub(crate) handler_errors: rx_bypass::HandlerErrors,
}

#[pymethods]
impl PyTestbed {
    /// A testbed whose links carry `mtu`-byte IP packets, stepped every `step_us` µs.
    #[new]
    #[pyo3(signature = (mtu = 1500, step_us = 10))]
    fn new(mtu: usize, step_us: u64) -> PyResult<Self> {
        if !(1..=1_000_000).contains(&step_us) {
            return Err(PyValueError::new_err(format!("step_us {step_us} is outside 1..=1000000")));
        }
        if !(MIN_TESTBED_MTU..=9216).contains(&mtu) {
            return Err(PyValueError::new_err(format!(
                "mtu {mtu} is outside {MIN_TESTBED_MTU}..=9216 (every IPv4 host takes {MIN_TESTBED_MTU}-byte datagrams, RFC 791)"
            )));
        }
        let cfg = TestbedConfig { mtu, step: Duration::from_micros(step_us), ..Default::default() };
        Ok(PyTestbed { tb: Testbed::new(cfg), rdma: Vec::new(), handler_errors: Default::default() })
    }

    /// Add a host ("10.0.0.1/24"). Impairments apply between the host and the switch; with
    /// `bench=True` the host is wired to the test bench instead (inject/collect frames).
    #[pyo3(signature = (cidr, loss = 0.0, duplicate = 0.0, reorder = 0.0, delay_us = 0, seed = 1, pcap = None, bench = false))]
    #[allow(clippy::too_many_arguments)]
    fn host(
        slf: Bound<'_, Self>,
        cidr: &str,
        loss: f64,
        duplicate: f64,
        reorder: f64,
        delay_us: u64,
        seed: u64,
        pcap: Option<std::path::PathBuf>,
        bench: bool,
    ) -> PyResult<host::PyHost> {
        for (name, p) in [("loss", loss), ("duplicate", duplicate), ("reorder", reorder)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(PyValueError::new_err(format!("{name} must be a probability in [0, 1], got {p}")));
            }
        }
        let mut this = slf.borrow_mut();
        let mtu = this.tb_mtu();
        let cfg = Config::parse_host(cidr).map_err(errors::net)?.mtu(mtu);
        if let Some(other) = (0..this.tb.len()).find(|&i| this.tb.host_ref(HostId(i)).ip() == cfg.ip) {
            return Err(PyValueError::new_err(format!("host {other} of this testbed already has address {}", cfg.ip)));
        }
        let id = if bench {
            this.tb.add_bench_host(cfg).map_err(errors::testbed)?
        } else {
            let impaired = loss > 0.0 || duplicate > 0.0 || reorder > 0.0 || delay_us > 0;
            let impairment = impaired.then(|| Impairment {
                loss,
                duplicate,
                reorder,
                delay: Duration::from_micros(delay_us),
                seed,
                ..Default::default()
            });
            this.tb.add_host_with(cfg, HostOptions { impairment, pcap }).map_err(errors::testbed)?
        };
        Ok(host::PyHost { host: host::HostRef::Virtual { tb: slf.clone().unbind(), id }, kind: "testbed" })
    }

    /// Advance virtual time by `ms` milliseconds, polling every host at every step.
    #[pyo3(signature = (ms = 1.0))]
    fn run(&mut self, ms: f64) -> PyResult<()> {
        self.advance(duration_ms(ms)?)
    }

    /// One step: poll every host once and advance time by one step. Returns frames moved.
    fn step(&mut self) -> PyResult<usize> {
        self.poll_rdma()?;
        let n = self.tb.step().map_err(errors::testbed)?;
        rx_bypass::take_error(&self.handler_errors)?;
        Ok(n)
    }

    /// Virtual time in nanoseconds.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.tb.now().as_nanos()
    }
}

impl PyTestbed {
    /// Advance virtual time by `d`, polling RDMA nodes too; re-raise RX-handler exceptions.
    pub(crate) fn advance(&mut self, d: Duration) -> PyResult<()> {
        if self.rdma.is_empty() {
            self.tb.run_for(d).map_err(errors::testbed)?;
        } else {
            let end = self.tb.now() + d;
            while self.tb.now() < end {
                self.poll_rdma()?;
                self.tb.step().map_err(errors::testbed)?;
            }
        }
        rx_bypass::take_error(&self.handler_errors)
    }

    fn tb_mtu(&self) -> usize {
        self.tb.config().mtu
    }

    /// Poll every RDMA node at the current virtual time.
    fn poll_rdma(&mut self) -> PyResult<()> {
        let now = self.tb.now();
        for (id, node) in &mut self.rdma {
            node.poll(self.tb.host(*id), now).map_err(rt)?;
        }
        Ok(())
    }
}

/// Names of every counter a host keeps, in display order.
#[pyfunction]
fn counter_names() -> Vec<&'static str> {
    net::Counter::ALL.iter().map(|c| c.name()).collect()
}

/// The native module.
#[pymodule]
fn _linerate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyTestbed>()?;
    m.add_class::<host::PyHost>()?;
    m.add_class::<rdma::PyRdmaNode>()?;
    m.add_class::<sockets::PyUdpSocket>()?;
    m.add_class::<sockets::PyRawSocket>()?;
    m.add_class::<sockets::PyTcpListener>()?;
    m.add_class::<sockets::PyTcpConn>()?;
    m.add_function(wrap_pyfunction!(counter_names, m)?)?;
    let mb = PyModule::new(m.py(), "middlebox")?;
    middlebox::register(&mb)?;
    m.add_submodule(&mb)?;
    let coll = PyModule::new(m.py(), "collective")?;
    collective::register(&coll)?;
    m.add_submodule(&coll)?;
    let rd = PyModule::new(m.py(), "rdma")?;
    rdma_shm::register(&rd)?;
    m.add_submodule(&rd)?;
    let sub = PyModule::new(m.py(), "spn")?;
    spn::register(&sub)?;
    m.add_submodule(&sub)?;
    Ok(())
}
