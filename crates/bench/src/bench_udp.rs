//! `linerate bench udp`: UDP goodput and 64-byte round trip between two linerate processes on
//! a shared-memory link (both busy-poll), beside the Linux kernel's UDP between two network
//! namespaces over veth, measured in the same run; and the hidden `linerate bench-peer udp`
//! child that serves the linerate side (with a raw-Ethernet echo beside the UDP one, for the
//! raw round trip of `linerate reproduce 000`).

use crate::bench_cable::Cable;
use crate::bench_common::{
    bench_cpus, check_secs, die_with_parent, msg, nothing_yet, peer_or_reason, percentile, pin_cpu, pin_side,
    print_tables, progress, ratio_row as row, rtt_samples, step, time_up, unique_name, with_ipv6, Mode, NsServer,
    PeerProcess, Tally, GRACE, READY,
};
use crate::output::{Cell, Table, Unit};
use crate::runloop::{install_stop_handler, stop_requested};
use apps::{RawEcho, UdpEcho};
use indicatif::ProgressBar;
use link::{Instant, Link, LinkError};
use net::{Config, NetError, RawHandle, Stack, UdpHandle};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use testbed::netns::veth_pair;
use testbed::{netns_unavailable, Netns};

/// Our address on the shared-memory link (a /24).
const OUR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The child's address on the shared-memory link.
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// Our IPv6 address on the shared-memory link (with `--ipv6`).
const OUR_IP6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
/// The child's IPv6 address on the shared-memory link (with `--ipv6`).
const PEER_IP6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);
/// The kernel client's address (namespace A) on the veth pair (a /24).
const KERNEL_CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
/// The kernel server's address (namespace B) on the veth pair.
const KERNEL_SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
/// IP MTU of both links.
const MTU: usize = 1500;
/// Port of the UDP sink that counts bytes.
const SINK_PORT: u16 = 9;
/// Port of the UDP echo service.
const ECHO_PORT: u16 = 7;
/// EtherType of the child's raw-Ethernet echo (IEEE 802 local experimental EtherType 1).
const RAW_ECHO_TYPE: u16 = 0x88b5;
/// Port the linerate peer answers "REPORT" on with its sink's tally.
const CONTROL_PORT: u16 = 10;
/// Payload of a goodput datagram: the largest that fits a 1500-byte MTU.
const DATAGRAM: usize = 1472;
/// Payload of a goodput datagram over IPv6: the same 1500-byte IP packet (a header 20 bytes longer).
const DATAGRAM6: usize = 1452;
/// Payload of a round-trip datagram.
const RTT_PAYLOAD: usize = 64;
/// How long to wait for one reply before counting it lost.
const REPLY_TIMEOUT: Duration = Duration::from_millis(100);

/// Options of `linerate bench udp`.
#[derive(clap::Args)]
pub struct UdpArgs {
    /// How long each goodput measurement sends (a duration: 2s, 500ms; a bare number is
    /// seconds).
    #[arg(value_name = "DURATION", long = "duration", short = 't', alias = "secs", default_value = "2s", value_parser = crate::duration::parse_duration)]
    secs: Duration,
    /// Print JSON (and no progress bar).
    #[arg(long)]
    json: bool,
    /// What joins the two linerate processes: shm (a shared-memory link), af_xdp or af_packet
    /// (a veth between two new namespaces, that socket on each end). Linux always runs over
    /// veth.
    #[arg(long, default_value = "shm", value_parser = crate::bench_cable::CABLE_KINDS)]
    link: String,
    /// Run linerate's side over IPv6 (fd77::1 to fd77::2 on the same link, 1452-byte
    /// datagrams in the same 1500-byte packets) instead of IPv4; Linux's side stays on IPv4.
    /// A run without it, alternated, gives the IPv6/IPv4 ratio.
    #[arg(long)]
    ipv6: bool,
}

