//! Mutation of valid frames into malformed ones, for robustness tests and the demo.

use crate::{Testbed, TestbedConfig};
use net::Config;
use std::net::SocketAddrV4;

/// Valid frames of every kind the stack understands, as seeds for mutation.
pub fn seed_frames() -> Vec<Vec<u8>> {
    let mut tb = Testbed::new(TestbedConfig::default());
    let a = tb.add_bench_host(Config::host("10.0.0.1/24")).expect("valid config");
    let target = std::net::Ipv4Addr::new(10, 0, 0, 2);
    let u = tb.host(a).udp_bind(5000).expect("free port");
    tb.host(a).inject(&arp_reply_frame(target)).expect("inject");
    let _ = tb.host(a).udp_send_to(u, SocketAddrV4::new(target, 7), b"hello world");
    let _ = tb.host(a).ping(target, 1, 56);
    let _ = tb.step();
    let frames = tb.bench_collect(a).unwrap_or_default();
    frames
        .into_iter()
        .map(|mut f| {
            // Re-address to the victim (10.0.0.2 / 02:00:0a:00:00:02) from a third party.
            f[..6].copy_from_slice(&[2, 0, 10, 0, 0, 2]);
            f
        })
        .collect()
}

fn arp_reply_frame(from: std::net::Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    let mac = [2, 0, 10, 0, 0, 2];
    f[..6].copy_from_slice(&[2, 0, 10, 0, 0, 1]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    f[22..28].copy_from_slice(&mac);
    f[28..32].copy_from_slice(&from.octets());
    f[32..38].copy_from_slice(&[2, 0, 10, 0, 0, 1]);
    f[38..42].copy_from_slice(&[10, 0, 0, 1]);
    f
}

/// A byte mutation of `seed` into `out`: flips, random bytes, truncation or extension.
pub fn mutate(seed: &[u8], rng: &mut u64, out: &mut Vec<u8>) {
    let mut next = || {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
    };
    out.clear();
    out.extend_from_slice(seed);
    match next() % 4 {
        0 => {
            let n = (next() % out.len().max(1) as u64) as usize;
            out.truncate(n);
        }
        1 => {
            for _ in 0..(next() % 64) {
                out.push(next() as u8);
            }
        }
        _ => {}
    }
    if out.is_empty() {
        return;
    }
    for _ in 0..=(next() % 4) {
        let i = (next() % out.len() as u64) as usize;
        out[i] = next() as u8;
    }
}
