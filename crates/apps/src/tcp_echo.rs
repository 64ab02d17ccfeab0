//! A TCP echo service (RFC 862): every byte a client sends comes back on the same
//! connection; once the client has closed its direction and everything was echoed, the
//! service closes too. Serves many connections at once. With RX bypass (seed 000) the echo
//! takes each connection's bytes straight from the received frames, never from its receive
//! buffer.

use crate::tcp_conns::{ConnCounts, ConnSet, Step};
use link::Link;
use net::{NetError, Recv, Stack, TcpError, TcpHandle};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Reads per connection and call at most (bounds the time spent on one busy connection).
const MAX_ROUNDS: usize = 16;

/// Bytes an RX-bypass connection may have waiting for its send buffer: bypass cannot push
/// back, so a client that sends but does not read is aborted (counted as failed) beyond it.
pub const MAX_BYPASS_HELD: usize = 4 << 20;

/// Bytes read but not yet taken by the send buffer.
#[derive(Default)]
struct Held {
    buf: Vec<u8>,
    off: usize,
    /// The connection has been switched to RX bypass.
    in_bypass: bool,
}

/// What the RX-bypass handler was handed, per connection, not yet taken by the service.
type Bypassed = Arc<Mutex<HashMap<TcpHandle, Vec<u8>>>>;

/// A TCP echo service on one port.
pub struct TcpEcho {
    conns: ConnSet<Held>,
    scratch: Vec<u8>,
    /// With RX bypass: what the handler was handed.
    from_frames: Option<Bypassed>,
    /// Bytes echoed (taken by the send buffers).
    pub bytes: u64,
    /// Bytes taken from RX bypass (straight from the frames).
    pub bypassed: u64,
}

impl TcpEcho {
    /// Listen on `port` of `stack`.
    pub fn listen<L: Link>(stack: &mut Stack<L>, port: u16) -> Result<Self, NetError> {
        Ok(TcpEcho {
            conns: ConnSet::listen(stack, port, 1024)?.with_activity(),
            scratch: vec![0u8; 64 * 1024],
            from_frames: None,
            bytes: 0,
            bypassed: 0,
        })
    }

    /// Echo in RX bypass: installs `stack`'s RX-bypass handler (replacing any other) and
    /// switches every accepted connection to it, so payload is taken from the frames.
    pub fn with_rx_bypass<L: Link>(mut self, stack: &mut Stack<L>) -> Self {
        let map = Bypassed::default();
        let m = map.clone();
        stack.tcp_set_rx_handler(move |h, data| {
            m.lock().unwrap_or_else(|e| e.into_inner()).entry(h).or_default().extend_from_slice(data);
        });
        self.from_frames = Some(map);
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

    /// Accept new connections and echo what arrived (call after each poll). Returns the work
    /// done (0: idle).
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let (scratch, from_frames) = (&mut self.scratch, &self.from_frames);
        let (mut moved, mut bypassed) = (0u64, 0u64);
        let work = self.conns.serve(stack, Held::default, |stack, h, held| {
            let r = match from_frames {
                Some(map) => echo_bypassed(stack, h, held, map, &mut bypassed),
                None => echo_some(stack, h, held, scratch),
            };
            if let Ok(Step::Open(n) | Step::Finished(n)) = r {
                moved += n as u64;
            }
            r
        })?;
        self.bytes += moved;
        self.bypassed += bypassed;
        Ok(work)
    }
}

/// Echo what one connection has ready, as far as its send buffer takes it.
fn echo_some<L: Link>(
    stack: &mut Stack<L>,
    h: TcpHandle,
    held: &mut Held,
    scratch: &mut [u8],
) -> Result<Step, NetError> {
    let mut moved = 0;
    for _ in 0..MAX_ROUNDS {
        if held.off < held.buf.len() {
            let n = stack.tcp_send(h, &held.buf[held.off..])?;
            held.off += n;
            moved += n;
            if held.off < held.buf.len() {
                return Ok(Step::Open(moved));
            }
            held.buf.clear();
            held.off = 0;
        }
        let space = stack.tcp_send_space(h)?.min(scratch.len());
        if space == 0 {
            return Ok(Step::Open(moved));
        }
        match stack.tcp_recv(h, &mut scratch[..space])? {
            Recv::Data(n) => {
                let sent = stack.tcp_send(h, &scratch[..n])?;
                moved += sent;
                if sent < n {
                    held.buf.extend_from_slice(&scratch[sent..n]);
                }
            }
            Recv::WouldBlock => return Ok(Step::Open(moved)),
            Recv::Eof => return Ok(Step::Finished(moved)),
        }
    }
    Ok(Step::Open(moved))
}

/// Echo what RX bypass handed over for one connection (switching it to bypass first), as far
/// as its send buffer takes it (`taken` counts the bytes taken from the handler); finished
/// once the client has closed and everything went back.
fn echo_bypassed<L: Link>(
    stack: &mut Stack<L>,
    h: TcpHandle,
    held: &mut Held,
    map: &Bypassed,
    taken: &mut u64,
) -> Result<Step, NetError> {
    let lock = || map.lock().unwrap_or_else(|e| e.into_inner());
    if !held.in_bypass {
        // A handle can be reused: what an earlier connection left behind is not this one's.
        lock().remove(&h);
        // This hands what is already buffered to the handler, which takes the lock itself.
        stack.tcp_set_rx_bypass(h, true)?;
        held.in_bypass = true;
    }
    let got = lock().remove(&h);
    if let Some(got) = got {
        *taken += got.len() as u64;
        if held.off == held.buf.len() {
            (held.buf, held.off) = (got, 0);
        } else {
            held.buf.extend_from_slice(&got);
        }
    }
    if held.buf.len() - held.off > MAX_BYPASS_HELD {
        stack.tcp_abort(h)?;
        return Err(NetError::Tcp(TcpError::Aborted));
    }
    let n = stack.tcp_send(h, &held.buf[held.off..])?;
    held.off += n;
    if held.off < held.buf.len() {
        return Ok(Step::Open(n));
    }
    held.buf.clear();
    held.off = 0;
    if !stack.tcp_state(h)?.can_receive() && stack.tcp_at_eof(h)? {
        lock().remove(&h);
        return Ok(Step::Finished(n));
    }
    Ok(Step::Open(n))
}
