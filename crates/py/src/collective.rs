//! Python bindings of the collectives, mpi4py-like on numpy arrays, for ranks started by a
//! launcher (`mpirun`, `srun`, PMI, `linerate collective launch` or `LINERATE_RANK` /
//! `LINERATE_WORLD_SIZE` by hand): on one machine's shared-memory fabric by default, or on a
//! real interface (`init(link="af_xdp:veth0", ip="10.9.0.2/24", root="10.9.0.1")`, or the
//! launcher variables `LINERATE_LINK`, `LINERATE_IP`, `LINERATE_ROOT_ADDR`/`MASTER_ADDR`) for
//! ranks on different machines: rank 0 listens at the root address, the others join through it.
//!
//! ```python
//! import numpy as np, linerate as lr
//! comm = lr.collective.init()                 # rank, size and fabric from the environment
//! total = comm.allreduce(np.arange(4, dtype=np.float32), op="sum")
//! comm.allreduce(x, op="max", out=x)          # in place: the result is written into x
//! root = comm.bcast(x, root=0)
//! req = comm.iallreduce(x); ...; y = req.wait()
//! part = comm.scatter(parts, root=0)          # the root splits axis 0 into size parts
//! every = comm.allgather(part)                # concatenated along axis 0, in rank order
//! comm.barrier(); comm.finalize()
//! ```
//! Every operation has a non-blocking `i*` form returning a [`PyRequest`] (`wait()`,
//! `test()`), and takes `out=` to receive its result in an existing array (in place when it
//! is the input). `linerate.collective.kmeans(data, init)` is the single-process K-Means of
//! `accel`; `comm.kmeans(local, init)` its distributed form.
//!
//! Element types: float16, float32, float64, (u)int8/16/32/64, bool (carried as bytes of
//! 0/1), and bfloat16, which numpy lacks: pass `bf16=True` with a uint16 array holding
//! bfloat16 bit patterns (results come back the same way). Operators: sum, prod, max, min,
//! band, bor, bxor, land, lor, lxor. `comm.probe(...)` looks at point-to-point messages not
//! yet received (what `linerate.collective.MPI`'s `ANY_SOURCE`, `ANY_TAG` and `Probe` use).

use accel::kmeans::{lloyd, Shape};
use apps::kmeans::DistKmeans;
use collective::{
    bf16, f16, CollectiveError, Communicator, Config, Element, Endpoint, LinkCommunicator, LinkRank, ReduceOp, Request,
    ShmFabric, Transport,
};
use link::Link;
use numpy::{
    PyArray1, PyArray2, PyArrayDyn, PyArrayMethods, PyReadonlyArray2, PyReadonlyArrayDyn, PyReadwriteArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::borrow::Cow;

fn rt<E: std::fmt::Display>(e: E) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

fn parse_op(op: &str) -> PyResult<ReduceOp> {
    ReduceOp::parse(op).ok_or_else(|| {
        PyValueError::new_err(format!("op {op:?} is not one of sum, prod, max, min, band, bor, bxor, land, lor, lxor"))
    })
}

/// K-Means results to Python: (centres, labels, iterations).
type KmeansOut<'py> = (Bound<'py, PyArray2<f32>>, Bound<'py, PyArray1<u32>>, usize);

/// An element type as numpy holds it: itself, or (bfloat16) its bits in a uint16.
trait PyElem: Element {
    /// The numpy element type.
    type Np: numpy::Element + Copy;
    /// Elements from numpy's.
    fn from_np(v: &[Self::Np]) -> Cow<'_, [Self]>;
    /// Elements to numpy's.
    fn into_np(v: Vec<Self>) -> Vec<Self::Np>;
}

macro_rules! native_elem {
    ($($t:ty),*) => {$(
        impl PyElem for $t {
            type Np = $t;
            fn from_np(v: &[$t]) -> Cow<'_, [$t]> {
                Cow::Borrowed(v)
            }
            fn into_np(v: Vec<$t>) -> Vec<$t> {
                v
            }
        }
    )*};
}
native_elem!(f16, f32, f64, i32, i64, u8, i8, u16, i16, u32, u64);

impl PyElem for bf16 {
    type Np = u16;
    fn from_np(v: &[u16]) -> Cow<'_, [bf16]> {
        Cow::Owned(v.iter().map(|&b| bf16::from_bits(b)).collect())
    }
    fn into_np(v: Vec<bf16>) -> Vec<u16> {
        v.into_iter().map(bf16::to_bits).collect()
    }
}

/// Which operation a Python call starts, with its parameters.
#[derive(Debug, Clone, Copy)]
enum Coll {
    Allreduce(ReduceOp),
    Bcast(usize),
    Reduce(ReduceOp, usize),
    Scatter(usize),
    Gather(usize),
    Allgather,
    ReduceScatter(ReduceOp),
    Alltoall,
    Barrier,
    Send(usize, u32),
    Recv(usize, u32),
}

