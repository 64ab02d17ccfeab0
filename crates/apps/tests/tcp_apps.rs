//! The TCP services (echo, sink/iperf, HTTP, source) between two stacks on a mem link, in
//! virtual time.

use apps::iperf::IperfClient;
use apps::tcp_source::{Payload, SourceOptions};
use apps::{pattern, HttpServer, TcpEcho, TcpSink, TcpSource};
use link::{mem, LinkConfig};
use net::{Config, Stack};
use std::net::SocketAddrV4;
use std::time::Duration;

type S = Stack<mem::MemLink>;

/// Client `a` (10.0.0.1) and server `b` (10.0.0.2) on a mem link.
fn pair() -> (S, S) {
    let (la, lb) = mem::pair(LinkConfig::default());
    let cfg = |ip: &str| {
        let mut c = Config::host(ip);
        c.tcp.max_sessions = 64;
        c
    };
    (Stack::new(cfg("10.0.0.1/24"), la).unwrap(), Stack::new(cfg("10.0.0.2/24"), lb).unwrap())
}

/// Poll both stacks every 10 µs of virtual time, calling `f` after each round, until it
/// returns true or `limit` passes; returns whether it did.
fn run(a: &mut S, b: &mut S, limit: Duration, mut f: impl FnMut(&mut S, &mut S) -> bool) -> bool {
    let mut now = a.now();
    let end = now + limit;
    while now < end {
        now = now + Duration::from_micros(10);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
        if f(a, b) {
            return true;
        }
    }
    false
}

fn server(port: u16) -> SocketAddrV4 {
    SocketAddrV4::new("10.0.0.2".parse().unwrap(), port)
}

fn pattern_bytes(offset: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    pattern::fill(offset, &mut v);
    v
}

#[test]
fn echo_returns_every_byte_on_several_connections_and_closes() {
    echo_round_trip(false);
}

#[test]
fn echo_in_rx_bypass_returns_every_byte_and_never_reads_the_receive_buffer() {
    echo_round_trip(true);
}

fn echo_round_trip(rx_bypass: bool) {
    let (mut a, mut b) = pair();
    let mut echo = TcpEcho::listen(&mut b, 7).unwrap();
    if rx_bypass {
        echo = echo.with_rx_bypass(&mut b);
    }
    let opts = SourceOptions { reply_limit: 1 << 20, ..Default::default() };
    let sizes = [1usize, 1000, 300_000, 700_000];
    let mut srcs: Vec<TcpSource> =
        sizes.iter().map(|&n| TcpSource::new(server(7), Payload::PatternBytes(n as u64), opts)).collect();
    assert!(run(&mut a, &mut b, Duration::from_secs(30), |a, b| {
        echo.serve(b).unwrap();
        srcs.iter_mut().for_each(|s| {
            s.step(a).unwrap();
        });
        srcs.iter().all(TcpSource::is_finished)
    }));
    for (s, &n) in srcs.iter().zip(&sizes) {
        assert!(s.succeeded(), "{:?}", s.error());
        assert_eq!(s.reply(), &pattern_bytes(0, n)[..], "{n} bytes");
    }
    assert!(run(&mut a, &mut b, Duration::from_secs(1), |_, b| {
        echo.serve(b).unwrap();
        echo.connections().open == 0
    }));
    let c = echo.connections();
    assert_eq!((c.accepted, c.completed, c.failed), (4, 4, 0));
    assert_eq!(echo.bytes, sizes.iter().sum::<usize>() as u64);
    // In bypass every byte came from the RX-bypass handler, none from a receive buffer.
    let from_frames = if rx_bypass { echo.bytes } else { 0 };
    assert_eq!(echo.bypassed, from_frames);
}

#[test]
fn iperf_client_gets_the_sinks_byte_counts() {
    iperf_against_sink(false);
}

#[test]
fn iperf_client_gets_the_byte_counts_of_a_sink_in_rx_bypass() {
    iperf_against_sink(true);
}

