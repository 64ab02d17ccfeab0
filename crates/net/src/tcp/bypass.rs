//! RX bypass (seed 000): in-order payload goes straight from the received frame to the
//! application's handler instead of through the connection's receive buffer. Only data that
//! arrives out of order is held (in the receive buffer, as reassembly needs it) and handed
//! over as soon as the hole fills. The application cannot push back: the handler must take
//! every byte, so the advertised window stays the whole buffer.

use super::TcpHandle;

/// The application's receiver of bypassed data: called with the connection and each run of
/// in-order bytes, in sequence order, during `Stack::poll`.
pub type RxHandler = Box<dyn FnMut(TcpHandle, &[u8]) + Send>;

/// The stack-wide bypass handler, if the application installed one.
#[derive(Default)]
pub struct RxBypass {
    handler: Option<RxHandler>,
}

impl RxBypass {
    /// Install (or replace) the handler.
    pub fn set(&mut self, handler: RxHandler) {
        self.handler = Some(handler);
    }

    /// True once a handler is installed.
    pub fn is_set(&self) -> bool {
        self.handler.is_some()
    }

    /// Hand `data` of connection `h` to the handler (nothing without one or for empty data).
    pub fn deliver(&mut self, h: TcpHandle, data: &[u8]) {
        if let (Some(f), false) = (self.handler.as_mut(), data.is_empty()) {
            f(h, data);
        }
    }
}

impl std::fmt::Debug for RxBypass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxBypass").field("handler", &self.handler.as_ref().map(|_| "installed")).finish()
    }
}
