//! TCP's memory budget (issue 25): connections whose peers never read hold their send
//! buffers; the stack-wide use stays under the budget (buffers stop growing and new rings get
//! the minimum size under pressure, sends are refused at the limit, counted), a new
//! connection is still served, and the memory comes back when the stalled connections close.

use link::{mem, Instant, LinkConfig};
use net::{Config, Counter, Recv, Stack, TcpHandle};
use std::net::SocketAddrV4;
use std::time::Duration;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

fn cfg(ip: &str, pressure: usize, limit: usize) -> Config {
    let mut c = Config::host(ip).batch(64);
    c.tcp.secret = [3, 5];
    c.tcp.max_sessions = 512;
    c.tcp.syn_backlog = 512;
    c.tcp.mem_pressure = pressure;
    c.tcp.mem_limit = limit;
    c
}

struct Pair {
    listener: net::TcpListener,
    a: Stack<mem::MemLink>,
    b: Stack<mem::MemLink>,
    now: Instant,
}

impl Pair {
    fn new(a: Config, b: Config) -> Pair {
        let (la, lb) = mem::pair(LinkConfig::default().depth(4096));
        let mut a = Stack::new(a, la).unwrap();
        let listener = a.tcp_listen(80, 512).unwrap();
        Pair { listener, a, b: Stack::new(b, lb).unwrap(), now: Instant::ZERO }
    }

    fn run(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            self.now = self.now + Duration::from_micros(200);
            self.a.poll(self.now).unwrap();
            self.b.poll(self.now).unwrap();
        }
    }

    /// Open `n` connections from b (client) to a (server); returns (server side, client side).
    fn open(&mut self, n: usize) -> (Vec<TcpHandle>, Vec<TcpHandle>) {
        let clients: Vec<_> = (0..n).map(|_| self.b.tcp_connect(SocketAddrV4::new(self.a.ip(), 80)).unwrap()).collect();
        let mut servers = vec![];
        for _ in 0..200 {
            self.run(Duration::from_millis(1));
            while let Some(h) = self.a.tcp_accept(self.listener) {
                servers.push(h);
            }
            if servers.len() == n {
                break;
            }
        }
        assert_eq!(servers.len(), n);
        (servers, clients)
    }
}

/// Fill every connection's send buffer (the peers never read) for `d` of virtual time.
fn stall(p: &mut Pair, servers: &[TcpHandle], d: Duration) {
    let chunk = vec![0x5a; 64 * KIB];
    let end = p.now + d;
    while p.now < end {
        for &h in servers {
            while p.a.tcp_send(h, &chunk).unwrap() > 0 {}
        }
        p.run(Duration::from_millis(5));
    }
}

#[test]
fn stalled_readers_stay_under_the_budget_new_clients_are_served_and_memory_comes_back() {
    // Server a: 4 MiB pressure, 12 MiB limit, 256 KiB rings; client b reads nothing.
    let mut p = Pair::new(cfg("10.0.0.1/24", 4 * MIB, 12 * MIB), cfg("10.0.0.2/24", 1 << 40, 1 << 40));
    let (servers, clients) = p.open(200);
    stall(&mut p, &servers, Duration::from_secs(2));
    let m = p.a.tcp_memory();
    eprintln!(
        "stalled: {m:?}, counters {:?}",
        p.a.counters().iter().filter(|(n, v)| *v > 0 && n.starts_with("tcp_")).collect::<Vec<_>>()
    );
    // Without the budget 200 x 256 KiB = 50 MiB; with it about 4 MiB at full size and the
    // rest at 16 KiB.
    assert!(m.peak <= 12 * MIB, "{m:?}");
    assert!(m.used >= 4 * MIB, "the pressure level was reached: {m:?}");
    assert_eq!(p.a.counters().get(Counter::tcp_tx_buffer_grown), 0, "no growth under pressure");
    // A new client is still served: a request and its answer go through.
    let (s, c) = p.open(1);
    assert_eq!(p.b.tcp_send(c[0], b"GET /").unwrap(), 5);
    p.run(Duration::from_millis(20));
    let mut buf = [0u8; 64];
    assert_eq!(p.a.tcp_recv(s[0], &mut buf).unwrap(), Recv::Data(5));
    assert_eq!(p.a.tcp_send(s[0], b"answer").unwrap(), 6);
    p.run(Duration::from_millis(20));
    assert_eq!(p.b.tcp_recv(c[0], &mut buf).unwrap(), Recv::Data(6));
    // The stalled connections end: their memory comes back (to at most the pools' blocks).
    for (&h, &c) in servers.iter().zip(&clients) {
        p.a.tcp_abort(h).unwrap();
        let _ = p.b.tcp_close(c);
    }
    p.run(Duration::from_millis(50));
    let after = p.a.tcp_memory();
    eprintln!("closed: {after:?}");
    // What stays is the pool's blocks of the configured size, kept for the next connections
    // (at most `storage::POOL_BYTES` per pool): here the sixteen 256 KiB rings.
    assert!(after.used <= 16 * 256 * KIB, "memory came back: {m:?} -> {after:?}");
    p.a.counters().rx_accounting().check().unwrap();
}

#[test]
fn at_the_limit_sends_are_refused_and_counted() {
    // 1 MiB limit: four 256 KiB rings and then nothing.
    let mut p = Pair::new(cfg("10.0.0.1/24", MIB, MIB), cfg("10.0.0.2/24", 1 << 40, 1 << 40));
    let (servers, _clients) = p.open(8);
    stall(&mut p, &servers, Duration::from_millis(500));
    let m = p.a.tcp_memory();
    assert!(m.peak <= MIB, "{m:?}");
    assert!(p.a.counters().get(Counter::tcp_mem_send_refused) > 0);
    // A refused send is back-pressure, not an error.
    assert_eq!(p.a.tcp_send(servers[7], b"more").unwrap(), 0);
}
