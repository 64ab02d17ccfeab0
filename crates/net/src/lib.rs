//! The host network stack of linerate: Ethernet demultiplexing, ARP, IPv4 (with reassembly and
//! fragmentation), ICMP, UDP, raw Ethernet sockets and TCP, driven by `poll(now)` over any
//! [`link::Link`].
//!
//! A [`Stack`] is single-threaded and does nothing between calls: the application calls
//! [`Stack::poll`] with the current time (real or virtual), and the socket calls
//! (`udp_*`, `tcp_*`, `raw_*`, [`Stack::ping`]) never block. Each call fails with its own
//! error type listing only what that call can meet (see [`error`]); all of them convert into
//! [`NetError`], so `?` works in code that returns `NetError`. Results that report
//! back-pressure (a full link, a full send buffer) are `#[must_use]`.
//!
//! # A TCP exchange between two stacks
//!
//! Two stacks on the two ends of an in-process link ([`link::mem::pair`]), on virtual time:
//!
//! ```
//! use link::{mem, Instant, LinkConfig};
//! use net::{Config, Recv, Stack};
//!
//! let (la, lb) = mem::pair(LinkConfig::default());
//! let mut client = Stack::new(Config::host("10.0.0.1/24"), la)?;
//! let mut server = Stack::new(Config::host("10.0.0.2/24"), lb)?;
//!
//! let listener = server.tcp_listen(80, 8)?;
//! let conn = client.tcp_connect("10.0.0.2:80".parse::<std::net::SocketAddr>().unwrap())?;
//!
//! let (mut accepted, mut sent, mut got) = (None, 0, Vec::new());
//! let request = b"GET / HTTP/1.0\r\n\r\n";
//! for ms in 0..100 {
//!     let now = Instant::from_millis(ms);
//!     client.poll(now)?;
//!     server.poll(now)?;
//!     if client.tcp_connect_result(conn)? == Some(Ok(())) && sent < request.len() {
//!         // tcp_send takes what fits in the send buffer: send the rest later.
//!         sent += client.tcp_send(conn, &request[sent..])?;
//!     }
//!     if accepted.is_none() {
//!         accepted = server.tcp_accept(listener);
//!     }
//!     if let Some(h) = accepted {
//!         let mut buf = [0u8; 256];
//!         match server.tcp_recv(h, &mut buf)? {
//!             Recv::Data(n) => got.extend_from_slice(&buf[..n]),
//!             Recv::WouldBlock | Recv::Eof => {}
//!         }
//!     }
//!     if got.len() == request.len() {
//!         break;
//!     }
//! }
//! assert_eq!(got, request);
//! client.tcp_close(conn)?;
//! # Ok::<(), net::NetError>(())
//! ```
//!
//! # A UDP datagram
//!
//! A UDP socket is dual-stack: it takes `SocketAddr` destinations of either family and
//! reports each sender as a `SocketAddr` (IPv6: see [`ipv6`]).
//!
//! ```
//! use link::{mem, Instant, LinkConfig};
//! use net::{Config, Stack};
//! use std::net::SocketAddr;
//! let (la, lb) = mem::pair(LinkConfig::default());
//! let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
//! let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
//! let sock = b.udp_bind(7).unwrap();
//! let tx = a.udp_bind(0).unwrap();
//! // Ok(false) would mean the link is full: the datagram was not sent.
//! let to: SocketAddr = "10.0.0.2:7".parse().unwrap();
//! assert!(a.udp_send_to(tx, to, b"hello").unwrap());
//! let mut buf = [0u8; 64];
//! let mut got = None;
//! for ms in 0..10 {
//!     let now = Instant::from_millis(ms);
//!     a.poll(now).unwrap();
//!     b.poll(now).unwrap();
//!     if let Some(r) = b.udp_recv_from(sock, &mut buf).unwrap() { got = Some(r); break; }
//! }
//! assert_eq!(&buf[..got.unwrap().0], b"hello");
//! ```
//!
//! For many hosts, impairments and switches on virtual time, see the `testbed` crate.
//!
//! # Cost per segment
//!
//! Instructions counted with `valgrind --tool=callgrind` over
//! `cargo run --release -p net --example tcp_cost -- MODE`: two stacks on a memory link in one
//! thread on virtual time, so the count is the same on a loaded machine and an idle one. Both
//! hosts' work, the link and the example's own loop are included; copies count one
//! instruction per byte (`rep movsb`). Release build (one codegen unit per crate, fat LTO).
//!
//! | mode | what it does | instructions |
//! | --- | --- | --- |
//! | `pingpong 20000` | 64 B request and 64 B response on one connection | 10,427 per exchange |
//! | `idle 100000` | both hosts poll and one read finds nothing | 363 per round |
//! | `cycles 5000` | connect, accept, close from both sides, one connection at a time | 26,760 per connection (7 segments) |
//! | `bulk 1 100 262144` | 100 MB on one connection, 256 KiB buffers | 7,331 per 1,460 B data segment |
//! | `bulk-transfer 1 100 262144` | the same, handed over with the transfer API (no copy into the send ring) | 5,992 per data segment |
//! | `bulk 250 100 8192` | 100 MB on 250 connections, 8 KiB buffers | 6,111 per data segment |
//! | `bulk 10000 400 8192` minus `bulk 10000 100 8192` | 10,000 connections, 8 KiB buffers | 6,233 per data segment |
//!
//! Per-exchange and per-round figures are (N run − 1 run) / N; the bulk figures divide the
//! whole run by the data segments. Received frames are handled where they lie in the link's
//! ring (`Link::rx_in_place`), not copied into a batch first, and frames are built where they
//! will lie in the link's transmit ring (`Link::tx_in_place`); a data segment's payload is
//! copied into the frame and summed for the checksum in one pass, so the frame, which the
//! peer's core reads next, is written once and never read back. These save memory traffic
//! between cores, which instruction counts do not show: `linerate iperf` over shared memory
//! gained 15-25% at MTU 1500 and 17-35% at MTU 9000 while the counts rose 2-5% (the
//! fused loop, and the transmit ring asking for the next slot's lines ahead of writing them). In the bulk modes only
//! connections the stacks report active are stepped, as the services do. With 10,000
//! connections the stacks' own work per segment is about 5% above one connection's (5,615
//! marginal); what the many-connection benchmark loses beyond that is memory, not
//! instructions (20,000 buffers of 8 KiB per side do not fit in cache). So once a stack holds
//! more than 64 sessions, an emptied ring parks its storage in a per-stack pool and the next
//! ring to be written takes the most recently parked block, still warm: receivers that keep
//! up then work in a few blocks, and only the senders' unacknowledged data is spread out.
//! With a 4 MiB last-level cache simulated (cachegrind), `bulk 10000 200 8192` misses it
//! 13.5 M times instead of 22.0 M.
//!
//! # The TCP engine's layout
//!
//! The per-connection tables stay structure-of-arrays (one preallocated table per Limago
//! module, indexed by session id), indexed in two places: `TcpEngine::tcb` lends one session's
//! rows as a `TcbMut` with a small context (configuration, timers, dirty queue, pools) for one
//! event, and `TcpEngine::row` lends them to read as a `TcbRef`. The rows (`tcb::tables`) keep
//! their fields private to [`tcp`]'s `tcb` module, which holds everything one connection does
//! as methods of that view (input, handshake, output, recovery, RACK, TLP, undo, PMTU, timers,
//! auto-tuning, the receive-window rule, the application's calls, the slot's life, and what
//! `TcbRef` shows: state, tuple, queues, `stats()`); what only the engine can do (answer with a
//! reset, the listener's accept queue, TIME-WAIT reclaim, freeing the slot) they return for the
//! engine to do.
//!
//! Decide, then emit: the view never calls the sink. Its input takes only a `Meter` (the clock
//! and the counters), so it cannot send; what it decided stays in the connection (an ACK due, a
//! challenge ACK, a D-SACK) or comes back in `After`, and the engine sends (a reset, or the
//! output at once for a duplicate ACK). Its output, timers and handshake yield each segment as
//! a `Transmit` (header, and the payload's offset and length in the send queue) to an `Emit`,
//! as smoltcp's `dispatch` gives segments to an emit closure; the engine's `Emit` (in
//! `tcp::output`, for any `SegmentSink`) writes the header and copies the payload from the
//! send ring straight into the link's frame, and the view's unit tests record what it yields
//! (`tcb::unit`). Sequence ranges are `SeqRange`s (SACK scoreboard, D-SACK, RACK, the
//! assembler's blocks). Below the engine, the stack's clock, configuration and counters are an
//! `Env` lent to the transmit path (`Egress`: the batch, ARP and its waiting frames, path MTUs)
//! with each call. `docs/DESIGN.md` walks one segment in and one out.
//!
//! One segment in: the interface core parses Ethernet and IPv4 in the link's ring ->
//! `TcpEngine::on_segment` checks and parses the TCP header, finds the session by its 4-tuple
//! -> `TcbMut::input` decides -> the engine does what `After` asks -> `TcbMut::settle` marks
//! the session dirty. One segment out: `TcpEngine::flush_dirty` pops each dirty session ->
//! `TcbMut::output` picks what the windows allow and yields each segment as a `Transmit` ->
//! the engine's `Emit` writes it in place in a frame the sink lends -> `Egress` batches the
//! frames to the link.
//!
//! Instructions under callgrind, the same release build flags, each figure the difference of
//! two run sizes divided by the difference in units (`pingpong` 2,000 and 22,000 exchanges;
//! `cycles` 200 and 2,200; `bulk 4 MB 65536` with 5 and 55 MB, divided by all segments both
//! sides sent, data and ACKs). Before: before the view (issue 23); after: everything per
//! connection in the view (measured on another machine than "before", which the "first
//! steps" column reproduced exactly):
//!
//! | figure | before | first steps | after | `Env`, input on a `Meter`, `SeqRange` | private rows, output yields `Transmit`s | with IPv6 beside it |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | per 64 B exchange (`pingpong`) | 10,785 | 10,835 (+0.46%) | 10,713 (-0.67%) | 10,751 (-0.32%) | 10,717 (-0.63%) | 10,428 (-3.31%) |
//! | per connection cycle (`cycles`) | 26,805 | 26,844 (+0.15%) | 26,927 (+0.46%) | 26,995 (+0.71%) | 26,915 (+0.41%) | 26,856 (+0.19%) |
//! | per segment (`bulk 4 MB 65536`) | 6,499 | 6,520 (+0.32%) | 6,426 (-1.12%) | 6,426 (-1.12%) | 6,420 (-1.22%) | 6,426 (-1.13%) |
//!
//! The fourth column was measured beside a build of the "after" commit on the same machine
//! (10,711 / 26,911 / 6,425: +0.37%, +0.31%, +0.02% against it); the last beside a build of
//! the commit before it (10,729 / 26,951 / 6,423: -0.11%, -0.13%, -0.05% against it). The
//! last column is IPv4 after TCP and UDP learned IPv6 (issue 27), the receive path generic
//! over the family and a poll skipping an idle engine; "before" rebuilt beside it (a2f133e,
//! the commit before the view) gave 10,785 / 26,806 / 6,500 again. Percentages are against
//! "before".

