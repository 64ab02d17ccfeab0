//! TCP between two stacks on a mem link, in virtual time.

use link::impair::{Impaired, Impairment};
use link::{mem, Instant, Link, LinkConfig};
use net::{Config, Recv, Stack, TcpHandle, TcpState};
use std::net::SocketAddrV4;
use std::time::Duration;

struct Pair<L: Link> {
    a: Stack<L>,
    b: Stack<L>,
    now: Instant,
}

impl<L: Link> Pair<L> {
    fn step(&mut self) {
        self.now = self.now + Duration::from_micros(10);
        self.a.poll(self.now).unwrap();
        self.b.poll(self.now).unwrap();
    }

    fn run_until(&mut self, limit: Duration, mut f: impl FnMut(&mut Self) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if f(self) {
                return true;
            }
            self.step();
        }
        f(self)
    }
}

fn cfg(ip: &str) -> Config {
    let mut c = Config::host(ip);
    c.tcp.secret = [1, 2];
    c.tcp.max_sessions = 64;
    c
}

fn plain_pair() -> Pair<mem::MemLink> {
    let (la, lb) = mem::pair(LinkConfig::default());
    Pair {
        a: Stack::new(cfg("10.0.0.1/24"), la).unwrap(),
        b: Stack::new(cfg("10.0.0.2/24"), lb).unwrap(),
        now: Instant::ZERO,
    }
}

fn connect<L: Link>(p: &mut Pair<L>, port: u16) -> (TcpHandle, TcpHandle) {
    let l = p.b.tcp_listen(port, 16).unwrap();
    let c = p.a.tcp_connect(SocketAddrV4::new(p.b.ip(), port)).unwrap();
    let mut server = None;
    assert!(p.run_until(Duration::from_secs(10), |p| {
        if server.is_none() {
            server = p.b.tcp_accept(l);
        }
        server.is_some() && p.a.tcp_connect_result(c).unwrap() == Some(Ok(()))
    }));
    (c, server.unwrap())
}

/// Send `data` from a to b through the connection; returns what b received.
fn transfer<L: Link>(p: &mut Pair<L>, c: TcpHandle, s: TcpHandle, data: &[u8], limit: Duration) -> Vec<u8> {
    let mut sent = 0;
    let mut got = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; 65536];
    let ok = p.run_until(limit, |p| {
        if sent < data.len() {
            sent += p.a.tcp_send(c, &data[sent..]).unwrap();
        }
        while let Recv::Data(n) = p.b.tcp_recv(s, &mut buf).unwrap() {
            got.extend_from_slice(&buf[..n]);
        }
        got.len() == data.len()
    });
    assert!(ok, "transfer incomplete: {} of {} bytes; a: {:?}", got.len(), data.len(), p.a.tcp_stats(c).unwrap());
    got
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect()
}

#[test]
fn handshake_negotiates_options() {
    let mut p = plain_pair();
    let (c, s) = connect(&mut p, 5001);
    for st in [p.a.tcp_stats(c).unwrap(), p.b.tcp_stats(s).unwrap()] {
        assert_eq!(st.state, TcpState::Established);
        assert!(st.sack && st.timestamps);
        assert_eq!(st.wscale, Some((9, 9)));
        assert_eq!(st.mss, 1460 - 12);
    }
}

#[test]
fn bulk_transfer_and_close_both_ways() {
    let mut p = plain_pair();
    let (c, s) = connect(&mut p, 5001);
    let data = pattern(3_000_000);
    assert_eq!(transfer(&mut p, c, s, &data, Duration::from_secs(30)), data);
    p.a.tcp_close(c).unwrap();
    let mut buf = [0u8; 16];
    assert!(p.run_until(Duration::from_secs(1), |p| p.b.tcp_recv(s, &mut buf).unwrap() == Recv::Eof));
    assert_eq!(p.b.tcp_state(s).unwrap(), TcpState::CloseWait);
    p.b.tcp_close(s).unwrap();
    assert!(p.run_until(Duration::from_secs(1), |p| p.b.tcp_sessions() == 0));
    assert_eq!(p.a.tcp_sessions(), 1, "a lingers in TIME-WAIT");
}

