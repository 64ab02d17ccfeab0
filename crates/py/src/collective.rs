//! Python bindings of the collectives, mpi4py-like on numpy arrays, for ranks started by a
//! launcher (`mpirun`, `srun`, PMI, `linerate collective launch` or `LINERATE_RANK` /
//! `LINERATE_WORLD_SIZE` by hand) on one machine's shared-memory fabric.
//!
//! ```python
//! import numpy as np, linerate as lr
//! comm = lr.collective.init()                 # rank, size and fabric from the environment
//! total = comm.allreduce(np.arange(4, dtype=np.float32), op="sum")
//! comm.allreduce_inplace(x, op="max")         # x is overwritten with the result
//! root = comm.bcast(x, root=0)
//! req = comm.iallreduce(x); ...; y = req.wait()
//! comm.barrier(); comm.finalize()
//! ```
//! `linerate.collective.kmeans(data, init)` is the single-process K-Means of `accel`;
//! `comm.kmeans(local, init)` its distributed form.
//!
//! Element types: float16, float32, float64, int32, int64 (bfloat16 has no numpy dtype).

use accel::kmeans::{lloyd, Shape};
use apps::kmeans::DistKmeans;
use collective::{f16, Communicator, Config, Element, Endpoint, ReduceOp, Request, ShmFabric};
use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2, PyReadonlyArrayDyn, PyReadwriteArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::time::Duration;

fn rt<E: std::fmt::Display>(e: E) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

fn parse_op(op: &str) -> PyResult<ReduceOp> {
    match op.to_ascii_lowercase().as_str() {
        "sum" => Ok(ReduceOp::Sum),
        "prod" => Ok(ReduceOp::Prod),
        "max" => Ok(ReduceOp::Max),
        "min" => Ok(ReduceOp::Min),
        _ => Err(PyValueError::new_err(format!("op {op:?} is not one of sum, prod, max, min"))),
    }
}

/// K-Means results to Python: (centres, labels, iterations).
type KmeansOut<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray1<u32>>, usize);

/// A started operation of one of the supported element types.
enum AnyRequest {
    F16(Request<f16>),
    F32(Request<f32>),
    F64(Request<f64>),
    I32(Request<i32>),
    I64(Request<i64>),
}

/// One rank: its own linerate stack on the shared-memory fabric and a full TCP mesh.
#[pyclass(name = "Communicator", module = "linerate.collective", unsendable)]
pub struct PyComm {
    comm: Option<Communicator<ShmFabric>>,
    rank: usize,
    size: usize,
}

impl PyComm {
    fn c(&mut self) -> PyResult<&mut Communicator<ShmFabric>> {
        self.comm.as_mut().ok_or_else(|| PyRuntimeError::new_err("the communicator was finalized"))
    }

    /// Starts an operation on `arr`, dispatching on its dtype.
    fn start(
        &mut self,
        arr: &Bound<'_, PyAny>,
        f: &dyn Fn(&mut Endpoint, Data<'_>) -> Result<AnyRequest, collective::CollectiveError>,
    ) -> PyResult<(AnyRequest, Vec<usize>)> {
        let ep = self.c()?.endpoint();
        macro_rules! try_type {
            ($t:ty, $v:ident) => {
                if let Ok(a) = arr.extract::<PyReadonlyArrayDyn<'_, $t>>() {
                    let shape = a.shape().to_vec();
                    let s = a.as_slice().map_err(|_| PyValueError::new_err("the array must be contiguous"))?;
                    return Ok((f(ep, Data::$v(s)).map_err(rt)?, shape));
                }
            };
        }
        try_type!(half::f16, F16);
        try_type!(f32, F32);
        try_type!(f64, F64);
        try_type!(i32, I32);
        try_type!(i64, I64);
        Err(PyTypeError::new_err("expected a numpy array of float16, float32, float64, int32 or int64"))
    }
}

/// Borrowed input data of one element type.
enum Data<'a> {
    F16(&'a [half::f16]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    I32(&'a [i32]),
    I64(&'a [i64]),
}

/// Applies a generic operation to whichever element type `d` holds.
macro_rules! dispatch {
    ($d:expr, |$s:ident| $body:expr) => {
        match $d {
            Data::F16(x) => {
                let $s: Vec<f16> = x.iter().map(|v| f16::from_bits(v.to_bits())).collect();
                let $s = &$s[..];
                $body.map(AnyRequest::F16)
            }
            Data::F32($s) => $body.map(AnyRequest::F32),
            Data::F64($s) => $body.map(AnyRequest::F64),
            Data::I32($s) => $body.map(AnyRequest::I32),
            Data::I64($s) => $body.map(AnyRequest::I64),
        }
    };
}