impl Coll {
    /// Starts the operation on `data` (for scatter's non-root ranks and recv: the receive
    /// buffer, whose length is the element count).
    fn start<T: Element>(self, ep: &mut Endpoint, data: &[T]) -> Result<Request<T>, CollectiveError> {
        let n = ep.size();
        match self {
            Coll::Allreduce(op) => ep.iallreduce(data, op),
            Coll::Bcast(root) => ep.ibcast(data, root),
            Coll::Reduce(op, root) => ep.ireduce(data, op, root),
            Coll::Scatter(root) if ep.rank() == root => ep.iscatter(data, data.len() / n, root),
            Coll::Scatter(root) => ep.iscatter(&[], data.len(), root),
            Coll::Gather(root) => ep.igather(data, root),
            Coll::Allgather => Ok(ep.iallgather(data)),
            Coll::ReduceScatter(op) => ep.ireduce_scatter(data, op),
            Coll::Alltoall => ep.ialltoall(data),
            // Started by `start_any` (it has no data, hence no element type).
            Coll::Barrier => Err(CollectiveError::BadArgument("a barrier carries no data".into())),
            Coll::Send(peer, tag) => ep.isend(peer, tag, data),
            Coll::Recv(peer, tag) => ep.irecv(peer, tag, data.len()),
        }
    }

    /// The shape of this rank's result for an input of shape `shape` (axis 0 is the one
    /// split or concatenated; a 0-d input keeps its shape where the result has the input's
    /// size, and counts as 1-d where it is split or concatenated).
    fn result_shape(self, rank: usize, size: usize, shape: &[usize]) -> Vec<usize> {
        let mut s = if shape.is_empty() { vec![1] } else { shape.to_vec() };
        match self {
            Coll::Reduce(_, root) | Coll::Gather(root) if rank != root => s = vec![0],
            Coll::Allreduce(_) | Coll::Bcast(_) | Coll::Recv(..) | Coll::Reduce(..) => s = shape.to_vec(),
            Coll::Alltoall => {}
            Coll::Gather(_) | Coll::Allgather => s[0] *= size,
            Coll::Scatter(root) if rank != root => {}
            Coll::Scatter(_) | Coll::ReduceScatter(_) => s[0] /= size,
            Coll::Barrier | Coll::Send(..) => s = vec![0],
        }
        s
    }
}

/// A rank's communicator: on the shared-memory fabric of its machine, or on a link. Two
/// variants rather than a boxed link, so the fabric keeps its static dispatch and doorbell.
/// (Both are large and of similar size; a process holds one.)
#[allow(clippy::large_enum_variant)]
enum Rank {
    Fabric(Communicator<ShmFabric>),
    Link(LinkCommunicator),
}

/// Applies `$body` to the communicator inside a [`Rank`], whichever its link.
macro_rules! on_rank {
    ($r:expr, |$c:ident| $body:expr) => {
        match $r {
            Rank::Fabric($c) => $body,
            Rank::Link($c) => $body,
        }
    };
}

/// A started operation of one of the supported element types.
enum AnyRequest {
    F16(Request<f16>),
    BF16(Request<bf16>),
    F32(Request<f32>),
    F64(Request<f64>),
    I32(Request<i32>),
    I64(Request<i64>),
    U8(Request<u8>),
    I8(Request<i8>),
    U16(Request<u16>),
    I16(Request<i16>),
    U32(Request<u32>),
    U64(Request<u64>),
}

/// Applies `$body` to the typed request inside an [`AnyRequest`].
/// Invokes `$m!(type, AnyRequest variant)` for every element type numpy holds natively (all
/// but bfloat16, which numpy holds as uint16 bit patterns).
macro_rules! native_types {
    ($m:ident) => {
        $m!(f16, F16);
        $m!(f32, F32);
        $m!(f64, F64);
        $m!(i32, I32);
        $m!(i64, I64);
        $m!(u8, U8);
        $m!(i8, I8);
        $m!(u16, U16);
        $m!(i16, I16);
        $m!(u32, U32);
        $m!(u64, U64);
    };
}

macro_rules! each_request {
    ($r:expr, |$x:ident| $body:expr) => {
        match $r {
            AnyRequest::F16($x) => $body,
            AnyRequest::BF16($x) => $body,
            AnyRequest::F32($x) => $body,
            AnyRequest::F64($x) => $body,
            AnyRequest::I32($x) => $body,
            AnyRequest::I64($x) => $body,
            AnyRequest::U8($x) => $body,
            AnyRequest::I8($x) => $body,
            AnyRequest::U16($x) => $body,
            AnyRequest::I16($x) => $body,
            AnyRequest::U32($x) => $body,
            AnyRequest::U64($x) => $body,
        }
    };
}

/// Starts `coll` on `arr` if it holds elements of type `T`; `None` if it does not.
fn try_start<T: PyElem>(
    ep: &mut Endpoint,
    coll: Coll,
    arr: &Bound<'_, PyAny>,
) -> Option<PyResult<(Request<T>, Vec<usize>)>> {
    let a = arr.extract::<PyReadonlyArrayDyn<'_, T::Np>>().ok()?;
    let shape = a.shape().to_vec();
    let r = match a.as_slice() {
        Ok(s) => coll.start(ep, &T::from_np(s)),
        // Not contiguous: a contiguous copy.
        Err(_) => coll.start(ep, &T::from_np(&a.as_array().iter().copied().collect::<Vec<_>>())),
    };
    Some(r.map(|r| (r, shape)).map_err(rt))
}

