//! The transmit path of a stack: next hop, ARP resolution and waiting packets, header building
//! in place in the link's batch, and flushing to the link.

use crate::arp::{ArpCache, ResolveAction, Resolver};
use crate::counters::Counter;
use crate::env::Env;
use crate::error::{RawSendError, TxError};
use crate::queue::PacketQueue;
use crate::Config;
use link::LinkError;
use link::{FrameBatch, Instant, Link};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::ethernet::ethertype;
use wire::ipv4::protocol;
use wire::{ArpOp, ArpRepr, EthernetRepr, IcmpRepr, Ipv4Packet, Ipv4Repr, MacAddr, UdpRepr};

/// Shortest Ethernet frame on the wire (without FCS); shorter frames are zero-padded.
const MIN_FRAME: usize = 60;

/// Lowest path MTU an ICMP message can set (Linux's `min_pmtu`): lower values would let
/// anyone who can forge ICMP cut our segments to a few bytes.
pub const MIN_PMTU: usize = 552;
/// How long a lowered path MTU holds before the link MTU is tried again (RFC 1191 section 6.3).
pub const PMTU_AGE: Duration = Duration::from_secs(600);
/// Destinations with a lowered path MTU remembered at once.
const PMTU_ENTRIES: usize = 4096;

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

/// The transmit path's own state: the transmit batch, ARP (cache, resolver, frames waiting for
/// it) and the path MTUs. The clock, configuration and counters come with each call in an
/// [`Env`] (shared with the receive path).
#[derive(Debug)]
pub(crate) struct Egress {
    pub tx: FrameBatch,
    /// Frames built in place in the link's transmit queue since the last flush (they leave
    /// at the next flush, before the batch's frames).
    staged: usize,
    pub arp: ArpCache,
    pub resolver: Resolver,
    pub pending: PacketQueue<Pending>,
    ip_ident: u16,
    actions: Vec<ResolveAction>,
    next_sweep: Instant,
    /// Lowered path MTUs: destination -> (MTU, valid until).
    pmtu: HashMap<Ipv4Addr, (u16, Instant)>,
    /// A whole datagram being cut into fragments.
    frag_scratch: Vec<u8>,
}

impl Egress {
    /// The transmit path of a stack configured with `cfg`.
    pub fn new(cfg: &Config) -> Egress {
        let max_frame = cfg.max_frame();
        Egress {
            tx: FrameBatch::new(cfg.batch * 2, max_frame),
            staged: 0,
            arp: ArpCache::new(cfg.arp_cache_size, cfg.arp_ttl),
            resolver: Resolver::default(),
            pending: PacketQueue::new(cfg.arp_max_pending, max_frame),
            ip_ident: u32::from(cfg.ip) as u16,
            actions: Vec::with_capacity(16),
            next_sweep: Instant::ZERO,
            pmtu: HashMap::new(),
            frag_scratch: Vec::new(),
        }
    }

    /// Hand the transmit batch to the link. Frames the link refuses stay queued for the next
    /// flush (back-pressure reaches senders as a full batch, see `emit_frame`).
    pub fn flush<L: Link + ?Sized>(&mut self, env: &mut Env, link: &mut L) -> Result<(), LinkError> {
        if self.tx.is_empty() && self.staged == 0 {
            return Ok(());
        }
        self.staged = 0;
        let before = self.tx.bytes();
        let n = link.tx_batch(env.now, &mut self.tx)?;
        env.counters.add(Counter::tx_frames, n as u64);
        env.counters.add(Counter::tx_bytes, (before - self.tx.bytes()) as u64);
        Ok(())
    }

