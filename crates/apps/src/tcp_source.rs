//! A TCP source: connects (retrying while the peer refuses, for a bounded time), sends a
//! stream — from a reader such as a file, or the deterministic [`crate::pattern`] for a
//! time or a byte count — closes its direction, keeps what the peer sends back (up to a
//! limit), and closes once the peer has closed too. `linerate tap --tcp-send` and the iperf
//! client are built on it.

use crate::pattern;
use crate::tcp_conns::close_quietly;
use link::{Instant, Link};
use net::{NetError, Stack, TcpError, TcpHandle};
use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;

/// Sends per call at most (bounds the time spent on one connection).
const MAX_ROUNDS: usize = 16;

/// What a [`TcpSource`] sends.
pub enum Payload {
    /// Everything a reader yields, up to its end.
    Reader(Box<dyn Read + Send>),
    /// The pattern, for this long from the moment the connection is established.
    PatternFor(Duration),
    /// The first this many bytes of the pattern.
    PatternBytes(u64),
}

/// How a [`TcpSource`] behaves.
#[derive(Debug, Clone, Copy)]
pub struct SourceOptions {
    /// Keep retrying a refused connection for this long after the first attempt.
    pub retry_for: Duration,
    /// Wait between attempts.
    pub retry_interval: Duration,
    /// Bytes of the peer's reply kept (the rest is counted and dropped).
    pub reply_limit: usize,
    /// After our FIN, how long to wait for the peer's; then the source closes anyway if
    /// everything was acknowledged, and fails if not.
    pub close_wait: Duration,
}

impl Default for SourceOptions {
    fn default() -> Self {
        SourceOptions {
            retry_for: Duration::from_secs(10),
            retry_interval: Duration::from_millis(50),
            reply_limit: 64 * 1024,
            close_wait: Duration::from_secs(10),
        }
    }
}

/// Why a [`TcpSource`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// No connection could be made.
    #[error("cannot connect to {addr}: {err} (after {attempts} attempts)")]
    Connect {
        /// The peer.
        addr: SocketAddr,
        /// The last attempt's error.
        err: TcpError,
        /// Attempts made.
        attempts: u32,
    },
    /// The connection failed after it was made (or could not be opened at all).
    #[error("connection to {addr}: {err}")]
    Connection {
        /// The peer.
        addr: SocketAddr,
        /// What went wrong.
        err: NetError,
    },
    /// Reading the data to send failed.
    #[error("reading the data to send: {0}")]
    Read(#[from] std::io::Error),
    /// The peer neither closed nor acknowledged everything in time after our FIN.
    #[error("{addr} did not acknowledge all data within {wait:?} of our FIN ({pending} bytes outstanding)")]
    Unacknowledged {
        /// The peer.
        addr: SocketAddr,
        /// How long we waited.
        wait: Duration,
        /// Bytes not acknowledged.
        pending: usize,
    },
}

/// Where a source is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// SYN sent.
    Connecting,
    /// Not connected; the next attempt at this instant (the first at once).
    Backoff(Instant),
    /// Established, sending the payload.
    Sending,
    /// Our FIN is queued; waiting for the peer's until this instant.
    Closing(Instant),
    /// Closed normally.
    Done,
    /// Failed (see [`TcpSource::error`]).
    Failed,
}

/// One connection sending one stream.
pub struct TcpSource {
    remote: SocketAddr,
    opts: SourceOptions,
    payload: Payload,
    handle: Option<TcpHandle>,
    phase: Phase,
    /// The time of the first step (the stack's clock is not running before its first poll).
    started: Option<Instant>,
    /// When a timed payload ends.
    until: Option<Instant>,
    /// Reader data not yet sent: `buf[off..len]`.
    buf: Vec<u8>,
    off: usize,
    len: usize,
    reply: Vec<u8>,
    error: Option<SourceError>,
    /// Bytes handed to the stack.
    pub sent: u64,
    /// Bytes the peer acknowledged (as of the last step).
    pub acked: u64,
    /// Bytes the peer sent us (kept or not).
    pub reply_bytes: u64,
    /// Connection attempts made.
    pub attempts: u32,
    /// When the connection was established.
    pub established_at: Option<Instant>,
    /// When the source finished (done or failed).
    pub finished_at: Option<Instant>,
}

