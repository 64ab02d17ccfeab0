//! The middlebox runtime: Rosebud in software.
//!
//! Frames arrive on *ports* (any [`link::Link`]), a *load balancer* with a pluggable
//! [`Policy`] places each into a free *slot* of a *processing unit*, and the unit's
//! [`Program`] sends it on to a port, the host or another unit, or drops it.
//!
//! ```text
//!  ports --rx--> distributor (LB + slot lists) --desc--> unit 0 (program + accelerators)
//!    ^                |   ^                     --desc--> unit 1 ...
//!    +------tx--------+   +------- desc back (port / host / unit / drop) ---+
//! ```
//!
//! * Each unit announces its slots ([`SlotSpec`]: count, size); the LB sends only into a free
//!   slot, so nothing is dropped past the LB; a frame whose unit is full waits in the port's
//!   batch (a counted stall) and the port is not read meanwhile (back-pressure).
//! * Descriptors (slot, length, origin, symmetric flow hash) travel over bounded SPSC queues
//!   ([`spsc`]); frame bytes are copied once in (into the slot) and once out.
//! * [`Control`] is the host channel: counters ([`RuntimeStats`]), pause / resume / drain,
//!   program swap while traffic flows, state dumps, breakpoints, host packets and broadcasts.
//! * [`Runtime::step`] runs everything on the caller's thread, deterministically;
//!   [`Runtime::start`] runs the distributor and each unit on a thread of its own.
//!
//! # Per-packet cost
//!
//! Instructions per 64-byte frame through one unit in step mode (generator port -> LB ->
//! unit -> sink port, all on one thread), counted with callgrind by the `middlebox_cost`
//! example of the `apps` crate as (I(21,000 frames) - I(1,000 frames)) / 20,000; the count
//! includes the generator's copy into its receive batch and the sink, and does not depend on
//! the machine's load:
//!
//! ```text
//! cargo build --release -p apps --example middlebox_cost
//! valgrind --tool=callgrind target/release/examples/middlebox_cost forward 1000    # and 21000
//! ```
//!
//! | path | before | after |
//! | --- | --- | --- |
//! | forward (`Forwarder::cross`, round robin) | 994 | 653 |
//! | firewall (1,050 prefixes, flow hash, 2% blacklisted) | 1,106 | 740 |
//! | IDS (community rules, frames 1,000..11,000 of the bench trace: `ids 1000`, `ids 11000`) | 30,272 | 30,039 |
//! | the same, with the IDS engine's port-group and non-fast-pattern filters (accel `ids::gate`, `ids::nfp`) | 30,036 | 29,543 |
//! | the same, the stream's fast patterns kept across segments (each segment's bytes scanned once: apps `ids::unit`, accel `ids::stream`) and a scratch of its own for the always-check subset | 29,458 | 23,217 |
//! | the same, each fast pattern's rules grouped by header in the IDS engine (accel `ids::gate::PatternGroups`; within 1%) | 23,217 | 23,353 |
//!
//! The firewall costs 88 more than forwarding per frame (the fixed-offset source read and
//! the prefix lookup); the IDS's own work (reassembly, matching) is almost all of its count.
//!
//! What went: the flow hash reads untagged IPv4 TCP/UDP at fixed offsets; round robin wraps
//! without a division; the LB's offer answers placed / dropped / wait instead of summing drop
//! reasons twice per frame and is inlined with the egress copy; occupancy is computed when
//! counters are published; descriptors cross the SPSC queues in at most two block copies;
//! a unit hands its whole batch to [`Program::on_batch`] under one unwind guard (one dynamic
//! call per batch; the default calls `on_packet` statically) and checks a packet token with
//! one slot-table lookup; the firewall reads the source address at fixed offsets and falls
//! back to the full parse only for other frames. Per step (one batch of up to
//! [`RuntimeConfig::batch`] frames) the runtime still reads the clock once per thread and,
//! in step mode, publishes counters: with a batch of 64 instead of 32 (64 slots) the forward
//! count drops by about 40 more (`middlebox_cost forward N 64 64`).

#![warn(missing_docs)]

pub mod control;
mod desc;
mod distributor;
pub mod frames;
pub mod hash;
pub mod parse;
pub mod policy;
pub mod program;
pub mod programs;
pub mod runtime;
pub mod slots;
pub mod spsc;
pub mod stats;
pub mod testlinks;
mod unit;

pub use control::{Breakpoint, Control, DrainReport, HostPacket, PacketMeta, Pending, SwapReport, Trap, UnitDump};
pub use desc::{Dest, Source, HOST_PORT};
pub use policy::{FlowHash, LeastLoaded, PacketInfo, Policy, RoundRobin, UnitView};
pub use program::{Batch, Ctx, Message, Packet, Program};
pub use runtime::{Builder, IdlePolicy, Running, Runtime, RuntimeConfig};
pub use slots::SlotSpec;
pub use stats::{PortStats, Reasons, RuntimeStats, UnitState, UnitStats};

/// Errors of the middlebox runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MiddleboxError {
    /// A configuration value is out of range.
    #[error("middlebox configuration: {0}")]
    Config(String),
    /// A thread could not be started or panicked.
    #[error("middlebox thread: {0}")]
    Thread(String),
    /// A reply did not come in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The runtime stopped before replying.
    #[error("the middlebox has stopped")]
    Stopped,
    /// A link failed.
    #[error(transparent)]
    Link(#[from] link::LinkError),
}
