//! A client of the SPN service: sends request records, matches answers to requests in order,
//! and measures each request's round trip.

use super::record::{decode_response, encode_request, response_len, response_value, HEADER_LEN};
use super::server::TCP_SEND_BACKLOG;
use super::{Peer, Transport};
use link::{Instant, Link};
use net::{NetError, Recv, Stack, TcpHandle};
use std::collections::VecDeque;
use std::net::{SocketAddr, SocketAddrV4};
use std::time::Duration;
use wire::MacAddr;

/// What went wrong on the client side.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The stack failed.
    #[error(transparent)]
    Net(#[from] NetError),
    /// The request could not be built.
    #[error("bad request: {0}")]
    Request(String),
    /// A TCP response stream held something other than a response record: the records after
    /// it cannot be found.
    #[error("the response stream is out of step (a record without the response magic)")]
    Desync,
}

net::from_operation_errors!(ClientError; with_link);

/// An answer matched to its request.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The request id.
    pub id: u32,
    /// Ok, or the service's error status code.
    pub status: Result<(), u16>,
    /// Values received (appended to the caller's vector).
    pub count: usize,
    /// Time from sending the request to receiving the answer.
    pub latency: Duration,
}

/// What a client counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCounters {
    /// Requests sent.
    pub sent: u64,
    /// Answers received for outstanding requests, in order.
    pub answered: u64,
    /// Answers that reported an error.
    pub errors: u64,
    /// Requests given up on: a later request was answered first (lost in transit), or they
    /// timed out.
    pub lost: u64,
    /// Records that answer nothing outstanding (late or foreign).
    pub unexpected: u64,
}

/// A request waiting for its answer.
struct Outstanding {
    id: u32,
    sent: Instant,
}

/// A client bound to one stack, talking to one service.
pub struct SpnClient {
    transport: Transport,
    server: Peer,
    vector_len: usize,
    next_id: u32,
    outstanding: VecDeque<Outstanding>,
    tx: Vec<u8>,
    rx: Vec<u8>,
    /// Bytes of a partial response record in `rx` (TCP).
    rx_len: usize,
    /// Counters.
    pub counters: ClientCounters,
}

impl SpnClient {
    /// A UDP client (ephemeral port) of the service at `server`, for `vector_len`-byte vectors.
    pub fn udp<L: Link>(
        stack: &mut Stack<L>,
        server: impl Into<SocketAddr>,
        vector_len: usize,
    ) -> Result<SpnClient, NetError> {
        let server = server.into();
        let h = stack.udp_bind(0)?;
        Ok(SpnClient::new(Transport::Udp(h), Peer::Udp(server), vector_len, stack.config().mtu))
    }

    /// A raw Ethernet client of the service at MAC `server` on `ethertype`.
    pub fn raw<L: Link>(
        stack: &mut Stack<L>,
        ethertype: u16,
        server: MacAddr,
        vector_len: usize,
    ) -> Result<SpnClient, NetError> {
        let h = stack.raw_bind(ethertype)?;
        Ok(SpnClient::new(Transport::Raw(h), Peer::Raw(server), vector_len, stack.config().mtu))
    }

    /// A TCP client of the service at `server`: connects now (requests wait until the
    /// connection is up; [`SpnClient::send`] reports the link full until then). Requests go
    /// back to back on the stream, each handed over with [`Stack::tcp_send_transfer`].
    pub fn tcp<L: Link>(stack: &mut Stack<L>, server: SocketAddrV4, vector_len: usize) -> Result<SpnClient, NetError> {
        let h = stack.tcp_connect(server)?;
        Ok(SpnClient::new(Transport::Tcp(h), Peer::Tcp(h), vector_len, stack.config().mtu))
    }

    fn new(transport: Transport, server: Peer, vector_len: usize, mtu: usize) -> SpnClient {
        SpnClient {
            transport,
            server,
            vector_len,
            next_id: 0,
            outstanding: VecDeque::new(),
            tx: Vec::with_capacity(mtu),
            rx: vec![0; mtu.max(HEADER_LEN)],
            rx_len: 0,
            counters: ClientCounters::default(),
        }
    }

    /// The client's socket (close it on the stack when done).
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Largest record this client's transport carries at `mtu` (TCP: one full segment, so
    /// the request sizes match the datagram transports'; a stream itself has no limit).
    pub fn record_limit(&self, mtu: usize) -> usize {
        match self.transport {
            Transport::Udp(_) => mtu.saturating_sub(28),
            Transport::Raw(_) => mtu,
            Transport::Tcp(_) | Transport::TcpListen(_) => mtu.saturating_sub(40),
        }
    }

    /// Most vectors per request at `mtu`: the request and its answer must each fit one record.
    pub fn max_vectors(&self, mtu: usize, masked: bool) -> usize {
        let room = self.record_limit(mtu).saturating_sub(HEADER_LEN);
        let per = self.vector_len + if masked { self.vector_len.div_ceil(8) } else { 0 };
        (room / per.max(1)).min(room / 8).min(usize::from(u16::MAX))
    }

