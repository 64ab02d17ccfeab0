//! Evaluate a generated model on sampled 8-bit inputs, for instruction counts under callgrind
//! and for a quick rate: `spn_cost [learnspn|nips] VARS VECTORS [THREADS] [REPEAT] [portable]`
//! (`portable`: one thread, without the AVX2/AVX-512 loops).
//!
//! Prints the model's shape and compile figures, then vectors per second of wall time and per
//! second of the process's CPU time (the latter is the fairer figure on a shared machine).
//! Instructions per vector: `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='spn::eval::Evaluator::eval_u8' target/release/examples/spn_cost learnspn
//! 10 4096`, the total divided by 4096 (THREADS 1).

use spn::generate::sample_u8;
use spn::{eval_u8_parallel, generate, CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};
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
    let (start, cpu0) = (Instant::now(), cpu_seconds());
    let mut fallbacks = 0;
    let portable = args.get(6).is_some_and(|s| s == "portable");
    let mut ev = Evaluator::new(compiled.clone());
    ev.set_simd(!portable);
    for _ in 0..repeat {
        if portable {
            ev.eval_u8(&bytes, Missing::None, &mut out, Output::LogLikelihood).expect("eval");
        } else {
            fallbacks += eval_u8_parallel(&compiled, &bytes, Missing::None, &mut out, Output::LogLikelihood, threads)
                .expect("eval");
        }
    }
    fallbacks += ev.fallbacks();
    let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let sum: f64 = out.iter().sum();
    let done = (vectors * repeat) as f64;
    eprintln!(
        "{vectors} vectors x {repeat} on {threads} thread(s): {:.0} vectors/s of wall time, {:.0} per CPU-second (indicative); {fallbacks} fallbacks, sum of log-likelihoods {sum:.6}",
        done / secs,
        done / cpu.max(1e-9),
    );
}

/// User and system CPU time of this process so far, from /proc (0 where unavailable).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with the last ')'), from the state: utime and
    // stime are the 12th and 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (field(11) + field(12)) / 100.0
}