fn finish<'py, T: Element + numpy::Element>(
    py: Python<'py>,
    comm: &mut Communicator<ShmFabric>,
    r: Request<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    let v = py.allow_threads(|| comm.wait(r)).map_err(rt)?;
    let a = numpy::PyArray1::from_vec(py, v);
    if shape.iter().product::<usize>() == a.len() && !shape.is_empty() {
        Ok(a.reshape(shape.to_vec())?.into_any())
    } else {
        Ok(a.into_any())
    }
}

fn wait_any<'py>(
    py: Python<'py>,
    comm: &mut Communicator<ShmFabric>,
    r: AnyRequest,
    shape: &[usize],
) -> PyResult<Bound<'py, PyAny>> {
    match r {
        AnyRequest::F16(r) => {
            let v = py.allow_threads(|| comm.wait(r)).map_err(rt)?;
            let v: Vec<half::f16> = v.iter().map(|x| half::f16::from_bits(x.to_bits())).collect();
            let a = numpy::PyArray1::from_vec(py, v);
            if shape.iter().product::<usize>() == a.len() && !shape.is_empty() {
                Ok(a.reshape(shape.to_vec())?.into_any())
            } else {
                Ok(a.into_any())
            }
        }
        AnyRequest::F32(r) => finish(py, comm, r, shape),
        AnyRequest::F64(r) => finish(py, comm, r, shape),
        AnyRequest::I32(r) => finish(py, comm, r, shape),
        AnyRequest::I64(r) => finish(py, comm, r, shape),
    }
}

/// Copies `result` into `target` (same dtype and size).
fn copy_into(target: &Bound<'_, PyAny>, result: &Bound<'_, PyAny>) -> PyResult<()> {
    macro_rules! try_copy {
        ($t:ty) => {
            if let Ok(mut dst) = target.extract::<PyReadwriteArrayDyn<'_, $t>>() {
                let src = result.extract::<PyReadonlyArrayDyn<'_, $t>>()?;
                let d = dst.as_slice_mut().map_err(|_| PyValueError::new_err("the array must be contiguous"))?;
                let s = src.as_slice().map_err(|_| PyValueError::new_err("internal: result not contiguous"))?;
                if d.len() != s.len() {
                    return Err(PyValueError::new_err("result and array differ in size"));
                }
                d.copy_from_slice(s);
                return Ok(());
            }
        };
    }
    try_copy!(half::f16);
    try_copy!(f32);
    try_copy!(f64);
    try_copy!(i32);
    try_copy!(i64);
    Err(PyTypeError::new_err("expected a writable numpy array of a supported dtype"))
}

/// A non-blocking operation in progress.
#[pyclass(name = "Request", module = "linerate.collective", unsendable)]
pub struct PyRequest {
    comm: Py<PyComm>,
    req: Option<AnyRequest>,
    shape: Vec<usize>,
    inplace: Option<PyObject>,
}

#[pymethods]
impl PyRequest {
    /// Block until the operation completes; returns the result array (or the in-place
    /// array, now holding the result).
    fn wait<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = self.req.take().ok_or_else(|| PyRuntimeError::new_err("the request was already waited for"))?;
        let mut pc = self.comm.bind(py).borrow_mut();
        let out = wait_any(py, pc.c()?, r, &self.shape)?;
        drop(pc);
        match &self.inplace {
            Some(t) => {
                let t = t.bind(py);
                copy_into(t, &out)?;
                Ok(t.clone())
            }
            None => Ok(out),
        }
    }
}

#[pymethods]
impl PyComm {
    /// This rank.
    #[getter]
    fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    #[getter]
    fn size(&self) -> usize {
        self.size
    }

    /// All-reduce: every rank gets the element-wise reduction ("sum", "prod", "max", "min").
    #[pyo3(signature = (arr, op = "sum"))]
    fn allreduce<'py>(&mut self, py: Python<'py>, arr: &Bound<'py, PyAny>, op: &str) -> PyResult<Bound<'py, PyAny>> {
        let rop = parse_op(op)?;
        let (r, shape) = self.start(arr, &|ep, d| dispatch!(d, |s| ep.iallreduce(s, rop)))?;
        wait_any(py, self.c()?, r, &shape)
    }