/// Starts `coll` on `arr`, dispatching on its dtype (`bf16`: a uint16 array of bfloat16 bits).
fn start_any(ep: &mut Endpoint, coll: Coll, arr: &Bound<'_, PyAny>, bf16: bool) -> PyResult<(AnyRequest, Vec<usize>)> {
    macro_rules! try_type {
        ($t:ty, $v:ident) => {
            if let Some(r) = try_start::<$t>(ep, coll, arr) {
                return r.map(|(r, s)| (AnyRequest::$v(r), s));
            }
        };
    }
    if let Coll::Barrier = coll {
        return Ok((AnyRequest::I32(ep.ibarrier()), Vec::new()));
    }
    if bf16 {
        try_type!(bf16, BF16);
        return Err(PyTypeError::new_err("bf16=True expects a uint16 array of bfloat16 bit patterns"));
    }
    native_types!(try_type);
    if let Some(r) = try_bool(ep, coll, arr) {
        return r;
    }
    Err(PyTypeError::new_err(
        "expected a numpy array of float16/32/64, (u)int8/16/32/64 or bool (or uint16 with bf16=True)",
    ))
}

/// Starts `coll` on a bool array as its bytes (0 or 1); `None` if `arr` is not one.
fn try_bool(ep: &mut Endpoint, coll: Coll, arr: &Bound<'_, PyAny>) -> Option<PyResult<(AnyRequest, Vec<usize>)>> {
    let a = arr.extract::<PyReadonlyArrayDyn<'_, bool>>().ok()?;
    let shape = a.shape().to_vec();
    let bytes: Vec<u8> = a.as_array().iter().map(|&b| u8::from(b)).collect();
    Some(coll.start(ep, &bytes).map(|r| (AnyRequest::U8(r), shape)).map_err(rt))
}

/// A finished result as a numpy array of `shape` (1-d if the element count differs).
fn to_numpy<'py, T: PyElem>(py: Python<'py>, v: Vec<T>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let a = PyArray1::from_vec(py, T::into_np(v));
    if shape.iter().product::<usize>() == a.len() && shape.len() != 1 {
        Ok(a.reshape(shape.to_vec())?.into_any())
    } else {
        Ok(a.into_any())
    }
}

/// Copies `result` into `target` (same dtype and element count).
fn copy_into(target: &Bound<'_, PyAny>, result: &Bound<'_, PyAny>) -> PyResult<()> {
    macro_rules! try_copy {
        ($t:ty) => {
            if let Ok(mut dst) = target.extract::<PyReadwriteArrayDyn<'_, $t>>() {
                let src = result
                    .extract::<PyReadonlyArrayDyn<'_, $t>>()
                    .map_err(|_| PyTypeError::new_err("out= has another dtype than the result"))?;
                let s = src.as_slice().map_err(|_| PyValueError::new_err("internal: result not contiguous"))?;
                let mut d = dst.as_array_mut();
                if d.len() != s.len() {
                    return Err(PyValueError::new_err(format!(
                        "out= holds {} elements, the result {}",
                        d.len(),
                        s.len()
                    )));
                }
                for (d, s) in d.iter_mut().zip(s) {
                    *d = *s;
                }
                return Ok(());
            }
        };
    }
    try_copy!(f16);
    try_copy!(u16);
    try_copy!(f32);
    try_copy!(f64);
    try_copy!(i32);
    try_copy!(i64);
    try_copy!(u8);
    try_copy!(i8);
    try_copy!(i16);
    try_copy!(u32);
    try_copy!(u64);
    try_copy!(bool);
    Err(PyTypeError::new_err("out= must be a writable numpy array of a supported dtype"))
}

/// Waits for `r` with its result written into `target` if `target` is a writable, contiguous
/// array of the result's element type; otherwise hands `r` back untouched.
fn wait_into_out<L: Link>(
    py: Python<'_>,
    c: &mut Communicator<L>,
    r: AnyRequest,
    target: &Bound<'_, PyAny>,
) -> PyResult<Result<(), AnyRequest>> {
    macro_rules! into {
        ($v:ident, $t:ty, $r:expr) => {{
            let Ok(mut dst) = target.extract::<PyReadwriteArrayDyn<'_, $t>>() else {
                return Ok(Err(AnyRequest::$v($r)));
            };
            let Ok(slice) = dst.as_slice_mut() else { return Ok(Err(AnyRequest::$v($r))) };
            py.allow_threads(|| c.wait_into($r, slice)).map_err(rt)?;
            Ok(Ok(()))
        }};
    }
    match r {
        AnyRequest::F16(r) => into!(F16, f16, r),
        AnyRequest::F32(r) => into!(F32, f32, r),
        AnyRequest::F64(r) => into!(F64, f64, r),
        AnyRequest::I32(r) => into!(I32, i32, r),
        AnyRequest::I64(r) => into!(I64, i64, r),
        AnyRequest::U8(r) => into!(U8, u8, r),
        AnyRequest::I8(r) => into!(I8, i8, r),
        AnyRequest::U16(r) => into!(U16, u16, r),
        AnyRequest::I16(r) => into!(I16, i16, r),
        AnyRequest::U32(r) => into!(U32, u32, r),
        AnyRequest::U64(r) => into!(U64, u64, r),
        // bfloat16 travels as its own type, numpy holds uint16 bits: the copying path.
        other @ AnyRequest::BF16(_) => Ok(Err(other)),
    }
}