/// Options of the hidden `linerate bench-peer udp` child.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("side").required(true).args(["shm", "link"])))]
pub struct PeerArgs {
    /// Name of the shared-memory link to open (side B).
    #[arg(long)]
    shm: Option<String>,
    /// Open this link (side B) instead, in --netns (the interface's MTU).
    #[arg(long, value_name = "SPEC")]
    link: Option<link::spec::LinkSpec>,
    /// The network namespace of --link (default: this process's).
    #[arg(long, requires = "link")]
    netns: Option<String>,
    /// How long until the peer gives up even if the link stays open (a duration).
    #[arg(value_name = "DURATION", long = "limit", alias = "limit-secs", default_value = "2m", value_parser = crate::duration::parse_duration)]
    limit_secs: Duration,
    /// CPU to pin the peer to.
    #[arg(long)]
    cpu: Option<usize>,
    /// IP MTU of the link (and the peer's stack).
    #[arg(long, default_value_t = MTU)]
    mtu: usize,
    /// The host also has fd77::2/64 (the parent's `--ipv6`).
    #[arg(long)]
    ipv6: bool,
}

/// What one side of the comparison measured.
struct Figures {
    /// What the receiver of the goodput run counted (datagrams and payload bytes).
    goodput: Tally,
    /// Datagrams the sender handed over.
    sent: u64,
    /// Round-trip times in ns, sorted, with both sides busy-polling.
    rtt: Vec<u64>,
    /// Round-trip times in ns, sorted, with blocking sockets (kernel only).
    rtt_blocking: Option<Vec<u64>>,
}

