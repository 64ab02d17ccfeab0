//! Batch evaluation of a [`CompiledSpn`]: 8-bit inputs (with a missing mask) through the code
//! program, f64 inputs (NaN = missing) through the value program, `lanes` inputs at a time.
//!
//! # Cost
//!
//! Instructions per vector in [`Evaluator::eval_u8`] on LearnSPN-shaped models
//! ([`GeneratorConfig::learnspn`](crate::GeneratorConfig::learnspn), seed 1), 4,096 sampled
//! vectors, one thread, measured with `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='spn::eval::Evaluator::eval_u8'` on the `spn_cost` example (valgrind
//! hides AVX-512, so these are the AVX2 loop; AVX-512 runs about 1.25x faster again):
//!
//! | model | before (64 lanes, scalar lookups) | after (cache-sized lanes, AVX2 gathers) |
//! | --- | --- | --- |
//! | 10 inputs, 7,224 nodes | 42,650 | 11,487 |
//! | 40 inputs, 8,105 nodes | 61,052 | 17,574 |
//! | 80 inputs, 10,506 nodes | 81,301 | 26,339 |

use crate::compile::{Arg, Op, Program, CODES, MISSING};
use crate::kernel::{self, Combine};
use crate::{CompiledSpn, Leaf, SpnError};
use std::sync::Arc;

/// A common batch size (the evaluator's default is sized to the cache instead).
pub const DEFAULT_LANES: usize = 64;
/// Largest number of lanes.
pub const MAX_LANES: usize = 4096;

/// What an evaluation returns per input vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// The natural logarithm of the likelihood (`-inf` for likelihood 0).
    #[default]
    LogLikelihood,
    /// The likelihood (probability or density).
    Likelihood,
}

/// Which inputs of 8-bit vectors are missing.
#[derive(Debug, Clone, Copy, Default)]
pub enum Missing<'a> {
    /// Every input is present.
    #[default]
    None,
    /// One bitmask per vector of `ceil(num_vars / 8)` bytes; bit `v % 8` of byte `v / 8` set
    /// means variable `v` is missing (marginalised out).
    Bits(&'a [u8]),
    /// One flag per input value (`true` = missing), laid out like the values.
    Flags(&'a [bool]),
}

/// One part of a gathered evaluation ([`Evaluator::eval_u8_parts`]): `out.len()` vectors of
/// `num_vars` bytes back to back, their missing marks, and where their results go.
pub struct U8Part<'a> {
    /// The vectors.
    pub inputs: &'a [u8],
    /// Which of their inputs are missing (bitmasks or flags count from this part's first vector).
    pub missing: Missing<'a>,
    /// One result per vector.
    pub out: &'a mut [f64],
}

/// Evaluates a compiled SPN; holds the scratch memory for one thread.
pub struct Evaluator {
    model: Arc<CompiledSpn>,
    lanes: usize,
    /// Class rows: the variables' codes, then the derived class maps (`rows × lanes`).
    classes: Vec<u16>,
    /// Input values per variable (`num_vars × lanes`), value program only.
    xs: Vec<f64>,
    /// Slots (`slots × lanes`).
    slots: Vec<f64>,
    /// One input vector as floats, for the log-space fallback.
    row: Vec<f64>,
    /// Node values of the log-space fallback.
    scratch: Vec<f64>,
    /// Inputs recomputed in log space since the evaluator was made.
    fallbacks: u64,
    /// The instruction set of the evaluation loop ([`kernel::level`]).
    level: u8,
}

impl Evaluator {
    /// An evaluator whose batch fits the L1 data cache ([`CompiledSpn::cache_lanes`]).
    pub fn new(model: Arc<CompiledSpn>) -> Evaluator {
        let lanes = model.cache_lanes();
        Evaluator::with_lanes(model, lanes)
    }

