//! 65,536 established connections between two stacks (Limago Table I's largest), data moved
//! on every one, none lost.

use link::{mem, Instant, LinkConfig};
use net::{Config, Counter, Recv, Stack, TcpHandle, TcpState};
use std::net::SocketAddrV4;
use std::time::Duration;

const CONNS: usize = 65_536;

fn cfg(ip: &str) -> Config {
    let mut c = Config::host(ip).batch(64);
    c.tcp.secret = [7, 9];
    c.tcp.max_sessions = CONNS + 16;
    c.tcp.tx_buffer = 2048;
    c.tcp.rx_buffer = 2048;
    c.tcp.syn_backlog = CONNS;
    c.ephemeral_first = 1024;
    c
}

#[test]
fn holds_65536_connections_and_moves_data_on_each() {
    let (la, lb) = mem::pair(LinkConfig::default().depth(4096));
    let mut a = Stack::new(cfg("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(cfg("10.0.0.2/24"), lb).unwrap();
    let ports = [5001u16, 5002];
    let listeners: Vec<_> = ports.iter().map(|&p| b.tcp_listen(p, CONNS).unwrap()).collect();
    let mut now = Instant::ZERO;
    let mut step = |a: &mut Stack<mem::MemLink>, b: &mut Stack<mem::MemLink>| {
        now = now + Duration::from_micros(20);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
        b.poll(now).unwrap();
        a.poll(now).unwrap();
    };
    let mut clients: Vec<TcpHandle> = Vec::with_capacity(CONNS);
    let mut servers: Vec<TcpHandle> = Vec::with_capacity(CONNS);
    let mut polls = 0;
    let t_open = std::time::Instant::now();
    while servers.len() < CONNS {
        polls += 1;
        assert!(polls < 2_000_000, "stuck at {} accepted", servers.len());
        let opening = clients.len() - servers.len().min(clients.len());
        for _ in 0..(256usize.saturating_sub(opening)).min(CONNS - clients.len()) {
            let port = ports[clients.len() * 2 / CONNS];
            clients.push(a.tcp_connect(SocketAddrV4::new(b.ip(), port)).unwrap());
        }
        step(&mut a, &mut b);
        for l in &listeners {
            while let Some(h) = b.tcp_accept(*l) {
                servers.push(h);
            }
        }
    }
    eprintln!("open phase: {:?}, {polls} rounds", t_open.elapsed());
    assert_eq!(a.tcp_sessions(), CONNS);
    assert_eq!(b.tcp_sessions(), CONNS);
    for &c in &clients {
        assert_eq!(a.tcp_connect_result(c).unwrap(), Some(Ok(())));
    }
    // Every client sends its index; every server echoes it back; all must arrive.
    for (i, &c) in clients.iter().enumerate() {
        assert_eq!(a.tcp_send(c, &(i as u32).to_be_bytes()).unwrap(), 4);
        if i % 512 == 511 {
            step(&mut a, &mut b);
        }
    }
    let t_data = std::time::Instant::now();
    let mut pending_echo: Vec<usize> = (0..CONNS).collect();
    let mut pending_back: Vec<usize> = (0..CONNS).collect();
    let mut buf = [0u8; 16];
    for _ in 0..2_000 {
        for _ in 0..16 {
            step(&mut a, &mut b);
        }
        pending_echo.retain(|&j| match b.tcp_recv(servers[j], &mut buf).unwrap() {
            Recv::Data(4) => {
                assert_eq!(b.tcp_send(servers[j], &buf[..4]).unwrap(), 4);
                false
            }
            _ => true,
        });
        pending_back.retain(|&i| match a.tcp_recv(clients[i], &mut buf).unwrap() {
            Recv::Data(4) => {
                assert_eq!(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]), i as u32);
                false
            }
            _ => true,
        });
        if pending_back.is_empty() {
            break;
        }
    }
    eprintln!("data phase: {:?}", t_data.elapsed());
    let (done_echo, done_back) = (CONNS - pending_echo.len(), CONNS - pending_back.len());
    assert_eq!((done_echo, done_back), (CONNS, CONNS));
    for &c in clients.iter().take(1000) {
        assert_eq!(a.tcp_state(c).unwrap(), TcpState::Established);
    }
    let per_session = a.tcp_table_bytes_per_session() + 2 * 2048;
    eprintln!(
        "65536 connections: {per_session} bytes per session (tables {} + buffers 4096)",
        a.tcp_table_bytes_per_session()
    );
    assert_eq!(
        a.counters().get(Counter::rx_drop_tcp_table_full) + b.counters().get(Counter::rx_drop_tcp_table_full),
        0
    );
    assert_eq!(a.counters().get(Counter::tcp_rto_fired), 0, "no timeouts on a clean link");
}

#[test]
fn full_session_table_is_counted_not_a_crash() {
    let mut small = cfg("10.0.0.2/24");
    small.tcp.max_sessions = 8;
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut a = Stack::new(cfg("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(small, lb).unwrap();
    let l = b.tcp_listen(80, 64).unwrap();
    let clients: Vec<_> = (0..20).map(|_| a.tcp_connect(SocketAddrV4::new(b.ip(), 80)).unwrap()).collect();
    let mut now = Instant::ZERO;
    for _ in 0..200 {
        now = now + Duration::from_micros(50);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
    }
    let mut accepted = 0;
    while b.tcp_accept(l).is_some() {
        accepted += 1;
    }
    assert_eq!(accepted, 8);
    assert!(b.counters().get(Counter::rx_drop_tcp_table_full) >= 12);
    let established = clients.iter().filter(|&&c| a.tcp_connect_result(c).unwrap() == Some(Ok(()))).count();
    assert_eq!(established, 8);
}
