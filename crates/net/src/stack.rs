//! `Stack`: one host's network stack over one link, advanced by `poll(now)`.

use crate::error::{BadHandle, BindError, ConfigError, PingError, RawBindError, RawSendError, TxError, UdpSendError};
use crate::iface::Core;
use crate::ping::{PingClient, PingReply, STAMP_LEN};
use crate::raw::RawHandle;
use crate::tcp::sink::LinkSink;
use crate::udp::{UdpHandle, UdpRxHandler};
use crate::{Config, Counter, Counters};
use link::{FrameBatch, Instant, Link, LinkError};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV6};
use wire::{IcmpMessage, IcmpRepr, MacAddr};

/// A host's network stack (Ethernet, ARP, IPv4, ICMP, UDP, raw Ethernet) driving one link.
///
/// Single-threaded and poll-driven: nothing happens between calls to [`Stack::poll`], which
/// receives and processes one batch of frames, runs due timers and flushes what was sent.
/// Time is injected, so the same stack runs on virtual or real time.
pub struct Stack<L: Link> {
    pub(crate) link: L,
    rx: FrameBatch,
    pub(crate) core: Core,
    pub(crate) started: bool,
}

impl<L: Link> Stack<L> {
    /// A stack with configuration `cfg` on `link`. Fails if the configuration is unusable or
    /// needs larger frames than the link carries.
    ///
    /// ```
    /// use link::{mem, LinkConfig};
    /// use net::{Config, ConfigError, Stack};
    /// let (l, _peer) = mem::pair(LinkConfig::default());
    /// let stack = Stack::new(Config::host("10.0.0.1/24"), l).unwrap();
    /// assert_eq!(stack.ip().to_string(), "10.0.0.1");
    ///
    /// let (small, _peer) = mem::pair(LinkConfig::default().mtu(1000));
    /// let jumbo = Config::host("10.0.0.1/24").mtu(9000);
    /// assert!(matches!(Stack::new(jumbo, small), Err(ConfigError::MtuAboveLink { .. })));
    /// ```
    pub fn new(cfg: Config, link: L) -> Result<Self, ConfigError> {
        cfg.validate()?;
        if cfg.max_frame() > link.max_frame() + 4 {
            return Err(ConfigError::MtuAboveLink {
                mtu: cfg.mtu,
                frame: cfg.max_frame() - 4,
                link_max: link.max_frame(),
            });
        }
        let rx = FrameBatch::new(cfg.batch, link.max_frame().max(cfg.max_frame()));
        Ok(Stack { link, rx, core: Core::new(cfg), started: false })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.core.env.cfg
    }

    /// Our IPv4 address.
    pub fn ip(&self) -> Ipv4Addr {
        self.core.env.cfg.ip
    }

    /// Our IPv6 addresses with their states (empty when IPv6 is off): the link-local
    /// address first.
    pub fn ipv6_addrs(&self) -> &[crate::HostAddr] {
        self.core.v6.addrs()
    }