/// A blocking send or receive of a contiguous array of a native element type straight
/// between the array's memory (numpy's buffer, no intermediate copy) and the transport
/// ([`Communicator::send`], [`Communicator::recv_into`]); `Ok(false)` if `arr` is not one
/// (or `coll` is no point-to-point operation): the caller takes the general path.
fn p2p_in_place<L: Link>(
    py: Python<'_>,
    c: &mut Communicator<L>,
    coll: Coll,
    arr: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    macro_rules! try_type {
        ($t:ty, $v:ident) => {
            match coll {
                Coll::Send(dest, tag) => {
                    if let Ok(a) = arr.extract::<PyReadonlyArrayDyn<'_, $t>>() {
                        let Ok(s) = a.as_slice() else { return Ok(false) };
                        py.allow_threads(|| c.send(dest, tag, s)).map_err(rt)?;
                        return Ok(true);
                    }
                }
                Coll::Recv(source, tag) => {
                    if let Ok(mut a) = arr.extract::<PyReadwriteArrayDyn<'_, $t>>() {
                        let Ok(s) = a.as_slice_mut() else { return Ok(false) };
                        py.allow_threads(|| c.recv_into(source, tag, s)).map_err(rt)?;
                        return Ok(true);
                    }
                }
                _ => return Ok(false),
            }
        };
    }
    native_types!(try_type);
    Ok(false)
}

/// A blocking all-reduce or broadcast working in the caller's `out` array itself (numpy's
/// buffer lent to the operation: no input, message or result copy on the pipes): an
/// all-reduce from `arr` into `out` (in place when they are the same array), a broadcast in
/// place. `Ok(false)` if the arrays are not contiguous arrays of one native type (or `coll`
/// is another operation): the caller takes the general path.
fn coll_in_place<L: Link>(
    py: Python<'_>,
    c: &mut Communicator<L>,
    coll: Coll,
    arr: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    macro_rules! try_type {
        ($t:ty, $v:ident) => {
            if let Ok(oa) = out.downcast::<PyArrayDyn<$t>>() {
                let Ok(aa) = arr.downcast::<PyArrayDyn<$t>>() else { return Ok(false) };
                // The same memory (the same array, or a view of it as MPI.IN_PLACE makes):
                // in place.
                let same = aa.data() == oa.data() && aa.len() == oa.len();
                let Ok(mut o) = oa.try_readwrite() else { return Ok(false) };
                let Ok(os) = o.as_slice_mut() else { return Ok(false) };
                match coll {
                    Coll::Allreduce(op) if same => py.allow_threads(|| c.allreduce_in_place(os, op)).map_err(rt)?,
                    Coll::Allreduce(op) => {
                        // Overlapping views of one array cannot be borrowed both ways.
                        let Ok(a) = aa.try_readonly() else { return Ok(false) };
                        let Ok(s) = a.as_slice() else { return Ok(false) };
                        if s.len() != os.len() {
                            return Ok(false);
                        }
                        py.allow_threads(|| c.allreduce_into(s, os, op)).map_err(rt)?
                    }
                    Coll::Bcast(root) if same => py.allow_threads(|| c.bcast_in_place(os, root)).map_err(rt)?,
                    _ => return Ok(false),
                }
                return Ok(true);
            }
        };
    }
    if !matches!(coll, Coll::Allreduce(_) | Coll::Bcast(_)) {
        return Ok(false);
    }
    native_types!(try_type);
    Ok(false)
}

/// A non-blocking operation in progress: `wait()` blocks for its result, `test()` polls.
#[pyclass(name = "Request", module = "linerate.collective", unsendable)]
pub struct PyRequest {
    comm: Py<PyComm>,
    req: Option<AnyRequest>,
    shape: Vec<usize>,
    out: Option<PyObject>,
    /// The operation has no result (barrier, send): `wait()` returns None.
    returns_none: bool,
    /// The input was a bool array, carried as bytes: the result is viewed as bool again.
    as_bool: bool,
    /// The array a borrowed send reads from ([`isend_borrowed_any`]), kept alive until the
    /// request is collected (or detached when the request is dropped).
    keep: Option<PyObject>,
}

impl Drop for PyRequest {
    fn drop(&mut self) {
        let (Some(r), Some(_)) = (self.req.take(), self.keep.as_ref()) else { return };
        Python::with_gil(|py| {
            // The send still reads the array: copy what it needs and let it finish alone. If
            // the communicator is busy (borrowed), the array is kept alive for good instead.
            let Ok(mut pc) = self.comm.bind(py).try_borrow_mut() else {
                std::mem::forget(self.keep.take());
                return;
            };
            if let Ok(rank) = pc.c() {
                on_rank!(rank, |c| each_request!(r, |r| c.endpoint().detach(r)));
            }
        });
    }
}

/// A non-blocking send of a contiguous array of a native element type straight from the
/// array's memory ([`Endpoint::isend_borrowed`]; the request keeps the array); `None` if
/// `arr` is not one: the caller takes the copying path.
fn isend_borrowed_any(
    ep: &mut Endpoint,
    arr: &Bound<'_, PyAny>,
    dest: usize,
    tag: u32,
) -> PyResult<Option<AnyRequest>> {
    macro_rules! try_type {
        ($t:ty, $v:ident) => {
            if let Ok(a) = arr.extract::<PyReadonlyArrayDyn<'_, $t>>() {
                let Ok(s) = a.as_slice() else { return Ok(None) };
                // SAFETY: the request keeps a reference to the array (numpy then refuses to
                // resize it), and its buffer is read until the request is collected or
                // detached (on drop); as with MPI_Isend, the caller must not write to it
                // meanwhile.
                let r = unsafe { ep.isend_borrowed(dest, tag, s) }.map_err(rt)?;
                return Ok(Some(AnyRequest::$v(r)));
            }
        };
    }
    native_types!(try_type);
    Ok(None)
}