#[test]
fn a_ring_too_small_for_a_poll_mixes_frames_built_in_place_and_batched_frames_in_order() {
    // Four slots: most polls fill the transmit ring with frames built in place and queue the
    // rest in the stack's batch, so both paths and the switch between them carry the data.
    let (la, lb) = mem::pair(LinkConfig::default().depth(4));
    let mut p = Pair {
        a: Stack::new(cfg("10.0.0.1/24"), la).unwrap(),
        b: Stack::new(cfg("10.0.0.2/24"), lb).unwrap(),
        now: Instant::ZERO,
    };
    let (c, s) = connect(&mut p, 5001);
    let (up, down) = (pattern(400_000), pattern(300_001));
    let (mut sent_up, mut sent_down) = (0, 0);
    let (mut got_up, mut got_down) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 65536];
    let done = p.run_until(Duration::from_secs(30), |p| {
        sent_up += p.a.tcp_send(c, &up[sent_up..]).unwrap();
        sent_down += p.b.tcp_send(s, &down[sent_down..]).unwrap();
        while let Recv::Data(n) = p.b.tcp_recv(s, &mut buf).unwrap() {
            got_up.extend_from_slice(&buf[..n]);
        }
        while let Recv::Data(n) = p.a.tcp_recv(c, &mut buf).unwrap() {
            got_down.extend_from_slice(&buf[..n]);
        }
        got_up.len() == up.len() && got_down.len() == down.len()
    });
    assert!(done, "{} of {} up, {} of {} down", got_up.len(), up.len(), got_down.len(), down.len());
    assert!(got_up == up && got_down == down, "bytes differ");
    for host in [&p.a, &p.b] {
        // Every frame the stack counts as sent reached the ring, whichever path it took, and
        // in the order it was built: nothing arrived out of order or needed resending.
        let count = |c| host.counters().get(c);
        assert_eq!(count(net::Counter::tx_frames), host.link().stats().tx_frames);
        assert_eq!(host.link().stats().dropped_oversize, 0);
        assert_eq!((count(net::Counter::tcp_out_of_order), count(net::Counter::tcp_retransmits)), (0, 0));
    }
}

#[test]
fn refused_connection_reports_refused() {
    let mut p = plain_pair();
    let c = p.a.tcp_connect(SocketAddrV4::new(p.b.ip(), 9)).unwrap();
    assert!(p.run_until(Duration::from_secs(1), |p| p.a.tcp_connect_result(c).unwrap().is_some()));
    assert_eq!(p.a.tcp_connect_result(c).unwrap(), Some(Err(net::TcpError::Refused)));
}

#[test]
fn transfer_survives_loss_reordering_and_duplication() {
    for (loss, seed) in [(0.01, 1u64), (0.05, 2), (0.10, 3)] {
        let imp = Impairment {
            loss,
            duplicate: 0.01,
            reorder: 0.01,
            delay: Duration::from_micros(100),
            seed,
            ..Default::default()
        };
        let (la, lb) = mem::pair(LinkConfig::default());
        let la: Box<dyn Link> = Box::new(Impaired::new(la, imp).unwrap());
        let lb: Box<dyn Link> = Box::new(Impaired::new(lb, Impairment { seed: seed + 100, ..imp }).unwrap());
        let mut p = Pair {
            a: Stack::new(cfg("10.0.0.1/24"), la).unwrap(),
            b: Stack::new(cfg("10.0.0.2/24"), lb).unwrap(),
            now: Instant::ZERO,
        };
        let (c, s) = connect(&mut p, 5001);
        let data = pattern(1_000_000);
        let got = transfer(&mut p, c, s, &data, Duration::from_secs(120));
        if let Some(i) = (0..data.len()).find(|&i| got[i] != data[i]) {
            panic!("loss {loss}: first difference at byte {i} of {}", data.len());
        }
        let st = p.a.tcp_stats(c).unwrap();
        assert!(st.retransmits > 0, "loss {loss}: {st:?}");
    }
}