impl TcpSource {
    /// A source that sends `payload` to `remote`. It connects on its first
    /// [`step`](TcpSource::step), after a poll, when the stack's clock is running.
    pub fn new(remote: impl Into<SocketAddr>, payload: Payload, opts: SourceOptions) -> Self {
        let remote = remote.into();
        let buf = if matches!(payload, Payload::Reader(_)) { vec![0u8; 64 * 1024] } else { Vec::new() };
        TcpSource {
            remote,
            opts,
            payload,
            handle: None,
            phase: Phase::Backoff(Instant::ZERO),
            started: None,
            until: None,
            buf,
            off: 0,
            len: 0,
            reply: Vec::new(),
            error: None,
            sent: 0,
            acked: 0,
            reply_bytes: 0,
            attempts: 0,
            established_at: None,
            finished_at: None,
        }
    }

    /// The peer.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// The connection, while it is open.
    pub fn handle(&self) -> Option<TcpHandle> {
        self.handle
    }

    /// True once the source is done or has failed.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed)
    }

    /// True once the source finished normally.
    pub fn succeeded(&self) -> bool {
        self.phase == Phase::Done
    }

    /// True while the payload is going out (established, not yet closing).
    pub fn is_sending(&self) -> bool {
        self.phase == Phase::Sending
    }

    /// Why the source failed, if it did.
    pub fn error(&self) -> Option<&SourceError> {
        self.error.as_ref()
    }

    /// What the peer sent back (the first [`SourceOptions::reply_limit`] bytes).
    pub fn reply(&self) -> &[u8] {
        &self.reply
    }

    /// Advance (call after each poll). Connection errors end the source (see
    /// [`TcpSource::error`]); only the link's errors are returned. Returns the work done.
    pub fn step<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        match self.advance(stack) {
            Ok(work) => Ok(work),
            Err(SourceError::Connection { err: NetError::Link(e), .. }) => Err(NetError::Link(e)),
            Err(e) => {
                if let Some(h) = self.handle.take() {
                    // A connection that already ended is only released; a live one is reset.
                    let _ = match stack.tcp_error(h) {
                        Ok(None) => stack.tcp_abort(h).map_err(NetError::from),
                        _ => close_quietly(stack, h),
                    };
                }
                self.finish(stack, Phase::Failed);
                self.error = Some(e);
                Ok(1)
            }
        }
    }

    fn finish<L: Link>(&mut self, stack: &Stack<L>, phase: Phase) {
        self.phase = phase;
        self.finished_at = Some(stack.now());
    }

    fn net(&self, err: impl Into<NetError>) -> SourceError {
        SourceError::Connection { addr: self.remote, err: err.into() }
    }

    fn advance<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, SourceError> {
        let now = stack.now();
        let started = *self.started.get_or_insert(now);
        let Some(h) = self.handle else {
            return match self.phase {
                Phase::Backoff(at) if now >= at => {
                    self.handle = Some(stack.tcp_connect(self.remote).map_err(|e| self.net(e))?);
                    self.attempts += 1;
                    self.phase = Phase::Connecting;
                    Ok(1)
                }
                _ => Ok(0),
            };
        };
        if self.phase == Phase::Connecting {
            match stack.tcp_connect_result(h).map_err(|e| self.net(e))? {
                None => return Ok(0),
                Some(Ok(())) => {
                    self.established_at = Some(now);
                    if let Payload::PatternFor(d) = self.payload {
                        self.until = Some(now + d);
                    }
                    self.phase = Phase::Sending;
                }
                Some(Err(err)) => {
                    close_quietly(stack, h).map_err(|e| self.net(e))?;
                    self.handle = None;
                    let retry =
                        err == TcpError::Refused && now + self.opts.retry_interval < started + self.opts.retry_for;
                    if !retry {
                        return Err(SourceError::Connect { addr: self.remote, err, attempts: self.attempts });
                    }
                    self.phase = Phase::Backoff(now + self.opts.retry_interval);
                    return Ok(1);
                }
            }
        }
        let mut work = self.read_reply(stack, h).map_err(|e| self.net(e))?;
        if self.phase == Phase::Sending {
            let (n, ended) = self.send_some(stack, h, now)?;
            work += n;
            if ended {
                stack.tcp_shutdown(h).map_err(|e| self.net(e))?;
                self.phase = Phase::Closing(now + self.opts.close_wait);
                work += 1;
            }
        }
        if work > 0 {
            self.update_acked(stack, h)?;
        }
        if let Phase::Closing(deadline) = self.phase {
            if stack.tcp_at_eof(h).map_err(|e| self.net(e))? {
                self.close(stack, h)?;
                return Ok(work + 1);
            }
            if now >= deadline {
                let pending = stack.tcp_send_pending(h).map_err(|e| self.net(e))?;
                if pending > 0 {
                    return Err(SourceError::Unacknowledged { addr: self.remote, wait: self.opts.close_wait, pending });
                }
                self.close(stack, h)?;
                return Ok(work + 1);
            }
        }
        Ok(work)
    }

    /// Bytes acknowledged: handed over minus still pending.
    fn update_acked<L: Link>(&mut self, stack: &Stack<L>, h: TcpHandle) -> Result<(), SourceError> {
        let pending = stack.tcp_send_pending(h).map_err(|e| self.net(e))?;
        self.acked = self.sent.saturating_sub(pending as u64);
        Ok(())
    }

    fn close<L: Link>(&mut self, stack: &mut Stack<L>, h: TcpHandle) -> Result<(), SourceError> {
        self.update_acked(stack, h)?;
        close_quietly(stack, h).map_err(|e| self.net(e))?;
        self.handle = None;
        self.finish(stack, Phase::Done);
        Ok(())
    }

    /// Keep (up to the limit) or drop what the peer sent.
    fn read_reply<L: Link>(&mut self, stack: &mut Stack<L>, h: TcpHandle) -> Result<usize, NetError> {
        let mut got = 0;
        for _ in 0..2 {
            let data = stack.tcp_recv_borrow(h)?;
            if data.is_empty() {
                break;
            }
            let keep = data.len().min(self.opts.reply_limit - self.reply.len());
            self.reply.extend_from_slice(&data[..keep]);
            let n = data.len();
            stack.tcp_recv_consume(h, n)?;
            got += n;
        }
        self.reply_bytes += got as u64;
        Ok(got)
    }

    /// Hand the stack as much payload as it takes; returns (bytes, whether the payload ended).
    fn send_some<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        h: TcpHandle,
        now: Instant,
    ) -> Result<(usize, bool), SourceError> {
        let mut moved = 0;
        for _ in 0..MAX_ROUNDS {
            let chunk: &[u8] = match &mut self.payload {
                Payload::PatternFor(_) if self.until.is_some_and(|u| now >= u) => return Ok((moved, true)),
                Payload::PatternFor(_) => pattern::run_at(self.sent),
                Payload::PatternBytes(total) if self.sent >= *total => return Ok((moved, true)),
                Payload::PatternBytes(total) => {
                    let run = pattern::run_at(self.sent);
                    &run[..run.len().min((*total - self.sent) as usize)]
                }
                Payload::Reader(r) => {
                    if self.off == self.len {
                        (self.off, self.len) = (0, read_retrying(r.as_mut(), &mut self.buf)?);
                        if self.len == 0 {
                            return Ok((moved, true));
                        }
                    }
                    &self.buf[self.off..self.len]
                }
            };
            // Checking the space first keeps a full connection cheap (the send path looks at
            // more of the session's state).
            if stack.tcp_send_space(h).map_err(|err| SourceError::Connection { addr: self.remote, err: err.into() })?
                == 0
            {
                break;
            }
            let want = chunk.len();
            let n = stack
                .tcp_send(h, chunk)
                .map_err(|err| SourceError::Connection { addr: self.remote, err: err.into() })?;
            if matches!(self.payload, Payload::Reader(_)) {
                self.off += n;
            }
            self.sent += n as u64;
            moved += n;
            if n < want {
                break;
            }
        }
        Ok((moved, false))
    }
}

/// `read`, retrying when interrupted.
fn read_retrying(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}
