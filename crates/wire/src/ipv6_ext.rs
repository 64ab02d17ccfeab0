//! The IPv6 extension-header chain (RFC 8200 section 4), walked with limits.
//!
//! [`walk`] follows the next-header values from the fixed header through hop-by-hop,
//! destination options, routing, fragment and authentication headers to the upper layer,
//! checking what RFC 8200 asks a host to check: hop-by-hop only first, options by the action
//! their type encodes (section 4.2), a routing header with segments left refused (a host
//! forwards nothing; type 0 is deprecated by RFC 5095), and the whole chain in a first
//! fragment (RFC 7112). Each refusal says which ICMPv6 parameter problem RFC 8200 would send
//! and where it points, so the stack can answer (rate-limited) or drop.

use crate::field::{get_u16, get_u32};
use crate::ipv6::{next_header, Ipv6Repr};

/// Bounds on what one packet's chain may hold; a longer chain is refused
/// ([`ChainError::TooLong`]) rather than walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainLimits {
    /// Extension headers at most.
    pub max_headers: usize,
    /// Options other than padding in one options header at most (Linux: 8).
    pub max_options: usize,
    /// Bytes of extension headers at most.
    pub max_bytes: usize,
}

impl Default for ChainLimits {
    fn default() -> Self {
        ChainLimits { max_headers: 8, max_options: 8, max_bytes: 1024 }
    }
}

/// A fragment header (RFC 8200 section 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragmentHeader {
    /// Where this fragment's data goes in the original packet's fragmentable part, bytes.
    pub offset: usize,
    /// More fragments follow.
    pub more: bool,
    /// Identification shared by the fragments of one packet.
    pub ident: u32,
    /// The header that begins the fragmentable part (from the fragment header).
    pub next_header: u8,
    /// Where the fragment header starts in the IPv6 payload: the headers before it are the
    /// unfragmentable part.
    pub header_offset: usize,
}

impl FragmentHeader {
    /// Length of a fragment header.
    pub const LEN: usize = 8;

    /// Offset 0 and no more fragments: an atomic fragment (RFC 6946), a whole packet.
    pub fn is_atomic(&self) -> bool {
        self.offset == 0 && !self.more
    }

    /// Writes a fragment header into `buf[..8]`; `offset` must be a multiple of 8.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, crate::WireError> {
        let h = buf.get_mut(..Self::LEN).ok_or(crate::WireError::Truncated)?;
        if !self.offset.is_multiple_of(8) || self.offset > 0xfff8 {
            return Err(crate::WireError::BadLength);
        }
        h[0] = self.next_header;
        h[1] = 0;
        h[2..4].copy_from_slice(&((self.offset as u16) | u16::from(self.more)).to_be_bytes());
        h[4..8].copy_from_slice(&self.ident.to_be_bytes());
        Ok(Self::LEN)
    }
}

/// The chain of a packet that passed [`walk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    /// The upper-layer protocol (TCP, UDP, ICMPv6, [`next_header::NO_NEXT`], or one this
    /// crate does not know). For a fragment other than the first, what its data begins with.
    pub upper: u8,
    /// Where the upper layer starts in the IPv6 payload.
    pub upper_offset: usize,
    /// The fragment header, if there was one.
    pub fragment: Option<FragmentHeader>,
    /// Extension headers walked.
    pub headers: usize,
    /// Where the next-header field naming `upper` sits, from the start of the IPv6 header
    /// (the pointer of a parameter problem "unrecognized next header").
    pub upper_pointer: usize,
}

/// Which ICMPv6 error an unrecognised option asks for (its type's two high bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptionAction {
    /// Discard the packet silently (01).
    Discard,
    /// Discard and send a parameter problem, code 2 (10).
    DiscardAndReport,
    /// Discard and report unless the destination was multicast (11).
    DiscardAndReportUnicast,
}

/// Why a chain was refused. Pointers count from the start of the IPv6 header, as the
/// parameter-problem message's pointer does (RFC 4443 section 3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChainError {
    /// A header or option runs past the packet.
    Truncated,
    /// More headers, options or bytes than [`ChainLimits`] allow.
    TooLong,
    /// A hop-by-hop header anywhere but first (parameter problem code 1).
    MisplacedHopByHop {
        /// The next-header field that named it.
        pointer: usize,
    },
    /// A malformed option: its length overruns its header, or over 7 bytes of padding in a
    /// row (parameter problem code 0).
    BadOption {
        /// The offending byte.
        pointer: usize,
    },
    /// An option this host does not know whose type says to discard the packet
    /// (parameter problem code 2 when `action` asks for one).
    UnknownOption {
        /// The option's type byte.
        pointer: usize,
        /// What the type's high bits ask for.
        action: OptionAction,
    },
    /// A routing header with segments left: a host does not forward (type 0 is deprecated,
    /// RFC 5095) (parameter problem code 0 at the routing type).
    Routing {
        /// The routing-type byte.
        pointer: usize,
        /// The routing type.
        routing_type: u8,
    },
    /// A first fragment that does not hold the whole chain up to the upper layer
    /// (RFC 7112; parameter problem code 3).
    IncompleteFirstFragment,
}