    /// Poll (sleeping 1 ms between polls) until our IPv6 addresses have passed duplicate
    /// address detection (about a second; none tentative), so that we can send from them and
    /// answer for them; at most `limit`. Returns the addresses another node on the link
    /// turned out to hold (not used). For set-up code; a program with its own loop polls and
    /// watches [`Stack::ipv6_addrs`] instead.
    pub fn settle_ipv6(&mut self, limit: std::time::Duration) -> Result<Vec<std::net::Ipv6Addr>, crate::NetError> {
        let start = Instant::now();
        while self.ipv6_addrs().iter().any(|a| a.state == crate::AddrState::Tentative) {
            if Instant::now() - start > limit {
                return Err(crate::NetError::DadTimeout(limit));
            }
            self.poll(Instant::now())?;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let dups = self.ipv6_addrs().iter().filter(|a| a.state == crate::AddrState::Duplicate);
        Ok(dups.map(|a| a.cidr.addr).collect())
    }

    /// The IPv6 neighbour cache: (address, MAC, state, is a router) per entry.
    pub fn ipv6_neighbors(&self) -> Vec<(std::net::Ipv6Addr, MacAddr, crate::NeighborState, bool)> {
        self.core.v6.neighbors.entries().collect()
    }

    /// Our MAC address.
    pub fn mac(&self) -> MacAddr {
        self.core.env.cfg.mac
    }

    /// The link.
    pub fn link(&self) -> &L {
        &self.link
    }

    /// The link, mutable (for test benches that inject frames).
    pub fn link_mut(&mut self) -> &mut L {
        &mut self.link
    }

    /// The stack's counters.
    pub fn counters(&self) -> &Counters {
        &self.core.env.counters
    }

    /// The time of the last poll.
    pub fn now(&self) -> Instant {
        self.core.env.now
    }

    /// One round: receive and process one batch, run due timers, flush transmissions.
    /// Returns the number of frames received.
    pub fn poll(&mut self, now: Instant) -> Result<usize, LinkError> {
        self.core.env.now = now;
        self.core.udp.now = now;
        if !self.started {
            self.started = true;
            if self.core.env.cfg.gratuitous_arp {
                self.core.eg.send_gratuitous_arp(&mut self.core.env, &mut self.link)?;
            }
        }
        // Every frame of the batch gets its verdict even if the link fails on the way.
        let mut link_failed = None;
        let core = &mut self.core;
        // Frames handled where they lie in the link's ring when the driver lends them (no copy
        // into our batch), else copied into the batch first.
        let in_place = self.link.rx_in_place(now, self.rx.capacity(), &mut |tx, frame| {
            if let Err(e) = core.handle_frame(tx, frame) {
                link_failed.get_or_insert(e);
            }
        });
        let n = match in_place {
            Some(received) => received?,
            None => {
                self.rx.clear();
                let n = self.link.rx_batch(now, &mut self.rx)?;
                for i in 0..self.rx.len() {
                    if let Err(e) = self.core.handle_frame(&mut self.link, self.rx.get(i)) {
                        link_failed.get_or_insert(e);
                    }
                }
                n
            }
        };
        if let Some(e) = link_failed {
            return Err(e);
        }
        self.core.eg.on_timers(&mut self.core.env, &mut self.link)?;
        self.core.on_reasm_timers(&mut self.link)?;
        if self.core.v6.is_on() && self.core.v6.timers_due(now) {
            self.core.v6.expire_learned(now);
            self.core.v6.on_timers(&mut self.core.env, &mut self.core.eg, &mut self.link)?;
            self.core.v6.rearm_timers();
        }
        if self.core.tcp.has_work(now) {
            let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);
            self.core.tcp.on_timers(&mut out, now);
            out.finish_link()?;
        }
        self.core.eg.flush(&mut self.core.env, &mut self.link)?;
        Ok(n)
    }

    /// Process one frame as if it had been received from the link (test benches, replays).
    pub fn inject(&mut self, frame: &[u8]) -> Result<(), LinkError> {
        self.core.udp.now = self.core.env.now;
        self.core.handle_frame(&mut self.link, frame)?;
        let now = self.core.env.now;
        let mut out = LinkSink::new(&mut self.core.env, &mut self.core.eg, &mut self.core.v6, &mut self.link);

        self.core.tcp.flush_dirty(&mut out, now);

        out.finish_link()
    }

    /// IPv4 reassembly in progress: (datagrams, bytes charged against the limits).
    pub fn reassembly_usage(&self) -> (usize, usize) {
        (self.core.reasm.datagrams(), self.core.reasm.bytes())
    }

    /// IPv4 datagrams being reassembled (not discarded for an overlap): with the counters,
    /// `ipv4_reasm_started = ipv4_reassembled + ipv4_reasm_timeout + ipv4_reasm_evicted +
    /// ipv4_reasm_overlap + this`.
    pub fn reassembly_in_progress(&self) -> usize {
        self.core.reasm.in_progress()
    }