impl PyRequest {
    /// The Python value of a finished result (into `out=` if given).
    fn deliver<'py>(&self, py: Python<'py>, out: Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.returns_none {
            return Ok(None);
        }
        let out = if self.as_bool { out.call_method1("view", ("?",))? } else { out };
        match &self.out {
            Some(t) => {
                let t = t.bind(py);
                copy_into(t, &out)?;
                Ok(Some(t.clone()))
            }
            None => Ok(Some(out)),
        }
    }
}

#[pymethods]
impl PyRequest {
    /// Block until the operation completes (or fails at its timeout, naming the ranks it
    /// waited for); returns the result array (the `out=` array if one was given; None for
    /// barrier and send).
    fn wait<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let r = self.req.take().ok_or_else(|| PyRuntimeError::new_err("the request was already completed"))?;
        let mut pc = self.comm.bind(py).borrow_mut();
        let out = on_rank!(pc.c()?, |c| {
            // The result straight into the caller's out= array when it is contiguous and of
            // the result's type and size (no intermediate array).
            let r = match (&self.out, self.as_bool) {
                (Some(t), false) => match wait_into_out(py, c, r, t.bind(py))? {
                    Ok(()) => return Ok(Some(t.bind(py).clone())),
                    Err(r) => r,
                },
                _ => r,
            };
            let shape = &self.shape;
            each_request!(r, |r| {
                let v = py.allow_threads(|| c.wait(r)).map_err(rt)?;
                to_numpy(py, v, shape)?
            })
        });
        drop(pc);
        self.deliver(py, out)
    }

    /// Progress once without blocking: `(True, result)` once complete (as `wait()` would
    /// return it), `(False, None)` while it runs; raises if the operation failed.
    fn test<'py>(&mut self, py: Python<'py>) -> PyResult<(bool, Option<Bound<'py, PyAny>>)> {
        let r = self.req.as_ref().ok_or_else(|| PyRuntimeError::new_err("the request was already completed"))?;
        let mut pc = self.comm.bind(py).borrow_mut();
        let shape = &self.shape;
        let got = on_rank!(pc.c()?, |c| {
            c.poll().map_err(rt)?;
            each_request!(r, |r| match c.endpoint().test(r).map_err(rt)? {
                Some(v) => Some(to_numpy(py, v, shape)?),
                None => None,
            })
        });
        drop(pc);
        match got {
            Some(out) => {
                self.req = None;
                Ok((true, self.deliver(py, out)?))
            }
            None => Ok((false, None)),
        }
    }
}

/// One rank: its own linerate stack (on the shared-memory fabric or a link) and a full TCP mesh.
#[pyclass(name = "Communicator", module = "linerate.collective", unsendable)]
pub struct PyComm {
    comm: Option<Rank>,
    rank: usize,
    size: usize,
    /// What the rank runs on, for `repr`: "shm:FABRIC" or the link spec.
    medium: String,
}

impl PyComm {
    fn c(&mut self) -> PyResult<&mut Rank> {
        self.comm.as_mut().ok_or_else(|| PyRuntimeError::new_err("the communicator was finalized"))
    }

    /// Starts `coll` on `arr`; the request delivers into `out` if given.
    fn begin(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        coll: Coll,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        let mut me = slf.borrow_mut();
        let (rank, size) = (me.rank, me.size);
        let (req, shape) = on_rank!(me.c()?, |c| start_any(c.endpoint(), coll, arr, bf16))?;
        // As MPI does, a receive buffer on a rank that receives nothing is ignored.
        let no_result = matches!(coll, Coll::Reduce(_, root) | Coll::Gather(root) if root != rank);
        Ok(PyRequest {
            comm: slf.clone().unbind(),
            req: Some(req),
            shape: coll.result_shape(rank, size, &shape),
            out: out.filter(|_| !no_result).map(|o| o.clone().unbind()),
            returns_none: matches!(coll, Coll::Barrier | Coll::Send(..)),
            as_bool: arr.extract::<PyReadonlyArrayDyn<'_, bool>>().is_ok(),
            keep: None,
        })
    }

    /// Starts `coll` and waits for it.
    fn run<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        coll: Coll,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let (Some(o), false) = (out, bf16) {
            if on_rank!(slf.borrow_mut().c()?, |c| coll_in_place(slf.py(), c, coll, arr, o))? {
                return Ok(Some(o.clone()));
            }
        }
        Self::begin(slf, arr, coll, out, bf16)?.wait(slf.py())
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

    /// What the rank runs on: `"shm:FABRIC"`, or its link spec (such as `"af_xdp:veth0"`).
    #[getter]
    fn medium(&self) -> &str {
        &self.medium
    }

    fn __repr__(&self) -> String {
        format!("<Communicator rank {} of {} on {}>", self.rank, self.size, self.medium)
    }

