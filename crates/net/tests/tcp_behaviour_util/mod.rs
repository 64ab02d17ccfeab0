//! Shared harness of the `tcp_behaviour_*` tests (smoltcp style): virtual time, exact segments.
//!
//! * [`Bench`]: one stack under test ("host", 10.0.0.2) whose far link end is held by the test,
//!   which plays the peer (10.0.0.1): segments are built with `TcpRepr`/`Ipv4Repr`/
//!   `EthernetRepr`, injected, and what the host sends is parsed back and compared exactly.
//! * [`Relay`]: two stacks whose frames the test carries across, logging every TCP segment
//!   and dropping the ones a filter picks (deterministic loss).

#![allow(dead_code)]

use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Recv, Stack, TcpHandle, TcpListener, TcpState};
use std::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::ethernet::ethertype;
use wire::ipv4::protocol;
use wire::{
    ArpOp, ArpRepr, EthernetFrame, EthernetRepr, Ipv4Packet, Ipv4Repr, MacAddr, TcpOptions, TcpRepr, TcpSegment,
};

pub use wire::tcp::flags::{ACK, FIN, PSH, RST, SYN};

/// The stack under test.
pub const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// The peer played by the test.
pub const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The peer's MAC address.
pub const PEER_MAC: MacAddr = MacAddr([0x02, 0xaa, 0, 0, 0, 1]);
/// The peer's initial sequence number in every test.
pub const PEER_ISS: u32 = 0x1000_0000;
/// Virtual time starts here (not at zero, so that timestamps are never 0).
pub const T0: Instant = Instant::from_millis(1_000);

/// Milliseconds as a `Duration`.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Seconds as a `Duration`.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// The timestamp clock of the stacks: milliseconds of virtual time.
pub fn ts_of(t: Instant) -> u32 {
    t.as_millis() as u32
}

/// A deterministic host configuration: fixed ISN secret, no gratuitous ARP, ARP entries that
/// never expire during a test.
pub fn host_config(ip: &str) -> Config {
    let mut c = Config::host(ip);
    c.tcp.secret = [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210];
    c.tcp.max_sessions = 16;
    // The exact-segment tests were written against Linux's 200 ms RTO floor and window
    // scale 7, with fixed buffers.
    c.tcp.min_rto = Duration::from_millis(200);
    c.tcp.window_scale = Some(7);
    c.tcp.rx_buffer_max = c.tcp.rx_buffer;
    c.tcp.tx_buffer_max = c.tcp.tx_buffer;
    c.gratuitous_arp = false;
    c.arp_ttl = Duration::from_secs(1_000_000);
    c
}

/// Configuration of the stack under test in a [`Bench`].
pub fn config() -> Config {
    host_config("10.0.0.2/24")
}

