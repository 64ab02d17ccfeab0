//! Structure-aware fuzzing of a whole host: the input describes a sequence of VALID frames
//! (correct IPv4 header, TCP, UDP and ICMP checksums, built with `wire`) whose fields are
//! drawn from the cases that matter: source and destination addresses from a mix (the
//! host's subnet, off-link, 0.0.0.0, 127/8, multicast, limited and subnet broadcast, 240/4,
//! the host's own address), random ports, TCP flags and options, IPv4 options, fragment
//! fields (MF, offsets, overlapping pieces of one datagram) and payloads.
//!
//! They go to a host (10.0.0.2/24, optionally with a default gateway) that has TCP listeners,
//! UDP sockets and live TCP sessions in several states, set up first against a second
//! in-process stack (10.0.0.1) over a `link::mem` pair on virtual time. Each frame enters the
//! host through its link and one `poll`; after every frame:
//! - `poll` returned `Ok` (a mem link never fails, so no error may come out of the stack), and
//! - `rx_frames == rx_delivered + rx_drops()`: every received frame is accounted for once.
//!
//! (Before the receive path gave every frame a verdict, this target found `Err(NoRoute)` out
//! of `poll` for an echo from an off-link source within about 10,000 runs.)
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use link::{mem, FrameBatch, Instant, Link, LinkConfig};
use net::{Config, Counter, Stack, TcpHandle};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;
use wire::{
    protocol, EthernetRepr, IcmpMessage, IcmpRepr, Ipv4Packet, MacAddr, TcpOptions, TcpRepr, TcpSegment, UdpRepr,
    VlanTag,
};

type S = Stack<mem::MemLink>;

const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const GATEWAY: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 254);
/// A subnet address nobody answers ARP for (a half-open connection's peer).
const GHOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 77);
const GHOST_PORT: u16 = 1234;
const GHOST_ISS: u32 = 1000;
const LISTEN_PORTS: [u16; 2] = [80, 22];
const UDP_PORTS: [u16; 2] = [7, 53];
const PEER_LISTEN: u16 = 8080;
/// Frames per input at most (keeps each run short).
const MAX_FRAMES: usize = 48;
/// Largest L4 payload built.
const MAX_PAYLOAD: usize = 3000;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum AddrSpec {
    Peer,
    Subnet(u8),
    OffLink(u8),
    Zero,
    ZeroNet(u8),
    Loopback(u8),
    Multicast(u8, u8),
    Limited,
    ClassE(u8),
    Own,
    SubnetBroadcast,
    Gateway,
    Any(u32),
}

impl AddrSpec {
    fn addr(self) -> Ipv4Addr {
        match self {
            AddrSpec::Peer => PEER,
            AddrSpec::Subnet(x) => Ipv4Addr::new(10, 0, 0, x),
            AddrSpec::OffLink(x) => Ipv4Addr::new(192, 168, 99, x),
            AddrSpec::Zero => Ipv4Addr::UNSPECIFIED,
            AddrSpec::ZeroNet(x) => Ipv4Addr::new(0, 0, 0, x),
            AddrSpec::Loopback(x) => Ipv4Addr::new(127, 0, 0, x),
            AddrSpec::Multicast(a, b) => Ipv4Addr::new(224, 0, a, b),
            AddrSpec::Limited => Ipv4Addr::BROADCAST,
            AddrSpec::ClassE(x) => Ipv4Addr::new(240, 0, 0, x),
            AddrSpec::Own => HOST,
            AddrSpec::SubnetBroadcast => Ipv4Addr::new(10, 0, 0, 255),
            AddrSpec::Gateway => GATEWAY,
            AddrSpec::Any(a) => Ipv4Addr::from(a),
        }
    }
}

/// Destinations: mostly the host (else a frame only meets the not-for-us check).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum DstSpec {
    Host,
    Broadcast,
    Any(AddrSpec),
}

