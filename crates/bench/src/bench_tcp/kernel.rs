//! The Linux side of `bench tcp`: kernel TCP between two namespaces joined by veth, the
//! client in namespace A (side 0), the servers in namespace B (side 1). The sink speaks the
//! same iperf protocol as the linerate peer and both it and the many-connection client wait
//! in epoll (blocking); the echo runs busy-polling and blocking.

use super::{
    cidr, request, since, Cycles, Figures, ECHO_PORT, MANY_BUFFER, MAX_CYCLES, MAX_MANY, MTUS, RTT_PAYLOAD, SINK_PORT,
    STEP_TIMEOUT, WARMUP_CYCLES,
};
use crate::bench_common::{
    median_of, msg, nothing_yet, pin_side, rtt_samples, step, time_up, Mode, NsServer, PeerProcess, GRACE, READY,
};
use indicatif::ProgressBar;
use link::Instant;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use testbed::netns::veth_pair;
use testbed::Netns;

/// The client's address (namespace A) on the veth pair (a /24).
const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
/// The server's address (namespace B).
const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
/// The veth ends.
const VETH: [&str; 2] = ["lrtcp-a", "lrtcp-b"];
/// Listen backlog of each sink port (room for its share of the connections at once).
const BACKLOG: usize = 16_384;
/// SYN backlog of the server's namespace (room for [`MAX_MANY`] at once).
const SYN_BACKLOG: usize = MAX_MANY;
/// The client namespace's ephemeral ports (towards each of the sink's ports).
const CLIENT_PORTS: &str = "1024 65535";
/// Open files a process of a many-connection run may need beyond its sockets.
const SPARE_FDS: usize = 256;
/// Connections per kernel client process at most: without CAP_SYS_RESOURCE the open-file hard
/// limit may be as low as 20,000, so a larger run is split over several client processes (and
/// the sink is one process per port).
const CLIENT_SHARE: usize = 16_384;
/// Longest an epoll wait blocks before loops check whether to stop.
const EPOLL_TICK_MS: i32 = 10;
/// Token of the listening socket in the sink's epoll set.
const LISTENER: u64 = u64::MAX;

/// Client namespace A and server namespace B joined by veth at MTU 1500, B's backlogs and
/// A's ephemeral port range raised for [`MAX_MANY`] connections.
fn namespaces(names: [&str; 2]) -> Result<(Netns, Netns), String> {
    let a = Netns::create(names[0]).map_err(msg)?;
    let b = Netns::create(names[1]).map_err(msg)?;
    veth_pair(&a, VETH[0], &cidr(CLIENT_IP), &b, VETH[1], &cidr(SERVER_IP), MTUS[0]).map_err(msg)?;
    b.enter(|| -> std::io::Result<()> {
        std::fs::write("/proc/sys/net/core/somaxconn", BACKLOG.to_string())?;
        std::fs::write("/proc/sys/net/ipv4/tcp_max_syn_backlog", SYN_BACKLOG.to_string())
    })
    .map_err(msg)?
    .map_err(|e| format!("raising the server namespace's backlog: {e}"))?;
    a.enter(|| std::fs::write("/proc/sys/net/ipv4/ip_local_port_range", CLIENT_PORTS))
        .map_err(msg)?
        .map_err(|e| format!("widening the client namespace's ephemeral ports: {e}"))?;
    Ok((a, b))
}

