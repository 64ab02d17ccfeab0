//! The interface core: receive dispatch (Ethernet -> ARP / IPv4 -> ICMP / UDP / raw); it
//! sends through its [`Egress`], lending it the [`Env`] (clock, configuration, counters).

use crate::counters::{arp_drop_reason, ipv4_drop_reason, Counter};
use crate::egress::Egress;
use crate::env::Env;
use crate::error::TxError;
use crate::ipv6::Ipv6Host;
use crate::ping::PingClient;
use crate::rate_limit::RateLimit;
use crate::raw::RawTable;
use crate::reasm::{Expired, FragVerdict, Reassembler};
use crate::tcp::engine::TcpEngine;
use crate::tcp::lookup::FourTuple;
use crate::tcp::sink::LinkSink;
use crate::udp::{Delivery, UdpTable};
use crate::Config;
use link::Link;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use wire::ethernet::ethertype;
use wire::icmp::unreach_code;
use wire::ipv4::protocol;
use wire::ipv4_options;
use wire::{
    ArpOp, ArpRepr, EthernetFrame, IcmpMessage, IcmpRepr, Icmpv6Message, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr,
};

/// The largest UDP payload received over either family (IPv6 has no header inside its
/// 65,535-byte payload length).
pub(crate) const MAX_UDP_PAYLOAD_ANY: usize = 65535 - UdpRepr::HEADER_LEN;

/// Largest ICMP error message, as RFC 1812 suggests (576 bytes of IP).
const ICMP_ERROR_MAX_QUOTE: usize = 576 - 20 - 8;

/// Everything of a stack except its link and receive batch.
#[derive(Debug)]
pub(crate) struct Core {
    /// The clock, configuration and counters both paths share.
    pub env: Env,
    /// The transmit path.
    pub eg: Egress,
    pub udp: UdpTable,
    pub raw: RawTable,
    pub ping: PingClient,
    pub tcp: TcpEngine,
    pub reasm: Reassembler,
    pub reasm6: Reassembler,
    rx_drops: u64,
    pub(crate) icmp_limit: RateLimit,
    pub(crate) v6: Ipv6Host,
    expired: Vec<Expired>,
}

impl Core {
    pub fn new(cfg: Config) -> Core {
        let seed = u32::from(cfg.ip);
        Core {
            udp: UdpTable::new(
                cfg.ephemeral_first,
                cfg.udp_max_sockets,
                cfg.socket_rx_queue,
                cfg.socket_rx_bytes,
                MAX_UDP_PAYLOAD_ANY,
            ),
            reasm: Reassembler::new(cfg.reasm),
            reasm6: Reassembler::new_v6(cfg.reasm),
            expired: Vec::new(),
            raw: RawTable::new(cfg.socket_rx_queue, cfg.mtu),
            ping: PingClient::new((seed ^ (seed >> 16)) as u16 | 1),
            tcp: TcpEngine::new(cfg.tcp.clone(), cfg.ip, cfg.mtu, cfg.ephemeral_first),
            rx_drops: 0,
            icmp_limit: RateLimit::new(cfg.icmp_error_rate),
            v6: Ipv6Host::new(&cfg.ipv6, cfg.mac, cfg.mtu),
            eg: Egress::new(&cfg),
            env: Env::new(cfg),
        }
    }

