//! Soak in virtual time (issue 25): a churn of connections opening, exchanging data,
//! stalling (a reader that stops reading), being reset and closing, over an impaired link
//! (loss, reordering, duplication, delay) both ways; at the end the session tables, timers,
//! buffer memory and reassembly are back at their baseline (a leak fails the test) and every
//! received frame has one verdict.

use link::impair::{Impaired, Impairment};
use link::{mem, Instant, LinkConfig};
use net::{Config, Recv, Stack, TcpHandle, TcpState};
use std::net::SocketAddrV4;
use std::time::Duration;

type Host = Stack<Impaired<mem::MemLink>>;

const WAVES: usize = 24;
const PER_WAVE: usize = 100;

fn cfg(ip: &str) -> Config {
    let mut c = Config::host(ip).batch(64);
    c.tcp.secret = [11, 13];
    c.tcp.max_sessions = 1024;
    c.tcp.syn_backlog = 1024;
    c.tcp.time_wait = Duration::from_secs(2);
    c.tcp.tx_buffer = 32 * 1024;
    c.tcp.rx_buffer = 32 * 1024;
    c.tcp.mem_pressure = 4 << 20;
    c.tcp.mem_limit = 8 << 20;
    c.tcp.zero_window_limit = Some(Duration::from_secs(20));
    c
}

fn impairment(seed: u64) -> Impairment {
    Impairment {
        loss: 0.01,
        reorder: 0.01,
        duplicate: 0.005,
        delay: Duration::from_micros(500),
        seed,
        ..Default::default()
    }
}

/// What a client connection does in its life.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fate {
    /// Send 20 KB, read the server's 20 KB, close.
    Exchange,
    /// The server sends 200 KB the client never reads; the client aborts after a while.
    Stall,
    /// The client resets the connection after its first exchange.
    Reset,
}

fn step(a: &mut Host, b: &mut Host, now: &mut Instant) {
    *now = *now + Duration::from_micros(250);
    a.poll(*now).unwrap();
    b.poll(*now).unwrap();
}

#[test]
fn a_churn_of_connections_over_an_impaired_link_leaves_nothing_behind() {
    let (la, lb) = mem::pair(LinkConfig::default().depth(4096));
    let mut a: Host = Stack::new(cfg("10.0.0.1/24"), Impaired::new(la, impairment(1)).unwrap()).unwrap();
    let mut b: Host = Stack::new(cfg("10.0.0.2/24"), Impaired::new(lb, impairment(2)).unwrap()).unwrap();
    let listener = a.tcp_listen(80, 1024).unwrap();
    let mut now = Instant::ZERO;
    for _ in 0..200 {
        step(&mut a, &mut b, &mut now);
    }
    let baseline = (a.tcp_memory().used, b.tcp_memory().used);
    let payload: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
    let mut buf = vec![0u8; 64 * 1024];
    let (mut exchanged, mut stalled, mut reset) = (0, 0, 0);
    for wave in 0..WAVES {
        // Open a wave; each client gets a fate.
        let mut clients: Vec<(TcpHandle, Fate, usize, usize)> = (0..PER_WAVE)
            .map(|i| {
                let fate = match (wave + i) % 5 {
                    0 => Fate::Stall,
                    1 => Fate::Reset,
                    _ => Fate::Exchange,
                };
                (b.tcp_connect(SocketAddrV4::new(a.ip(), 80)).unwrap(), fate, 0, 0)
            })
            .collect();
        let mut servers: Vec<(TcpHandle, usize, usize, bool)> = vec![];
        let wave_end = now + Duration::from_secs(30);
        let stall_until = now + Duration::from_secs(3);
        while now < wave_end {
            step(&mut a, &mut b, &mut now);
            while let Some(h) = a.tcp_accept(listener) {
                servers.push((h, 0, 0, false));
            }
            // Servers: read what comes, answer with 20 KB (stalled clients' servers with
            // 200 KB), close after sending.
            for s in servers.iter_mut() {
                let (h, got, sent, closed) = s;
                if *closed {
                    continue;
                }
                match a.tcp_recv(*h, &mut buf) {
                    Ok(Recv::Data(n)) => *got += n,
                    Ok(_) => {}
                    Err(_) => {
                        let _ = a.tcp_close(*h);
                        *closed = true;
                        continue;
                    }
                }
                if *got >= 1 {
                    let want = if *got == 1 { 200_000 } else { payload.len() };
                    while *sent < want {
                        let n = a.tcp_send(*h, &payload[*sent % payload.len()..]).unwrap_or(0).min(want - *sent);
                        if n == 0 {
                            break;
                        }
                        *sent += n;
                    }
                    if *sent >= want {
                        let _ = a.tcp_close(*h);
                        *closed = true;
                    }
                }
            }
            // Clients.
            let mut open = 0;
            for c in clients.iter_mut() {
                let (h, fate, sent, got) = c;
                let Ok(state) = b.tcp_state(*h) else { continue };
                if state == TcpState::Closed {
                    continue;
                }
                open += 1;
                if state != TcpState::Established && state != TcpState::CloseWait {
                    continue;
                }
                match *fate {
                    Fate::Stall => {
                        if *sent == 0 && b.tcp_send(*h, b"s").unwrap_or(0) == 1 {
                            *sent = 1;
                        }
                        if now >= stall_until {
                            b.tcp_abort(*h).unwrap();
                            stalled += 1;
                        }
                    }
                    Fate::Exchange | Fate::Reset => {
                        if *sent < payload.len() {
                            *sent += b.tcp_send(*h, &payload[*sent..]).unwrap_or(0);
                        }
                        if let Ok(Recv::Data(n)) = b.tcp_recv(*h, &mut buf) {
                            *got += n;
                        }
                        if *fate == Fate::Reset && *got > 0 {
                            b.tcp_abort(*h).unwrap();
                            reset += 1;
                        } else if *got >= payload.len() {
                            b.tcp_close(*h).unwrap();
                            exchanged += 1;
                        }
                    }
                }
            }
            if open == 0 && servers.iter().all(|s| s.3) && now >= stall_until {
                break;
            }
        }
        for (h, ..) in clients {
            let _ = b.tcp_close(h);
        }
        for (h, ..) in servers {
            let _ = a.tcp_close(h);
        }
    }
    // Let TIME-WAIT, retransmissions and probes run out.
    let end = now + Duration::from_secs(60);
    while now < end {
        step(&mut a, &mut b, &mut now);
    }
    eprintln!(
        "exchanged {exchanged}, stalled {stalled}, reset {reset}; a {:?}, b {:?}",
        a.tcp_memory(),
        b.tcp_memory()
    );
    assert!(exchanged >= WAVES * PER_WAVE / 2, "{exchanged} exchanges completed");
    assert!(stalled > 0 && reset > 0);
    for (name, h, base) in [("server", &a, baseline.0), ("client", &b, baseline.1)] {
        assert_eq!(h.tcp_sessions(), 0, "{name}: sessions left");
        assert_eq!(h.tcp_timers_armed(), 0, "{name}: timers left");
        assert_eq!(h.reassembly_usage(), (0, 0), "{name}");
        // What stays is the pools' blocks of the configured ring size, nothing else.
        let m = h.tcp_memory();
        assert_eq!(m.used - base, m.pooled, "{name}: ring memory left: {m:?}");
        assert!(m.pooled <= 2 * 1024 * 32 * 1024, "{name}: {m:?}");
        assert!(m.peak <= m.limit, "{name}: {m:?}");
        h.counters().rx_accounting().check().unwrap();
    }
}