/// Every kernel figure, the aggregate run with `many` connections (advancing `pb` by six steps).
pub(super) fn measure(secs: Duration, repeat: usize, many: usize, pb: &ProgressBar) -> Result<Figures, String> {
    let (a, b) = namespaces(["lr-bench-ta", "lr-bench-tb"])?;
    let mut goodput = [0.0; 2];
    for (i, mtu) in MTUS.iter().enumerate() {
        set_mtu(&a, &b, *mtu)?;
        goodput[i] =
            step(pb, &format!("Linux: goodput, MTU {mtu}"), || median_of(repeat, || iperf(&a, &b, 1, secs, None)))?;
    }
    set_mtu(&a, &b, MTUS[0])?;
    let busy = step(pb, "Linux: round trips, busy-polling", || rtt(&a, &b, Mode::Spin))?;
    let blocking = step(pb, "Linux: round trips, blocking", || rtt(&a, &b, Mode::Block))?;
    let set_up = step(pb, "Linux: connection cycles", || cycles(&a, &b, secs))?;
    let many = step(pb, &format!("Linux: {many} connections"), || iperf(&a, &b, many, secs, Some(MANY_BUFFER)));
    Ok(Figures { goodput, goodput_bypass: None, rtt: busy, rtt_blocking: Some(blocking), cycles: set_up, many })
}

/// Set the IP MTU of both veth ends.
fn set_mtu(a: &Netns, b: &Netns, mtu: usize) -> Result<(), String> {
    for (ns, dev) in [(a, VETH[0]), (b, VETH[1])] {
        ns.ip(&["link", "set", "dev", dev, "mtu", &mtu.to_string()]).map_err(msg)?;
    }
    Ok(())
}

/// Goodput (bit/s) of `conns` connections from A to the sink in B, sending for `secs`: in
/// this process up to [`CLIENT_SHARE`] connections, else in client processes of that many.
fn iperf(a: &Netns, b: &Netns, conns: usize, secs: Duration, buffer: Option<usize>) -> Result<f64, String> {
    let ports = super::sink_ports(conns);
    let _servers = sink_peers(b, buffer, secs, ports)?;
    let shares = conns.div_ceil(CLIENT_SHARE);
    if shares <= 1 {
        raise_fd_limit(conns + SPARE_FDS)?;
        let r = a.enter(move || {
            pin_side(0);
            iperf_client(conns, (0, 1), ports, secs, buffer)
        });
        return r.map_err(msg)??.goodput();
    }
    let (conns_arg, shares_arg, send_arg) = (conns.to_string(), shares.to_string(), format!("{}ms", secs.as_millis()));
    let (buffer_arg, ports_arg) = (buffer.map(|n| n.to_string()), ports.to_string());
    let mut clients = Vec::new();
    for share in 0..shares {
        let share_arg = share.to_string();
        let mut args = vec!["tcp", "--kernel-client", a.name(), "--conns", &conns_arg, "--send", &send_arg];
        args.extend(["--share", &share_arg, "--shares", &shares_arg, "--sink-ports", &ports_arg]);
        if let Some(n) = &buffer_arg {
            args.extend(["--buffer", n]);
        }
        clients.push(PeerProcess::spawn(&args)?);
    }
    let mut total = ClientTally::default();
    for c in &mut clients {
        let t: Result<ClientTally, String> = c.next_json(secs + GRACE * 4)?;
        total = total.merge(&t?);
    }
    total.goodput()
}

/// What one client process counted: bytes the sink reported, and when (`CLOCK_MONOTONIC`
/// ns, comparable between processes) its first connection came up and its last finished.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct ClientTally {
    /// Bytes the sink reported over the connections.
    received: u64,
    /// The first connection established.
    first_up: Option<u64>,
    /// The last report received.
    last_done: Option<u64>,
}

impl ClientTally {
    /// Both tallies as one run.
    fn merge(&self, o: &ClientTally) -> ClientTally {
        let pick = |a: Option<u64>, b: Option<u64>, f: fn(u64, u64) -> u64| match (a, b) {
            (Some(x), Some(y)) => Some(f(x, y)),
            (x, y) => x.or(y),
        };
        ClientTally {
            received: self.received + o.received,
            first_up: pick(self.first_up, o.first_up, u64::min),
            last_done: pick(self.last_done, o.last_done, u64::max),
        }
    }

