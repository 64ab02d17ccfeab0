//! Building test frames: Ethernet + IPv4 + TCP or UDP with a payload, checksums filled.
//! For tests, benchmarks and trace generators.

use std::net::Ipv4Addr;

use wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpOptions, TcpRepr, UdpRepr};

/// Source MAC of built frames.
pub const SRC_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x01]);
/// Destination MAC of built frames.
pub const DST_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x02]);

/// One direction of a TCP or UDP conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoints {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

impl Endpoints {
    /// The same conversation seen from the other side.
    pub fn reversed(&self) -> Self {
        Endpoints { src: self.dst, dst: self.src, sport: self.dport, dport: self.sport }
    }
}

fn ip_frame(e: &Endpoints, proto: u8, l4_len: usize) -> Option<Vec<u8>> {
    let mut f = vec![0u8; 14 + 20 + l4_len];
    EthernetRepr { src: SRC_MAC, dst: DST_MAC, ethertype: wire::ethertype::IPV4, vlan: None }.emit(&mut f).ok()?;
    Ipv4Repr {
        src: e.src,
        dst: e.dst,
        protocol: proto,
        payload_len: l4_len,
        ttl: 64,
        ident: 0,
        dont_frag: true,
        dscp_ecn: 0,
    }
    .emit(&mut f[14..])
    .ok()?;
    Some(f)
}

/// A TCP segment with `flags`, `seq`, `ack` and `payload`; `None` if it would not fit 64 KiB.
pub fn tcp(e: &Endpoints, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Option<Vec<u8>> {
    let mut f = ip_frame(e, wire::protocol::TCP, 20 + payload.len())?;
    f[54..].copy_from_slice(payload);
    TcpRepr {
        src_port: e.sport,
        dst_port: e.dport,
        seq,
        ack,
        flags,
        window: 65535,
        urgent: 0,
        options: TcpOptions::default(),
    }
    .emit(&mut f[34..], e.src, e.dst, payload.len())
    .ok()?;
    Some(f)
}

/// A UDP datagram with `payload`; `None` if it would not fit 64 KiB.
pub fn udp(e: &Endpoints, payload: &[u8]) -> Option<Vec<u8>> {
    let mut f = ip_frame(e, wire::protocol::UDP, 8 + payload.len())?;
    f[42..].copy_from_slice(payload);
    UdpRepr { src_port: e.sport, dst_port: e.dport }.emit(&mut f[34..], e.src, e.dst, payload.len()).ok()?;
    Some(f)
}

/// A UDP frame of exactly `size` bytes (at least 42) for forwarding benchmarks.
pub fn udp_of_size(e: &Endpoints, size: usize) -> Option<Vec<u8>> {
    udp(e, &vec![0u8; size.checked_sub(42)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_parseable_frames() {
        let e = Endpoints { src: Ipv4Addr::new(1, 2, 3, 4), dst: Ipv4Addr::new(5, 6, 7, 8), sport: 10, dport: 20 };
        let f = tcp(&e, 5, 6, wire::flags::ACK, b"xyz").unwrap();
        let h = crate::parse::parse(&f).unwrap().ipv4.unwrap();
        assert_eq!(h.ports, Some((10, 20)));
        assert_eq!(&f[h.payload], b"xyz");
        assert_eq!(udp_of_size(&e, 64).unwrap().len(), 64);
        assert!(udp_of_size(&e, 10).is_none());
    }
}