    /// Process one received frame. Every frame ends in exactly one verdict: `rx_delivered`
    /// or one `rx_drop_*` counter of the receive path. Nothing in the frame can make this fail:
    /// a reply that cannot be sent is a counted drop. Only a failure of the link itself is
    /// returned (the frame is then counted as `rx_drop_reply_failed`).
    pub fn handle_frame<L: Link + ?Sized>(&mut self, link: &mut L, frame: &[u8]) -> Result<(), link::LinkError> {
        self.env.counters.bump(Counter::rx_frames);
        self.env.counters.add(Counter::rx_bytes, frame.len() as u64);
        let drops_before = self.rx_drops;
        let result = self.dispatch_frame(link, frame);
        let dropped = self.rx_drops != drops_before;
        match result {
            Ok(()) if !dropped => self.env.counters.bump(Counter::rx_delivered),
            Ok(()) => {}
            Err(e) => {
                if !dropped {
                    let reason = match e {
                        TxError::NoRoute(_) => Counter::rx_drop_ipv4_no_route,
                        _ => Counter::rx_drop_reply_failed,
                    };
                    let _ = self.drop(reason);
                }
                if let TxError::Link(e) = e {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Reassembly timers: give up late datagrams (ICMP time exceeded to their sources). Only a
    /// link failure is returned: a time-exceeded message that cannot be routed is not sent.
    pub fn on_reasm_timers<L: Link + ?Sized>(&mut self, link: &mut L) -> Result<(), link::LinkError> {
        if self.reasm.datagrams() == 0 && self.reasm6.datagrams() == 0 {
            return Ok(());
        }
        let mut expired = std::mem::take(&mut self.expired);
        self.reasm.expire(self.env.now, &mut expired);
        self.reasm6.expire(self.env.now, &mut expired);
        self.take_reasm_outcomes();
        let mut result = Ok(());
        for e in expired.drain(..) {
            if result.is_err() {
                break;
            }
            let sent = match e.src {
                IpAddr::V4(src) if self.replies_routable(src) => {
                    let repr = IcmpRepr { message: IcmpMessage::TimeExceeded { code: 1 }, data: &e.quote };
                    self.send_icmp_error_repr(link, src, &repr).map(|_| ())
                }
                IpAddr::V4(_) => Ok(()),
                IpAddr::V6(src) => {
                    self.send_icmpv6_error_quoting(link, src, Icmpv6Message::TimeExceeded { code: 1 }, &e.quote)
                }
            };
            if let Err(TxError::Link(e)) = sent {
                result = Err(e);
            }
        }
        self.expired = expired;
        result
    }

    /// Move reassembly's per-datagram outcomes into the counters.
    pub(crate) fn take_reasm_outcomes(&mut self) {
        let c = &mut self.env.counters;
        let families = [
            (
                &mut self.reasm,
                [
                    Counter::ipv4_reasm_started,
                    Counter::ipv4_reasm_overlap,
                    Counter::ipv4_reasm_evicted,
                    Counter::ipv4_reasm_timeout,
                ],
            ),
            (
                &mut self.reasm6,
                [
                    Counter::ipv6_reasm_started,
                    Counter::ipv6_reasm_overlap,
                    Counter::ipv6_reasm_evicted,
                    Counter::ipv6_reasm_timeout,
                ],
            ),
        ];
        for (r, [started, overlap, evicted, timeout]) in families {
            c.add(started, std::mem::take(&mut r.started));
            c.add(overlap, std::mem::take(&mut r.overlapped));
            c.add(evicted, std::mem::take(&mut r.evicted));
            c.add(timeout, std::mem::take(&mut r.timed_out));
        }
    }

    /// True if something can be sent back to `src` (on our link, or through the gateway).
    fn replies_routable(&self, src: Ipv4Addr) -> bool {
        self.env.cfg.on_link(src) || self.env.cfg.gateway.is_some()
    }

    fn dispatch_frame<L: Link + ?Sized>(&mut self, link: &mut L, frame: &[u8]) -> Result<(), TxError> {
        let eth = match EthernetFrame::new_checked(frame) {
            Ok(e) => e,
            Err(_) => return self.drop(Counter::rx_drop_eth_truncated),
        };
        let dst = eth.dst();
        if dst != self.env.cfg.mac && !dst.is_broadcast() && !self.v6.wants_mac(dst) {
            return self.drop(Counter::rx_drop_eth_not_for_us);
        }
        let src = eth.src();
        if !src.is_unicast() {
            return self.drop(Counter::rx_drop_eth_bad_src);
        }
        if eth.vlan().is_some() {
            return self.drop(Counter::rx_drop_eth_unknown_ethertype);
        }
        match eth.ethertype() {
            ethertype::ARP => self.handle_arp(link, eth.payload()),
            ethertype::IPV4 => self.handle_ipv4(link, eth.payload()),
            ethertype::IPV6 if self.v6.is_on() => self.handle_ipv6(link, src, eth.payload()),
            et => match self.raw.queue_mut(et) {
                Some(q) => {
                    if q.push(src, eth.payload()) {
                        self.env.counters.bump(Counter::raw_rx_frames);
                        Ok(())
                    } else {
                        self.drop(Counter::rx_drop_raw_rx_queue_full)
                    }
                }
                None => self.drop(Counter::rx_drop_eth_unknown_ethertype),
            },
        }
    }

    /// Count a received frame as dropped for `reason` (exactly one reason per frame).
    #[inline]
    pub(crate) fn drop(&mut self, reason: Counter) -> Result<(), TxError> {
        self.env.counters.bump(reason);
        self.rx_drops += 1;
        Ok(())
    }

    fn handle_arp<L: Link + ?Sized>(&mut self, link: &mut L, payload: &[u8]) -> Result<(), TxError> {
        let arp = match ArpRepr::parse(payload) {
            Ok(a) => a,
            Err(e) => return self.drop(arp_drop_reason(e)),
        };
        if !matches!(arp.op, ArpOp::Request | ArpOp::Reply) {
            return self.drop(Counter::rx_drop_arp_bad_op);
        }
        if !arp.sender_mac.is_unicast() {
            return self.drop(Counter::rx_drop_eth_bad_src);
        }
        if arp.sender_ip == self.env.cfg.ip {
            return self.drop(Counter::rx_drop_arp_conflict);
        }
        let for_us = arp.target_ip == self.env.cfg.ip;
        let known = self.eg.arp.contains(arp.sender_ip);
        let learn = !arp.sender_ip.is_unspecified() && (for_us || known);
        if learn {
            self.eg.arp.insert(arp.sender_ip, arp.sender_mac, self.env.now);
            self.env.counters.bump(Counter::arp_learned);
            self.eg.release_pending(&mut self.env, link, arp.sender_ip, arp.sender_mac)?;
        }
        if !for_us {
            return if learn { Ok(()) } else { self.drop(Counter::rx_drop_arp_not_for_us) };
        }
        if arp.op == ArpOp::Request {
            let reply = ArpRepr {
                op: ArpOp::Reply,
                sender_mac: self.env.cfg.mac,
                sender_ip: self.env.cfg.ip,
                target_mac: arp.sender_mac,
                target_ip: arp.sender_ip,
            };
            if self.eg.send_arp(&mut self.env, link, arp.sender_mac, reply)? {
                self.env.counters.bump(Counter::arp_replies_sent);
            }
        }
        Ok(())
    }

    fn handle_ipv4<L: Link + ?Sized>(&mut self, link: &mut L, payload: &[u8]) -> Result<(), TxError> {
        let ip = match Ipv4Packet::new_checked(payload) {
            Ok(p) => p,
            Err(e) => return self.drop(ipv4_drop_reason(e)),
        };
        if !ip.verify_checksum() {
            return self.drop(Counter::rx_drop_ipv4_bad_checksum);
        }
        let (src, dst) = (ip.src(), ip.dst());
        let broadcast = self.env.cfg.is_broadcast(dst);
        if dst != self.env.cfg.ip && !broadcast {
            return self.drop(if is_martian_dst(dst) {
                Counter::rx_drop_ipv4_martian_dst
            } else {
                Counter::rx_drop_ipv4_not_for_us
            });
        }
        if is_martian_src(src) || src == self.env.cfg.ip || self.env.cfg.is_broadcast(src) {
            return self.drop(Counter::rx_drop_ipv4_martian_src);
        }
        if !self.replies_routable(src) {
            return self.drop(Counter::rx_drop_ipv4_no_route);
        }
        if ip.header_len() > Ipv4Repr::HEADER_LEN {
            match ipv4_options::check(ip.options()) {
                Err(bad) => {
                    self.drop(Counter::rx_drop_ipv4_bad_options)?;
                    if !broadcast && may_answer_with_error(&ip) {
                        let pointer = (Ipv4Repr::HEADER_LEN + bad.offset) as u8;
                        let total = usize::from(ip.total_len());
                        let quote = &ip.as_bytes()[..total.min(ICMP_ERROR_MAX_QUOTE)];
                        let repr =
                            IcmpRepr { message: IcmpMessage::ParameterProblem { code: 0, pointer }, data: quote };
                        if self.send_icmp_error_repr(link, src, &repr)? {
                            self.env.counters.bump(Counter::icmp_param_problems_sent);
                        }
                    }
                    return Ok(());
                }
                Ok(o) if o.source_route.is_some() => return self.drop(Counter::rx_drop_ipv4_source_route),
                Ok(_) => {}
            }
        }
        if ip.is_fragment() {
            let verdict = self.reasm.insert(&ip, self.env.now);
            self.take_reasm_outcomes();
            return match verdict {
                FragVerdict::Queued => {
                    self.env.counters.bump(Counter::ipv4_frags_queued);
                    Ok(())
                }
                FragVerdict::Dropped(reason) => self.drop(reason),
                FragVerdict::Complete => {
                    self.env.counters.bump(Counter::ipv4_reassembled);
                    let whole = self.reasm.take_complete();
                    let result = match Ipv4Packet::new_checked(&whole[..]) {
                        Ok(p) => self.handle_datagram(link, &p, broadcast),
                        Err(e) => self.drop(ipv4_drop_reason(e)),
                    };
                    self.reasm.give_back(whole);
                    result
                }
            };
        }
        self.handle_datagram(link, &ip, broadcast)
    }

    /// A TCP segment (`l4`) from `src` to `dst`, of either family, for the engine. The segment
    /// is processed whole whatever the link did; a transmit error surfaces after it.
    pub(crate) fn handle_tcp<L: Link + ?Sized, A: crate::tcp::SegAddr>(
        &mut self,
        link: &mut L,
        src: A,
        dst: A,
        l4: &[u8],
    ) -> Result<(), TxError> {
        let mut out = LinkSink::new(&mut self.env, &mut self.eg, &mut self.v6, link);
        let verdict = self.tcp.on_segment(&mut out, src, dst, l4);
        let sent = out.finish();
        if let Err(reason) = verdict {
            self.drop(reason)?;
        }
        sent
    }

    /// A whole IPv4 datagram for us (received whole or reassembled): its transport.
    fn handle_datagram<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        ip: &Ipv4Packet<&[u8]>,
        broadcast: bool,
    ) -> Result<(), TxError> {
        let (src, dst) = (ip.src(), ip.dst());
        let payload = &ip.as_bytes()[..usize::from(ip.total_len())];
        let l4 = ip.payload();
        match ip.protocol() {
            protocol::ICMP => self.handle_icmp(link, src, broadcast, ip.ttl(), ip.options(), l4),
            protocol::UDP => self.handle_udp(link, src, dst, broadcast, payload, l4),
            protocol::TCP if broadcast => self.drop(Counter::rx_drop_tcp_broadcast),
            protocol::TCP => self.handle_tcp(link, src, dst, l4),
            _ => {
                self.drop(Counter::rx_drop_ipv4_unknown_protocol)?;
                if !broadcast {
                    self.send_icmp_error(link, src, unreach_code::PROTOCOL, payload)?;
                }
                Ok(())
            }
        }
    }

    fn handle_icmp<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        src: Ipv4Addr,
        broadcast: bool,
        ttl: u8,
        ip_options: &[u8],
        l4: &[u8],
    ) -> Result<(), TxError> {
        let icmp = match IcmpRepr::parse(l4) {
            Ok(i) => i,
            Err(wire::WireError::BadChecksum) => return self.drop(Counter::rx_drop_icmp_bad_checksum),
            Err(_) => return self.drop(Counter::rx_drop_icmp_truncated),
        };
        match icmp.message {
            IcmpMessage::EchoRequest { ident, seq } => {
                if broadcast {
                    return self.drop(Counter::rx_drop_icmp_broadcast_echo);
                }
                let reply = IcmpRepr { message: IcmpMessage::EchoReply { ident, seq }, data: icmp.data };
                let mut options = [0u8; 40];
                let n = echo_reply_options(ip_options, self.env.cfg.ip, &mut options);
                if self.eg.send_icmp_with_options(&mut self.env, link, src, &reply, &options[..n])? {
                    self.env.counters.bump(Counter::icmp_echo_replied);
                }
                Ok(())
            }
            IcmpMessage::EchoReply { ident, seq } => {
                if self.ping.on_reply(src.into(), ident, seq, ttl, icmp.data, self.env.now) {
                    self.env.counters.bump(Counter::icmp_echo_reply_received);
                    Ok(())
                } else {
                    self.drop(Counter::rx_drop_icmp_unmatched_reply)
                }
            }
            IcmpMessage::DestUnreachable { code: unreach_code::FRAG_NEEDED, next_hop_mtu } => {
                self.env.counters.bump(Counter::icmp_errors_received);
                self.on_frag_needed(link, next_hop_mtu, icmp.data)?;
                Ok(())
            }
            IcmpMessage::DestUnreachable { .. }
            | IcmpMessage::TimeExceeded { .. }
            | IcmpMessage::ParameterProblem { .. } => {
                self.env.counters.bump(Counter::icmp_errors_received);
                self.note_icmp_error(icmp.data);
                Ok(())
            }
            IcmpMessage::Other { .. } => self.drop(Counter::rx_drop_icmp_unhandled_type),
        }
    }

    /// ICMP "fragmentation needed" about a packet of ours (RFC 1191): lower the path MTU
    /// towards its destination; a TCP connection it names shrinks its MSS and resends.
    fn on_frag_needed<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        next_hop_mtu: u16,
        quoted: &[u8],
    ) -> Result<(), TxError> {
        let Some((ip, l4)) = quoted_ipv4(quoted) else { return Ok(()) };
        if ip.src() != self.env.cfg.ip {
            return Ok(());
        }
        let sent_len = usize::from(ip.total_len());
        let mtu = if next_hop_mtu >= 68 { usize::from(next_hop_mtu) } else { pmtu_plateau_below(sent_len) };
        if mtu >= sent_len {
            return Ok(());
        }
        if ip.protocol() == protocol::TCP && l4.len() >= 8 {
            let (sport, dport) = (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]));
            let seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
            let tuple = FourTuple::new(ip.src().into(), sport, SocketAddr::new(ip.dst().into(), dport));
            // RFC 5927: only a message that quotes a segment in flight may change anything.
            if !self.tcp.quotes_flight(&tuple, seq) {
                return Ok(());
            }
            if let Some(mtu) = self.eg.lower_path_mtu(&mut self.env, ip.dst(), mtu) {
                let mut out = LinkSink::new(&mut self.env, &mut self.eg, &mut self.v6, link);
                self.tcp.on_path_mtu(&mut out, &tuple, mtu);
                out.finish()?;
            }
            return Ok(());
        }
        self.eg.lower_path_mtu(&mut self.env, ip.dst(), mtu);
        Ok(())
    }

    /// Charge an ICMP error to the UDP socket whose datagram it quotes.
    fn note_icmp_error(&mut self, quoted: &[u8]) {
        let Some((ip, q)) = quoted_ipv4(quoted) else { return };
        if ip.protocol() != protocol::UDP || ip.src() != self.env.cfg.ip {
            return;
        }
        if q.len() >= 2 {
            let port = u16::from_be_bytes([q[0], q[1]]);
            if let Some(s) = self.udp.by_port_mut(port) {
                s.icmp_errors += 1;
            }
        }
    }

    fn handle_udp<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        broadcast: bool,
        ip_packet: &[u8],
        l4: &[u8],
    ) -> Result<(), TxError> {
        let udp = match UdpPacket::new_checked(l4) {
            Ok(u) => u,
            Err(_) => return self.drop(Counter::rx_drop_udp_truncated),
        };
        if self.env.cfg.verify_udp_checksum && !udp.verify_checksum(src, dst) {
            return self.drop(Counter::rx_drop_udp_bad_checksum);
        }
        let from = SocketAddr::V4(SocketAddrV4::new(src, udp.src_port()));
        match self.udp.deliver(udp.dst_port(), from, udp.payload(), &mut self.tcp.shared.mem) {
            Delivery::Queued => {
                self.env.counters.bump(Counter::udp_rx_datagrams);
                Ok(())
            }
            Delivery::Dropped(reason) => self.drop(reason),
            Delivery::NoSocket => {
                self.drop(Counter::rx_drop_udp_no_socket)?;
                if !broadcast {
                    self.send_icmp_error(link, src, unreach_code::PORT, ip_packet)?;
                }
                Ok(())
            }
        }
    }

    /// Send ICMP destination unreachable with `code` about `offending` (an IPv4 packet).
    fn send_icmp_error<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        to: Ipv4Addr,
        code: u8,
        offending: &[u8],
    ) -> Result<(), TxError> {
        let quote = &offending[..offending.len().min(ICMP_ERROR_MAX_QUOTE)];
        let repr = IcmpRepr { message: IcmpMessage::DestUnreachable { code, next_hop_mtu: 0 }, data: quote };
        if self.send_icmp_error_repr(link, to, &repr)? {
            self.env.counters.bump(Counter::icmp_unreachable_sent);
        }
        Ok(())
    }

    /// Send an ICMP error message, within the rate limit. Returns true if it was sent.
    fn send_icmp_error_repr<L: Link + ?Sized>(
        &mut self,
        link: &mut L,
        to: Ipv4Addr,
        repr: &IcmpRepr<'_>,
    ) -> Result<bool, TxError> {
        if !self.icmp_limit.allow(self.env.now) {
            self.env.counters.bump(Counter::tx_drop_icmp_rate_limited);
            return Ok(false);
        }
        self.eg.send_icmp(&mut self.env, link, to, repr)
    }
}

