//! RX bypass from Python: a callable receives each run of in-order payload of the connections
//! switched to bypass, as `callback(slot, data)`, while the testbed runs. The callable must
//! not call into the testbed (it is busy); an exception it raises is kept and re-raised by
//! the `run`/`step` that was under way.

use net::TcpHandle;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, Mutex};

/// Exceptions raised by RX-bypass callables, waiting to be re-raised.
pub type HandlerErrors = Arc<Mutex<Vec<PyErr>>>;

/// The stack-side handler that calls `callback` (with the GIL) and keeps its exceptions.
pub fn handler(callback: PyObject, errors: HandlerErrors) -> impl FnMut(TcpHandle, &[u8]) + Send + 'static {
    move |h, data| {
        Python::with_gil(|py| {
            if let Err(e) = callback.call1(py, (h.slot(), PyBytes::new(py, data))) {
                if let Ok(mut v) = errors.lock() {
                    v.push(e);
                }
            }
        })
    }
}

/// The first exception a callable raised since the last call, if any (the rest are dropped).
pub fn take_error(errors: &HandlerErrors) -> PyResult<()> {
    let first = errors.lock().ok().and_then(|mut v| {
        let e = if v.is_empty() { None } else { Some(v.remove(0)) };
        v.clear();
        e
    });
    first.map_or(Ok(()), Err)
}
