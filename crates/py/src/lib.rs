//! Python bindings of linerate: testbeds of hosts, UDP and raw sockets, ping, counters, and
//! frame injection/collection for test benches (the scapy bridge lives in Python).

mod collective;
mod middlebox;
mod rdma;
mod rdma_shm;
mod rx_bypass;
mod spn;

use link::impair::Impairment;
use net::{Config, RawHandle, Recv, TcpHandle, TcpListener, UdpHandle};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use testbed::{HostId, HostOptions, Testbed, TestbedConfig};

fn rt<E: std::fmt::Display>(e: E) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

fn val<E: std::fmt::Display>(e: E) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn parse_ip(s: &str) -> PyResult<Ipv4Addr> {
    s.parse().map_err(|_| PyValueError::new_err(format!("'{s}' is not an IPv4 address")))
}

/// An in-process network of linerate hosts on one Ethernet segment, on virtual time.
#[pyclass(name = "Testbed", unsendable)]
struct PyTestbed {
    tb: Testbed,
    /// RDMA nodes of the hosts (`Host.rdma()`), polled before every step.
    rdma: Vec<(HostId, ::rdma::RdmaNode)>,
    /// Exceptions of RX-bypass callables, re-raised by `run`/`step`.
    handler_errors: rx_bypass::HandlerErrors,
}

#[pymethods]
impl PyTestbed {
    #[new]
    #[pyo3(signature = (mtu = 1500, step_us = 10))]
    fn new(mtu: usize, step_us: u64) -> PyResult<Self> {
        if !(68..=9216).contains(&mtu) {
            return Err(PyValueError::new_err(format!("mtu {mtu} is outside 68..=9216")));
        }
        let cfg = TestbedConfig { mtu, step: Duration::from_micros(step_us.max(1)), ..Default::default() };
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
    ) -> PyResult<PyHost> {
        for (name, p) in [("loss", loss), ("duplicate", duplicate), ("reorder", reorder)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(PyValueError::new_err(format!("{name} must be a probability in [0, 1], got {p}")));
            }
        }
        let mut this = slf.borrow_mut();
        let mtu = this.tb_mtu();
        let cfg = Config::parse_host(cidr).map_err(val)?.mtu(mtu);
        let id = if bench {
            this.tb.add_bench_host(cfg).map_err(rt)?
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
            this.tb.add_host_with(cfg, HostOptions { impairment, pcap }).map_err(rt)?
        };
        Ok(PyHost { tb: slf.clone().unbind(), id })
    }

    /// Advance virtual time by `ms` milliseconds, polling every host at every step.
    #[pyo3(signature = (ms = 1.0))]
    fn run(&mut self, ms: f64) -> PyResult<()> {
        let d = Duration::from_secs_f64(ms.max(0.0) / 1e3);
        if self.rdma.is_empty() {
            self.tb.run_for(d).map_err(rt)?;
        } else {
            let end = self.tb.now() + d;
            while self.tb.now() < end {
                self.poll_rdma()?;
                self.tb.step().map_err(rt)?;
            }
        }
        rx_bypass::take_error(&self.handler_errors)
    }

    /// One step: poll every host once and advance time by one step. Returns frames moved.
    fn step(&mut self) -> PyResult<usize> {
        self.poll_rdma()?;
        let n = self.tb.step().map_err(rt)?;
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

/// A host of a testbed.
#[pyclass(name = "Host", unsendable)]
struct PyHost {
    tb: Py<PyTestbed>,
    id: HostId,
}

impl PyHost {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&mut Testbed) -> PyResult<T>) -> PyResult<T> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        f(&mut t.tb)
    }
}

