//! Where the TCP engine's segments go. The engine decides and builds segments; a
//! [`SegmentSink`] carries them away: the stack's IP layer and link ([`LinkSink`]) in a
//! running stack, a recorder in unit tests. Sending never fails the engine: a segment the link
//! cannot take now is reported as not sent (the session stays dirty and sends at the next
//! flush), and any other transmit error is kept by the sink for the caller to see once the
//! engine's work is done, while the engine treats the segment as lost on the wire (the
//! retransmission timer covers it). So a transmit failure can never cut receive processing
//! short.

use super::lookup::FourTuple;
use crate::counters::Counters;
use crate::egress::Egress;
use crate::env::Env;
use crate::error::TxError;
use crate::ipv6::tx::Packet6;
use crate::ipv6::Ipv6Host;
use link::LinkError;
use link::{Instant, Link};
use std::net::IpAddr;
use wire::checksum::PseudoHeader;
use wire::ipv4::protocol;

/// The clock and the counters: all a connection's input needs of the stack. Input decides
/// and never sends, and taking a `Meter` rather than a [`SegmentSink`] keeps it so; the view's
/// unit tests give it a `Capture` of their own (`tcb::unit`).
pub(crate) trait Meter {
    /// The current time.
    fn now(&self) -> Instant;
    /// The stack's counters.
    fn counters(&mut self) -> &mut Counters;
}

/// The IP layer below the TCP engine, as the engine sees it: the clock and counters, and
/// where segments go.
pub(crate) trait SegmentSink: Meter {
    /// The link's IP MTU.
    fn mtu(&self) -> usize;
    /// Make room for more segments if the transmit batch is full; false if it stays full.
    fn has_room(&mut self) -> bool;
    /// Send a TCP segment of `len` bytes (header and payload) from the tuple's local address
    /// to its remote one, written by `fill` (given the buffer and the sum of the source and
    /// destination addresses for the checksum's pseudo header, see
    /// `TcpRepr::emit_summed_addrs`). False if the link is full and the segment did not go;
    /// true if it went or was lost to an error the sink keeps.
    fn send_segment(&mut self, t: &FourTuple, len: usize, fill: impl FnOnce(&mut [u8], u64)) -> bool;
}

/// The sink of a running stack: the stack's environment (clock, configuration, counters), the
/// transmit path (`Egress`), the IPv6 host (its addresses and neighbours) and the link.
pub(crate) struct LinkSink<'a, L: Link + ?Sized> {
    env: &'a mut Env,
    eg: &'a mut Egress,
    v6: &'a mut Ipv6Host,
    link: &'a mut L,
    error: Option<TxError>,
}

impl<'a, L: Link + ?Sized> LinkSink<'a, L> {
    /// A sink sending through `eg` (IPv6: through `v6`) onto `link`, with `env`'s clock and
    /// counters.
    pub fn new(env: &'a mut Env, eg: &'a mut Egress, v6: &'a mut Ipv6Host, link: &'a mut L) -> Self {
        LinkSink { env, eg, v6, link, error: None }
    }

    /// The first transmit error met while the engine ran, if any (a link failure first).
    pub fn finish(self) -> Result<(), TxError> {
        self.error.map_or(Ok(()), Err)
    }

    /// [`Self::finish`] for the application's calls and timers: only a link failure is an
    /// error. A segment that could not be routed is lost like one dropped on the path (the
    /// connection's retransmissions and timeout deal with it); connects check the route first.
    pub fn finish_link(self) -> Result<(), LinkError> {
        match self.error {
            Some(TxError::Link(e)) => Err(e),
            _ => Ok(()),
        }
    }

    fn keep(&mut self, e: TxError) {
        if self.error.is_none() || (matches!(e, TxError::Link(_)) && !matches!(self.error, Some(TxError::Link(_)))) {
            self.error = Some(e);
        }
    }
}

impl<L: Link + ?Sized> Meter for LinkSink<'_, L> {
    #[inline]
    fn now(&self) -> Instant {
        self.env.now
    }

    #[inline]
    fn counters(&mut self) -> &mut Counters {
        &mut self.env.counters
    }
}

