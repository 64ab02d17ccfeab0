//! The data streams of an iperf3 test, on either side: a TCP connection or a UDP flow, that
//! sends (paced to a rate if one is set) or receives, with the figures iperf3 reports about
//! it: bytes, TCP retransmissions, and for UDP the packets, losses, reordering and jitter.

use super::proto::{read_udp_header, udp_header_len, write_udp_header, StreamResult};
use link::{Instant, Link};
use net::{NetError, Stack, TcpHandle, UdpHandle};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What carries a stream.
#[derive(Debug, Clone, Copy)]
pub enum Carrier {
    /// A TCP connection.
    Tcp(TcpHandle),
    /// A UDP flow on a socket, to and from one peer.
    Udp {
        /// The socket.
        sock: UdpHandle,
        /// The other end (either family).
        peer: SocketAddr,
    },
}

/// Figures of a UDP receiver, computed as iperf3 does (RFC 1889 jitter).
#[derive(Debug, Clone, Copy, Default)]
pub struct UdpRecv {
    /// Highest sequence number seen.
    pub highest: u64,
    /// Packets missing (a late arrival takes one back).
    pub lost: i64,
    /// Packets that came after a higher sequence number.
    pub out_of_order: u64,
    /// Smoothed jitter, seconds.
    pub jitter: f64,
    prev_transit: Option<f64>,
}

impl UdpRecv {
    /// Account one packet with sequence number `seq` sent at `sent` (seconds since the epoch)
    /// and arriving at `arrival`.
    pub fn packet(&mut self, seq: u64, sent: f64, arrival: f64) {
        if seq > self.highest {
            self.lost += (seq - self.highest - 1) as i64;
            self.highest = seq;
        } else {
            self.out_of_order += 1;
            if self.lost > 0 {
                self.lost -= 1;
            }
        }
        let transit = arrival - sent;
        let d = (transit - self.prev_transit.unwrap_or(transit)).abs();
        self.prev_transit = Some(transit);
        self.jitter += (d - self.jitter) / 16.0;
    }
}

/// A payload block: bytes that do not compress to nothing.
fn block() -> &'static [u8] {
    static BLOCK: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BLOCK.get_or_init(|| {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..64 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    })
}

/// Bytes a TCP stream keeps queued but not yet acknowledged at most (Linux's default maximum
/// send buffer): the sender's count of bytes sent runs no further ahead of what the
/// receiver has than this.
const MAX_QUEUED: u64 = 4 << 20;

/// Seconds since the Unix epoch, now.
fn wall_now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// One data stream.
pub struct Stream {
    /// iperf3's id of the stream.
    pub id: u32,
    /// This side sends on it.
    pub sender: bool,
    /// What carries it.
    pub carrier: Carrier,
    /// Bytes sent (sender) or received (receiver) while the test ran.
    pub bytes: u64,
    /// UDP packets sent.
    pub packets_sent: u64,
    /// UDP receive figures.
    pub udp: UdpRecv,
    /// TCP retransmissions (sender), taken when the stream stops.
    pub retransmits: u64,
    /// The TCP connection ended (EOF, reset or closed by us).
    pub closed: bool,
    /// Packets and retransmissions before the counts were last reset.
    packets_base: u64,
    retransmits_base: u64,
    /// An error that ended the stream.
    pub error: Option<NetError>,
}

impl Stream {
    /// A stream with id `id` carried by `carrier`.
    pub fn new(id: u32, sender: bool, carrier: Carrier) -> Stream {
        Stream {
            id,
            sender,
            carrier,
            bytes: 0,
            packets_sent: 0,
            udp: UdpRecv::default(),
            retransmits: 0,
            closed: false,
            packets_base: 0,
            retransmits_base: 0,
            error: None,
        }
    }

