//! Socket addresses between Python and the stack, as Python's `socket` module writes them:
//! `(host, port)` for IPv4 and `(host, port, flowinfo, scope_id)` for IPv6 (a pair is taken
//! for IPv6 too), the host a numeric address of either family.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::net::{IpAddr, SocketAddr, SocketAddrV6};

/// The socket address `addr` names: `TypeError` for something that is not a 2- or 4-tuple,
/// `ValueError` for a bad host, port, flow label or a 4-tuple with an IPv4 host.
pub(crate) fn from_py(addr: &Bound<'_, PyAny>) -> PyResult<SocketAddr> {
    let shape = || {
        PyTypeError::new_err(format!(
            "an address is (host, port) or (host, port, flowinfo, scope_id), not {}",
            addr.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    };
    let t = addr.downcast::<PyTuple>().map_err(|_| shape())?;
    let (host, port, extra) = match t.len() {
        2 => {
            let (h, p): (String, i64) = t.extract().map_err(|_| shape())?;
            (h, p, None)
        }
        4 => {
            let (h, p, flow, scope): (String, i64, i64, i64) = t.extract().map_err(|_| shape())?;
            (h, p, Some((flow, scope)))
        }
        _ => return Err(shape()),
    };
    let ip: IpAddr = host.parse().map_err(|_| PyValueError::new_err(format!("'{host}' is not an IP address")))?;
    let port = crate::port(port)?;
    match (ip, extra) {
        (ip, None) => Ok(SocketAddr::new(ip, port)),
        (IpAddr::V6(ip), Some((flow, scope))) => {
            let flow = u32::try_from(flow)
                .ok()
                .filter(|f| *f < 1 << 20)
                .ok_or_else(|| PyValueError::new_err(format!("flowinfo {flow} is outside 0..=1048575")))?;
            let scope = u32::try_from(scope)
                .map_err(|_| PyValueError::new_err(format!("scope_id {scope} is outside 0..=4294967295")))?;
            Ok(SocketAddr::V6(SocketAddrV6::new(ip, port, flow, scope)))
        }
        (IpAddr::V4(_), Some(_)) => {
            Err(PyValueError::new_err(format!("'{host}' is an IPv4 address: its address is a pair (host, port)")))
        }
    }
}

/// `a` for Python: `(host, port)` for IPv4, `(host, port, flowinfo, scope_id)` for IPv6.
pub(crate) fn to_py(py: Python<'_>, a: SocketAddr) -> PyResult<PyObject> {
    Ok(match a {
        SocketAddr::V4(a) => (a.ip().to_string(), a.port()).into_pyobject(py)?.into_any().unbind(),
        SocketAddr::V6(a) => {
            (a.ip().to_string(), a.port(), a.flowinfo(), a.scope_id()).into_pyobject(py)?.into_any().unbind()
        }
    })
}