    /// An evaluator that evaluates `lanes` inputs at a time (clamped to 1..=[`MAX_LANES`]).
    pub fn with_lanes(model: Arc<CompiledSpn>, lanes: usize) -> Evaluator {
        let lanes = lanes.clamp(1, MAX_LANES);
        let nv = model.num_vars();
        let rows = nv + model.class_maps.len();
        let slots = model.code.slots.max(model.value.slots);
        Evaluator {
            classes: vec![0; rows * lanes],
            xs: vec![0.0; nv * lanes],
            slots: vec![0.0; slots * lanes],
            row: vec![0.0; nv],
            scratch: Vec::new(),
            fallbacks: 0,
            level: kernel::best_level(),
            lanes,
            model,
        }
    }

    /// Inputs evaluated together.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// The compiled model.
    pub fn model(&self) -> &Arc<CompiledSpn> {
        &self.model
    }

    /// Use the widest SIMD build of the evaluation loop the CPU has (AVX-512F or AVX2; the
    /// default) if `on`, the portable one if not. Results are the same to the bit either way.
    pub fn set_simd(&mut self, on: bool) {
        self.level = if on { kernel::best_level() } else { kernel::level::PORTABLE };
    }

    /// Inputs recomputed in log space (linear result below the guard) so far.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// Evaluate 8-bit input vectors: `inputs` holds `out.len()` vectors of `num_vars` bytes
    /// back to back; `missing` marks marginalised inputs.
    pub fn eval_u8(
        &mut self,
        inputs: &[u8],
        missing: Missing<'_>,
        out: &mut [f64],
        output: Output,
    ) -> Result<(), SpnError> {
        self.eval_u8_parts(&mut [U8Part { inputs, missing, out }], output)
    }