/// A deterministic test pattern.
pub fn pattern(n: usize) -> Vec<u8> {
    (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

/// One TCP segment: header and payload.
#[derive(Clone, PartialEq, Eq)]
pub struct Seg {
    pub repr: TcpRepr,
    pub payload: Vec<u8>,
}

impl Seg {
    /// A segment from `src_port` to `dst_port` without options or payload.
    pub fn new(src_port: u16, dst_port: u16, flags: u8, seq: u32, ack: u32, window: u16) -> Seg {
        Seg {
            repr: TcpRepr { src_port, dst_port, seq, ack, flags, window, urgent: 0, options: TcpOptions::default() },
            payload: vec![],
        }
    }

    /// With this payload.
    pub fn data(mut self, d: &[u8]) -> Seg {
        self.payload = d.to_vec();
        self
    }

    /// With these options.
    pub fn opts(mut self, o: TcpOptions) -> Seg {
        self.repr.options = o;
        self
    }

    /// With these SACK blocks.
    pub fn sack(mut self, blocks: &[(u32, u32)]) -> Seg {
        self.repr.options.sack_blocks = [None; 4];
        for (i, b) in blocks.iter().enumerate() {
            self.repr.options.sack_blocks[i] = Some(*b);
        }
        self
    }

    /// With this window field.
    pub fn win(mut self, w: u16) -> Seg {
        self.repr.window = w;
        self
    }

    /// With a timestamps option.
    pub fn ts(mut self, tsval: u32, tsecr: u32) -> Seg {
        self.repr.options.timestamps = Some((tsval, tsecr));
        self
    }

    pub fn flags(&self) -> u8 {
        self.repr.flags
    }
    pub fn seq(&self) -> u32 {
        self.repr.seq
    }
    pub fn ack(&self) -> u32 {
        self.repr.ack
    }
    pub fn window(&self) -> u16 {
        self.repr.window
    }
    pub fn len(&self) -> usize {
        self.payload.len()
    }
    /// Sequence space the segment occupies.
    pub fn seq_len(&self) -> u32 {
        self.payload.len() as u32 + (self.repr.flags & SYN != 0) as u32 + (self.repr.flags & FIN != 0) as u32
    }
}

pub fn flag_names(f: u8) -> String {
    let mut s = String::new();
    for (bit, c) in [(SYN, 'S'), (FIN, 'F'), (RST, 'R'), (PSH, 'P'), (ACK, '.')] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

impl fmt::Debug for Seg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.repr;
        write!(
            f,
            "{}>{} [{}] seq {} ack {} win {} len {}",
            r.src_port,
            r.dst_port,
            flag_names(r.flags),
            r.seq,
            r.ack,
            r.window,
            self.payload.len()
        )?;
        let o = &r.options;
        if o.mss.is_some()
            || o.window_scale.is_some()
            || o.sack_permitted
            || o.timestamps.is_some()
            || o.sack_blocks[0].is_some()
        {
            write!(f, " opts {{")?;
            if let Some(m) = o.mss {
                write!(f, " mss {m}")?;
            }
            if let Some(w) = o.window_scale {
                write!(f, " ws {w}")?;
            }
            if o.sack_permitted {
                write!(f, " sackOK")?;
            }
            if let Some((v, e)) = o.timestamps {
                write!(f, " ts {v}/{e}")?;
            }
            for (l, r) in o.sack_blocks.iter().flatten() {
                write!(f, " sack {l}-{r}")?;
            }
            write!(f, " }}")?;
        }
        Ok(())
    }
}

/// Parse a frame as Ethernet/IPv4/TCP with valid checksums: (source ip, dest ip, segment).
pub fn parse_tcp_frame(frame: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, Seg)> {
    let e = EthernetFrame::new_checked(frame).ok()?;
    if e.ethertype() != ethertype::IPV4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(e.payload()).ok()?;
    if ip.protocol() != protocol::TCP {
        return None;
    }
    assert!(ip.verify_checksum(), "bad IPv4 checksum");
    let seg = TcpSegment::new_checked(ip.payload()).expect("truncated TCP segment");
    assert!(seg.verify_checksum(ip.src(), ip.dst()), "bad TCP checksum");
    let repr = TcpRepr::parse(&seg).expect("bad TCP options");
    Some((ip.src(), ip.dst(), Seg { repr, payload: seg.payload().to_vec() }))
}

fn eth(src: MacAddr, dst: MacAddr, et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + payload.len()];
    EthernetRepr { src, dst, ethertype: et, vlan: None }.emit(&mut f).unwrap();
    f[14..].copy_from_slice(payload);
    f
}

/// Host under test plus the peer end of its link.
pub struct Bench {
    pub host: Stack<mem::MemLink>,
    wire: mem::MemLink,
    pub now: Instant,
    rx: FrameBatch,
    host_mac: MacAddr,
}

