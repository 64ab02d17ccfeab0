//! The TCP engine's work per connection cycle and per segment, measured without a clock:
//! two stacks joined by a memory link in one thread, virtual time, no other process. Run it
//! under `valgrind --tool=callgrind` (or `perf stat` where there are hardware counters) and
//! divide the instruction count by the cycles or segments it prints; the count is the same
//! on a loaded machine and an idle one, so two builds can be compared where wall-clock
//! benchmarks drown in noise.
//!
//! ```text
//! cargo run --release -p net --example tcp_cost -- cycles 5000
//! cargo run --release -p net --example tcp_cost -- bulk 250 200 8192
//! cargo run --release -p net --example tcp_cost -- bulk-transfer 1 100 262144
//! cargo run --release -p net --example tcp_cost -- pingpong 100000
//! cargo run --release -p net --example tcp_cost -- udp-pingpong 100000
//! cargo run --release -p net --example tcp_cost -- idle 1000000
//! cargo run --release -p net --example tcp_cost -- rtt 200000
//! ```
//!
//! `cycles N`: N connections one after the other, each connect, accept, close from both
//! sides (the connection-rate figure of `linerate bench tcp`). `bulk CONNS MB BUFFER`: CONNS
//! connections with BUFFER-byte buffers carry MB megabytes in all, round-robin (the
//! many-connection aggregate). `bulk-transfer CONNS MB BUFFER`: the same, the sender handing
//! over buffers of BUFFER / 4 bytes with the transfer API (sent from where they lie) while
//! fewer than BUFFER bytes are queued, and reusing acknowledged ones. `pingpong N`: one connection carries N 64-byte requests,
//! each answered by a 64-byte response before the next is sent (the round-trip figure).
//! `udp-pingpong N`: the same over UDP (a 64-byte datagram echoed back).
//! `idle N`: N polls of both hosts with one established connection and nothing to do (what
//! a busy-polling host spends between segments). `rtt N [shm]`: not a count but a clock: the two
//! hosts in two threads on real time, busy-polling, N 64-byte exchanges; prints the median
//! and 10th percentile round trip (to compare two builds run alternately on one machine);
//! default buffers, on the memory link or with `shm` the shared-memory link. A last argument
//! `ipv6` runs the mode over IPv6 (fd77::1 to fd77::2) instead of IPv4.

use link::{mem, Instant, LinkConfig};
use net::{Config, Recv, Stack, TcpHandle};
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV4};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

type Host = Stack<mem::MemLink>;

/// Virtual time per poll round.
const TICK: Duration = Duration::from_micros(1);
/// Poll rounds any one step may take before the run counts as stalled.
const STEP_LIMIT: u64 = 10_000_000;

/// Connect over IPv6 (a trailing `ipv6` argument): the hosts get fd77::1 and fd77::2 too.
static IPV6: AtomicBool = AtomicBool::new(false);

/// Host `ip` (IPv4 CIDR), and with IPV6 the IPv6 address `fd77::` + its last octet, usable at
/// once (no duplicate address detection).
fn host_config(ip: &str) -> Config {
    let mut c = Config::host(ip);
    if IPV6.load(Ordering::Relaxed) {
        let last = ip.split('/').next().and_then(|a| a.rsplit('.').next()).unwrap_or("1");
        c = c.ipv6_addr(&format!("fd77::{last}/64")).unwrap();
        c.ipv6.ndp.dad_transmits = 0;
    }
    c
}

/// The server's port 80 on `b`, in the family chosen.
fn server_addr<L: link::Link>(b: &Stack<L>) -> SocketAddr {
    if IPV6.load(Ordering::Relaxed) {
        let last = b.ip().octets()[3];
        SocketAddr::from((Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, u16::from(last)), 80))
    } else {
        SocketAddrV4::new(b.ip(), 80).into()
    }
}

/// Two hosts on one memory link.
fn pair(sessions: usize, buffer: usize) -> (Host, Host) {
    let cfg = |ip: &str| {
        let mut c = host_config(ip);
        c.tcp.secret = [11, 12];
        c.tcp.max_sessions = sessions;
        c.tcp.tx_buffer = buffer;
        c.tcp.rx_buffer = buffer;
        c.tcp.tx_buffer_max = buffer;
        c.tcp.rx_buffer_max = buffer;
        c
    };
    let (la, lb) = mem::pair(LinkConfig { depth: 4096, ..LinkConfig::default() });
    (Stack::new(cfg("10.0.0.1/24"), la).unwrap(), Stack::new(cfg("10.0.0.2/24"), lb).unwrap())
}

