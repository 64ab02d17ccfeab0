//! The IPv6 receive path: the fixed header's checks, the extension-header chain (RFC 8200),
//! then UDP (to the dual-stack socket table), ICMPv6 (echo, errors, Packet Too Big) and
//! Neighbor Discovery. Every frame ends in one
//! verdict, `rx_delivered` or one `rx_drop_*` reason, as on the IPv4 path.

use super::neighbor::{AdvertFlags, AdvertOutcome};
use super::{multicast_mac, AddrState, DstKind, ALL_NODES};
use crate::counters::Counter;
use crate::error::TxError;
use crate::iface::Core;
use crate::reasm::FragVerdict;
use crate::tcp::lookup::FourTuple;
use crate::tcp::sink::LinkSink;
use crate::udp::Delivery;
use link::Link;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use wire::icmpv6::{icmpv6_type, unreach6_code, MAX_QUOTE};
use wire::ipv6::next_header;
use wire::{
    Chain, ChainError, ChainLimits, FragmentHeader, Icmpv6Message, Icmpv6Packet, Icmpv6Repr, Ipv6Packet, MacAddr,
    NdpError, NdpMessage, UdpPacket, WireError,
};

/// A received IPv6 packet that passed the fixed header's checks.
struct Rx6<'a> {
    ip: Ipv6Packet<&'a [u8]>,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    kind: DstKind,
    /// The sender's MAC (from the Ethernet header).
    eth_src: MacAddr,
}

