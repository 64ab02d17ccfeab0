//! Bytes-like arguments through the buffer protocol (via `memoryview`, as the stable ABI has
//! no direct buffer access before Python 3.11): `bytes`, `bytearray`, `memoryview`, numpy
//! arrays, `array.array`, ... are all accepted where a socket takes data.

use std::borrow::Cow;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView, PySlice};

/// The type name of `obj`, for messages.
fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

/// A byte-format view of `obj`, or TypeError naming `need`.
fn byte_view<'py>(obj: &Bound<'py, PyAny>, need: &str) -> PyResult<Bound<'py, PyAny>> {
    let mv = PyMemoryView::from(obj)
        .map_err(|_| PyTypeError::new_err(format!("{need} is required, not '{}'", type_name(obj))))?;
    if !mv.getattr("c_contiguous")?.is_truthy()? {
        return Err(PyTypeError::new_err("the buffer must be contiguous"));
    }
    mv.call_method1("cast", ("B",))
}

/// The bytes of a bytes-like object (`bytes` without a copy).
pub fn bytes_like<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    let view = byte_view(obj, "a bytes-like object")?;
    let b = view.call_method0("tobytes")?;
    Ok(Cow::Owned(b.downcast::<PyBytes>()?.as_bytes().to_vec()))
}

/// A writable, contiguous byte buffer (`bytearray`, writable `memoryview`, ...) to fill.
pub struct WritableBuffer<'py> {
    view: Bound<'py, PyAny>,
    len: usize,
}

impl<'py> WritableBuffer<'py> {
    /// Check that `obj` is a writable contiguous buffer; it is seen as bytes.
    pub fn get(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        let view = byte_view(obj, "a writable bytes-like object (bytearray, memoryview)")?;
        if view.getattr("readonly")?.is_truthy()? {
            return Err(PyTypeError::new_err(format!(
                "a writable buffer is required, '{}' is read-only",
                type_name(obj)
            )));
        }
        let len = view.getattr("nbytes")?.extract()?;
        Ok(WritableBuffer { view, len })
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Copy `data` (at most [`WritableBuffer::len`] bytes) to its start.
    pub fn fill(&self, data: &[u8]) -> PyResult<()> {
        let py = self.view.py();
        let n = data.len().min(self.len);
        self.view.set_item(PySlice::new(py, 0, n as isize, 1), PyBytes::new(py, &data[..n]))
    }
}