/// The IPv4 options of an echo reply, from the request's (RFC 1122 3.2.2.6): record route
/// comes back with our address added where there is room, timestamp as it came; other
/// options are not returned. Writes them (padded to 4 bytes) into `out`; returns the length.
fn echo_reply_options(request: &[u8], ours: Ipv4Addr, out: &mut [u8; 40]) -> usize {
    const EOL: u8 = 0;
    const NOP: u8 = 1;
    const RECORD_ROUTE: u8 = 7;
    const TIMESTAMP: u8 = 68;
    let mut n = 0;
    let mut i = 0;
    while i < request.len() {
        match request[i] {
            EOL => break,
            NOP => i += 1,
            kind => {
                let Some(&len) = request.get(i + 1) else { break };
                let len = len as usize;
                if len < 2 || i + len > request.len() {
                    break;
                }
                if (kind == RECORD_ROUTE || kind == TIMESTAMP) && n + len <= out.len() && len >= 3 {
                    let opt = &mut out[n..n + len];
                    opt.copy_from_slice(&request[i..i + len]);
                    let ptr = opt[2] as usize;
                    if kind == RECORD_ROUTE && ptr >= 4 && ptr + 3 <= len {
                        opt[ptr - 1..ptr + 3].copy_from_slice(&ours.octets());
                        opt[2] += 4;
                    }
                    n += len;
                }
                i += len;
            }
        }
    }
    let padded = n.div_ceil(4) * 4;
    out[n..padded].fill(EOL);
    padded
}

