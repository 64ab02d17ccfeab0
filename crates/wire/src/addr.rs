//! Link-layer (MAC) addresses. IPv4 addresses are `std::net::Ipv4Addr`.

use core::fmt;
use core::str::FromStr;

/// A 48-bit Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

/// The error returned when a string is not a MAC address of the form `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address (expected aa:bb:cc:dd:ee:ff)")]
pub struct ParseMacError;

impl MacAddr {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// The all-zero address `00:00:00:00:00:00`.
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// Builds an address from the first 6 bytes of `bytes`; `None` if shorter.
    pub fn from_bytes(bytes: &[u8]) -> Option<MacAddr> {
        let b: [u8; 6] = bytes.get(..6)?.try_into().ok()?;
        Some(MacAddr(b))
    }

    /// The address bytes.
    pub fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// True for `ff:ff:ff:ff:ff:ff`.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// True if the group bit (least significant bit of the first byte) is set; includes broadcast.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// True for an individual (non-group) address.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for MacAddr {
    type Err = ParseMacError;

    /// Parses `aa:bb:cc:dd:ee:ff` (also accepts `-` as separator, either case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in out.iter_mut() {
            let part = parts.next().ok_or(ParseMacError)?;
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseMacError);
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| ParseMacError)?;
        }
        if parts.next().is_some() {
            return Err(ParseMacError);
        }
        Ok(MacAddr(out))
    }
}

impl From<[u8; 6]> for MacAddr {
    fn from(b: [u8; 6]) -> Self {
        MacAddr(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse() {
        let m = MacAddr([0x02, 0x00, 0x5e, 0x10, 0xab, 0xff]);
        assert_eq!(m.to_string(), "02:00:5e:10:ab:ff");
        assert_eq!(format!("{m:?}"), "02:00:5e:10:ab:ff");
        assert_eq!("02:00:5E:10:ab:ff".parse::<MacAddr>(), Ok(m));
        assert_eq!("02-00-5e-10-ab-ff".parse::<MacAddr>(), Ok(m));
        for bad in [
            "",
            "02:00:5e:10:ab",
            "02:00:5e:10:ab:ff:00",
            "0g:00:00:00:00:00",
            "+1:00:00:00:00:00",
            "123:00:00:00:00:00",
            "::::::",
        ] {
            assert_eq!(bad.parse::<MacAddr>(), Err(ParseMacError), "{bad}");
        }
    }

    #[test]
    fn classes() {
        assert!(MacAddr::BROADCAST.is_broadcast());
        assert!(MacAddr::BROADCAST.is_multicast());
        assert!(!MacAddr::BROADCAST.is_unicast());
        let mc = MacAddr([0x01, 0x00, 0x5e, 0, 0, 1]);
        assert!(mc.is_multicast() && !mc.is_broadcast());
        let uc = MacAddr([0x52, 0x54, 0, 0x12, 0x34, 0x56]);
        assert!(uc.is_unicast());
        assert!(MacAddr::ZERO.is_unicast());
        assert_eq!(MacAddr::default(), MacAddr::ZERO);
        assert_eq!(MacAddr::from_bytes(&[1, 2, 3, 4, 5]), None);
        assert_eq!(MacAddr::from_bytes(&[1, 2, 3, 4, 5, 6, 7]), Some(MacAddr([1, 2, 3, 4, 5, 6])));
    }
}
