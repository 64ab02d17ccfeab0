//! The accepted connections of one listening port, each with per-connection state: what every
//! TCP service (echo, sink, HTTP) shares — accept, step every connection, close the finished
//! ones, count the ones that failed.

use crate::step_plan::StepPlan;
use link::Link;
use net::{ControlError, NetError, Stack, TcpHandle, TcpListener};

/// What one step of a connection's service did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The connection stays open; this many bytes moved (0: nothing to do now).
    Open(usize),
    /// The service is done with the connection (it is closed gracefully); this many bytes moved.
    Finished(usize),
}

/// True for errors that end one connection but not the service (reset, timeout, closed).
pub fn is_connection_error(e: &NetError) -> bool {
    matches!(e, NetError::Tcp(_) | NetError::NotConnected | NetError::BadHandle)
}

/// How many connections a service accepted, finished, lost, and has open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnCounts {
    /// Connections accepted.
    pub accepted: u64,
    /// Connections the service finished and closed normally.
    pub completed: u64,
    /// Connections that ended with an error (reset, timeout).
    pub failed: u64,
    /// Connections open now.
    pub open: usize,
}

/// A listener and its accepted connections, each with state `T`.
pub struct ConnSet<T> {
    listener: TcpListener,
    conns: Vec<(TcpHandle, T)>,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections the service finished and closed normally.
    pub completed: u64,
    /// Connections that ended with an error (reset, timeout).
    pub failed: u64,
    /// With activity watching on: which connections to step (else all, every time).
    plan: Option<StepPlan>,
    /// Reused list of the connections to step.
    todo: Vec<usize>,
}

impl<T> ConnSet<T> {
    /// Listen on `port` of `stack` with room for `backlog` waiting connections.
    pub fn listen<L: Link>(stack: &mut Stack<L>, port: u16, backlog: usize) -> Result<Self, NetError> {
        let listener = stack.tcp_listen(port, backlog)?;
        Ok(ConnSet { listener, conns: Vec::new(), accepted: 0, completed: 0, failed: 0, plan: None, todo: Vec::new() })
    }

    /// Step only connections with activity in the stack (plus all of them every
    /// [`SWEEP_EVERY`](crate::step_plan::SWEEP_EVERY)). Only for services whose pending work
    /// always waits on the stack (data, ACKs, FIN), not on other threads or clocks.
    pub fn with_activity(mut self) -> Self {
        self.plan = Some(StepPlan::new());
        self
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.listener.port()
    }

    /// The listening port's handle.
    pub fn listener(&self) -> TcpListener {
        self.listener
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.conns.len()
    }

    /// The connection counts.
    pub fn counts(&self) -> ConnCounts {
        ConnCounts { accepted: self.accepted, completed: self.completed, failed: self.failed, open: self.conns.len() }
    }

    /// The open connections and their states.
    pub fn iter(&self) -> impl Iterator<Item = &(TcpHandle, T)> {
        self.conns.iter()
    }

    /// Accept every waiting connection (state from `init`), then run `step` once on each open
    /// connection. A connection whose step returns [`Step::Finished`] is closed gracefully; one
    /// that fails with a connection error is closed and counted in `failed`. Other errors
    /// (the link's) are returned. Returns the bytes moved plus the connections accepted or
    /// closed (0: nothing happened).
    pub fn serve<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        mut init: impl FnMut() -> T,
        mut step: impl FnMut(&mut Stack<L>, TcpHandle, &mut T) -> Result<Step, NetError>,
    ) -> Result<usize, NetError> {
        let mut work = 0;
        let first_new = self.conns.len();
        while let Some(h) = stack.tcp_accept(self.listener) {
            if let Some(p) = &mut self.plan {
                p.bind(h, self.conns.len());
            }
            self.conns.push((h, init()));
            self.accepted += 1;
            work += 1;
        }
        let mut todo = std::mem::take(&mut self.todo);
        let sweep = match &mut self.plan {
            Some(p) => p.plan(stack, &mut todo),
            None => true,
        };
        if sweep {
            let mut i = 0;
            while i < self.conns.len() {
                let (n, kept) = self.step_at(stack, i, &mut step)?;
                work += n;
                i += kept as usize;
            }
        } else {
            // Highest index first: removing one moves the last connection into its place,
            // which is then already done.
            todo.extend(first_new..self.conns.len());
            todo.sort_unstable_by(|a, b| b.cmp(a));
            todo.dedup();
            for &i in &todo {
                if i < self.conns.len() {
                    work += self.step_at(stack, i, &mut step)?.0;
                }
            }
        }
        self.todo = todo;
        Ok(work)
    }

    /// Step connection `i`; a finished or failed one is closed and removed (the last one
    /// takes its place). Returns the work done and whether it stays.
    fn step_at<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        i: usize,
        step: &mut impl FnMut(&mut Stack<L>, TcpHandle, &mut T) -> Result<Step, NetError>,
    ) -> Result<(usize, bool), NetError> {
        let (h, state) = &mut self.conns[i];
        let h = *h;
        // A reset or timed-out connection may have nothing left that would report it (a
        // full send buffer is never written to again), so look first.
        let outcome = match stack.tcp_error(h) {
            Ok(Some(e)) => Err(NetError::Tcp(e)),
            Ok(None) => step(stack, h, state),
            Err(e) => Err(e.into()),
        };
        let work = match outcome {
            Ok(Step::Open(n)) => return Ok((n, true)),
            Ok(Step::Finished(n)) => {
                close_quietly(stack, h)?;
                self.completed += 1;
                n + 1
            }
            Err(e) if is_connection_error(&e) => {
                close_quietly(stack, h)?;
                self.failed += 1;
                1
            }
            Err(e) => return Err(e),
        };
        self.conns.swap_remove(i);
        if let Some(p) = &mut self.plan {
            p.unbind(h);
            if let Some((moved, _)) = self.conns.get(i) {
                p.bind(*moved, i);
            }
        }
        Ok((work, false))
    }
}

/// Close `h`, ignoring errors that only say the connection is already gone.
pub fn close_quietly<L: Link>(stack: &mut Stack<L>, h: TcpHandle) -> Result<(), NetError> {
    match stack.tcp_close(h) {
        Ok(()) | Err(ControlError::BadHandle) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
