//! Connection activity watchers: a service with many connections learns which ones had a
//! segment processed or ended, each once, independently per watcher.

use link::{mem, Instant, LinkConfig};
use net::{Config, Stack, TcpHandle};
use std::net::SocketAddrV4;
use std::time::Duration;

type S = Stack<mem::MemLink>;

fn run(a: &mut S, b: &mut S, now: &mut Instant, polls: usize) {
    for _ in 0..polls {
        *now = *now + Duration::from_micros(10);
        a.poll(*now).unwrap();
        b.poll(*now).unwrap();
    }
}

#[test]
fn only_connections_with_segments_or_endings_are_reported_once_per_watcher() {
    let (la, lb) = mem::pair(LinkConfig::default());
    let (mut a, mut b) =
        (S::new(Config::host("10.0.0.1/24"), la).unwrap(), S::new(Config::host("10.0.0.2/24"), lb).unwrap());
    let l = b.tcp_listen(7, 16).unwrap();
    let mut now = Instant::ZERO + Duration::from_secs(1);
    run(&mut a, &mut b, &mut now, 1);
    let clients: Vec<TcpHandle> = (0..3).map(|_| a.tcp_connect(SocketAddrV4::new(b.ip(), 7)).unwrap()).collect();
    run(&mut a, &mut b, &mut now, 100);
    let servers: Vec<TcpHandle> = std::iter::from_fn(|| b.tcp_accept(l)).collect();
    assert_eq!(servers.len(), 3);
    let (w, w2) = (b.tcp_watch().unwrap(), b.tcp_watch().unwrap());
    let mut seen = Vec::new();
    b.tcp_take_activity(w, &mut seen);
    assert!(seen.is_empty(), "nothing happened since the watchers were made: {seen:?}");
    // Data on the second connection only (several segments: still listed once).
    a.tcp_send(clients[1], &[5u8; 10_000]).unwrap();
    run(&mut a, &mut b, &mut now, 100);
    b.tcp_take_activity(w, &mut seen);
    assert_eq!(seen, vec![servers[1]]);
    seen.clear();
    b.tcp_take_activity(w, &mut seen);
    assert!(seen.is_empty());
    // The peer resets the third: reported as well, and the error is visible.
    a.tcp_abort(clients[2]).unwrap();
    run(&mut a, &mut b, &mut now, 100);
    b.tcp_take_activity(w, &mut seen);
    assert_eq!(seen, vec![servers[2]]);
    assert!(b.tcp_error(servers[2]).unwrap().is_some());
    // The second watcher saw both, independently of the first.
    seen.clear();
    b.tcp_take_activity(w2, &mut seen);
    seen.sort_by_key(|h| h.slot());
    let mut want = vec![servers[1], servers[2]];
    want.sort_by_key(|h| h.slot());
    assert_eq!(seen, want);
}