    /// Goodput in bit/s: the bytes over the time from the first connection up to the last report.
    fn goodput(&self) -> Result<f64, String> {
        let first = self.first_up.ok_or("no connection came up")?;
        let last = self.last_done.ok_or("no connection finished")?;
        Ok(self.received as f64 * 8.0 / (last.saturating_sub(first) as f64 / 1e9).max(1e-9))
    }
}

/// The body of `bench-peer tcp --kernel-client NS`: enter `ns`, run connections `share`,
/// `share + shares`, ... below `conns` of the iperf client (`(share, shares)`) over the sink's
/// `ports`, print the tally (or the error) as one JSON line.
pub(super) fn run_client_peer(
    ns: &str,
    conns: usize,
    (share, shares): (usize, usize),
    ports: u16,
    secs: Duration,
    buffer: Option<usize>,
) -> Result<ExitCode, String> {
    if shares == 0 || share >= shares || conns > MAX_MANY {
        return Err(format!("client share {share} of {shares}, {conns} connections: out of range"));
    }
    testbed::netns::enter_netns(&format!("/var/run/netns/{ns}")).map_err(msg)?;
    let r = raise_fd_limit(conns.div_ceil(shares) + SPARE_FDS)
        .and_then(|()| iperf_client(conns, (share, shares), ports, secs, buffer));
    println!("{}", serde_json::to_string(&r).map_err(msg)?);
    Ok(if r.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Round trips from A to an echo in B, both sides in `mode`.
fn rtt(a: &Netns, b: &Netns, mode: Mode) -> Result<Vec<u64>, String> {
    let server = NsServer::start(b, || TcpListener::bind((SERVER_IP, ECHO_PORT)), move |l, stop| echo(l, stop, mode))?;
    let r = a.enter(move || {
        pin_side(0);
        let s = TcpStream::connect((SERVER_IP, ECHO_PORT)).map_err(msg)?;
        s.set_nodelay(true).and_then(|_| mode.apply_tcp(&s)).map_err(msg)?;
        let mut buf = [0u8; RTT_PAYLOAD];
        rtt_samples(|seq| {
            let t0 = Instant::now();
            let req = request(seq);
            write_all(&s, &req, t0)?;
            read_exact(&s, &mut buf, t0)?;
            if buf[..8] != req[..8] {
                return Err("round trip: the echo answered another request".into());
            }
            Ok(Some(since(t0)))
        })
    });
    server.finish()?;
    r.map_err(msg)?
}

/// Connection cycles from A to the sink in B, one at a time, blocking sockets.
fn cycles(a: &Netns, b: &Netns, secs: Duration) -> Result<Cycles, String> {
    let _servers = sink_peers(b, None, secs, 1)?;
    let r = a.enter(move || -> Result<Cycles, String> {
        pin_side(0);
        let (mut handshake, mut cycle, mut report) = (Vec::new(), Vec::new(), Vec::new());
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
            let mut s = TcpStream::connect((SERVER_IP, SINK_PORT)).map_err(|e| format!("connect: {e}"))?;
            let up = since(t0);
            s.set_read_timeout(Some(STEP_TIMEOUT)).map_err(msg)?;
            s.shutdown(Shutdown::Write).map_err(msg)?;
            report.clear();
            s.read_to_end(&mut report).map_err(|e| format!("reading the report: {e}"))?;
            drop(s);
            if i >= WARMUP_CYCLES {
                handshake.push(up);
                cycle.push(since(t0));
                end = Instant::now();
            }
        }
        handshake.sort_unstable();
        cycle.sort_unstable();
        let rate = handshake.len() as f64 / (end - start).as_secs_f64().max(1e-9);
        Ok(Cycles { rate, handshake, cycle })
    });
    r.map_err(msg)?
}

// ------------------------------------------------------------------ servers

/// The reporting sink in `b`: one `bench-peer tcp --kernel-netns` child process (side 1) per
/// port of the sink's first `ports`, sockets with `buffer` bytes per direction if given;
/// killed when dropped.
fn sink_peers(b: &Netns, buffer: Option<usize>, secs: Duration, ports: u16) -> Result<Vec<PeerProcess>, String> {
    let limit = (secs + GRACE * 6).as_secs_f64().to_string();
    let buffer = buffer.map(|n| n.to_string());
    let mut peers = Vec::new();
    for port in SINK_PORT..SINK_PORT + ports {
        let port = port.to_string();
        let mut args = vec!["tcp", "--kernel-netns", b.name(), "--sink-port", &port, "--limit", &limit];
        if let Some(n) = &buffer {
            args.extend(["--buffer", n]);
        }
        peers.push(PeerProcess::spawn(&args)?);
    }
    for p in &mut peers {
        p.expect_ready()?;
    }
    Ok(peers)
}

/// The body of `bench-peer tcp --kernel-netns NS --sink-port P`: enter `ns`, listen on `port`,
/// say [`READY`], and serve the sink until killed or `limit` passes.
pub(super) fn run_sink_peer(ns: &str, port: u16, buffer: Option<usize>, limit: Duration) -> Result<ExitCode, String> {
    testbed::netns::enter_netns(&format!("/var/run/netns/{ns}")).map_err(msg)?;
    raise_fd_limit(super::CONNS_PER_PORT + SPARE_FDS)?;
    let l = TcpListener::bind((SERVER_IP, port)).map_err(|e| format!("kernel sink bind {port}: {e}"))?;
    if let Some(n) = buffer {
        set_buffers(l.as_raw_fd(), n).map_err(msg)?;
    }
    // SAFETY: listen on a socket we own; it only raises the backlog of a listening socket.
    if unsafe { libc::listen(l.as_raw_fd(), BACKLOG as i32) } != 0 {
        return Err(format!("listen: {}", std::io::Error::last_os_error()));
    }
    l.set_nonblocking(true).map_err(msg)?;
    println!("{READY}");
    sink(l, &AtomicBool::new(false), limit)?;
    Ok(ExitCode::SUCCESS)
}

/// Serve the iperf protocol until `stop` (or `limit`): count each connection's bytes, answer
/// its FIN with the count (8 bytes little-endian), close.
fn sink(listener: TcpListener, stop: &AtomicBool, limit: Duration) -> Result<(), String> {
    let ep = Epoll::new().map_err(msg)?;
    ep.add(listener.as_raw_fd(), libc::EPOLLIN as u32, LISTENER).map_err(msg)?;
    let mut conns: Vec<Option<(TcpStream, u64)>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let mut buf = vec![0u8; 256 * 1024];
    let deadline = Instant::now() + limit;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let n = ep.wait(&mut events, EPOLL_TICK_MS).map_err(msg)?;
        for ev in &events[..n] {
            let token = ev.u64;
            if token == LISTENER {
                loop {
                    let s = match listener.accept() {
                        Ok((s, _)) => s,
                        Err(e) if nothing_yet(&e) || e.kind() == ErrorKind::ConnectionAborted => break,
                        Err(e) => return Err(format!("accept: {e}")),
                    };
                    s.set_nonblocking(true).map_err(msg)?;
                    let slot = free.pop().unwrap_or_else(|| {
                        conns.push(None);
                        conns.len() - 1
                    });
                    ep.add(s.as_raw_fd(), (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET) as u32, slot as u64)
                        .map_err(msg)?;
                    conns[slot] = Some((s, 0));
                }
                continue;
            }
            let slot = token as usize;
            let Some((s, count)) = conns.get_mut(slot).and_then(Option::as_mut) else { continue };
            let done = loop {
                match s.read(&mut buf) {
                    Ok(0) => {
                        // The send buffer is empty, so the 8 bytes go at once.
                        let _ = s.write(&count.to_le_bytes());
                        break true;
                    }
                    Ok(n) => *count += n as u64,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if nothing_yet(&e) => break false,
                    Err(_) => break true,
                }
            };
            if done {
                conns[slot] = None;
                free.push(slot);
            }
        }
    }
    Ok(())
}

