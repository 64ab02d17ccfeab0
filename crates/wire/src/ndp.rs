//! Neighbor Discovery messages and options (RFC 4861), carried in ICMPv6.
//!
//! [`parse`] decodes router and neighbor solicitations and advertisements and redirects, with
//! the validity checks of RFC 4861 sections 6.1 and 7.1 that need only the packet (hop limit
//! 255, code 0, lengths, no zero-length option, no multicast target, an unspecified source only
//! in a solicitation to a solicited-node group and without a source link-layer address,
//! routers' advertisements from link-local sources). [`emit`] writes one with its options and
//! checksum.

use crate::addr::MacAddr;
use crate::error::WireError;
use crate::field::{get_mac, get_u16, get_u32, set_mac, set_u16, set_u32};
use crate::icmpv6::{fill, icmpv6_type, HEADER_LEN};
use crate::ipv6::{get_ipv6, set_ipv6, Ipv6AddrKind};
use std::net::Ipv6Addr;

/// A Neighbor Discovery message's fixed part (its options are separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdpMessage {
    /// Router solicitation (133).
    RouterSolicit,
    /// Router advertisement (134).
    RouterAdvert {
        /// Hop limit hosts should use (0: unspecified).
        hop_limit: u8,
        /// Addresses are available from DHCPv6 (M).
        managed: bool,
        /// Other configuration is available from DHCPv6 (O).
        other: bool,
        /// Default router preference (RFC 4191), two bits: 1 high, 0 medium, 3 low.
        preference: u8,
        /// Seconds this router is a default router (0: not one).
        router_lifetime: u16,
        /// Reachable time, ms (0: unspecified).
        reachable_ms: u32,
        /// Retransmission timer, ms (0: unspecified).
        retrans_ms: u32,
    },
    /// Neighbor solicitation (135).
    NeighborSolicit {
        /// The address whose link-layer address is asked for.
        target: Ipv6Addr,
    },
    /// Neighbor advertisement (136).
    NeighborAdvert {
        /// The sender is a router (R).
        router: bool,
        /// An answer to a solicitation (S).
        solicited: bool,
        /// Replace a cached link-layer address (O).
        override_: bool,
        /// The address advertised.
        target: Ipv6Addr,
    },
    /// Redirect (137).
    Redirect {
        /// The better first hop.
        target: Ipv6Addr,
        /// The destination being redirected.
        dst: Ipv6Addr,
    },
}

impl NdpMessage {
    /// The ICMPv6 type.
    pub fn msg_type(&self) -> u8 {
        match self {
            NdpMessage::RouterSolicit => icmpv6_type::ROUTER_SOLICIT,
            NdpMessage::RouterAdvert { .. } => icmpv6_type::ROUTER_ADVERT,
            NdpMessage::NeighborSolicit { .. } => icmpv6_type::NEIGHBOR_SOLICIT,
            NdpMessage::NeighborAdvert { .. } => icmpv6_type::NEIGHBOR_ADVERT,
            NdpMessage::Redirect { .. } => icmpv6_type::REDIRECT,
        }
    }

    /// Length of the fixed part, ICMPv6 header included; options follow it.
    fn fixed_len(msg_type: u8) -> Option<usize> {
        match msg_type {
            icmpv6_type::ROUTER_SOLICIT => Some(8),
            icmpv6_type::ROUTER_ADVERT => Some(16),
            icmpv6_type::NEIGHBOR_SOLICIT | icmpv6_type::NEIGHBOR_ADVERT => Some(24),
            icmpv6_type::REDIRECT => Some(40),
            _ => None,
        }
    }
}

/// A prefix information option (type 3, RFC 4861 section 4.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrefixInfo {
    /// Prefix length in bits.
    pub prefix_len: u8,
    /// On-link (L).
    pub on_link: bool,
    /// Usable for stateless address autoconfiguration (A, RFC 4862).
    pub autonomous: bool,
    /// Valid lifetime, seconds (0xffffffff: infinite).
    pub valid_lifetime: u32,
    /// Preferred lifetime, seconds.
    pub preferred_lifetime: u32,
    /// The prefix.
    pub prefix: Ipv6Addr,
}

/// One Neighbor Discovery option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdpOption<'a> {
    /// Source link-layer address (1).
    SourceLinkAddr(MacAddr),
    /// Target link-layer address (2).
    TargetLinkAddr(MacAddr),
    /// Prefix information (3).
    Prefix(PrefixInfo),
    /// Redirected header (4): the start of the redirected packet.
    Redirected(&'a [u8]),
    /// MTU (5).
    Mtu(u32),
    /// Any other option, skipped by receivers (RFC 4861 section 4.6).
    Unknown {
        /// Option type.
        kind: u8,
        /// The bytes after type and length.
        data: &'a [u8],
    },
}