/// Run `linerate bench udp`.
pub fn run(a: UdpArgs) -> Result<ExitCode, String> {
    let secs = check_secs(a.secs)?;
    install_stop_handler();
    bench_cpus();
    let pb = progress(5, a.json);
    let cable = Cable::parse(&a.link)?;
    if cable != Cable::Shm {
        if let Some(why) = netns_unavailable() {
            return Err(format!("--link {} needs network namespaces: {why}", a.link));
        }
    }
    let ours = bench_linerate(cable, secs, a.ipv6, &pb);
    let skipped = netns_unavailable();
    let kernel = if skipped.is_none() { Some(bench_kernel(secs, &pb)) } else { None };
    pb.finish_and_clear();
    if stop_requested() {
        return Err("interrupted".into());
    }
    let ours = ours?;
    let peer = peer_or_reason(&kernel, skipped);
    let kernel_figures = peer.as_ref().map(|f| *f).map_err(String::as_str);
    print_tables(&[table(cable, a.ipv6, &ours, kernel_figures)], a.json);
    Ok(if matches!(kernel, Some(Err(_))) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// A round-trip request: `seq` in the first 8 bytes, then padding to [`RTT_PAYLOAD`] bytes.
fn request(seq: u64) -> [u8; RTT_PAYLOAD] {
    let mut p = [0u8; RTT_PAYLOAD];
    p[..8].copy_from_slice(&seq.to_le_bytes());
    p
}

/// True if `reply` answers request `seq`.
fn answers(reply: &[u8], seq: u64) -> bool {
    reply.len() >= 8 && reply[..8] == seq.to_le_bytes()
}

// ------------------------------------------------------------------ linerate over shm

/// Our side of the linerate measurement: a stack on the shared-memory link and one socket.
struct Client {
    /// Our stack (host 10.0.0.1) on side A of the link.
    stack: Stack<Box<dyn Link>>,
    /// Our socket (ephemeral port).
    sock: UdpHandle,
    /// Receive buffer.
    buf: Vec<u8>,
    /// The child (killed on drop; our stack closes the link first).
    _peer: PeerProcess,
    /// The namespaces of a veth cable, deleted after the child is gone.
    _veth: Option<crate::bench_cable::Veth>,
    /// Whether we talk to the child over IPv6.
    ipv6: bool,
}

/// `ip` with a /24 prefix, as stack configurations and `ip addr` take it.
fn cidr(ip: Ipv4Addr) -> String {
    format!("{ip}/24")
}

/// Start the child on a fresh link (`cable`) and measure round trip and goodput against it,
/// over IPv6 if `ipv6`.
fn bench_linerate(cable: Cable, secs: Duration, ipv6: bool, pb: &ProgressBar) -> Result<Figures, String> {
    let mut c = Client::start_on(cable, MTU, secs, ipv6)?;
    let rtt = step(pb, "linerate: round trips", || rtt_samples(|seq| c.exchange(seq)))?;
    let (sent, goodput) = step(pb, "linerate: goodput", || -> Result<_, String> {
        let sent = c.blast(secs, if ipv6 { DATAGRAM6 } else { DATAGRAM })?;
        Ok((sent, c.report()?))
    })?;
    Ok(Figures { goodput, sent, rtt, rtt_blocking: None })
}

/// linerate UDP goodput (payload bit/s the child's sink counted) of `payload`-byte datagrams
/// sent for `secs` over a shared-memory link of IP MTU `payload + 28`.
pub fn linerate_goodput(payload: usize, secs: Duration) -> Result<f64, String> {
    let mut c = Client::start((payload + 28).max(MTU), secs)?;
    c.blast(secs, payload)?;
    let got = c.report()?;
    Ok(got.per_sec(got.bytes as f64) * 8.0)
}

/// 64-byte UDP round trips with the linerate child's echo (ns, sorted).
pub fn linerate_round_trips() -> Result<Vec<u64>, String> {
    let mut c = Client::start(MTU, Duration::from_secs(5))?;
    rtt_samples(|seq| c.exchange(seq))
}

/// 64-byte raw-Ethernet round trips with the linerate child's raw echo (ns, sorted): frames
/// of EtherType [`RAW_ECHO_TYPE`] to the child's MAC, which a UDP exchange resolves first.
pub fn linerate_raw_round_trips() -> Result<Vec<u64>, String> {
    let mut c = Client::start(MTU, Duration::from_secs(5))?;
    let mut answered = false;
    for seq in 0..20 {
        if c.exchange(seq)?.is_some() {
            answered = true;
            break;
        }
    }
    let mac = c.stack.arp_lookup(PEER_IP).filter(|_| answered).ok_or("the peer does not answer UDP")?;
    let raw = c.stack.raw_bind(RAW_ECHO_TYPE).map_err(msg)?;
    rtt_samples(|seq| c.raw_exchange(raw, mac, seq))
}

impl Client {
    /// A fresh shared-memory link of IP MTU `mtu` to a new child, and our stack and socket
    /// on it (the child gives up `secs` plus a grace time after it started).
    fn start(mtu: usize, secs: Duration) -> Result<Client, String> {
        Client::start_on(Cable::Shm, mtu, secs, false)
    }

    /// [`Client::start`] on `cable`, over IPv6 if `ipv6`.
    fn start_on(cable: Cable, mtu: usize, secs: Duration, ipv6: bool) -> Result<Client, String> {
        let name = unique_name("bench-udp");
        let ours = cable.open_ours(&name, mtu, OUR_IP, ipv6.then_some(OUR_IP6))?;
        let limit = (secs + GRACE * 6).as_secs_f64().to_string();
        let mtu_arg = mtu.to_string();
        let mut args = vec!["udp".to_string(), "--limit".into(), limit, "--mtu".into(), mtu_arg];
        args.extend(cable.peer_args(&ours, &name));
        if ipv6 {
            args.push("--ipv6".into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut peer = PeerProcess::spawn(&args)?;
        peer.expect_ready()?;
        pin_side(0);
        let mut cfg = Config::host(&cidr(OUR_IP)).mtu(mtu);
        if ipv6 {
            cfg = with_ipv6(cfg, OUR_IP6)?;
        }
        if let Some(mac) = ours.mac {
            cfg.mac = wire::MacAddr(mac);
        }
        let mut stack = Stack::new(cfg, ours.link).map_err(msg)?;
        let sock = stack.udp_bind(0).map_err(msg)?;
        Ok(Client { stack, sock, buf: vec![0u8; 2048], _peer: peer, _veth: ours.veth, ipv6 })
    }

    /// The child's address in this run's family, port `port`.
    fn peer_addr(&self, port: u16) -> SocketAddr {
        if self.ipv6 {
            SocketAddr::new(PEER_IP6.into(), port)
        } else {
            SocketAddr::new(PEER_IP.into(), port)
        }
    }

    /// Poll (busy) until a datagram for which `wanted(payload, from)` holds arrives, or
    /// `timeout` passes. Returns its length in `self.buf`.
    fn await_datagram(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&[u8], std::net::SocketAddr) -> bool,
    ) -> Result<Option<usize>, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            self.stack.poll(now).map_err(msg)?;
            while let Some((n, from)) = self.stack.udp_recv_from(self.sock, &mut self.buf).map_err(msg)? {
                if wanted(&self.buf[..n.min(self.buf.len())], from) {
                    return Ok(Some(n));
                }
            }
            if time_up(now, deadline) {
                return Ok(None);
            }
        }
    }

    /// Send `payload` to `dst` now, waiting out back-pressure (bounded by [`REPLY_TIMEOUT`]).
    fn send_now(&mut self, dst: SocketAddr, payload: &[u8]) -> Result<bool, String> {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        while !self.stack.udp_send_to(self.sock, dst, payload).map_err(msg)? {
            if time_up(Instant::now(), deadline) {
                return Ok(false);
            }
            self.stack.flush().map_err(msg)?;
        }
        self.stack.flush().map_err(msg)?;
        Ok(true)
    }

    /// One 64-byte request/response with the echo; the round-trip time in ns.
    fn exchange(&mut self, seq: u64) -> Result<Option<u64>, String> {
        let t0 = Instant::now();
        if !self.send_now(self.peer_addr(ECHO_PORT), &request(seq))? {
            return Ok(None);
        }
        let got = self.await_datagram(REPLY_TIMEOUT, |p, _| answers(p, seq))?;
        Ok(got.map(|_| (Instant::now() - t0).as_nanos() as u64))
    }

    /// One 64-byte raw-Ethernet request/response with the raw echo at `mac` on socket `raw`;
    /// the round-trip time in ns (None: no answer in time).
    fn raw_exchange(&mut self, raw: RawHandle, mac: wire::MacAddr, seq: u64) -> Result<Option<u64>, String> {
        let t0 = Instant::now();
        let deadline = t0 + REPLY_TIMEOUT;
        while !self.stack.raw_send(raw, mac, &request(seq)).map_err(msg)? {
            if time_up(Instant::now(), deadline) {
                return Ok(None);
            }
            self.stack.flush().map_err(msg)?;
        }
        self.stack.flush().map_err(msg)?;
        loop {
            let now = Instant::now();
            self.stack.poll(now).map_err(msg)?;
            while let Some((n, _)) = self.stack.raw_recv(raw, &mut self.buf).map_err(msg)? {
                if answers(&self.buf[..n.min(self.buf.len())], seq) {
                    return Ok(Some((Instant::now() - t0).as_nanos() as u64));
                }
            }
            if time_up(now, deadline) {
                return Ok(None);
            }
        }
    }

    /// Send `size`-byte datagrams to the sink for `secs`, waiting out back-pressure
    /// (flush, not poll: a poll drops what the full link refuses). Returns datagrams sent.
    fn blast(&mut self, secs: Duration, size: usize) -> Result<u64, String> {
        let payload = vec![0x5au8; size];
        let dst = self.peer_addr(SINK_PORT);
        let deadline = Instant::now() + secs;
        let mut sent = 0u64;
        for attempt in 0u64.. {
            if attempt.is_multiple_of(32) && time_up(Instant::now(), deadline) {
                break;
            }
            if self.stack.udp_send_to(self.sock, dst, &payload).map_err(msg)? {
                sent += 1;
            } else {
                self.stack.flush().map_err(msg)?;
            }
        }
        // The last batch: the peer drains the ring within microseconds.
        for _ in 0..10_000 {
            self.stack.flush().map_err(msg)?;
        }
        Ok(sent)
    }

    /// Ask the peer for its sink's tally (retrying a few times).
    fn report(&mut self) -> Result<Tally, String> {
        for _ in 0..20 {
            if !self.send_now(self.peer_addr(CONTROL_PORT), b"REPORT")? {
                continue;
            }
            if let Some(n) = self.await_datagram(REPLY_TIMEOUT, |_, from| from.port() == CONTROL_PORT)? {
                return serde_json::from_slice(&self.buf[..n]).map_err(|e| format!("bad report from the peer: {e}"));
            }
        }
        Err("the peer did not answer REPORT".into())
    }
}

/// The child's services: a UDP and a raw-Ethernet echo, a counting sink and the control socket.
struct Services {
    /// UDP echo on [`ECHO_PORT`].
    echo: UdpEcho,
    /// Raw-Ethernet echo on [`RAW_ECHO_TYPE`].
    raw_echo: RawEcho,
    /// The sink socket on [`SINK_PORT`].
    sink: UdpHandle,
    /// The control socket on [`CONTROL_PORT`].
    control: UdpHandle,
    /// What the sink counted.
    tally: Tally,
    /// Scratch buffer.
    buf: Vec<u8>,
}

impl Services {
    /// Bind the services on `stack`.
    fn bind(stack: &mut Stack<Box<dyn Link>>) -> Result<Services, NetError> {
        Ok(Services {
            echo: UdpEcho::bind(stack, ECHO_PORT)?,
            raw_echo: RawEcho::bind(stack, RAW_ECHO_TYPE)?,
            sink: stack.udp_bind(SINK_PORT)?,
            control: stack.udp_bind(CONTROL_PORT)?,
            tally: Tally::default(),
            buf: vec![0u8; 65536],
        })
    }

    /// Serve everything that arrived in the last poll (at `now`).
    fn serve(&mut self, stack: &mut Stack<Box<dyn Link>>, now: Instant) -> Result<(), NetError> {
        while let Some((n, _)) = stack.udp_recv_from(self.sink, &mut self.buf)? {
            self.tally.record(now, 1, n as u64);
        }
        self.echo.serve(stack)?;
        self.raw_echo.serve(stack)?;
        while let Some((_, from)) = stack.udp_recv_from(self.control, &mut self.buf)? {
            let report = serde_json::to_vec(&self.tally).unwrap_or_default();
            // If the link is full the client asks again.
            stack.udp_send_to(self.control, from, &report)?;
        }
        Ok(stack.flush()?)
    }
}

/// Run the hidden `bench-peer udp` child: host 10.0.0.2 on the link, busy-polling, until the
/// parent closes the link or the time limit passes.
pub fn run_peer(a: PeerArgs) -> Result<ExitCode, String> {
    die_with_parent();
    if let Some(cpu) = a.cpu {
        pin_cpu(cpu);
    }
    let limit = check_secs(a.limit_secs)?;
    let (link, _, mac) = crate::bench_cable::open_peer(
        a.shm.as_deref(),
        a.link.as_ref(),
        a.netns.as_deref(),
        PEER_IP,
        a.ipv6.then_some(PEER_IP6),
    )?;
    let mut cfg = Config::host(&cidr(PEER_IP)).mtu(a.mtu);
    if a.ipv6 {
        cfg = with_ipv6(cfg, PEER_IP6)?;
    }
    if let Some(mac) = mac {
        cfg.mac = wire::MacAddr(mac);
    }
    let mut stack = Stack::new(cfg, link).map_err(msg)?;
    let mut services = Services::bind(&mut stack).map_err(msg)?;
    println!("{READY}");
    let deadline = Instant::now() + limit;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err("bench peer: time limit reached with the link still open".into());
        }
        match stack.poll(now).map_err(NetError::from).and_then(|_| services.serve(&mut stack, now)) {
            Err(NetError::Link(LinkError::Closed)) => return Ok(ExitCode::SUCCESS),
            r => r.map_err(msg)?,
        }
    }
}

