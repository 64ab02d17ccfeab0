//! The interface core: receive dispatch (Ethernet -> ARP / IPv4 -> ICMP / UDP / raw) and the
//! transmit path (next hop, ARP resolution, header building in place in the link's batch).

use crate::arp::{ArpCache, ResolveAction, Resolver};
use crate::counters::{arp_drop_reason, ipv4_drop_reason, Counter, Counters};
use crate::ping::PingClient;
use crate::queue::PacketQueue;
use crate::raw::RawTable;
use crate::udp::{SocketAddrV4Meta, UdpTable};
use crate::{Config, NetError};
use link::{FrameBatch, Instant, Link};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::ethernet::ethertype;
use wire::icmp::unreach_code;
use wire::ipv4::protocol;
use wire::{
    ArpOp, ArpRepr, EthernetFrame, EthernetRepr, IcmpMessage, IcmpRepr, Ipv4Packet, Ipv4Repr, MacAddr, UdpPacket,
    UdpRepr,
};

/// Shortest Ethernet frame on the wire (without FCS); shorter frames are zero-padded.
const MIN_FRAME: usize = 60;
/// Largest ICMP error message, as RFC 1812 suggests (576 bytes of IP).
const ICMP_ERROR_MAX_QUOTE: usize = 576 - 20 - 8;

/// A frame waiting for its next hop's MAC address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    next_hop: Ipv4Addr,
}

impl Default for Pending {
    fn default() -> Self {
        Pending { next_hop: Ipv4Addr::UNSPECIFIED }
    }
}

/// A token bucket limiting ICMP errors per second.
#[derive(Debug)]
struct RateLimit {
    per_sec: u32,
    tokens: u32,
    refilled: Instant,
}

impl RateLimit {
    fn allow(&mut self, now: Instant) -> bool {
        if self.per_sec == 0 {
            return true;
        }
        let elapsed = now - self.refilled;
        if elapsed >= Duration::from_millis(10) {
            let add = (elapsed.as_nanos() * self.per_sec as u128 / 1_000_000_000) as u32;
            self.tokens = (self.tokens.saturating_add(add)).min(self.per_sec);
            self.refilled = now;
        }
        if self.tokens > 0 {
            self.tokens -= 1;
            true
        } else {
            false
        }
    }
}

/// Everything of a stack except its link and receive batch.
#[derive(Debug)]
pub(crate) struct Core {
    pub cfg: Config,
    pub tx: FrameBatch,
    pub arp: ArpCache,
    pub resolver: Resolver,
    pub pending: PacketQueue<Pending>,
    pub udp: UdpTable,
    pub raw: RawTable,
    pub ping: PingClient,
    pub counters: Counters,
    pub now: Instant,
    rx_drops: u64,
    ip_ident: u16,
    icmp_limit: RateLimit,
    actions: Vec<ResolveAction>,
    last_sweep: Instant,
}

impl Core {
    pub fn new(cfg: Config) -> Core {
        let max_frame = cfg.max_frame();
        let max_udp = cfg.mtu - Ipv4Repr::HEADER_LEN - UdpRepr::HEADER_LEN;
        let seed = u32::from(cfg.ip);
        Core {
            tx: FrameBatch::new(cfg.batch * 2, max_frame),
            arp: ArpCache::new(cfg.arp_cache_size, cfg.arp_ttl),
            resolver: Resolver::default(),
            pending: PacketQueue::new(cfg.arp_max_pending, max_frame),
            udp: UdpTable::new(cfg.ephemeral_first, cfg.socket_rx_queue, max_udp),
            raw: RawTable::new(cfg.socket_rx_queue, cfg.mtu),
            ping: PingClient::new((seed ^ (seed >> 16)) as u16 | 1),
            counters: Counters::default(),
            now: Instant::ZERO,
            rx_drops: 0,
            ip_ident: seed as u16,
            icmp_limit: RateLimit { per_sec: cfg.icmp_error_rate, tokens: cfg.icmp_error_rate, refilled: Instant::ZERO },
            actions: Vec::with_capacity(16),
            last_sweep: Instant::ZERO,
            cfg,
        }
    }

