//! Descriptors: what travels between the load balancer and the units instead of packets.

/// The ingress port number of a frame injected by the host.
pub const HOST_PORT: u16 = u16::MAX;

/// Where a unit sends a packet it is done with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dest {
    /// Out of port `n`.
    Port(u16),
    /// To the host (with the tags written after the data, see `Ctx::to_host`).
    Host,
    /// Whole packet to unit `n` (loopback), which receives it like a packet from a port.
    Unit(u16),
    /// Nowhere: the slot is freed.
    Drop,
}

/// Where a packet a unit receives came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Received on port `n`.
    Port(u16),
    /// Injected by the host.
    Host,
    /// Sent by unit `n` (loopback).
    Unit(u16),
}

/// A packet descriptor: slot, length, origin, flow hash and (on the way out) destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Desc {
    /// Slot index in the owning unit's slot memory.
    pub slot: u32,
    /// Frame length in bytes.
    pub len: u32,
    /// The symmetric flow hash computed by the load balancer.
    pub hash: u32,
    /// Where the frame came from.
    pub src: Source,
    /// Where the frame goes (meaningful on the way out).
    pub dest: Dest,
    /// Number of u32 tags written after the frame (packets to the host).
    pub tags: u16,
    /// Capture time of the frame (nanoseconds since the Unix epoch) as its port reported it
    /// (a pcap replay does); 0 when unknown. Frames leave by a port with it.
    pub stamp: u64,
}

impl Desc {
    /// The ingress port number as programs see it ([`HOST_PORT`] for host and loopback frames).
    pub(crate) fn port(&self) -> u16 {
        match self.src {
            Source::Port(p) => p,
            Source::Host | Source::Unit(_) => HOST_PORT,
        }
    }
}

/// The capture time of `d`, if its port reported one.
pub(crate) fn stamp_of(d: &Desc) -> Option<u64> {
    Some(d.stamp).filter(|&s| s != 0)
}

/// Offset where tags start after a frame of `len` bytes (4-aligned).
pub(crate) fn tags_offset(len: usize) -> usize {
    len.next_multiple_of(4)
}