/// Echo one connection until it closes or `stop`.
fn echo(listener: TcpListener, stop: &AtomicBool, mode: Mode) -> Result<(), String> {
    listener.set_nonblocking(true).map_err(msg)?;
    let deadline = Instant::now() + GRACE;
    let s = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if nothing_yet(&e) && !stop.load(Ordering::Relaxed) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => return Err(format!("echo accept: {e}")),
        }
    };
    s.set_nodelay(true).and_then(|_| mode.apply_tcp(&s)).map_err(msg)?;
    let mut buf = vec![0u8; 4096];
    let deadline = Instant::now() + GRACE * 6;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match (&s).read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => write_all(&s, &buf[..n], Instant::now())?,
            Err(e) if nothing_yet(&e) || e.kind() == ErrorKind::Interrupted => std::hint::spin_loop(),
            Err(e) => return Err(format!("echo read: {e}")),
        }
    }
    Ok(())
}

/// Write all of `data` on a (possibly non-blocking) socket, failing [`STEP_TIMEOUT`] after `t0`.
fn write_all(s: &TcpStream, mut data: &[u8], t0: Instant) -> Result<(), String> {
    while !data.is_empty() {
        match (&*s).write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if nothing_yet(&e) || e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("write: {e}")),
        }
        if Instant::now() - t0 > STEP_TIMEOUT {
            return Err(format!("write: no progress within {STEP_TIMEOUT:?}"));
        }
    }
    Ok(())
}