#[test]
fn iperf_client_spreads_more_connections_than_ephemeral_ports_over_server_ports() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut cfg = Config::host("10.0.0.1/24");
    cfg.tcp.max_sessions = 64;
    // Six ephemeral ports: ten connections to one server port cannot all open.
    cfg.ephemeral_first = 65530;
    let mut a = Stack::new(cfg, la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    let mut sinks: Vec<TcpSink> =
        [5201, 5202].iter().map(|&p| TcpSink::listen(&mut b, p, 16).unwrap().with_report()).collect();
    let mut client = IperfClient::spread(
        &[server(5201).into(), server(5202).into()],
        10,
        Duration::from_millis(100),
        Duration::from_secs(1),
    );
    assert!(run(&mut a, &mut b, Duration::from_secs(10), |a, b| {
        sinks.iter_mut().for_each(|s| {
            s.serve(b).unwrap();
        });
        client.step(a).unwrap();
        client.is_finished()
    }));
    let r = client.result();
    assert_eq!(client.errors().count(), 0, "{:?}", client.errors().next());
    assert_eq!((r.reported, r.connections), (10, 10));
    assert_eq!(sinks.iter().map(|s| s.connections().accepted).collect::<Vec<_>>(), [5, 5]);
    assert_eq!(sinks.iter().map(|s| s.bytes).sum::<u64>(), r.received);
    assert_eq!(IperfClient::spread(&[], 3, Duration::ZERO, Duration::ZERO).result().connections, 0);
}

fn iperf_against_sink(rx_bypass: bool) {
    let (mut a, mut b) = pair();
    let mut sink = TcpSink::listen(&mut b, 5201, 16).unwrap().with_report();
    if rx_bypass {
        sink = sink.with_rx_bypass(&mut b);
    }
    let mut client = IperfClient::new(server(5201), 3, Duration::from_millis(200), Duration::from_secs(1));
    assert!(run(&mut a, &mut b, Duration::from_secs(10), |a, b| {
        sink.serve(b).unwrap();
        client.step(a).unwrap();
        client.is_finished()
    }));
    let r = client.result();
    assert_eq!(client.errors().count(), 0);
    assert_eq!((r.reported, r.connections), (3, 3));
    assert!(r.received > 1_000_000, "{r:?}");
    assert_eq!(r.received, r.sent);
    assert_eq!(sink.bytes, r.received);
    assert!(r.elapsed >= Duration::from_millis(200) && r.bits_per_sec() > 0.0, "{r:?}");
}

#[test]
fn source_retries_while_refused_then_delivers_a_reader() {
    let (mut a, mut b) = pair();
    let data = pattern_bytes(7, 200_000);
    let opts = SourceOptions { retry_interval: Duration::from_millis(20), ..Default::default() };
    let mut src = TcpSource::new(server(9), Payload::Reader(Box::new(std::io::Cursor::new(data.clone()))), opts);
    let mut sink: Option<TcpSink> = None;
    let start = a.now();
    assert!(run(&mut a, &mut b, Duration::from_secs(10), |a, b| {
        if sink.is_none() && a.now() - start > Duration::from_millis(100) {
            sink = Some(TcpSink::listen(b, 9, 16).unwrap());
        }
        if let Some(s) = sink.as_mut() {
            s.serve(b).unwrap();
        }
        src.step(a).unwrap();
        src.is_finished()
    }));
    assert!(src.succeeded(), "{:?}", src.error());
    assert!(src.attempts > 1, "the first attempts were refused");
    assert_eq!(sink.unwrap().bytes, data.len() as u64);
    let mut refused =
        TcpSource::new(server(10), Payload::PatternBytes(1), SourceOptions { retry_for: Duration::ZERO, ..opts });
    assert!(run(&mut a, &mut b, Duration::from_secs(1), |a, _| {
        refused.step(a).unwrap();
        refused.is_finished()
    }));
    assert!(refused.error().unwrap().to_string().contains("refused"));
}

