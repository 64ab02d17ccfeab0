//! Raw Ethernet sockets: the application sends and receives whole payloads on an EtherType of
//! its choice (seed 000 offers plain Ethernet beside UDP and TCP).

use crate::error::{BadHandle, RawBindError};
use crate::queue::PacketQueue;
use std::collections::HashMap;
use wire::ethernet::ethertype;
use wire::MacAddr;

/// A raw Ethernet socket bound to one EtherType.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawHandle(pub(crate) u16);

/// Raw sockets by EtherType.
#[derive(Debug)]
pub(crate) struct RawTable {
    by_type: HashMap<u16, PacketQueue<MacAddr>>,
    queue_len: usize,
    max_payload: usize,
}

impl RawTable {
    pub fn new(queue_len: usize, max_payload: usize) -> Self {
        RawTable { by_type: HashMap::new(), queue_len, max_payload }
    }

    /// Bind `ethertype`; the stack's own types (IPv4, ARP, VLAN) and values below 0x0600
    /// (which are 802.3 lengths, not types) cannot be bound.
    pub fn bind(&mut self, et: u16) -> Result<RawHandle, RawBindError> {
        let reserved = [ethertype::IPV4, ethertype::ARP, ethertype::VLAN, ethertype::QINQ];
        if et < 0x0600 || reserved.contains(&et) {
            return Err(RawBindError::Reserved(et));
        }
        if self.by_type.contains_key(&et) {
            return Err(RawBindError::InUse(et));
        }
        self.by_type.insert(et, PacketQueue::new(self.queue_len, self.max_payload));
        Ok(RawHandle(et))
    }

    pub fn close(&mut self, h: RawHandle) -> Result<(), BadHandle> {
        self.by_type.remove(&h.0).map(|_| ()).ok_or(BadHandle)
    }

    pub fn queue_mut(&mut self, et: u16) -> Option<&mut PacketQueue<MacAddr>> {
        self.by_type.get_mut(&et)
    }

    pub fn is_bound(&self, et: u16) -> bool {
        self.by_type.contains_key(&et)
    }
}