struct Clock(Instant);

impl Clock {
    /// Poll both hosts once at the next tick.
    fn round(&mut self, a: &mut Host, b: &mut Host) {
        self.0 = self.0 + TICK;
        a.poll(self.0).unwrap();
        b.poll(self.0).unwrap();
    }
}

/// Poll until `done` holds.
fn until(
    clock: &mut Clock,
    a: &mut Host,
    b: &mut Host,
    what: &str,
    mut done: impl FnMut(&mut Host, &mut Host) -> bool,
) {
    for _ in 0..STEP_LIMIT {
        if done(a, b) {
            return;
        }
        clock.round(a, b);
    }
    panic!("stalled: {what}");
}

fn cycles(n: usize) {
    let (mut a, mut b) = pair(2 * n + 64, 4096);
    let mut clock = Clock(Instant::ZERO);
    let l = b.tcp_listen(80, 64).unwrap();
    let to = server_addr(&b);
    let mut scratch = [0u8; 64];
    for _ in 0..n {
        let c = a.tcp_connect(to).unwrap();
        let s = handshake(&mut clock, &mut a, &mut b, l, c);
        a.tcp_shutdown(c).unwrap();
        until(&mut clock, &mut a, &mut b, "the client's FIN", |_, b| {
            while let Recv::Data(_) = b.tcp_recv(s, &mut scratch).unwrap() {}
            b.tcp_at_eof(s).unwrap()
        });
        b.tcp_close(s).unwrap();
        until(&mut clock, &mut a, &mut b, "the server's FIN", |a, _| {
            while let Recv::Data(_) = a.tcp_recv(c, &mut scratch).unwrap() {}
            a.tcp_at_eof(c).unwrap()
        });
        a.tcp_close(c).unwrap();
    }
    report(&a, &b, &format!("{n} connection cycles"), clock.0);
}

/// How the bulk sender hands its data to the stack.
#[derive(Clone, Copy, PartialEq)]
enum Feed {
    /// `tcp_send`: copied into the send ring.
    Copy,
    /// `tcp_send_transfer` of `buffer / 4`-byte buffers while fewer than `buffer` bytes are
    /// queued, taking acknowledged ones back: sent from where they lie.
    Transfer,
}

fn bulk(conns: usize, mb: u64, buffer: usize, feed: Feed) {
    let (mut a, mut b) = pair(conns + 16, buffer);
    let mut clock = Clock(Instant::ZERO);
    let l = b.tcp_listen(80, conns).unwrap();
    let to = server_addr(&b);
    let clients: Vec<TcpHandle> = (0..conns).map(|_| a.tcp_connect(to).unwrap()).collect();
    let mut servers = Vec::new();
    until(&mut clock, &mut a, &mut b, "every handshake", |_, b| {
        while let Some(s) = b.tcp_accept(l) {
            servers.push(s);
        }
        servers.len() == conns
    });
    let total = mb << 20;
    let chunk = vec![0x5au8; buffer];
    let mut buf = vec![0u8; buffer];
    let (mut queued, mut got) = (0u64, 0u64);
    // After the first round, only connections the stacks report active are stepped (as the
    // services' step plans do), so the count is the stacks' work, not a walk over every
    // connection each round.
    let (watch_a, watch_b) = (a.tcp_watch().unwrap(), b.tcp_watch().unwrap());
    let (mut active_a, mut active_b) = (clients.clone(), servers.clone());
    let mut first = true;
    until(&mut clock, &mut a, &mut b, "the transfer", |a, b| {
        if !first {
            active_a.clear();
            a.tcp_take_activity(watch_a, &mut active_a);
            active_b.clear();
            b.tcp_take_activity(watch_b, &mut active_b);
        }
        first = false;
        for &c in &active_a {
            if queued < total && feed == Feed::Copy {
                let n = ((total - queued) as usize).min(chunk.len());
                queued += a.tcp_send(c, &chunk[..n]).unwrap() as u64;
            }
            while queued < total && feed == Feed::Transfer && a.tcp_send_pending(c).unwrap() < buffer {
                let n = ((total - queued) as usize).min(buffer / 4);
                let mut m = a.tcp_reclaim_transfer(c).unwrap().unwrap_or_else(|| chunk.clone());
                m.truncate(n);
                a.tcp_send_transfer(c, m).unwrap();
                queued += n as u64;
            }
        }
        for &s in &active_b {
            while let Recv::Data(n) = b.tcp_recv(s, &mut buf).unwrap() {
                got += n as u64;
            }
        }
        got >= total
    });
    let how = if feed == Feed::Transfer { ", handed over as transfers" } else { "" };
    report(&a, &b, &format!("{mb} MB over {conns} connections with {buffer}-byte buffers{how}"), clock.0);
}

