//! MPI-like collectives over linerate TCP (seed 003, EasyNet): a communicator of `N` ranks,
//! each with its own [`net::Stack`] and a full mesh of TCP connections to its peers.
//!
//! - [`Endpoint`]: one rank's connections, message queues and operations in progress. It is
//!   advanced by [`Endpoint::progress`] with the rank's stack, so the same algorithms run
//!   with every rank as a virtual-time host of one thread (tests drive all stacks in turn)
//!   and with one rank per thread or process ([`Communicator`], on the real clock).
//! - Operations are non-blocking: `i*` methods start one and return a [`Request`];
//!   [`Endpoint::test`] collects it; [`Communicator::wait`] blocks. Every operation fails
//!   within [`Config::timeout`] with an error naming the ranks that did not arrive.
//! - [`schedule`]: every algorithm as a per-rank list of steps, which fixes the order of
//!   floating-point reductions (identical bits on every run).
//! - `frame` (internal): the message header on the TCP stream; [`dtype`]: element types and
//!   reduction operators; [`launch`]: rank, size and rendezvous from the environment of
//!   `mpirun`, `srun`, PMI or explicit variables; [`fabric`]: the shared-memory link that
//!   joins the processes of one machine into one L2 segment, with a [`doorbell`] per rank
//!   to sleep on while idle; [`bind`]: a rank per core when they fit; [`pool`]: message
//!   buffers reused across operations; [`on_link`]: a rank on a real interface
//!   (`af_xdp:IFACE`, `af_packet:IFACE`) that joins through rank 0's address, for ranks on
//!   different machines; [`pipe`]: the shared-memory transport between ranks of one machine
//!   (the operations' messages bypass TCP), chosen per job by [`Transport`] (pipes on the
//!   fabric, TCP over a link, `LINERATE_TRANSPORT` overrides).
//!
//! Which algorithm runs for which size and rank count (the defaults of [`Config`]; each
//! can be forced with the `*_with` calls) is tabled in `docs/DESIGN.md` (section 2,
//! `collective`), the one place it is written down: recursive doubling for small
//! all-reduces, the ring with pipelined segments for large ones, flat broadcast below
//! [`Config::pipelined_from`] and the pipelined chain from there on.
//!
//! Element types: f16, bf16, f32, f64 and 8- to 64-bit signed and unsigned integers;
//! operators: sum, prod, max, min, bitwise and logical and/or/xor ([`ReduceOp`]).

pub mod bench;
pub mod bind;
pub mod comm;
pub mod doorbell;
pub mod dtype;
pub mod endpoint;
pub mod error;
pub mod fabric;
pub(crate) mod frame;
pub mod launch;
pub mod on_link;
pub mod pipe;
pub mod pool;
pub mod schedule;
pub mod stream;
pub mod transport;

pub use comm::Communicator;
pub use dtype::{DType, Element, ReduceOp};
pub use endpoint::{AllreduceAlgo, Config, Counters, Endpoint, MeshState, Request, TreeAlgo};
pub use error::CollectiveError;
pub use fabric::{fabric_addrs, fabric_host_config, fabric_link_config, ShmFabric};
pub use half::{bf16, f16};
pub use launch::{from_env, parse_launch, parse_root, Launch, Launcher};
pub use on_link::{LinkCommunicator, LinkRank, LinkStack};
pub use stream::RecvStream;
pub use transport::Transport;
