//! Ethernet II frames with up to two 802.1Q / 802.1ad VLAN tags.

use crate::addr::MacAddr;
use crate::error::WireError;
use crate::field::{get_mac, get_u16, set_mac, set_u16};

/// Well-known EtherType values.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// 802.1Q VLAN tag (customer tag).
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service tag (Q-in-Q outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
}

/// Length of an untagged Ethernet header (dst, src, EtherType).
pub const ETH_HEADER_LEN: usize = 14;
/// Length of one VLAN tag (TPID + TCI).
pub const VLAN_TAG_LEN: usize = 4;
/// Maximum number of stacked VLAN tags accepted.
pub const MAX_VLAN_TAGS: usize = 2;

/// True if `t` is a VLAN tag protocol identifier (802.1Q or 802.1ad).
#[inline]
fn is_tpid(t: u16) -> bool {
    t == ethertype::VLAN || t == ethertype::QINQ
}

/// The tag control information of a VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (12 bits).
    pub vid: u16,
}

impl VlanTag {
    /// Decodes a 16-bit TCI field.
    pub fn from_tci(tci: u16) -> VlanTag {
        VlanTag { pcp: (tci >> 13) as u8, dei: tci & 0x1000 != 0, vid: tci & 0x0fff }
    }

    /// Encodes this tag as a 16-bit TCI field (out-of-range bits are masked).
    pub fn tci(&self) -> u16 {
        (u16::from(self.pcp & 0x7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0fff)
    }
}

/// A zero-copy view of an Ethernet frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buf` without checks; accessors may panic if it would fail [`Self::new_checked`].
    pub fn new_unchecked(buf: T) -> Self {
        EthernetFrame { buf }
    }

    /// Wraps `buf` after checking that the header and any (at most two) VLAN tags are complete.
    ///
    /// Errors: `Truncated` if the buffer ends inside the header, `Unsupported`
    /// for more than two stacked tags.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        let mut len = ETH_HEADER_LEN;
        if b.len() < len {
            return Err(WireError::Truncated);
        }
        let mut tags = 0;
        while is_tpid(get_u16(b, len - 2)) {
            if tags == MAX_VLAN_TAGS {
                return Err(WireError::Unsupported);
            }
            tags += 1;
            len += VLAN_TAG_LEN;
            if b.len() < len {
                return Err(WireError::Truncated);
            }
        }
        Ok(EthernetFrame { buf })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buf
    }

    /// Destination MAC address.
    pub fn dst(&self) -> MacAddr {
        get_mac(self.buf.as_ref(), 0)
    }

    /// Source MAC address.
    pub fn src(&self) -> MacAddr {
        get_mac(self.buf.as_ref(), 6)
    }

    /// Number of VLAN tags (0, 1 or 2).
    pub fn vlan_count(&self) -> usize {
        let b = self.buf.as_ref();
        let mut n = 0;
        while n < MAX_VLAN_TAGS && is_tpid(get_u16(b, 12 + n * VLAN_TAG_LEN)) {
            n += 1;
        }
        n
    }

    /// Header length in bytes: 14, 18 or 22.
    pub fn header_len(&self) -> usize {
        ETH_HEADER_LEN + self.vlan_count() * VLAN_TAG_LEN
    }

    /// The EtherType of the payload (after any VLAN tags).
    pub fn ethertype(&self) -> u16 {
        get_u16(self.buf.as_ref(), self.header_len() - 2)
    }

    /// The VLAN tags, outer first.
    pub fn vlan_tags(&self) -> [Option<VlanTag>; 2] {
        let b = self.buf.as_ref();
        let n = self.vlan_count();
        let tag = |i: usize| (i < n).then(|| VlanTag::from_tci(get_u16(b, 14 + i * VLAN_TAG_LEN)));
        [tag(0), tag(1)]
    }

    /// The VLAN ids, outer first.
    pub fn vlan_ids(&self) -> [Option<u16>; 2] {
        self.vlan_tags().map(|t| t.map(|t| t.vid))
    }

    /// The outer VLAN tag, if any.
    pub fn vlan(&self) -> Option<VlanTag> {
        self.vlan_tags()[0]
    }

    /// The bytes after the header (may include Ethernet padding).
    pub fn payload(&self) -> &[u8] {
        let b = self.buf.as_ref();
        b.get(self.header_len()..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    pub fn set_dst(&mut self, mac: MacAddr) {
        set_mac(self.buf.as_mut(), 0, mac);
    }

    /// Sets the source MAC address.
    pub fn set_src(&mut self, mac: MacAddr) {
        set_mac(self.buf.as_mut(), 6, mac);
    }

    /// Sets the innermost EtherType (bytes 12-13 of an untagged frame).
    ///
    /// Setting a VLAN TPID here changes the frame's layout; use
    /// [`EthernetRepr::emit`] to build tagged frames.
    pub fn set_ethertype(&mut self, ethertype: u16) {
        let off = self.header_len() - 2;
        set_u16(self.buf.as_mut(), off, ethertype);
    }

    /// Mutable bytes after the header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        self.buf.as_mut().get_mut(hl..).unwrap_or(&mut [])
    }
}

