//! UDP under the stack's memory budget (issue 25): many sockets whose readers never read
//! fill their queues past the budget; the memory held stays under it, datagrams beyond it
//! and sockets beyond the bound are refused and counted, the receive accounting identity
//! holds, and the memory comes back when the sockets close.

use link::{mem, Instant, LinkConfig};
use net::{BindError, Config, Counter, Stack, UdpHandle};
use std::net::SocketAddrV4;
use std::time::Duration;

const MIB: usize = 1024 * 1024;
const SOCKETS: usize = 256;

fn run(a: &mut Stack<mem::MemLink>, b: &mut Stack<mem::MemLink>, now: &mut Instant, steps: usize) {
    for _ in 0..steps {
        *now = *now + Duration::from_micros(200);
        a.poll(*now).unwrap();
        b.poll(*now).unwrap();
    }
}

#[test]
fn unread_udp_sockets_stay_under_the_budget_are_refused_beyond_it_and_give_memory_back() {
    let mut ca = Config::host("10.0.0.1/24").batch(64);
    (ca.tcp.mem_pressure, ca.tcp.mem_limit, ca.udp_max_sockets) = (4 * MIB, 8 * MIB, SOCKETS);
    let (la, lb) = mem::pair(LinkConfig::default().depth(4096));
    let mut a = Stack::new(ca, la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24").batch(64), lb).unwrap();
    let mut now = Instant::ZERO;
    assert_eq!(a.memory().used, 0);

    let socks: Vec<UdpHandle> = (0..SOCKETS).map(|i| a.udp_bind(7000 + i as u16).unwrap()).collect();
    assert_eq!(a.memory().udp, 0, "a bound socket holds no queue storage up front");
    assert_eq!(a.udp_bind(0), Err(BindError::TooManySockets(SOCKETS)));
    assert_eq!(a.counters().get(Counter::udp_bind_refused), 1);

    // 256 sockets x 1 MiB of queue would be 256 MiB; the budget is 8 MiB.
    let tx = b.udp_bind(5000).unwrap();
    let payload = vec![0xab; 1400];
    for _ in 0..40 {
        for i in 0..SOCKETS {
            let to = SocketAddrV4::new(a.ip(), 7000 + i as u16);
            while !b.udp_send_to(tx, to, &payload).unwrap() {
                run(&mut a, &mut b, &mut now, 1);
            }
        }
        run(&mut a, &mut b, &mut now, 5);
        let m = a.memory();
        assert!(m.used <= m.limit, "{m:?}");
    }
    run(&mut a, &mut b, &mut now, 50);
    let m = a.memory();
    let c = a.counters();
    c.rx_accounting().check().unwrap();
    let queued = c.get(Counter::udp_rx_datagrams);
    let refused = c.get(Counter::rx_drop_udp_mem_limit);
    assert_eq!(queued + refused, (40 * SOCKETS) as u64, "every datagram queued or refused: {m:?}");
    assert!(refused > 0 && m.udp > m.limit - 256 * 1024 && m.used <= m.limit, "{m:?} refused {refused}");
    assert_eq!(m.udp, m.used, "no TCP here: {m:?}");
    let waiting: usize = socks.iter().map(|&h| a.udp_queued(h).unwrap()).sum();
    assert_eq!(waiting as u64, queued);

    // Reading one datagram under pressure frees nothing until the queue is empty; closing frees it all.
    let mut buf = [0u8; 2048];
    while a.udp_recv_from(socks[0], &mut buf).unwrap().is_some() {}
    assert!(a.memory().udp < m.udp, "a queue read empty under pressure gives its storage back");
    for h in socks {
        a.udp_close(h).unwrap();
    }
    let m = a.memory();
    assert_eq!((m.used, m.udp, m.udp_sockets), (0, 0, 0), "{m:?}");
    assert!(a.udp_bind(7000).is_ok(), "a closed socket's place is free again");
}
