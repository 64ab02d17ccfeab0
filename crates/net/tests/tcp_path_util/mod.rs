//! A bulk transfer over an emulated path in virtual time: two stacks joined by a memory link
//! whose directions are rate-limited, delayed and (on the data direction) impaired, stepped
//! from event to event. Deterministic: the same path and seed give the same figures.

#![allow(dead_code)]

use link::impair::{Impaired, Impairment};
use link::{mem, Instant, LinkConfig};
use net::{CcAlgorithm, Config, Recv, Stack, TcpConnStats};
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

/// The path between sender and receiver.
#[derive(Debug, Clone, Copy)]
pub struct Path {
    /// Link rate, bits/s (both directions).
    pub rate_bps: u64,
    /// Round-trip propagation delay (half each way).
    pub rtt: Duration,
    /// Loss probability on the data direction.
    pub loss: f64,
    /// Probability a data frame is held back by `max(rtt / 2, 1 ms)` extra.
    pub reorder: f64,
    /// Seed of the impairments.
    pub seed: u64,
    /// Congestion control of the sender.
    pub cc: CcAlgorithm,
    /// Connect over IPv6 (fd77::1 to fd77::2) instead of IPv4.
    pub ipv6: bool,
}

impl Path {
    /// A clean 10 Gbit/s path with the given RTT.
    pub fn ten_gig(rtt: Duration) -> Path {
        Path { rate_bps: 10_000_000_000, rtt, loss: 0.0, reorder: 0.0, seed: 7, cc: CcAlgorithm::NewReno, ipv6: false }
    }
}

/// What a transfer achieved.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Virtual time from the first byte queued to the last byte read.
    pub elapsed: Duration,
    /// Application bytes delivered.
    pub bytes: u64,
    /// The sender's connection statistics at the end.
    pub sender: TcpConnStats,
    /// Data segments the sender put on the wire (first transmissions and retransmissions).
    pub segments_sent: u64,
    /// The sender's counters, by name, at the end.
    pub counters: Vec<(&'static str, u64)>,
    /// (virtual time since start, bytes delivered) every `sample_every`.
    pub progress: Vec<(Duration, u64)>,
}

impl Outcome {
    /// Goodput, bits/s.
    pub fn goodput_bps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.elapsed.as_secs_f64()
    }

    /// A counter of the sender by name.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
    }
}

/// The Mathis et al. bound on Reno goodput, bits/s: MSS / RTT x 1.22 / sqrt(p).
pub fn mathis_bps(mss: u32, rtt: Duration, p: f64) -> f64 {
    mss as f64 * 8.0 / rtt.as_secs_f64() * 1.22 / p.sqrt()
}

/// The receiver's IPv6 address.
pub const RECEIVER6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 2);

/// A host at `ip` (IPv4) and `ip6` (IPv6, usable at once: no duplicate address detection).
pub fn dual_stack(ip: &str, ip6: &str) -> Config {
    let mut c = Config::host(ip).ipv6_addr(ip6).unwrap();
    c.ipv6.ndp.dad_transmits = 0;
    c
}

/// IPv6 is on only for an IPv6 path, so the IPv4 runs see exactly their own frames.
fn config(ip: &str, ip6: &str, cc: CcAlgorithm, ipv6: bool) -> Config {
    let mut c = if ipv6 { dual_stack(ip, ip6) } else { Config::host(ip) };
    c.tcp.secret = [11, 12];
    c.tcp.max_sessions = 4;
    c.tcp.cc = cc;
    c
}

type Host = Stack<Impaired<mem::MemLink>>;

