//! Header parsing for unit programs: one call finds the IPv4 addresses, ports, TCP fields and
//! the payload range of a frame, with a typed error (whose `reason()` names a drop counter)
//! for anything malformed or truncated.

use std::net::Ipv4Addr;
use std::ops::Range;

use wire::{ethertype, protocol, EthernetFrame, Ipv4Packet, TcpSegment, UdpPacket, WireError};

/// TCP fields a middlebox looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpInfo {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flag byte (see [`wire::flags`]).
    pub flags: u8,
}

/// The IPv4 part of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Info {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol number (6 TCP, 17 UDP, 1 ICMP, ...).
    pub proto: u8,
    /// True for any fragment (MF set or a non-zero offset).
    pub fragment: bool,
    /// Source and destination ports of TCP and UDP (not for non-first fragments).
    pub ports: Option<(u16, u16)>,
    /// TCP fields, for TCP.
    pub tcp: Option<TcpInfo>,
    /// Where the transport payload lies in the frame (the IP payload for other protocols).
    pub payload: Range<usize>,
}

/// What [`parse`] found in a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Headers {
    /// EtherType after any VLAN tags.
    pub ethertype: u16,
    /// Offset of the network header.
    pub l3: usize,
    /// The IPv4 header, for IPv4 frames.
    pub ipv4: Option<Ipv4Info>,
}

/// Parse Ethernet (with VLAN tags), IPv4, and TCP or UDP headers of `frame`.
///
/// Non-IPv4 frames parse with `ipv4: None`. Errors come from the first malformed or truncated
/// header; [`WireError::reason`] gives a counter name.
pub fn parse(frame: &[u8]) -> Result<Headers, WireError> {
    let eth = EthernetFrame::new_checked(frame)?;
    let l3 = eth.header_len();
    let et = eth.ethertype();
    if et != ethertype::IPV4 {
        return Ok(Headers { ethertype: et, l3, ipv4: None });
    }
    let ip = Ipv4Packet::new_checked(&frame[l3..])?;
    let l4 = l3 + ip.header_len();
    let end = l3 + usize::from(ip.total_len());
    let fragment = ip.is_fragment();
    let first = ip.frag_offset() == 0;
    let proto = ip.protocol();
    let seg = &frame[l4..end];
    let (ports, tcp, payload) = match proto {
        protocol::TCP if first => {
            let t = TcpSegment::new_checked(seg)?;
            let info = TcpInfo { seq: t.seq(), ack: t.ack(), flags: t.flags() };
            (Some((t.src_port(), t.dst_port())), Some(info), l4 + t.header_len()..end)
        }
        protocol::UDP if first => {
            let u = UdpPacket::new_checked(seg)?;
            let plen = usize::from(u.len()).saturating_sub(8);
            (Some((u.src_port(), u.dst_port())), None, l4 + 8..l4 + 8 + plen)
        }
        _ => (None, None, l4..end),
    };
    Ok(Headers {
        ethertype: et,
        l3,
        ipv4: Some(Ipv4Info { src: ip.src(), dst: ip.dst(), proto, fragment, ports, tcp, payload }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::{EthernetRepr, Ipv4Repr, MacAddr, TcpOptions, TcpRepr, UdpRepr};

    fn frame(proto: u8, payload: &[u8]) -> Vec<u8> {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let l4len = if proto == 6 { 20 } else { 8 } + payload.len();
        let mut f = vec![0u8; 14 + 20 + l4len];
        EthernetRepr { src: MacAddr([2; 6]), dst: MacAddr([4; 6]), ethertype: 0x0800, vlan: None }
            .emit(&mut f)
            .unwrap();
        Ipv4Repr {
            src: a,
            dst: b,
            protocol: proto,
            payload_len: l4len,
            ttl: 64,
            ident: 1,
            dont_frag: true,
            dscp_ecn: 0,
        }
        .emit(&mut f[14..])
        .unwrap();
        let hl = if proto == 6 { 20 } else { 8 };
        f[34 + hl..].copy_from_slice(payload);
        if proto == 6 {
            let r = TcpRepr {
                src_port: 1000,
                dst_port: 80,
                seq: 7,
                ack: 9,
                flags: 0x18,
                window: 100,
                urgent: 0,
                options: TcpOptions::default(),
            };
            r.emit(&mut f[34..], a, b, payload.len()).unwrap();
        } else {
            UdpRepr { src_port: 53, dst_port: 5353 }.emit(&mut f[34..], a, b, payload.len()).unwrap();
        }
        f
    }

    #[test]
    fn tcp_and_udp() {
        let f = frame(6, b"hello");
        let h = parse(&f).unwrap();
        let ip = h.ipv4.unwrap();
        assert_eq!(ip.ports, Some((1000, 80)));
        assert_eq!(ip.tcp.unwrap().seq, 7);
        assert_eq!(&f[ip.payload], b"hello");
        let f = frame(17, b"abc");
        let ip = parse(&f).unwrap().ipv4.unwrap();
        assert_eq!(ip.ports, Some((53, 5353)));
        assert_eq!(&f[ip.payload], b"abc");
    }

    #[test]
    fn truncations_are_errors_not_panics() {
        let f = frame(6, b"hello world");
        for n in 0..f.len() {
            let _ = parse(&f[..n]);
        }
        assert_eq!(parse(&f[..10]), Err(WireError::Truncated));
        let mut bad = f.clone();
        bad[14] = 0x65;
        assert_eq!(parse(&bad), Err(WireError::BadVersion));
    }
}