impl Bench {
    /// A host with `cfg` that has learned the peer's MAC address (from an ARP request).
    pub fn new(cfg: Config) -> Bench {
        let host_mac = cfg.mac;
        let (h, w) = mem::pair(LinkConfig::default());
        let mut b =
            Bench { host: Stack::new(cfg, h).unwrap(), wire: w, now: T0, rx: FrameBatch::new(256, 1600), host_mac };
        let mut req = [0u8; 28];
        ArpRepr {
            op: ArpOp::Request,
            sender_mac: PEER_MAC,
            sender_ip: PEER,
            target_mac: MacAddr::ZERO,
            target_ip: HOST,
        }
        .emit(&mut req)
        .unwrap();
        b.inject_frames(&[eth(PEER_MAC, MacAddr::BROADCAST, ethertype::ARP, &req)]);
        b.host.poll(b.now).unwrap();
        let frames = b.raw_collect();
        assert_eq!(frames.len(), 1, "one ARP reply");
        assert_eq!(b.host.arp_lookup(PEER), Some(PEER_MAC));
        b
    }

    fn inject_frames(&mut self, frames: &[Vec<u8>]) {
        let mut batch = FrameBatch::new(frames.len().max(1), 1600);
        for f in frames {
            assert!(batch.push(f));
        }
        if !frames.is_empty() {
            assert_eq!(self.wire.tx_batch(self.now, &mut batch).unwrap(), frames.len());
        }
    }

    fn raw_collect(&mut self) -> Vec<Vec<u8>> {
        let mut out = vec![];
        loop {
            self.rx.clear();
            if self.wire.rx_batch(self.now, &mut self.rx).unwrap() == 0 {
                return out;
            }
            out.extend(self.rx.iter().map(|f| f.to_vec()));
        }
    }

    /// The frame of a peer segment.
    pub fn frame(&self, s: &Seg) -> Vec<u8> {
        let hl = s.repr.header_len();
        let mut l4 = vec![0u8; hl + s.payload.len()];
        l4[hl..].copy_from_slice(&s.payload);
        s.repr.emit(&mut l4, PEER, HOST, s.payload.len()).unwrap();
        let mut ip = vec![0u8; 20 + l4.len()];
        Ipv4Repr {
            src: PEER,
            dst: HOST,
            protocol: protocol::TCP,
            payload_len: l4.len(),
            ttl: 64,
            ident: 7,
            dont_frag: true,
            dscp_ecn: 0,
        }
        .emit(&mut ip)
        .unwrap();
        ip[20..].copy_from_slice(&l4);
        eth(PEER_MAC, self.host_mac, ethertype::IPV4, &ip)
    }

    /// What the host put on the wire: TCP segments from HOST to PEER (anything else panics).
    pub fn collect(&mut self) -> Vec<Seg> {
        let frames = self.raw_collect();
        frames
            .iter()
            .map(|f| {
                let e = EthernetFrame::new_checked(&f[..]).unwrap();
                assert_eq!((e.src(), e.dst()), (self.host_mac, PEER_MAC));
                let (src, dst, seg) =
                    parse_tcp_frame(f).unwrap_or_else(|| panic!("host sent a non-TCP frame: {f:02x?}"));
                assert_eq!((src, dst), (HOST, PEER));
                seg
            })
            .collect()
    }

    /// Poll once at the current time and return what the host sent.
    pub fn poll(&mut self) -> Vec<Seg> {
        self.host.poll(self.now).unwrap();
        self.collect()
    }

    /// Send what the application calls queued (they are flushed at the end of a poll).
    pub fn flush(&mut self) -> Vec<Seg> {
        self.host.flush().unwrap();
        self.collect()
    }

    /// Inject peer segments (one batch), poll, return what the host sent.
    pub fn send_all(&mut self, segs: &[Seg]) -> Vec<Seg> {
        let frames: Vec<Vec<u8>> = segs.iter().map(|s| self.frame(s)).collect();
        self.inject_frames(&frames);
        // A poll takes one batch of frames: poll until all are in.
        let mut left = frames.len();
        while left > 0 {
            let n = self.host.poll(self.now).unwrap();
            assert!(n > 0, "the host did not take the injected frames");
            left -= n;
        }
        self.collect()
    }

