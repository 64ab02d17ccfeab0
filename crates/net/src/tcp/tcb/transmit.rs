//! What the view's output yields: one [`Transmit`] per segment it decided to send (the
//! header, and where the payload lies in the send queue), handed to the [`Emit`] the engine
//! gives it, as smoltcp's `dispatch` hands its segments to an emit closure. The engine writes
//! each with its sink (`tcp::output`: the header, and the payload copied from the send queue
//! straight into the frame); the view's unit tests record them. The view never reaches the
//! sink: `Emit` offers the clock, the counters, the MTU and this one call.

use super::super::lookup::FourTuple;
use super::super::sendq::SendQueue;
use super::super::sink::Meter;
use wire::TcpRepr;

/// One segment a connection decided to send.
#[derive(Debug)]
pub(crate) struct Transmit<'a> {
    /// The connection's ports and peer.
    pub tuple: &'a FourTuple,
    /// The header: ports, sequence and acknowledgment numbers, flags, window, options.
    pub repr: TcpRepr,
    /// The send queue the payload is copied from.
    pub queue: &'a SendQueue,
    /// Offset of the payload in the queue (from SND.UNA).
    pub data_off: usize,
    /// Payload bytes.
    pub len: usize,
}

/// Where a connection's output goes: the clock and counters ([`Meter`]), the path's MTU, and
/// the engine's writer of the segments it yields.
pub(crate) trait Emit: Meter {
    /// The IP MTU segments must fit.
    fn ip_mtu(&self) -> usize;
    /// Send `seg`. False if the link is full and it did not go (the connection tries again at
    /// the next flush); true if it went or was lost to an error the writer keeps.
    fn emit(&mut self, seg: &Transmit<'_>) -> bool;
}
