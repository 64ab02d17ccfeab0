//! The control connection of an iperf3 test, without blocking: what arrived is buffered
//! until a whole state byte, cookie or JSON message is there; what is to be sent is queued
//! and pushed into the TCP send buffer as room appears.

use super::proto::{frame_json, State, MAX_JSON};
use link::Link;
use net::{NetError, Recv, Stack, TcpHandle};
use serde_json::Value;

/// One control connection.
pub struct Control {
    /// The connection.
    pub h: TcpHandle,
    rx: Vec<u8>,
    tx: Vec<u8>,
    /// The peer closed its direction.
    eof: bool,
}

impl Control {
    /// Wrap connection `h`.
    pub fn new(h: TcpHandle) -> Control {
        Control { h, rx: Vec::new(), tx: Vec::new(), eof: false }
    }

    /// Read what arrived and send what is queued; returns the bytes moved. A connection
    /// error (reset, timeout) comes back as the error.
    pub fn pump<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let mut moved = 0;
        let mut buf = [0u8; 4096];
        while !self.eof && self.rx.len() <= MAX_JSON + 8 {
            match stack.tcp_recv(self.h, &mut buf)? {
                Recv::Data(n) => {
                    self.rx.extend_from_slice(&buf[..n]);
                    moved += n;
                }
                Recv::WouldBlock => break,
                Recv::Eof => self.eof = true,
            }
        }
        if !self.tx.is_empty() {
            let n = stack.tcp_send(self.h, &self.tx)?;
            self.tx.drain(..n);
            moved += n;
        }
        Ok(moved)
    }

    /// Queue a state byte.
    pub fn send_state(&mut self, s: State) {
        self.tx.push(s.byte());
    }

    /// Queue raw bytes.
    pub fn send_raw(&mut self, b: &[u8]) {
        self.tx.extend_from_slice(b);
    }

    /// Queue a JSON message.
    pub fn send_json(&mut self, v: &Value) {
        self.tx.extend_from_slice(&frame_json(v));
    }

    /// True once everything queued is in the TCP send buffer.
    pub fn flushed(&self) -> bool {
        self.tx.is_empty()
    }

    /// True once the peer closed and every byte it sent was taken.
    pub fn at_eof(&self) -> bool {
        self.eof && self.rx.is_empty()
    }

    /// Take `n` bytes if they have all arrived.
    pub fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        (self.rx.len() >= n).then(|| self.rx.drain(..n).collect())
    }

    /// Take one byte if there is one.
    pub fn take_byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    /// Take one JSON message if it has all arrived; an error if it is too long or not JSON.
    pub fn take_json(&mut self) -> Result<Option<Value>, String> {
        if self.rx.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([self.rx[0], self.rx[1], self.rx[2], self.rx[3]]) as usize;
        if len > MAX_JSON {
            return Err(format!("a JSON message of {len} bytes is longer than the {MAX_JSON} accepted"));
        }
        if self.rx.len() < 4 + len {
            return Ok(None);
        }
        let body: Vec<u8> = self.rx.drain(..4 + len).skip(4).collect();
        serde_json::from_slice(&body).map(Some).map_err(|e| format!("a control message is not valid JSON: {e}"))
    }
}