    // ---------------------------------------------------------------- transmit

    /// Hand the transmit batch to the link. Frames the link refuses stay queued for the next
    /// flush unless `must_drain` is set, in which case they are dropped and counted.
    pub fn flush<L: Link>(&mut self, link: &mut L, must_drain: bool) -> Result<(), NetError> {
        if self.tx.is_empty() {
            return Ok(());
        }
        let before: u64 = self.tx.iter().map(|f| f.len() as u64).sum();
        let n = link.tx_batch(self.now, &mut self.tx)?;
        let after: u64 = self.tx.iter().map(|f| f.len() as u64).sum();
        self.counters.add(Counter::tx_frames, n as u64);
        self.counters.add(Counter::tx_bytes, before - after);
        if must_drain && !self.tx.is_empty() {
            self.counters.add(Counter::drop_tx_link_full, self.tx.len() as u64);
            self.tx.clear();
        }
        Ok(())
    }

    /// Build one frame in the transmit batch, flushing first if it is full. Returns false if
    /// the link stays full (the frame is not sent).
    fn emit_frame<L: Link>(&mut self, link: &mut L, build: impl FnOnce(&mut [u8]) -> usize) -> Result<bool, NetError> {
        if self.tx.is_full() {
            self.flush(link, false)?;
            if self.tx.is_full() {
                return Ok(false);
            }
        }
        Ok(self.tx.push_with(|buf| {
            let n = build(buf);
            pad(buf, n)
        }))
    }

    /// The MAC address to send to for IPv4 destination `dst`, or the next hop to resolve.
    fn next_hop(&self, dst: Ipv4Addr) -> Result<Result<MacAddr, Ipv4Addr>, NetError> {
        if self.cfg.is_broadcast(dst) {
            return Ok(Ok(MacAddr::BROADCAST));
        }
        if dst.is_multicast() || dst.is_unspecified() || dst == self.cfg.ip {
            return Err(NetError::NoRoute(dst));
        }
        let hop = if self.cfg.on_link(dst) { dst } else { self.cfg.gateway.ok_or(NetError::NoRoute(dst))? };
        Ok(self.arp.lookup(hop, self.now).ok_or(hop))
    }

    /// Send an IPv4 packet whose transport part (`l4_len` bytes) is written by `fill_l4`.
    /// Returns Ok(false) if the link is full. Packets to unresolved next hops wait for ARP.
    pub fn send_ip<L: Link>(
        &mut self,
        link: &mut L,
        dst: Ipv4Addr,
        proto: u8,
        l4_len: usize,
        fill_l4: impl FnOnce(&mut [u8], Ipv4Addr, Ipv4Addr),
    ) -> Result<bool, NetError> {
        let max = self.cfg.mtu - Ipv4Repr::HEADER_LEN;
        if l4_len > max {
            return Err(NetError::TooLarge { len: l4_len, max });
        }
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let ip = Ipv4Repr {
            src: self.cfg.ip,
            dst,
            protocol: proto,
            payload_len: l4_len,
            ttl: self.cfg.ttl,
            ident: self.ip_ident,
            dont_frag: true,
            dscp_ecn: 0,
        };
        let src_mac = self.cfg.mac;
        let build = move |buf: &mut [u8], dst_mac: MacAddr| -> usize {
            let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV4, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            let Ok(ih) = ip.emit(&mut buf[eh..]) else { return 0 };
            let start = eh + ih;
            fill_l4(&mut buf[start..start + l4_len], ip.src, ip.dst);
            start + l4_len
        };
        match self.next_hop(dst)? {
            Ok(mac) => self.emit_frame(link, |buf| build(buf, mac)),
            Err(hop) => {
                let queued = self.pending.push_with(Pending { next_hop: hop }, |buf| Some(build(buf, MacAddr::ZERO)));
                if !queued {
                    self.counters.bump(Counter::drop_arp_pending_full);
                } else if self.resolver.start(hop, self.now, self.cfg.arp_retry) {
                    self.send_arp_request(link, hop)?;
                }
                Ok(true)
            }
        }
    }

