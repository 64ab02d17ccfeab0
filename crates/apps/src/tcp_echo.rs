//! A TCP echo service (RFC 862): every byte a client sends comes back on the same
//! connection; once the client has closed its direction and everything was echoed, the
//! service closes too. Serves many connections at once.

use crate::tcp_conns::{ConnCounts, ConnSet, Step};
use link::Link;
use net::{NetError, Recv, Stack, TcpHandle};

/// Reads per connection and call at most (bounds the time spent on one busy connection).
const MAX_ROUNDS: usize = 16;

/// Bytes read but not yet taken by the send buffer.
#[derive(Default)]
struct Held {
    buf: Vec<u8>,
    off: usize,
}

/// A TCP echo service on one port.
pub struct TcpEcho {
    conns: ConnSet<Held>,
    scratch: Vec<u8>,
    /// Bytes echoed (taken by the send buffers).
    pub bytes: u64,
}

impl TcpEcho {
    /// Listen on `port` of `stack`.
    pub fn listen<L: Link>(stack: &mut Stack<L>, port: u16) -> Result<Self, NetError> {
        Ok(TcpEcho {
            conns: ConnSet::listen(stack, port, 1024)?.with_activity(),
            scratch: vec![0u8; 64 * 1024],
            bytes: 0,
        })
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
        let scratch = &mut self.scratch;
        let mut moved = 0u64;
        let work = self.conns.serve(stack, Held::default, |stack, h, held| {
            let r = echo_some(stack, h, held, scratch);
            if let Ok(Step::Open(n) | Step::Finished(n)) = r {
                moved += n as u64;
            }
            r
        })?;
        self.bytes += moved;
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