impl ChainError {
    /// A short snake_case name, for a drop counter.
    pub fn reason(&self) -> &'static str {
        match self {
            ChainError::Truncated => "ext_truncated",
            ChainError::TooLong => "ext_too_long",
            ChainError::MisplacedHopByHop { .. } => "ext_misplaced_hop_by_hop",
            ChainError::BadOption { .. } => "ext_bad_option",
            ChainError::UnknownOption { .. } => "ext_unknown_option",
            ChainError::Routing { .. } => "ext_routing_header",
            ChainError::IncompleteFirstFragment => "ext_incomplete_first_fragment",
        }
    }

    /// The parameter problem (code, pointer) RFC 8200 asks for, if any; `multicast_dst` says
    /// whether the packet was sent to a multicast group.
    pub fn parameter_problem(&self, multicast_dst: bool) -> Option<(u8, u32)> {
        let at = |p: &usize| u32::try_from(*p).unwrap_or(u32::MAX);
        match self {
            ChainError::Truncated | ChainError::TooLong => None,
            ChainError::MisplacedHopByHop { pointer } => Some((1, at(pointer))),
            ChainError::BadOption { pointer } | ChainError::Routing { pointer, .. } => Some((0, at(pointer))),
            ChainError::UnknownOption { pointer, action } => match action {
                OptionAction::Discard => None,
                OptionAction::DiscardAndReport => Some((2, at(pointer))),
                OptionAction::DiscardAndReportUnicast => (!multicast_dst).then(|| (2, at(pointer))),
            },
            ChainError::IncompleteFirstFragment => Some((3, 0)),
        }
    }
}

/// Option types a host knows (RFC 8200 section 4.2, RFC 2711).
mod option {
    /// One byte of padding.
    pub const PAD1: u8 = 0;
    /// N bytes of padding.
    pub const PADN: u8 = 1;
    /// Router alert (RFC 2711): meaningful to routers; a host skips it.
    pub const ROUTER_ALERT: u8 = 5;
}

/// Walks the chain that starts with `first` (the fixed header's next header) over `payload`
/// (the IPv6 payload). See the module docs for what is checked.
pub fn walk(first: u8, payload: &[u8], limits: &ChainLimits) -> Result<Chain, ChainError> {
    let mut nh = first;
    let mut pointer = 6; // the fixed header's next-header field
    let mut off = 0usize;
    let mut headers = 0usize;
    let mut fragment: Option<FragmentHeader> = None;
    let incomplete = |f: &Option<FragmentHeader>| match f {
        Some(f) if f.more => ChainError::IncompleteFirstFragment,
        _ => ChainError::Truncated,
    };
    loop {
        let len = match nh {
            next_header::HOP_BY_HOP | next_header::DEST_OPTS | next_header::ROUTING | next_header::AUTH => {
                if nh == next_header::HOP_BY_HOP && headers > 0 {
                    return Err(ChainError::MisplacedHopByHop { pointer });
                }
                let h = payload.get(off..off + 2).ok_or_else(|| incomplete(&fragment))?;
                let len =
                    if nh == next_header::AUTH { (usize::from(h[1]) + 2) * 4 } else { (usize::from(h[1]) + 1) * 8 };
                let body = payload.get(off..off + len).ok_or_else(|| incomplete(&fragment))?;
                match nh {
                    next_header::ROUTING => check_routing(body, off)?,
                    next_header::AUTH => {}
                    _ => check_options(body, off, limits)?,
                }
                len
            }
            next_header::FRAGMENT => {
                let h = payload.get(off..off + FragmentHeader::LEN).ok_or_else(|| incomplete(&fragment))?;
                let word = get_u16(h, 2);
                let f = FragmentHeader {
                    offset: usize::from(word & 0xfff8),
                    more: word & 1 == 1,
                    ident: get_u32(h, 4),
                    next_header: h[0],
                    header_offset: off,
                };
                fragment = Some(f);
                if f.offset != 0 {
                    // A later fragment: what follows is data, not headers.
                    return Ok(Chain {
                        upper: f.next_header,
                        upper_offset: off + FragmentHeader::LEN,
                        fragment,
                        headers: headers + 1,
                        upper_pointer: Ipv6Repr::HEADER_LEN + off,
                    });
                }
                FragmentHeader::LEN
            }
            upper => {
                return Ok(Chain { upper, upper_offset: off, fragment, headers, upper_pointer: pointer });
            }
        };
        headers += 1;
        if headers > limits.max_headers || off + len > limits.max_bytes {
            return Err(ChainError::TooLong);
        }
        pointer = Ipv6Repr::HEADER_LEN + off;
        nh = payload[off];
        off += len;
    }
}

