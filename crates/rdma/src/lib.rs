//! Reliable connectionless RDMA writes with receive-side completion: the Manchester RDMA
//! network interface (seed 001) in software, carried in UDP or raw Ethernet over a
//! [`net::Stack`].
//!
//! A node registers memory regions and gets a [`RegionKey`] for each; a peer writes into
//! (node, key, offset) with [`RdmaNode::post_write`]. There is no connection: reliability
//! comes from a per-packet ACK/NACK and retransmission at the sender (op table,
//! transaction table with a timer per packet, backoff, error completion after bounded
//! tries), and the receiver keeps no per-sender state beyond its tables.
//!
//! - **Registered ops** (paper 3.2-3.3): the first packet registers the op in the
//!   receiver's registration table, which tracks arrivals in a bitmask and posts the
//!   completion locally when the mask is all ones, one round trip before the sender could
//!   tell. Early packets wait in the escape channel; duplicates are dropped and ACKed again.
//! - **Unregistered ops** (paper 3.4): data is placed as it arrives; after the last ACK the
//!   sender completes and sends a Notify, which the receiver posts.
//! - **Segmentation** (paper 3.1): writes above a threshold are cut into segment ops of a
//!   configured size, posted one after another; the receiver is notified per segment. By
//!   default ([`config::DEFAULT_SEGMENT`]) segments are 256 KiB and registered, so a large
//!   write is completed segment by segment at the receiver, as the paper combines them.
//!
//! Receiving over UDP takes no copy but the one into the region: the node installs its
//! receive path as its socket's handler ([`net::Stack::udp_set_rx_handler`]), so during
//! `Stack::poll` each datagram is verified (CRC32C over header and payload in one pass, with
//! the CPU's instruction) and placed straight from the received frame; ACKs, NACKs and
//! timers are handled per batch in [`RdmaNode::poll`]. (Over raw Ethernet frames are read
//! from the socket's queue.) Do not hold a region borrowed ([`RdmaNode::region`]) across
//! `Stack::poll`: datagrams that arrive meanwhile are dropped and counted (`drop_busy`).
//!
//! Regions are buffers the node owns ([`RdmaNode::register`]) or the caller's memory in place
//! ([`RdmaNode::register_mem`] with an [`ExternalMem`]: writes land in it directly; the Python
//! package registers numpy arrays this way). Every setting of [`RdmaConfig`] can be read and
//! set by name ([`settings`]), which the CLI (`--set NAME=VALUE`) and Python (`config={...}`)
//! use.
//!
//! # Wire format
//!
//! A fixed 48-byte header, big-endian, then the payload. In UDP it is the datagram payload
//! (default port 18791, not RoCEv2's 4791), sent with UDP checksum 0 ("none", RFC 768)
//! because the CRC32C below already covers header and payload; on Ethernet it is the frame payload of EtherType 0x88B5 (IEEE local
//! experimental; frames may carry padding after the packet, which is ignored).
//!
//! | offset | size | field | meaning |
//! | --- | --- | --- | --- |
//! | 0 | 2 | magic | `0x4C52` ("LR") |
//! | 2 | 1 | version | 2 (1 had no ACK span; its nodes do not interoperate with 2) |
//! | 3 | 1 | type | 1 RegisterFirst, 2 Data, 3 Ack, 4 Nack, 5 Notify |
//! | 4 | 1 | flags | bit 0 registered, bit 1 large-transfer segment, bit 2 last segment; other bits 0 |
//! | 5 | 1 | reason | NACK reason (1 unknown key, 2 deregistered, 3 out of bounds, 4 table full, 5 escape full, 6 too many packets, 7 malformed, 8 notification queue full); 0 on other types |
//! | 6 | 2 | payload length | bytes after the header |
//! | 8 | 8 | op id | write id << 20 \| segment number; unique per sender |
//! | 16 | 4 | packet index | 0..count for data; count for a Notify and its ACK |
//! | 20 | 4 | packet count | data packets in the op |
//! | 24 | 4 | region key | target region at the receiver |
//! | 28 | 4 | op length | bytes of the whole op |
//! | 32 | 8 | offset | region offset of the op's first byte |
//! | 40 | 2 | stride | payload bytes of every packet but the last (packet i lands at offset + i * stride) |
//! | 42 | 2 | ACK span | ACK: packets acknowledged from the packet index on (0 counts as 1); 0 on other types |
//! | 44 | 4 | CRC32C | Castagnoli CRC over bytes 0..44 and the payload |
//!
//! A Wireshark dissector for this format ships in `crates/rdma/wireshark/linerate_rdma.lua`
//! (`tshark -X lua_script:crates/rdma/wireshark/linerate_rdma.lua -r capture.pcap -Y lrrdma`).
//!
//! ACKs and NACKs echo the header of the packet they answer, with no payload. Packets of
//! one op that arrive in the same poll are answered by one ACK whose span covers the run
//! (the paper ACKs every packet; a run costs one ACK packet instead of one per packet);
//! NACKs answer one packet each. The receiver
//! checks the CRC before anything else, then that the fields agree (index < count, payload
//! length = stride except for the last packet, op length within count x stride), then the
//! region key and bounds; only then does a byte reach memory.
//!
//! # Flow control
//!
//! The sender keeps at most [`RdmaConfig::window`] packets in flight per destination (and
//! [`RdmaConfig::max_in_flight`] overall); a new packet goes out only when an ACK, a NACK
//! that fails the op, or an error completion frees a place. This is a fixed credit, not a
//! congestion controller: a connectionless receiver advertises nothing, so the window is
//! sized to what a receiver absorbs (its socket queue, its escape channel) and bounds how
//! far a fast sender can run ahead of a slow one; a receiver that does fall behind drops,
//! NACKs (`table_full`, `escape_full`) or stays silent, and the sender backs off
//! exponentially per packet before retrying. The retransmission timeout follows the
//! measured round trip per destination (RFC 6298's SRTT + 4 RTTVAR, sampled only from
//! packets sent once, at least [`RdmaConfig::rto`]), so a deep window whose packets queue
//! in the link does not time out spuriously; it doubles per retry up to `max_rto`. A
//! destination that has answered nothing since its due packets went out (a stalled or
//! vanished receiver rather than a lossy path) gets one probe per timeout round while the
//! others wait; if the probe exhausts its tries, every op to that destination fails at once.
//! While answers are still arriving, the timers wait for them to be read first (bounded). With many
//! senders the receiver's load is bounded by senders x window. Per destination, ops go out
//! in the order they were posted (an op that has started keeps its turn). Adaptive windows
//! (AIMD on timeouts and transient NACKs) are a possible refinement.
//!
//! # Memory
//!
//! Every queue a node grows (escape channel, registration table, notification and completion
//! queues, recently completed ops, pending answers, the sender's tables and timers) has a
//! bound from its [`RdmaConfig`]; beyond it the node refuses (a NACK, a refused
//! `post_write`, a dropped answer) and counts why. [`memory`] lists them;
//! [`RdmaNode::memory`] reports what each holds now against its bound.
//!
//! # Limits
//!
//! - Exactly-once completion rests on the receiver remembering completed (source, op) pairs
//!   for [`RdmaConfig::recent_linger`] (2 s): a duplicate delayed longer than that could be
//!   taken for a new op. Senders retry for about a second, well inside it.
//! - An unsegmented op is at most 4 GiB (32-bit op length); a write has at most 2^20
//!   segments; a registered op has at most `mask_width` packets (wider ones go unregistered).
//! - Region keys name regions, they do not protect them: anyone who can reach the port and
//!   guess a key can write into that region (as with the paper's global address space).
//!
//! # Example
//!
//! ```
//! use link::{mem, Instant, LinkConfig};
//! use net::{Config, Stack};
//! use rdma::{RdmaConfig, RdmaNode};
//! let (la, lb) = mem::pair(LinkConfig::default());
//! let mut sa = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
//! let mut sb = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
//! let mut a = RdmaNode::new(&mut sa, RdmaConfig::default()).unwrap();
//! let mut b = RdmaNode::new(&mut sb, RdmaConfig::default()).unwrap();
//! let key = b.register(vec![0u8; 4096]).unwrap();
//! let dst = b.address(&sb);
//! a.post_write(dst, key, 100, b"hello".to_vec()).unwrap();
//! let mut landed = None;
//! for us in 0..1000 {
//!     let now = Instant::from_micros(us * 10);
//!     for (s, n) in [(&mut sa, &mut a), (&mut sb, &mut b)] {
//!         s.poll(now).unwrap();
//!         n.poll(s, now).unwrap();
//!     }
//!     if let Some(c) = b.notifications().poll() { landed = Some(c); break; }
//! }
//! assert_eq!(landed.unwrap().len, 5);
//! assert_eq!(&b.region(key).unwrap()[100..105], b"hello");
//! ```

#![warn(missing_docs)]

pub mod config;
pub mod counters;
pub(crate) mod crc;
pub mod error;
pub(crate) mod escape;
pub mod memory;
pub mod node;
pub mod notify;
pub mod peer;
pub(crate) mod receiver;
pub(crate) mod recent;
pub mod region;
pub mod regtable;
pub(crate) mod sender;
pub mod settings;
pub mod wire;

pub use config::RdmaConfig;
pub use counters::{Counter, Counters};
pub use error::RdmaError;
pub use memory::{MemoryUse, QueueUse};
pub use node::{RdmaNode, RegionMut, RegionRef};
pub use notify::{Completion, CompletionKind, NotifyQueue, Status};
pub use peer::{Peer, Transport, DEFAULT_ETHERTYPE, DEFAULT_UDP_PORT};
pub use region::{ExternalMem, RegionKey, RegionMem};
pub use sender::WriteOptions;
pub use settings::SettingValue;
pub use wire::NackReason;