    /// Build one frame and queue it, returning false if the link stays full (the frame is not
    /// sent). While nothing waits in the transmit batch, the frame is built straight in the
    /// link's transmit queue where the driver lends it (one copy less per frame), and a batch's
    /// worth of such frames is handed over at once; otherwise it goes into the batch, which is
    /// flushed first if it is full.
    pub fn emit_frame<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        build: impl FnOnce(&mut [u8]) -> usize,
    ) -> Result<bool, LinkError> {
        let mut build = Some(build);
        let slot_size = self.tx.slot_size();
        if self.tx.is_empty() && link.max_frame() >= slot_size {
            let mut bytes = 0;
            let staged = link.tx_in_place(env.now, &mut |buf| {
                let Some(build) = build.take() else { return 0 };
                let len = slot_size.min(buf.len());
                let buf = &mut buf[..len];
                let n = build(buf);
                bytes = pad(buf, n);
                bytes
            });
            match staged {
                Some(Ok(true)) => {
                    env.counters.add(Counter::tx_frames, 1);
                    env.counters.add(Counter::tx_bytes, bytes as u64);
                    self.staged += 1;
                    if self.staged >= self.tx.capacity() {
                        self.flush(env, link)?;
                    }
                    return Ok(true);
                }
                Some(Err(e)) => return Err(e),
                // Abandoned by `build`, as the batch path would report it.
                Some(Ok(false)) if build.is_none() => return Ok(false),
                // The queue is full or the driver builds nothing in place: the batch takes it.
                Some(Ok(false)) | None => {}
            }
        }
        let Some(build) = build else { return Ok(false) };
        if self.tx.is_full() {
            self.flush(env, link)?;
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
    pub fn next_hop(&self, env: &Env, dst: Ipv4Addr) -> Result<Result<MacAddr, Ipv4Addr>, TxError> {
        if env.cfg.is_broadcast(dst) {
            return Ok(Ok(MacAddr::BROADCAST));
        }
        let hop = Self::unicast_hop(env, dst)?;
        Ok(self.arp.lookup(hop, env.now).ok_or(hop))
    }

    /// The next hop (the address to resolve) for unicast destination `dst`: itself on the
    /// link, else the gateway; no route for a multicast, unspecified or own address, or off
    /// the link without a gateway.
    pub fn unicast_hop(env: &Env, dst: Ipv4Addr) -> Result<Ipv4Addr, TxError> {
        if dst.is_multicast() || dst.is_unspecified() || dst == env.cfg.ip {
            return Err(TxError::NoRoute(dst));
        }
        if env.cfg.on_link(dst) {
            return Ok(dst);
        }
        env.cfg.gateway.ok_or(TxError::NoRoute(dst))
    }

    /// The path MTU towards `dst`: the link's, or lower if an ICMP "fragmentation needed"
    /// said so within the last [`PMTU_AGE`].
    pub fn path_mtu(&self, env: &Env, dst: Ipv4Addr) -> usize {
        match self.pmtu.get(&dst) {
            Some(&(mtu, until)) if until > env.now => (mtu as usize).min(env.cfg.mtu),
            _ => env.cfg.mtu,
        }
    }

    /// Lower the path MTU towards `dst` to `mtu` (RFC 1191), never below [`MIN_PMTU`].
    /// Returns the new path MTU if it went down.
    pub fn lower_path_mtu(&mut self, env: &mut Env, dst: Ipv4Addr, mtu: usize) -> Option<usize> {
        let mtu = mtu.max(MIN_PMTU);
        if mtu >= self.path_mtu(env, dst) {
            return None;
        }
        if self.pmtu.len() >= PMTU_ENTRIES {
            let now = env.now;
            self.pmtu.retain(|_, (_, until)| *until > now);
            if self.pmtu.len() >= PMTU_ENTRIES {
                self.pmtu.clear();
            }
        }
        self.pmtu.insert(dst, (mtu as u16, env.now + PMTU_AGE));
        env.counters.bump(Counter::icmp_pmtu_updates);
        Some(mtu)
    }

    /// Send an IPv4 packet whose transport part (`l4_len` bytes) is written by `fill_l4`.
    /// Returns Ok(false) if the link is full. Packets to unresolved next hops wait for ARP.
    /// Packets larger than the path MTU are sent in fragments (RFC 791); others carry DF, as
    /// Linux's default path MTU discovery does.
    pub fn send_ip<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        dst: Ipv4Addr,
        proto: u8,
        l4_len: usize,
        fill_l4: impl FnOnce(&mut [u8], Ipv4Addr, Ipv4Addr),
    ) -> Result<bool, TxError> {
        self.send_ip_with(env, link, dst, proto, l4_len, true, fill_l4)
    }

    /// [`Self::send_ip`], with fragmentation allowed or not (`Err(TooLarge)` beyond the path
    /// MTU when it is not).
    #[allow(clippy::too_many_arguments)]
    pub fn send_ip_with<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        dst: Ipv4Addr,
        proto: u8,
        l4_len: usize,
        may_fragment: bool,
        fill_l4: impl FnOnce(&mut [u8], Ipv4Addr, Ipv4Addr),
    ) -> Result<bool, TxError> {
        let mtu = self.path_mtu(env, dst);
        let max = mtu - Ipv4Repr::HEADER_LEN;
        if l4_len > max {
            if !may_fragment {
                env.counters.bump(Counter::tx_drop_too_big);
                return Err(TxError::TooLarge { len: l4_len, max });
            }
            return self.send_fragmented(env, link, dst, proto, l4_len, mtu, fill_l4);
        }
        let ip = self.next_ip_header(env, dst, proto, l4_len, true);
        let src_mac = env.cfg.mac;
        let build = move |buf: &mut [u8], dst_mac: MacAddr| -> usize {
            let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV4, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            let Ok(ih) = ip.emit(&mut buf[eh..]) else { return 0 };
            let start = eh + ih;
            fill_l4(&mut buf[start..start + l4_len], ip.src, ip.dst);
            start + l4_len
        };
        let hop = self.next_hop(env, dst)?;
        self.emit_or_wait(env, link, hop, build)
    }

    /// The header of the next IPv4 packet we originate (a new identification).
    fn next_ip_header(&mut self, env: &Env, dst: Ipv4Addr, proto: u8, payload_len: usize, dont_frag: bool) -> Ipv4Repr {
        self.ip_ident = self.ip_ident.wrapping_add(1);
        Ipv4Repr {
            src: env.cfg.ip,
            dst,
            protocol: proto,
            payload_len,
            ttl: env.cfg.ttl,
            ident: self.ip_ident,
            dont_frag,
            dscp_ecn: 0,
        }
    }

    /// Send a frame built by `build` for destination MAC `hop`, or park it until ARP resolves
    /// the next hop. Ok(false) if the link is full.
    fn emit_or_wait<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        hop: Result<MacAddr, Ipv4Addr>,
        build: impl FnOnce(&mut [u8], MacAddr) -> usize,
    ) -> Result<bool, TxError> {
        match hop {
            Ok(mac) => Ok(self.emit_frame(env, link, |buf| build(buf, mac))?),
            Err(hop) => {
                let reserve = env.cfg.max_frame();
                let queued =
                    self.pending.push_with(Pending { next_hop: hop }, reserve, |buf| Some(build(buf, MacAddr::ZERO)));
                if !queued {
                    env.counters.bump(Counter::tx_drop_arp_pending_full);
                } else if self.resolver.start(hop, env.now, env.cfg.arp_retry) {
                    self.send_arp_request(env, link, hop)?;
                }
                Ok(true)
            }
        }
    }

    /// Send a datagram larger than the path MTU `mtu` in fragments. All fragments go into
    /// one transmit batch when it can hold them, so back-pressure never cuts a datagram.
    #[allow(clippy::too_many_arguments)]
    fn send_fragmented<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        dst: Ipv4Addr,
        proto: u8,
        l4_len: usize,
        mtu: usize,
        fill_l4: impl FnOnce(&mut [u8], Ipv4Addr, Ipv4Addr),
    ) -> Result<bool, TxError> {
        let max_total = 65535 - Ipv4Repr::HEADER_LEN;
        if l4_len > max_total {
            return Err(TxError::TooLarge { len: l4_len, max: max_total });
        }
        let hop = self.next_hop(env, dst)?;
        let per = (mtu - Ipv4Repr::HEADER_LEN) & !7;
        let count = l4_len.div_ceil(per);
        if hop.is_ok() && self.tx.capacity() - self.tx.len() < count {
            self.flush(env, link)?;
            if self.tx.capacity() - self.tx.len() < count && self.tx.capacity() >= count {
                return Ok(false);
            }
        }
        let mut whole = std::mem::take(&mut self.frag_scratch);
        whole.clear();
        whole.resize(l4_len, 0);
        fill_l4(&mut whole, env.cfg.ip, dst);
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let (src_mac, src, ttl, ident) = (env.cfg.mac, env.cfg.ip, env.cfg.ttl, self.ip_ident);
        let mut result = Ok(true);
        for (i, piece) in whole.chunks(per).enumerate() {
            let offset = i * per;
            let more = offset + piece.len() < l4_len;
            let ip = Ipv4Repr {
                src,
                dst,
                protocol: proto,
                payload_len: piece.len(),
                ttl,
                ident,
                dont_frag: false,
                dscp_ecn: 0,
            };
            let build = |buf: &mut [u8], dst_mac: MacAddr| -> usize {
                let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV4, vlan: None };
                let Ok(eh) = eth.emit(buf) else { return 0 };
                let Ok(ih) = ip.emit(&mut buf[eh..]) else { return 0 };
                let mut p = Ipv4Packet::new_unchecked(&mut buf[eh..eh + ih]);
                p.set_frag(false, more, offset);
                p.fill_checksum();
                buf[eh + ih..eh + ih + piece.len()].copy_from_slice(piece);
                eh + ih + piece.len()
            };
            match self.emit_or_wait(env, link, hop, build) {
                Ok(true) => env.counters.bump(Counter::ipv4_frags_sent),
                Ok(false) => {
                    // Only when one batch cannot hold the datagram: the rest is lost.
                    env.counters.bump(Counter::tx_drop_link_full);
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.frag_scratch = whole;
        if result.is_ok() {
            env.counters.bump(Counter::ipv4_fragmented_sent);
        }
        result
    }

    /// Send a UDP datagram of `payload_len` bytes that `fill` writes in place (into the
    /// frame, or the datagram buffer when it goes out in fragments or waits for ARP); with
    /// `checksum` false the checksum field is 0 ("none") and the payload is not summed.
    /// `fill` returns the payload's ones-complement sum when it took it while writing
    /// ([`wire::checksum::copy_with_sum`]), so the frame is not read back for it.
    #[allow(clippy::too_many_arguments)]
    pub fn send_udp_with<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        src_port: u16,
        dst: SocketAddrV4,
        payload_len: usize,
        may_fragment: bool,
        checksum: bool,
        fill: impl FnOnce(&mut [u8]) -> Option<u64>,
    ) -> Result<bool, TxError> {
        let len = UdpRepr::HEADER_LEN + payload_len;
        let repr = UdpRepr { src_port, dst_port: dst.port() };
        let sent = self.send_ip_with(env, link, *dst.ip(), protocol::UDP, len, may_fragment, |buf, s, d| {
            let payload_sum = fill(&mut buf[UdpRepr::HEADER_LEN..]);
            let _ = match (checksum, payload_sum) {
                (false, _) => repr.emit_without_checksum(buf, payload_len),
                (true, Some(sum)) => repr.emit_summed(buf, s, d, payload_len, sum),
                (true, None) => repr.emit(buf, s, d, payload_len),
            };
        })?;
        if sent {
            env.counters.bump(Counter::udp_tx_datagrams);
        }
        Ok(sent)
    }

    /// Send an ICMP message.
    pub fn send_icmp<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        dst: Ipv4Addr,
        repr: &IcmpRepr<'_>,
    ) -> Result<bool, TxError> {
        self.send_ip(env, link, dst, protocol::ICMP, repr.buffer_len(), |buf, _, _| {
            let _ = repr.emit(buf);
        })
    }

    /// Send an ICMP message in one packet whose IPv4 header carries `options` (echo replies
    /// returning a request's record-route or timestamp option). A message too large for one
    /// packet goes out in fragments without the options.
    pub fn send_icmp_with_options<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        dst: Ipv4Addr,
        repr: &IcmpRepr<'_>,
        options: &[u8],
    ) -> Result<bool, TxError> {
        let l4_len = repr.buffer_len();
        if options.is_empty() || Ipv4Repr::HEADER_LEN + options.len() + l4_len > self.path_mtu(env, dst) {
            return self.send_icmp(env, link, dst, repr);
        }
        let ip = self.next_ip_header(env, dst, protocol::ICMP, l4_len, false);
        let src_mac = env.cfg.mac;
        let build = move |buf: &mut [u8], dst_mac: MacAddr| -> usize {
            let eth = EthernetRepr { src: src_mac, dst: dst_mac, ethertype: ethertype::IPV4, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            let Ok(ih) = ip.emit_with_options(&mut buf[eh..], options) else { return 0 };
            let start = eh + ih;
            let _ = repr.emit(&mut buf[start..start + l4_len]);
            start + l4_len
        };
        let hop = self.next_hop(env, dst)?;
        self.emit_or_wait(env, link, hop, build)
    }

    /// Send a raw Ethernet frame whose `payload_len` payload bytes `fill` writes in place.
    pub fn send_raw_with<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        et: u16,
        dst: MacAddr,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<bool, RawSendError> {
        if payload_len > env.cfg.mtu {
            return Err(RawSendError::TooLarge { len: payload_len, max: env.cfg.mtu });
        }
        let src = env.cfg.mac;
        let sent = self.emit_frame(env, link, |buf| {
            let eth = EthernetRepr { src, dst, ethertype: et, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            fill(&mut buf[eh..eh + payload_len]);
            eh + payload_len
        })?;
        if sent {
            env.counters.bump(Counter::raw_tx_frames);
        }
        Ok(sent)
    }

    /// Send one ARP message to `dst_mac`. Ok(false) if the link is full.
    pub fn send_arp<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        dst_mac: MacAddr,
        arp: ArpRepr,
    ) -> Result<bool, LinkError> {
        let src = env.cfg.mac;
        self.emit_frame(env, link, |buf| {
            let eth = EthernetRepr { src, dst: dst_mac, ethertype: ethertype::ARP, vlan: None };
            let Ok(eh) = eth.emit(buf) else { return 0 };
            match arp.emit(&mut buf[eh..]) {
                Ok(n) => eh + n,
                Err(_) => 0,
            }
        })
    }

    /// Broadcast an ARP request for `ip`.
    pub fn send_arp_request<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        ip: Ipv4Addr,
    ) -> Result<(), LinkError> {
        let arp = ArpRepr {
            op: ArpOp::Request,
            sender_mac: env.cfg.mac,
            sender_ip: env.cfg.ip,
            target_mac: MacAddr::ZERO,
            target_ip: ip,
        };
        if self.send_arp(env, link, MacAddr::BROADCAST, arp)? {
            env.counters.bump(Counter::arp_requests_sent);
        }
        Ok(())
    }

    /// Announce our own address (gratuitous ARP request: sender and target are our IP).
    pub fn send_gratuitous_arp<L: Link + ?Sized>(&mut self, env: &mut Env, link: &mut L) -> Result<(), LinkError> {
        let ip = env.cfg.ip;
        self.send_arp_request(env, link, ip)
    }

    /// Send the frames that were waiting for `ip`, now that its MAC is known.
    pub fn release_pending<L: Link + ?Sized>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        ip: Ipv4Addr,
        mac: MacAddr,
    ) -> Result<(), LinkError> {
        self.resolver.done(ip);
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut pending = std::mem::replace(&mut self.pending, PacketQueue::new(1, 1));
        let result = self.send_parked(env, link, &mut pending, |p| p.next_hop == ip, mac);
        self.pending = pending;
        result
    }

    /// Send the frames of `parked` that `resolved` picks to `mac` (their destination MAC
    /// rewritten) and take them out of the queue: packets that waited for address resolution,
    /// ARP's or Neighbor Discovery's. A frame the full link refuses is counted lost.
    pub fn send_parked<L: Link + ?Sized, M: Copy + Default>(
        &mut self,
        env: &mut Env,
        link: &mut L,
        parked: &mut PacketQueue<M>,
        resolved: impl Fn(&M) -> bool,
        mac: MacAddr,
    ) -> Result<(), LinkError> {
        let mut result = Ok(());
        parked.retain(
            |p, _| !resolved(p),
            |_, frame| {
                if result.is_err() {
                    return;
                }
                let sent = self.emit_frame(env, link, |buf| {
                    buf[..frame.len()].copy_from_slice(frame);
                    buf[..6].copy_from_slice(&mac.0);
                    frame.len()
                });
                match sent {
                    Ok(true) => {}
                    Ok(false) => env.counters.bump(Counter::tx_drop_link_full),
                    Err(e) => result = Err(e),
                }
            },
        );
        result
    }

    /// Timers: ARP retries and give-ups, cache sweeps.
    pub fn on_timers<L: Link + ?Sized>(&mut self, env: &mut Env, link: &mut L) -> Result<(), LinkError> {
        let now = env.now;
        if self.resolver.next_deadline().is_some_and(|t| t <= now) {
            let mut actions = std::mem::take(&mut self.actions);
            self.resolver.due(now, env.cfg.arp_retry, env.cfg.arp_max_tries, &mut actions);
            for action in actions.drain(..) {
                match action {
                    ResolveAction::Request(ip) => self.send_arp_request(env, link, ip)?,
                    ResolveAction::GiveUp(ip) => {
                        let mut dropped = 0;
                        self.pending.retain(|p, _| p.next_hop != ip, |_, _| dropped += 1);
                        env.counters.add(Counter::tx_drop_arp_unresolved, dropped);
                    }
                }
            }
            self.actions = actions;
        }
        if now >= self.next_sweep {
            self.arp.expire(now);
            self.next_sweep = now + Duration::from_secs(1);
        }
        Ok(())
    }

    /// Earliest instant at which a timer needs a poll.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.resolver.next_deadline()
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