/// Fill `buf` from a (possibly non-blocking or timed) socket, failing [`STEP_TIMEOUT`] after `t0`.
fn read_exact(s: &TcpStream, buf: &mut [u8], t0: Instant) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        match (&*s).read(&mut buf[got..]) {
            Ok(0) => return Err("read: the peer closed".into()),
            Ok(n) => got += n,
            Err(e) if nothing_yet(&e) || e.kind() == ErrorKind::Interrupted => std::hint::spin_loop(),
            Err(e) => return Err(format!("read: {e}")),
        }
        if Instant::now() - t0 > STEP_TIMEOUT {
            return Err(format!("read: nothing within {STEP_TIMEOUT:?}"));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ the epoll client

/// Where one client connection is.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// Connect in progress.
    Connecting,
    /// Sending until the instant.
    Sending(Instant),
    /// Our FIN is out; reading the report.
    Closing,
    /// Report and FIN received.
    Done,
}

/// One client connection of the iperf protocol.
struct Conn {
    s: TcpStream,
    phase: Phase,
    report: Vec<u8>,
    up: Option<Instant>,
    done: Option<Instant>,
}

impl Conn {
    /// Advance on readiness (or on a sweep) at `now`; `chunk` is what to send.
    fn advance(&mut self, now: Instant, secs: Duration, chunk: &[u8]) -> Result<(), String> {
        if self.phase == Phase::Connecting {
            if let Some(e) = self.s.take_error().map_err(msg)? {
                return Err(format!("connect: {e}"));
            }
            if self.s.peer_addr().is_err() {
                return Ok(()); // not connected yet
            }
            self.up = Some(now);
            self.phase = Phase::Sending(now + secs);
        }
        if let Phase::Sending(until) = self.phase {
            if now >= until {
                self.s.shutdown(Shutdown::Write).map_err(msg)?;
                self.phase = Phase::Closing;
            } else {
                loop {
                    match (&self.s).write(chunk) {
                        Ok(_) => {}
                        Err(e) if nothing_yet(&e) => break,
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => return Err(format!("send: {e}")),
                    }
                }
            }
        }
        if self.phase == Phase::Closing {
            let mut buf = [0u8; 64];
            loop {
                match (&self.s).read(&mut buf) {
                    Ok(0) => {
                        self.phase = Phase::Done;
                        self.done = Some(now);
                        break;
                    }
                    Ok(n) => self.report.extend_from_slice(&buf[..n]),
                    Err(e) if nothing_yet(&e) => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(format!("reading the report: {e}")),
                }
            }
        }
        Ok(())
    }
}