    /// All-reduce: every rank gets the element-wise reduction ("sum", "prod", "max", "min").
    /// With `out=` a contiguous array of the same native type, the reduction works in `out`
    /// itself (no intermediate array).
    #[pyo3(signature = (arr, op = "sum", out = None, bf16 = false))]
    fn allreduce<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        op: &str,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Allreduce(parse_op(op)?), out, bf16)
    }

    /// All-reduce into `arr` itself (the same as `out=arr`).
    #[pyo3(signature = (arr, op = "sum", bf16 = false))]
    fn allreduce_inplace<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        op: &str,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Allreduce(parse_op(op)?), Some(arr), bf16)
    }

    /// Non-blocking all-reduce; `.wait()` returns the result (in `arr` if `inplace`).
    #[pyo3(signature = (arr, op = "sum", out = None, inplace = false, bf16 = false))]
    fn iallreduce(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        op: &str,
        out: Option<&Bound<'_, PyAny>>,
        inplace: bool,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Allreduce(parse_op(op)?), if inplace { Some(arr) } else { out }, bf16)
    }

    /// Broadcast from `root`: every rank passes an array of the same shape and gets the root's.
    #[pyo3(signature = (arr, root = 0, out = None, bf16 = false))]
    fn bcast<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        root: usize,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Bcast(root), out, bf16)
    }

    /// Broadcast into `arr` itself (the same as `out=arr`).
    #[pyo3(signature = (arr, root = 0, bf16 = false))]
    fn bcast_inplace<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        root: usize,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Bcast(root), Some(arr), bf16)
    }

    /// Non-blocking broadcast.
    #[pyo3(signature = (arr, root = 0, out = None, bf16 = false))]
    fn ibcast(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        root: usize,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Bcast(root), out, bf16)
    }

    /// Reduce to `root` (the other ranks get an empty array).
    #[pyo3(signature = (arr, op = "sum", root = 0, out = None, bf16 = false))]
    fn reduce<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        op: &str,
        root: usize,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Reduce(parse_op(op)?, root), out, bf16)
    }

    /// Non-blocking reduce.
    #[pyo3(signature = (arr, op = "sum", root = 0, out = None, bf16 = false))]
    fn ireduce(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        op: &str,
        root: usize,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Reduce(parse_op(op)?, root), out, bf16)
    }

    /// Scatter from `root`: the root's `arr` is split along axis 0 into `size` equal parts
    /// and rank `i` gets part `i`; on the other ranks `arr` is a buffer of one part's shape
    /// and dtype (its contents are not used).
    #[pyo3(signature = (arr, root = 0, out = None, bf16 = false))]
    fn scatter<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        root: usize,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Scatter(root), out, bf16)
    }

    /// Non-blocking scatter.
    #[pyo3(signature = (arr, root = 0, out = None, bf16 = false))]
    fn iscatter(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        root: usize,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Scatter(root), out, bf16)
    }

    /// Gather to `root`: the arrays of all ranks concatenated along axis 0 in rank order
    /// (the other ranks get an empty array).
    #[pyo3(signature = (arr, root = 0, out = None, bf16 = false))]
    fn gather<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        root: usize,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Gather(root), out, bf16)
    }

    /// Non-blocking gather.
    #[pyo3(signature = (arr, root = 0, out = None, bf16 = false))]
    fn igather(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        root: usize,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Gather(root), out, bf16)
    }

    /// All-gather: the arrays of all ranks concatenated along axis 0 in rank order.
    #[pyo3(signature = (arr, out = None, bf16 = false))]
    fn allgather<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Allgather, out, bf16)
    }

    /// Non-blocking all-gather.
    #[pyo3(signature = (arr, out = None, bf16 = false))]
    fn iallgather(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Allgather, out, bf16)
    }

    /// Reduce-scatter: `arr` is split along axis 0 into `size` equal parts; rank `i` gets
    /// part `i` reduced over all ranks.
    #[pyo3(signature = (arr, op = "sum", out = None, bf16 = false))]
    fn reduce_scatter<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        op: &str,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::ReduceScatter(parse_op(op)?), out, bf16)
    }

    /// Non-blocking reduce-scatter.
    #[pyo3(signature = (arr, op = "sum", out = None, bf16 = false))]
    fn ireduce_scatter(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        op: &str,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::ReduceScatter(parse_op(op)?), out, bf16)
    }

    /// All-to-all: `arr` is split along axis 0 into `size` equal parts, part `j` goes to
    /// rank `j`; the result (same shape) holds the parts received, in rank order.
    #[pyo3(signature = (arr, out = None, bf16 = false))]
    fn alltoall<'py>(
        slf: &Bound<'py, Self>,
        arr: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Self::run(slf, arr, Coll::Alltoall, out, bf16)
    }

    /// Non-blocking all-to-all.
    #[pyo3(signature = (arr, out = None, bf16 = false))]
    fn ialltoall(
        slf: &Bound<'_, Self>,
        arr: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, arr, Coll::Alltoall, out, bf16)
    }

    /// Send `arr` to rank `dest` with `tag` (completes once queued, or once in the ring of a
    /// shared-memory pipe, written straight from the array; order per tag is kept).
    #[pyo3(signature = (arr, dest, tag = 0, bf16 = false))]
    fn send(slf: &Bound<'_, Self>, arr: &Bound<'_, PyAny>, dest: usize, tag: u32, bf16: bool) -> PyResult<()> {
        if !bf16 && on_rank!(slf.borrow_mut().c()?, |c| p2p_in_place(slf.py(), c, Coll::Send(dest, tag), arr))? {
            return Ok(());
        }
        Self::run(slf, arr, Coll::Send(dest, tag), None, bf16).map(|_| ())
    }

    /// Non-blocking send. A contiguous array of a native type is sent straight from its
    /// memory (over a shared-memory pipe): the request keeps the array, which must not change
    /// until `wait()` or `test()` reports the send complete, as with MPI_Isend. Other arrays
    /// are copied first.
    #[pyo3(signature = (arr, dest, tag = 0, bf16 = false))]
    fn isend(slf: &Bound<'_, Self>, arr: &Bound<'_, PyAny>, dest: usize, tag: u32, bf16: bool) -> PyResult<PyRequest> {
        if !bf16 {
            let started = on_rank!(slf.borrow_mut().c()?, |c| isend_borrowed_any(c.endpoint(), arr, dest, tag))?;
            if let Some(req) = started {
                return Ok(PyRequest {
                    comm: slf.clone().unbind(),
                    req: Some(req),
                    shape: Vec::new(),
                    out: None,
                    returns_none: true,
                    as_bool: false,
                    keep: Some(arr.clone().unbind()),
                });
            }
        }
        Self::begin(slf, arr, Coll::Send(dest, tag), None, bf16)
    }

    /// Receive into `buf` (exactly its element count, its dtype) from rank `source` with
    /// `tag`; returns `buf`.
    #[pyo3(signature = (buf, source, tag = 0, bf16 = false))]
    fn recv<'py>(
        slf: &Bound<'py, Self>,
        buf: &Bound<'py, PyAny>,
        source: usize,
        tag: u32,
        bf16: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if !bf16 && on_rank!(slf.borrow_mut().c()?, |c| p2p_in_place(slf.py(), c, Coll::Recv(source, tag), buf))? {
            return Ok(Some(buf.clone()));
        }
        Self::run(slf, buf, Coll::Recv(source, tag), Some(buf), bf16)
    }

    /// Non-blocking receive into `buf`.
    #[pyo3(signature = (buf, source, tag = 0, bf16 = false))]
    fn irecv(
        slf: &Bound<'_, Self>,
        buf: &Bound<'_, PyAny>,
        source: usize,
        tag: u32,
        bf16: bool,
    ) -> PyResult<PyRequest> {
        Self::begin(slf, buf, Coll::Recv(source, tag), Some(buf), bf16)
    }

    /// Barrier: returns once every rank has entered it.
    fn barrier(slf: &Bound<'_, Self>) -> PyResult<()> {
        Self::ibarrier(slf)?.wait(slf.py()).map(|_| ())
    }

    /// Non-blocking barrier; `.wait()` returns None.
    fn ibarrier(slf: &Bound<'_, Self>) -> PyResult<PyRequest> {
        Self::begin(slf, slf.as_any(), Coll::Barrier, None, false)
    }

    /// The first point-to-point message that arrived and is not yet received, from `source`
    /// (any rank if None) whose tag `t` has `t & tag_mask == tag & tag_mask` (mask 0: any
    /// tag), as `(source, tag, bytes)`; None if there is none. With `block=True` it polls
    /// until one arrives, or raises at the communicator's timeout (`timeout` seconds if given).
    #[pyo3(signature = (source = None, tag = 0, tag_mask = 4294967295, block = false, timeout = None))]
    fn probe(
        &mut self,
        py: Python<'_>,
        source: Option<usize>,
        tag: u32,
        tag_mask: u32,
        block: bool,
        timeout: Option<f64>,
    ) -> PyResult<Option<(usize, u32, usize)>> {
        if source.is_some_and(|s| s >= self.size || s == self.rank) {
            return Err(PyValueError::new_err(format!("source {source:?} is not a peer of rank {}", self.rank)));
        }
        let limit = match timeout {
            Some(t) => crate::duration_ms(t * 1e3)?,
            None => on_rank!(self.c()?, |c| c.endpoint().config().timeout),
        };
        let found =
            on_rank!(self.c()?, |c| py.allow_threads(|| -> Result<Option<(usize, u32, usize)>, CollectiveError> {
                let deadline = std::time::Instant::now() + limit;
                let mut idle = 0;
                loop {
                    c.poll()?;
                    if let Some(m) = c.endpoint().probe(source, tag, tag_mask) {
                        return Ok(Some(m));
                    }
                    if !block {
                        return Ok(None);
                    }
                    if std::time::Instant::now() >= deadline {
                        let peers = (0..c.size()).filter(|&p| p != c.rank() && source.is_none_or(|s| s == p));
                        return Err(CollectiveError::Timeout {
                            op: "probe",
                            step: 0,
                            waiting_for: peers.collect(),
                            timeout: limit,
                        });
                    }
                    c.poll_or_yield(&mut idle)?;
                }
            }));
        found.map_err(rt)
    }

    /// Counters of this rank's collective layer (messages, bytes, operations, unmatched
    /// messages, ...), as a dict.
    fn counters<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let d = pyo3::types::PyDict::new(py);
        let named = on_rank!(self.c()?, |c| c.endpoint().counters().named());
        for (name, v) in named {
            d.set_item(name, v)?;
        }
        Ok(d)
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
        on_rank!(self.c()?, |c| py.allow_threads(|| km.fit(c, max_iter, tol))).map_err(rt)?;
        let centres = PyArray1::from_slice(py, km.centres()).reshape([shape.k, shape.d])?;
        Ok((centres, PyArray1::from_slice(py, km.labels()), km.iterations))
    }

    /// Wait until everything sent is acknowledged, then close (like `MPI_Finalize`).
    fn finalize(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.comm.take() {
            Some(c) => on_rank!(c, |c| py.allow_threads(|| c.finalize())).map_err(rt),
            None => Ok(()),
        }
    }
}

