//! Python bindings of SPN inference: load, generate and evaluate models on numpy batches, and
//! serve a model on a testbed host and query it over the testbed's network.
//!
//! ```python
//! import numpy as np, linerate as lr
//! m = lr.spn.Model.load("crates/spn/tests/data/nips10.json")
//! x = np.zeros((4, m.num_vars), dtype=np.uint8)
//! ll = m.log_likelihood(x)                      # float64 array, one per row
//! xf = x.astype(float); xf[0, 3] = np.nan       # NaN marginalises an input out
//! ll = m.log_likelihood(xf)
//! net = lr.Testbed(); a, b = net.host("10.0.0.1/24"), net.host("10.0.0.2/24")
//! svc = lr.spn.Service(b, m, port=5005)
//! same = svc.query(a, x)                        # over UDP on the testbed
//! ```

use crate::host::PyHost;
use crate::PyTestbed;
use apps::spn_service::record::Status;
use apps::spn_service::{SpnClient, SpnService, SpnServiceConfig};
use numpy::{PyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use spn::{CompiledSpn, Evaluator, GeneratorConfig, LeafKind, Missing, Output, Spn};
use std::sync::Arc;
use testbed::HostId;

fn val<E: std::fmt::Display>(e: E) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn rt<E: std::fmt::Display>(e: E) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// A validated, compiled Sum-Product Network.
#[pyclass(name = "Model", module = "linerate.spn", frozen)]
pub struct PyModel {
    compiled: Arc<CompiledSpn>,
}

impl PyModel {
    fn new(spn: Spn) -> PyResult<PyModel> {
        Ok(PyModel { compiled: CompiledSpn::new(spn).map_err(val)? })
    }

    /// Evaluate a 2-D array (uint8 with an optional boolean mask, or anything numpy turns into
    /// float64 with NaN = missing).
    fn eval<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        mask: Option<PyReadonlyArray2<'py, bool>>,
        output: Output,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let nv = self.compiled.num_vars();
        let shape_err = |shape: &[usize]| {
            PyValueError::new_err(format!("expected an array of shape (n, {nv}), got shape {shape:?}"))
        };
        if let Ok(a) = x.extract::<PyReadonlyArray2<'py, u8>>() {
            if a.shape()[1] != nv {
                return Err(shape_err(a.shape()));
            }
            let n = a.shape()[0];
            let bytes: Vec<u8> = a.as_array().iter().copied().collect();
            let flags: Option<Vec<bool>> = match &mask {
                Some(m) if m.shape() != a.shape() => {
                    return Err(PyValueError::new_err(format!(
                        "mask has shape {:?}, the inputs {:?}",
                        m.shape(),
                        a.shape()
                    )))
                }
                Some(m) => Some(m.as_array().iter().copied().collect()),
                None => None,
            };
            let mut out = vec![0.0; n];
            let model = Arc::clone(&self.compiled);
            py.allow_threads(|| {
                let missing = flags.as_deref().map_or(Missing::None, Missing::Flags);
                spn::eval_u8_parallel(&model, &bytes, missing, &mut out, output, threads).map(|_| ())
            })
            .map_err(val)?;
            return Ok(PyArray1::from_vec(py, out));
        }
        if mask.is_some() {
            return Err(PyValueError::new_err(
                "a mask goes with uint8 inputs; with float inputs mark missing values as NaN",
            ));
        }
        let np = py.import("numpy")?;
        let arr = np.call_method1("asarray", (x, "float64"))?;
        let a: PyReadonlyArray2<'py, f64> =
            arr.extract().map_err(|_| PyValueError::new_err(format!("expected a 2-D array of shape (n, {nv})")))?;
        if a.shape()[1] != nv {
            return Err(shape_err(a.shape()));
        }
        let values: Vec<f64> = a.as_array().iter().copied().collect();
        let mut out = vec![0.0; a.shape()[0]];
        let model = Arc::clone(&self.compiled);
        py.allow_threads(|| Evaluator::new(model).eval_f64(&values, &mut out, output)).map_err(val)?;
        Ok(PyArray1::from_vec(py, out))
    }
}

#[pymethods]
impl PyModel {
    /// Load a model file: linerate JSON or SPFlow's text export.
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<PyModel> {
        match spn::load(&path) {
            Ok(s) => PyModel::new(s),
            Err(spn::SpnError::Io { path, source }) => Err(PyOSError::new_err(format!("{path}: {source}"))),
            Err(e) => Err(val(e)),
        }
    }

    /// A model from JSON (or SPFlow text) held in a string.
    #[staticmethod]
    fn parse(text: &str) -> PyResult<PyModel> {
        PyModel::new(spn::load::parse(text).map_err(val)?)
    }