// ------------------------------------------------------------------ Linux kernel over veth

/// Bind `KERNEL_SERVER_IP:port` in `ns` in `mode`, then run `serve(socket, stop)` there.
fn udp_server<T: Send + 'static>(
    ns: &Netns,
    port: u16,
    mode: Mode,
    serve: impl FnOnce(UdpSocket, &AtomicBool) -> Result<T, String> + Send + 'static,
) -> Result<NsServer<T>, String> {
    let bind = move || UdpSocket::bind((KERNEL_SERVER_IP, port)).and_then(|sock| mode.apply_udp(&sock).map(|_| sock));
    NsServer::start(ns, bind, serve)
}

/// Serve `sock` until `stop` is set (or the grace limit passes): `on(datagram, from)` for
/// each datagram received.
fn serve_loop(
    sock: &UdpSocket,
    stop: &AtomicBool,
    mut on: impl FnMut(&[u8], std::net::SocketAddr),
) -> Result<(), String> {
    let mut buf = vec![0u8; 2048];
    let deadline = Instant::now() + GRACE * 6;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => on(&buf[..n], from),
            Err(e) if nothing_yet(&e) => std::hint::spin_loop(),
            Err(e) => return Err(format!("server receive: {e}")),
        }
    }
    Ok(())
}