/// Option type numbers.
mod kind {
    pub const SOURCE_LL: u8 = 1;
    pub const TARGET_LL: u8 = 2;
    pub const PREFIX: u8 = 3;
    pub const REDIRECTED: u8 = 4;
    pub const MTU: u8 = 5;
}

impl NdpOption<'_> {
    /// Bytes this option takes on the wire (a multiple of 8).
    pub fn wire_len(&self) -> usize {
        match self {
            NdpOption::SourceLinkAddr(_) | NdpOption::TargetLinkAddr(_) | NdpOption::Mtu(_) => 8,
            NdpOption::Prefix(_) => 32,
            NdpOption::Redirected(d) => (8 + d.len()).div_ceil(8) * 8,
            NdpOption::Unknown { data, .. } => (2 + data.len()).div_ceil(8) * 8,
        }
    }

    /// Writes the option into `b` (exactly [`Self::wire_len`] bytes, zero-padded).
    fn emit(&self, b: &mut [u8]) {
        b.fill(0);
        b[1] = (b.len() / 8) as u8;
        match *self {
            NdpOption::SourceLinkAddr(m) | NdpOption::TargetLinkAddr(m) => {
                b[0] = if matches!(self, NdpOption::SourceLinkAddr(_)) { kind::SOURCE_LL } else { kind::TARGET_LL };
                set_mac(b, 2, m);
            }
            NdpOption::Prefix(p) => {
                b[0] = kind::PREFIX;
                b[2] = p.prefix_len;
                b[3] = (u8::from(p.on_link) << 7) | (u8::from(p.autonomous) << 6);
                set_u32(b, 4, p.valid_lifetime);
                set_u32(b, 8, p.preferred_lifetime);
                set_ipv6(b, 16, p.prefix);
            }
            NdpOption::Redirected(d) => {
                b[0] = kind::REDIRECTED;
                b[8..8 + d.len()].copy_from_slice(d);
            }
            NdpOption::Mtu(mtu) => {
                b[0] = kind::MTU;
                set_u32(b, 4, mtu);
            }
            NdpOption::Unknown { kind, data } => {
                b[0] = kind;
                b[2..2 + data.len()].copy_from_slice(data);
            }
        }
    }
}

/// The options of a message that passed [`parse`]: every length checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdpOptions<'a> {
    bytes: &'a [u8],
}

impl<'a> NdpOptions<'a> {
    /// Every option in order.
    pub fn iter(&self) -> impl Iterator<Item = NdpOption<'a>> + 'a {
        let mut rest = self.bytes;
        std::iter::from_fn(move || {
            let len = usize::from(*rest.get(1)?) * 8;
            let (o, tail) = rest.split_at(len);
            rest = tail;
            Some(decode_option(o))
        })
    }

    /// The source link-layer address, if given.
    pub fn source_link_addr(&self) -> Option<MacAddr> {
        self.iter().find_map(|o| if let NdpOption::SourceLinkAddr(m) = o { Some(m) } else { None })
    }

    /// The target link-layer address, if given.
    pub fn target_link_addr(&self) -> Option<MacAddr> {
        self.iter().find_map(|o| if let NdpOption::TargetLinkAddr(m) = o { Some(m) } else { None })
    }

    /// The MTU, if given.
    pub fn mtu(&self) -> Option<u32> {
        self.iter().find_map(|o| if let NdpOption::Mtu(m) = o { Some(m) } else { None })
    }

    /// The prefix information options.
    pub fn prefixes(&self) -> impl Iterator<Item = PrefixInfo> + 'a {
        self.iter().filter_map(|o| if let NdpOption::Prefix(p) = o { Some(p) } else { None })
    }
}

/// Decodes one option whose length was checked by [`check_options`].
fn decode_option(o: &[u8]) -> NdpOption<'_> {
    match (o[0], o.len()) {
        (kind::SOURCE_LL, 8..) => NdpOption::SourceLinkAddr(get_mac(o, 2)),
        (kind::TARGET_LL, 8..) => NdpOption::TargetLinkAddr(get_mac(o, 2)),
        (kind::PREFIX, 32..) => NdpOption::Prefix(PrefixInfo {
            prefix_len: o[2],
            on_link: o[3] & 0x80 != 0,
            autonomous: o[3] & 0x40 != 0,
            valid_lifetime: get_u32(o, 4),
            preferred_lifetime: get_u32(o, 8),
            prefix: get_ipv6(o, 16),
        }),
        (kind::REDIRECTED, _) => NdpOption::Redirected(&o[8..]),
        (kind::MTU, 8..) => NdpOption::Mtu(get_u32(o, 4)),
        (kind, _) => NdpOption::Unknown { kind, data: &o[2..] },
    }
}