    /// Evaluate several sets of 8-bit vectors (say, one per request) as if they were one:
    /// the parts fill the evaluator's lanes back to back, so many small parts cost what one
    /// part of all their vectors costs, without copying them together first. Each part is
    /// checked as in [`Evaluator::eval_u8`] before anything is evaluated.
    pub fn eval_u8_parts(&mut self, parts: &mut [U8Part<'_>], output: Output) -> Result<(), SpnError> {
        for p in parts.iter() {
            self.check_u8(p)?;
        }
        // One reference for the whole call: the count is shared by every thread's evaluator,
        // so touching it per batch would bounce its cache line between cores.
        let model = Arc::clone(&self.model);
        let nv = model.num_vars();
        // The next vector to load: part `pi`, vector `pv` of it.
        let (mut pi, mut pv) = (0, 0);
        while pi < parts.len() {
            let (first_pi, first_pv) = (pi, pv);
            let mut m = 0;
            while m < self.lanes && pi < parts.len() {
                let p = &parts[pi];
                let k = (p.out.len() - pv).min(self.lanes - m);
                self.load_codes(&p.inputs[pv * nv..(pv + k) * nv], p.missing, pv, m);
                (m, pv) = (m + k, pv + k);
                if pv == p.out.len() {
                    (pi, pv) = (pi + 1, 0);
                }
            }
            if m == 0 {
                break;
            }
            self.apply_class_maps(m);
            self.run(&model.code, m, true);
            // Hand the batch's results back to the parts it was loaded from.
            let (mut qi, mut qv, mut lane) = (first_pi, first_pv, 0);
            while lane < m {
                let out = &mut parts[qi].out;
                let k = (out.len() - qv).min(m - lane);
                self.finish(&model, model.code.root_slot, lane, &mut out[qv..qv + k], output, |ev, l| {
                    for v in 0..nv {
                        let c = ev.classes[v * ev.lanes + l];
                        ev.row[v] = if c == MISSING { f64::NAN } else { f64::from(c) };
                    }
                });
                (lane, qv) = (lane + k, qv + k);
                if qv == out.len() {
                    (qi, qv) = (qi + 1, 0);
                }
            }
        }
        Ok(())
    }

    /// Check that a part's inputs and missing marks match its number of outputs.
    fn check_u8(&self, p: &U8Part<'_>) -> Result<(), SpnError> {
        let nv = self.model.num_vars();
        let n = p.out.len();
        if p.inputs.len() != n * nv {
            return Err(SpnError::BadInput(format!("{} bytes is not {n} vectors of {nv} inputs", p.inputs.len())));
        }
        let mask_bytes = nv.div_ceil(8);
        match p.missing {
            Missing::Bits(m) if m.len() != n * mask_bytes => {
                Err(SpnError::BadInput(format!("missing mask of {} bytes, expected {n} × {mask_bytes}", m.len())))
            }
            Missing::Flags(f) if f.len() != n * nv => {
                Err(SpnError::BadInput(format!("missing flags: {} values, expected {n} × {nv}", f.len())))
            }
            _ => Ok(()),
        }
    }

    /// Evaluate f64 input vectors (`out.len()` vectors of `num_vars` values back to back; NaN
    /// marginalises a variable). Batches whose values are all 8-bit integers or NaN take the
    /// faster code program.
    pub fn eval_f64(&mut self, inputs: &[f64], out: &mut [f64], output: Output) -> Result<(), SpnError> {
        let nv = self.model.num_vars();
        let n = out.len();
        if inputs.len() != n * nv {
            return Err(SpnError::BadInput(format!("{} values is not {n} vectors of {nv} inputs", inputs.len())));
        }
        let model = Arc::clone(&self.model);
        let mut start = 0;
        while start < n {
            let m = (n - start).min(self.lanes);
            let chunk = &inputs[start * nv..(start + m) * nv];
            let bytes = chunk.iter().all(|x| x.is_nan() || (*x >= 0.0 && *x <= 255.0 && x.fract() == 0.0));
            let root_slot = if bytes {
                self.load_code_values(chunk, m);
                self.run(&model.code, m, true);
                model.code.root_slot
            } else {
                for l in 0..m {
                    for v in 0..nv {
                        self.xs[v * self.lanes + l] = chunk[l * nv + v];
                    }
                }
                self.run(&model.value, m, false);
                model.value.root_slot
            };
            self.finish(&model, root_slot, 0, &mut out[start..start + m], output, |ev, l| {
                ev.row.copy_from_slice(&chunk[l * nv..(l + 1) * nv]);
            });
            start += m;
        }
        Ok(())
    }

    /// Transpose vectors of bytes (vector `first` on of their `missing` marks) into the code
    /// rows' lanes from `at` on. The class maps are applied separately, once per batch.
    fn load_codes(&mut self, bytes: &[u8], missing: Missing<'_>, first: usize, at: usize) {
        let (nv, lanes) = (self.model.num_vars(), self.lanes);
        let mask_bytes = nv.div_ceil(8);
        for (l, row) in bytes.chunks_exact(nv).enumerate() {
            let lane = at + l;
            for (v, &b) in row.iter().enumerate() {
                self.classes[v * lanes + lane] = u16::from(b);
            }
            match missing {
                Missing::None => {}
                Missing::Bits(bits) => {
                    let mask = &bits[(first + l) * mask_bytes..(first + l + 1) * mask_bytes];
                    for (byte_i, &byte) in mask.iter().enumerate() {
                        let mut b = byte;
                        while b != 0 {
                            let v = byte_i * 8 + b.trailing_zeros() as usize;
                            if v < nv {
                                self.classes[v * lanes + lane] = MISSING;
                            }
                            b &= b - 1;
                        }
                    }
                }
                Missing::Flags(flags) => {
                    for (v, &f) in flags[(first + l) * nv..(first + l + 1) * nv].iter().enumerate() {
                        if f {
                            self.classes[v * lanes + lane] = MISSING;
                        }
                    }
                }
            }
        }
    }

    /// Code rows from f64 values known to be NaN or integers in 0..=255.
    fn load_code_values(&mut self, values: &[f64], m: usize) {
        let (nv, lanes) = (self.model.num_vars(), self.lanes);
        for (l, row) in values.chunks_exact(nv).enumerate() {
            for (v, &x) in row.iter().enumerate() {
                self.classes[v * lanes + l] = if x.is_nan() { MISSING } else { x as u16 };
            }
        }
        self.apply_class_maps(m);
    }

    /// Derived class rows from the variables' code rows.
    fn apply_class_maps(&mut self, m: usize) {
        let (nv, lanes) = (self.model.num_vars(), self.lanes);
        let (codes, derived) = self.classes.split_at_mut(nv * lanes);
        for (k, map) in self.model.class_maps.iter().enumerate() {
            let src = &codes[map.var as usize * lanes..][..m];
            let dst = &mut derived[k * lanes..][..m];
            let table: &[u16; CODES] = match map.classes.as_slice().try_into() {
                Ok(t) => t,
                Err(_) => continue,
            };
            for (d, &c) in dst.iter_mut().zip(src) {
                *d = table[usize::from(c).min(CODES - 1)];
            }
        }
    }

    /// Run `prog` on the first `m` lanes.
    fn run(&mut self, prog: &Program, m: usize, codes: bool) {
        let (slots, classes, xs, model, lanes) = (&mut self.slots, &self.classes, &self.xs, &self.model, self.lanes);
        #[cfg(target_arch = "x86_64")]
        {
            use kernel::level;
            // SAFETY: `level` is above PORTABLE only if the CPU has that level (best_level).
            match self.level {
                level::AVX512 => {
                    return unsafe { run_program_avx512(prog, slots, classes, xs, model, lanes, m, codes) }
                }
                level::AVX2 => return unsafe { run_program_avx2(prog, slots, classes, xs, model, lanes, m, codes) },
                _ => {}
            }
        }
        run_program::<{ kernel::level::PORTABLE }>(prog, slots, classes, xs, model, lanes, m, codes);
    }

    /// Write the results of lanes `lane0..lane0 + out.len()`: linear values at or above the
    /// guard directly, the others recomputed in log space (`fill_row(self, lane)` puts that
    /// input vector in `self.row`).
    fn finish(
        &mut self,
        model: &CompiledSpn,
        root_slot: u32,
        lane0: usize,
        out: &mut [f64],
        output: Output,
        fill_row: impl Fn(&mut Evaluator, usize),
    ) {
        let guard = model.guard;
        let root = root_slot as usize * self.lanes + lane0;
        for (i, o) in out.iter_mut().enumerate() {
            let l = lane0 + i;
            let r = self.slots[root + i];
            *o = if r >= guard && r.is_finite() {
                match output {
                    Output::Likelihood => r,
                    Output::LogLikelihood => r.ln(),
                }
            } else {
                fill_row(self, l);
                self.fallbacks += 1;
                let ll = model.spn.log_likelihood_reference(&self.row, &mut self.scratch);
                match output {
                    Output::Likelihood => ll.exp(),
                    Output::LogLikelihood => ll,
                }
            };
        }
    }
}

/// Run `prog` on the first `m` lanes of `slots`, operation by operation, operand by operand
/// (the table lookups with gathers at `LEVEL`, which the CPU must have: [`kernel::level`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run_program<const LEVEL: u8>(
    prog: &Program,
    slots: &mut [f64],
    classes: &[u16],
    xs: &[f64],
    model: &CompiledSpn,
    lanes: usize,
    m: usize,
    codes: bool,
) {
    for op in &prog.ops {
        let Op { sum, first, len, dst } = *op;
        let (first, len, dst) = (first as usize, len as usize, dst as usize);
        let (Some(args), Some(weights)) = (prog.args.get(first..first + len), prog.weights.get(first..first + len))
        else {
            continue;
        };
        if args.is_empty() || (dst + 1) * lanes > slots.len() {
            continue;
        }
        // The destination row apart from every other (operands never alias it).
        let (lo, rest) = slots.split_at_mut(dst * lanes);
        let (out, hi) = rest.split_at_mut(lanes);
        let out = &mut out[..m];
        let src = Operands { lo, hi, dst, lanes, classes, xs, model, codes };
        if sum {
            src.apply::<LEVEL>(out, &args[0], Combine::SetScaled(weights[0]));
            for (arg, &w) in args[1..].iter().zip(&weights[1..]) {
                src.apply::<LEVEL>(out, arg, Combine::AddScaled(w));
            }
        } else {
            src.apply::<LEVEL>(out, &args[0], Combine::Set);
            for arg in &args[1..] {
                src.apply::<LEVEL>(out, arg, Combine::Mul);
            }
        }
    }
}

