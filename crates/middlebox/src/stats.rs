//! Counters of the middlebox, like Rosebud's per-interface and per-RPU status counters: bytes,
//! frames, drops by reason, stalls and slot occupancy, for every port and every unit.

use link::LinkStats;

/// Drop (or event) counts keyed by a short snake_case reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reasons(Vec<(&'static str, u64)>);

impl Reasons {
    /// Add `n` to the count of `reason`.
    pub fn add(&mut self, reason: &'static str, n: u64) {
        if n == 0 {
            return;
        }
        match self.0.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, c)) => *c += n,
            None => self.0.push((reason, n)),
        }
    }

    /// The count of `reason` (0 if never seen).
    pub fn get(&self, reason: &str) -> u64 {
        self.0.iter().find(|(r, _)| *r == reason).map_or(0, |(_, c)| *c)
    }

    /// Sum over all reasons.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, c)| c).sum()
    }

    /// (reason, count) pairs in first-seen order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.0.iter().copied()
    }

    /// Add every count of `other`.
    pub fn merge(&mut self, other: &Reasons) {
        for (r, n) in other.iter() {
            self.add(r, n);
        }
    }
}

/// Counters of one port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received from the link and placed into a unit.
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames the link accepted for transmission.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames dropped at this port, by reason (`oversize`, `port_closed`, `link_error`, ...).
    pub drops: Reasons,
    /// Times a received frame had to wait because the chosen unit had no free slot
    /// (back-pressure upstream of the LB).
    pub stalls: u64,
    /// Times the link refused part of a transmit batch (back-pressure downstream).
    pub tx_stalls: u64,
    /// The link driver's own counters.
    pub link: LinkStats,
    /// The link driver's kind ("mem", "pcap", ...).
    pub kind: &'static str,
}

/// What a unit counts itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitCounters {
    /// Frames the unit received (descriptors popped).
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Packets the program sent to a port.
    pub to_port: u64,
    /// Packets the program sent to the host.
    pub to_host: u64,
    /// Packets the program sent to another unit.
    pub to_unit: u64,
    /// Packets dropped, by reason (program reasons, `program_panic`, `bad_port`, ...).
    pub drops: Reasons,
    /// Broadcast messages received.
    pub messages_in: u64,
    /// Broadcast messages sent.
    pub messages_out: u64,
    /// Broadcasts refused because the outbox was full.
    pub messages_full: u64,
    /// Calls with a packet token that no longer refers to a held packet (a program bug).
    pub stale_packets: u64,
    /// Host tags that did not fit in the slot after the frame.
    pub tags_truncated: u64,
    /// Panics caught in the program.
    pub program_panics: u64,
    /// Traps (breakpoints) raised.
    pub traps: u64,
    /// Program swaps done.
    pub swaps: u64,
    /// Timer callbacks.
    pub timer_fires: u64,
    /// Steps in which the unit did some work.
    pub busy_steps: u64,
    /// Steps in which it found nothing to do.
    pub idle_steps: u64,
}

/// What the distributor counts about one unit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitLbCounters {
    /// Frames placed into this unit's slots (from ports, host and loopback).
    pub placed: u64,
    /// Times the LB chose this unit but it had no free slot.
    pub stalls: u64,
    /// Frames copied out of this unit to ports.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames delivered from this unit to the host.
    pub host_frames: u64,
    /// Frames this unit sent to another unit (loopback).
    pub loop_out: u64,
    /// Frames this unit received from another unit.
    pub loop_in: u64,
    /// Frames dropped after leaving the unit, by reason.
    pub drops: Reasons,
    /// Slots held right now (not free at the LB).
    pub occupancy: u32,
    /// Largest occupancy seen.
    pub max_occupancy: u32,
    /// Whether the LB may send new frames to this unit.
    pub enabled: bool,
}

/// The state of a unit's processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitState {
    /// Processing packets.
    #[default]
    Running,
    /// Paused by the host: packets wait in its queue.
    Paused,
    /// Stopped at a breakpoint until the host resumes it.
    Trapped,
}

impl UnitState {
    /// A short name.
    pub fn name(&self) -> &'static str {
        match self {
            UnitState::Running => "running",
            UnitState::Paused => "paused",
            UnitState::Trapped => "trapped",
        }
    }
}