/// Send `total` bytes from a to b over `path`; `sample_every` sets the progress samples.
pub fn transfer(path: Path, total: u64, sample_every: Duration) -> Outcome {
    let one_way = path.rtt / 2;
    let frames = (path.rate_bps as f64 * path.rtt.as_secs_f64() / 8.0 / 1000.0) as usize * 4 + 4096;
    let queue_limit = frames.min(Impairment::MAX_QUEUE);
    let data_dir = Impairment {
        loss: path.loss,
        reorder: path.reorder,
        delay: one_way,
        rate_bps: Some(path.rate_bps),
        queue_limit,
        seed: path.seed,
        ..Default::default()
    };
    let ack_dir = Impairment { loss: 0.0, reorder: 0.0, seed: path.seed ^ 0x5a5a, ..data_dir };
    let (la, lb) = mem::pair(LinkConfig { depth: 4096, ..LinkConfig::default() });
    let la = Impaired::new(la, data_dir).unwrap();
    let lb = Impaired::new(lb, ack_dir).unwrap();
    let mut a: Host = Stack::new(config("10.0.0.1/24", "fd77::1/64", path.cc, path.ipv6), la).unwrap();
    let mut b: Host = Stack::new(config("10.0.0.2/24", "fd77::2/64", path.cc, path.ipv6), lb).unwrap();
    let l = b.tcp_listen(80, 4).unwrap();
    let to: SocketAddr = if path.ipv6 { (RECEIVER6, 80).into() } else { SocketAddrV4::new(b.ip(), 80).into() };
    let c = a.tcp_connect(to).unwrap();
    let mut now = Instant::ZERO;
    let mut server = None;
    let chunk = vec![0x5au8; 64 * 1024];
    let mut buf = vec![0u8; 256 * 1024];
    let (mut queued, mut got) = (0u64, 0u64);
    let mut start = None;
    let mut progress = Vec::new();
    let mut next_sample = sample_every;
    let limit = Instant::ZERO + Duration::from_secs(600);
    let mut rounds = 0u64;
    while got < total {
        rounds += 1;
        assert!(rounds < 200_000_000 && now < limit, "transfer stalled at {got} of {total} bytes, {now:?}");
        let moved = a.poll(now).unwrap() + b.poll(now).unwrap();
        if server.is_none() {
            server = b.tcp_accept(l);
        }
        if let Some(sh) = server {
            if start.is_none() {
                start = Some(now);
            }
            while queued < total {
                let n = ((total - queued) as usize).min(chunk.len());
                let sent = match a.tcp_send(c, &chunk[..n]) {
                    Ok(s) => s,
                    Err(e) => panic!(
                        "send failed: {e} at {now:?} after {got} bytes; sender counters {:?}; receiver {:?}",
                        a.counters().iter().filter(|c| c.1 > 0 && c.0.starts_with("tcp")).collect::<Vec<_>>(),
                        b.counters().iter().filter(|c| c.1 > 0).collect::<Vec<_>>()
                    ),
                };
                queued += sent as u64;
                if sent < n {
                    break;
                }
            }
            while let Recv::Data(n) = b.tcp_recv(sh, &mut buf).unwrap() {
                got += n as u64;
            }
            let t0 = start.unwrap();
            while now - t0 >= next_sample {
                progress.push((next_sample, got));
                next_sample += sample_every;
            }
        }
        if moved > 0 {
            continue;
        }
        // Nothing arrived: skip to the next event (a frame due, a timer), at most 20 µs on
        // (the application side is always ready).
        a.flush().unwrap();
        b.flush().unwrap();
        let next = [a.next_deadline(), b.next_deadline(), next_due(&a), next_due(&b)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + Duration::from_micros(20));
        let next = next.min(now + Duration::from_micros(20));
        now = if next > now { next } else { now + Duration::from_nanos(100) };
    }
    let elapsed = now - start.unwrap();
    let sender = a.tcp_stats(c).unwrap();
    let counters = a.counters().iter().collect::<Vec<_>>();
    let segments_sent = counters.iter().find(|(n, _)| *n == "tcp_tx_segments").map_or(0, |(_, v)| *v);
    Outcome { elapsed, bytes: got, sender, segments_sent, counters, progress }
}

fn next_due(h: &Host) -> Option<Instant> {
    h.link().next_due()
}
