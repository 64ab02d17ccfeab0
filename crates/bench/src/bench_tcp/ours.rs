//! The linerate side of `bench tcp`: this process (host 10.0.0.1, side 0) against a
//! `bench-peer tcp` child (host 10.0.0.2, side 1) on a fresh [`Cable`] per measurement (a
//! shared-memory link, or a veth between two new namespaces with AF_XDP or AF_PACKET on
//! each end), both busy-polling.

use super::{
    request, since, Cycles, Figures, CYCLE_BUFFER, ECHO_PORT, MANY_BUFFER, MAX_CYCLES, MTUS, RTT_PAYLOAD, SINK_PORT,
    STEP_TIMEOUT, WARMUP_CYCLES,
};
use crate::bench_cable::Cable;
use crate::bench_common::{median_of, msg, pin_side, rtt_samples, step, time_up, unique_name, PeerProcess, GRACE};
use crate::bench_common::{tcp_stack_config, with_ipv6};
use crate::runloop::{poll_burst, polls_for};
use apps::IperfClient;
use indicatif::ProgressBar;
use link::{Instant, Link};
use net::{Recv, Stack, TcpHandle};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Our address on the shared-memory link (a /24).
pub(super) const OUR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The child's address on the shared-memory link.
pub(super) const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Our IPv6 address (with `bench tcp --ipv6`).
pub(super) const OUR_IP6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
/// The child's IPv6 address.
pub(super) const PEER_IP6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

/// Whether this run's connections go over IPv6 (`bench tcp --ipv6`).
static IPV6: AtomicBool = AtomicBool::new(false);

/// Run linerate's side over IPv6 from now on.
pub(super) fn use_ipv6() {
    IPV6.store(true, Ordering::Relaxed);
}

/// Whether this run goes over IPv6.
pub(super) fn ipv6() -> bool {
    IPV6.load(Ordering::Relaxed)
}

/// The child's address in this run's family.
fn peer_ip() -> IpAddr {
    if ipv6() {
        PEER_IP6.into()
    } else {
        PEER_IP.into()
    }
}

/// The child's address, port `port`.
fn peer(port: u16) -> SocketAddr {
    SocketAddr::new(peer_ip(), port)
}

/// Which of the child's services takes its payload in RX bypass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bypass {
    /// Neither: both read their receive buffers.
    Off,
    /// The reporting sink.
    Sink,
    /// The echo.
    Echo,
}

impl Bypass {
    /// The child's option for it.
    fn arg(self) -> Option<&'static str> {
        match self {
            Bypass::Off => None,
            Bypass::Sink => Some("--rx-bypass"),
            Bypass::Echo => Some("--echo-rx-bypass"),
        }
    }
}

/// One measurement's set-up: our stack on a fresh link to a new child.
struct Pair {
    /// Our stack; dropped first, which closes the link and lets the child exit.
    stack: Stack<Box<dyn Link>>,
    /// The child (killed on drop if it is still there).
    _peer: PeerProcess,
    /// The namespaces of a veth cable, deleted after the child is gone.
    _veth: Option<crate::bench_cable::Veth>,
    /// The child's sink ports (from [`SINK_PORT`] on).
    sink_ports: u16,
}

impl Pair {
    /// A link of IP MTU `mtu` and a child whose sink listens on enough ports for `sessions`
    /// connections; both stacks hold `sessions` sessions with `buffer`
    /// bytes per direction (default: the stack's). The child's MAC is resolved before return.
    /// `bypass` says which of the child's services takes payload in RX bypass.
    fn start(
        mtu: usize,
        sessions: usize,
        buffer: Option<usize>,
        limit: Duration,
        bypass: Bypass,
    ) -> Result<Pair, String> {
        Pair::start_on(Cable::Shm, mtu, sessions, buffer, limit, bypass)
    }

    /// [`Pair::start`] on `cable`.
    fn start_on(
        cable: Cable,
        mtu: usize,
        sessions: usize,
        buffer: Option<usize>,
        limit: Duration,
        bypass: Bypass,
    ) -> Result<Pair, String> {
        let name = unique_name("bench-tcp");
        let ours = cable.open_ours(&name, mtu, OUR_IP, ipv6().then_some(OUR_IP6))?;
        let cable_args = cable.peer_args(&ours, &name);
        let (sessions_arg, limit_arg) = (sessions.to_string(), limit.as_secs_f64().to_string());
        let sink_ports = if bypass == Bypass::Sink { 1 } else { super::sink_ports(sessions) };
        let ports_arg = sink_ports.to_string();
        let mut args = vec!["tcp", "--sessions", &sessions_arg, "--limit", &limit_arg];
        args.extend(cable_args.iter().map(String::as_str));
        args.extend(["--sink-ports", &ports_arg]);
        let buffer_arg = buffer.map(|b| b.to_string());
        if let Some(b) = &buffer_arg {
            args.extend(["--buffer", b]);
        }
        args.extend(bypass.arg());
        if ipv6() {
            args.push("--ipv6");
        }
        let mut peer = PeerProcess::spawn(&args)?;
        peer.expect_ready()?;
        let mut cfg = tcp_stack_config(&super::cidr(OUR_IP), mtu, sessions, buffer)?;
        if ipv6() {
            cfg = with_ipv6(cfg, OUR_IP6)?;
        }
        if let Some(mac) = ours.mac {
            cfg.mac = wire::MacAddr(mac);
        }
        let stack = Stack::new(cfg, ours.link).map_err(msg)?;
        let mut pair = Pair { stack, _peer: peer, _veth: ours.veth, sink_ports };
        pair.resolve_peer()?;
        Ok(pair)
    }