    /// The path MTU towards `dst` (the link's unless an ICMP message lowered it).
    pub fn path_mtu(&self, dst: Ipv4Addr) -> usize {
        self.core.eg.path_mtu(&self.core.env, dst)
    }

    /// Earliest instant a timer needs a poll, if any is armed.
    pub fn next_deadline(&self) -> Option<Instant> {
        [
            self.core.eg.next_deadline(),
            self.core.tcp.next_deadline(),
            self.core.reasm.next_deadline(),
            self.core.reasm6.next_deadline(),
            self.core.v6.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Send what is queued now instead of at the end of the next poll.
    pub fn flush(&mut self) -> Result<(), LinkError> {
        self.core.eg.flush(&mut self.core.env, &mut self.link)
    }

    /// The MAC address learned for `ip`, if any.
    pub fn arp_lookup(&self, ip: Ipv4Addr) -> Option<MacAddr> {
        self.core.eg.arp.lookup(ip, self.core.env.now)
    }

    /// The ARP cache as (ip, mac) pairs.
    pub fn arp_entries(&self) -> Vec<(Ipv4Addr, MacAddr)> {
        self.core.eg.arp.entries().map(|(ip, mac, _)| (ip, mac)).collect()
    }

    /// Bind a UDP socket to `port` (0: an ephemeral port).
    ///
    /// ```
    /// # use link::{mem, LinkConfig};
    /// # use net::{BindError, Config, Stack};
    /// # let (l, _peer) = mem::pair(LinkConfig::default());
    /// let mut stack = Stack::new(Config::host("10.0.0.1/24"), l).unwrap();
    /// let dns = stack.udp_bind(53).unwrap();
    /// assert_eq!(stack.udp_port(dns).unwrap(), 53);
    /// assert_eq!(stack.udp_bind(53).unwrap_err(), BindError::PortInUse(53));
    /// let any = stack.udp_bind(0).unwrap();
    /// assert!(stack.udp_port(any).unwrap() >= 49152);
    /// ```
    pub fn udp_bind(&mut self, port: u16) -> Result<UdpHandle, BindError> {
        let r = self.core.udp.bind(port);
        if let Err(BindError::TooManySockets(_)) = r {
            self.core.env.counters.bump(Counter::udp_bind_refused);
        }
        r
    }

    /// The local port of a UDP socket.
    pub fn udp_port(&self, h: UdpHandle) -> Result<u16, BadHandle> {
        Ok(self.core.udp.get(h)?.port)
    }

    /// Close a UDP socket; its queued datagrams are discarded and its memory given back.
    pub fn udp_close(&mut self, h: UdpHandle) -> Result<(), BadHandle> {
        self.core.udp.close(h, &mut self.core.tcp.shared.mem)
    }

    /// Send one datagram to an IPv4 or IPv6 destination (`SocketAddrV4`, `SocketAddrV6` or
    /// `SocketAddr`). `Ok(false)` means the link's queue is full (back-pressure: retry
    /// after a poll); a datagram waiting for ARP or Neighbor Discovery counts as sent.
    /// A datagram larger than the path MTU goes out in fragments, unless the socket is set
    /// to [`Stack::udp_set_dont_fragment`]: then it is refused with `TooLarge`.
    /// Over IPv6 the source address is the one chosen for the destination (link-local for a
    /// link-local destination; the scope id is not needed: the stack has one interface); a
    /// stack without a usable IPv6 address or route for it refuses with `NoRoute`.
    ///
    /// ```
    /// # use link::{mem, LinkConfig};
    /// # use net::{Config, Stack, UdpSendError};
    /// # use std::net::SocketAddr;
    /// # let (l, _peer) = mem::pair(LinkConfig::default());
    /// let mut stack = Stack::new(Config::host("10.0.0.1/24"), l).unwrap();
    /// let s = stack.udp_bind(0).unwrap();
    /// let to: SocketAddr = "10.0.0.2:9".parse().unwrap();
    /// if !stack.udp_send_to(s, to, b"hello").unwrap() {
    ///     // The link is full: poll, then send again (or count the datagram lost).
    /// }
    /// stack.udp_set_dont_fragment(s, true).unwrap();
    /// let err = stack.udp_send_to(s, to, &[0u8; 2000]).unwrap_err();
    /// assert!(matches!(err, UdpSendError::TooLarge { len: 2000, max: 1472 }));
    /// // This host has no IPv6 address.
    /// let v6: SocketAddr = "[fd77::1]:9".parse().unwrap();
    /// assert!(matches!(stack.udp_send_to(s, v6, b"x"), Err(UdpSendError::NoRoute(_))));
    /// ```
    #[must_use = "Ok(false) means the link is full and the datagram was not sent: retry after a poll or count it lost"]
    pub fn udp_send_to(
        &mut self,
        h: UdpHandle,
        dst: impl Into<SocketAddr>,
        payload: &[u8],
    ) -> Result<bool, UdpSendError> {
        // Copied into the frame and summed for the checksum in one pass.
        self.udp_send_filled(h, dst.into(), payload.len(), |buf| Some(wire::checksum::copy_with_sum(buf, payload)))
    }

    /// [`Stack::udp_send_to`] of a `len`-byte payload that `fill` writes in place, straight
    /// into the outgoing frame (no copy through a caller's buffer). `fill` gets exactly
    /// `len` bytes and is called at most once: not when the datagram is refused (`Ok(false)`
    /// or an error), nor when it is dropped (counted) because the queue of datagrams waiting
    /// for ARP is full. The UDP checksum is computed after it returns.
    #[must_use = "Ok(false) means the link is full and the datagram was not sent: retry after a poll or count it lost"]
    pub fn udp_send_with(
        &mut self,
        h: UdpHandle,
        dst: impl Into<SocketAddr>,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<bool, UdpSendError> {
        self.udp_send_filled(h, dst.into(), len, |buf| {
            fill(buf);
            None
        })
    }

    /// [`Stack::udp_send_with`] with a `fill` that may return the payload's ones-complement
    /// sum (see `Egress::send_udp_with`).
    fn udp_send_filled(
        &mut self,
        h: UdpHandle,
        dst: SocketAddr,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Option<u64>,
    ) -> Result<bool, UdpSendError> {
        let s = self.core.udp.get(h)?;
        let (port, may_fragment, checksum) = (s.port, !s.dont_fragment, !s.no_checksum);
        let dst = match dst {
            SocketAddr::V4(d) => d,
            SocketAddr::V6(d) => return self.udp_send_v6(port, d, len, may_fragment, fill),
        };
        match self.core.eg.send_udp_with(
            &mut self.core.env,
            &mut self.link,
            port,
            dst,
            len,
            may_fragment,
            checksum,
            fill,
        ) {
            Err(TxError::TooLarge { len, max }) => {
                let header = wire::UdpRepr::HEADER_LEN;
                Err(UdpSendError::TooLarge { len: len - header, max: max.saturating_sub(header) })
            }
            Ok(sent) => Ok(sent),
            Err(e) => Err(e.into()),
        }
    }

    /// [`Stack::udp_send_filled`] to an IPv6 destination.
    fn udp_send_v6(
        &mut self,
        port: u16,
        dst: SocketAddrV6,
        len: usize,
        may_fragment: bool,
        fill: impl FnOnce(&mut [u8]) -> Option<u64>,
    ) -> Result<bool, UdpSendError> {
        let core = &mut self.core;
        let Some(src) = core.v6.route(*dst.ip(), core.env.now) else {
            core.env.counters.bump(Counter::tx_drop_ipv6_no_route);
            return Err(UdpSendError::NoRoute((*dst.ip()).into()));
        };
        match core.v6.send_udp(&mut core.env, &mut core.eg, &mut self.link, (src, port), dst, len, may_fragment, fill) {
            Err(TxError::TooLarge { len, max }) => {
                let header = wire::UdpRepr::HEADER_LEN;
                Err(UdpSendError::TooLarge { len: len - header, max: max.saturating_sub(header) })
            }
            Ok(sent) => Ok(sent),
            Err(e) => Err(e.into()),
        }
    }

    /// Never fragment this socket's datagrams (Linux's IP_PMTUDISC_DO): one larger than the
    /// path MTU is refused with `TooLarge` naming the largest payload that fits.
    pub fn udp_set_dont_fragment(&mut self, h: UdpHandle, on: bool) -> Result<(), BadHandle> {
        self.core.udp.get_mut(h)?.dont_fragment = on;
        Ok(())
    }

    /// Send this socket's datagrams with checksum `on` (the default) or with checksum 0,
    /// "no checksum" (RFC 768; Linux's SO_NO_CHECK), which saves a pass over the payload
    /// for protocols that check its integrity themselves. Receiving is unchanged: a zero
    /// checksum is accepted, any other is verified. IPv6 has no "no checksum" (RFC 8200
    /// 8.1): datagrams to IPv6 destinations always carry one, and a received one with
    /// checksum 0 is dropped (`rx_drop_udp6_zero_checksum`).
    pub fn udp_set_checksum(&mut self, h: UdpHandle, on: bool) -> Result<(), BadHandle> {
        self.core.udp.get_mut(h)?.no_checksum = !on;
        Ok(())
    }

    /// Take the oldest queued datagram: copies it into `buf` (truncating) and returns its
    /// full length and sender (`SocketAddr::V4` or `SocketAddr::V6`: a socket receives both
    /// families).
    #[must_use = "the datagram is taken off the queue: its length and sender are only reported here"]
    pub fn udp_recv_from(&mut self, h: UdpHandle, buf: &mut [u8]) -> Result<Option<(usize, SocketAddr)>, BadHandle> {
        self.udp_recv_with(h, |from, data| {
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            (data.len(), from)
        })
    }

    /// Take the oldest queued datagram, lending it to `f` in place in the socket's queue
    /// (no copy) with its sender; returns what `f` returned, or `None` if nothing is queued.
    /// The datagram is removed when `f` returns.
    pub fn udp_recv_with<R>(
        &mut self,
        h: UdpHandle,
        f: impl FnOnce(SocketAddr, &[u8]) -> R,
    ) -> Result<Option<R>, BadHandle> {
        self.core.udp.recv_with(h, &mut self.core.tcp.shared.mem, f)
    }

    /// Hand socket `h`'s datagrams to `handler` during [`Stack::poll`], straight from the
    /// received frame, instead of queueing them (datagrams already queued stay readable with
    /// [`Stack::udp_recv_with`]). Returns the handler it replaces; closing the socket drops it.
    pub fn udp_set_rx_handler(
        &mut self,
        h: UdpHandle,
        handler: Box<dyn UdpRxHandler>,
    ) -> Result<Option<Box<dyn UdpRxHandler>>, BadHandle> {
        Ok(self.core.udp.get_mut(h)?.handler.0.replace(handler))
    }

    /// Take socket `h`'s handler back (as `Box<dyn Any>` it downcasts to the type installed);
    /// from now on its datagrams are queued again.
    pub fn udp_take_rx_handler(&mut self, h: UdpHandle) -> Result<Option<Box<dyn UdpRxHandler>>, BadHandle> {
        Ok(self.core.udp.get_mut(h)?.handler.0.take())
    }

    /// Datagrams waiting on a socket.
    pub fn udp_queued(&self, h: UdpHandle) -> Result<usize, BadHandle> {
        Ok(self.core.udp.get(h)?.queue.len())
    }

    /// ICMP errors (port/host unreachable) received about datagrams this socket sent.
    pub fn udp_icmp_errors(&self, h: UdpHandle) -> Result<u64, BadHandle> {
        Ok(self.core.udp.get(h)?.icmp_errors)
    }

    /// Send an ICMP echo request with `payload_len` bytes (at least 8: the send time).
    #[must_use = "Ok(false) means the link is full and the echo request was not sent"]
    pub fn ping(&mut self, dst: impl Into<IpAddr>, seq: u16, payload_len: usize) -> Result<bool, PingError> {
        let dst = dst.into();
        let len = payload_len.max(STAMP_LEN);
        let ident = self.core.ping.ident;
        let now = self.core.env.now;
        // Above the MTU the request goes out in fragments, as `ping -s` does.
        let max = if dst.is_ipv6() { 65535 - 16 } else { 65535 - 28 };
        if len > max {
            return Err(PingError::TooLarge { len, max });
        }
        let mut data = vec![0u8; len];
        PingClient::fill_payload(&mut data[..len], now);
        match dst {
            IpAddr::V4(dst) => {
                let repr = IcmpRepr { message: IcmpMessage::EchoRequest { ident, seq }, data: &data[..len] };
                Ok(self.core.eg.send_icmp(&mut self.core.env, &mut self.link, dst, &repr)?)
            }
            IpAddr::V6(dst) => {
                let v6 = &mut self.core.v6;
                let routable = dst.is_multicast() || v6.next_hop(dst, now).is_some();
                if !routable || v6.source_for(dst).is_none() {
                    return Err(PingError::NoRoute(dst.into()));
                }
                let message = wire::Icmpv6Message::EchoRequest { ident, seq };
                let repr = wire::Icmpv6Repr { message, data: &data[..len] };
                Ok(v6.send_icmp(&mut self.core.env, &mut self.core.eg, &mut self.link, None, dst, &repr)?)
            }
        }
    }

    /// The next answered ping, if any.
    pub fn ping_reply(&mut self) -> Option<PingReply> {
        self.core.ping.take()
    }

    /// Bind a raw Ethernet socket to `ethertype` (not IPv4/ARP/VLAN, at least 0x0600).
    pub fn raw_bind(&mut self, ethertype: u16) -> Result<RawHandle, RawBindError> {
        self.core.raw.bind(ethertype)
    }

    /// Close a raw socket.
    pub fn raw_close(&mut self, h: RawHandle) -> Result<(), BadHandle> {
        self.core.raw.close(h)
    }

    /// Send `payload` in one Ethernet frame of the socket's EtherType to `dst`.
    #[must_use = "Ok(false) means the link is full and the frame was not sent: retry after a poll or count it lost"]
    pub fn raw_send(&mut self, h: RawHandle, dst: MacAddr, payload: &[u8]) -> Result<bool, RawSendError> {
        self.raw_send_with(h, dst, payload.len(), |buf| buf.copy_from_slice(payload))
    }

    /// [`Stack::raw_send`] of a `len`-byte payload that `fill` writes in place into the
    /// frame; `fill` gets exactly `len` bytes and is not called when the frame is refused.
    #[must_use = "Ok(false) means the link is full and the frame was not sent: retry after a poll or count it lost"]
    pub fn raw_send_with(
        &mut self,
        h: RawHandle,
        dst: MacAddr,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<bool, RawSendError> {
        if !self.core.raw.is_bound(h.0) {
            return Err(RawSendError::BadHandle);
        }
        self.core.eg.send_raw_with(&mut self.core.env, &mut self.link, h.0, dst, len, fill)
    }

    /// Take the oldest received raw frame's payload into `buf`; returns its length and sender.
    #[must_use = "the frame is taken off the queue: its length and sender are only reported here"]
    pub fn raw_recv(&mut self, h: RawHandle, buf: &mut [u8]) -> Result<Option<(usize, MacAddr)>, BadHandle> {
        let q = self.core.raw.queue_mut(h.0).ok_or(BadHandle)?;
        Ok(q.pop_into(buf).map(|(mac, n)| (n, mac)))
    }

    /// Take the oldest received raw frame's payload, lending it to `f` in place with the
    /// sender's MAC (no copy); returns what `f` returned, or `None` if nothing is queued.
    pub fn raw_recv_with<R>(
        &mut self,
        h: RawHandle,
        f: impl FnOnce(MacAddr, &[u8]) -> R,
    ) -> Result<Option<R>, BadHandle> {
        let q = self.core.raw.queue_mut(h.0).ok_or(BadHandle)?;
        Ok(q.pop_with(f))
    }
}
