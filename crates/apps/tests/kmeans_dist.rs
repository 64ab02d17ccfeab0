//! Distributed K-Means on 1, 2 and 4 virtual-time ranks of the in-process testbed against
//! the single-process `accel::kmeans::lloyd`.

use accel::kmeans::{covertype_like, lloyd, Shape, COVERTYPE_D};
use apps::kmeans::{share, DistKmeans};
use collective::{Config, Endpoint, MeshState};
use std::net::SocketAddr;
use testbed::Testbed;

/// Runs the distributed K-Means on `size` ranks; returns (centres of every rank, all
/// labels in rank order, iterations).
fn distributed(
    size: usize,
    shape: Shape,
    data: &[f32],
    init: &[f32],
    max_iter: usize,
) -> (Vec<Vec<f32>>, Vec<u32>, usize) {
    let n = data.len() / shape.d;
    let mut tb = Testbed::default();
    let ids: Vec<_> = (0..size).map(|i| tb.add_host(&format!("10.0.0.{}/24", i + 1)).unwrap()).collect();
    let addrs: Vec<_> = ids.iter().map(|&h| SocketAddr::new(tb.host_ref(h).ip().into(), 7470)).collect();
    let mut eps: Vec<Endpoint> =
        (0..size).map(|r| Endpoint::new(r, addrs.clone(), Config::default()).unwrap()).collect();
    let mut kms: Vec<DistKmeans> = (0..size)
        .map(|r| {
            let s = share(n, size, r);
            DistKmeans::new(shape, data[s.start * shape.d..s.end * shape.d].to_vec(), init).unwrap()
        })
        .collect();
    let step = |tb: &mut Testbed, eps: &mut [Endpoint]| {
        let now = tb.now();
        tb.step().unwrap();
        for (r, ep) in eps.iter_mut().enumerate() {
            ep.progress(tb.host(ids[r]), now).unwrap();
        }
    };
    while eps.iter().any(|e| e.mesh_state().unwrap() != MeshState::Ready) {
        step(&mut tb, &mut eps);
    }
    for _ in 0..max_iter {
        let reqs: Vec<_> = kms.iter_mut().zip(eps.iter_mut()).map(|(k, ep)| k.start(ep).unwrap()).collect();
        let mut results: Vec<Option<Vec<f64>>> = vec![None; size];
        for _ in 0..1_000_000 {
            for r in 0..size {
                if results[r].is_none() {
                    results[r] = eps[r].test(&reqs[r]).unwrap();
                }
            }
            if results.iter().all(|x| x.is_some()) {
                break;
            }
            step(&mut tb, &mut eps);
        }
        let shifts: Vec<f64> = kms.iter_mut().zip(results).map(|(k, v)| k.finish(&v.unwrap()).unwrap()).collect();
        assert!(shifts.iter().all(|&s| s.to_bits() == shifts[0].to_bits()), "ranks disagree: {shifts:?}");
        if shifts[0] <= 0.0 {
            break;
        }
    }
    let labels = kms.iter().flat_map(|k| k.labels().to_vec()).collect();
    (kms.iter().map(|k| k.centres().to_vec()).collect(), labels, kms[0].iterations)
}

#[test]
fn one_two_and_four_ranks_give_the_single_process_result_bit_for_bit() {
    let shape = Shape { d: COVERTYPE_D, k: 7 };
    let n = 4000;
    let data = covertype_like(n, 42);
    let init: Vec<f32> = (0..7).flat_map(|j| data[j * 531 * shape.d..(j * 531 + 1) * shape.d].to_vec()).collect();
    let single = lloyd(shape, &data, &init, 30, 0.0).unwrap();
    assert!(single.iterations > 2, "too easy: {} iterations", single.iterations);
    for size in [1, 2, 4] {
        let (centres, labels, iters) = distributed(size, shape, &data, &init, 30);
        assert_eq!(iters, single.iterations, "{size} ranks");
        assert_eq!(labels, single.labels, "{size} ranks");
        for (r, c) in centres.iter().enumerate() {
            let a: Vec<u32> = c.iter().map(|v| v.to_bits()).collect();
            let b: Vec<u32> = single.centres.iter().map(|v| v.to_bits()).collect();
            assert_eq!(a, b, "centres of rank {r} of {size}");
        }
    }
}

#[test]
fn non_integer_data_gives_the_same_labels_and_centres_to_rounding() {
    let shape = Shape { d: 5, k: 3 };
    let n = 999;
    let mut s = 9u64;
    let data: Vec<f32> = (0..n * shape.d)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) + if (i / shape.d).is_multiple_of(3) { 4.0 } else { 0.0 }
        })
        .collect();
    let init = data[..3 * shape.d].to_vec();
    let single = lloyd(shape, &data, &init, 10, 0.0).unwrap();
    let (centres, labels, _) = distributed(4, shape, &data, &init, single.iterations);
    assert_eq!(labels, single.labels);
    for (a, b) in centres[3].iter().zip(&single.centres) {
        assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
    }
}