/// Everything known about one unit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitStats {
    /// The name of the program it runs.
    pub program: String,
    /// Its processing state.
    pub state: UnitState,
    /// Slots it announced.
    pub slots: u32,
    /// Slot size it announced.
    pub slot_size: u32,
    /// Packets its program holds right now.
    pub held: u32,
    /// Its own counters.
    pub unit: UnitCounters,
    /// The distributor's counters about it.
    pub lb: UnitLbCounters,
    /// Counters the program reports.
    pub program_counters: Vec<(&'static str, u64)>,
}

/// Counters of the host channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Frames delivered to the host queue.
    pub delivered: u64,
    /// Times a frame for the host waited because the host queue was full.
    pub stalls: u64,
    /// Frames injected by the host and placed into a unit.
    pub injected: u64,
    /// Broadcast messages fanned out to the units.
    pub broadcasts: u64,
}

/// A snapshot of every counter of a runtime.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Name of the LB policy.
    pub policy: String,
    /// Per port.
    pub ports: Vec<PortStats>,
    /// Per unit.
    pub units: Vec<UnitStats>,
    /// The host channel.
    pub host: HostStats,
    /// Distributor loop iterations.
    pub steps: u64,
}

impl RuntimeStats {
    /// Slots held across all units (frames inside the middlebox).
    pub fn occupancy(&self) -> u64 {
        self.units.iter().map(|u| u64::from(u.lb.occupancy)).sum()
    }

    /// Drops of all ports and units, by reason.
    pub fn drops(&self) -> Reasons {
        let mut r = Reasons::default();
        for p in &self.ports {
            r.merge(&p.drops);
        }
        for u in &self.units {
            r.merge(&u.unit.drops);
            r.merge(&u.lb.drops);
        }
        r
    }

    /// Every counter as flat `(name, value)` pairs (`port0.rx_frames`, `unit1.drop.bad_port`, ...),
    /// for stats files and JSON.
    pub fn flat(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            let k = |n: &str| format!("port{i}.{n}");
            v.push((k("rx_frames"), p.rx_frames));
            v.push((k("rx_bytes"), p.rx_bytes));
            v.push((k("tx_frames"), p.tx_frames));
            v.push((k("tx_bytes"), p.tx_bytes));
            v.push((k("stalls"), p.stalls));
            v.push((k("tx_stalls"), p.tx_stalls));
            for (r, n) in p.drops.iter() {
                v.push((k(&format!("drop.{r}")), n));
            }
        }
        for (i, u) in self.units.iter().enumerate() {
            let k = |n: &str| format!("unit{i}.{n}");
            let c = &u.unit;
            for (n, x) in [
                ("rx_frames", c.rx_frames),
                ("rx_bytes", c.rx_bytes),
                ("to_port", c.to_port),
                ("to_host", c.to_host),
                ("to_unit", c.to_unit),
                ("messages_in", c.messages_in),
                ("messages_out", c.messages_out),
                ("stale_packets", c.stale_packets),
                ("program_panics", c.program_panics),
                ("traps", c.traps),
                ("swaps", c.swaps),
                ("tx_frames", u.lb.tx_frames),
                ("tx_bytes", u.lb.tx_bytes),
                ("lb_stalls", u.lb.stalls),
                ("occupancy", u64::from(u.lb.occupancy)),
                ("max_occupancy", u64::from(u.lb.max_occupancy)),
                ("slots", u64::from(u.slots)),
                ("held", u64::from(u.held)),
                ("loop_in", u.lb.loop_in),
                ("loop_out", u.lb.loop_out),
            ] {
                v.push((k(n), x));
            }
            for (r, n) in c.drops.iter().chain(u.lb.drops.iter()) {
                v.push((k(&format!("drop.{r}")), n));
            }
            for (r, n) in &u.program_counters {
                v.push((k(&format!("app.{r}")), *n));
            }
        }
        v.push(("host.delivered".into(), self.host.delivered));
        v.push(("host.stalls".into(), self.host.stalls));
        v.push(("host.injected".into(), self.host.injected));
        v.push(("host.broadcasts".into(), self.host.broadcasts));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_add_and_merge() {
        let mut r = Reasons::default();
        r.add("a", 2);
        r.add("b", 0);
        r.add("a", 1);
        assert_eq!(r.get("a"), 3);
        assert_eq!(r.get("b"), 0);
        let mut s = Reasons::default();
        s.add("b", 4);
        r.merge(&s);
        assert_eq!(r.total(), 7);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![("a", 3), ("b", 4)]);
    }
}