#[pymethods]
impl PyHost {
    /// The host's IPv4 address.
    #[getter]
    fn ip(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |tb| Ok(tb.host_ref(self.id).ip().to_string()))
    }

    /// The host's MAC address.
    #[getter]
    fn mac(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |tb| Ok(tb.host_ref(self.id).mac().to_string()))
    }

    /// Bind a UDP socket (port 0: ephemeral).
    #[pyo3(signature = (port = 0))]
    fn udp_bind(&self, py: Python<'_>, port: u16) -> PyResult<PyUdpSocket> {
        let h = self.with(py, |tb| tb.host(self.id).udp_bind(port).map_err(val))?;
        Ok(PyUdpSocket { tb: self.tb.clone_ref(py), id: self.id, h })
    }

    /// Install the RX-bypass handler of this host: `callback(slot, data)` receives the
    /// in-order payload of every connection switched to bypass (`TcpConn.set_rx_bypass`),
    /// straight from the frame, while the testbed runs. It must not call into the testbed;
    /// its exceptions are re-raised by `Testbed.run`/`step`.
    fn set_rx_handler(&self, py: Python<'_>, callback: PyObject) -> PyResult<()> {
        let errors = self.tb.try_borrow(py).map_err(rt)?.handler_errors.clone();
        self.with(py, |tb| {
            tb.host(self.id).tcp_set_rx_handler(rx_bypass::handler(callback, errors));
            Ok(())
        })
    }

    /// A new watcher of TCP connection activity; returns its number for `take_activity`.
    fn tcp_watch(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |tb| tb.host(self.id).tcp_watch().map(|w| w.index()).map_err(rt))
    }

    /// The slots (`TcpConn.slot`) of the connections with activity since watcher `watch`
    /// last looked: a segment was processed for them, or they ended.
    fn take_activity(&self, py: Python<'_>, watch: usize) -> PyResult<Vec<u32>> {
        self.with(py, |tb| {
            let mut out = Vec::new();
            let w = net::TcpWatch::from_index(watch).ok_or_else(|| val(format!("no watcher {watch}")))?;
            tb.host(self.id).tcp_take_activity(w, &mut out);
            Ok(out.into_iter().map(TcpHandle::slot).collect())
        })
    }

    /// Listen for TCP connections on `port`.
    #[pyo3(signature = (port, backlog = 128))]
    fn tcp_listen(&self, py: Python<'_>, port: u16, backlog: usize) -> PyResult<PyTcpListener> {
        let l = self.with(py, |tb| tb.host(self.id).tcp_listen(port, backlog).map_err(val))?;
        Ok(PyTcpListener { tb: self.tb.clone_ref(py), id: self.id, l })
    }

    /// Open a TCP connection to `(ip, port)`; the handshake completes as the testbed runs
    /// (see `TcpConn.connected`).
    fn tcp_connect(&self, py: Python<'_>, addr: (String, u16)) -> PyResult<PyTcpConn> {
        let dst = SocketAddrV4::new(parse_ip(&addr.0)?, addr.1);
        let h = self.with(py, |tb| tb.host(self.id).tcp_connect(dst).map_err(val))?;
        Ok(PyTcpConn { tb: self.tb.clone_ref(py), id: self.id, h })
    }

    /// An RDMA node on this host, over UDP `port` (reliable connectionless writes, seed 001);
    /// the testbed polls it as it runs.
    #[pyo3(signature = (port = ::rdma::DEFAULT_UDP_PORT))]
    fn rdma(&self, py: Python<'_>, port: u16) -> PyResult<rdma::PyRdmaNode> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        let node = ::rdma::RdmaNode::new(t.tb.host(self.id), ::rdma::RdmaConfig::default().udp(port)).map_err(val)?;
        t.rdma.push((self.id, node));
        Ok(rdma::PyRdmaNode { tb: self.tb.clone_ref(py), idx: t.rdma.len() - 1 })
    }

    /// Bind a raw Ethernet socket to an EtherType.
    fn raw_bind(&self, py: Python<'_>, ethertype: u16) -> PyResult<PyRawSocket> {
        let h = self.with(py, |tb| tb.host(self.id).raw_bind(ethertype).map_err(val))?;
        Ok(PyRawSocket { tb: self.tb.clone_ref(py), id: self.id, h })
    }

    /// Ping `dst` `count` times (running the testbed); returns the round-trip times in µs of
    /// virtual time of the replies that came back within `timeout_ms` each.
    #[pyo3(signature = (dst, count = 1, size = 56, timeout_ms = 1000.0))]
    fn ping(&self, py: Python<'_>, dst: &str, count: u16, size: usize, timeout_ms: f64) -> PyResult<Vec<f64>> {
        let dst = parse_ip(dst)?;
        self.with(py, |tb| {
            let mut rtts = Vec::new();
            for seq in 0..count {
                tb.host(self.id).ping(dst, seq, size).map_err(val)?;
                let mut got = None;
                tb.run_until(Duration::from_secs_f64(timeout_ms.max(0.0) / 1e3), |tb| {
                    while let Some(r) = tb.host(self.id).ping_reply() {
                        if r.seq == seq {
                            got = Some(r.rtt);
                        }
                    }
                    got.is_some()
                })
                .map_err(rt)?;
                if let Some(rtt) = got {
                    rtts.push(rtt.as_nanos() as f64 / 1e3);
                }
            }
            Ok(rtts)
        })
    }

    /// All counters as a dict name -> value.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let values: Vec<(&'static str, u64)> =
            self.with(py, |tb| Ok(tb.host_ref(self.id).counters().iter().collect()))?;
        for (k, v) in values {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The ARP cache as a dict ip -> mac.
    fn arp_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let entries = self.with(py, |tb| Ok(tb.host_ref(self.id).arp_entries()))?;
        for (ip, mac) in entries {
            d.set_item(ip.to_string(), mac.to_string())?;
        }
        Ok(d)
    }

    /// Feed one frame straight into the host's receive path.
    fn inject(&self, py: Python<'_>, frame: &[u8]) -> PyResult<()> {
        self.with(py, |tb| tb.host(self.id).inject(frame).map_err(rt))
    }

    /// Feed many frames: `data` holds them back to back, `lengths` gives each one's size.
    fn inject_many(&self, py: Python<'_>, data: &[u8], lengths: Vec<usize>) -> PyResult<()> {
        if lengths.iter().sum::<usize>() != data.len() {
            return Err(PyValueError::new_err("the lengths do not add up to the size of data"));
        }
        self.with(py, |tb| {
            let mut off = 0;
            for (i, n) in lengths.into_iter().enumerate() {
                tb.host(self.id).inject(&data[off..off + n]).map_err(rt)?;
                off += n;
                if i % 256 == 255 {
                    tb.step().map_err(rt)?;
                    if tb.is_bench(self.id) {
                        tb.bench_collect(self.id).map_err(rt)?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Feed `count` byte mutations (flips, random bytes, truncation, extension) of the
    /// `seeds` frames into the receive path, deterministically from `seed`.
    #[pyo3(signature = (seeds, count, seed = 1))]
    fn inject_mutations(&self, py: Python<'_>, seeds: Vec<Vec<u8>>, count: usize, seed: u64) -> PyResult<()> {
        if seeds.is_empty() {
            return Err(PyValueError::new_err("at least one seed frame is needed"));
        }
        self.with(py, |tb| {
            let mut rng = seed | 1;
            let mut frame = Vec::with_capacity(16384);
            for i in 0..count {
                testbed::mutate::mutate(&seeds[i % seeds.len()], &mut rng, &mut frame);
                tb.host(self.id).inject(&frame).map_err(rt)?;
                if i % 256 == 255 {
                    tb.step().map_err(rt)?;
                    if tb.is_bench(self.id) {
                        tb.bench_collect(self.id).map_err(rt)?;
                    }
                }
            }
            Ok(())
        })
    }

    /// Put a frame on the wire towards a bench host (it is received at the next step).
    fn send_frame(&self, py: Python<'_>, frame: &[u8]) -> PyResult<bool> {
        self.with(py, |tb| tb.bench_inject(self.id, frame).map_err(rt))
    }

    /// Every frame a bench host has sent since the last call.
    fn collect<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let frames = self.with(py, |tb| tb.bench_collect(self.id).map_err(rt))?;
        Ok(frames.iter().map(|f| PyBytes::new(py, f)).collect())
    }
}

/// A UDP socket of a testbed host.
#[pyclass(name = "UdpSocket", unsendable)]
struct PyUdpSocket {
    tb: Py<PyTestbed>,
    id: HostId,
    h: UdpHandle,
}

#[pymethods]
impl PyUdpSocket {
    /// The local port.
    #[getter]
    fn port(&self, py: Python<'_>) -> PyResult<u16> {
        self.tb.try_borrow(py).map_err(rt)?.tb.host_ref(self.id).udp_port(self.h).map_err(val)
    }

    /// ICMP errors received about datagrams this socket sent.
    #[getter]
    fn icmp_errors(&self, py: Python<'_>) -> PyResult<u64> {
        self.tb.try_borrow(py).map_err(rt)?.tb.host_ref(self.id).udp_icmp_errors(self.h).map_err(val)
    }

    /// Send a datagram to `(ip, port)`; False if the link is full (retry after `run`).
    fn send_to(&self, py: Python<'_>, data: &[u8], addr: (String, u16)) -> PyResult<bool> {
        let dst = SocketAddrV4::new(parse_ip(&addr.0)?, addr.1);
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        t.tb.host(self.id).udp_send_to(self.h, dst, data).map_err(val)
    }

    /// The next datagram as `(data, (ip, port))`, or None.
    fn recv_from<'py>(&self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyBytes>, (String, u16))>> {
        let mut buf = vec![0u8; 65536];
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        Ok(t.tb
            .host(self.id)
            .udp_recv_from(self.h, &mut buf)
            .map_err(val)?
            .map(|(n, from)| (PyBytes::new(py, &buf[..n.min(buf.len())]), (from.ip().to_string(), from.port()))))
    }

    /// Close the socket.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        t.tb.host(self.id).udp_close(self.h).map_err(val)
    }
}

/// A raw Ethernet socket of a testbed host.
#[pyclass(name = "RawSocket", unsendable)]
struct PyRawSocket {
    tb: Py<PyTestbed>,
    id: HostId,
    h: RawHandle,
}

#[pymethods]
impl PyRawSocket {
    /// Send `payload` in one frame to MAC `dst` ("aa:bb:cc:dd:ee:ff").
    fn send(&self, py: Python<'_>, dst: &str, payload: &[u8]) -> PyResult<bool> {
        let mac: wire::MacAddr =
            dst.parse().map_err(|_| PyValueError::new_err(format!("'{dst}' is not a MAC address")))?;
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        t.tb.host(self.id).raw_send(self.h, mac, payload).map_err(val)
    }

    /// The next frame's payload and sender MAC, or None.
    fn recv<'py>(&self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyBytes>, String)>> {
        let mut buf = vec![0u8; 9216];
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        Ok(t.tb
            .host(self.id)
            .raw_recv(self.h, &mut buf)
            .map_err(val)?
            .map(|(n, from)| (PyBytes::new(py, &buf[..n]), from.to_string())))
    }
}

/// A listening TCP port of a testbed host.
#[pyclass(name = "TcpListener", unsendable)]
struct PyTcpListener {
    tb: Py<PyTestbed>,
    id: HostId,
    l: TcpListener,
}

#[pymethods]
impl PyTcpListener {
    /// The next established connection, or None.
    fn accept(&self, py: Python<'_>) -> PyResult<Option<PyTcpConn>> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        Ok(t.tb.host(self.id).tcp_accept(self.l).map(|h| PyTcpConn { tb: self.tb.clone_ref(py), id: self.id, h }))
    }

    /// The port.
    #[getter]
    fn port(&self) -> u16 {
        self.l.port()
    }
}

/// A TCP connection of a testbed host.
#[pyclass(name = "TcpConn", unsendable)]
struct PyTcpConn {
    tb: Py<PyTestbed>,
    id: HostId,
    h: TcpHandle,
}

impl PyTcpConn {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut testbed::HostStack, TcpHandle) -> PyResult<T>,
    ) -> PyResult<T> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        f(t.tb.host(self.id), self.h)
    }
}

