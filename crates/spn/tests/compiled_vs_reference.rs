//! The compiled batch evaluator against the straightforward log-space evaluator, on random
//! models of every leaf kind, with missing inputs, in both programs, and across the underflow
//! guard.

use spn::generate::{sample, sample_u8};
use spn::{
    eval_u8_parallel, generate, CompiledSpn, Evaluator, GeneratorConfig, Leaf, LeafKind, Missing, Node, Output, Spn,
};

/// |a - b| within `rel` of the larger magnitude, or of 1 for log-likelihoods near 0 (exact
/// match for infinities).
fn close(a: f64, b: f64, rel: f64) -> bool {
    if a == b {
        return true;
    }
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

fn reference(spn: &Spn, rows: &[f64]) -> Vec<f64> {
    let mut s = Vec::new();
    rows.chunks(spn.num_vars()).map(|r| spn.log_likelihood_reference(r, &mut s)).collect()
}

#[test]
fn every_leaf_kind_with_missing_inputs() {
    for (k, leaves) in
        [LeafKind::Histogram, LeafKind::Categorical, LeafKind::Gaussian, LeafKind::Bernoulli, LeafKind::Mixed]
            .into_iter()
            .enumerate()
    {
        for vars in [1, 3, 17, 70] {
            let cfg = GeneratorConfig {
                num_vars: vars,
                target_nodes: 40 * vars,
                leaves,
                seed: 11 + k as u64,
                ..Default::default()
            };
            let spn = generate(&cfg).unwrap();
            let rows = 300;
            let x = sample(&spn, rows, 0.2, 5);
            let want = reference(&spn, &x);
            let c = CompiledSpn::new(spn.clone()).unwrap();
            let mut ev = Evaluator::with_lanes(c.clone(), 32);
            let mut got = vec![0.0; rows];
            ev.eval_f64(&x, &mut got, Output::LogLikelihood).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(close(*g, *w, 1e-12), "{leaves:?} {vars} vars, row {i}: {g} vs {w}");
            }
            // The same inputs as 8-bit values with a flag mask (Gaussian values are rounded).
            let (bytes, mask) = sample_u8(&spn, rows, 0.2, 5);
            let as_f64: Vec<f64> =
                bytes.iter().zip(&mask).map(|(b, m)| if *m { f64::NAN } else { f64::from(*b) }).collect();
            let want = reference(&spn, &as_f64);
            ev.eval_u8(&bytes, Missing::Flags(&mask), &mut got, Output::LogLikelihood).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(close(*g, *w, 1e-12), "u8 {leaves:?} {vars} vars, row {i}: {g} vs {w}");
            }
            let mut lik = vec![0.0; rows];
            ev.eval_u8(&bytes, Missing::Flags(&mask), &mut lik, Output::Likelihood).unwrap();
            for (l, w) in lik.iter().zip(&want) {
                assert!((l - w.exp()).abs() <= 1e-12 * w.exp(), "likelihood {l} vs {}", w.exp());
            }
        }
    }
}

#[test]
fn bitmask_and_parallel_agree_with_flags() {
    let spn = generate(&GeneratorConfig::nips(20, 3)).unwrap();
    let rows = 1000;
    let (bytes, mask) = sample_u8(&spn, rows, 0.1, 9);
    let mut bits = vec![0u8; rows * 3];
    for (i, m) in mask.iter().enumerate() {
        if *m {
            let (r, v) = (i / 20, i % 20);
            bits[r * 3 + v / 8] |= 1 << (v % 8);
        }
    }
    let c = CompiledSpn::new(spn).unwrap();
    let mut a = vec![0.0; rows];
    let mut b = vec![0.0; rows];
    Evaluator::new(c.clone()).eval_u8(&bytes, Missing::Flags(&mask), &mut a, Output::LogLikelihood).unwrap();
    eval_u8_parallel(&c, &bytes, Missing::Bits(&bits), &mut b, Output::LogLikelihood, 3).unwrap();
    assert_eq!(a, b);
    // All missing: the whole distribution integrates to 1.
    let all = vec![0xffu8; rows * 3];
    eval_u8_parallel(&c, &bytes, Missing::Bits(&all), &mut b, Output::Likelihood, 2).unwrap();
    assert!(b.iter().all(|p| (p - 1.0).abs() < 1e-12), "{:?}", &b[..4]);
}