impl Core {
    /// Process one IPv6 packet (the Ethernet payload) from `eth_src`.
    pub(crate) fn handle_ipv6<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        eth_src: MacAddr,
        payload: &[u8],
    ) -> Result<(), TxError> {
        if !self.v6.is_on() {
            return self.drop(Counter::rx_drop_eth_unknown_ethertype);
        }
        let ip = match Ipv6Packet::new_checked(payload) {
            Ok(p) => p,
            Err(WireError::BadVersion) => return self.drop(Counter::rx_drop_ipv6_bad_version),
            Err(WireError::Unsupported) => return self.drop(Counter::rx_drop_ipv6_jumbogram),
            Err(_) => return self.drop(Counter::rx_drop_ipv6_truncated),
        };
        let (src, dst) = (ip.src(), ip.dst());
        if src.is_multicast() || src.is_loopback() || self.v6.is_own(src) {
            return self.drop(Counter::rx_drop_ipv6_martian_src);
        }
        let kind = self.v6.classify_dst(dst);
        if kind == DstKind::Other {
            return self.drop(Counter::rx_drop_ipv6_not_for_us);
        }
        let chain = match wire::ipv6_ext::walk(ip.next_header(), ip.payload(), &ChainLimits::default()) {
            Ok(c) => c,
            Err(e) => {
                self.drop(chain_drop_reason(&e))?;
                if let Some((code, pointer)) = e.parameter_problem(dst.is_multicast()) {
                    if !src.is_unspecified() {
                        self.send_icmpv6_error(link, &ip, Icmpv6Message::ParameterProblem { code, pointer })?;
                    }
                }
                return Ok(());
            }
        };
        if let Some(frag) = chain.fragment.filter(|f| !f.is_atomic()) {
            return self.reassemble_v6(link, &ip, &frag, eth_src);
        }
        self.handle_ipv6_whole(link, ip, chain, kind, eth_src)
    }

    /// A fragment: store it; a datagram it completes is processed as if it came whole.
    fn reassemble_v6<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        ip: &Ipv6Packet<&[u8]>,
        frag: &FragmentHeader,
        eth_src: MacAddr,
    ) -> Result<(), TxError> {
        let verdict = self.reasm6.insert_v6(ip, frag, self.env.now);
        self.take_reasm_outcomes();
        match verdict {
            FragVerdict::Queued => {
                self.env.counters.bump(Counter::ipv6_frags_queued);
                Ok(())
            }
            FragVerdict::Dropped(reason) => self.drop(reason),
            FragVerdict::Complete => {
                self.env.counters.bump(Counter::ipv6_reassembled);
                let whole = self.reasm6.take_complete();
                let result = self.handle_reassembled_v6(link, &whole, eth_src);
                self.reasm6.give_back(whole);
                result
            }
        }
    }

    /// A reassembled datagram: its chain is walked again (now without the fragment header).
    fn handle_reassembled_v6<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        whole: &[u8],
        eth_src: MacAddr,
    ) -> Result<(), TxError> {
        let ip = match Ipv6Packet::new_checked(whole) {
            Ok(p) => p,
            Err(_) => return self.drop(Counter::rx_drop_ipv6_truncated),
        };
        let chain = match wire::ipv6_ext::walk(ip.next_header(), ip.payload(), &ChainLimits::default()) {
            Ok(c) => c,
            Err(e) => return self.drop(chain_drop_reason(&e)),
        };
        let kind = self.v6.classify_dst(ip.dst());
        self.handle_ipv6_whole(link, ip, chain, kind, eth_src)
    }

    /// A whole packet (received whole, atomic, or reassembled): its upper layer.
    fn handle_ipv6_whole<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        ip: Ipv6Packet<&[u8]>,
        chain: Chain,
        kind: DstKind,
        eth_src: MacAddr,
    ) -> Result<(), TxError> {
        let (src, dst) = (ip.src(), ip.dst());
        let rx = Rx6 { ip, src, dst, kind, eth_src };
        let l4 = &rx.ip.payload()[chain.upper_offset..];
        match chain.upper {
            next_header::ICMPV6 => self.handle_icmpv6(link, &rx, l4),
            _ if src.is_unspecified() || kind == DstKind::Tentative => self.drop(Counter::rx_drop_ipv6_martian_src),
            next_header::TCP if kind != DstKind::Unicast => self.drop(Counter::rx_drop_tcp_broadcast),
            next_header::TCP => self.handle_tcp(link, src, dst, l4),
            next_header::UDP => self.handle_udp6(link, &rx, l4),
            next_header::NO_NEXT => self.drop(Counter::rx_drop_ipv6_no_next_header),
            _ => {
                self.drop(Counter::rx_drop_ipv6_unknown_next_header)?;
                let pointer = chain.upper_pointer as u32;
                self.send_icmpv6_error(link, &rx.ip, Icmpv6Message::ParameterProblem { code: 1, pointer })
            }
        }
    }

    /// A UDP datagram: checksum (mandatory over IPv6), then the socket bound to its port,
    /// or a port unreachable (rate-limited; never for a datagram sent to a group).
    fn handle_udp6<L: Link + ?Sized>(&mut self, link: &mut L, rx: &Rx6<'_>, l4: &[u8]) -> Result<(), TxError> {
        let Ok(udp) = UdpPacket::new_checked(l4) else { return self.drop(Counter::rx_drop_udp_truncated) };
        if udp.checksum() == 0 {
            return self.drop(Counter::rx_drop_udp6_zero_checksum);
        }
        if self.env.cfg.verify_udp_checksum && !udp.verify_checksum(rx.src, rx.dst) {
            return self.drop(Counter::rx_drop_udp_bad_checksum);
        }
        let from = SocketAddr::V6(SocketAddrV6::new(rx.src, udp.src_port(), 0, 0));
        match self.udp.deliver(udp.dst_port(), from, udp.payload(), &mut self.tcp.shared.mem) {
            Delivery::Queued => {
                self.env.counters.bump(Counter::udp_rx_datagrams);
                Ok(())
            }
            Delivery::Dropped(reason) => self.drop(reason),
            Delivery::NoSocket => {
                self.drop(Counter::rx_drop_udp_no_socket)?;
                if rx.kind != DstKind::Unicast {
                    return Ok(());
                }
                let message = Icmpv6Message::DestUnreachable { code: unreach6_code::PORT };
                self.send_icmpv6_error(link, &rx.ip, message)
            }
        }
    }

    /// Charge an ICMPv6 error to the UDP socket whose datagram it quotes (an unfragmented
    /// one, or the first fragment, with UDP straight after the fixed header).
    fn note_icmpv6_error(&mut self, quoted: &[u8]) {
        if quoted.len() < 42 {
            return;
        }
        let ip = Ipv6Packet::new_unchecked(&quoted[..40]);
        if ip.next_header() != next_header::UDP || !self.v6.is_own(ip.src()) {
            return;
        }
        let port = u16::from_be_bytes([quoted[40], quoted[41]]);
        if let Some(s) = self.udp.by_port_mut(port) {
            s.icmp_errors += 1;
        }
    }

    fn handle_icmpv6<L: Link + ?Sized>(&mut self, link: &mut L, rx: &Rx6<'_>, l4: &[u8]) -> Result<(), TxError> {
        let Ok(pkt) = Icmpv6Packet::new_checked(l4) else { return self.drop(Counter::rx_drop_icmpv6_truncated) };
        if !pkt.verify_checksum(rx.src, rx.dst) {
            return self.drop(Counter::rx_drop_icmpv6_bad_checksum);
        }
        if (icmpv6_type::ROUTER_SOLICIT..=icmpv6_type::REDIRECT).contains(&pkt.msg_type()) {
            return self.handle_ndp(link, rx, l4);
        }
        if rx.src.is_unspecified() || rx.kind == DstKind::Tentative {
            return self.drop(Counter::rx_drop_ipv6_martian_src);
        }
        match pkt.message() {
            Icmpv6Message::EchoRequest { ident, seq } => {
                // An echo to a group is answered from the address chosen for the sender.
                let from = (rx.kind == DstKind::Unicast).then_some(rx.dst);
                let reply = Icmpv6Repr { message: Icmpv6Message::EchoReply { ident, seq }, data: pkt.data() };
                if self.v6.send_icmp(&mut self.env, &mut self.eg, link, from, rx.src, &reply)? {
                    self.env.counters.bump(Counter::icmpv6_echo_replied);
                }
                Ok(())
            }
            Icmpv6Message::EchoReply { ident, seq } => {
                let (now, hops) = (self.env.now, rx.ip.hop_limit());
                if self.ping.on_reply(rx.src.into(), ident, seq, hops, pkt.data(), now) {
                    self.env.counters.bump(Counter::icmp_echo_reply_received);
                    Ok(())
                } else {
                    self.drop(Counter::rx_drop_icmpv6_unmatched_reply)
                }
            }
            Icmpv6Message::PacketTooBig { mtu } => {
                self.env.counters.bump(Counter::icmpv6_errors_received);
                self.on_packet_too_big(link, mtu, pkt.data())
            }
            m if m.is_error() => {
                self.env.counters.bump(Counter::icmpv6_errors_received);
                self.note_icmpv6_error(pkt.data());
                Ok(())
            }
            _ => self.drop(Counter::rx_drop_icmpv6_unhandled_type),
        }
    }

    /// Packet Too Big about a packet of ours (RFC 8201): lower the path MTU towards the
    /// destination it quotes.
    /// A Packet Too Big: the path MTU towards the quoted packet's destination drops, and a TCP
    /// connection whose segment in flight is quoted (RFC 5927) shrinks its MSS and resends.
    fn on_packet_too_big<L: Link + ?Sized>(&mut self, link: &mut L, mtu: u32, quoted: &[u8]) -> Result<(), TxError> {
        if quoted.len() < wire::Ipv6Repr::HEADER_LEN {
            return Ok(());
        }
        // The quote is usually cut short of the packet's payload length: read the header.
        let q = Ipv6Packet::new_unchecked(&quoted[..wire::Ipv6Repr::HEADER_LEN]);
        let (src, dst) = (q.src(), q.dst());
        if !self.v6.is_own(src) {
            return Ok(());
        }
        let mtu = usize::try_from(mtu).unwrap_or(usize::MAX);
        if self.v6.lower_path_mtu(dst, mtu, self.env.now).is_some() {
            self.env.counters.bump(Counter::icmp_pmtu_updates);
        }
        // A connection may still send larger segments than a path MTU lowered before.
        let mtu = self.v6.path_mtu(dst, self.env.now);
        let l4 = &quoted[wire::Ipv6Repr::HEADER_LEN..];
        if q.next_header() != next_header::TCP || l4.len() < 8 {
            return Ok(());
        }
        let (sport, dport) = (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]));
        let seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
        let tuple = FourTuple::new(src.into(), sport, SocketAddr::new(dst.into(), dport));
        if !self.tcp.quotes_flight(&tuple, seq) {
            return Ok(());
        }
        let mut out = LinkSink::new(&mut self.env, &mut self.eg, &mut self.v6, link);
        self.tcp.on_path_mtu(&mut out, &tuple, mtu);
        out.finish()
    }

    fn handle_ndp<L: Link + ?Sized>(&mut self, link: &mut L, rx: &Rx6<'_>, icmp: &[u8]) -> Result<(), TxError> {
        let (msg, opts) = match wire::ndp::parse(icmp, rx.src, rx.dst, rx.ip.hop_limit()) {
            Ok(m) => m,
            Err(e) => return self.drop(ndp_drop_reason(e)),
        };
        let now = self.env.now;
        match msg {
            NdpMessage::NeighborSolicit { target } => match self.v6.own_state(target) {
                None | Some(AddrState::Duplicate) => self.drop(Counter::rx_drop_ndp_not_for_us),
                Some(AddrState::Tentative) if rx.src.is_unspecified() => {
                    // Another node is claiming the address we are checking (RFC 4862 5.4.3).
                    self.v6.mark_duplicate(target);
                    self.env.counters.bump(Counter::ndp_dad_failed);
                    Ok(())
                }
                Some(AddrState::Tentative) => self.drop(Counter::rx_drop_ndp_tentative_target),
                Some(AddrState::Preferred) if rx.src.is_unspecified() => {
                    let all = multicast_mac(ALL_NODES);
                    Ok(self.v6.send_advert(&mut self.env, &mut self.eg, link, target, ALL_NODES, all, false)?)
                }
                Some(AddrState::Preferred) => {
                    let mac = opts.source_link_addr();
                    if let Some(mac) = mac {
                        if let Some(resolved) = self.v6.neighbors.on_link_addr(rx.src, mac, now) {
                            self.v6.release_pending(&mut self.env, &mut self.eg, link, rx.src, resolved)?;
                        }
                    }
                    let to = mac.unwrap_or(rx.eth_src);
                    Ok(self.v6.send_advert(&mut self.env, &mut self.eg, link, target, rx.src, to, true)?)
                }
            },
            NdpMessage::NeighborAdvert { router, solicited, override_, target } => match self.v6.own_state(target) {
                Some(AddrState::Tentative) => {
                    self.v6.mark_duplicate(target);
                    self.env.counters.bump(Counter::ndp_dad_failed);
                    Ok(())
                }
                Some(AddrState::Preferred) => self.drop(Counter::rx_drop_ndp_conflict),
                _ => {
                    let flags = AdvertFlags { router, solicited, override_ };
                    let cfg = self.v6.cfg.ndp;
                    match self.v6.neighbors.on_advert(target, opts.target_link_addr(), flags, now, &cfg) {
                        AdvertOutcome::NoEntry => self.drop(Counter::rx_drop_ndp_advert_no_entry),
                        AdvertOutcome::Updated => Ok(()),
                        AdvertOutcome::Resolved(mac) => {
                            Ok(self.v6.release_pending(&mut self.env, &mut self.eg, link, target, mac)?)
                        }
                    }
                }
            },
            NdpMessage::RouterAdvert { .. } => match self.v6.on_router_advert(rx.src, &msg, &opts, now) {
                Ok(()) => {
                    self.env.counters.bump(Counter::ndp_router_adverts_accepted);
                    Ok(())
                }
                Err(reason) => self.drop(reason),
            },
            NdpMessage::RouterSolicit => self.drop(Counter::rx_drop_ndp_router_solicit),
            NdpMessage::Redirect { .. } => self.drop(Counter::rx_drop_ndp_redirect),
        }
    }

    /// Send an ICMPv6 error about `invoking` (RFC 4443 section 2.4): never about an error,
    /// never to a multicast or unspecified source, within the error rate limit; the quote
    /// keeps the reply within the minimum MTU.
    pub(crate) fn send_icmpv6_error<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        invoking: &Ipv6Packet<&[u8]>,
        message: Icmpv6Message,
    ) -> Result<(), TxError> {
        if is_icmpv6_error(invoking) {
            return Ok(());
        }
        let whole = &invoking.as_bytes()[..40 + usize::from(invoking.payload_len())];
        self.send_icmpv6_error_quoting(link, invoking.src(), message, whole)
    }

    /// Send an ICMPv6 error quoting `quote` (the start of the invoking packet) to `to`, from
    /// the invoking packet's destination when that is one of our unicast addresses.
    pub(crate) fn send_icmpv6_error_quoting<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        to: Ipv6Addr,
        message: Icmpv6Message,
        quote: &[u8],
    ) -> Result<(), TxError> {
        if to.is_unspecified() || to.is_multicast() {
            return Ok(());
        }
        if !self.icmp_limit.allow(self.env.now) {
            self.env.counters.bump(Counter::tx_drop_icmp_rate_limited);
            return Ok(());
        }
        let repr = Icmpv6Repr { message, data: &quote[..quote.len().min(MAX_QUOTE)] };
        let invoking_dst = (quote.len() >= 40).then(|| Ipv6Packet::new_unchecked(&quote[..40]).dst());
        let from = invoking_dst.filter(|d| !d.is_multicast() && self.v6.is_own(*d));
        if self.v6.send_icmp(&mut self.env, &mut self.eg, link, from, to, &repr)? {
            self.env.counters.bump(Counter::icmpv6_errors_sent);
        }
        Ok(())
    }
}