/// True if an ICMP error may be sent about `ip` (RFC 1122 3.2.2): not about a fragment other
/// than the first, nor about an ICMP error message (or one too short to tell).
fn may_answer_with_error<T: AsRef<[u8]>>(ip: &Ipv4Packet<T>) -> bool {
    if ip.frag_offset() != 0 {
        return false;
    }
    if ip.protocol() != protocol::ICMP {
        return true;
    }
    use wire::icmp::icmp_type as t;
    match ip.payload().first() {
        Some(&ty) => !matches!(ty, t::DEST_UNREACHABLE | 4 | 5 | t::TIME_EXCEEDED | t::PARAMETER_PROBLEM),
        None => false,
    }
}

/// The IPv4 header and the transport bytes that follow it in an ICMP error's quote (which
/// is usually cut short of the packet's total length).
fn quoted_ipv4(quoted: &[u8]) -> Option<(Ipv4Packet<&[u8]>, &[u8])> {
    if quoted.len() < 20 || quoted[0] >> 4 != 4 {
        return None;
    }
    let hl = usize::from(quoted[0] & 0xf) * 4;
    if hl < 20 || hl > quoted.len() {
        return None;
    }
    Some((Ipv4Packet::new_unchecked(&quoted[..hl]), &quoted[hl..]))
}

/// RFC 1191 section 7: without a next-hop MTU, the next plateau below the packet's size.
fn pmtu_plateau_below(len: usize) -> usize {
    const PLATEAUS: [usize; 10] = [32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68];
    PLATEAUS.into_iter().find(|&p| p < len).unwrap_or(68)
}

/// Sources that can never send (RFC 1122 3.2.1.3, RFC 1812 5.3.7): "this network"
/// (0.0.0.0/8), loopback, multicast, class E and the limited broadcast.
pub(crate) fn is_martian_src(a: Ipv4Addr) -> bool {
    let first = a.octets()[0];
    first == 0 || first == 127 || a.is_multicast() || first >= 240
}

/// Destinations that never appear on a link: 0.0.0.0/8, loopback, class E (the limited
/// broadcast 255.255.255.255 excepted).
pub(crate) fn is_martian_dst(a: Ipv4Addr) -> bool {
    let first = a.octets()[0];
    (first == 0 || first == 127 || first >= 240) && !a.is_broadcast()
}
