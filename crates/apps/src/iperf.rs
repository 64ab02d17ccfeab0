//! iperf between linerate hosts, with a protocol of our own: the client opens `parallel`
//! connections to a [`TcpSink`] with reporting on, sends the deterministic pattern on each for
//! a set time and closes its direction; the server answers each FIN with the bytes it
//! received on that connection (8 bytes little-endian) and closes. Goodput is what the
//! receiver counted over the time from the first connection established to the last report.
//!
//! The server is `TcpSink::listen(stack, port, backlog)?.with_report()`.
//!
//! [`TcpSink`]: crate::TcpSink

use crate::step_plan::StepPlan;
use crate::tcp_sink::REPORT_LEN;
use crate::tcp_source::{Payload, SourceError, SourceOptions, TcpSource};
use link::{Instant, Link};
use net::{NetError, Stack};
use std::net::SocketAddr;
use std::time::Duration;

/// The default iperf port (the same as iperf3's).
pub const DEFAULT_PORT: u16 = 5201;

/// The client side of one iperf run.
pub struct IperfClient {
    sources: Vec<TcpSource>,
    /// Connections finished (kept so that the per-poll checks do not walk every connection).
    finished: usize,
    /// Sum of the connections' acknowledged bytes.
    acked: u64,
    /// When the first connection was established.
    started_at: Option<Instant>,
    /// Which connections to step after a poll.
    plan: StepPlan,
    /// Reused list of the sources to step.
    todo: Vec<usize>,
}

/// The outcome of a finished run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IperfResult {
    /// Connections that finished with a report.
    pub reported: usize,
    /// Connections in the run.
    pub connections: usize,
    /// Bytes handed to the stack.
    pub sent: u64,
    /// Bytes the server reported receiving.
    pub received: u64,
    /// From the first connection established to the last one finished.
    pub elapsed: Duration,
}

impl IperfResult {
    /// Receiver goodput in bits per second.
    pub fn bits_per_sec(&self) -> f64 {
        self.received as f64 * 8.0 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl IperfClient {
    /// A run of `parallel` connections to the server at `server`, each sending for `duration`
    /// once established; refused connections are retried for `retry_for`. The connections
    /// open on the first [`step`](IperfClient::step).
    pub fn new(server: impl Into<SocketAddr>, parallel: usize, duration: Duration, retry_for: Duration) -> Self {
        Self::spread(&[server.into()], parallel, duration, retry_for)
    }

    /// [`IperfClient::new`] with the connections spread over `servers` in turn (connection `i`
    /// to `servers[i % servers.len()]`): more connections than one client address has
    /// ephemeral ports towards one server port. An empty `servers` gives no connections.
    pub fn spread(servers: &[SocketAddr], parallel: usize, duration: Duration, retry_for: Duration) -> Self {
        let opts = SourceOptions { retry_for, reply_limit: REPORT_LEN, ..SourceOptions::default() };
        let sources = servers
            .iter()
            .cycle()
            .take(if servers.is_empty() { 0 } else { parallel.max(1) })
            .map(|&to| TcpSource::new(to, Payload::PatternFor(duration), opts))
            .collect();
        IperfClient { sources, finished: 0, acked: 0, started_at: None, plan: StepPlan::new(), todo: Vec::new() }
    }

    /// Advance the connections (call after each poll): those with activity in the stack,
    /// and all of them every [`SWEEP_EVERY`](crate::step_plan::SWEEP_EVERY). Returns the work
    /// done.
    pub fn step<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut todo = std::mem::take(&mut self.todo);
        let mut work = 0;
        if self.plan.plan(stack, &mut todo) {
            for i in 0..self.sources.len() {
                work += self.step_one(stack, i)?;
            }
        } else {
            for &i in &todo {
                work += self.step_one(stack, i)?;
            }
        }
        self.todo = todo;
        Ok(work)
    }

    fn step_one<L: Link>(&mut self, stack: &mut Stack<L>, i: usize) -> Result<usize, NetError> {
        let s = &mut self.sources[i];
        if s.is_finished() {
            return Ok(0);
        }
        let (acked, before) = (s.acked, s.handle());
        let work = s.step(stack)?;
        self.acked += s.acked.saturating_sub(acked);
        if s.handle() != before {
            if let Some(h) = before {
                self.plan.unbind(h);
            }
            if let Some(h) = s.handle() {
                self.plan.bind(h, i);
            }
        }
        if s.is_finished() {
            self.finished += 1;
        }
        if self.started_at.is_none() {
            self.started_at = s.established_at;
        }
        Ok(work)
    }

    /// The connections.
    pub fn sources(&self) -> &[TcpSource] {
        &self.sources
    }

    /// True once every connection finished (or failed).
    pub fn is_finished(&self) -> bool {
        self.finished == self.sources.len()
    }

    /// When the first connection was established, if any was.
    pub fn started_at(&self) -> Option<Instant> {
        self.started_at
    }

    /// Bytes the server acknowledged so far, over all connections.
    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// The connections' errors.
    pub fn errors(&self) -> impl Iterator<Item = &SourceError> {
        self.sources.iter().filter_map(TcpSource::error)
    }

    /// The result so far (final once [`IperfClient::is_finished`]).
    pub fn result(&self) -> IperfResult {
        let first = self.started_at();
        let last = self.sources.iter().filter_map(|s| s.finished_at).max();
        let reports: Vec<u64> = self.sources.iter().filter_map(report).collect();
        IperfResult {
            reported: reports.len(),
            connections: self.sources.len(),
            sent: self.sources.iter().map(|s| s.sent).sum(),
            received: reports.iter().sum(),
            elapsed: match (first, last) {
                (Some(a), Some(b)) if b > a => b - a,
                _ => Duration::ZERO,
            },
        }
    }
}

/// The byte count a finished connection's server reported.
fn report(s: &TcpSource) -> Option<u64> {
    let r: [u8; REPORT_LEN] = s.reply().try_into().ok()?;
    s.succeeded().then_some(u64::from_le_bytes(r))
}
