//! Evaluation replicated across cores: a batch split into contiguous blocks, one evaluator
//! per thread (the software counterpart of replicating the accelerator, Table II of the
//! TaPaSCo paper).

use crate::{CompiledSpn, Evaluator, Missing, Output, SpnError};
use std::sync::Arc;

/// Evaluate 8-bit vectors on `threads` threads (1: the calling thread only). Arguments as in
/// [`Evaluator::eval_u8`]; `Missing::Bits` and `Missing::Flags` are split with the vectors.
/// Returns the number of inputs that took the log-space fallback.
pub fn eval_u8_parallel(
    model: &Arc<CompiledSpn>,
    inputs: &[u8],
    missing: Missing<'_>,
    out: &mut [f64],
    output: Output,
    threads: usize,
) -> Result<u64, SpnError> {
    let nv = model.num_vars();
    let n = out.len();
    if inputs.len() != n * nv {
        return Err(SpnError::BadInput(format!("{} bytes is not {n} vectors of {nv} inputs", inputs.len())));
    }
    let threads = threads.clamp(1, 1024).min(n.max(1));
    if threads == 1 {
        let mut ev = Evaluator::new(Arc::clone(model));
        ev.eval_u8(inputs, missing, out, output)?;
        return Ok(ev.fallbacks());
    }
    // Contiguous blocks whose lengths are multiples of 8 vectors, so no two threads write
    // the same 64-byte line of `out` (given `out` is so aligned); the calling thread takes
    // the first block instead of waiting idle.
    let per = n.div_ceil(threads).next_multiple_of(8);
    let mask_bytes = nv.div_ceil(8);
    let part = |a: usize, b: usize| match missing {
        Missing::None => Missing::None,
        Missing::Bits(m) => Missing::Bits(m.get(a * mask_bytes..b * mask_bytes).unwrap_or(&[])),
        Missing::Flags(f) => Missing::Flags(f.get(a * nv..b * nv).unwrap_or(&[])),
    };
    let run = |a: usize, out: &mut [f64]| {
        let b = a + out.len();
        let mut ev = Evaluator::new(Arc::clone(model));
        ev.eval_u8(&inputs[a * nv..b * nv], part(a, b), out, output).map(|_| ev.fallbacks())
    };
    std::thread::scope(|s| {
        let mut blocks = out.chunks_mut(per).enumerate();
        let first = blocks.next();
        let handles: Vec<_> = blocks.map(|(t, out)| s.spawn(move || run(t * per, out))).collect();
        let mut fallbacks = match first {
            Some((_, out)) => run(0, out)?,
            None => 0,
        };
        for h in handles {
            fallbacks += h.join().map_err(|_| SpnError::BadInput("an evaluation thread panicked".into()))??;
        }
        Ok(fallbacks)
    })
}
