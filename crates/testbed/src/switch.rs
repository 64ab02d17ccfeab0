//! A learning Ethernet switch joining the hosts of an in-process testbed.

use link::{FrameBatch, Instant, Link, LinkError};
use std::collections::HashMap;
use wire::{EthernetFrame, MacAddr};

/// A learning bridge: frames to a known MAC go to its port, others are flooded.
pub struct Switch {
    ports: Vec<Box<dyn Link>>,
    out: Vec<FrameBatch>,
    table: HashMap<MacAddr, usize>,
    rx: FrameBatch,
    /// Frames that could not be forwarded because an output queue was full.
    pub dropped: u64,
    /// Frames too short to carry an Ethernet header.
    pub malformed: u64,
}

impl Switch {
    /// A switch with no ports; frames up to `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Switch {
            ports: Vec::new(),
            out: Vec::new(),
            table: HashMap::new(),
            rx: FrameBatch::new(64, max_frame),
            dropped: 0,
            malformed: 0,
        }
    }

    /// Attach a link as a new port; returns the port number.
    pub fn add_port(&mut self, link: Box<dyn Link>) -> usize {
        let max = self.rx.slot_size();
        self.ports.push(link);
        self.out.push(FrameBatch::new(256, max));
        self.ports.len() - 1
    }

    /// Forward everything that has arrived; returns the number of frames received.
    pub fn poll(&mut self, now: Instant) -> Result<usize, LinkError> {
        let mut total = 0;
        for p in 0..self.ports.len() {
            self.rx.clear();
            total += self.ports[p].rx_batch(now, &mut self.rx)?;
            for i in 0..self.rx.len() {
                let frame = self.rx.get(i);
                let Ok(eth) = EthernetFrame::new_checked(frame) else {
                    self.malformed += 1;
                    continue;
                };
                let (src, dst) = (eth.src(), eth.dst());
                if src.is_unicast() {
                    self.table.insert(src, p);
                }
                match self.table.get(&dst) {
                    Some(&q) if dst.is_unicast() => {
                        if q != p && !self.out[q].push(frame) {
                            self.dropped += 1;
                        }
                    }
                    _ => {
                        for q in 0..self.out.len() {
                            if q != p && !self.out[q].push(frame) {
                                self.dropped += 1;
                            }
                        }
                    }
                }
            }
        }
        for (port, out) in self.ports.iter_mut().zip(self.out.iter_mut()) {
            if !out.is_empty() {
                port.tx_batch(now, out)?;
            }
        }
        Ok(total)
    }
}