#[test]
fn http_serves_objects_keep_alive_and_errors() {
    let (mut a, mut b) = pair();
    let mut http = HttpServer::listen(&mut b, 80).unwrap();
    let req = b"GET /size/100000 HTTP/1.1\r\nHost: t\r\n\r\nGET /nothing HTTP/1.1\r\n\r\nGET /5 HTTP/1.1\r\nConnection: close\r\n\r\n";
    let opts = SourceOptions { reply_limit: 1 << 20, ..Default::default() };
    let mut src = TcpSource::new(server(80), Payload::Reader(Box::new(&req[..])), opts);
    assert!(run(&mut a, &mut b, Duration::from_secs(10), |a, b| {
        http.serve(b).unwrap();
        src.step(a).unwrap();
        src.is_finished()
    }));
    assert!(src.succeeded(), "{:?}", src.error());
    let reply = src.reply();
    let split = |r: &[u8]| -> (String, usize) {
        let end = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        (String::from_utf8(r[..end].to_vec()).unwrap(), end)
    };
    let (h1, e1) = split(reply);
    assert!(h1.starts_with("HTTP/1.1 200 OK") && h1.contains("Content-Length: 100000"), "{h1}");
    assert_eq!(&reply[e1..e1 + 100_000], &pattern_bytes(0, 100_000)[..]);
    let rest = &reply[e1 + 100_000..];
    let (h2, e2) = split(rest);
    assert!(h2.starts_with("HTTP/1.1 404"), "{h2}");
    let len: usize = h2.split("Content-Length: ").nth(1).unwrap().split("\r\n").next().unwrap().parse().unwrap();
    let (h3, e3) = split(&rest[e2 + len..]);
    assert!(h3.starts_with("HTTP/1.1 200 OK") && h3.contains("Connection: close"), "{h3}");
    assert_eq!(&rest[e2 + len + e3..], &pattern_bytes(0, 5)[..]);
    let c = http.counts();
    assert_eq!((c.ok, c.errors, c.body_bytes), (2, 1, 100_005));
}

#[test]
fn echo_drops_a_connection_reset_while_its_send_buffer_is_full() {
    let (mut a, mut b) = pair();
    let mut echo = TcpEcho::listen(&mut b, 7).unwrap();
    let c = a.tcp_connect(server(7)).unwrap();
    let data = pattern_bytes(0, 64 * 1024);
    let mut sent = 0usize;
    // The client sends and never reads: its window closes, then the echo's send buffer fills.
    run(&mut a, &mut b, Duration::from_secs(2), |a, b| {
        echo.serve(b).unwrap();
        sent += a.tcp_send(c, &data).unwrap();
        false
    });
    assert!(sent > 512 * 1024 && echo.connections().open == 1, "sent {sent}");
    a.tcp_abort(c).unwrap();
    assert!(run(&mut a, &mut b, Duration::from_secs(1), |_, b| {
        echo.serve(b).unwrap();
        echo.connections().open == 0
    }));
    assert_eq!(echo.connections().failed, 1);
    assert_eq!(b.tcp_sessions(), 0, "the session is freed");
}

#[test]
fn echo_in_rx_bypass_aborts_a_client_that_sends_but_never_reads() {
    let (mut a, mut b) = pair();
    let mut echo = TcpEcho::listen(&mut b, 7).unwrap().with_rx_bypass(&mut b);
    let c = a.tcp_connect(server(7)).unwrap();
    let data = pattern_bytes(0, 64 * 1024);
    let mut sent = 0usize;
    // Bypass cannot push back: the echo holds what its send buffer refuses, up to its limit.
    let aborted = run(&mut a, &mut b, Duration::from_secs(5), |a, b| {
        echo.serve(b).unwrap();
        if let Ok(n) = a.tcp_send(c, &data) {
            sent += n;
        }
        echo.connections().failed == 1
    });
    assert!(aborted, "sent {sent}, open {}", echo.connections().open);
    assert!(sent > apps::tcp_echo::MAX_BYPASS_HELD, "sent {sent}");
    assert_eq!(echo.connections().open, 0);
    assert_eq!(b.tcp_sessions(), 0, "the session is freed");
}

/// Every complete response at the start of `r`: (status line, body).
fn responses(mut r: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(p) = r.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&r[..p + 4]).into_owned();
        let len: usize = head
            .split("Content-Length: ")
            .nth(1)
            .and_then(|s| s.split("\r\n").next())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if r.len() < p + 4 + len {
            break;
        }
        out.push((head.lines().next().unwrap_or("").to_string(), r[p + 4..p + 4 + len].to_vec()));
        r = &r[p + 4 + len..];
    }
    out
}