    /// All-reduce into `arr` itself.
    #[pyo3(signature = (arr, op = "sum"))]
    fn allreduce_inplace<'py>(
        &mut self,
        py: Python<'py>,
        arr: &Bound<'py, PyAny>,
        op: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = self.allreduce(py, arr, op)?;
        copy_into(arr, &out)?;
        Ok(arr.clone())
    }

    /// Non-blocking all-reduce; `.wait()` returns the result (in `arr` if `inplace`).
    #[pyo3(signature = (arr, op = "sum", inplace = false))]
    fn iallreduce(slf: Bound<'_, Self>, arr: &Bound<'_, PyAny>, op: &str, inplace: bool) -> PyResult<PyRequest> {
        let rop = parse_op(op)?;
        let (r, shape) = slf.borrow_mut().start(arr, &|ep, d| dispatch!(d, |s| ep.iallreduce(s, rop)))?;
        Ok(PyRequest {
            comm: slf.clone().unbind(),
            req: Some(r),
            shape,
            inplace: inplace.then(|| arr.clone().unbind()),
        })
    }

    /// Broadcast from `root`: every rank passes an array of the same shape and gets the root's.
    #[pyo3(signature = (arr, root = 0))]
    fn bcast<'py>(&mut self, py: Python<'py>, arr: &Bound<'py, PyAny>, root: usize) -> PyResult<Bound<'py, PyAny>> {
        let (r, shape) = self.start(arr, &|ep, d| dispatch!(d, |s| ep.ibcast(s, root)))?;
        wait_any(py, self.c()?, r, &shape)
    }

    /// Broadcast into `arr` itself.
    #[pyo3(signature = (arr, root = 0))]
    fn bcast_inplace<'py>(
        &mut self,
        py: Python<'py>,
        arr: &Bound<'py, PyAny>,
        root: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = self.bcast(py, arr, root)?;
        copy_into(arr, &out)?;
        Ok(arr.clone())
    }

    /// Reduce to `root` (others get an empty array).
    #[pyo3(signature = (arr, op = "sum", root = 0))]
    fn reduce<'py>(
        &mut self,
        py: Python<'py>,
        arr: &Bound<'py, PyAny>,
        op: &str,
        root: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rop = parse_op(op)?;
        let (r, shape) = self.start(arr, &|ep, d| dispatch!(d, |s| ep.ireduce(s, rop, root)))?;
        wait_any(py, self.c()?, r, &shape)
    }

    /// All-gather: the arrays of all ranks, concatenated in rank order (1-D).
    fn allgather<'py>(&mut self, py: Python<'py>, arr: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let (r, _) = self.start(arr, &|ep, d| dispatch!(d, |s| Ok(ep.iallgather(s))))?;
        wait_any(py, self.c()?, r, &[])
    }

    /// Distributed K-Means (seed 003): this rank holds `local` (its samples, a 2-D float32
    /// array); every rank passes the same `init` centres. Each iteration assigns the local
    /// samples, all-reduces the sums and counts, and updates the centres. Returns
    /// `(centres, local_labels, iterations)`.
    #[pyo3(signature = (local, init, max_iter = 300, tol = 0.0))]
    fn kmeans<'py>(
        &mut self,
        py: Python<'py>,
        local: PyReadonlyArray2<'py, f32>,
        init: PyReadonlyArray2<'py, f32>,
        max_iter: usize,
        tol: f64,
    ) -> PyResult<KmeansOut<'py>> {
        let (shape, data, init_v) = kmeans_inputs(&local, &init)?;
        let mut km = DistKmeans::new(shape, data, &init_v).map_err(val)?;
        let c = self.c()?;
        py.allow_threads(|| km.fit(c, max_iter, tol)).map_err(rt)?;
        let centres = numpy::PyArray1::from_slice(py, km.centres()).reshape([shape.k, shape.d])?;
        Ok((centres, numpy::PyArray1::from_slice(py, km.labels()), km.iterations))
    }

    /// Barrier.
    fn barrier(&mut self, py: Python<'_>) -> PyResult<()> {
        let c = self.c()?;
        py.allow_threads(|| c.barrier()).map_err(rt)
    }

    /// Wait until everything sent is acknowledged, then close (like `MPI_Finalize`).
    fn finalize(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.comm.take() {
            Some(c) => py.allow_threads(|| c.finalize()).map_err(rt),
            None => Ok(()),
        }
    }
}