/// The iperf protocol from this thread's namespace to the sink: connections `share`,
/// `share + shares`, ... below `conns` (connection `i` to the sink's port `i` modulo `ports`,
/// as the linerate client spreads them), non-blocking in one epoll set, each sending for
/// `secs` once established.
fn iperf_client(
    conns: usize,
    (share, shares): (usize, usize),
    ports: u16,
    secs: Duration,
    buffer: Option<usize>,
) -> Result<ClientTally, String> {
    let ep = Epoll::new().map_err(msg)?;
    let mut all = Vec::with_capacity(conns.div_ceil(shares.max(1)));
    for i in (share..conns).step_by(shares.max(1)) {
        let port = SINK_PORT + (i % usize::from(ports.max(1))) as u16;
        let s = connect_nonblocking(SocketAddrV4::new(SERVER_IP, port), buffer).map_err(|e| format!("connect: {e}"))?;
        let interest = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET;
        ep.add(s.as_raw_fd(), interest as u32, all.len() as u64).map_err(msg)?;
        all.push(Conn { s, phase: Phase::Connecting, report: Vec::new(), up: None, done: None });
    }
    let chunk = vec![0x5au8; 64 * 1024];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let deadline = Instant::now() + secs + GRACE * 3;
    let mut last_sweep = Instant::now();
    while all.iter().any(|c| c.phase != Phase::Done) {
        let now = Instant::now();
        if time_up(now, deadline) {
            let left = all.iter().filter(|c| c.phase != Phase::Done).count();
            return Err(format!("{left} of {} connections did not finish in time", all.len()));
        }
        let n = ep.wait(&mut events, EPOLL_TICK_MS).map_err(msg)?;
        let now = Instant::now();
        for ev in &events[..n] {
            all[ev.u64 as usize].advance(now, secs, &chunk)?;
        }
        // Edge-triggered sockets that stay writable raise no event when their time is up.
        if now - last_sweep >= Duration::from_millis(EPOLL_TICK_MS as u64) {
            last_sweep = now;
            for c in all.iter_mut().filter(|c| matches!(c.phase, Phase::Sending(u) if now >= u)) {
                c.advance(now, secs, &chunk)?;
            }
        }
    }
    let mut received = 0u64;
    for c in &all {
        let r: [u8; 8] = c.report.as_slice().try_into().map_err(|_| format!("a report of {} bytes", c.report.len()))?;
        received += u64::from_le_bytes(r);
    }
    Ok(ClientTally {
        received,
        first_up: all.iter().filter_map(|c| c.up).min().map(Instant::as_nanos),
        last_done: all.iter().filter_map(|c| c.done).max().map(Instant::as_nanos),
    })
}

// ------------------------------------------------------------------ system calls

/// A TCP socket connecting (non-blocking) to `to`, with `buffer` bytes per direction if given.
fn connect_nonblocking(to: SocketAddrV4, buffer: Option<usize>) -> std::io::Result<TcpStream> {
    // SAFETY: socket(2) with constant arguments; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if let Some(n) = buffer {
        set_buffers(fd.as_raw_fd(), n)?;
    }
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: to.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*to.ip()).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: `addr` is a valid sockaddr_in of the size passed; `fd` is open.
    let rc = unsafe {
        libc::connect(fd.as_raw_fd(), &addr as *const _ as *const libc::sockaddr, std::mem::size_of_val(&addr) as u32)
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(TcpStream::from(fd))
}

