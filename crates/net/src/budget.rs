//! The stack's memory budget as a whole: one account shared by TCP's rings and UDP's receive
//! queues (levels and policy in [`crate::tcp::memory`]), and the bound on UDP sockets.

use crate::Stack;
use link::Link;

/// The memory budget of a stack and what holds it (see [`Stack::memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// Bytes held now, TCP and UDP (TCP's part may be over-estimated between recounts).
    pub used: usize,
    /// The most bytes held at once.
    pub peak: usize,
    /// The pressure threshold, bytes.
    pub pressure: usize,
    /// The hard limit, bytes.
    pub limit: usize,
    /// Of `used`, TCP's ring storage (pools included).
    pub tcp: usize,
    /// Of `used`, UDP's receive queues (exact).
    pub udp: usize,
    /// UDP sockets bound now.
    pub udp_sockets: usize,
    /// UDP sockets that may be bound at once.
    pub udp_max_sockets: usize,
}

impl<L: Link> Stack<L> {
    /// The memory budget shared by TCP and UDP, its use, and the UDP sockets bound.
    pub fn memory(&self) -> MemoryUse {
        let m = &self.core.tcp.shared.mem;
        MemoryUse {
            used: m.used,
            peak: m.peak,
            pressure: m.pressure,
            limit: m.limit,
            tcp: m.used - m.udp,
            udp: m.udp,
            udp_sockets: self.core.udp.open(),
            udp_max_sockets: self.core.udp.max_sockets(),
        }
    }
}
