//! The configuration shared by the in-process and shared-memory links.

use crate::{LinkError, MAX_FRAME};

/// Size of a link: its IP MTU and the depth of its rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkConfig {
    /// IP MTU in bytes (default 1500); the largest frame is `mtu + 18` (Ethernet header + one VLAN tag).
    pub mtu: usize,
    /// Frames each direction can hold (a power of two, default 1024).
    pub depth: usize,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { mtu: 1500, depth: 1024 }
    }
}

impl LinkConfig {
    /// Smallest IP MTU accepted (the IPv4 minimum).
    pub const MIN_MTU: usize = 68;
    /// Largest ring depth accepted.
    pub const MAX_DEPTH: usize = 1 << 20;

    /// The same configuration with another MTU.
    pub fn mtu(mut self, mtu: usize) -> Self {
        self.mtu = mtu;
        self
    }

    /// The same configuration with another ring depth.
    pub fn depth(mut self, depth: usize) -> Self {
        self.depth = depth;
        self
    }

    /// Largest frame (Ethernet header and one VLAN tag included, FCS excluded).
    pub fn max_frame(&self) -> usize {
        self.mtu + 18
    }

    /// Check the values; the error says which one is wrong and why.
    pub fn validate(&self) -> Result<(), LinkError> {
        if self.mtu < Self::MIN_MTU || self.max_frame() > MAX_FRAME {
            return Err(LinkError::Config(format!(
                "mtu {} is outside {}..={}",
                self.mtu,
                Self::MIN_MTU,
                MAX_FRAME - 18
            )));
        }
        if !self.depth.is_power_of_two() || self.depth < 2 || self.depth > Self::MAX_DEPTH {
            return Err(LinkError::Config(format!(
                "ring depth {} must be a power of two in 2..={}",
                self.depth,
                Self::MAX_DEPTH
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let c = LinkConfig::default();
        assert_eq!(c.max_frame(), 1518);
        assert!(c.validate().is_ok());
        assert!(c.mtu(9216).validate().is_ok());
        assert!(c.mtu(9217).validate().is_err());
        assert!(c.mtu(10).validate().is_err());
        assert!(c.depth(1000).validate().is_err());
        assert!(c.depth(1).validate().is_err());
    }
}