    /// Ping the child until it answers, so that no measurement waits for ARP.
    fn resolve_peer(&mut self) -> Result<(), String> {
        for seq in 0..20u16 {
            self.stack.ping(peer_ip(), seq, 8).map_err(msg)?;
            let mut answered = false;
            self.drive(Duration::from_millis(100), 1, |s| {
                answered = s.ping_reply().is_some();
                Ok(answered)
            })
            .ok();
            if answered {
                return Ok(());
            }
        }
        Err("the peer does not answer ping".into())
    }

    /// Pump (up to `polls` polls), run `f`, flush; until `f` returns true or `limit` passes.
    fn drive(
        &mut self,
        limit: Duration,
        polls: usize,
        mut f: impl FnMut(&mut Stack<Box<dyn Link>>) -> Result<bool, String>,
    ) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            poll_burst(&mut self.stack, polls).map_err(msg)?;
            let done = f(&mut self.stack)?;
            self.stack.flush().map_err(msg)?;
            if done {
                return Ok(());
            }
            if time_up(Instant::now(), deadline) {
                return Err(format!("no progress within {limit:?}"));
            }
        }
    }

    /// An established connection to the child's `port`.
    fn connect(&mut self, port: u16) -> Result<TcpHandle, String> {
        let h = self.stack.tcp_connect(peer(port)).map_err(msg)?;
        self.drive(STEP_TIMEOUT, 1, |s| match s.tcp_connect_result(h).map_err(msg)? {
            None => Ok(false),
            Some(r) => r.map(|_| true).map_err(msg),
        })?;
        Ok(h)
    }

    /// Goodput (bit/s) of `conns` connections sending for `secs` with the iperf protocol,
    /// spread over the sink's ports.
    fn iperf(&mut self, conns: usize, secs: Duration, polls: usize) -> Result<f64, String> {
        let ports: Vec<SocketAddr> = (SINK_PORT..SINK_PORT + self.sink_ports).map(peer).collect();
        let mut client = IperfClient::spread(&ports, conns, secs, Duration::from_secs(5));
        self.drive(secs + GRACE * 3, polls, |s| {
            client.step(s).map_err(msg)?;
            Ok(client.is_finished())
        })?;
        let r = client.result();
        if r.reported < r.connections {
            let first = client.errors().next().map(|e| e.to_string()).unwrap_or_else(|| "no report".into());
            return Err(format!("{} of {} connections failed: {first}", r.connections - r.reported, r.connections));
        }
        Ok(r.bits_per_sec())
    }

    /// 64-byte round trips with the child's echo on one connection, in ns, sorted.
    fn rtt(&mut self) -> Result<Vec<u64>, String> {
        let h = self.connect(ECHO_PORT)?;
        let stack = &mut self.stack;
        let mut buf = [0u8; RTT_PAYLOAD];
        rtt_samples(|seq| {
            let t0 = Instant::now();
            let req = request(seq);
            if stack.tcp_send(h, &req).map_err(msg)? != RTT_PAYLOAD {
                return Err("round trip: the send buffer is full".into());
            }
            stack.flush().map_err(msg)?;
            let mut got = 0;
            while got < RTT_PAYLOAD {
                stack.poll(Instant::now()).map_err(msg)?;
                match stack.tcp_recv(h, &mut buf[got..]).map_err(msg)? {
                    Recv::Data(n) => got += n,
                    Recv::WouldBlock => {}
                    Recv::Eof => return Err("round trip: the echo closed the connection".into()),
                }
                if Instant::now() - t0 > STEP_TIMEOUT {
                    return Err(format!("round trip: no echo within {STEP_TIMEOUT:?}"));
                }
            }
            if buf[..8] != req[..8] {
                return Err("round trip: the echo answered another request".into());
            }
            Ok(Some(since(t0)))
        })
    }

    /// Connection cycles, one at a time, for `secs` or [`MAX_CYCLES`] cycles.
    fn cycles(&mut self, secs: Duration) -> Result<Cycles, String> {
        let (mut handshake, mut cycle) = (Vec::new(), Vec::new());
        let mut scratch = [0u8; 64];
        let mut start = Instant::now();
        let mut end = start;
        let deadline = start + secs;
        for i in 0..MAX_CYCLES + WARMUP_CYCLES {
            if i == WARMUP_CYCLES {
                start = Instant::now();
            }
            if i > WARMUP_CYCLES && time_up(Instant::now(), deadline) {
                break;
            }
            let t0 = Instant::now();
            let h = self.stack.tcp_connect(peer(SINK_PORT)).map_err(msg)?;
            self.stack.flush().map_err(msg)?;
            let mut up = None;
            self.drive(STEP_TIMEOUT, 1, |s| {
                if up.is_none() {
                    match s.tcp_connect_result(h).map_err(msg)? {
                        None => return Ok(false),
                        Some(r) => r.map_err(msg)?,
                    }
                    up = Some(since(t0));
                    s.tcp_shutdown(h).map_err(msg)?;
                }
                while let Recv::Data(_) = s.tcp_recv(h, &mut scratch).map_err(msg)? {}
                s.tcp_at_eof(h).map_err(msg)
            })?;
            self.stack.tcp_close(h).map_err(msg)?;
            self.stack.flush().map_err(msg)?;
            if i >= WARMUP_CYCLES {
                handshake.push(up.unwrap_or_default());
                cycle.push(since(t0));
                end = Instant::now();
            }
        }
        handshake.sort_unstable();
        cycle.sort_unstable();
        let rate = handshake.len() as f64 / (end - start).as_secs_f64().max(1e-9);
        Ok(Cycles { rate, handshake, cycle })
    }
}

