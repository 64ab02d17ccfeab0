//! RX bypass (seed 000): in-order payload handed to the application's handler straight from
//! the frame, through loss, reordering and duplication, with data buffered before the switch
//! delivered first.

use link::impair::{Impaired, Impairment};
use link::{mem, Instant, Link, LinkConfig};
use net::{BypassError, Config, Recv, Stack, TcpHandle};
use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the handler received, per connection.
type Seen = Arc<Mutex<Vec<(TcpHandle, Vec<u8>)>>>;

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Two stacks over links `la`/`lb`; returns them with a connected pair (client on a, server on b).
fn connected<A: Link, B: Link>(la: A, lb: B, now: &mut Instant) -> (Stack<A>, Stack<B>, TcpHandle, TcpHandle) {
    let mut a = Stack::new(Config::host("10.0.0.1/24"), la).unwrap();
    let mut b = Stack::new(Config::host("10.0.0.2/24"), lb).unwrap();
    let l = b.tcp_listen(7, 4).unwrap();
    a.poll(*now).unwrap();
    b.poll(*now).unwrap();
    let c = a.tcp_connect(SocketAddrV4::new(b.ip(), 7)).unwrap();
    for _ in 0..100_000 {
        *now = *now + Duration::from_micros(10);
        a.poll(*now).unwrap();
        b.poll(*now).unwrap();
        if let Some(s) = b.tcp_accept(l) {
            return (a, b, c, s);
        }
    }
    panic!("no connection");
}

fn handler_into(seen: &Seen) -> impl FnMut(TcpHandle, &[u8]) + Send + 'static {
    let seen = seen.clone();
    move |h, data| seen.lock().unwrap().push((h, data.to_vec()))
}

fn bytes_of(seen: &Seen, h: TcpHandle) -> Vec<u8> {
    seen.lock().unwrap().iter().filter(|(c, _)| *c == h).flat_map(|(_, d)| d.iter().copied()).collect()
}

/// Send `data` from a to b until b's handler has it all (bounded in virtual time); checks on
/// every step that b's receive buffer holds no in-order data.
fn transfer<A: Link, B: Link>(
    a: &mut Stack<A>,
    b: &mut Stack<B>,
    c: TcpHandle,
    s: TcpHandle,
    data: &[u8],
    seen: &Seen,
    now: &mut Instant,
) {
    let mut off = 0;
    for _ in 0..2_000_000 {
        if off < data.len() {
            off += a.tcp_send(c, &data[off..]).unwrap();
        }
        *now = *now + Duration::from_micros(10);
        a.poll(*now).unwrap();
        b.poll(*now).unwrap();
        assert_eq!(b.tcp_recv_ready(s).unwrap(), 0, "bypassed data never waits in the receive buffer");
        if bytes_of(seen, s).len() >= data.len() {
            break;
        }
    }
    assert_eq!(bytes_of(seen, s), data);
}

#[test]
fn a_clean_bulk_transfer_reaches_the_handler_in_order_and_the_window_stays_open() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut now = Instant::ZERO + Duration::from_secs(1);
    let (mut a, mut b, c, s) = connected(la, lb, &mut now);
    let seen: Seen = Arc::default();
    b.tcp_set_rx_handler(handler_into(&seen));
    b.tcp_set_rx_bypass(s, true).unwrap();
    let data = pattern(2_000_000);
    transfer(&mut a, &mut b, c, s, &data, &seen, &mut now);
    let st = b.tcp_stats(s).unwrap();
    assert_eq!(st.bytes_received, data.len() as u64);
    assert!(st.rcv_wnd >= 65536, "the window stays the whole buffer: {st:?}");
    // The peer closes: EOF is still reported through tcp_recv.
    a.tcp_close(c).unwrap();
    for _ in 0..1000 {
        now = now + Duration::from_micros(10);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
    }
    assert_eq!(b.tcp_recv(s, &mut [0u8; 16]).unwrap(), Recv::Eof);
}

#[test]
fn loss_reordering_and_duplicates_are_repaired_before_the_handler_sees_data() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let imp = Impairment { loss: 0.02, reorder: 0.03, duplicate: 0.01, seed: 7, ..Impairment::default() };
    let la = Impaired::new(la, imp).unwrap();
    let lb = Impaired::new(lb, Impairment { seed: 8, ..imp }).unwrap();
    let mut now = Instant::ZERO + Duration::from_secs(1);
    let (mut a, mut b, c, s) = connected(la, lb, &mut now);
    let seen: Seen = Arc::default();
    b.tcp_set_rx_handler(handler_into(&seen));
    b.tcp_set_rx_bypass(s, true).unwrap();
    let data = pattern(1_000_000);
    transfer(&mut a, &mut b, c, s, &data, &seen, &mut now);
    let ooo = b.counters().iter().find(|(n, _)| *n == "tcp_out_of_order").map_or(0, |(_, v)| v);
    assert!(ooo > 0, "the impairment produced out-of-order segments");
}

#[test]
fn data_buffered_before_the_switch_comes_first_and_switching_back_buffers_again() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut now = Instant::ZERO + Duration::from_secs(1);
    let (mut a, mut b, c, s) = connected(la, lb, &mut now);
    assert!(matches!(b.tcp_set_rx_bypass(s, true), Err(BypassError::NoHandler)), "no handler yet");
    let step = |a: &mut Stack<mem::MemLink>, b: &mut Stack<mem::MemLink>, now: &mut Instant| {
        for _ in 0..200 {
            *now = *now + Duration::from_micros(10);
            a.poll(*now).unwrap();
            b.poll(*now).unwrap();
        }
    };
    a.tcp_send(c, b"first, buffered; ").unwrap();
    step(&mut a, &mut b, &mut now);
    assert_eq!(b.tcp_recv_ready(s).unwrap(), 17);
    let seen: Seen = Arc::default();
    b.tcp_set_rx_handler(handler_into(&seen));
    b.tcp_set_rx_bypass(s, true).unwrap();
    assert_eq!(b.tcp_recv_ready(s).unwrap(), 0);
    a.tcp_send(c, b"then bypassed").unwrap();
    step(&mut a, &mut b, &mut now);
    assert_eq!(bytes_of(&seen, s), b"first, buffered; then bypassed");
    b.tcp_set_rx_bypass(s, false).unwrap();
    a.tcp_send(c, b"buffered again").unwrap();
    step(&mut a, &mut b, &mut now);
    let mut buf = [0u8; 64];
    assert_eq!(b.tcp_recv(s, &mut buf).unwrap(), Recv::Data(14));
    assert_eq!(&buf[..14], b"buffered again");
    assert_eq!(bytes_of(&seen, s).len(), 30, "the handler saw nothing more");
}