/// [`run_program`] compiled with AVX2 enabled: table lookups become four-lane gathers and the
/// row loops four lanes wide (with cache-sized batches, 3.7x fewer instructions than the
/// earlier scalar loop on the 10-input LearnSPN model; see the module's cost table). AMD
/// cores were once measured slower with gathers, so [`Evaluator::set_simd`] can turn them off.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_program_avx2(
    prog: &Program,
    slots: &mut [f64],
    classes: &[u16],
    xs: &[f64],
    model: &CompiledSpn,
    lanes: usize,
    m: usize,
    codes: bool,
) {
    run_program::<{ kernel::level::AVX2 }>(prog, slots, classes, xs, model, lanes, m, codes);
}

/// [`run_program`] compiled with AVX-512F enabled: eight-lane gathers and rows.
///
/// # Safety
/// The CPU must support AVX-512F and AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_program_avx512(
    prog: &Program,
    slots: &mut [f64],
    classes: &[u16],
    xs: &[f64],
    model: &CompiledSpn,
    lanes: usize,
    m: usize,
    codes: bool,
) {
    run_program::<{ kernel::level::AVX512 }>(prog, slots, classes, xs, model, lanes, m, codes);
}

/// Where an operation reads its operands: the slot rows below and above its destination, the
/// class rows (code program) or input values (value program).
struct Operands<'a> {
    lo: &'a [f64],
    hi: &'a [f64],
    dst: usize,
    lanes: usize,
    classes: &'a [u16],
    xs: &'a [f64],
    model: &'a CompiledSpn,
    codes: bool,
}

