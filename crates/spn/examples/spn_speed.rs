//! Quick single-core speed probe: `cargo run --release -p spn --example spn_speed -- VARS [LANES]`.

use spn::{generate, CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};
use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let vars = args.first().copied().unwrap_or(10);
    let lanes = args.get(1).copied().unwrap_or(64);
    let model = generate(&GeneratorConfig::nips(vars, 1)).expect("generate");
    println!("{:?}", model.stats());
    let (x, _) = spn::generate::sample_u8(&model, 100_000, 0.0, 2);
    let c = CompiledSpn::new(model).expect("compile");
    println!("{:?}", c.stats());
    let mut ev = Evaluator::with_lanes(c, lanes);
    let mut out = vec![0.0; 100_000];
    for _ in 0..3 {
        let t = Instant::now();
        ev.eval_u8(&x, Missing::None, &mut out, Output::LogLikelihood).expect("eval");
        let dt = t.elapsed().as_secs_f64();
        println!(
            "{:.0} samples/s, mean ll {:.3}, fallbacks {}",
            1e5 / dt,
            out.iter().sum::<f64>() / 1e5,
            ev.fallbacks()
        );
    }
}