/// Checks a routing header `h` at `off` in the payload: with segments left, refused.
fn check_routing(h: &[u8], off: usize) -> Result<(), ChainError> {
    let (routing_type, segments_left) = (h[2], h[3]);
    if segments_left != 0 {
        return Err(ChainError::Routing { pointer: Ipv6Repr::HEADER_LEN + off + 2, routing_type });
    }
    Ok(())
}

/// Walks the options of a hop-by-hop or destination options header `h` at `off`.
fn check_options(h: &[u8], off: usize, limits: &ChainLimits) -> Result<(), ChainError> {
    let at = |i: usize| Ipv6Repr::HEADER_LEN + off + i;
    let (mut i, mut padding, mut options) = (2usize, 0usize, 0usize);
    while i < h.len() {
        let kind = h[i];
        if kind == option::PAD1 {
            padding += 1;
            i += 1;
        } else {
            let len = usize::from(*h.get(i + 1).ok_or(ChainError::BadOption { pointer: at(i) })?);
            if i + 2 + len > h.len() {
                return Err(ChainError::BadOption { pointer: at(i + 1) });
            }
            if kind == option::PADN {
                padding += 2 + len;
            } else {
                padding = 0;
                options += 1;
                if options > limits.max_options {
                    return Err(ChainError::TooLong);
                }
                if kind != option::ROUTER_ALERT {
                    let action = match kind >> 6 {
                        0 => None,
                        1 => Some(OptionAction::Discard),
                        2 => Some(OptionAction::DiscardAndReport),
                        _ => Some(OptionAction::DiscardAndReportUnicast),
                    };
                    if let Some(action) = action {
                        return Err(ChainError::UnknownOption { pointer: at(i), action });
                    }
                }
            }
            i += 2 + len;
        }
        if padding > 7 {
            return Err(ChainError::BadOption { pointer: at(i - 1) });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use next_header::*;

    fn walk_default(first: u8, p: &[u8]) -> Result<Chain, ChainError> {
        walk(first, p, &ChainLimits::default())
    }

    /// An options header of 8 bytes: next header, length 0, then six option bytes.
    fn opts(nh: u8, six: [u8; 6]) -> Vec<u8> {
        let mut v = vec![nh, 0];
        v.extend_from_slice(&six);
        v
    }

    #[test]
    fn no_extension_headers_is_the_upper_layer_at_zero() {
        let c = walk_default(TCP, &[0u8; 20]).unwrap();
        assert_eq!((c.upper, c.upper_offset, c.headers, c.fragment, c.upper_pointer), (TCP, 0, 0, None, 6));
    }

    #[test]
    fn a_chain_of_known_headers_reaches_the_upper_layer() {
        let mut p = opts(DEST_OPTS, [option::PADN, 4, 0, 0, 0, 0]); // hop-by-hop, PadN 6
        p.extend(opts(FRAGMENT, [option::ROUTER_ALERT, 2, 0, 0, option::PAD1, option::PAD1]));
        p.extend([ROUTING, 0, 0, 0, 0, 0, 0, 42]); // atomic fragment, ident 42
        p.extend([UDP, 0, 0, 0, 0, 0, 0, 0]); // routing type 0, no segments left: ignored
        p.extend([0u8; 8]);
        let c = walk_default(HOP_BY_HOP, &p).unwrap();
        assert_eq!((c.upper, c.upper_offset, c.headers), (UDP, 32, 4));
        let f = c.fragment.unwrap();
        assert!(f.is_atomic());
        assert_eq!((f.ident, f.header_offset, f.next_header), (42, 16, ROUTING));
        assert_eq!(c.upper_pointer, 40 + 24);
    }

    #[test]
    fn a_later_fragment_stops_the_walk_at_its_data() {
        let mut p = vec![0u8; 8];
        FragmentHeader { offset: 1448, more: true, ident: 7, next_header: TCP, header_offset: 0 }.emit(&mut p).unwrap();
        p.extend([0xffu8; 16]);
        let c = walk_default(FRAGMENT, &p).unwrap();
        let f = c.fragment.unwrap();
        assert_eq!((c.upper, c.upper_offset, f.offset, f.more, f.ident), (TCP, 8, 1448, true, 7));
    }

    #[test]
    fn hop_by_hop_must_come_first() {
        let mut p = opts(HOP_BY_HOP, [option::PADN, 4, 0, 0, 0, 0]);
        p.extend(opts(UDP, [option::PADN, 4, 0, 0, 0, 0]));
        assert_eq!(walk_default(DEST_OPTS, &p), Err(ChainError::MisplacedHopByHop { pointer: 40 }));
        assert_eq!(ChainError::MisplacedHopByHop { pointer: 40 }.parameter_problem(false), Some((1, 40)));
    }

    #[test]
    fn unknown_options_act_as_their_type_says() {
        // 0x1e: skip; 0x5e: discard; 0x9e: report; 0xde: report unless multicast.
        assert!(walk_default(DEST_OPTS, &opts(UDP, [0x1e, 4, 0, 0, 0, 0])).is_ok());
        let cases = [
            (0x5e, OptionAction::Discard, None, None),
            (0x9e, OptionAction::DiscardAndReport, Some((2, 42)), Some((2, 42))),
            (0xde, OptionAction::DiscardAndReportUnicast, Some((2, 42)), None),
        ];
        for (kind, action, unicast, multicast) in cases {
            let e = walk_default(DEST_OPTS, &opts(UDP, [kind, 4, 0, 0, 0, 0])).unwrap_err();
            assert_eq!(e, ChainError::UnknownOption { pointer: 42, action });
            assert_eq!((e.parameter_problem(false), e.parameter_problem(true)), (unicast, multicast));
        }
    }

    #[test]
    fn malformed_options_and_long_padding_are_refused() {
        // An option whose length runs past the header.
        assert_eq!(
            walk_default(DEST_OPTS, &opts(UDP, [0x1e, 9, 0, 0, 0, 0])),
            Err(ChainError::BadOption { pointer: 43 })
        );
        // Eight bytes of padding in a row (a 16-byte header of PadN 14 would be 14).
        let mut p = vec![UDP, 1, option::PADN, 12];
        p.extend([0u8; 12]);
        assert!(matches!(walk_default(DEST_OPTS, &p), Err(ChainError::BadOption { .. })));
    }

    #[test]
    fn routing_headers_with_segments_left_are_refused() {
        let p = [UDP, 2, 0, 1, 0, 0, 0, 0, 0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let e = walk_default(ROUTING, &p).unwrap_err();
        assert_eq!(e, ChainError::Routing { pointer: 42, routing_type: 0 });
        assert_eq!(e.reason(), "ext_routing_header");
    }

    #[test]
    fn chains_past_the_limits_or_the_packet_are_refused() {
        let mut p = Vec::new();
        for _ in 0..9 {
            p.extend(opts(DEST_OPTS, [option::PADN, 4, 0, 0, 0, 0]));
        }
        assert_eq!(walk_default(DEST_OPTS, &p), Err(ChainError::TooLong));
        let mut many = vec![UDP, 2];
        for _ in 0..11 {
            many.extend([0x1e, 0]);
        }
        assert_eq!(walk_default(DEST_OPTS, &many[..24]), Err(ChainError::TooLong));
        assert_eq!(walk_default(DEST_OPTS, &[UDP, 1, 0, 0]), Err(ChainError::Truncated));
        assert_eq!(walk_default(DEST_OPTS, &[UDP]), Err(ChainError::Truncated));
    }

    #[test]
    fn a_first_fragment_must_hold_the_whole_chain() {
        let mut p = vec![0u8; 8];
        FragmentHeader { offset: 0, more: true, ident: 1, next_header: DEST_OPTS, header_offset: 0 }
            .emit(&mut p)
            .unwrap();
        p.extend([UDP, 3, 0, 0]); // a 32-byte options header cut after 4 bytes
        let e = walk_default(FRAGMENT, &p).unwrap_err();
        assert_eq!(e, ChainError::IncompleteFirstFragment);
        assert_eq!(e.parameter_problem(false), Some((3, 0)));
    }

    #[test]
    fn no_input_panics() {
        // Every prefix of every short byte pattern, as each header type.
        for first in [HOP_BY_HOP, DEST_OPTS, ROUTING, FRAGMENT, AUTH] {
            for seed in 0u8..=255 {
                let p: Vec<u8> = (0..48u8).map(|i| i.wrapping_mul(seed).wrapping_add(seed >> 3)).collect();
                for n in 0..p.len() {
                    let _ = walk_default(first, &p[..n]);
                }
            }
        }
    }
}
