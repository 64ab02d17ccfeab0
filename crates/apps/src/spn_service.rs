//! The SPN inference service (the TaPaSCo paper's case study, section VI): requests carry
//! packed 8-bit input vectors, many per packet; each is answered with one f64 likelihood or
//! log-likelihood per vector, in order. Transports: UDP, raw Ethernet, and TCP (the records are
//! self-delimiting, so a stream carries them back to back; responses go out with the
//! transfer-based send).
//!
//! - [`record`]: the request/response record format (documented there).
//! - [`SpnService`]: the server on a [`net::Stack`]; evaluation in the polling thread and on
//!   replicated worker threads (round robin, bounded queues), answers re-sequenced into
//!   arrival order; a malformed request
//!   is answered with an error record, or dropped and counted if it is not one of ours.
//! - [`SpnClient`], [`run_load`]: a client and a load generator with a latency histogram.
//!
//! # Cost
//!
//! Requests that wait together are evaluated together ([`spn::Evaluator::eval_u8_parts`]
//! fills the evaluator's lanes from several requests' payloads in place), so a request of
//! fewer vectors than lanes costs its share of a batch. The service's instructions per vector
//! against the evaluator's alone (one call, full batches), as a share, from the
//! `spn_service_cost` example under callgrind (LearnSPN models, seed 1; 60 requests of a
//! 1,500-byte datagram's worth of vectors, 8 outstanding, inline evaluation; the whole server
//! side counted: stack poll, parsing, evaluation, encoding, sending):
//!
//! | model (lanes, vectors per request) | evaluator alone | one request at a time | service UDP | service TCP |
//! | --- | --- | --- | --- | --- |
//! | 10 inputs, 7,224 nodes (224, 145) | 11,338 | 88.3% | 96.8% | 96.3% |
//! | 40 inputs, 8,105 nodes (128, 36) | 17,286 | 66.8% | 93.0% | 91.0% |
//! | 80 inputs, 10,506 nodes (80, 18) | 25,777 | 46.1% | 97.4% | 94.5% |
//!
//! ("one request at a time" is the evaluator called per request, which is what the service
//! did before it gathered requests, without the network side.)

pub mod client;
pub mod histogram;
pub mod loadgen;
mod pool;
pub mod record;
pub mod server;

pub use client::{ClientCounters, ClientError, Reply, SpnClient};
pub use histogram::LatencyHistogram;
pub use loadgen::{run_load, LoadConfig, LoadReport};
pub use server::{SpnService, SpnServiceConfig};

use net::{RawHandle, TcpHandle, TcpListener, UdpHandle};
use std::net::SocketAddr;
use wire::MacAddr;

/// EtherType the CLI and tests use for the raw-Ethernet service (IEEE local experimental 1).
pub const SPN_ETHERTYPE: u16 = 0x88b5;

/// The socket a service or client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A UDP socket.
    Udp(UdpHandle),
    /// A raw Ethernet socket.
    Raw(RawHandle),
    /// A TCP connection (a client's).
    Tcp(TcpHandle),
    /// A listening TCP port (a service's; each accepted connection is a [`Peer::Tcp`]).
    TcpListen(TcpListener),
}

/// The other end of an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// A UDP address (either family).
    Udp(SocketAddr),
    /// A MAC address (raw Ethernet).
    Raw(MacAddr),
    /// A TCP connection.
    Tcp(TcpHandle),
}

/// What a service counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpnCounters {
    /// Records received.
    pub records: u64,
    /// Well-formed requests.
    pub requests: u64,
    /// Vectors in well-formed requests.
    pub vectors: u64,
    /// Answers sent (results and error records).
    pub responses: u64,
    /// Malformed requests answered with an error record.
    pub error_records: u64,
    /// Records shorter than a header, dropped.
    pub dropped_short: u64,
    /// Records without the request magic, dropped.
    pub dropped_bad_magic: u64,
    /// Vectors whose linear result was below the guard, recomputed in log space.
    pub fallbacks: u64,
    /// Requests whose worker's queue was full, evaluated by the polling thread instead.
    pub stalls: u64,
    /// Nanoseconds spent evaluating (summed over workers).
    pub eval_ns: u64,
    /// Evaluations: each takes every request that was waiting (up to a batch of the
    /// evaluator's lanes or more), so this is below `requests` when requests queue up.
    pub evaluations: u64,
    /// TCP connections closed because their stream could not be resynchronised (a record
    /// header without our magic or version, or with unknown flags).
    pub streams_closed: u64,
}

impl SpnCounters {
    /// The counters as (name, value) pairs.
    pub fn fields(&self) -> [(&'static str, u64); 12] {
        [
            ("records", self.records),
            ("requests", self.requests),
            ("vectors", self.vectors),
            ("responses", self.responses),
            ("error_records", self.error_records),
            ("dropped_short", self.dropped_short),
            ("dropped_bad_magic", self.dropped_bad_magic),
            ("fallbacks", self.fallbacks),
            ("stalls", self.stalls),
            ("eval_ns", self.eval_ns),
            ("evaluations", self.evaluations),
            ("streams_closed", self.streams_closed),
        ]
    }
}

#[cfg(test)]
mod tests;