    /// Requests sent and not answered yet.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Send a request for `vectors` (and optional masks). `Ok(false)` if the link is full
    /// (nothing was sent; retry after a poll).
    pub fn send<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        vectors: &[u8],
        masks: Option<&[u8]>,
        log: bool,
        now: Instant,
    ) -> Result<bool, ClientError> {
        let id = self.next_id;
        encode_request(id, self.vector_len, vectors, masks, log, &mut self.tx).map_err(ClientError::Request)?;
        self.send_record(stack, id, now)
    }

    /// Send an arbitrary record (for tests of malformed requests) as request `id`.
    pub fn send_raw_record<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        record: &[u8],
        id: u32,
        now: Instant,
    ) -> Result<bool, ClientError> {
        self.tx.clear();
        self.tx.extend_from_slice(record);
        self.send_record(stack, id, now)
    }

    fn send_record<L: Link>(&mut self, stack: &mut Stack<L>, id: u32, now: Instant) -> Result<bool, ClientError> {
        let ok = match (self.transport, self.server) {
            (Transport::Udp(h), Peer::Udp(to)) => stack.udp_send_to(h, to, &self.tx)?,
            (Transport::Raw(h), Peer::Raw(to)) => stack.raw_send(h, to, &self.tx)?,
            (Transport::Tcp(h), _) => match stack.tcp_connect_result(h)? {
                None => false,
                Some(Err(e)) => return Err(NetError::Tcp(e).into()),
                Some(Ok(())) if stack.tcp_send_pending(h)? >= TCP_SEND_BACKLOG => false,
                Some(Ok(())) => {
                    let cap = self.tx.capacity();
                    let record = std::mem::replace(&mut self.tx, Vec::with_capacity(cap));
                    stack.tcp_send_transfer(h, record)?;
                    true
                }
            },
            _ => false,
        };
        if ok {
            self.outstanding.push_back(Outstanding { id, sent: now });
            self.next_id = id.wrapping_add(1);
            self.counters.sent += 1;
        }
        Ok(ok)
    }

    /// Take the next answer, if one arrived: appends its values to `values`. Answers must
    /// come in request order; a request skipped over is counted lost.
    pub fn poll_reply<L: Link>(
        &mut self,
        stack: &mut Stack<L>,
        now: Instant,
        values: &mut Vec<f64>,
    ) -> Result<Option<Reply>, ClientError> {
        loop {
            let got = match self.transport {
                Transport::Udp(h) => stack.udp_recv_from(h, &mut self.rx)?.map(|(n, _)| n),
                Transport::Raw(h) => stack.raw_recv(h, &mut self.rx)?.map(|(n, _)| n),
                Transport::Tcp(h) => self.recv_record(stack, h)?,
                Transport::TcpListen(_) => None,
            };
            let Some(n) = got else { return Ok(None) };
            let rec = &self.rx[..n.min(self.rx.len())];
            let Ok(resp) = decode_response(rec) else {
                self.counters.unexpected += 1;
                continue;
            };
            let Some(pos) = self.outstanding.iter().position(|o| o.id == resp.id) else {
                self.counters.unexpected += 1;
                continue;
            };
            self.counters.lost += pos as u64;
            self.outstanding.drain(..pos);
            let o = self.outstanding.pop_front().map_or(now, |o| o.sent);
            self.counters.answered += 1;
            if resp.status.is_err() {
                self.counters.errors += 1;
            }
            values.extend((0..usize::from(resp.count)).map(|i| response_value(rec, i)));
            return Ok(Some(Reply {
                id: resp.id,
                status: resp.status,
                count: usize::from(resp.count),
                latency: now - o,
            }));
        }
    }

    /// Gather the next response record from the TCP stream into `rx[..n]`; `Some(n)` once it
    /// is complete, `None` while more bytes are needed (a partial record is kept).
    fn recv_record<L: Link>(&mut self, stack: &mut Stack<L>, h: TcpHandle) -> Result<Option<usize>, ClientError> {
        loop {
            let want = if self.rx_len < HEADER_LEN {
                HEADER_LEN
            } else {
                response_len(&self.rx[..HEADER_LEN]).ok_or_else(|| {
                    self.counters.unexpected += 1;
                    ClientError::Desync
                })?
            };
            if self.rx_len == want {
                self.rx_len = 0;
                return Ok(Some(want));
            }
            if self.rx.len() < want {
                self.rx.resize(want, 0);
            }
            match stack.tcp_recv(h, &mut self.rx[self.rx_len..want])? {
                Recv::Data(n) => self.rx_len += n,
                Recv::WouldBlock | Recv::Eof => return Ok(None),
            }
        }
    }

    /// Give up on requests sent before `now - timeout`; returns how many.
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> usize {
        let mut n = 0;
        while self.outstanding.front().is_some_and(|o| now - o.sent > timeout) {
            self.outstanding.pop_front();
            n += 1;
        }
        self.counters.lost += n as u64;
        n
    }
}