/// `chunks` sent one after another (each whole, as soon as the connection is up) on one
/// connection to the HTTP server, the client half-closing after the last if `shut`; returns
/// the responses received within 50 ms of virtual time (a mem link's round trip is microseconds).
fn pipelined(chunks: &[&[u8]], shut: bool) -> Vec<(String, Vec<u8>)> {
    let (mut a, mut b) = pair();
    let mut http = HttpServer::listen(&mut b, 80).unwrap();
    let c = a.tcp_connect(server(80)).unwrap();
    let mut got = Vec::new();
    let mut sent = 0;
    let mut buf = [0u8; 65536];
    run(&mut a, &mut b, Duration::from_millis(50), |a, b| {
        http.serve(b).unwrap();
        if sent < chunks.len() && a.tcp_state(c).unwrap().is_synchronized() {
            assert_eq!(a.tcp_send(c, chunks[sent]).unwrap(), chunks[sent].len());
            sent += 1;
            if shut && sent == chunks.len() {
                a.tcp_shutdown(c).unwrap();
            }
        }
        if let Ok(net::Recv::Data(n)) = a.tcp_recv(c, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        false
    });
    responses(&got)
}

/// Two requests whose replies are /5 and /size/7, sent whole or split into two sends (inside
/// the first head, around its end, inside the second), with and without a half-close after
/// them: both are answered, in order.
fn assert_both_answered(two: &[u8]) {
    let first = two.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    for shut in [false, true] {
        for split in [0, 5, first - 2, first, first + 1, two.len() - 1] {
            let chunks: Vec<&[u8]> = if split == 0 { vec![two] } else { vec![&two[..split], &two[split..]] };
            let r = pipelined(&chunks, shut);
            let want = [
                ("HTTP/1.1 200 OK".to_string(), pattern_bytes(0, 5)),
                ("HTTP/1.1 200 OK".to_string(), pattern_bytes(0, 7)),
            ];
            assert_eq!(r, want, "split at {split}, half-close {shut}: {:?}", String::from_utf8_lossy(two));
        }
    }
}

#[test]
fn http_answers_two_pipelined_gets_in_order() {
    assert_both_answered(b"GET /5 HTTP/1.1\r\nHost: x\r\n\r\nGET /size/7 HTTP/1.1\r\nHost: x\r\n\r\n");
}

#[test]
fn http_skips_a_request_body_and_answers_the_request_after_it() {
    // A body of known length is read past, on the connection kept alive.
    let (mut a, mut b) = pair();
    let mut http = HttpServer::listen(&mut b, 80).unwrap();
    // The body looks like a request: answering it would show it was not skipped.
    let req: &[u8] =
        b"POST /upload HTTP/1.1\r\nContent-Length: 19\r\n\r\nGET /5 HTTP/1.1\r\n\r\nGET /size/7 HTTP/1.1\r\n\r\n";
    let c = a.tcp_connect(server(80)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let mut sent = false;
    run(&mut a, &mut b, Duration::from_millis(50), |a, b| {
        http.serve(b).unwrap();
        if !sent && a.tcp_state(c).unwrap().is_synchronized() {
            assert_eq!(a.tcp_send(c, req).unwrap(), req.len());
            sent = true;
        }
        if let Ok(net::Recv::Data(n)) = a.tcp_recv(c, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        false
    });
    let r = responses(&got);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0].0, "HTTP/1.1 405 Method Not Allowed");
    assert_eq!(r[1], ("HTTP/1.1 200 OK".to_string(), pattern_bytes(0, 7)));
    let c = http.counts();
    assert_eq!((c.ok, c.errors), (1, 1));
}

#[test]
fn http_ignores_empty_lines_between_pipelined_requests() {
    // RFC 9112 section 2.2: a server SHOULD ignore at least one empty line before a request line.
    assert_both_answered(b"GET /5 HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET /size/7 HTTP/1.1\r\nHost: x\r\n\r\n");
}