/// Join the job described by the environment; returns once the full mesh is connected.
///
/// By default the rank joins its machine's shared-memory fabric (`fabric`, else
/// `LINERATE_FABRIC` or the launcher's job id). With `link` (or `LINERATE_LINK`), such as
/// `"af_xdp:veth0"` or `"af_packet:eth1"`, it runs its stack on that interface at `ip`
/// (`LINERATE_IP`, `a.b.c.d/len`, optionally followed by IPv6 ones: `"10.9.0.2/24,fd09::2/64"`)
/// and joins through rank 0 at `root` (`LINERATE_ROOT_ADDR` or `MASTER_ADDR`, `a.b.c.d[:port]`
/// or an IPv6 address, `[fd09::1]:port`: the ranks then meet over IPv6), where rank 0 itself
/// listens; `gateway` routes to a root off the subnet. `timeout` (seconds) bounds the set-up and every operation.
/// The process's threads stay unbound unless `LINERATE_BIND=on` (then the calling thread is
/// pinned to one CPU, round-robin by rank, as the command-line ranks are).
/// `transport` (`LINERATE_TRANSPORT`): `"auto"` (shared-memory pipes between ranks on the
/// fabric, TCP over a link), `"shm"` (pipes to every peer) or `"tcp"` (TCP to every peer).
#[pyfunction]
#[pyo3(signature = (fabric = None, timeout = 60.0, *, link = None, ip = None, root = None, gateway = None, transport = None))]
#[allow(clippy::too_many_arguments)]
fn init(
    py: Python<'_>,
    fabric: Option<String>,
    timeout: f64,
    link: Option<String>,
    ip: Option<String>,
    root: Option<String>,
    gateway: Option<String>,
    transport: Option<String>,
) -> PyResult<PyComm> {
    let l = collective::from_env().map_err(val)?;
    if l.size > 254 || !(timeout > 0.0 && timeout.is_finite()) {
        return Err(PyValueError::new_err("at most 254 ranks, and a positive timeout"));
    }
    let timeout = crate::duration_ms(timeout * 1e3)?;
    let (r, n) = (l.rank, l.size);
    let transport = match transport {
        Some(t) => Transport::parse(&t),
        None => Transport::from_env(),
    }
    .map_err(val)?;
    let mut cfg = Config { timeout, connect_timeout: timeout, ..Config::default() };
    // Python's later threads (numpy's, OpenMP's) would inherit a one-CPU mask: bind the rank
    // only when LINERATE_BIND=on asks for it.
    let bind = std::env::var("LINERATE_BIND").is_ok_and(|v| v.trim() == "on");
    if let Some(mut on) = LinkRank::resolve(&l, link.as_deref(), ip.as_deref(), root.as_deref()).map_err(val)? {
        if let Some(g) = gateway {
            on.host.gateway = Some(g.trim().parse().map_err(|_| val(format!("gateway {g:?} is not an IPv4 address")))?);
        }
        let medium = on.link.to_string();
        transport.apply(&mut cfg, false, fabric.as_deref().or(l.fabric.as_deref())).map_err(val)?;
        let comm = py.allow_threads(|| on.join(r, n, cfg, bind)).map_err(join_err)?;
        return Ok(PyComm { comm: Some(Rank::Link(comm)), rank: r, size: n, medium });
    }
    let name = fabric.or(l.fabric.clone()).ok_or_else(|| {
        PyValueError::new_err(
            "no fabric name: pass fabric=... or set LINERATE_FABRIC (linerate collective launch does), \
             or link=... for a rank on an interface",
        )
    })?;
    cfg.shm = transport.shm_job(true, Some(&name)).map_err(val)?;
    let comm = py
        .allow_threads(|| -> Result<Communicator<ShmFabric>, String> {
            let fab =
                ShmFabric::join(&name, r, n, collective::fabric_link_config(), timeout).map_err(|e| e.to_string())?;
            let nc = collective::fabric_host_config(r, n).map_err(|e| e.to_string())?;
            let stack = net::Stack::new(nc, fab).map_err(|e| e.to_string())?;
            let addrs = collective::fabric_addrs(n);
            let ep = Endpoint::new(r, addrs, cfg).map_err(|e| e.to_string())?;
            let mut c = Communicator::new_with_binding(stack, ep, bind).map_err(|e| e.to_string())?;
            c.connect().map_err(|e| e.to_string())?;
            Ok(c)
        })
        .map_err(rt)?;
    Ok(PyComm { comm: Some(Rank::Fabric(comm)), rank: r, size: n, medium: format!("shm:{name}") })
}

/// A failed join on a link as Python's error: a bad value or an interface that cannot be
/// opened is a ValueError, a root that never answered a TimeoutError.
fn join_err(e: CollectiveError) -> PyErr {
    match e {
        CollectiveError::Join(m) => PyValueError::new_err(m),
        e @ (CollectiveError::RootUnreachable { .. } | CollectiveError::SetupTimeout { .. }) => {
            pyo3::exceptions::PyTimeoutError::new_err(e.to_string())
        }
        e => rt(e),
    }
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
