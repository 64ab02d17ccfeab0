//! Capture files in both formats Wireshark and tcpdump use: classic pcap and pcapng.
//!
//! - [`Format`]: which one, chosen from a file name (`.pcapng`) or a flag.
//! - [`read_capture`]: load a whole capture from any reader (a file or stdin), the format
//!   detected by its magic number; a record cut short at the end is dropped with a warning
//!   and everything before it is kept, as tcpdump does.
//! - [`CaptureWriter`]: write records to any writer (a file or stdout).
//!
//! Timestamps are nanoseconds since the Unix epoch. Only Ethernet (LINKTYPE_ETHERNET) frames
//! are returned; packets of other link types in a pcapng file are counted and skipped.

mod endian;
mod format;
mod pcapng;
mod read;
mod write;

pub use format::Format;
pub use read::{open_capture, read_capture, Capture, CaptureRecord};
pub use write::CaptureWriter;

/// LINKTYPE_ETHERNET, the only link type linerate reads and writes.
pub const LINKTYPE_ETHERNET: u16 = 1;

#[cfg(test)]
mod tests;