    /// Inject one raw frame from the peer, poll, return what the host sent.
    pub fn send_frame(&mut self, frame: Vec<u8>) -> Vec<Seg> {
        self.inject_frames(&[frame]);
        self.host.poll(self.now).unwrap();
        self.collect()
    }

    /// Inject one peer segment, poll, return what the host sent.
    pub fn send(&mut self, s: Seg) -> Vec<Seg> {
        self.send_all(&[s])
    }

    /// Move time forward by `d`, poll, return what the host sent.
    pub fn advance(&mut self, d: Duration) -> Vec<Seg> {
        self.now = self.now + d;
        self.poll()
    }

    /// Jump from timer deadline to timer deadline until the host sends something or `limit`
    /// passes; returns the instant and the segments.
    pub fn next_output(&mut self, limit: Duration) -> Option<(Instant, Vec<Seg>)> {
        let end = self.now + limit;
        loop {
            let next = match self.host.next_deadline() {
                Some(t) if t <= end => t.max(self.now),
                _ => {
                    self.now = end;
                    let out = self.poll();
                    return if out.is_empty() { None } else { Some((self.now, out)) };
                }
            };
            self.now = next;
            let out = self.poll();
            if !out.is_empty() {
                return Some((self.now, out));
            }
            if self.now == end {
                return None;
            }
            // A deadline that produced nothing (a timer re-armed later, a sweep): look again
            // strictly later.
            if self.host.next_deadline().is_some_and(|t| t <= self.now) {
                self.now = self.now + Duration::from_nanos(1);
            }
        }
    }

    /// Host-side counter value.
    pub fn counter(&self, c: net::Counter) -> u64 {
        self.host.counters().get(c)
    }
}

/// What the peer offers in its SYN.
#[derive(Debug, Clone, Copy)]
pub struct PeerOpts {
    pub mss: Option<u16>,
    pub ws: Option<u8>,
    pub sack: bool,
    /// Timestamps: the peer's TSval in the SYN.
    pub ts: Option<u32>,
    /// Window field of the peer's segments.
    pub window: u16,
}

impl Default for PeerOpts {
    fn default() -> Self {
        PeerOpts { mss: Some(1460), ws: None, sack: false, ts: None, window: 65535 }
    }
}

impl PeerOpts {
    pub fn syn_options(&self) -> TcpOptions {
        TcpOptions {
            mss: self.mss,
            window_scale: self.ws,
            sack_permitted: self.sack,
            timestamps: self.ts.map(|v| (v, 0)),
            sack_blocks: [None; 4],
        }
    }
}

/// A connection between the host and the peer played by the test.
#[derive(Debug, Clone, Copy)]
pub struct Conn {
    pub h: TcpHandle,
    pub host_port: u16,
    pub peer_port: u16,
    /// Host's initial sequence number.
    pub iss: u32,
    /// Peer's window field.
    pub window: u16,
}

impl Conn {
    /// A segment the peer sends (peer to host ports).
    pub fn p(&self, flags: u8, seq: u32, ack: u32) -> Seg {
        Seg::new(self.peer_port, self.host_port, flags, seq, ack, self.window)
    }

    /// A segment the host is expected to send.
    pub fn h(&self, flags: u8, seq: u32, ack: u32, window: u16) -> Seg {
        Seg::new(self.host_port, self.peer_port, flags, seq, ack, window)
    }
}

/// Passive open: the host listens on `port` (backlog 8), the peer connects from `peer_port`
/// with `opts`, answering the SYN-ACK after `rtt`. Returns the accepted connection and the
/// SYN-ACK the host sent.
pub fn passive_open(
    b: &mut Bench,
    port: u16,
    peer_port: u16,
    opts: PeerOpts,
    rtt: Duration,
) -> (Conn, TcpListener, Seg) {
    let l = b.host.tcp_listen(port, 8).unwrap();
    let (c, synack) = passive_open_on(b, l, peer_port, opts, rtt);
    (c, l, synack)
}