/// With more sessions than a stack keeps storage for, emptied rings hand their memory to the
/// next ring that needs it: 200 connections with 4 KiB buffers carry distinct data both ways
/// at once over a link that loses, reorders and duplicates (so receive rings also hold
/// out-of-order data, which must never be handed away), and every byte arrives in place.
#[test]
fn a_crowded_stack_shares_ring_storage_without_mixing_connections() {
    const CONNS: usize = 200;
    const BYTES: usize = 30_000;
    let imp = Impairment {
        loss: 0.02,
        duplicate: 0.01,
        reorder: 0.02,
        delay: Duration::from_micros(50),
        seed: 9,
        ..Default::default()
    };
    let (la, lb) = mem::pair(LinkConfig::default().depth(4096));
    let la: Box<dyn Link> = Box::new(Impaired::new(la, imp).unwrap());
    let lb: Box<dyn Link> = Box::new(Impaired::new(lb, Impairment { seed: 19, ..imp }).unwrap());
    let crowded = |ip: &str| {
        let mut c = cfg(ip);
        c.tcp.max_sessions = CONNS + 8;
        c.tcp.syn_backlog = CONNS;
        (c.tcp.tx_buffer, c.tcp.rx_buffer, c.tcp.tx_buffer_max, c.tcp.rx_buffer_max) = (4096, 4096, 4096, 4096);
        c
    };
    let mut p = Pair {
        a: Stack::new(crowded("10.0.0.1/24"), la).unwrap(),
        b: Stack::new(crowded("10.0.0.2/24"), lb).unwrap(),
        now: Instant::ZERO,
    };
    let l = p.b.tcp_listen(7000, CONNS).unwrap();
    let clients: Vec<TcpHandle> =
        (0..CONNS).map(|_| p.a.tcp_connect(SocketAddrV4::new(p.b.ip(), 7000)).unwrap()).collect();
    let mut servers = Vec::new();
    assert!(p.run_until(Duration::from_secs(30), |p| {
        while let Some(h) = p.b.tcp_accept(l) {
            servers.push(h);
        }
        servers.len() == CONNS
    }));
    // Connection i sends bytes (i + k) mod 251 from a to b, and (i * 7 + k) mod 253 from b to a.
    let up = |i: usize, k: usize| ((i + k) % 251) as u8;
    let down = |i: usize, k: usize| ((i * 7 + k) % 253) as u8;
    // Servers are matched to clients by the first byte each carries.
    let mut sent = vec![[0usize; 2]; CONNS];
    let mut got_up: Vec<Vec<u8>> = vec![Vec::new(); CONNS];
    let mut got_down: Vec<Vec<u8>> = vec![Vec::new(); CONNS];
    let mut buf = [0u8; 4096];
    let done = p.run_until(Duration::from_secs(600), |p| {
        for (i, &c) in clients.iter().enumerate() {
            if sent[i][0] < BYTES {
                let chunk: Vec<u8> = (sent[i][0]..BYTES.min(sent[i][0] + 1500)).map(|k| up(i, k)).collect();
                sent[i][0] += p.a.tcp_send(c, &chunk).unwrap();
            }
            if let Recv::Data(n) = p.a.tcp_recv(c, &mut buf).unwrap() {
                got_down[i].extend_from_slice(&buf[..n]);
            }
        }
        for (j, &s) in servers.iter().enumerate() {
            if sent[j][1] < BYTES {
                let chunk: Vec<u8> = (sent[j][1]..BYTES.min(sent[j][1] + 1500)).map(|k| down(j, k)).collect();
                sent[j][1] += p.b.tcp_send(s, &chunk).unwrap();
            }
            if let Recv::Data(n) = p.b.tcp_recv(s, &mut buf).unwrap() {
                got_up[j].extend_from_slice(&buf[..n]);
            }
        }
        got_up.iter().chain(&got_down).all(|g| g.len() == BYTES)
    });
    assert!(
        done,
        "not every byte arrived: {} of {} streams complete",
        got_up.iter().chain(&got_down).filter(|g| g.len() == BYTES).count(),
        2 * CONNS
    );
    for (i, g) in got_down.iter().enumerate() {
        // Server j answered client i: j is whichever server received client i's stream.
        let j =
            got_up.iter().position(|u| u[0] == up(i, 0) && u[1] == up(i, 1) && (0..BYTES).all(|k| u[k] == up(i, k)));
        assert!(j.is_some(), "client {i}'s stream arrived nowhere intact");
        let j = j.unwrap();
        assert!((0..BYTES).all(|k| g[k] == down(j, k)), "client {i} received something other than server {j}'s stream");
    }
}