/// True if the packet carries an ICMPv6 error message (or is too short to tell), which must
/// not be answered with another error.
fn is_icmpv6_error(ip: &Ipv6Packet<&[u8]>) -> bool {
    match wire::ipv6_ext::walk(ip.next_header(), ip.payload(), &ChainLimits::default()) {
        Ok(c) if c.upper == next_header::ICMPV6 => ip.payload().get(c.upper_offset).is_none_or(|t| *t < 128),
        Ok(_) => false,
        Err(_) => false,
    }
}

/// The drop counter of a refused extension-header chain.
fn chain_drop_reason(e: &ChainError) -> Counter {
    match e {
        ChainError::Truncated => Counter::rx_drop_ipv6_ext_truncated,
        ChainError::TooLong => Counter::rx_drop_ipv6_ext_too_long,
        ChainError::MisplacedHopByHop { .. } => Counter::rx_drop_ipv6_ext_misplaced_hop_by_hop,
        ChainError::BadOption { .. } => Counter::rx_drop_ipv6_ext_bad_option,
        ChainError::UnknownOption { .. } => Counter::rx_drop_ipv6_ext_unknown_option,
        ChainError::Routing { .. } => Counter::rx_drop_ipv6_ext_routing_header,
        ChainError::IncompleteFirstFragment => Counter::rx_drop_ipv6_ext_incomplete_first_fragment,
    }
}

/// The drop counter of an invalid Neighbor Discovery message.
fn ndp_drop_reason(e: NdpError) -> Counter {
    match e {
        NdpError::HopLimit => Counter::rx_drop_ndp_hop_limit,
        NdpError::BadSource => Counter::rx_drop_ndp_bad_source,
        NdpError::MulticastTarget => Counter::rx_drop_ndp_multicast_target,
        NdpError::BadOption => Counter::rx_drop_ndp_bad_option,
        NdpError::NotNdp | NdpError::Truncated | NdpError::Code => Counter::rx_drop_ndp_invalid,
    }
}
