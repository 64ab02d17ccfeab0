//! Load-balancer policies. A policy only *chooses* a unit for a frame; the slot mechanism
//! (in `distributor`) then places the frame into a free slot of that unit, or holds it
//! (back-pressure, counted as a stall) until one is free. Nothing is dropped past the LB.

/// What a policy knows about one frame.
#[derive(Debug, Clone, Copy)]
pub struct PacketInfo<'a> {
    /// Ingress port ([`crate::HOST_PORT`] for frames the host injects).
    pub port: u16,
    /// The symmetric flow hash (travels on with the descriptor).
    pub hash: u32,
    /// The frame.
    pub frame: &'a [u8],
}

/// What a policy knows about the units.
#[derive(Debug, Clone, Copy)]
pub struct UnitView<'a> {
    /// Free slots per unit.
    pub free: &'a [u32],
    /// Slots per unit.
    pub slots: &'a [u32],
    /// Whether the LB may send new frames to each unit (a drained unit is disabled).
    pub enabled: &'a [bool],
}

impl UnitView<'_> {
    /// Number of units.
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// True when there is no unit.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }

    /// True if unit `u` is enabled and has a free slot.
    pub fn can_take(&self, u: usize) -> bool {
        u < self.len() && self.enabled[u] && self.free[u] > 0
    }
}

/// A load-balancing policy: picks the unit for each frame.
pub trait Policy: Send {
    /// A short name for reports.
    fn name(&self) -> &str;
    /// The unit for this frame, or `None` to hold the frame for now (stall). Returning a unit
    /// without a free slot also holds the frame until that unit frees one.
    fn choose(&mut self, pkt: &PacketInfo<'_>, units: &UnitView<'_>) -> Option<usize>;
    /// Called when the set of enabled units changes.
    fn enabled_changed(&mut self, _enabled: &[bool]) {}
}

/// Round robin over the enabled units that have a free slot.
#[derive(Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl RoundRobin {
    /// A round-robin policy starting at unit 0.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Policy for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }

    fn choose(&mut self, _pkt: &PacketInfo<'_>, units: &UnitView<'_>) -> Option<usize> {
        let n = units.len();
        // Wrap by comparison, not division: this runs once per frame.
        let mut u = if self.next < n { self.next } else { 0 };
        for _ in 0..n {
            let after = if u + 1 == n { 0 } else { u + 1 };
            if units.can_take(u) {
                self.next = after;
                return Some(u);
            }
            u = after;
        }
        None
    }
}

/// Number of entries of the flow-hash indirection table.
pub const RETA_SIZE: usize = 256;

/// Symmetric flow hash: every frame of a flow (both directions) goes to the same unit, through
/// an indirection table of [`RETA_SIZE`] entries (like RSS). Disabling a unit moves only its
/// entries to the remaining units; enabling it moves them back.
#[derive(Debug)]
pub struct FlowHash {
    reta: Vec<u16>,
    units: usize,
}

impl FlowHash {
    /// A policy spreading flows over `units` units.
    pub fn new(units: usize) -> Self {
        let units = units.max(1);
        FlowHash { reta: (0..RETA_SIZE).map(|i| (i % units) as u16).collect(), units }
    }

    /// The unit a hash maps to right now.
    pub fn unit_for(&self, hash: u32) -> usize {
        // Use high bits (the low ones may be used by a unit's own flow table).
        usize::from(self.reta[(hash >> 24) as usize % RETA_SIZE])
    }
}

impl Policy for FlowHash {
    fn name(&self) -> &str {
        "flow-hash"
    }

    fn choose(&mut self, pkt: &PacketInfo<'_>, units: &UnitView<'_>) -> Option<usize> {
        if units.len() != self.units {
            *self = FlowHash::new(units.len());
            self.enabled_changed(units.enabled);
        }
        Some(self.unit_for(pkt.hash))
    }

    fn enabled_changed(&mut self, enabled: &[bool]) {
        let on: Vec<u16> = (0..self.units).filter(|&u| enabled.get(u) == Some(&true)).map(|u| u as u16).collect();
        let mut k = 0;
        for (i, e) in self.reta.iter_mut().enumerate() {
            let home = i % self.units;
            *e = if enabled.get(home) == Some(&true) || on.is_empty() {
                home as u16
            } else {
                k += 1;
                on[(k - 1) % on.len()]
            };
        }
    }
}

/// The enabled unit with the most free slots (ties: the lowest number).
#[derive(Debug, Default)]
pub struct LeastLoaded;

impl Policy for LeastLoaded {
    fn name(&self) -> &str {
        "least-loaded"
    }

    fn choose(&mut self, _pkt: &PacketInfo<'_>, units: &UnitView<'_>) -> Option<usize> {
        let mut best: Option<(usize, u32)> = None;
        for u in 0..units.len() {
            if units.can_take(u) && best.is_none_or(|(_, f)| units.free[u] > f) {
                best = Some((u, units.free[u]));
            }
        }
        best.map(|(u, _)| u)
    }
}

/// A policy by name, as the CLI spells it: `rr`, `hash`, `least`.
pub fn by_name(name: &str, units: usize) -> Option<Box<dyn Policy>> {
    match name {
        "rr" | "round-robin" => Some(Box::new(RoundRobin::new())),
        "hash" | "flow-hash" => Some(Box::new(FlowHash::new(units))),
        "least" | "least-loaded" => Some(Box::new(LeastLoaded)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(hash: u32) -> PacketInfo<'static> {
        PacketInfo { port: 0, hash, frame: &[] }
    }

    #[test]
    fn round_robin_skips_full_and_disabled() {
        let mut p = RoundRobin::new();
        let free = [1, 0, 5];
        let en = [true, true, true];
        let v = UnitView { free: &free, slots: &[8, 8, 8], enabled: &en };
        assert_eq!(p.choose(&info(0), &v), Some(0));
        assert_eq!(p.choose(&info(0), &v), Some(2));
        assert_eq!(p.choose(&info(0), &v), Some(0));
        let en = [false, true, true];
        let v = UnitView { free: &free, slots: &[8, 8, 8], enabled: &en };
        assert_eq!(p.choose(&info(0), &v), Some(2));
        let v = UnitView { free: &[0, 0, 0], slots: &[8, 8, 8], enabled: &en };
        assert_eq!(p.choose(&info(0), &v), None);
    }

    #[test]
    fn flow_hash_is_stable_and_remaps_only_disabled() {
        let mut p = FlowHash::new(4);
        let before: Vec<usize> = (0..1000u32).map(|h| p.unit_for(h.wrapping_mul(2654435761))).collect();
        p.enabled_changed(&[true, false, true, true]);
        for (i, &b) in before.iter().enumerate() {
            let now = p.unit_for((i as u32).wrapping_mul(2654435761));
            if b != 1 {
                assert_eq!(now, b);
            } else {
                assert_ne!(now, 1);
            }
        }
        p.enabled_changed(&[true; 4]);
        let after: Vec<usize> = (0..1000u32).map(|h| p.unit_for(h.wrapping_mul(2654435761))).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn least_loaded_picks_most_free() {
        let mut p = LeastLoaded;
        let v = UnitView { free: &[2, 7, 7], slots: &[8, 8, 8], enabled: &[true; 3] };
        assert_eq!(p.choose(&info(0), &v), Some(1));
        assert!(by_name("hash", 2).is_some() && by_name("nope", 2).is_none());
    }
}
