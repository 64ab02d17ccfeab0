//! CPU cost of RDMA writes versus plain UDP datagrams, both ends in one thread on an
//! in-memory link pair, measured as this thread's CPU time: per MiB of 1 MiB writes, and per
//! small exchange (a UDP echo versus a registered write and its ACK). Unlike the two-thread
//! `linerate rdma bench`, the figures do not depend on how a loaded machine schedules two
//! busy-polling threads; use it to compare code changes.
//!
//! `cargo run --release -p rdma --example cpu_cost [MiB] [exchanges]`
//!
//! Instructions per small exchange, independent of load: run `valgrind --tool=callgrind
//! --toggle-collect='cpu_cost::rdma_one' target/release/examples/cpu_cost 1 N` (or `udp_one`)
//! for N = 2000 and N = 4000 and divide the difference by 4000 (two sizes of 2,000 more
//! exchanges each; the set-up and warm-up cancel). Per MiB: `--toggle-collect='cpu_cost::rdma'`
//! (or `udp`) with 8 and 24 MiB, the difference divided by 16. `CPU_COST_DEBUG=1` prints the
//! nodes' counters (no `tx_retransmits` means the count is the same from run to run).

use link::{mem, Instant, LinkConfig};
use net::{Config, Stack};
use rdma::{RdmaConfig, RdmaNode, Status};
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::Duration;

/// CPU time this thread has used.
fn cpu_now() -> std::time::Duration {
    let mut ts = libc_timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into `ts`.
    unsafe {
        clock_gettime(3 /* CLOCK_THREAD_CPUTIME_ID */, &mut ts)
    };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[repr(C)]
struct libc_timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clk: i32, ts: *mut libc_timespec) -> i32;
}

fn stacks() -> (Stack<mem::MemLink>, Stack<mem::MemLink>) {
    let (la, lb) = mem::pair(LinkConfig::default());
    let mut cb = Config::host("10.0.0.2/24");
    cb.socket_rx_queue = 4096;
    (Stack::new(Config::host("10.0.0.1/24"), la).unwrap(), Stack::new(cb, lb).unwrap())
}

fn rdma(mib: usize) -> f64 {
    let (mut sa, mut sb) = stacks();
    // A long timeout: under callgrind (about 50x slower) no packet is resent, so the
    // instruction count is the same from run to run.
    let cfg = RdmaConfig {
        window: 256,
        rto: Duration::from_secs(1),
        max_rto: Duration::from_secs(10),
        ..RdmaConfig::default()
    };
    let mut a = RdmaNode::new(&mut sa, cfg.clone()).unwrap();
    let mut b = RdmaNode::new(&mut sb, cfg).unwrap();
    let key = b.register(vec![0u8; 1 << 20]).unwrap();
    let dst = b.address(&sb);
    let data: Arc<[u8]> = vec![0x5a; 1 << 20].into();
    let t0 = cpu_now();
    let (mut posted, mut done) = (0, 0);
    while done < mib {
        while posted < mib && posted - done < 64 {
            a.post_write(dst, key, 0, data.clone()).unwrap();
            posted += 1;
        }
        let now = Instant::now();
        sa.poll(now).unwrap();
        a.poll(&mut sa, now).unwrap();
        sb.poll(now).unwrap();
        b.poll(&mut sb, now).unwrap();
        while b.notifications().poll().is_some() {}
        while let Some(c) = a.completions().poll() {
            assert_eq!(c.status, Status::Ok);
            done += 1;
        }
    }
    debug_counters(&a, &b);
    (cpu_now() - t0).as_secs_f64() * 1e9 / mib as f64
}

/// With `CPU_COST_DEBUG` set, both nodes' non-zero counters on stderr (a resend shows here).
fn debug_counters(a: &RdmaNode, b: &RdmaNode) {
    if std::env::var_os("CPU_COST_DEBUG").is_some() {
        let nz = |c: rdma::Counters| c.iter().filter(|x| x.1 > 0).collect::<Vec<_>>();
        eprintln!("writer {:?}\ntarget {:?}", nz(a.counters()), nz(b.counters()));
    }
}