#[pymethods]
impl PyTcpConn {
    /// True once established; raises if the connection failed.
    #[getter]
    fn connected(&self, py: Python<'_>) -> PyResult<bool> {
        self.with(py, |s, h| match s.tcp_connect_result(h).map_err(val)? {
            None => Ok(false),
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(PyRuntimeError::new_err(e.to_string())),
        })
    }

    /// The connection state, e.g. "Established".
    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s, h| Ok(format!("{:?}", s.tcp_state(h).map_err(val)?)))
    }

    /// The connection's session slot (what RX-bypass handlers and activity report).
    #[getter]
    fn slot(&self) -> u32 {
        self.h.slot()
    }

    /// Switch RX bypass on (in-order payload goes to the host's handler, see
    /// `Host.set_rx_handler`; data already buffered goes first) or off.
    fn set_rx_bypass(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        self.with(py, |s, h| s.tcp_set_rx_bypass(h, on).map_err(rt))
    }

    /// Queue as much of `data` as fits; returns the number of bytes taken (back-pressure).
    fn send(&self, py: Python<'_>, data: &[u8]) -> PyResult<usize> {
        self.with(py, |s, h| s.tcp_send(h, data).map_err(rt))
    }

    /// Hand over the whole buffer; the stack segments and sends it as the windows allow.
    fn send_all(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.with(py, |s, h| s.tcp_send_transfer(h, data).map_err(rt))
    }

    /// Up to `max` received bytes; b"" at end of stream; None if nothing is ready yet.
    #[pyo3(signature = (max = 65536))]
    fn recv<'py>(&self, py: Python<'py>, max: usize) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let mut buf = vec![0u8; max.max(1)];
        let r = self.with(py, |s, h| s.tcp_recv(h, &mut buf).map_err(rt))?;
        Ok(match r {
            Recv::Data(n) => Some(PyBytes::new(py, &buf[..n])),
            Recv::Eof => Some(PyBytes::new(py, b"")),
            Recv::WouldBlock => None,
        })
    }

    /// Close our direction (FIN after queued data); receiving continues.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s, h| s.tcp_shutdown(h).map_err(rt))
    }

    /// Close and release the connection.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s, h| s.tcp_close(h).map_err(rt))
    }

    /// Abort with a reset.
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |s, h| s.tcp_abort(h).map_err(rt))
    }

    /// Per-connection statistics as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let st = self.with(py, |s, h| s.tcp_stats(h).map_err(val))?;
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

/// Names of every counter a host keeps, in display order.
#[pyfunction]
fn counter_names() -> Vec<&'static str> {
    net::Counter::ALL.iter().map(|c| c.name()).collect()
}

/// The native module.
#[pymodule]
fn _linerate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTestbed>()?;
    m.add_class::<PyHost>()?;
    m.add_class::<rdma::PyRdmaNode>()?;
    m.add_class::<PyUdpSocket>()?;
    m.add_class::<PyRawSocket>()?;
    m.add_class::<PyTcpListener>()?;
    m.add_class::<PyTcpConn>()?;
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
