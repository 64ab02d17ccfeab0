//! The whole receive path of a stack: the input is split into frames (2-byte length
//! prefixes) that a host with a bound UDP socket and a raw socket receives one after the
//! other; every frame must be accounted for (delivered or dropped under one reason).
#![no_main]

use libfuzzer_sys::fuzz_target;
use link::{mem, Instant, LinkConfig};
use net::{Config, Counter, Stack};

fuzz_target!(|data: &[u8]| {
    // Small queues and rings keep set-up cheap, so most time goes into the receive path.
    let (la, _lb) = mem::pair(LinkConfig::default().depth(64));
    let mut cfg = Config::host("10.0.0.2/24");
    cfg.socket_rx_queue = 8;
    cfg.arp_max_pending = 8;
    cfg.arp_cache_size = 8;
    let mut host = Stack::new(cfg, la).expect("valid config");
    host.udp_bind(7).expect("free port");
    host.raw_bind(0x88b5).expect("free ethertype");
    let mut rest = data;
    let mut t = 0;
    while rest.len() >= 2 {
        let n = (u16::from_be_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2);
        let frame = &rest[2..2 + n];
        rest = &rest[2 + n..];
        host.inject(frame).expect("mem link does not fail");
        t += 1;
        host.poll(Instant::from_millis(t)).expect("mem link does not fail");
    }
    let c = host.counters();
    assert_eq!(c.get(Counter::rx_delivered) + c.rx_drops(), c.get(Counter::rx_frames));
});