impl DstSpec {
    fn addr(self) -> Ipv4Addr {
        match self {
            DstSpec::Host => HOST,
            DstSpec::Broadcast => Ipv4Addr::new(10, 0, 0, 255),
            DstSpec::Any(a) => a.addr(),
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum DstMac {
    Host,
    Broadcast,
    Other([u8; 6]),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum SrcMac {
    Peer,
    Unicast(u8),
    Any([u8; 6]),
}

#[derive(Arbitrary, Debug, Clone)]
enum IpOpt {
    End,
    Nop,
    /// Record route with `slots` 4-byte slots and pointer `ptr` (4 when fresh).
    RecordRoute {
        slots: u8,
        ptr: u8,
    },
    /// Timestamp option with flag and slots.
    Timestamp {
        slots: u8,
        ptr: u8,
        flag: u8,
    },
    RouterAlert,
    /// Any option, length byte as given (may be malformed).
    Raw {
        kind: u8,
        len: u8,
        data: Vec<u8>,
    },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Piece {
    start8: u8,
    len8: u8,
    more: bool,
}

#[derive(Arbitrary, Debug, Clone)]
enum Frag {
    None,
    DontFragment,
    /// The whole datagram sent as one fragment with these fields.
    Single {
        ident: u8,
        more: bool,
        offset: u16,
    },
    /// The datagram cut into pieces (may overlap, leave holes, repeat) sharing one ident.
    Pieces {
        ident: u8,
        pieces: Vec<Piece>,
    },
}

#[derive(Arbitrary, Debug, Clone)]
struct TcpOpts {
    mss: Option<u16>,
    window_scale: Option<u8>,
    sack_permitted: bool,
    timestamps: Option<(u32, u32)>,
    sack: Vec<(i16, u16)>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum TcpTarget {
    /// A live connection of the host (index into its list): addresses and ports follow it.
    Session(u8),
    /// A listening port, from this source port.
    Listener(u8, u16),
    /// Any ports.
    Ports(u16, u16),
}

#[derive(Arbitrary, Debug, Clone)]
struct TcpSpec {
    target: TcpTarget,
    flags: u8,
    /// For sessions: offsets from the live sequence numbers; else the raw numbers.
    seq: i32,
    ack: i32,
    near: bool,
    window: u16,
    urgent: u16,
    opts: TcpOpts,
    /// Raw option bytes instead of the structured ones (may be malformed).
    raw_opts: Option<Vec<u8>>,
}

#[derive(Arbitrary, Debug, Clone)]
enum IcmpSpec {
    EchoRequest {
        ident: u16,
        seq: u16,
    },
    EchoReply {
        ident: u16,
        seq: u16,
    },
    /// Destination unreachable (code) quoting a UDP datagram the host might have sent.
    Unreachable {
        code: u8,
        quote_port: u16,
        quote_len: u8,
    },
    TimeExceeded {
        code: u8,
    },
    Other {
        ty: u8,
        code: u8,
        rest: [u8; 4],
    },
}

#[derive(Arbitrary, Debug, Clone)]
enum L4Spec {
    Tcp(TcpSpec),
    Udp { sport: u16, dport: Option<u16>, bound: u8, zero_checksum: bool },
    Icmp(IcmpSpec),
    Other { proto: u8 },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Action {
    Nothing,
    /// Advance virtual time by this many milliseconds.
    Advance(u16),
    /// Advance by seconds (timers: retransmission, TIME-WAIT, ARP).
    AdvanceSecs(u8),
    /// The host sends on one of its connections.
    Send(u8, u16),
    /// The host reads from one of its connections.
    Recv(u8),
    /// The host closes one of its connections.
    Close(u8),
    /// The host sends a UDP datagram to the frame's source.
    UdpReply(u16),
    /// The host pings the frame's source.
    Ping,
}

#[derive(Arbitrary, Debug, Clone)]
struct FrameSpec {
    src: AddrSpec,
    dst: DstSpec,
    src_mac: SrcMac,
    dst_mac: DstMac,
    vlan: Option<u16>,
    ttl: u8,
    tos: u8,
    ip_opts: Vec<IpOpt>,
    frag: Frag,
    l4: L4Spec,
    payload_len: u16,
    payload_byte: u8,
    action: Action,
}

#[derive(Arbitrary, Debug)]
struct Input {
    gateway: bool,
    frames: Vec<FrameSpec>,
}

/// One of the host's connections (or the half-open one, which has no handle yet), with its
/// addresses and sequence numbers as last seen (kept when a close gives up the handle, so
/// segments can still aim at it in TIME-WAIT and after).
struct Live {
    h: Option<TcpHandle>,
    remote: SocketAddrV4,
    local_port: u16,
    /// The host's next sequence number (what the peer acknowledges).
    snd_nxt: u32,
    /// The next sequence number the host expects.
    rcv_nxt: u32,
}

/// The host, its peer, and the host's connections in several states.
struct Bench {
    host: S,
    peer: S,
    now: Instant,
    live: Vec<Live>,
    batch: FrameBatch,
    peer_mac: MacAddr,
}

fn config(cidr: &str) -> Config {
    let mut c = Config::host(cidr);
    c.tcp.secret = [7, 9];
    c.tcp.max_sessions = 24;
    c.tcp.tx_buffer = 4096;
    c.tcp.rx_buffer = 4096;
    c.socket_rx_queue = 8;
    c.arp_max_pending = 16;
    c.arp_cache_size = 16;
    c
}

impl Bench {
    fn new(gateway: bool) -> Bench {
        let (lh, lp) = mem::pair(LinkConfig::default().depth(64));
        let mut hc = config("10.0.0.2/24");
        if gateway {
            hc.gateway = Some(GATEWAY);
        }
        let mut host = Stack::new(hc, lh).expect("valid config");
        let mut peer = Stack::new(config("10.0.0.1/24"), lp).expect("valid config");
        let listeners: Vec<_> = LISTEN_PORTS.iter().map(|&p| host.tcp_listen(p, 8).expect("free port")).collect();
        for p in UDP_PORTS {
            host.udp_bind(p).expect("free port");
        }
        let peer_listener = peer.tcp_listen(PEER_LISTEN, 4).expect("free port");
        let peer_conns: Vec<_> =
            (0..6).map(|_| peer.tcp_connect(SocketAddrV4::new(HOST, 80)).expect("session free")).collect();
        // The host as client: one established, one waiting in SYN-SENT for an ARP reply.
        let active = host.tcp_connect(SocketAddrV4::new(PEER, PEER_LISTEN)).expect("session free");
        let stuck = host.tcp_connect(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 99), 80)).expect("session free");
        let peer_mac = peer.mac();
        let mut b =
            Bench { host, peer, now: Instant::ZERO, live: Vec::new(), batch: FrameBatch::new(4, 2048), peer_mac };
        b.settle(40);
        let mut accepted = Vec::new();
        while let Some(h) = b.host.tcp_accept(listeners[0]) {
            accepted.push(h);
        }
        while b.peer.tcp_accept(peer_listener).is_some() {}
        // Some data both ways on the first two.
        for &h in accepted.iter().take(2) {
            let _ = b.host.tcp_send(h, &[0x55; 3000]);
        }
        for &c in peer_conns.iter().take(2) {
            let _ = b.peer.tcp_send(c, &[0xaa; 2000]);
        }
        // 2: the host shuts down (FIN-WAIT-2). 3: the peer closes (CLOSE-WAIT). 4: the peer,
        // then the host (LAST-ACK until the peer's next poll). 5: the host, then the peer
        // (TIME-WAIT). Shutdown rather than close keeps the host's handles.
        if let Some(&h) = accepted.get(2) {
            let _ = b.host.tcp_shutdown(h);
        }
        let _ = b.peer.tcp_close(peer_conns[3]);
        let _ = b.peer.tcp_close(peer_conns[4]);
        if let Some(&h) = accepted.get(5) {
            let _ = b.host.tcp_shutdown(h);
        }
        b.settle(10);
        let _ = b.peer.tcp_close(peer_conns[5]);
        b.settle(10);
        if let Some(&h) = accepted.get(4) {
            let _ = b.host.tcp_shutdown(h);
        }
        // A half-open connection (SYN-RECEIVED): a SYN from a subnet address that never answers.
        let syn = TcpRepr {
            src_port: GHOST_PORT,
            dst_port: 80,
            seq: GHOST_ISS,
            ack: 0,
            flags: wire::flags::SYN,
            window: 8192,
            urgent: 0,
            options: TcpOptions { mss: Some(1460), ..TcpOptions::default() },
        };
        let f = build_tcp(b.peer_mac, b.host.mac(), GHOST, HOST, &syn, &[]);
        b.push(&f);
        b.poll_host();
        let ghost = Live {
            h: None,
            remote: SocketAddrV4::new(GHOST, GHOST_PORT),
            local_port: 80,
            snd_nxt: 0,
            rcv_nxt: GHOST_ISS.wrapping_add(1),
        };
        b.live = accepted.into_iter().chain([active, stuck]).filter_map(|h| b.live_of(h)).chain([ghost]).collect();
        b.check();
        b
    }

    fn settle(&mut self, rounds: usize) {
        for _ in 0..rounds {
            self.now = self.now + Duration::from_micros(200);
            self.poll_host();
            let _ = self.peer.poll(self.now);
        }
    }

    /// Offer a frame to the host's link (from the peer's side).
    fn push(&mut self, frame: &[u8]) {
        self.batch.clear();
        if !self.batch.push(frame) {
            return;
        }
        while !self.batch.is_empty() {
            let n = self.peer.link_mut().tx_batch(self.now, &mut self.batch).expect("mem link does not fail");
            if n == 0 {
                // The ring is full: let the host take what waits.
                self.poll_host();
            }
        }
    }

    fn poll_host(&mut self) {
        match self.host.poll(self.now) {
            Ok(_) => {}
            Err(e) => panic!("poll failed on a mem link: {e:?}"),
        }
    }

    fn check(&self) {
        let c = self.host.counters();
        let (rx, delivered, drops) = (c.get(Counter::rx_frames), c.get(Counter::rx_delivered), c.rx_drops());
        assert_eq!(rx, delivered + drops, "frames {rx} != delivered {delivered} + drops {drops}");
    }

    fn live_of(&self, h: TcpHandle) -> Option<Live> {
        let st = self.host.tcp_stats(h).ok()?;
        Some(Live {
            h: Some(h),
            remote: match st.remote? {
                std::net::SocketAddr::V4(a) => a,
                std::net::SocketAddr::V6(_) => return None,
            },
            local_port: st.local_port,
            snd_nxt: st.snd_nxt,
            rcv_nxt: st.rcv_nxt,
        })
    }

    /// Connection `i` (modulo their number), its numbers refreshed if its handle is still open.
    fn session(&mut self, i: u8) -> &Live {
        let i = usize::from(i) % self.live.len();
        if let Some(fresh) = self.live[i].h.and_then(|h| self.live_of(h)) {
            self.live[i] = fresh;
        }
        &self.live[i]
    }

    fn handle(&self, i: u8) -> Option<TcpHandle> {
        self.live.get(usize::from(i) % self.live.len().max(1)).and_then(|l| l.h)
    }
}

fn eth(src: MacAddr, dst: MacAddr, vlan: Option<u16>, out: &mut Vec<u8>) {
    let repr = EthernetRepr { src, dst, ethertype: wire::ethertype::IPV4, vlan: vlan.map(VlanTag::from_tci) };
    let hl = repr.header_len();
    out.resize(hl, 0);
    repr.emit(out).expect("room for the header");
}

/// One Ethernet + IPv4 (no options) + TCP frame with valid checksums.
fn build_tcp(src_mac: MacAddr, dst_mac: MacAddr, src: Ipv4Addr, dst: Ipv4Addr, t: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let mut l4 = vec![0u8; t.header_len() + payload.len()];
    l4[t.header_len()..].copy_from_slice(payload);
    t.emit(&mut l4, src, dst, payload.len()).expect("room for the segment");
    let mut f = Vec::new();
    eth(src_mac, dst_mac, None, &mut f);
    ip_packet(&mut f, src, dst, protocol::TCP, 64, 0, &[], 0, false, true, &l4);
    f
}

/// Append an IPv4 header with `opts` (padded to 4 bytes, at most 40) and `l4`; fill the checksum.
#[allow(clippy::too_many_arguments)]
fn ip_packet(
    out: &mut Vec<u8>,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    ttl: u8,
    tos: u8,
    opts: &[u8],
    ident: u16,
    more: bool,
    df: bool,
    l4: &[u8],
) {
    ip_fragment(out, src, dst, proto, ttl, tos, opts, ident, more, df, 0, l4)
}

#[allow(clippy::too_many_arguments)]
fn ip_fragment(
    out: &mut Vec<u8>,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    proto: u8,
    ttl: u8,
    tos: u8,
    opts: &[u8],
    ident: u16,
    more: bool,
    df: bool,
    offset8: u16,
    data: &[u8],
) {
    let start = out.len();
    let ol = opts.len().min(40);
    let hl = 20 + ol.div_ceil(4) * 4;
    let total = (hl + data.len()).min(usize::from(u16::MAX));
    out.resize(start + hl, 0);
    let h = &mut out[start..];
    h[0] = 0x40 | (hl / 4) as u8;
    h[1] = tos;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[4..6].copy_from_slice(&ident.to_be_bytes());
    let flags_frag = (u16::from(df) << 14) | (u16::from(more) << 13) | (offset8 & 0x1fff);
    h[6..8].copy_from_slice(&flags_frag.to_be_bytes());
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    h[20..20 + ol].copy_from_slice(&opts[..ol]);
    out.extend_from_slice(&data[..total - hl]);
    let mut ip = Ipv4Packet::new_unchecked(&mut out[start..]);
    ip.fill_checksum();
}

fn ip_options(opts: &[IpOpt]) -> Vec<u8> {
    let mut v = Vec::new();
    for o in opts {
        match o {
            IpOpt::End => v.push(0),
            IpOpt::Nop => v.push(1),
            IpOpt::RecordRoute { slots, ptr } => {
                let n = usize::from(slots % 10);
                v.extend_from_slice(&[7, (3 + 4 * n) as u8, *ptr]);
                v.extend(std::iter::repeat_n(0, 4 * n));
            }
            IpOpt::Timestamp { slots, ptr, flag } => {
                let n = usize::from(slots % 9);
                v.extend_from_slice(&[68, (4 + 4 * n) as u8, *ptr, flag & 0x0f]);
                v.extend(std::iter::repeat_n(0, 4 * n));
            }
            IpOpt::RouterAlert => v.extend_from_slice(&[148, 4, 0, 0]),
            IpOpt::Raw { kind, len, data } => {
                v.extend_from_slice(&[*kind, *len]);
                v.extend(data.iter().take(38));
            }
        }
        if v.len() >= 40 {
            break;
        }
    }
    v.truncate(40);
    v
}

/// The transport part of a frame, the addresses it must travel with, and its protocol.
fn build_l4(b: &mut Bench, spec: &FrameSpec, src: &mut Ipv4Addr, dst: &mut Ipv4Addr) -> (u8, Vec<u8>) {
    let plen = usize::from(spec.payload_len) % (MAX_PAYLOAD + 1);
    let payload = vec![spec.payload_byte; plen];
    match &spec.l4 {
        L4Spec::Tcp(t) => {
            let (sport, dport, seq, ack) = match t.target {
                TcpTarget::Session(i) => {
                    let l = b.session(i);
                    *src = *l.remote.ip();
                    *dst = HOST;
                    let (ds, da) = if t.near {
                        ((t.seq as i16) as u32, (t.ack as i16) as u32)
                    } else {
                        (t.seq as u32, t.ack as u32)
                    };
                    (l.remote.port(), l.local_port, l.rcv_nxt.wrapping_add(ds), l.snd_nxt.wrapping_add(da))
                }
                TcpTarget::Listener(i, sport) => {
                    (sport, LISTEN_PORTS[usize::from(i) % LISTEN_PORTS.len()], t.seq as u32, t.ack as u32)
                }
                TcpTarget::Ports(s, d) => (s, d, t.seq as u32, t.ack as u32),
            };
            let mut options = TcpOptions {
                mss: t.opts.mss,
                window_scale: t.opts.window_scale,
                sack_permitted: t.opts.sack_permitted,
                timestamps: t.opts.timestamps,
                ..TcpOptions::default()
            };
            for (slot, &(off, len)) in options.sack_blocks.iter_mut().zip(t.opts.sack.iter()) {
                let left = ack.wrapping_add(off as i32 as u32);
                *slot = Some((left, left.wrapping_add(u32::from(len))));
            }
            let repr = TcpRepr {
                src_port: sport,
                dst_port: dport,
                seq,
                ack,
                flags: t.flags,
                window: t.window,
                urgent: t.urgent,
                options,
            };
            match &t.raw_opts {
                None => {
                    let hl = repr.header_len();
                    let mut l4 = vec![0u8; hl + plen];
                    l4[hl..].copy_from_slice(&payload);
                    if repr.emit(&mut l4, *src, *dst, plen).is_err() {
                        // Options that do not fit: send none.
                        let r = TcpRepr { options: TcpOptions::default(), ..repr };
                        l4 = vec![0u8; r.header_len() + plen];
                        l4[r.header_len()..].copy_from_slice(&payload);
                        r.emit(&mut l4, *src, *dst, plen).expect("room for the segment");
                    }
                    (protocol::TCP, l4)
                }
                Some(raw) => {
                    let ol = (raw.len().min(40)).div_ceil(4) * 4;
                    let hl = 20 + ol;
                    let r = TcpRepr { options: TcpOptions::default(), ..repr };
                    let mut l4 = vec![0u8; hl + plen];
                    r.emit(&mut l4[..20], *src, *dst, 0).expect("room for the header");
                    l4[12] = ((hl / 4) as u8) << 4;
                    let n = raw.len().min(40);
                    l4[20..20 + n].copy_from_slice(&raw[..n]);
                    l4[hl..].copy_from_slice(&payload);
                    TcpSegment::new_unchecked(&mut l4[..]).fill_checksum(*src, *dst);
                    (protocol::TCP, l4)
                }
            }
        }
        L4Spec::Udp { sport, dport, bound, zero_checksum } => {
            let dport = dport.unwrap_or(UDP_PORTS[usize::from(*bound) % UDP_PORTS.len()]);
            let mut l4 = vec![0u8; 8 + plen];
            l4[8..].copy_from_slice(&payload);
            UdpRepr { src_port: *sport, dst_port: dport }
                .emit(&mut l4, *src, *dst, plen)
                .expect("room for the datagram");
            if *zero_checksum {
                l4[6] = 0;
                l4[7] = 0;
            }
            (protocol::UDP, l4)
        }
        L4Spec::Icmp(i) => {
            let quote;
            let (message, data): (IcmpMessage, &[u8]) = match *i {
                IcmpSpec::EchoRequest { ident, seq } => (IcmpMessage::EchoRequest { ident, seq }, &payload),
                IcmpSpec::EchoReply { ident, seq } => (IcmpMessage::EchoReply { ident, seq }, &payload),
                IcmpSpec::Unreachable { code, quote_port, quote_len } => {
                    // Quote a datagram from the host's UDP port to the frame's source.
                    let mut u = vec![0u8; 8 + 8];
                    let _ = UdpRepr { src_port: UDP_PORTS[0], dst_port: quote_port }.emit(&mut u, HOST, *src, 8);
                    let mut q = Vec::new();
                    ip_packet(&mut q, HOST, *src, protocol::UDP, 64, 0, &[], 1, false, true, &u);
                    q.truncate(usize::from(quote_len).max(1));
                    quote = q;
                    (IcmpMessage::DestUnreachable { code, next_hop_mtu: u16::from(quote_len).wrapping_mul(29) }, &quote)
                }
                IcmpSpec::TimeExceeded { code } => (IcmpMessage::TimeExceeded { code }, &payload),
                IcmpSpec::Other { ty, code, rest } => (IcmpMessage::from_header(ty, code, rest), &payload),
            };
            let repr = IcmpRepr { message, data };
            let mut l4 = vec![0u8; repr.buffer_len()];
            repr.emit(&mut l4).expect("room for the message");
            (protocol::ICMP, l4)
        }
        L4Spec::Other { proto } => (*proto, payload),
    }
}

/// The frames (one, or several fragments) `spec` describes.
fn build(b: &mut Bench, spec: &FrameSpec) -> Vec<Vec<u8>> {
    let mut src = spec.src.addr();
    let mut dst = spec.dst.addr();
    let (proto, l4) = build_l4(b, spec, &mut src, &mut dst);
    let src_mac = match spec.src_mac {
        SrcMac::Peer => b.peer_mac,
        SrcMac::Unicast(x) => MacAddr([2, 0, 0, 0, 0x99, x]),
        SrcMac::Any(m) => MacAddr(m),
    };
    let dst_mac = match spec.dst_mac {
        DstMac::Host => b.host.mac(),
        DstMac::Broadcast => MacAddr::BROADCAST,
        DstMac::Other(m) => MacAddr(m),
    };
    let opts = ip_options(&spec.ip_opts);
    let hl = 20 + opts.len().div_ceil(4) * 4;
    let max_data = 1500 - hl;
    let frame = |ident: u16, more: bool, df: bool, offset8: u16, data: &[u8]| {
        let mut f = Vec::with_capacity(18 + hl + data.len());
        eth(src_mac, dst_mac, spec.vlan, &mut f);
        ip_fragment(&mut f, src, dst, proto, spec.ttl, spec.tos, &opts, ident, more, df, offset8, data);
        f
    };
    match &spec.frag {
        Frag::None | Frag::DontFragment => {
            let df = matches!(spec.frag, Frag::DontFragment);
            if l4.len() <= max_data {
                vec![frame(0x4242, false, df, 0, &l4)]
            } else {
                // Too big for one frame: fragment it correctly.
                let step = max_data / 8 * 8;
                l4.chunks(step)
                    .enumerate()
                    .map(|(i, c)| frame(0x4243, (i + 1) * step < l4.len(), false, (i * step / 8) as u16, c))
                    .collect()
            }
        }
        Frag::Single { ident, more, offset } => {
            let n = l4.len().min(max_data);
            vec![frame(u16::from(ident % 4), *more, false, *offset, &l4[..n])]
        }
        Frag::Pieces { ident, pieces } => pieces
            .iter()
            .take(8)
            .map(|p| {
                let start = (usize::from(p.start8) * 8).min(l4.len());
                let end = (start + usize::from(p.len8) * 8).min(l4.len()).min(start + max_data / 8 * 8);
                let end = if end == start { l4.len().min(start + max_data / 8 * 8) } else { end };
                let more = p.more || end < l4.len();
                frame(u16::from(ident % 4), more, false, (start / 8) as u16, &l4[start..end])
            })
            .collect(),
    }
}

fn act(b: &mut Bench, spec: &FrameSpec) {
    let mut buf = [0u8; 4096];
    match spec.action {
        Action::Nothing => {}
        Action::Advance(ms) => b.now = b.now + Duration::from_millis(u64::from(ms % 2000)),
        Action::AdvanceSecs(s) => b.now = b.now + Duration::from_secs(u64::from(s % 130)),
        Action::Send(i, n) => {
            if let Some(h) = b.handle(i) {
                let _ = b.host.tcp_send(h, &buf[..usize::from(n) % buf.len()]);
            }
        }
        Action::Recv(i) => {
            if let Some(h) = b.handle(i) {
                let _ = b.host.tcp_recv(h, &mut buf);
            }
        }
        Action::Close(i) => {
            if let Some(h) = b.handle(i) {
                let _ = b.host.tcp_close(h);
            }
        }
        Action::UdpReply(port) => {
            // Application sends may fail (no route is an answer to the caller); they must not panic.
            if let Ok(s) = b.host.udp_bind(0) {
                let _ = b.host.udp_send_to(s, SocketAddrV4::new(spec.src.addr(), port), &buf[..32]);
                let _ = b.host.udp_close(s);
            }
        }
        Action::Ping => {
            let _ = b.host.ping(spec.src.addr(), 1, 16);
        }
    }
}

fuzz_target!(|input: Input| {
    let mut b = Bench::new(input.gateway);
    for spec in input.frames.iter().take(MAX_FRAMES) {
        for f in build(&mut b, spec) {
            b.now = b.now + Duration::from_micros(50);
            b.push(&f);
            b.poll_host();
            b.check();
        }
        act(&mut b, spec);
        // The peer answers ARP and keeps its side of the wire drained.
        let _ = b.peer.poll(b.now);
        b.poll_host();
        b.check();
    }
    let _ = (b.host.link().stats(), b.peer.ping_reply());
});
