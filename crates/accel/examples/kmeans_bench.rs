//! K-Means assignment throughput on Covertype-shaped data (581,012 x 54, k = 7), against
//! one plain read of the same data (the memory-bandwidth floor) measured in the same run.
//!
//! `cargo run --release -p accel --example kmeans_bench [-- N_SAMPLES ITERATIONS]`

use accel::kmeans::{assign, covertype_like, Partials, Shape, COVERTYPE_D, COVERTYPE_N};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(COVERTYPE_N);
    let iters: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let shape = Shape { d: COVERTYPE_D, k: 7 };
    let data = covertype_like(n, 1);
    let centres: Vec<f32> = (0..7).flat_map(|j| data[j * 1000 * shape.d..(j * 1000 + 1) * shape.d].to_vec()).collect();
    let mut labels = vec![0u32; n];
    let mut times = Vec::new();
    for _ in 0..iters {
        let mut p = Partials::zeros(shape);
        let t = Instant::now();
        assign(shape, &data, &centres, &mut labels, &mut p).expect("shape");
        times.push(t.elapsed().as_secs_f64());
        std::hint::black_box(&p);
    }
    let mut reads = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        let s: f32 = data
            .chunks_exact(16)
            .fold([0.0f32; 16], |mut a, c| {
                for (x, y) in a.iter_mut().zip(c) {
                    *x += y;
                }
                a
            })
            .iter()
            .sum();
        reads.push(t.elapsed().as_secs_f64());
        std::hint::black_box(s);
    }
    times.sort_by(f64::total_cmp);
    reads.sort_by(f64::total_cmp);
    let (t, r) = (times[times.len() / 2], reads[reads.len() / 2]);
    let bytes = (n * shape.d * 4) as f64;
    println!(
        "assignment of {n} x {} (k = 7): median {:.2} ms per iteration, {:.2} GB/s, {:.1} M samples/s",
        shape.d,
        t * 1e3,
        bytes / t / 1e9,
        n as f64 / t / 1e6
    );
    println!(
        "plain read of the data: {:.2} ms ({:.2} GB/s); assignment / read = {:.1}x",
        r * 1e3,
        bytes / r / 1e9,
        t / r
    );
}