/// The kernel sink: counts datagrams and payload bytes (blocking socket).
fn kernel_sink(sock: UdpSocket, stop: &AtomicBool) -> Result<Tally, String> {
    let mut tally = Tally::default();
    serve_loop(&sock, stop, |d, _| tally.record(Instant::now(), 1, d.len() as u64))?;
    Ok(tally)
}

/// The kernel echo: sends every datagram back.
fn kernel_echo(sock: UdpSocket, stop: &AtomicBool) -> Result<(), String> {
    serve_loop(&sock, stop, |d, from| {
        let _ = sock.send_to(d, from);
    })
}

/// A client socket in the calling thread's namespace, connected to the server's `port`.
fn kernel_client(port: u16, mode: Mode) -> Result<UdpSocket, String> {
    let sock = UdpSocket::bind((KERNEL_CLIENT_IP, 0)).map_err(msg)?;
    sock.connect((KERNEL_SERVER_IP, port)).map_err(msg)?;
    mode.apply_udp(&sock).map_err(msg)?;
    Ok(sock)
}

/// One request/response on a connected kernel socket; the round-trip time in ns.
fn kernel_exchange(sock: &UdpSocket, seq: u64, buf: &mut [u8]) -> Result<Option<u64>, String> {
    let t0 = Instant::now();
    sock.send(&request(seq)).map_err(msg)?;
    loop {
        match sock.recv(buf) {
            Ok(n) if answers(&buf[..n], seq) => return Ok(Some((Instant::now() - t0).as_nanos() as u64)),
            Ok(_) => {}
            Err(e) if nothing_yet(&e) => std::hint::spin_loop(),
            Err(e) => return Err(format!("client receive: {e}")),
        }
        if Instant::now() - t0 > REPLY_TIMEOUT {
            return Ok(None);
        }
    }
}