    /// Send what the budget and the pacing allow: at most `budget` bytes (None: any), and with
    /// `rate` (bits/s, 0: unlimited) no more than the rate allows since `start`. `len` is the
    /// block (UDP: datagram) length. Returns the bytes sent.
    pub fn send<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        start: Instant,
        rate: u64,
        len: usize,
        budget: Option<u64>,
        counters_64bit: bool,
    ) -> Result<u64, NetError> {
        if self.closed {
            return Ok(0);
        }
        let mut allowed = budget.unwrap_or(u64::MAX);
        if rate > 0 {
            let elapsed = (stack.now() - start).as_secs_f64();
            // A block may always go out at the start; after that the average stays at the rate.
            let due = (rate as f64 * elapsed / 8.0) as u64 + len as u64;
            allowed = allowed.min(due.saturating_sub(self.bytes));
        }
        let sent = match self.carrier {
            Carrier::Tcp(h) => self.send_tcp(stack, h, allowed),
            Carrier::Udp { sock, peer } => self.send_udp(stack, sock, peer, len, allowed, counters_64bit),
        };
        self.fail_on(sent)
    }

    fn send_tcp<L: Link>(&mut self, stack: &mut Stack<L>, h: TcpHandle, allowed: u64) -> Result<u64, NetError> {
        let mut sent = 0u64;
        let queued = stack.tcp_send_pending(h)? as u64;
        let allowed = allowed.min(MAX_QUEUED.saturating_sub(queued));
        let b = block();
        while sent < allowed {
            let n = (allowed - sent).min(b.len() as u64) as usize;
            let took = stack.tcp_send(h, &b[..n])?;
            if took == 0 {
                break;
            }
            sent += took as u64;
        }
        self.bytes += sent;
        Ok(sent)
    }

    fn send_udp<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        sock: UdpHandle,
        peer: SocketAddr,
        len: usize,
        allowed: u64,
        wide: bool,
    ) -> Result<u64, NetError> {
        let mut sent = 0u64;
        // Bounded per call so that the control connection and other streams get their turn.
        for _ in 0..64 {
            if sent + len as u64 > allowed {
                break;
            }
            let now = wall_now();
            let seq = self.packets_sent + 1;
            let ok = stack.udp_send_with(sock, peer, len, |buf| {
                let b = block();
                let h = udp_header_len(wide);
                write_udp_header(buf, now.as_secs() as u32, now.subsec_micros(), seq, wide);
                let mut i = h;
                while i < buf.len() {
                    let n = (buf.len() - i).min(b.len());
                    buf[i..i + n].copy_from_slice(&b[..n]);
                    i += n;
                }
            })?;
            if !ok {
                break;
            }
            self.packets_sent = seq;
            sent += len as u64;
        }
        self.bytes += sent;
        Ok(sent)
    }

    /// Read what arrived on a TCP stream; with `count` the bytes count as test data. Returns
    /// the bytes read.
    pub fn recv_tcp<L: Link>(&mut self, stack: &mut Stack<L>, count: bool) -> Result<u64, NetError> {
        let Carrier::Tcp(h) = self.carrier else { return Ok(0) };
        if self.closed {
            return Ok(0);
        }
        let r = (|| {
            let mut got = 0u64;
            for _ in 0..2 {
                let n = stack.tcp_recv_borrow(h)?.len();
                if n == 0 {
                    break;
                }
                stack.tcp_recv_consume(h, n)?;
                got += n as u64;
            }
            if got == 0 && stack.tcp_at_eof(h)? {
                self.closed = true;
            }
            Ok(got)
        })();
        let got = self.fail_on(r)?;
        if count {
            self.bytes += got;
        }
        Ok(got)
    }

    /// Account a UDP datagram that arrived for this stream.
    pub fn recv_udp(&mut self, data: &[u8], counters_64bit: bool) {
        let Some((sec, usec, seq)) = read_udp_header(data, counters_64bit) else { return };
        self.bytes += data.len() as u64;
        let sent = sec as f64 + usec as f64 * 1e-6;
        self.udp.packet(seq, sent, wall_now().as_secs_f64());
    }

    /// Forget what was counted so far (the end of the omitted start of a test): bytes, UDP
    /// packets and losses, and the retransmissions before now.
    pub fn reset_counts<L: Link>(&mut self, stack: &Stack<L>) {
        self.bytes = 0;
        self.packets_base = if self.sender { self.packets_sent } else { self.udp.highest };
        self.udp.lost = 0;
        self.udp.out_of_order = 0;
        self.take_retransmits(stack);
        self.retransmits_base = self.retransmits;
    }

    /// Record the TCP retransmissions of a sending stream (before it is closed).
    pub fn take_retransmits<L: Link>(&mut self, stack: &Stack<L>) {
        if let (Carrier::Tcp(h), true) = (self.carrier, self.sender) {
            if let Ok(s) = stack.tcp_stats(h) {
                self.retransmits = s.retransmits;
            }
        }
    }

    /// Close a TCP stream gracefully (queued data still goes out); UDP streams have nothing
    /// to close (their socket may be shared).
    pub fn close<L: Link>(&mut self, stack: &mut Stack<L>) {
        if let Carrier::Tcp(h) = self.carrier {
            let _ = stack.tcp_close(h);
        }
        self.closed = true;
    }

    /// The stream's line in the results, over `seconds`.
    pub fn result(&self, seconds: f64, has_retransmits: bool) -> StreamResult {
        let udp = matches!(self.carrier, Carrier::Udp { .. });
        StreamResult {
            id: self.id,
            bytes: self.bytes,
            retransmits: if self.sender && has_retransmits {
                self.retransmits.saturating_sub(self.retransmits_base) as i64
            } else {
                -1
            },
            jitter: if udp && !self.sender { self.udp.jitter } else { 0.0 },
            errors: if udp && !self.sender { self.udp.lost } else { 0 },
            packets: if self.sender { self.packets_sent } else { self.udp.highest }.saturating_sub(self.packets_base)
                as i64,
            start_time: 0.0,
            end_time: seconds,
        }
    }

    /// Remember an error that ends the stream.
    fn fail_on(&mut self, r: Result<u64, NetError>) -> Result<u64, NetError> {
        match r {
            Err(e) if crate::tcp_conns::is_connection_error(&e) => {
                self.closed = true;
                self.error.get_or_insert(e);
                Ok(0)
            }
            other => other,
        }
    }
}

/// Take every datagram waiting on `sock` and hand each to `f` with its sender; returns the
/// count.
pub fn drain_udp<L: Link>(
    stack: &mut Stack<L>,
    sock: UdpHandle,
    mut f: impl FnMut(SocketAddr, &[u8]),
) -> Result<usize, NetError> {
    let mut n = 0;
    while stack.udp_recv_with(sock, |from, data| f(from, data))?.is_some() {
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_loss_reorder_and_jitter() {
        let mut u = UdpRecv::default();
        u.packet(1, 0.0, 1.0);
        u.packet(2, 0.1, 1.1);
        u.packet(4, 0.3, 1.3);
        assert_eq!((u.highest, u.lost, u.out_of_order), (4, 1, 0));
        u.packet(3, 0.2, 1.4);
        assert_eq!((u.lost, u.out_of_order), (0, 1));
        assert!(u.jitter > 0.0 && u.jitter < 0.2);
    }
}