/// A high-level description of an Ethernet header with at most one VLAN tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source MAC address.
    pub src: MacAddr,
    /// Destination MAC address.
    pub dst: MacAddr,
    /// EtherType of the payload.
    pub ethertype: u16,
    /// Optional 802.1Q tag (emitted with TPID 0x8100).
    pub vlan: Option<VlanTag>,
}

impl EthernetRepr {
    /// Length of the header [`Self::emit`] writes: 14 or 18.
    pub fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            ETH_HEADER_LEN + VLAN_TAG_LEN
        } else {
            ETH_HEADER_LEN
        }
    }

    /// Writes the header at the start of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let hl = self.header_len();
        if buf.len() < hl {
            return Err(WireError::Truncated);
        }
        set_mac(buf, 0, self.dst);
        set_mac(buf, 6, self.src);
        if let Some(tag) = self.vlan {
            set_u16(buf, 12, ethertype::VLAN);
            set_u16(buf, 14, tag.tci());
        }
        set_u16(buf, hl - 2, self.ethertype);
        Ok(hl)
    }

    /// Describes a checked frame: outer VLAN tag (an inner Q-in-Q tag is dropped) and inner EtherType.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> EthernetRepr {
        EthernetRepr { src: frame.src(), dst: frame.dst(), ethertype: frame.ethertype(), vlan: frame.vlan() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAC_A: MacAddr = MacAddr([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);

    #[test]
    fn golden_untagged() {
        // Broadcast ARP frame header (first 14 bytes of a Linux arping capture).
        let f = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x06, 0xaa];
        let fr = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(fr.dst(), MacAddr::BROADCAST);
        assert_eq!(fr.src(), MAC_A);
        assert_eq!(fr.ethertype(), ethertype::ARP);
        assert_eq!(fr.header_len(), 14);
        assert_eq!(fr.vlan(), None);
        assert_eq!(fr.vlan_ids(), [None, None]);
        assert_eq!(fr.payload(), &[0xaa]);
        let repr = EthernetRepr::parse(&fr);
        let mut out = [0u8; 14];
        assert_eq!(repr.emit(&mut out), Ok(14));
        assert_eq!(out[..], f[..14]);
    }

    #[test]
    fn golden_vlan_tagged() {
        // 802.1Q frame: VLAN 100, PCP 5, carrying IPv4 (scapy Ether()/Dot1Q(vlan=100, prio=5)).
        let f = [
            0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0xa0, 0x64, 0x08, 0x00,
            0x45,
        ];
        let fr = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(fr.header_len(), 18);
        assert_eq!(fr.ethertype(), ethertype::IPV4);
        assert_eq!(fr.vlan(), Some(VlanTag { pcp: 5, dei: false, vid: 100 }));
        assert_eq!(fr.vlan_ids(), [Some(100), None]);
        assert_eq!(fr.payload(), &[0x45]);
        let repr = EthernetRepr::parse(&fr);
        let mut out = [0u8; 18];
        assert_eq!(repr.emit(&mut out), Ok(18));
        assert_eq!(out[..], f[..18]);
    }

    #[test]
    fn golden_qinq() {
        // 802.1ad outer tag VLAN 10 (DEI set), inner 802.1Q VLAN 20, ARP.
        let f = [0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x88, 0xa8, 0x10, 0x0a, 0x81, 0x00, 0x00, 0x14, 0x08, 0x06];
        let fr = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(fr.header_len(), 22);
        assert_eq!(fr.ethertype(), ethertype::ARP);
        assert_eq!(fr.vlan_ids(), [Some(10), Some(20)]);
        assert_eq!(fr.vlan(), Some(VlanTag { pcp: 0, dei: true, vid: 10 }));
        assert!(fr.payload().is_empty());
    }

    #[test]
    fn rejects_short_and_triple_tags() {
        assert_eq!(EthernetFrame::new_checked(&[0u8; 13][..]).err(), Some(WireError::Truncated));
        let mut f = [0u8; 30];
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        assert_eq!(EthernetFrame::new_checked(&f[..17]).err(), Some(WireError::Truncated));
        assert!(EthernetFrame::new_checked(&f[..18]).is_ok());
        f[16..18].copy_from_slice(&[0x81, 0x00]);
        assert_eq!(EthernetFrame::new_checked(&f[..21]).err(), Some(WireError::Truncated));
        assert!(EthernetFrame::new_checked(&f[..22]).is_ok());
        f[20..22].copy_from_slice(&[0x81, 0x00]);
        assert_eq!(EthernetFrame::new_checked(&f[..]).err(), Some(WireError::Unsupported));
    }

    #[test]
    fn setters() {
        let mut f = [0u8; 20];
        let mut fr = EthernetFrame::new_checked(&mut f[..]).unwrap();
        fr.set_dst(MacAddr::BROADCAST);
        fr.set_src(MAC_A);
        fr.set_ethertype(ethertype::IPV4);
        fr.payload_mut()[0] = 0x45;
        assert_eq!(fr.dst(), MacAddr::BROADCAST);
        assert_eq!(fr.src(), MAC_A);
        assert_eq!(fr.ethertype(), ethertype::IPV4);
        assert_eq!(fr.into_inner()[14], 0x45);
    }

    #[test]
    fn emit_too_small() {
        let r = EthernetRepr { src: MAC_A, dst: MAC_A, ethertype: 0x0800, vlan: Some(VlanTag::default()) };
        assert_eq!(r.emit(&mut [0u8; 17]), Err(WireError::Truncated));
    }

    fn arb_mac() -> impl Strategy<Value = MacAddr> {
        any::<[u8; 6]>().prop_map(MacAddr)
    }

    fn arb_tag() -> impl Strategy<Value = VlanTag> {
        (0u8..8, any::<bool>(), 0u16..4096).prop_map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid })
    }

    proptest! {
        #[test]
        fn roundtrip(src in arb_mac(), dst in arb_mac(),
                     et in any::<u16>().prop_filter("not a TPID", |t| !is_tpid(*t)),
                     vlan in proptest::option::of(arb_tag()),
                     payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let repr = EthernetRepr { src, dst, ethertype: et, vlan };
            let mut buf = vec![0u8; repr.header_len() + payload.len()];
            let hl = repr.emit(&mut buf).unwrap();
            buf[hl..].copy_from_slice(&payload);
            let fr = EthernetFrame::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(EthernetRepr::parse(&fr), repr);
            prop_assert_eq!(fr.payload(), &payload[..]);
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(fr) = EthernetFrame::new_checked(&data[..]) {
                let _ = (fr.dst(), fr.src(), fr.ethertype(), fr.vlan_ids(), fr.payload().len());
                let _ = EthernetRepr::parse(&fr);
            }
        }

        #[test]
        fn tci_roundtrip(tci in any::<u16>()) {
            prop_assert_eq!(VlanTag::from_tci(tci).tci(), tci);
        }
    }
}
