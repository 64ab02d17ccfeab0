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
