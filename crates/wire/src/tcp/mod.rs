//! TCP segments (RFC 9293) and their options (RFC 7323, RFC 2018).

mod options;
mod segment;

pub use options::{option_kind, TcpOption, TcpOptions, TcpOptionsIter, MAX_OPTIONS_LEN, MAX_WINDOW_SCALE};
pub use segment::{TcpRepr, TcpSegment};

/// TCP header flag bits (byte 13 of the header).
pub mod flags {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push function.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer field is significant.
    pub const URG: u8 = 0x20;
    /// ECN echo.
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced.
    pub const CWR: u8 = 0x80;
}

/// Length of the fixed TCP header (no options).
pub const HEADER_LEN: usize = 20;
/// Largest TCP header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;
