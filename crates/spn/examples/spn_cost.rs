//! Evaluate a generated model on sampled 8-bit inputs, for instruction counts under callgrind
//! and for a quick rate: `spn_cost [learnspn|nips] VARS VECTORS [THREADS] [REPEAT]`.
//!
//! Prints the model's shape and compile figures. Instructions per vector: run under
//! `valgrind --tool=callgrind` with two VECTORS counts and divide the difference of the totals
//! by the difference of the counts (the set-up cost cancels out).

use spn::generate::sample_u8;
use spn::{eval_u8_parallel, generate, CompiledSpn, GeneratorConfig, Missing, Output};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let shape = args.get(1).map_or("learnspn", |s| s.as_str());
    let (vars, vectors, threads, repeat) = (arg(2, 10), arg(3, 4096), arg(4, 1), arg(5, 1));
    let cfg = match shape {
        "nips" => GeneratorConfig::nips(vars, 1),
        _ => GeneratorConfig::learnspn(vars, 1),
    };
    let model = generate(&cfg).expect("generate");
    let st = model.stats();
    let (bytes, _) = sample_u8(&model, vectors, 0.0, 2);
    let compiled = CompiledSpn::new(model).expect("compile");
    eprintln!("{st:?}\n{:?}", compiled.stats());
    let mut out = vec![0.0; vectors];
    let start = Instant::now();
    let mut fallbacks = 0;
    for _ in 0..repeat {
        fallbacks +=
            eval_u8_parallel(&compiled, &bytes, Missing::None, &mut out, Output::LogLikelihood, threads).expect("eval");
    }
    let secs = start.elapsed().as_secs_f64();
    let sum: f64 = out.iter().sum();
    eprintln!(
        "{} vectors x {repeat} on {threads} thread(s): {:.0} vectors/s (indicative), {fallbacks} fallbacks, sum of log-likelihoods {sum:.6}",
        vectors,
        (vectors * repeat) as f64 / secs
    );
}