    /// Send a UDP datagram.
    pub fn send_udp<L: Link>(
        &mut self,
        link: &mut L,
        src_port: u16,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> Result<bool, NetError> {
        let len = UdpRepr::HEADER_LEN + payload.len();
        let repr = UdpRepr { src_port, dst_port: dst.port() };
        let sent = self.send_ip(link, *dst.ip(), protocol::UDP, len, |buf, s, d| {
            buf[UdpRepr::HEADER_LEN..].copy_from_slice(payload);
            let _ = repr.emit(buf, s, d, payload.len());
        })?;
        if sent {
            self.counters.bump(Counter::udp_tx_datagrams);
        }
        Ok(sent)
    }

    /// Send an ICMP message.
    pub fn send_icmp<L: Link>(&mut self, link: &mut L, dst: Ipv4Addr, repr: &IcmpRepr<'_>) -> Result<bool, NetError> {
        self.send_ip(link, dst, protocol::ICMP, repr.buffer_len(), |buf, _, _| {
            let _ = repr.emit(buf);
        })
    }

    /// Send a raw Ethernet frame with our source MAC.
    pub fn send_raw<L: Link>(&mut self, link: &mut L, et: u16, dst: MacAddr, payload: &[u8]) -> Result<bool, NetError> {
        if payload.len() > self.cfg.mtu {
            return Err(NetError::TooLarge { len: payload.len(), max: self.cfg.mtu });
        }
        let src = self.cfg.mac;
        let sent = self.emit_frame(link, |buf| {
            let eth = EthernetRepr { src, dst, ethertype: et, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            buf[eh..eh + payload.len()].copy_from_slice(payload);
            eh + payload.len()
        })?;
        if sent {
            self.counters.bump(Counter::raw_tx_frames);
        }
        Ok(sent)
    }

    fn send_arp<L: Link>(&mut self, link: &mut L, dst_mac: MacAddr, arp: ArpRepr) -> Result<bool, NetError> {
        let src = self.cfg.mac;
        self.emit_frame(link, |buf| {
            let eth = EthernetRepr { src, dst: dst_mac, ethertype: ethertype::ARP, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            match arp.emit(&mut buf[eh..]) {
                Ok(n) => eh + n,
                Err(_) => 0,
            }
        })
    }

    /// Broadcast an ARP request for `ip`.
    pub fn send_arp_request<L: Link>(&mut self, link: &mut L, ip: Ipv4Addr) -> Result<(), NetError> {
        let arp = ArpRepr {
            op: ArpOp::Request,
            sender_mac: self.cfg.mac,
            sender_ip: self.cfg.ip,
            target_mac: MacAddr::ZERO,
            target_ip: ip,
        };
        if self.send_arp(link, MacAddr::BROADCAST, arp)? {
            self.counters.bump(Counter::arp_requests_sent);
        }
        Ok(())
    }

    /// Announce our own address (gratuitous ARP request: sender and target are our IP).
    pub fn send_gratuitous_arp<L: Link>(&mut self, link: &mut L) -> Result<(), NetError> {
        self.send_arp_request(link, self.cfg.ip)
    }

    /// Send the frames that were waiting for `ip`, now that its MAC is known.
    fn release_pending<L: Link>(&mut self, link: &mut L, ip: Ipv4Addr, mac: MacAddr) -> Result<(), NetError> {
        self.resolver.done(ip);
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut pending = std::mem::replace(&mut self.pending, PacketQueue::new(1, 1));
        let mut result = Ok(());
        pending.retain(
            |p, _| p.next_hop != ip,
            |_, frame| {
                if result.is_err() {
                    return;
                }
                let sent = self.emit_frame(link, |buf| {
                    buf[..frame.len()].copy_from_slice(frame);
                    buf[..6].copy_from_slice(&mac.0);
                    frame.len()
                });
                match sent {
                    Ok(true) => {}
                    Ok(false) => self.counters.bump(Counter::drop_tx_link_full),
                    Err(e) => result = Err(e),
                }
            },
        );
        self.pending = pending;
        result
    }

    /// Timers: ARP retries and give-ups, cache sweeps.
    pub fn on_timers<L: Link>(&mut self, link: &mut L) -> Result<(), NetError> {
        let now = self.now;
        if self.resolver.next_deadline().is_some_and(|t| t <= now) {
            let mut actions = std::mem::take(&mut self.actions);
            self.resolver.due(now, self.cfg.arp_retry, self.cfg.arp_max_tries, &mut actions);
            for action in actions.drain(..) {
                match action {
                    ResolveAction::Request(ip) => self.send_arp_request(link, ip)?,
                    ResolveAction::GiveUp(ip) => {
                        let mut dropped = 0;
                        self.pending.retain(|p, _| p.next_hop != ip, |_, _| dropped += 1);
                        self.counters.add(Counter::drop_arp_unresolved, dropped);
                    }
                }
            }
            self.actions = actions;
        }
        if now - self.last_sweep >= Duration::from_secs(1) {
            self.arp.expire(now);
            self.last_sweep = now;
        }
        Ok(())
    }

    /// Earliest instant at which a timer needs a poll.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.resolver.next_deadline()
    }

    // ---------------------------------------------------------------- receive

    /// Process one received frame.
    /// Every frame ends either in exactly one `drop_*` counter or in `rx_delivered`.
    pub fn handle_frame<L: Link>(&mut self, link: &mut L, frame: &[u8]) -> Result<(), NetError> {
        self.counters.bump(Counter::rx_frames);
        self.counters.add(Counter::rx_bytes, frame.len() as u64);
        let drops_before = self.rx_drops;
        self.dispatch_frame(link, frame)?;
        if self.rx_drops == drops_before {
            self.counters.bump(Counter::rx_delivered);
        }
        Ok(())
    }

    fn dispatch_frame<L: Link>(&mut self, link: &mut L, frame: &[u8]) -> Result<(), NetError> {
        let eth = match EthernetFrame::new_checked(frame) {
            Ok(e) => e,
            Err(_) => return self.drop(Counter::drop_eth_truncated),
        };
        let dst = eth.dst();
        if dst != self.cfg.mac && !dst.is_broadcast() {
            return self.drop(Counter::drop_eth_not_for_us);
        }
        let src = eth.src();
        if !src.is_unicast() {
            return self.drop(Counter::drop_eth_bad_src);
        }
        if eth.vlan().is_some() {
            return self.drop(Counter::drop_eth_unknown_ethertype);
        }
        match eth.ethertype() {
            ethertype::ARP => self.handle_arp(link, eth.payload()),
            ethertype::IPV4 => self.handle_ipv4(link, eth.payload()),
            et => match self.raw.queue_mut(et) {
                Some(q) => {
                    if q.push(src, eth.payload()) {
                        self.counters.bump(Counter::raw_rx_frames);
                        Ok(())
                    } else {
                        self.drop(Counter::drop_raw_rx_queue_full)
                    }
                }
                None => self.drop(Counter::drop_eth_unknown_ethertype),
            },
        }
    }

    /// Count a received frame as dropped for `reason` (exactly one reason per frame).
    #[inline]
    fn drop(&mut self, reason: Counter) -> Result<(), NetError> {
        self.counters.bump(reason);
        self.rx_drops += 1;
        Ok(())
    }

    fn handle_arp<L: Link>(&mut self, link: &mut L, payload: &[u8]) -> Result<(), NetError> {
        let arp = match ArpRepr::parse(payload) {
            Ok(a) => a,
            Err(e) => return self.drop(arp_drop_reason(e)),
        };
        if !matches!(arp.op, ArpOp::Request | ArpOp::Reply) {
            return self.drop(Counter::drop_arp_bad_op);
        }
        if !arp.sender_mac.is_unicast() {
            return self.drop(Counter::drop_eth_bad_src);
        }
        if arp.sender_ip == self.cfg.ip {
            return self.drop(Counter::drop_arp_conflict);
        }
        let for_us = arp.target_ip == self.cfg.ip;
        let known = self.arp.contains(arp.sender_ip);
        let learn = !arp.sender_ip.is_unspecified() && (for_us || known);
        if learn {
            self.arp.insert(arp.sender_ip, arp.sender_mac, self.now);
            self.counters.bump(Counter::arp_learned);
            self.release_pending(link, arp.sender_ip, arp.sender_mac)?;
        }
        if !for_us {
            return if learn { Ok(()) } else { self.drop(Counter::drop_arp_not_for_us) };
        }
        if arp.op == ArpOp::Request {
            let reply = ArpRepr {
                op: ArpOp::Reply,
                sender_mac: self.cfg.mac,
                sender_ip: self.cfg.ip,
                target_mac: arp.sender_mac,
                target_ip: arp.sender_ip,
            };
            if self.send_arp(link, arp.sender_mac, reply)? {
                self.counters.bump(Counter::arp_replies_sent);
            }
        }
        Ok(())
    }

    fn handle_ipv4<L: Link>(&mut self, link: &mut L, payload: &[u8]) -> Result<(), NetError> {
        let ip = match Ipv4Packet::new_checked(payload) {
            Ok(p) => p,
            Err(e) => return self.drop(ipv4_drop_reason(e)),
        };
        if !ip.verify_checksum() {
            return self.drop(Counter::drop_ipv4_bad_checksum);
        }
        let (src, dst) = (ip.src(), ip.dst());
        let broadcast = self.cfg.is_broadcast(dst);
        if dst != self.cfg.ip && !broadcast {
            return self.drop(Counter::drop_ipv4_not_for_us);
        }
        if src.is_broadcast() || src.is_multicast() || src == self.cfg.ip || self.cfg.is_broadcast(src) {
            return self.drop(Counter::drop_ipv4_bad_src);
        }
        if ip.is_fragment() {
            return self.drop(Counter::drop_ipv4_fragment);
        }
        let l4 = ip.payload();
        match ip.protocol() {
            protocol::ICMP => self.handle_icmp(link, src, broadcast, ip.ttl(), l4),
            protocol::UDP => self.handle_udp(link, src, dst, broadcast, payload, l4),
            protocol::TCP => self.drop(Counter::drop_tcp_no_engine),
            _ => {
                self.drop(Counter::drop_ipv4_unknown_protocol)?;
                if !broadcast {
                    self.send_icmp_error(link, src, unreach_code::PROTOCOL, payload)?;
                }
                Ok(())
            }
        }
    }

    fn handle_icmp<L: Link>(
        &mut self,
        link: &mut L,
        src: Ipv4Addr,
        broadcast: bool,
        ttl: u8,
        l4: &[u8],
    ) -> Result<(), NetError> {
        let icmp = match IcmpRepr::parse(l4) {
            Ok(i) => i,
            Err(wire::WireError::BadChecksum) => return self.drop(Counter::drop_icmp_bad_checksum),
            Err(_) => return self.drop(Counter::drop_icmp_truncated),
        };
        match icmp.message {
            IcmpMessage::EchoRequest { ident, seq } => {
                if broadcast {
                    return self.drop(Counter::drop_icmp_broadcast_echo);
                }
                let reply = IcmpRepr { message: IcmpMessage::EchoReply { ident, seq }, data: icmp.data };
                if self.send_icmp(link, src, &reply)? {
                    self.counters.bump(Counter::icmp_echo_replied);
                }
                Ok(())
            }
            IcmpMessage::EchoReply { ident, seq } => {
                if self.ping.on_reply(src, ident, seq, ttl, icmp.data, self.now) {
                    self.counters.bump(Counter::icmp_echo_reply_received);
                    Ok(())
                } else {
                    self.drop(Counter::drop_icmp_unmatched_reply)
                }
            }
            IcmpMessage::DestUnreachable { .. } | IcmpMessage::TimeExceeded { .. } => {
                self.counters.bump(Counter::icmp_errors_received);
                self.note_icmp_error(icmp.data);
                Ok(())
            }
            IcmpMessage::Other { .. } => self.drop(Counter::drop_icmp_unhandled_type),
        }
    }

    /// Charge an ICMP error to the UDP socket whose datagram it quotes.
    fn note_icmp_error(&mut self, quoted: &[u8]) {
        let Ok(ip) = Ipv4Packet::new_checked(quoted) else { return };
        if ip.protocol() != protocol::UDP || ip.src() != self.cfg.ip {
            return;
        }
        let q = &quoted[ip.header_len()..];
        if q.len() >= 2 {
            let port = u16::from_be_bytes([q[0], q[1]]);
            if let Some(s) = self.udp.by_port_mut(port) {
                s.icmp_errors += 1;
            }
        }
    }

    fn handle_udp<L: Link>(
        &mut self,
        link: &mut L,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        broadcast: bool,
        ip_packet: &[u8],
        l4: &[u8],
    ) -> Result<(), NetError> {
        let udp = match UdpPacket::new_checked(l4) {
            Ok(u) => u,
            Err(_) => return self.drop(Counter::drop_udp_truncated),
        };
        if self.cfg.verify_udp_checksum && !udp.verify_checksum(src, dst) {
            return self.drop(Counter::drop_udp_bad_checksum);
        }
        let from = SocketAddrV4::new(src, udp.src_port());
        match self.udp.by_port_mut(udp.dst_port()) {
            Some(sock) => {
                if sock.queue.push(SocketAddrV4Meta(from), udp.payload()) {
                    self.counters.bump(Counter::udp_rx_datagrams);
                    Ok(())
                } else {
                    self.drop(Counter::drop_udp_rx_queue_full)
                }
            }
            None => {
                self.drop(Counter::drop_udp_no_socket)?;
                if !broadcast {
                    self.send_icmp_error(link, src, unreach_code::PORT, ip_packet)?;
                }
                Ok(())
            }
        }
    }

    /// Send ICMP destination unreachable with `code` about `offending` (an IPv4 packet).
    fn send_icmp_error<L: Link>(&mut self, link: &mut L, to: Ipv4Addr, code: u8, offending: &[u8]) -> Result<(), NetError> {
        if !self.icmp_limit.allow(self.now) {
            self.counters.bump(Counter::drop_icmp_rate_limited);
            return Ok(());
        }
        let quote = &offending[..offending.len().min(ICMP_ERROR_MAX_QUOTE)];
        let repr = IcmpRepr { message: IcmpMessage::DestUnreachable { code }, data: quote };
        if self.send_icmp(link, to, &repr)? {
            self.counters.bump(Counter::icmp_unreachable_sent);
        }
        Ok(())
    }
}

/// Zero-pad a frame of `len` bytes in `buf` to the Ethernet minimum; returns the padded length.
fn pad(buf: &mut [u8], len: usize) -> usize {
    if len == 0 || len >= MIN_FRAME || buf.len() < MIN_FRAME {
        return len;
    }
    buf[len..MIN_FRAME].fill(0);
    MIN_FRAME
}
