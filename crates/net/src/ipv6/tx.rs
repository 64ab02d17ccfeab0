//! The IPv6 transmit path: source selection, next-hop resolution through the neighbour
//! cache (packets wait in a bounded queue meanwhile), fragmentation above the path MTU, and
//! the Neighbor Discovery messages the host sends itself.

use super::neighbor::NdAction;
use super::{multicast_mac, AddrState, Ipv6Host, PendingV6, ALL_NODES};
use crate::counters::Counter;
use crate::egress::Egress;
use crate::env::Env;
use crate::error::TxError;
use link::{Link, LinkError};
use std::net::{Ipv6Addr, SocketAddrV6};
use wire::ethernet::ethertype;
use wire::ipv6::next_header;
use wire::{EthernetRepr, FragmentHeader, Icmpv6Repr, Ipv6AddrKind, Ipv6Repr, MacAddr, NdpMessage, NdpOption, UdpRepr};

/// Hop limit of Neighbor Discovery messages (RFC 4861: always 255).
const ND_HOP_LIMIT: u8 = 255;

/// One IPv6 packet to send: its addresses, upper layer and hop limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packet6 {
    /// Source address, or `None` to pick one for the destination.
    pub src: Option<Ipv6Addr>,
    /// Destination.
    pub dst: Ipv6Addr,
    /// The upper-layer protocol.
    pub next_header: u8,
    /// Hop limit, or `None` for the configured one.
    pub hop_limit: Option<u8>,
    /// Length of the upper-layer part.
    pub l4_len: usize,
}