fn udp(mib: usize) -> f64 {
    let (mut sa, mut sb) = stacks();
    let (ua, ub) = (sa.udp_bind(0).unwrap(), sb.udp_bind(9).unwrap());
    let dst = SocketAddrV4::new([10, 0, 0, 2].into(), 9);
    let payload = vec![0x5au8; 1472];
    let mut buf = vec![0u8; 2048];
    let total = (mib << 20) as u64;
    let t0 = cpu_now();
    let mut got = 0u64;
    while got < total {
        for _ in 0..64 {
            if !sa.udp_send_to(ua, dst, &payload).unwrap() {
                break;
            }
        }
        let now = Instant::now();
        sa.poll(now).unwrap();
        sb.poll(now).unwrap();
        while let Some((n, _)) = sb.udp_recv_from(ub, &mut buf).unwrap() {
            got += n as u64;
        }
    }
    (cpu_now() - t0).as_secs_f64() * 1e9 / mib as f64
}

/// CPU per sequential registered write of `len` bytes (post, wait for both completions).
#[inline(never)] // a symbol of its own, for `callgrind --toggle-collect`
fn rdma_one(n: usize, len: usize) -> f64 {
    let (mut sa, mut sb) = stacks();
    // A long timeout: under callgrind (about 50x slower) no packet is resent.
    let cfg = RdmaConfig { rto: Duration::from_secs(1), max_rto: Duration::from_secs(10), ..RdmaConfig::default() };
    let mut a = RdmaNode::new(&mut sa, cfg.clone()).unwrap();
    let mut b = RdmaNode::new(&mut sb, cfg).unwrap();
    let key = b.register(vec![0u8; 1 << 20]).unwrap();
    let dst = b.address(&sb);
    let data: Arc<[u8]> = vec![0x5a; len].into();
    let mut t0 = cpu_now();
    for i in 0..n + 1000 {
        if i == 1000 {
            t0 = cpu_now();
        }
        a.post_write_with(dst, key, 0, data.clone(), rdma::WriteOptions { registered: Some(true) }).unwrap();
        let (mut sent, mut got) = (false, false);
        while !(sent && got) {
            let now = Instant::now();
            sa.poll(now).unwrap();
            a.poll(&mut sa, now).unwrap();
            sb.poll(now).unwrap();
            b.poll(&mut sb, now).unwrap();
            got |= b.notifications().poll().is_some();
            sent |= a.completions().poll().is_some();
        }
    }
    debug_counters(&a, &b);
    (cpu_now() - t0).as_secs_f64() * 1e9 / n as f64
}

/// CPU per UDP ping-pong of `len` bytes.
#[inline(never)]
fn udp_one(n: usize, len: usize) -> f64 {
    let (mut sa, mut sb) = stacks();
    let (ua, ub) = (sa.udp_bind(0).unwrap(), sb.udp_bind(7).unwrap());
    let dst = SocketAddrV4::new([10, 0, 0, 2].into(), 7);
    let payload = vec![0x5au8; len];
    let mut buf = vec![0u8; 2048];
    let mut t0 = cpu_now();
    for i in 0..n + 1000 {
        if i == 1000 {
            t0 = cpu_now();
        }
        sa.udp_send_to(ua, dst, &payload).unwrap();
        loop {
            let now = Instant::now();
            sa.poll(now).unwrap();
            sb.poll(now).unwrap();
            if let Some((m, from)) = sb.udp_recv_from(ub, &mut buf).unwrap() {
                sb.udp_send_to(ub, from, &buf[..m]).unwrap();
                sb.flush().unwrap();
            }
            if sa.udp_recv_from(ua, &mut buf).unwrap().is_some() {
                break;
            }
        }
    }
    (cpu_now() - t0).as_secs_f64() * 1e9 / n as f64
}

fn main() {
    let arg = |i: usize, default: usize| std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (mib, exchanges) = (arg(1, 256), arg(2, 100_000));
    udp(8);
    rdma(8);
    let (u, r) = (udp(mib), rdma(mib));
    println!(
        "CPU per MiB delivered, 1 MiB writes (both ends, one thread): UDP {:.0} µs, RDMA {:.0} µs, UDP / RDMA {:.2}",
        u / 1e3,
        r / 1e3,
        u / r
    );
    for len in [64, 1024] {
        let (u, r) = (udp_one(exchanges, len), rdma_one(exchanges, len));
        println!("CPU per {len} B exchange: UDP echo {u:.0} ns, registered RDMA write (data + ACK) {r:.0} ns");
    }
}