/// Why a Neighbor Discovery message was refused (RFC 4861: silently discarded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdpError {
    /// Not a Neighbor Discovery type.
    NotNdp,
    /// Shorter than its fixed part.
    Truncated,
    /// The hop limit was not 255: it crossed a router.
    HopLimit,
    /// A code other than 0.
    Code,
    /// An option of length 0 or running past the message, or a known option too short.
    BadOption,
    /// A multicast target address.
    MulticastTarget,
    /// The source address is not allowed for this message (an unspecified source where one
    /// is needed or with a source link-layer address, a router advertisement not from a
    /// link-local address, a solicited advertisement to a multicast group).
    BadSource,
}

impl NdpError {
    /// A short snake_case name, for a drop counter.
    pub fn reason(&self) -> &'static str {
        match self {
            NdpError::NotNdp => "ndp_not_ndp",
            NdpError::Truncated => "ndp_truncated",
            NdpError::HopLimit => "ndp_hop_limit",
            NdpError::Code => "ndp_code",
            NdpError::BadOption => "ndp_bad_option",
            NdpError::MulticastTarget => "ndp_multicast_target",
            NdpError::BadSource => "ndp_bad_source",
        }
    }
}

/// Checks that `b` is a run of options with non-zero lengths that end exactly at its end
/// and that the known ones are long enough.
fn check_options(mut b: &[u8]) -> Result<(), NdpError> {
    while !b.is_empty() {
        let len = usize::from(*b.get(1).ok_or(NdpError::BadOption)?) * 8;
        if len == 0 || len > b.len() {
            return Err(NdpError::BadOption);
        }
        let min = match b[0] {
            kind::PREFIX => 32,
            _ => 8,
        };
        if len < min {
            return Err(NdpError::BadOption);
        }
        b = &b[len..];
    }
    Ok(())
}