/// Set SO_SNDBUF and SO_RCVBUF of socket `fd` to `n` bytes (the kernel doubles them).
fn set_buffers(fd: RawFd, n: usize) -> std::io::Result<()> {
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        let v = n as libc::c_int;
        // SAFETY: `v` is a valid c_int of the size passed; `fd` is an open socket.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                &v as *const _ as *const libc::c_void,
                std::mem::size_of_val(&v) as u32,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Raise this process's open-file limit to at least `n` (root may raise the hard limit).
fn raise_fd_limit(n: usize) -> Result<(), String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(format!("getrlimit: {}", std::io::Error::last_os_error()));
    }
    let want = n as libc::rlim_t;
    if lim.rlim_cur >= want {
        return Ok(());
    }
    let new = libc::rlimit { rlim_cur: want, rlim_max: lim.rlim_max.max(want) };
    // SAFETY: `new` is a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
        return Err(format!("cannot raise the open-file limit to {n}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// An epoll instance.
struct Epoll(OwnedFd);

impl Epoll {
    /// A new epoll instance.
    fn new() -> std::io::Result<Epoll> {
        // SAFETY: epoll_create1 with a constant flag; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watch `fd` for `events`, reporting `token`.
    fn add(&self, fd: RawFd, events: u32, token: u64) -> std::io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: `ev` is a valid epoll_event; both descriptors are open.
        if unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Wait up to `timeout_ms` for events; returns how many of `events` were filled.
    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> std::io::Result<usize> {
        // SAFETY: `events` is a writable array of the length passed.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, timeout_ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == ErrorKind::Interrupted { Ok(0) } else { Err(e) };
        }
        Ok(n as usize)
    }
}

/// Goodput runs (bit/s) of each MTU, and of each connection count (a run may fail).
pub type Sweep = (Vec<Vec<f64>>, Vec<Vec<Result<f64, String>>>);

/// Linux TCP between two namespaces over veth: goodput (bit/s) of one connection at each IP
/// MTU of `mtus`, then of each connection count of `conns` (MTU 1500, `buffer` bytes of
/// socket buffer each when given), `reps` runs each; `say` is told each step.
pub fn goodput_sweep(
    mtus: &[usize],
    conns: &[usize],
    buffer: Option<usize>,
    reps: usize,
    secs: Duration,
    say: &dyn Fn(&str),
) -> Result<Sweep, String> {
    let (a, b) = namespaces(["lr-repro-ta", "lr-repro-tb"])?;
    let mut by_mtu = Vec::new();
    for &mtu in mtus {
        say(&format!("Linux over veth: goodput, MTU {mtu}"));
        set_mtu(&a, &b, mtu)?;
        by_mtu.push((0..reps.max(1)).map(|_| iperf(&a, &b, 1, secs, None)).collect::<Result<Vec<f64>, String>>()?);
    }
    set_mtu(&a, &b, MTUS[0])?;
    let mut by_conns = Vec::new();
    for &n in conns {
        say(&format!("Linux over veth: {n} connections"));
        by_conns.push((0..reps.max(1)).map(|_| iperf(&a, &b, n, secs, buffer)).collect());
    }
    Ok((by_mtu, by_conns))
}

#[cfg(test)]
mod tests {
    use super::ClientTally;

    #[test]
    fn client_tallies_merge_into_one_run_from_the_first_start_to_the_last_report() {
        let a = ClientTally { received: 1_000_000, first_up: Some(2_000), last_done: Some(1_000_002_000) };
        let b = ClientTally { received: 3_000_000, first_up: Some(1_000), last_done: Some(2_000_001_000) };
        let m = a.merge(&b).merge(&ClientTally::default());
        assert_eq!((m.received, m.first_up, m.last_done), (4_000_000, Some(1_000), Some(2_000_001_000)));
        assert_eq!(m.goodput().unwrap(), 4_000_000.0 * 8.0 / 2.0);
        assert!(ClientTally::default().goodput().is_err(), "no connection came up");
    }
}