/// Join the job described by the environment (rank, size, and the fabric name from
/// `LINERATE_FABRIC` unless `fabric` is given); returns once the full mesh is connected.
#[pyfunction]
#[pyo3(signature = (fabric = None, timeout = 60.0))]
fn init(py: Python<'_>, fabric: Option<String>, timeout: f64) -> PyResult<PyComm> {
    let l = collective::from_env().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let name = fabric.or(l.fabric.clone()).ok_or_else(|| {
        PyValueError::new_err(
            "no fabric name: pass fabric=... or set LINERATE_FABRIC (linerate collective launch does)",
        )
    })?;
    if l.size > 254 || !(timeout > 0.0 && timeout.is_finite()) {
        return Err(PyValueError::new_err("at most 254 ranks, and a positive timeout"));
    }
    let timeout = Duration::from_secs_f64(timeout);
    let (r, n) = (l.rank, l.size);
    let comm = py
        .allow_threads(|| -> Result<Communicator<ShmFabric>, String> {
            let fab =
                ShmFabric::join(&name, r, n, collective::fabric_link_config(), timeout).map_err(|e| e.to_string())?;
            let nc = collective::fabric_host_config(r, n).map_err(|e| e.to_string())?;
            let stack = net::Stack::new(nc, fab).map_err(|e| e.to_string())?;
            let addrs = collective::fabric_addrs(n);
            let cfg = Config { timeout, connect_timeout: timeout, ..Config::default() };
            let mut c = Communicator::new(stack, Endpoint::new(r, addrs, cfg).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            c.connect().map_err(|e| e.to_string())?;
            Ok(c)
        })
        .map_err(rt)?;
    Ok(PyComm { comm: Some(comm), rank: r, size: n })
}

fn val<E: std::fmt::Display>(e: E) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Checks and copies K-Means inputs: samples (n, d) and centres (k, d).
fn kmeans_inputs(
    data: &PyReadonlyArray2<'_, f32>,
    init: &PyReadonlyArray2<'_, f32>,
) -> PyResult<(Shape, Vec<f32>, Vec<f32>)> {
    let (ds, cs) = (data.shape(), init.shape());
    if ds[1] != cs[1] || cs[0] == 0 || ds[1] == 0 {
        return Err(PyValueError::new_err(format!("samples {ds:?} and centres {cs:?} do not fit (n, d) and (k, d)")));
    }
    let shape = Shape { d: ds[1], k: cs[0] };
    Ok((shape, data.as_array().iter().copied().collect(), init.as_array().iter().copied().collect()))
}

/// K-Means (Lloyd) on one core with `accel::kmeans` from the given initial centres: returns
/// `(centres, labels, iterations)`; stops when no centre moves more than `tol` (squared).
#[pyfunction]
#[pyo3(signature = (data, init, max_iter = 300, tol = 0.0))]
fn kmeans<'py>(
    py: Python<'py>,
    data: PyReadonlyArray2<'py, f32>,
    init: PyReadonlyArray2<'py, f32>,
    max_iter: usize,
    tol: f64,
) -> PyResult<KmeansOut<'py>> {
    let (shape, x, c) = kmeans_inputs(&data, &init)?;
    let fit = py.allow_threads(|| lloyd(shape, &x, &c, max_iter, tol)).map_err(val)?;
    let centres = numpy::PyArray1::from_vec(py, fit.centres).reshape([shape.k, shape.d])?;
    Ok((centres, numpy::PyArray1::from_vec(py, fit.labels), fit.iterations))
}

/// Covertype-shaped data (integer-valued, 54 features, seven classes) from `accel`'s seeded
/// generator, as an (n, 54) float32 array.
#[pyfunction]
#[pyo3(signature = (n, seed = 1))]
fn covertype_like(py: Python<'_>, n: usize, seed: u64) -> PyResult<Bound<'_, PyArray2<f32>>> {
    let v = py.allow_threads(|| accel::kmeans::covertype_like(n, seed));
    numpy::PyArray1::from_vec(py, v).reshape([n, accel::kmeans::COVERTYPE_D])
}

/// Registers the `collective` submodule.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyComm>()?;
    m.add_class::<PyRequest>()?;
    m.add_function(wrap_pyfunction!(init, m)?)?;
    m.add_function(wrap_pyfunction!(kmeans, m)?)?;
    m.add_function(wrap_pyfunction!(covertype_like, m)?)?;
    Ok(())
}