/// Decodes and checks a Neighbor Discovery message: `icmp` is the whole ICMPv6 message
/// (checksum verified by the caller), `src`, `dst` and `hop_limit` come from its IPv6 header.
pub fn parse(
    icmp: &[u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
) -> Result<(NdpMessage, NdpOptions<'_>), NdpError> {
    let msg_type = *icmp.first().ok_or(NdpError::Truncated)?;
    let fixed = NdpMessage::fixed_len(msg_type).ok_or(NdpError::NotNdp)?;
    if icmp.len() < fixed {
        return Err(NdpError::Truncated);
    }
    if hop_limit != 255 {
        return Err(NdpError::HopLimit);
    }
    if icmp[1] != 0 {
        return Err(NdpError::Code);
    }
    let options = &icmp[fixed..];
    check_options(options)?;
    let options = NdpOptions { bytes: options };
    let flags = icmp[4];
    let message = match msg_type {
        icmpv6_type::ROUTER_SOLICIT => NdpMessage::RouterSolicit,
        icmpv6_type::ROUTER_ADVERT => NdpMessage::RouterAdvert {
            hop_limit: icmp[4],
            managed: icmp[5] & 0x80 != 0,
            other: icmp[5] & 0x40 != 0,
            preference: (icmp[5] >> 3) & 0x03,
            router_lifetime: get_u16(icmp, 6),
            reachable_ms: get_u32(icmp, 8),
            retrans_ms: get_u32(icmp, 12),
        },
        icmpv6_type::NEIGHBOR_SOLICIT => NdpMessage::NeighborSolicit { target: get_ipv6(icmp, 8) },
        icmpv6_type::NEIGHBOR_ADVERT => NdpMessage::NeighborAdvert {
            router: flags & 0x80 != 0,
            solicited: flags & 0x40 != 0,
            override_: flags & 0x20 != 0,
            target: get_ipv6(icmp, 8),
        },
        _ => NdpMessage::Redirect { target: get_ipv6(icmp, 8), dst: get_ipv6(icmp, 24) },
    };
    check_addresses(&message, &options, src, dst)?;
    Ok((message, options))
}

/// The address rules of RFC 4861 sections 6.1.1, 6.1.2, 7.1.1, 7.1.2 and 8.1.
fn check_addresses(m: &NdpMessage, o: &NdpOptions<'_>, src: Ipv6Addr, dst: Ipv6Addr) -> Result<(), NdpError> {
    let unspecified = src.is_unspecified();
    match *m {
        NdpMessage::RouterSolicit if unspecified && o.source_link_addr().is_some() => Err(NdpError::BadSource),
        NdpMessage::RouterAdvert { .. } | NdpMessage::Redirect { .. } if !src.is_link_local() => {
            Err(NdpError::BadSource)
        }
        NdpMessage::Redirect { dst: d, .. } if d.is_multicast() => Err(NdpError::MulticastTarget),
        NdpMessage::NeighborSolicit { target } | NdpMessage::NeighborAdvert { target, .. } if target.is_multicast() => {
            Err(NdpError::MulticastTarget)
        }
        NdpMessage::NeighborSolicit { target }
            if unspecified && (dst != target.solicited_node() || o.source_link_addr().is_some()) =>
        {
            Err(NdpError::BadSource)
        }
        NdpMessage::NeighborAdvert { solicited: true, .. } if dst.is_multicast() => Err(NdpError::BadSource),
        _ => Ok(()),
    }
}

/// Writes `message` with `options` at the start of `buf`, checksum filled for `src` and
/// `dst`; returns the length. The IPv6 header around it must carry hop limit 255.
pub fn emit(
    message: &NdpMessage,
    options: &[NdpOption<'_>],
    buf: &mut [u8],
    src: Ipv6Addr,
    dst: Ipv6Addr,
) -> Result<usize, WireError> {
    let fixed = NdpMessage::fixed_len(message.msg_type()).unwrap_or(HEADER_LEN);
    let len = fixed + options.iter().map(NdpOption::wire_len).sum::<usize>();
    let out = buf.get_mut(..len).ok_or(WireError::Truncated)?;
    out[..fixed].fill(0);
    out[0] = message.msg_type();
    match *message {
        NdpMessage::RouterSolicit => {}
        NdpMessage::RouterAdvert {
            hop_limit,
            managed,
            other,
            preference,
            router_lifetime,
            reachable_ms,
            retrans_ms,
        } => {
            out[4] = hop_limit;
            out[5] = (u8::from(managed) << 7) | (u8::from(other) << 6) | ((preference & 0x03) << 3);
            set_u16(out, 6, router_lifetime);
            set_u32(out, 8, reachable_ms);
            set_u32(out, 12, retrans_ms);
        }
        NdpMessage::NeighborSolicit { target } => set_ipv6(out, 8, target),
        NdpMessage::NeighborAdvert { router, solicited, override_, target } => {
            out[4] = (u8::from(router) << 7) | (u8::from(solicited) << 6) | (u8::from(override_) << 5);
            set_ipv6(out, 8, target);
        }
        NdpMessage::Redirect { target, dst: d } => {
            set_ipv6(out, 8, target);
            set_ipv6(out, 24, d);
        }
    }
    let mut at = fixed;
    for o in options {
        let n = o.wire_len();
        if n / 8 > 255 {
            return Err(WireError::BadLength);
        }
        o.emit(&mut out[at..at + n]);
        at += n;
    }
    fill(out, src, dst);
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icmpv6::Icmpv6Packet;

    const MAC: MacAddr = MacAddr([0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);

    fn ll(last: u16) -> Ipv6Addr {
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, last)
    }

    fn round_trip(m: NdpMessage, opts: &[NdpOption<'_>], src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
        let mut buf = vec![0u8; 200];
        let n = emit(&m, opts, &mut buf, src, dst).unwrap();
        buf.truncate(n);
        assert!(Icmpv6Packet::new_checked(&buf[..]).unwrap().verify_checksum(src, dst));
        let (back, o) = parse(&buf, src, dst, 255).unwrap();
        assert_eq!(back, m);
        assert_eq!(o.iter().collect::<Vec<_>>(), opts);
        buf
    }

    #[test]
    fn every_message_round_trips_with_its_options() {
        let target: Ipv6Addr = "fd77::2".parse().unwrap();
        let ns = round_trip(
            NdpMessage::NeighborSolicit { target },
            &[NdpOption::SourceLinkAddr(MAC)],
            "fd77::1".parse().unwrap(),
            target.solicited_node(),
        );
        assert_eq!(ns.len(), 32);
        assert_eq!(&ns[24..32], &[1, 1, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        round_trip(
            NdpMessage::NeighborAdvert { router: false, solicited: true, override_: true, target },
            &[NdpOption::TargetLinkAddr(MAC)],
            target,
            "fd77::1".parse().unwrap(),
        );
        let prefix = PrefixInfo {
            prefix_len: 64,
            on_link: true,
            autonomous: true,
            valid_lifetime: 86_400,
            preferred_lifetime: 14_400,
            prefix: "2001:db8:1::".parse().unwrap(),
        };
        let ra = NdpMessage::RouterAdvert {
            hop_limit: 64,
            managed: false,
            other: true,
            preference: 1,
            router_lifetime: 1800,
            reachable_ms: 0,
            retrans_ms: 0,
        };
        let bytes = round_trip(
            ra,
            &[NdpOption::SourceLinkAddr(MAC), NdpOption::Mtu(1500), NdpOption::Prefix(prefix)],
            ll(1),
            "ff02::1".parse().unwrap(),
        );
        let (_, o) = parse(&bytes, ll(1), "ff02::1".parse().unwrap(), 255).unwrap();
        assert_eq!((o.mtu(), o.source_link_addr(), o.prefixes().next()), (Some(1500), Some(MAC), Some(prefix)));
        round_trip(NdpMessage::RouterSolicit, &[], Ipv6Addr::UNSPECIFIED, "ff02::2".parse().unwrap());
        round_trip(
            NdpMessage::Redirect { target: ll(9), dst: "2001:db8::5".parse().unwrap() },
            &[NdpOption::Redirected(&[0x60, 0, 0, 0, 0, 0, 0, 0])],
            ll(1),
            ll(2),
        );
    }

    #[test]
    fn invalid_messages_are_refused_by_reason() {
        let target: Ipv6Addr = "fd77::2".parse().unwrap();
        let me: Ipv6Addr = "fd77::1".parse().unwrap();
        let mut buf = [0u8; 64];
        let n = emit(&NdpMessage::NeighborSolicit { target }, &[NdpOption::SourceLinkAddr(MAC)], &mut buf, me, target)
            .unwrap();
        let ns = &buf[..n];
        assert_eq!(parse(ns, me, target, 64), Err(NdpError::HopLimit));
        assert_eq!(parse(&ns[..20], me, target, 255), Err(NdpError::Truncated));
        let mut coded = ns.to_vec();
        coded[1] = 1;
        assert_eq!(parse(&coded, me, target, 255), Err(NdpError::Code));
        let mut zero_len = ns.to_vec();
        zero_len[25] = 0;
        assert_eq!(parse(&zero_len, me, target, 255), Err(NdpError::BadOption));
        let mut long = ns.to_vec();
        long[25] = 2;
        assert_eq!(parse(&long, me, target, 255), Err(NdpError::BadOption));
        // Duplicate address detection: from :: to the solicited-node group, no source address option.
        assert_eq!(parse(ns, Ipv6Addr::UNSPECIFIED, target.solicited_node(), 255), Err(NdpError::BadSource));
        assert_eq!(
            parse(&ns[..24], Ipv6Addr::UNSPECIFIED, target.solicited_node(), 255).map(|m| m.0),
            Ok(NdpMessage::NeighborSolicit { target })
        );
        assert_eq!(parse(&ns[..24], Ipv6Addr::UNSPECIFIED, target, 255), Err(NdpError::BadSource));
        let mut mcast = ns.to_vec();
        mcast[8] = 0xff;
        assert_eq!(parse(&mcast, me, target, 255), Err(NdpError::MulticastTarget));
        // A router advertisement from a global address.
        let ra = NdpMessage::RouterAdvert {
            hop_limit: 0,
            managed: false,
            other: false,
            preference: 0,
            router_lifetime: 0,
            reachable_ms: 0,
            retrans_ms: 0,
        };
        let n = emit(&ra, &[], &mut buf, me, target).unwrap();
        assert_eq!(parse(&buf[..n], me, target, 255), Err(NdpError::BadSource));
        assert_eq!(parse(&[128, 0, 0, 0, 0, 0, 0, 0], me, target, 255), Err(NdpError::NotNdp));
        assert_eq!(NdpError::BadSource.reason(), "ndp_bad_source");
    }

    #[test]
    fn no_input_panics() {
        let (a, b) = (ll(1), ll(2));
        for t in 133u8..=137 {
            for seed in 0u8..=255 {
                let mut p: Vec<u8> = (0..72u8).map(|i| i.wrapping_mul(seed) ^ seed.rotate_left(3)).collect();
                p[0] = t;
                p[1] = 0;
                for n in 0..p.len() {
                    if let Ok((_, o)) = parse(&p[..n], a, b, 255) {
                        let _ = (o.iter().count(), o.mtu(), o.prefixes().count());
                    }
                }
            }
        }
    }
}