/// Passive open on an existing listener.
pub fn passive_open_on(b: &mut Bench, l: TcpListener, peer_port: u16, opts: PeerOpts, rtt: Duration) -> (Conn, Seg) {
    let port = l.port();
    let syn = Seg::new(peer_port, port, SYN, PEER_ISS, 0, opts.window).opts(opts.syn_options());
    let out = b.send(syn);
    assert_eq!(out.len(), 1, "one SYN-ACK: {out:?}");
    let synack = out[0].clone();
    assert_eq!(synack.flags(), SYN | ACK);
    assert_eq!(synack.ack(), PEER_ISS.wrapping_add(1));
    let iss = synack.seq();
    b.now = b.now + rtt;
    let mut ack = Seg::new(peer_port, port, ACK, PEER_ISS.wrapping_add(1), iss.wrapping_add(1), opts.window);
    if let (Some(v), Some((hv, _))) = (opts.ts, synack.repr.options.timestamps) {
        ack = ack.ts(v, hv);
    }
    assert_eq!(b.send(ack), vec![], "nothing answers the final ACK");
    let h = b.host.tcp_accept(l).expect("accepted");
    assert_eq!(b.host.tcp_state(h).unwrap(), TcpState::Established);
    (Conn { h, host_port: port, peer_port, iss, window: opts.window }, synack)
}

/// Active open: the host connects from `host_port` to the peer's `peer_port`; the peer answers
/// the SYN after `rtt` with a SYN-ACK carrying `opts`. Returns the connection and the SYN.
pub fn active_open(b: &mut Bench, host_port: u16, peer_port: u16, opts: PeerOpts, rtt: Duration) -> (Conn, Seg) {
    let h = b.host.tcp_connect_from(host_port, SocketAddrV4::new(PEER, peer_port)).unwrap();
    let out = b.flush();
    assert_eq!(out.len(), 1, "one SYN: {out:?}");
    let syn = out[0].clone();
    assert_eq!(syn.flags(), SYN);
    let iss = syn.seq();
    b.now = b.now + rtt;
    let mut o = opts.syn_options();
    if let (Some(v), Some((hv, _))) = (opts.ts, syn.repr.options.timestamps) {
        o.timestamps = Some((v, hv));
    }
    let synack = Seg::new(peer_port, host_port, SYN | ACK, PEER_ISS, iss.wrapping_add(1), opts.window).opts(o);
    let out = b.send(synack);
    assert_eq!(out.len(), 1, "the handshake's final ACK: {out:?}");
    assert_eq!((out[0].flags(), out[0].seq(), out[0].ack()), (ACK, iss.wrapping_add(1), PEER_ISS.wrapping_add(1)));
    assert_eq!(b.host.tcp_connect_result(h).unwrap(), Some(Ok(())));
    (Conn { h, host_port, peer_port, iss, window: opts.window }, syn)
}

/// Direction of a relayed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    AtoB,
    BtoA,
}

/// A logged TCP segment.
#[derive(Debug, Clone)]
pub struct Logged {
    pub at: Instant,
    pub dir: Dir,
    pub seg: Seg,
    pub dropped: bool,
}

type Filter = Box<dyn FnMut(Dir, &Seg) -> bool>;

/// Two stacks (a: 10.0.0.1, b: 10.0.0.2) whose frames the test carries across.
pub struct Relay {
    pub a: Stack<mem::MemLink>,
    pub b: Stack<mem::MemLink>,
    wa: mem::MemLink,
    wb: mem::MemLink,
    pub now: Instant,
    batch: FrameBatch,
    out: FrameBatch,
    pub log: Vec<Logged>,
    /// Returns true to drop a segment.
    pub drop: Filter,
    /// Time per step (one-way latency is one step).
    pub step_len: Duration,
}