impl Ipv6Host {
    /// Send an IPv6 packet whose upper-layer part `fill` writes (given the source and
    /// destination, for its checksum). Returns Ok(false) if it was not sent: the link stayed
    /// full, or there is no source address or route (counted `tx_drop_ipv6_no_route`).
    /// Packets larger than the path MTU go out in fragments.
    pub fn send<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        p: Packet6,
        fill: impl FnOnce(&mut [u8], Ipv6Addr, Ipv6Addr),
    ) -> Result<bool, TxError> {
        let now = env.now;
        let Some(src) = p.src.or_else(|| self.source_for(p.dst)) else {
            env.counters.bump(Counter::tx_drop_ipv6_no_route);
            return Ok(false);
        };
        let hop = if p.dst.is_multicast() {
            Ok(multicast_mac(p.dst))
        } else {
            let Some(next) = self.next_hop(p.dst, now) else {
                env.counters.bump(Counter::tx_drop_ipv6_no_route);
                return Ok(false);
            };
            self.neighbors.lookup_for_send(next, now, &self.cfg.ndp).ok_or(next)
        };
        let hop_limit = p.hop_limit.unwrap_or(self.cfg.hop_limit);
        let mtu = self.path_mtu(p.dst, now);
        if Ipv6Repr::HEADER_LEN + p.l4_len > mtu {
            return self.send_fragmented(env, eg, link, src, p, hop_limit, mtu, hop, fill);
        }
        let ip = Ipv6Repr {
            src,
            dst: p.dst,
            next_header: p.next_header,
            payload_len: p.l4_len,
            hop_limit,
            traffic_class: 0,
            flow_label: 0,
        };
        let src_mac = self.mac;
        let l4_len = p.l4_len;
        let build = move |buf: &mut [u8], dst_mac: MacAddr| -> usize {
            let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV6, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            let Ok(ih) = ip.emit(&mut buf[eh..]) else { return 0 };
            let start = eh + ih;
            fill(&mut buf[start..start + l4_len], ip.src, ip.dst);
            start + l4_len
        };
        self.emit_or_wait(env, eg, link, hop, build)
    }

    /// Send the packet in fragments of at most `mtu` bytes (RFC 8200 section 4.5).
    #[allow(clippy::too_many_arguments)]
    fn send_fragmented<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        src: Ipv6Addr,
        p: Packet6,
        hop_limit: u8,
        mtu: usize,
        hop: Result<MacAddr, Ipv6Addr>,
        fill: impl FnOnce(&mut [u8], Ipv6Addr, Ipv6Addr),
    ) -> Result<bool, TxError> {
        let max = usize::from(u16::MAX) - FragmentHeader::LEN;
        if p.l4_len > max {
            env.counters.bump(Counter::tx_drop_too_big);
            return Err(TxError::TooLarge { len: p.l4_len, max });
        }
        let per = (mtu - Ipv6Repr::HEADER_LEN - FragmentHeader::LEN) & !7;
        let count = p.l4_len.div_ceil(per);
        if hop.is_ok() && eg.tx.capacity() - eg.tx.len() < count {
            eg.flush(env, link)?;
            if eg.tx.capacity() - eg.tx.len() < count && eg.tx.capacity() >= count {
                return Ok(false);
            }
        }
        let mut whole = std::mem::take(&mut self.frag_scratch);
        whole.clear();
        whole.resize(p.l4_len, 0);
        fill(&mut whole, src, p.dst);
        self.frag_ident = self.frag_ident.wrapping_add(1);
        let ident = self.frag_ident;
        let src_mac = self.mac;
        let mut result = Ok(true);
        for (i, piece) in whole.chunks(per).enumerate() {
            let offset = i * per;
            let frag = FragmentHeader {
                offset,
                more: offset + piece.len() < p.l4_len,
                ident,
                next_header: p.next_header,
                header_offset: 0,
            };
            let ip = Ipv6Repr {
                src,
                dst: p.dst,
                next_header: next_header::FRAGMENT,
                payload_len: FragmentHeader::LEN + piece.len(),
                hop_limit,
                traffic_class: 0,
                flow_label: 0,
            };
            let build = |buf: &mut [u8], dst_mac: MacAddr| -> usize {
                let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV6, vlan: None };
                let Ok(eh) = eth.emit(buf) else { return 0 };
                let Ok(ih) = ip.emit(&mut buf[eh..]) else { return 0 };
                let Ok(fh) = frag.emit(&mut buf[eh + ih..]) else { return 0 };
                let start = eh + ih + fh;
                buf[start..start + piece.len()].copy_from_slice(piece);
                start + piece.len()
            };
            match self.emit_or_wait(env, eg, link, hop, build) {
                Ok(true) => env.counters.bump(Counter::ipv6_frags_sent),
                Ok(false) => {
                    env.counters.bump(Counter::tx_drop_link_full);
                    result = Ok(false);
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.frag_scratch = whole;
        if matches!(result, Ok(true)) {
            env.counters.bump(Counter::ipv6_fragmented_sent);
        }
        result
    }

    /// Send a frame to a resolved MAC, or park it until `hop` is resolved (starting the
    /// resolution). Ok(false) if the link is full.
    fn emit_or_wait<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        hop: Result<MacAddr, Ipv6Addr>,
        build: impl FnOnce(&mut [u8], MacAddr) -> usize,
    ) -> Result<bool, TxError> {
        match hop {
            Ok(mac) => Ok(eg.emit_frame(env, link, |buf| build(buf, mac))?),
            Err(next_hop) => {
                let reserve = self.mtu + 18;
                let queued =
                    self.pending.push_with(PendingV6 { next_hop }, reserve, |buf| Some(build(buf, MacAddr::ZERO)));
                if !queued {
                    env.counters.bump(Counter::tx_drop_ndp_pending_full);
                } else if self.neighbors.start(next_hop, env.now, &self.cfg.ndp) {
                    self.send_solicit(env, eg, link, next_hop, None)?;
                }
                Ok(true)
            }
        }
    }

    /// Send what waited for `ip`, now resolved to `mac`.
    pub fn release_pending<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        ip: Ipv6Addr,
        mac: MacAddr,
    ) -> Result<(), LinkError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        eg.send_parked(env, link, &mut self.pending, |p| p.next_hop == ip, mac)
    }

    /// Send a Neighbor Solicitation for `target`: multicast to its solicited-node group, or
    /// unicast to `unicast` (a probe of a known neighbour). The source is our address for
    /// the target's scope, with our MAC as source link-layer address.
    pub fn send_solicit<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        target: Ipv6Addr,
        unicast: Option<MacAddr>,
    ) -> Result<(), LinkError> {
        let Some(src) = self.source_for(target).or_else(|| self.source_for(ALL_NODES)) else {
            env.counters.bump(Counter::tx_drop_ipv6_no_route);
            return Ok(());
        };
        let (dst, dst_mac) = match unicast {
            Some(mac) => (target, mac),
            None => (target.solicited_node(), multicast_mac(target.solicited_node())),
        };
        let msg = NdpMessage::NeighborSolicit { target };
        let opts = [NdpOption::SourceLinkAddr(self.mac)];
        if self.emit_nd(env, eg, link, src, dst, dst_mac, &msg, &opts)? {
            env.counters.bump(Counter::ndp_solicits_sent);
        }
        Ok(())
    }

    /// Send a Neighbor Advertisement for our address `target` to `dst` (`dst_mac`).
    #[allow(clippy::too_many_arguments)]
    pub fn send_advert<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        target: Ipv6Addr,
        dst: Ipv6Addr,
        dst_mac: MacAddr,
        solicited: bool,
    ) -> Result<(), LinkError> {
        let msg = NdpMessage::NeighborAdvert { router: false, solicited, override_: true, target };
        let opts = [NdpOption::TargetLinkAddr(self.mac)];
        if self.emit_nd(env, eg, link, target, dst, dst_mac, &msg, &opts)? {
            env.counters.bump(Counter::ndp_adverts_sent);
        }
        Ok(())
    }

    /// Build and send one Neighbor Discovery message (hop limit 255, never queued).
    #[allow(clippy::too_many_arguments)]
    fn emit_nd<L: Link + ?Sized>(
        &self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        dst_mac: MacAddr,
        msg: &NdpMessage,
        opts: &[NdpOption<'_>],
    ) -> Result<bool, LinkError> {
        let src_mac = self.mac;
        eg.emit_frame(env, link, |buf| {
            let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV6, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            let start = eh + Ipv6Repr::HEADER_LEN;
            let Ok(n) = wire::ndp::emit(msg, opts, &mut buf[start..], src, dst) else { return 0 };
            let ip = Ipv6Repr {
                src,
                dst,
                next_header: next_header::ICMPV6,
                payload_len: n,
                hop_limit: ND_HOP_LIMIT,
                traffic_class: 0,
                flow_label: 0,
            };
            match ip.emit(&mut buf[eh..]) {
                Ok(_) => start + n,
                Err(_) => 0,
            }
        })
    }

    /// Send an ICMPv6 message to `dst` from `src` (or the address picked for `dst`).
    pub fn send_icmp<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        src: Option<Ipv6Addr>,
        dst: Ipv6Addr,
        repr: &Icmpv6Repr<'_>,
    ) -> Result<bool, TxError> {
        let p = Packet6 { src, dst, next_header: next_header::ICMPV6, hop_limit: None, l4_len: repr.buffer_len() };
        self.send(env, eg, link, p, |buf, s, d| {
            let _ = repr.emit(buf, s, d);
        })
    }

    /// Our source address for a packet to `dst` if one can be sent now: IPv6 is on, a
    /// usable source address exists for it, and it is multicast, on link or behind a known
    /// router.
    pub fn route(&self, dst: Ipv6Addr, now: link::Instant) -> Option<Ipv6Addr> {
        if dst.is_unspecified() || !(dst.is_multicast() || self.next_hop(dst, now).is_some()) {
            return None;
        }
        self.source_for(dst)
    }

    /// Send a UDP datagram of `payload_len` bytes that `fill` writes in place (it returns
    /// the payload's ones-complement sum when it took it while writing), from
    /// `src:src_port` (a source [`Ipv6Host::route`] gave) to `dst`. The checksum is always computed (RFC 8200 8.1: IPv6 has no "no checksum").
    /// Above the path MTU the datagram goes out in fragments, or is refused with `TooLarge`
    /// (the UDP length that fits) when `may_fragment` is false.
    #[allow(clippy::too_many_arguments)]
    pub fn send_udp<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
        (src, src_port): (Ipv6Addr, u16),
        dst: SocketAddrV6,
        payload_len: usize,
        may_fragment: bool,
        fill: impl FnOnce(&mut [u8]) -> Option<u64>,
    ) -> Result<bool, TxError> {
        let l4_len = UdpRepr::HEADER_LEN + payload_len;
        let max = usize::from(u16::MAX);
        let mtu = self.path_mtu(*dst.ip(), env.now);
        if l4_len > max || (!may_fragment && Ipv6Repr::HEADER_LEN + l4_len > mtu) {
            env.counters.bump(Counter::tx_drop_too_big);
            let max = if may_fragment { max } else { mtu - Ipv6Repr::HEADER_LEN };
            return Err(TxError::TooLarge { len: l4_len, max });
        }
        let repr = UdpRepr { src_port, dst_port: dst.port() };
        let p = Packet6 { src: Some(src), dst: *dst.ip(), next_header: next_header::UDP, hop_limit: None, l4_len };
        let sent = self.send(env, eg, link, p, |buf, s, d| {
            let _ = match fill(&mut buf[UdpRepr::HEADER_LEN..]) {
                Some(sum) => repr.emit_summed(buf, s, d, payload_len, sum),
                None => repr.emit(buf, s, d, payload_len),
            };
        })?;
        if sent {
            env.counters.bump(Counter::udp_tx_datagrams);
        }
        Ok(sent)
    }

    /// Timers: duplicate address detection, neighbour resolution retries and give-ups.
    pub fn on_timers<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        eg: &mut Egress,
        link: &mut L,
    ) -> Result<(), LinkError> {
        let now = env.now;
        self.run_dad(env, eg, link)?;
        let mut actions = std::mem::take(&mut self.actions);
        self.neighbors.due(now, &self.cfg.ndp, &mut actions);
        let mut result = Ok(());
        for a in actions.drain(..) {
            if result.is_err() {
                break;
            }
            result = match a {
                NdAction::SolicitMulticast(ip) => self.send_solicit(env, eg, link, ip, None),
                NdAction::SolicitUnicast(ip, mac) => self.send_solicit(env, eg, link, ip, Some(mac)),
                NdAction::GiveUp(ip) => {
                    let mut dropped = 0;
                    self.pending.retain(|p, _| p.next_hop != ip, |_, _| dropped += 1);
                    env.counters.add(Counter::tx_drop_ndp_unresolved, dropped);
                    Ok(())
                }
            };
        }
        self.actions = actions;
        result
    }

    /// Duplicate address detection (RFC 4862 section 5.4): each tentative address gets
    /// `dad_transmits` solicitations from the unspecified address, one retransmission timer
    /// apart; one timer after the last, nobody having answered, it is ours and is announced
    /// with an unsolicited advertisement to all nodes.
    fn run_dad<L: Link + ?Sized>(&mut self, env: &mut Env, eg: &mut Egress, link: &mut L) -> Result<(), LinkError> {
        let now = env.now;
        let (transmits, retrans) = (self.cfg.ndp.dad_transmits, self.cfg.ndp.retrans_timer);
        for i in 0..self.addrs.len() {
            let a = self.addrs[i];
            if a.state != AddrState::Tentative || a.dad_next > now {
                continue;
            }
            if a.dad_sent < transmits {
                self.addrs[i].dad_sent += 1;
                self.addrs[i].dad_next = now + retrans;
                let target = a.cidr.addr;
                let msg = NdpMessage::NeighborSolicit { target };
                let dst = target.solicited_node();
                if self.emit_nd(env, eg, link, Ipv6Addr::UNSPECIFIED, dst, multicast_mac(dst), &msg, &[])? {
                    env.counters.bump(Counter::ndp_solicits_sent);
                }
            } else {
                self.addrs[i].state = AddrState::Preferred;
                env.counters.bump(Counter::ndp_dad_succeeded);
                self.send_advert(env, eg, link, a.cidr.addr, ALL_NODES, multicast_mac(ALL_NODES), false)?;
            }
        }
        Ok(())
    }
}