/// Poll until client `c` is established and listener `l` hands over the server's side of it.
fn handshake(clock: &mut Clock, a: &mut Host, b: &mut Host, l: net::TcpListener, c: TcpHandle) -> TcpHandle {
    let mut server: Option<TcpHandle> = None;
    until(clock, a, b, "handshake", |a, b| {
        if server.is_none() {
            server = b.tcp_accept(l);
        }
        server.is_some() && a.tcp_connect_result(c).unwrap().is_some()
    });
    server.expect("the handshake completed")
}

fn pingpong(n: usize) {
    let (mut a, mut b) = pair(16, 65536);
    let mut clock = Clock(Instant::ZERO);
    let l = b.tcp_listen(80, 4).unwrap();
    let c = a.tcp_connect(server_addr(&b)).unwrap();
    let s = handshake(&mut clock, &mut a, &mut b, l, c);
    let message = [0x5au8; 64];
    let mut buf = [0u8; 64];
    for _ in 0..n {
        assert_eq!(a.tcp_send(c, &message).unwrap(), 64, "the request did not fit");
        let mut got = 0;
        until(&mut clock, &mut a, &mut b, "the request", |_, b| {
            while let Recv::Data(k) = b.tcp_recv(s, &mut buf).unwrap() {
                got += k;
            }
            got == 64
        });
        assert_eq!(b.tcp_send(s, &message).unwrap(), 64, "the response did not fit");
        got = 0;
        until(&mut clock, &mut a, &mut b, "the response", |a, _| {
            while let Recv::Data(k) = a.tcp_recv(c, &mut buf).unwrap() {
                got += k;
            }
            got == 64
        });
    }
    report(&a, &b, &format!("{n} request/response exchanges of 64 B"), clock.0);
}

/// `udp-pingpong N`: N 64-byte datagrams, each echoed back before the next is sent (the UDP
/// round-trip figure beside TCP's; no TCP session).
fn udp_pingpong(n: usize) {
    let (mut a, mut b) = pair(16, 65536);
    let mut clock = Clock(Instant::ZERO);
    let (sa, sb) = (a.udp_bind(0).unwrap(), b.udp_bind(7).unwrap());
    let mut dst = server_addr(&b);
    dst.set_port(7);
    let message = [0x5au8; 64];
    let mut buf = [0u8; 128];
    for _ in 0..n {
        assert!(a.udp_send_to(sa, dst, &message).unwrap(), "the request did not fit");
        let mut from = None;
        until(&mut clock, &mut a, &mut b, "the request", |_, b| {
            from = b.udp_recv_from(sb, &mut buf).unwrap().map(|(_, f)| f);
            from.is_some()
        });
        let from = from.expect("until returns once a datagram came");
        assert!(b.udp_send_to(sb, from, &message).unwrap(), "the response did not fit");
        until(&mut clock, &mut a, &mut b, "the response", |a, _| a.udp_recv_from(sa, &mut buf).unwrap().is_some());
    }
    println!("{n} UDP request/response exchanges of 64 B; {:?} of virtual time", clock.0 - Instant::ZERO);
}

fn idle(n: usize) {
    let (mut a, mut b) = pair(16, 65536);
    let mut clock = Clock(Instant::ZERO);
    let l = b.tcp_listen(80, 4).unwrap();
    let c = a.tcp_connect(server_addr(&b)).unwrap();
    handshake(&mut clock, &mut a, &mut b, l, c);
    let mut buf = [0u8; 64];
    for _ in 0..n {
        clock.round(&mut a, &mut b);
        assert!(matches!(a.tcp_recv(c, &mut buf).unwrap(), Recv::WouldBlock), "nothing was sent");
    }
    report(&a, &b, &format!("{n} idle poll rounds"), clock.0);
}

fn rtt(n: usize, shm: bool) {
    let cfg = |ip: &str| {
        let mut c = host_config(ip);
        c.tcp.secret = [11, 12];
        c
    };
    if shm {
        let name = format!("tcp-cost-{}", std::process::id());
        let la = link::shm::ShmLink::create(&name, LinkConfig::default()).unwrap();
        let lb = link::shm::ShmLink::open(&name, Duration::from_secs(5)).unwrap();
        rtt_on(Stack::new(cfg("10.0.0.1/24"), la).unwrap(), Stack::new(cfg("10.0.0.2/24"), lb).unwrap(), n);
    } else {
        let (la, lb) = mem::pair(LinkConfig { depth: 4096, ..LinkConfig::default() });
        rtt_on(Stack::new(cfg("10.0.0.1/24"), la).unwrap(), Stack::new(cfg("10.0.0.2/24"), lb).unwrap(), n);
    }
}

