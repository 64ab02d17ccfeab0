//! A TCP sink (the discard service, RFC 863, and the receiving end of iperf): reads and drops
//! everything, counting bytes and the time from the first to the last. With reporting on
//! (the iperf protocol), a connection answers the client's FIN with the number of bytes it
//! received, as 8 bytes little-endian, and then closes.

use crate::tcp_conns::{ConnCounts, ConnSet, Step};
use link::{Instant, Link};
use net::{NetError, Stack, TcpHandle};

/// Length of the byte-count report of the iperf protocol.
pub const REPORT_LEN: usize = 8;

/// A counting TCP sink on one port.
pub struct TcpSink {
    conns: ConnSet<u64>,
    report: bool,
    /// Bytes received over all connections.
    pub bytes: u64,
    /// When the first byte arrived (as seen by the serving loop).
    pub first: Option<Instant>,
    /// When the last byte arrived.
    pub last: Option<Instant>,
}

impl TcpSink {
    /// Listen on `port` of `stack` with room for `backlog` waiting connections.
    pub fn listen<L: Link>(stack: &mut Stack<L>, port: u16, backlog: usize) -> Result<Self, NetError> {
        Ok(TcpSink { conns: ConnSet::listen(stack, port, backlog)?, report: false, bytes: 0, first: None, last: None })
    }

    /// Answer each client's FIN with its byte count (the iperf protocol).
    pub fn with_report(mut self) -> Self {
        self.report = true;
        self
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.conns.port()
    }

    /// Connections accepted, completed, failed and open.
    pub fn connections(&self) -> ConnCounts {
        self.conns.counts()
    }

    /// Bytes per second from the first byte to the last (0 before two arrivals).
    pub fn rate(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) if b > a => self.bytes as f64 / (b - a).as_secs_f64(),
            _ => 0.0,
        }
    }

    /// Forget the byte count and times (the connection counts stay).
    pub fn reset_tally(&mut self) {
        (self.bytes, self.first, self.last) = (0, None, None);
    }

    /// Accept new connections and drain what arrived (call after each poll). Returns the
    /// work done (0: idle).
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let report = self.report;
        let mut got = 0u64;
        let work = self.conns.serve(
            stack,
            || 0u64,
            |stack, h, count| {
                let r = drain(stack, h, count, report);
                if let Ok(Step::Open(n) | Step::Finished(n)) = r {
                    got += n as u64;
                }
                r
            },
        )?;
        if got > 0 {
            let now = stack.now();
            self.first.get_or_insert(now);
            self.last = Some(now);
            self.bytes += got;
        }
        Ok(work)
    }
}

/// Drop everything one connection has ready; at the end of its stream, report if asked.
fn drain<L: Link>(stack: &mut Stack<L>, h: TcpHandle, count: &mut u64, report: bool) -> Result<Step, NetError> {
    let mut got = 0;
    // The ready data is at most two contiguous runs of the ring.
    for _ in 0..2 {
        let n = stack.tcp_recv_borrow(h)?.len();
        if n == 0 {
            break;
        }
        stack.tcp_recv_consume(h, n)?;
        got += n;
    }
    *count += got as u64;
    // While the peer may still send there is no end of stream to look for (this keeps a
    // sweep over many idle connections to the session's state alone).
    if stack.tcp_state(h)?.can_receive() || !stack.tcp_at_eof(h)? {
        return Ok(Step::Open(got));
    }
    if report {
        if stack.tcp_send_space(h)? < REPORT_LEN {
            // A sink's send buffer is empty, so this does not happen; try again next call.
            return Ok(Step::Open(got));
        }
        stack.tcp_send(h, &count.to_le_bytes())?;
    }
    Ok(Step::Finished(got))
}
