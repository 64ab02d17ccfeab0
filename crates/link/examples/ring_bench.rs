//! Frames per second through a `mem` pair (two SPSC rings), producer and consumer on two threads.
//!
//! `cargo run --release -p link --example ring_bench [seconds]`. Busy-polling on both sides.
//! Each size is measured twice: with a copying `rx_batch` and with the zero-copy `rx_with`.
//! A single-thread memcpy of the same frames is printed as the reference limit of this run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use link::mem::{self, MemLink};
use link::{FrameBatch, Instant, Link, LinkConfig, LinkError};

const BATCH: usize = 32;

fn producer(mut link: MemLink, size: usize, stop: Arc<AtomicBool>) -> u64 {
    let mut batch = FrameBatch::new(BATCH, size);
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        while !batch.is_full() {
            if !batch.push_with(|s| {
                s[..8].copy_from_slice(&sent.to_le_bytes());
                size
            }) {
                break;
            }
        }
        match link.tx_batch(Instant::ZERO, &mut batch) {
            Ok(0) => std::hint::spin_loop(),
            Ok(n) => sent += n as u64,
            Err(_) => break,
        }
    }
    sent
}

fn run(size: usize, secs: f64, zero_copy: bool) -> (f64, f64) {
    let cfg = LinkConfig::default().mtu(size.max(1514) - 14).depth(1024);
    let (a, mut b) = mem::pair(cfg);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let t = std::thread::spawn(move || producer(a, size, s2));
    let mut batch = FrameBatch::new(BATCH, size);
    let (mut frames, mut check) = (0u64, 0u64);
    let start = StdInstant::now();
    let limit = Duration::from_secs_f64(secs);
    loop {
        let r: Result<usize, LinkError> = if zero_copy {
            b.rx_with(BATCH, |f| check = check.wrapping_add(f[0] as u64))
        } else {
            batch.clear();
            b.rx_batch(Instant::ZERO, &mut batch)
        };
        let n = r.unwrap_or(0) as u64;
        if n == 0 {
            std::hint::spin_loop();
        }
        frames += n;
        if frames & 0xfff < BATCH as u64 && start.elapsed() >= limit {
            break;
        }
    }
    let el = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    drop(b);
    let _ = t.join();
    std::hint::black_box(check);
    let fps = frames as f64 / el;
    (fps / 1e6, fps * size as f64 * 8.0 / 1e9)
}

fn memcpy_rate(size: usize, secs: f64) -> (f64, f64) {
    let src = FrameBatch::new(BATCH, size);
    let mut src = src;
    while src.push(&vec![7u8; size]) {}
    let mut dst = FrameBatch::new(BATCH, size);
    let start = StdInstant::now();
    let mut frames = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        for _ in 0..64 {
            dst.clear();
            for f in src.iter() {
                // Cannot fail: `dst` has as many slots, as large, as `src` has frames.
                let copied = dst.push(f);
                debug_assert!(copied);
            }
            frames += BATCH as u64;
        }
        std::hint::black_box(&dst);
    }
    let fps = frames as f64 / start.elapsed().as_secs_f64();
    (fps / 1e6, fps * size as f64 * 8.0 / 1e9)
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    println!("mem pair, 2 threads busy-polling, batches of {BATCH}, ring depth 1024, {secs} s per cell");
    println!(
        "{:>6} | {:>22} | {:>22} | {:>22}",
        "bytes", "rx_batch (copy)", "rx_with (zero copy)", "memcpy 1 thread (ref)"
    );
    for size in [64usize, 1514, 9014] {
        let (cm, cg) = run(size, secs, false);
        let (zm, zg) = run(size, secs, true);
        let (mm, mg) = memcpy_rate(size, secs / 2.0);
        println!(
            "{size:>6} | {cm:>7.2} Mf/s {cg:>7.1} Gb/s | {zm:>7.2} Mf/s {zg:>7.1} Gb/s | {mm:>7.2} Mf/s {mg:>7.1} Gb/s"
        );
    }
}
