//! The impairment grid: loss 0–10% x reordering x duplication x delay; in every cell a
//! transfer in each direction arrives with a matching hash, over IPv4 and over IPv6.

use link::impair::{Impaired, Impairment};
use link::{mem, Instant, Link, LinkConfig};
use net::{Config, Recv, Stack, TcpHandle};
use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

/// A host at `ip`, with IPv6 address `ip6` (usable at once) if given.
fn cfg(ip: &str, ip6: Option<&str>) -> Config {
    let mut c = Config::host(ip);
    if let Some(a) = ip6 {
        c = c.ipv6_addr(a).unwrap();
        c.ipv6.ndp.dad_transmits = 0;
    }
    c.tcp.secret = [5, 6];
    c.tcp.max_sessions = 8;
    c
}

fn digest(d: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(d);
    h.finish()
}

fn run_cell(loss: f64, reorder: f64, duplicate: f64, delay: Duration, seed: u64, ipv6: bool) {
    let imp = Impairment { loss, reorder, duplicate, delay, seed, ..Default::default() };
    let (la, lb) = mem::pair(LinkConfig::default());
    let la: Box<dyn Link> = Box::new(Impaired::new(la, imp).unwrap());
    let lb: Box<dyn Link> = Box::new(Impaired::new(lb, Impairment { seed: seed ^ 0xabcd, ..imp }).unwrap());
    let (a6, b6) = if ipv6 { (Some("fd77::1/64"), Some("fd77::2/64")) } else { (None, None) };
    let mut a = Stack::new(cfg("10.0.0.1/24", a6), la).unwrap();
    let mut b = Stack::new(cfg("10.0.0.2/24", b6), lb).unwrap();
    let l = b.tcp_listen(80, 4).unwrap();
    let to: SocketAddr = if ipv6 {
        (Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2), 80).into()
    } else {
        SocketAddrV4::new(b.ip(), 80).into()
    };
    let c = a.tcp_connect(to).unwrap();
    let mut now = Instant::ZERO;
    let mut s: Option<TcpHandle> = None;
    let to_b: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + (i >> 9)) as u8).collect();
    let to_a: Vec<u8> = (0..200_000u32).map(|i| (i * 13 + (i >> 7)) as u8).collect();
    let (mut got_b, mut got_a) = (Vec::new(), Vec::new());
    let mut queued = false;
    let mut buf = vec![0u8; 32768];
    let family = if ipv6 { "IPv6" } else { "IPv4" };
    let cell = format!("{family} loss {loss} reorder {reorder} dup {duplicate} delay {delay:?}");
    for _ in 0..3_000_000 {
        now = now + Duration::from_micros(20);
        a.poll(now).unwrap();
        b.poll(now).unwrap();
        if s.is_none() {
            s = b.tcp_accept(l);
        }
        let Some(sh) = s else { continue };
        if !queued {
            a.tcp_send_transfer(c, to_b.clone()).unwrap();
            b.tcp_send_transfer(sh, to_a.clone()).unwrap();
            queued = true;
        }
        while let Recv::Data(n) = b.tcp_recv(sh, &mut buf).unwrap() {
            got_b.extend_from_slice(&buf[..n]);
        }
        while let Recv::Data(n) = a.tcp_recv(c, &mut buf).unwrap() {
            got_a.extend_from_slice(&buf[..n]);
        }
        if got_b.len() == to_b.len() && got_a.len() == to_a.len() {
            break;
        }
    }
    assert_eq!((got_b.len(), got_a.len()), (to_b.len(), to_a.len()), "{cell}: incomplete");
    assert_eq!(digest(&got_b), digest(&to_b), "{cell}: a->b hash");
    assert_eq!(digest(&got_a), digest(&to_a), "{cell}: b->a hash");
}

#[test]
fn every_cell_of_the_impairment_grid_delivers_intact_data() {
    grid(false);
}

#[test]
fn over_ipv6_every_cell_of_the_impairment_grid_delivers_intact_data() {
    grid(true);
}

fn grid(ipv6: bool) {
    let mut seed = 1;
    for loss in [0.0, 0.01, 0.05, 0.10] {
        for reorder in [0.0, 0.02] {
            for duplicate in [0.0, 0.01] {
                for delay in [Duration::ZERO, Duration::from_millis(1)] {
                    seed += 1;
                    run_cell(loss, reorder, duplicate, delay, seed, ipv6);
                }
            }
        }
    }
}