    /// A random benchmark model with `vars` 8-bit inputs: `shape` "nips" is shallow and
    /// NIPS-like (about 630 nodes per input), "learnspn" deep like the models LearnSPN learns
    /// (chains of sums over products; 630 nodes per input up to 10, then 60 more per input),
    /// unless `nodes` is given; `leaves` is histogram, categorical, gaussian, bernoulli or mixed.
    #[staticmethod]
    #[pyo3(signature = (vars = 10, seed = 1, nodes = None, leaves = "histogram", shape = "nips"))]
    fn generate(vars: usize, seed: u64, nodes: Option<usize>, leaves: &str, shape: &str) -> PyResult<PyModel> {
        let kind = match leaves {
            "histogram" => LeafKind::Histogram,
            "categorical" => LeafKind::Categorical,
            "gaussian" => LeafKind::Gaussian,
            "bernoulli" => LeafKind::Bernoulli,
            "mixed" => LeafKind::Mixed,
            other => {
                return Err(PyValueError::new_err(format!(
                    "leaves={other:?}: expected histogram, categorical, gaussian, bernoulli or mixed"
                )))
            }
        };
        let base = match shape {
            "nips" => GeneratorConfig::nips(vars, seed),
            "learnspn" => GeneratorConfig::learnspn(vars, seed),
            other => return Err(PyValueError::new_err(format!("shape={other:?}: expected nips or learnspn"))),
        };
        let cfg = GeneratorConfig { target_nodes: nodes.unwrap_or(base.target_nodes), leaves: kind, ..base };
        PyModel::new(spn::generate(&cfg).map_err(val)?)
    }

    /// The model in linerate's JSON format.
    fn to_json(&self) -> String {
        spn::to_json_string(self.compiled.spn())
    }

    /// Save the model in linerate's JSON format.
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        spn::save_json(self.compiled.spn(), path).map_err(val)
    }

    /// Number of inputs per vector.
    #[getter]
    fn num_vars(&self) -> usize {
        self.compiled.num_vars()
    }

    /// The model's name.
    #[getter]
    fn name(&self) -> String {
        self.compiled.spn().name().to_string()
    }

    /// Size and shape: nodes, sums, products, leaves, edges, depth.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.compiled.spn().stats();
        let d = PyDict::new(py);
        for (k, v) in [
            ("vars", s.vars),
            ("nodes", s.nodes),
            ("sums", s.sums),
            ("products", s.products),
            ("leaves", s.leaves),
            ("edges", s.edges),
            ("depth", s.depth),
        ] {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Log-likelihood of each row of `x` (shape (n, num_vars)): uint8 rows with an optional
    /// boolean `mask` (True = missing), or float rows with NaN = missing. Returns float64 (n,).
    #[pyo3(signature = (x, mask = None, threads = 1))]
    fn log_likelihood<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        mask: Option<PyReadonlyArray2<'py, bool>>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        self.eval(py, x, mask, Output::LogLikelihood, threads)
    }

    /// Likelihood of each row of `x` (as `log_likelihood`).
    #[pyo3(signature = (x, mask = None, threads = 1))]
    fn likelihood<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        mask: Option<PyReadonlyArray2<'py, bool>>,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        self.eval(py, x, mask, Output::Likelihood, threads)
    }

    fn __repr__(&self) -> String {
        let s = self.compiled.spn().stats();
        format!("<linerate.spn.Model {:?}: {} inputs, {} nodes>", self.compiled.spn().name(), s.vars, s.nodes)
    }
}

/// The SPN service bound to a UDP port of a testbed host.
#[pyclass(name = "Service", module = "linerate.spn", unsendable)]
pub struct PyService {
    tb: Py<PyTestbed>,
    id: HostId,
    service: SpnService,
}

#[pymethods]
impl PyService {
    /// Serve `model` on UDP `port` of testbed host `host`, evaluating inline (`workers=0`) or
    /// on that many worker threads.
    #[new]
    #[pyo3(signature = (host, model, port = 5005, workers = 0))]
    fn new(
        py: Python<'_>,
        host: PyRef<'_, PyHost>,
        model: PyRef<'_, PyModel>,
        port: u16,
        workers: usize,
    ) -> PyResult<PyService> {
        let (tb, id) = host.testbed_parts(py)?;
        let cfg = SpnServiceConfig { workers, ..Default::default() };
        let service = {
            let mut t = tb.try_borrow_mut(py).map_err(rt)?;
            SpnService::bind_udp(t.tb.host(id), port, Arc::clone(&model.compiled), cfg).map_err(val)?
        };
        Ok(PyService { tb, id, service })
    }

    /// Serve what arrived (call after stepping the testbed); returns records handled.
    fn serve(&mut self, py: Python<'_>) -> PyResult<usize> {
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        self.service.serve(t.tb.host(self.id)).map_err(rt)
    }

    /// The service's counters as a dict.
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.service.counters().fields() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Most vectors one request carries on this testbed's MTU.
    #[getter]
    fn max_vectors(&self) -> usize {
        self.service.max_vectors()
    }