/// Round trips from namespace `a` to an echo in namespace `b`, both sides in `mode`.
fn kernel_rtt(a: &Netns, b: &Netns, mode: Mode) -> Result<Vec<u64>, String> {
    let server = udp_server(b, ECHO_PORT, mode, kernel_echo)?;
    let rtt = a.enter(move || {
        pin_side(0);
        let sock = kernel_client(ECHO_PORT, mode)?;
        let mut buf = vec![0u8; 2048];
        rtt_samples(|seq| kernel_exchange(&sock, seq, &mut buf))
    });
    server.finish()?;
    rtt.map_err(msg)?
}

/// Send [`DATAGRAM`]-byte datagrams from namespace `a` to a sink in `b` for `secs`.
fn kernel_goodput(a: &Netns, b: &Netns, secs: Duration) -> Result<(u64, Tally), String> {
    let server = udp_server(b, SINK_PORT, Mode::Block, kernel_sink)?;
    let sent = a.enter(move || -> Result<u64, String> {
        pin_side(0);
        let sock = kernel_client(SINK_PORT, Mode::Block)?;
        let payload = vec![0x5au8; DATAGRAM];
        let (deadline, mut sent) = (Instant::now() + secs, 0u64);
        while !time_up(Instant::now(), deadline) {
            match sock.send(&payload) {
                Ok(_) => sent += 1,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) || nothing_yet(&e) => {}
                Err(e) => return Err(format!("client send: {e}")),
            }
        }
        Ok(sent)
    });
    std::thread::sleep(Duration::from_millis(100)); // let the sink drain its socket
    let got = server.finish()?;
    Ok((sent.map_err(msg)??, got))
}