/// Every linerate figure, the aggregate run with `many` connections (advancing `pb` by seven
/// steps).
pub(super) fn measure(
    cable: Cable,
    secs: Duration,
    repeat: usize,
    many: usize,
    pb: &ProgressBar,
) -> Result<Figures, String> {
    pin_side(0);
    let limit = secs + GRACE * 6;
    let start = |mtu, sessions, buffer| Pair::start_on(cable, mtu, sessions, buffer, limit, Bypass::Off);
    let goodput = |mtu: usize, bypass: Bypass| {
        median_of(repeat, || Pair::start_on(cable, mtu, 256, None, limit, bypass)?.iperf(1, secs, 1))
    };
    let g1500 = step(pb, "linerate: goodput, MTU 1500", || goodput(MTUS[0], Bypass::Off))?;
    let rtt = step(pb, "linerate: round trips", || start(MTUS[0], 256, None)?.rtt())?;
    let g9000 = step(pb, "linerate: goodput, MTU 9000", || goodput(MTUS[1], Bypass::Off))?;
    let mut bypass = [0.0; 2];
    for (i, mtu) in MTUS.into_iter().enumerate() {
        bypass[i] = step(pb, &format!("linerate: goodput, MTU {mtu}, RX bypass"), || goodput(mtu, Bypass::Sink))?;
    }
    let cycles = step(pb, "linerate: connection cycles", || {
        start(MTUS[0], MAX_CYCLES + WARMUP_CYCLES + 64, Some(CYCLE_BUFFER))?.cycles(secs)
    })?;
    let many = step(pb, &format!("linerate: {many} connections"), || {
        start(MTUS[0], many + 64, Some(MANY_BUFFER))?.iperf(many, secs, polls_for(many))
    });
    Ok(Figures { goodput: [g1500, g9000], goodput_bypass: Some(bypass), rtt, rtt_blocking: None, cycles, many })
}

/// Goodput (bit/s) of `conns` connections sending for `secs` to a fresh child over a link of
/// IP MTU `mtu` (MSS `mtu - 40`), `buffer` bytes per direction and session (default: the
/// stack's), the child's sink in RX bypass when `rx_bypass`.
pub fn goodput(
    mtu: usize,
    conns: usize,
    buffer: Option<usize>,
    rx_bypass: bool,
    secs: Duration,
) -> Result<f64, String> {
    pin_side(0);
    let bypass = if rx_bypass { Bypass::Sink } else { Bypass::Off };
    Pair::start(mtu, conns + 64, buffer, secs + GRACE * 6, bypass)?.iperf(conns, secs, polls_for(conns))
}

/// 64-byte round trips over one connection (ns, sorted) and connection set-up times (SYN
/// to established, ns, sorted) for about `secs`, at IP MTU 1500.
pub fn round_trips_and_handshakes(secs: Duration) -> Result<(Vec<u64>, Vec<u64>), String> {
    let rtt = round_trips(secs, false)?;
    pin_side(0);
    let limit = secs + GRACE * 6;
    let cycles =
        Pair::start(MTUS[0], MAX_CYCLES + WARMUP_CYCLES + 64, Some(CYCLE_BUFFER), limit, Bypass::Off)?.cycles(secs)?;
    Ok((rtt, cycles.handshake))
}

/// 64-byte round trips over one connection (ns, sorted) at IP MTU 1500, the child's echo
/// taking the requests in RX bypass (from the frames) when `echo_bypass`, else from its
/// receive buffer.
pub fn round_trips(secs: Duration, echo_bypass: bool) -> Result<Vec<u64>, String> {
    pin_side(0);
    let bypass = if echo_bypass { Bypass::Echo } else { Bypass::Off };
    Pair::start(MTUS[0], 256, None, secs + GRACE * 6, bypass)?.rtt()
}