impl Operands<'_> {
    /// Slot row `s` (never the destination), `m` lanes long.
    #[inline(always)]
    fn slot(&self, s: usize, m: usize) -> Option<&[f64]> {
        let row = if s < self.dst {
            self.lo.get(s * self.lanes..)?
        } else {
            self.hi.get((s.checked_sub(self.dst + 1)?) * self.lanes..)?
        };
        row.get(..m)
    }

    /// Combine the value of `arg` into `out`, lane by lane.
    #[inline(always)]
    fn apply<const LEVEL: u8>(&self, out: &mut [f64], arg: &Arg, c: Combine) {
        let (m, lanes) = (out.len(), self.lanes);
        match *arg {
            Arg::Slot(s) => match self.slot(s as usize, m) {
                Some(row) => c.rows(out, row.iter().copied()),
                None => c.rows(out, std::iter::repeat(f64::NAN)),
            },
            Arg::Table { row, offset, len } if self.codes => {
                let (offset, len) = (offset as usize, len as usize);
                let table = self.model.tables.get(offset..offset + len).unwrap_or(&[]);
                let classes = self.classes.get(row as usize * lanes..).and_then(|r| r.get(..m)).unwrap_or(&[]);
                if classes.len() == m {
                    kernel::table::<LEVEL>(out, classes, table, c);
                } else {
                    c.rows(out, std::iter::repeat(f64::NAN));
                }
            }
            Arg::Leaf { leaf, var } if !self.codes => {
                let x = &self.xs[var as usize * lanes..][..m];
                match &self.model.leaves[leaf as usize] {
                    Leaf::Gaussian { mean, stdev } => {
                        let (mean, stdev) = (*mean, *stdev);
                        let k = -stdev.ln() - 0.918_938_533_204_672_8;
                        c.rows(
                            out,
                            x.iter().map(|&x| {
                                let z = (x - mean) / stdev;
                                if x.is_nan() {
                                    1.0
                                } else {
                                    (k - 0.5 * z * z).exp()
                                }
                            }),
                        );
                    }
                    d => c.rows(out, x.iter().map(|&x| d.prob(x))),
                }
            }
            // An operand of the other program cannot occur; poison the result (log-space
            // fallback) rather than panic.
            _ => c.rows(out, std::iter::repeat(f64::NAN)),
        }
    }
}