fn rtt_on<L: link::Link + Send + 'static>(mut a: Stack<L>, mut b: Stack<L>, n: usize) {
    let l = b.tcp_listen(80, 4).unwrap();
    let c = a.tcp_connect(server_addr(&b)).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server_stop = stop.clone();
    let server = std::thread::spawn(move || {
        let mut conn = None;
        let mut buf = [0u8; 64];
        let mut got = 0;
        while !server_stop.load(std::sync::atomic::Ordering::Relaxed) {
            b.poll(Instant::now()).unwrap();
            let Some(s) = conn.or_else(|| b.tcp_accept(l)) else { continue };
            conn = Some(s);
            if let Recv::Data(k) = b.tcp_recv(s, &mut buf[got..]).unwrap() {
                got += k;
                if got == 64 {
                    got = 0;
                    assert_eq!(b.tcp_send(s, &buf).unwrap(), 64);
                    b.flush().unwrap();
                }
            }
        }
    });
    let start = std::time::Instant::now();
    while a.tcp_connect_result(c).unwrap().is_none() {
        a.poll(Instant::now()).unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "no connection");
    }
    let message = [0x5au8; 64];
    let mut buf = [0u8; 64];
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + 1000 {
        let t0 = std::time::Instant::now();
        assert_eq!(a.tcp_send(c, &message).unwrap(), 64);
        a.flush().unwrap();
        let mut got = 0;
        while got < 64 {
            a.poll(Instant::now()).unwrap();
            if let Recv::Data(k) = a.tcp_recv(c, &mut buf[got..]).unwrap() {
                got += k;
            }
            assert!(t0.elapsed() < Duration::from_secs(2), "no echo");
        }
        if i >= 1000 {
            samples.push(t0.elapsed().as_nanos() as u64);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
    samples.sort_unstable();
    println!(
        "{n} exchanges of 64 B on real time: median {} ns, 10th percentile {} ns",
        samples[n / 2],
        samples[n / 10]
    );
}

fn report(a: &Host, b: &Host, what: &str, end: Instant) {
    let count = |h: &Host, name: &str| h.counters().iter().find(|c| c.0 == name).map_or(0, |c| c.1);
    let (sa, sb) = (count(a, "tcp_tx_segments"), count(b, "tcp_tx_segments"));
    println!(
        "{what}: {sa} segments sent by the client side, {sb} by the server side, {} in all; {:?} of virtual time ({} µs per poll round)",
        sa + sb,
        end - Instant::ZERO,
        TICK.as_micros()
    );
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.last().is_some_and(|a| a == "ipv6") {
        args.pop();
        IPV6.store(true, Ordering::Relaxed);
    }
    let num = |i: usize, default: u64| args.get(i).map_or(Ok(default), |s| s.parse::<u64>()).ok();
    match (args.first().map(String::as_str), num(1, 5000), num(2, 200), num(3, 8192)) {
        (Some("cycles"), Some(n), _, _) if n > 0 => cycles(n as usize),
        (Some("pingpong"), Some(n), _, _) if n > 0 => pingpong(n as usize),
        (Some("idle"), Some(n), _, _) if n > 0 => idle(n as usize),
        (Some("udp-pingpong"), Some(n), _, _) if n > 0 => udp_pingpong(n as usize),
        (Some("rtt"), Some(n), _, _) if n > 0 => rtt(n as usize, args.get(2).is_some_and(|a| a == "shm")),
        (Some("bulk"), Some(c), Some(mb), Some(buf)) if c > 0 && mb > 0 && buf >= 1024 => {
            bulk(c as usize, mb, buf as usize, Feed::Copy)
        }
        (Some("bulk-transfer"), Some(c), Some(mb), Some(buf)) if c > 0 && mb > 0 && buf >= 1024 => {
            bulk(c as usize, mb, buf as usize, Feed::Transfer)
        }
        _ => {
            eprintln!(
                "usage: tcp_cost MODE [ipv6], MODE: cycles N | bulk|bulk-transfer CONNECTIONS MEGABYTES BUFFER_BYTES | pingpong N | udp-pingpong N | idle N | rtt N [shm]"
            );
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