    /// Send the rows of `x` (uint8, shape (n, num_vars); `mask` True = missing) from testbed
    /// host `client` to this service in requests of at most `vectors_per_request` vectors,
    /// step the testbed until every answer is in, and return them in order (float64 (n,)).
    /// Raises RuntimeError on an error record or if answers are missing after `timeout_ms` of
    /// virtual time.
    #[pyo3(signature = (client, x, mask = None, log = true, vectors_per_request = None, window = 8, timeout_ms = 1000.0))]
    #[allow(clippy::too_many_arguments)]
    fn query<'py>(
        &mut self,
        py: Python<'py>,
        client: PyRef<'_, PyHost>,
        x: PyReadonlyArray2<'py, u8>,
        mask: Option<PyReadonlyArray2<'py, bool>>,
        log: bool,
        vectors_per_request: Option<usize>,
        window: usize,
        timeout_ms: f64,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let nv = self.service.model().num_vars();
        if x.shape()[1] != nv {
            return Err(PyValueError::new_err(format!(
                "expected an array of shape (n, {nv}), got shape {:?}",
                x.shape()
            )));
        }
        let (client_tb, client_id) = client.testbed_parts(py)?;
        if !client_tb.is(&self.tb) {
            return Err(PyValueError::new_err("the client host belongs to another testbed"));
        }
        let n = x.shape()[0];
        let bytes: Vec<u8> = x.as_array().iter().copied().collect();
        let masks: Option<Vec<u8>> = match &mask {
            Some(m) if m.shape() != x.shape() => {
                return Err(PyValueError::new_err(format!(
                    "mask has shape {:?}, the inputs {:?}",
                    m.shape(),
                    x.shape()
                )))
            }
            Some(m) => Some(pack_masks(m.as_array().iter().copied(), n, nv)),
            None => None,
        };
        let mut t = self.tb.try_borrow_mut(py).map_err(rt)?;
        let tb = &mut t.tb;
        let mtu = tb.config().mtu;
        let server = std::net::SocketAddrV4::new(tb.host_ref(self.id).ip(), self.service_port(tb)?);
        let mut c = SpnClient::udp(tb.host(client_id), server, nv).map_err(val)?;
        let per = vectors_per_request
            .unwrap_or_else(|| c.max_vectors(mtu, masks.is_some()))
            .clamp(1, c.max_vectors(mtu, masks.is_some()).max(1));
        let mask_len = nv.div_ceil(8);
        let mut values = Vec::with_capacity(n);
        let (mut next, mut answered, requests) = (0usize, 0usize, n.div_ceil(per));
        let deadline = tb.now() + crate::duration_ms(timeout_ms)?;
        let mut failure = None;
        while answered < requests && tb.now() < deadline {
            while next < n && c.outstanding() < window.max(1) {
                let end = (next + per).min(n);
                let m = masks.as_ref().map(|m| &m[next * mask_len..end * mask_len]);
                let now = tb.now();
                if !c.send(tb.host(client_id), &bytes[next * nv..end * nv], m, log, now).map_err(rt)? {
                    break;
                }
                next = end;
            }
            tb.step().map_err(rt)?;
            self.service.serve(tb.host(self.id)).map_err(rt)?;
            let now = tb.now();
            while let Some(r) = c.poll_reply(tb.host(client_id), now, &mut values).map_err(rt)? {
                answered += 1;
                if let Err(code) = r.status {
                    let why = Status::from_code(code).map_or("unknown status", |s| s.describe());
                    failure.get_or_insert(format!("request {} answered with error {code} ({why})", r.id));
                }
            }
            if failure.is_some() {
                break;
            }
        }
        let lost = c.counters.lost;
        if let apps::spn_service::Transport::Udp(h) = c.transport() {
            let _ = tb.host(client_id).udp_close(h);
        }
        if let Some(f) = failure {
            return Err(PyRuntimeError::new_err(f));
        }
        if values.len() != n {
            return Err(PyRuntimeError::new_err(format!(
                "{} of {n} answers arrived within {timeout_ms} ms ({lost} requests lost)",
                values.len()
            )));
        }
        Ok(PyArray1::from_vec(py, values))
    }
}

impl PyService {
    /// The UDP port the service listens on.
    fn service_port(&self, tb: &testbed::Testbed) -> PyResult<u16> {
        match self.service.transport() {
            apps::spn_service::Transport::Udp(h) => tb.host_ref(self.id).udp_port(h).map_err(rt),
            _ => Err(PyRuntimeError::new_err("not a UDP service")),
        }
    }
}

/// Per-row missing flags (row-major, `nv` per row) packed into per-row bitmasks.
fn pack_masks(flags: impl Iterator<Item = bool>, n: usize, nv: usize) -> Vec<u8> {
    let per = nv.div_ceil(8);
    let mut out = vec![0u8; n * per];
    for (i, f) in flags.enumerate() {
        if f {
            let (r, v) = (i / nv, i % nv);
            out[r * per + v / 8] |= 1 << (v % 8);
        }
    }
    out
}

/// Add `Model` and `Service` to `m` (meant to be the `linerate.spn` submodule).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyModel>()?;
    m.add_class::<PyService>()?;
    Ok(())
}
