//! The compiled evaluator on LearnSPN-shaped models (deep chains of sums over products, most
//! nodes leaves): exact against the log-space reference, the same to the bit with and without
//! AVX2 and on any number of threads, and compiled into few live slots.

use spn::generate::sample_u8;
use spn::{eval_u8_parallel, generate, CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};

#[test]
fn learnspn_models_match_the_reference() {
    for vars in [10, 40, 80] {
        let spn = generate(&GeneratorConfig::learnspn(vars, 5)).unwrap();
        let rows = 500;
        let (bytes, mask) = sample_u8(&spn, rows, 0.1, 3);
        let c = CompiledSpn::new(spn.clone()).unwrap();
        let mut ev = Evaluator::new(c.clone());
        let mut got = vec![0.0; rows];
        ev.eval_u8(&bytes, Missing::Flags(&mask), &mut got, Output::LogLikelihood).unwrap();
        let mut s = Vec::new();
        for (r, g) in got.iter().enumerate() {
            let x: Vec<f64> =
                (0..vars).map(|v| if mask[r * vars + v] { f64::NAN } else { f64::from(bytes[r * vars + v]) }).collect();
            let want = spn.log_likelihood_reference(&x, &mut s);
            assert!((g - want).abs() <= 1e-12 * want.abs().max(1.0), "{vars} vars, row {r}: {g} vs {want}");
        }
        // The portable loop gives the same bits as the AVX2 or AVX-512 one (where the CPU has it).
        let mut portable = Evaluator::new(c.clone());
        portable.set_simd(false);
        let mut p = vec![0.0; rows];
        portable.eval_u8(&bytes, Missing::Flags(&mask), &mut p, Output::LogLikelihood).unwrap();
        assert_eq!(
            p.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        // So does any batch size, and any number of threads.
        let mut small = Evaluator::with_lanes(c.clone(), 5);
        small.eval_u8(&bytes, Missing::Flags(&mask), &mut p, Output::LogLikelihood).unwrap();
        assert_eq!(p, got, "{vars} vars, 5 lanes");
        for threads in [2, 3] {
            eval_u8_parallel(&c, &bytes, Missing::Flags(&mask), &mut p, Output::LogLikelihood, threads).unwrap();
            assert_eq!(p, got, "{vars} vars, {threads} threads");
        }
    }
}

#[test]
fn scheduling_keeps_few_slots_live() {
    for vars in [10, 40, 80] {
        let c = CompiledSpn::new(generate(&GeneratorConfig::learnspn(vars, 1)).unwrap()).unwrap();
        let st = c.stats();
        // Thousands of operations, a dozen or so rows live at once; never more than the
        // children-in-listed-order schedule.
        assert!(st.code_ops > 500, "{vars} vars: {st:?}");
        assert!(st.code_slots <= st.code_slots_unscheduled, "{vars} vars: {st:?}");
        assert!(st.value_slots <= st.value_slots_unscheduled, "{vars} vars: {st:?}");
        assert!(st.code_slots < 16, "{vars} vars: {st:?}");
        // The batch's rows fit the L1 budget.
        let lanes = c.cache_lanes();
        assert!(lanes >= 64 && lanes.is_multiple_of(8), "{vars} vars: {lanes} lanes");
        let rows_bytes = lanes * (8 * st.code_slots + 2 * (vars + st.class_maps));
        assert!(rows_bytes <= spn::compile::L1_BUDGET, "{vars} vars: {rows_bytes} B");
        assert_eq!(Evaluator::new(c).lanes(), lanes);
    }
}

/// Bits of the missing flags of `n` vectors of `nv` inputs, packed as `Missing::Bits` wants.
fn pack_bits(flags: &[bool], nv: usize) -> Vec<u8> {
    let mb = nv.div_ceil(8);
    let mut bits = vec![0u8; flags.len() / nv * mb];
    for (i, _) in flags.iter().enumerate().filter(|(_, f)| **f) {
        let (r, v) = (i / nv, i % nv);
        bits[r * mb + v / 8] |= 1 << (v % 8);
    }
    bits
}

#[test]
fn gathered_parts_give_what_each_part_gives_alone() {
    for vars in [10, 80] {
        let spn = generate(&GeneratorConfig::learnspn(vars, 2)).unwrap();
        let rows = 400;
        let (bytes, flags) = sample_u8(&spn, rows, 0.2, 9);
        let c = CompiledSpn::new(spn).unwrap();
        // Parts of uneven sizes (one empty, some across batch boundaries), marks given as
        // flags, bits or not at all.
        let sizes = [1usize, 0, 37, 90, 3, 150, 119];
        assert_eq!(sizes.iter().sum::<usize>(), rows);
        let bits = pack_bits(&flags, vars);
        let mb = vars.div_ceil(8);
        let mut ev = Evaluator::new(c.clone());
        let mut want = vec![0.0; rows];
        let mut got = vec![0.0; rows];
        let mut start = 0;
        let mut ranges = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            ranges.push((start, start + n, i % 3));
            start += n;
        }
        let marks = |a: usize, b: usize, kind: usize| match kind {
            0 => Missing::Flags(&flags[a * vars..b * vars]),
            1 => Missing::Bits(&bits[a * mb..b * mb]),
            _ => Missing::None,
        };
        for &(a, b, kind) in &ranges {
            ev.eval_u8(&bytes[a * vars..b * vars], marks(a, b, kind), &mut want[a..b], Output::Likelihood).unwrap();
        }
        let mut rest: &mut [f64] = &mut got;
        let mut parts = Vec::new();
        for &(a, b, kind) in &ranges {
            let (out, tail) = rest.split_at_mut(b - a);
            rest = tail;
            parts.push(spn::U8Part { inputs: &bytes[a * vars..b * vars], missing: marks(a, b, kind), out });
        }
        ev.eval_u8_parts(&mut parts, Output::Likelihood).unwrap();
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{vars} vars"
        );
        // A malformed part fails the whole call before anything is written.
        let mut out = [7.0; 2];
        let mut one = [7.0; 1];
        let mut bad = [
            spn::U8Part { inputs: &bytes[..vars], missing: Missing::None, out: &mut one },
            spn::U8Part { inputs: &bytes[..vars], missing: Missing::None, out: &mut out },
        ];
        assert!(ev.eval_u8_parts(&mut bad, Output::Likelihood).is_err());
        assert_eq!((one, out), ([7.0], [7.0; 2]));
    }
}