impl Relay {
    pub fn new(ca: Config, cb: Config) -> Relay {
        let (la, wa) = mem::pair(LinkConfig::default());
        let (lb, wb) = mem::pair(LinkConfig::default());
        let mut a = Stack::new(ca, la).unwrap();
        let mut b = Stack::new(cb, lb).unwrap();
        // The stacks' clocks start at T0 (application calls use the time of the last poll).
        a.poll(T0).unwrap();
        b.poll(T0).unwrap();
        Relay {
            a,
            b,
            wa,
            wb,
            now: T0,
            batch: FrameBatch::new(512, 1600),
            out: FrameBatch::new(512, 1600),
            log: vec![],
            drop: Box::new(|_, _| false),
            step_len: Duration::from_micros(100),
        }
    }

    /// Two default stacks.
    pub fn pair() -> Relay {
        Relay::new(host_config("10.0.0.1/24"), host_config("10.0.0.2/24"))
    }

    fn pump(&mut self, dir: Dir) {
        loop {
            self.batch.clear();
            let (from, to) = match dir {
                Dir::AtoB => (&mut self.wa, &mut self.wb),
                Dir::BtoA => (&mut self.wb, &mut self.wa),
            };
            if from.rx_batch(self.now, &mut self.batch).unwrap() == 0 {
                return;
            }
            self.out.clear();
            for f in self.batch.iter() {
                let mut dropped = false;
                if let Some((_, _, seg)) = parse_tcp_frame(f) {
                    dropped = (self.drop)(dir, &seg);
                    self.log.push(Logged { at: self.now, dir, seg, dropped });
                }
                if !dropped {
                    assert!(self.out.push(f));
                }
            }
            let n = self.out.len();
            assert_eq!(to.tx_batch(self.now, &mut self.out).unwrap(), n, "relay link full");
        }
    }

    /// Flush both stacks' application-queued frames and carry them across.
    pub fn flush(&mut self) {
        self.a.flush().unwrap();
        self.b.flush().unwrap();
        self.pump(Dir::AtoB);
        self.pump(Dir::BtoA);
    }

    /// One step: time moves on, both stacks poll, frames cross.
    pub fn step(&mut self) {
        self.now = self.now + self.step_len;
        self.a.poll(self.now).unwrap();
        self.b.poll(self.now).unwrap();
        self.pump(Dir::AtoB);
        self.pump(Dir::BtoA);
    }

    /// Step until `f` holds (checked before each step) or `limit` passes.
    pub fn run_until(&mut self, limit: Duration, mut f: impl FnMut(&mut Self) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if f(self) {
                return true;
            }
            self.step();
        }
        f(self)
    }

    /// TCP segments logged in direction `dir`.
    pub fn segs(&self, dir: Dir) -> Vec<Seg> {
        self.log.iter().filter(|l| l.dir == dir).map(|l| l.seg.clone()).collect()
    }
}

/// a connects to b's `port` (b listens with backlog 8); returns (client on a, server on b).
pub fn relay_connect(r: &mut Relay, port: u16) -> (TcpHandle, TcpHandle) {
    let l = r.b.tcp_listen(port, 8).unwrap();
    let c = r.a.tcp_connect(SocketAddrV4::new(r.b.ip(), port)).unwrap();
    let mut server = None;
    assert!(r.run_until(Duration::from_secs(5), |r| {
        if server.is_none() {
            server = r.b.tcp_accept(l);
        }
        server.is_some() && r.a.tcp_connect_result(c).unwrap() == Some(Ok(()))
    }));
    (c, server.unwrap())
}

/// Read everything available on `h` into `out`; returns true at end of stream.
pub fn drain<L: Link>(s: &mut Stack<L>, h: TcpHandle, out: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 16384];
    loop {
        match s.tcp_recv(h, &mut buf).unwrap() {
            Recv::Data(n) => out.extend_from_slice(&buf[..n]),
            Recv::WouldBlock => return false,
            Recv::Eof => return true,
        }
    }
}
