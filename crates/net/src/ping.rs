//! The ping client: echo requests carry their send time, replies yield round-trip times.

use link::Instant;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::time::Duration;

/// One answered ping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingReply {
    /// Who answered.
    pub from: IpAddr,
    /// Sequence number of the request.
    pub seq: u16,
    /// Round-trip time, from the timestamp carried in the payload.
    pub rtt: Duration,
    /// TTL (hop limit) of the reply.
    pub ttl: u8,
    /// ICMP payload length.
    pub len: usize,
}

/// Bytes of the send timestamp at the start of an echo payload.
pub(crate) const STAMP_LEN: usize = 8;
const MAX_REPLIES: usize = 4096;

/// State of the ping client: our identifier and the replies not yet collected.
#[derive(Debug)]
pub(crate) struct PingClient {
    pub ident: u16,
    replies: VecDeque<PingReply>,
}

impl PingClient {
    pub fn new(ident: u16) -> Self {
        PingClient { ident, replies: VecDeque::with_capacity(64) }
    }

    /// Fill an echo payload: send time, then a byte pattern (like Linux ping).
    pub fn fill_payload(buf: &mut [u8], now: Instant) {
        let stamp = now.as_nanos().to_be_bytes();
        let n = buf.len().min(STAMP_LEN);
        buf[..n].copy_from_slice(&stamp[..n]);
        for (i, b) in buf.iter_mut().enumerate().skip(STAMP_LEN) {
            *b = i as u8;
        }
    }

    /// Record a reply; false if it is not one of ours.
    pub fn on_reply(&mut self, from: IpAddr, ident: u16, seq: u16, ttl: u8, data: &[u8], now: Instant) -> bool {
        if ident != self.ident || data.len() < STAMP_LEN {
            return false;
        }
        let mut stamp = [0u8; STAMP_LEN];
        stamp.copy_from_slice(&data[..STAMP_LEN]);
        let sent = Instant::from_nanos(u64::from_be_bytes(stamp));
        if self.replies.len() == MAX_REPLIES {
            self.replies.pop_front();
        }
        self.replies.push_back(PingReply { from, seq, rtt: now - sent, ttl, len: data.len() });
        true
    }

    pub fn take(&mut self) -> Option<PingReply> {
        self.replies.pop_front()
    }
}