/// Two namespaces joined by veth (MTU 1500); the kernel's round trips (busy and blocking) and goodput.
fn bench_kernel(secs: Duration, pb: &ProgressBar) -> Result<Figures, String> {
    let a = Netns::create("lr-bench-ua").map_err(msg)?;
    let b = Netns::create("lr-bench-ub").map_err(msg)?;
    veth_pair(&a, "lrudp-a", &cidr(KERNEL_CLIENT_IP), &b, "lrudp-b", &cidr(KERNEL_SERVER_IP), MTU).map_err(msg)?;
    let rtt = step(pb, "Linux: round trips, busy-polling", || kernel_rtt(&a, &b, Mode::Spin))?;
    let blocking = step(pb, "Linux: round trips, blocking", || kernel_rtt(&a, &b, Mode::Block))?;
    let (sent, goodput) = step(pb, "Linux: goodput", || kernel_goodput(&a, &b, secs))?;
    Ok(Figures { goodput, sent, rtt, rtt_blocking: Some(blocking) })
}

// ------------------------------------------------------------------ the table

/// The comparison table.
fn table(cable: Cable, ipv6: bool, ours: &Figures, kernel: Result<&Figures, &str>) -> Table {
    let over = if ipv6 { " over IPv6 (Linux over IPv4)" } else { "" };
    let mut t = Table::new(
        &format!(
            "UDP: linerate, two processes {}{over}, both busy-polling, MTU 1500, vs Linux kernel UDP between two \
             namespaces over veth (MTU 1500); the two sides pinned to two CPUs",
            cable.joined()
        ),
        &["metric", cable.label(), "Linux (veth)", "ratio"],
    );
    let gbps = |f: &Figures| f.goodput.per_sec(f.goodput.bytes as f64 * 8.0);
    let delivered = |f: &Figures| f.goodput.frames as f64 / f.sent.max(1) as f64;
    let goodput = if ipv6 {
        "goodput, full-MTU datagrams (1452 B over IPv6, Linux 1472 B over IPv4), at receiver"
    } else {
        "goodput, 1472 B datagrams, at receiver"
    };
    row(&mut t, goodput, gbps(ours), kernel.map(gbps), Unit::BitsPerSec);
    row(&mut t, "datagrams delivered", delivered(ours), kernel.map(delivered), Unit::Percent);
    let pct = |v: &[u64], p| percentile(v, p) / 1e9;
    for (name, p) in [("median", 50.0), ("p99", 99.0)] {
        let metric = format!("64 B round trip {name}, Linux busy-polling");
        row(&mut t, &metric, pct(&ours.rtt, p), kernel.map(|k| pct(&k.rtt, p)), Unit::Seconds);
    }
    for (name, p) in [("median", 50.0), ("p99", 99.0)] {
        let metric = format!("64 B round trip {name}, Linux blocking");
        let k = kernel.and_then(|k| k.rtt_blocking.as_deref().ok_or("-")).map(|v| pct(v, p));
        row(&mut t, &metric, pct(&ours.rtt, p), k, Unit::Seconds);
    }
    goal_summary(&mut t, ours, kernel);
    t
}

/// The goal: our median round trip at most 0.1 of the kernel's (busy-polling and blocking),
/// as summary lines: the ratio and whether the goal was met.
fn goal_summary(t: &mut Table, ours: &Figures, kernel: Result<&Figures, &str>) {
    let ours_med = percentile(&ours.rtt, 50.0);
    let busy = kernel.map(|k| percentile(&k.rtt, 50.0)).map_err(|_| "no Linux figure");
    let block = kernel.and_then(|k| k.rtt_blocking.as_deref().ok_or("-")).map(|v| percentile(v, 50.0));
    for (mode, k) in [("busy-polling", busy), ("blocking", block.map_err(|_| "no Linux figure"))] {
        let label = format!("goal median round trip ratio vs Linux {mode} (met at <= 0.1)");
        t.summary(&label, k.map(|k| Cell::ratio(ours_med / k)));
        let verdict = k.map(|k| Cell::Goal(ours_med / k <= 0.1));
        t.summary(&format!("goal vs Linux {mode}"), verdict);
    }
}
