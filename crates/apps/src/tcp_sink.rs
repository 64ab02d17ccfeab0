//! A TCP sink (the discard service, RFC 863, and the receiving end of iperf): reads and drops
//! everything, counting bytes and the time from the first to the last. With reporting on
//! (the iperf protocol), a connection answers the client's FIN with the number of bytes it
//! received, as 8 bytes little-endian, and then closes. With RX bypass the payload is counted
//! straight from the received frames and never enters the receive buffers.

use crate::tcp_conns::{ConnCounts, ConnSet, Step};
use link::{Instant, Link};
use net::{NetError, Stack, TcpHandle};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Length of the byte-count report of the iperf protocol.
pub const REPORT_LEN: usize = 8;

/// A counting TCP sink on one port.
pub struct TcpSink {
    /// Per connection: bytes read from its receive buffer, and whether it is in RX bypass.
    conns: ConnSet<(u64, bool)>,
    report: bool,
    /// Bytes the RX-bypass handler counted (None: bypass off).
    bypassed: Option<Arc<AtomicU64>>,
    /// Part of `bypassed` already added to `bytes`.
    bypassed_seen: u64,
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
        let conns = ConnSet::listen(stack, port, backlog)?.with_activity();
        Ok(TcpSink { conns, report: false, bypassed: None, bypassed_seen: 0, bytes: 0, first: None, last: None })
    }

    /// Count payload in RX bypass: installs `stack`'s RX-bypass handler (replacing any other)
    /// and switches every accepted connection to it.
    pub fn with_rx_bypass<L: Link>(mut self, stack: &mut Stack<L>) -> Self {
        let counted = Arc::new(AtomicU64::new(0));
        let c = counted.clone();
        stack.tcp_set_rx_handler(move |_, data| {
            c.fetch_add(data.len() as u64, Ordering::Relaxed);
        });
        self.bypassed = Some(counted);
        self
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
        let (report, bypass) = (self.report, self.bypassed.is_some());
        let mut got = 0u64;
        let work = self.conns.serve(
            stack,
            || (0u64, false),
            |stack, h, (count, in_bypass)| {
                if bypass && !*in_bypass {
                    stack.tcp_set_rx_bypass(h, true)?;
                    *in_bypass = true;
                }
                let r = drain(stack, h, count, report, *in_bypass);
                if let Ok(Step::Open(n) | Step::Finished(n)) = r {
                    got += n as u64;
                }
                r
            },
        )?;
        if let Some(counted) = &self.bypassed {
            let total = counted.load(Ordering::Relaxed);
            got += total - self.bypassed_seen;
            self.bypassed_seen = total;
        }
        if got > 0 {
            let now = stack.now();
            self.first.get_or_insert(now);
            self.last = Some(now);
            self.bytes += got;
        }
        Ok(work)
    }
}

/// Drop everything one connection has ready; at the end of its stream, report if asked (in
/// RX bypass the count is every in-order byte the connection received).
fn drain<L: Link>(
    stack: &mut Stack<L>,
    h: TcpHandle,
    count: &mut u64,
    report: bool,
    bypass: bool,
) -> Result<Step, NetError> {
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
        let total = if bypass { stack.tcp_stats(h)?.bytes_received } else { *count };
        stack.tcp_send(h, &total.to_le_bytes())?;
    }
    Ok(Step::Finished(got))
}
