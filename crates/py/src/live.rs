//! How Python threads and a live host's poll thread share the host: a mutex around it, taken
//! without holding the GIL while waiting (the poll thread may need the GIL for an RX-bypass
//! callable while it holds the host), the background poll thread itself, and the waits of
//! blocking socket calls.

use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::errors::{self, closed};
use crate::host::LiveHost;

/// A live host shared by its `Host`, its sockets, its RDMA nodes and its poll thread; `None`
/// once closed.
pub(crate) type Shared = Arc<Mutex<Option<LiveHost>>>;

/// How long a thread that found nothing to do (or a busy host) sleeps before looking again.
const IDLE_SLEEP: Duration = Duration::from_micros(50);

thread_local! {
    /// True while this thread polls a host (RX-bypass callables run then).
    static POLLING: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with this thread marked as polling, so a callable it runs cannot re-enter a host.
pub(crate) fn as_poller<T>(f: impl FnOnce() -> T) -> T {
    let was = POLLING.with(|p| p.replace(true));
    let out = f();
    POLLING.with(|p| p.set(was));
    out
}

/// The host, locked; waits (without the GIL) while the poll thread or another Python thread
/// has it. `RuntimeError` from inside an RX-bypass callable (the host is busy polling).
pub(crate) fn lock<'a>(py: Python<'_>, shared: &'a Shared) -> PyResult<MutexGuard<'a, Option<LiveHost>>> {
    if POLLING.with(Cell::get) {
        return Err(errors::rt("the host is busy polling: an RX handler cannot call into linerate"));
    }
    loop {
        match shared.try_lock() {
            Ok(g) => return Ok(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => py.allow_threads(|| std::thread::sleep(IDLE_SLEEP)),
        }
    }
}

/// Start the thread that polls the host until it is closed or dropped; errors of a poll are
/// kept for `Host.run` to raise, like those of RX-bypass callables.
pub(crate) fn spawn_poller(shared: &Shared) -> std::io::Result<()> {
    let weak: Weak<Mutex<Option<LiveHost>>> = Arc::downgrade(shared);
    std::thread::Builder::new().name("linerate-poll".into()).spawn(move || loop {
        let Some(host) = weak.upgrade() else { return };
        let moved = {
            let mut g = host.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(l) = g.as_mut() else { return };
            match l.poll_once() {
                Ok(n) => n,
                Err(e) => {
                    l.keep_error(e);
                    0
                }
            }
        };
        drop(host);
        if moved == 0 {
            std::thread::sleep(IDLE_SLEEP);
        }
    })?;
    Ok(())
}

/// Wait until `take` yields, polling the host here unless its poll thread does: a `None`
/// timeout waits forever, else the wait ends with `Ok(None)` once `timeout` has passed.
/// Signals (Ctrl-C) interrupt the wait.
pub(crate) fn wait<T>(
    py: Python<'_>,
    shared: &Shared,
    timeout: Option<Duration>,
    mut take: impl FnMut(&mut LiveHost) -> PyResult<Option<T>>,
) -> PyResult<Option<T>> {
    let end = timeout.map(|t| Instant::now() + t);
    let mut last_signal_check = Instant::now();
    loop {
        let (got, moved) = {
            let mut g = lock(py, shared)?;
            let l = g.as_mut().ok_or_else(|| closed("host"))?;
            let moved = if l.background { 0 } else { l.poll_once()? };
            let got = take(l)?;
            l.refresh_ready();
            (got, moved)
        };
        if let Some(v) = got {
            return Ok(Some(v));
        }
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            return Ok(None);
        }
        if now.duration_since(last_signal_check) > Duration::from_millis(10) {
            py.check_signals()?;
            last_signal_check = now;
        }
        if moved == 0 {
            py.allow_threads(|| std::thread::sleep(IDLE_SLEEP));
        }
    }
}