/// 200 variables with P = 2^-8 each: the likelihood 2^-1600 underflows f64, so the linear
/// program cannot represent it and every input must take the log-space fallback.
#[test]
fn underflow_falls_back_to_log_space() {
    let n = 200;
    let uniform = Leaf::Categorical { probs: vec![1.0 / 256.0; 256] };
    let mut nodes: Vec<Node> = (0..n).map(|v| Node::Leaf { var: v, dist: uniform.clone() }).collect();
    nodes.push(Node::Product { children: (0..n).collect() });
    let spn = Spn::new(n, nodes, None).unwrap();
    let c = CompiledSpn::new(spn).unwrap();
    let mut ev = Evaluator::new(c);
    let bytes = vec![7u8; n * 3];
    let mut ll = vec![0.0; 3];
    ev.eval_u8(&bytes, Missing::None, &mut ll, Output::LogLikelihood).unwrap();
    let want = -(n as f64) * 256f64.ln();
    assert!(ll.iter().all(|l| close(*l, want, 1e-13)), "{ll:?} vs {want}");
    assert_eq!(ev.fallbacks(), 3);
    // With 120 of the variables missing the likelihood 2^-640 is representable: no fallback.
    let flags: Vec<bool> = (0..n).map(|v| v < 120).collect();
    ev.eval_u8(&bytes[..n], Missing::Flags(&flags), &mut ll[..1], Output::LogLikelihood).unwrap();
    assert!(close(ll[0], -80.0 * 256f64.ln(), 1e-13));
    assert_eq!(ev.fallbacks(), 3);
}

#[test]
fn zero_likelihood_is_minus_infinity() {
    let spn = Spn::new(
        1,
        vec![Node::Leaf { var: 0, dist: Leaf::Histogram { breaks: vec![0.0, 4.0], densities: vec![0.25] } }],
        None,
    )
    .unwrap();
    let mut ev = Evaluator::new(CompiledSpn::new(spn).unwrap());
    let mut out = [0.0; 3];
    ev.eval_u8(&[3, 4, 200], Missing::None, &mut out, Output::LogLikelihood).unwrap();
    assert_eq!(out, [0.25f64.ln(), f64::NEG_INFINITY, f64::NEG_INFINITY]);
    ev.eval_f64(&[3.5, -1.0, f64::NAN], &mut out, Output::Likelihood).unwrap();
    assert_eq!(out, [0.25, 0.0, 1.0]);
}

#[test]
fn wrong_sizes_are_errors_not_panics() {
    let spn = generate(&GeneratorConfig { num_vars: 4, target_nodes: 50, ..Default::default() }).unwrap();
    let mut ev = Evaluator::new(CompiledSpn::new(spn).unwrap());
    let mut out = [0.0; 2];
    let e = ev.eval_u8(&[0; 7], Missing::None, &mut out, Output::LogLikelihood).unwrap_err().to_string();
    assert!(e.contains("7 bytes is not 2 vectors of 4 inputs"), "{e}");
    let e = ev.eval_u8(&[0; 8], Missing::Bits(&[0]), &mut out, Output::LogLikelihood).unwrap_err().to_string();
    assert!(e.contains("missing mask of 1 bytes"), "{e}");
    let e = ev.eval_f64(&[0.0; 9], &mut out, Output::LogLikelihood).unwrap_err().to_string();
    assert!(e.contains("9 values"), "{e}");
    // Bits beyond num_vars in a mask byte are ignored.
    ev.eval_u8(&[0; 8], Missing::Bits(&[0xf0, 0xff]), &mut out, Output::Likelihood).unwrap();
    assert!(out[0] < 1.0 && (out[1] - 1.0).abs() < 1e-12);
}