impl<L: Link + ?Sized> SegmentSink for LinkSink<'_, L> {
    fn mtu(&self) -> usize {
        self.env.cfg.mtu
    }

    fn has_room(&mut self) -> bool {
        if self.eg.tx.is_full() {
            if let Err(e) = self.eg.flush(self.env, self.link) {
                self.keep(e.into());
            }
        }
        !self.eg.tx.is_full()
    }

    fn send_segment(&mut self, t: &FourTuple, len: usize, fill: impl FnOnce(&mut [u8], u64)) -> bool {
        let sent = match (t.local_ip, t.remote_ip) {
            (_, IpAddr::V4(dst)) => self.eg.send_ip(self.env, self.link, dst, protocol::TCP, len, |b, s, d| {
                fill(b, PseudoHeader::pseudo_sum(s, d, 0, 0))
            }),
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let p = Packet6 { src: Some(src), dst, next_header: protocol::TCP, hop_limit: None, l4_len: len };
                self.v6.send(self.env, self.eg, self.link, p, |b, s, d| fill(b, PseudoHeader::pseudo_sum(s, d, 0, 0)))
            }
            (IpAddr::V4(_), IpAddr::V6(_)) => return true, // never built: both ends share a family
        };
        match sent {
            Ok(sent) => sent,
            Err(e) => {
                self.keep(e);
                true
            }
        }
    }
}

/// A sink for unit tests: records every segment the engine sends, with a link that can be
/// made full or failing.
#[cfg(test)]
pub(crate) mod recorder {
    use super::FourTuple;
    use super::{Meter, SegmentSink};
    use crate::counters::Counters;
    use link::Instant;
    use std::net::{IpAddr, Ipv4Addr};
    use wire::{TcpRepr, TcpSegment};

    /// Our address in the tests.
    pub const LOCAL: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    /// Records the segments sent.
    pub struct Recorder {
        pub now: Instant,
        pub counters: Counters,
        /// Segments the link still takes before it is full.
        pub room: usize,
        /// Every send fails (the link reports an error).
        pub failing: bool,
        /// Sends that failed.
        pub failures: usize,
        /// The segments sent: (destination, header and payload).
        pub sent: Vec<(IpAddr, Vec<u8>)>,
    }

    impl Recorder {
        pub fn new() -> Self {
            Recorder {
                now: Instant::ZERO,
                counters: Counters::default(),
                room: usize::MAX,
                failing: false,
                failures: 0,
                sent: Vec::new(),
            }
        }

        /// The segments sent since the last call, parsed, with their payloads.
        pub fn take(&mut self) -> Vec<(TcpRepr, Vec<u8>)> {
            self.sent
                .drain(..)
                .map(|(dst, bytes)| {
                    let seg = TcpSegment::new_checked(&bytes[..]).expect("a well-formed segment");
                    assert!(seg.verify_checksum(IpAddr::V4(LOCAL), dst), "checksum");
                    (TcpRepr::parse(&seg).expect("parsable options"), seg.payload().to_vec())
                })
                .collect()
        }
    }

    /// The peer's address in the tests.
    pub const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    impl Meter for Recorder {
        fn now(&self) -> Instant {
            self.now
        }

        fn counters(&mut self) -> &mut Counters {
            &mut self.counters
        }
    }

    impl SegmentSink for Recorder {
        fn mtu(&self) -> usize {
            1500
        }

        fn has_room(&mut self) -> bool {
            self.room > 0
        }

        fn send_segment(&mut self, t: &FourTuple, len: usize, fill: impl FnOnce(&mut [u8], u64)) -> bool {
            if self.room == 0 {
                return false;
            }
            if self.failing {
                self.failures += 1;
                return true;
            }
            self.room = self.room.saturating_sub(1);
            let mut buf = vec![0u8; len];
            fill(&mut buf, wire::checksum::PseudoHeader::pseudo_sum(t.local_ip, t.remote_ip, 0, 0));
            self.sent.push((t.remote_ip, buf));
            true
        }
    }
}