mod arp;
pub mod budget;
mod config;
pub mod counters;
mod egress;
mod env;
pub mod error;
mod iface;
pub mod int_hash;
pub mod ipv6;
mod ping;
mod queue;
mod rate_limit;
mod raw;
pub mod reasm;
pub mod shard;
mod stack;
mod stack_tcp;
pub mod tcp;
mod udp;

pub use budget::MemoryUse;
pub use config::Config;
pub use counters::{Counter, Counters, RxAccounting, RX_DROP_PREFIX, TX_DROP_PREFIX};
pub use error::{
    BadHandle, BindError, BypassError, ConfigError, ConnectError, ControlError, ListenError, NetError, PingError,
    RawBindError, RawSendError, RecvError, SendError, TooManyWatchers, UdpSendError,
};
pub use int_hash::IntMap;
pub use ipv6::config::{Ipv6Cidr, Ipv6Config, NdpConfig};
pub use ipv6::neighbor::NeighborState;
pub use ipv6::{AddrOrigin, AddrState, HostAddr};
pub use link::Instant;
pub use ping::PingReply;
pub use raw::RawHandle;
pub use reasm::ReasmLimits;
pub use stack::Stack;
pub use tcp::{
    CcAlgorithm, Recv, TcpConfig, TcpConnStats, TcpError, TcpHandle, TcpListener, TcpMemory, TcpState, TcpWatch,
};
pub use udp::{UdpHandle, UdpRxHandler};
