//! K-Means (Lloyd's algorithm) on `f32` samples: the assignment step with partial sums and
//! counts, and the centre update (seed 003, section VII-C: EasyNet-KM / Flex-KM).
//!
//! The data is row-major: `n` samples of `d` features in one `&[f32]`. One [`assign`] call
//! labels every sample with its nearest centre (squared Euclidean distance, ties to the lower
//! centre index) and accumulates, per centre, the `f64` sum of its samples and their count.
//! These partials are what a distributed K-Means all-reduces; [`update_centres`] turns the
//! (reduced) sums and counts into new centres.
//!
//! Determinism: each squared distance is summed in `f32` in a fixed order (feature `j` into
//! partial `j mod 2`, then `p0 + p1`), so a sample's distances do not depend on
//! where it sits in the data, on how the data is split, or on the SIMD width the CPU offers
//! (AVX is used when present, without fused multiply-add). Sums are added in sample order. Sums of integer-valued or coarse dyadic data (Covertype's features are
//! integers) are exact in `f64`, so then any split of the samples gives bit-identical sums.
//!
//! The kernel computes a sample's distances to eight centres at once: the centres are
//! transposed so that each feature is one `[f32; 8]` of the eight centres, and the inner loop
//! (no indexing, fixed width) compiles to SIMD subtract/multiply/add over the eight lanes.

use crate::AccelError;

/// Lanes of the distance accumulator.
const LANES: usize = 8;

/// Shape of a K-Means problem: `d` features per sample, `k` centres.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Features per sample.
    pub d: usize,
    /// Number of centres.
    pub k: usize,
}

impl Shape {
    /// Checks that `data` holds whole samples and `centres` holds `k` of them; returns `n`.
    pub fn check(&self, data: &[f32], centres: &[f32]) -> Result<usize, AccelError> {
        if self.d == 0 || self.k == 0 {
            return Err(AccelError::Shape(format!("d = {} and k = {} must be at least 1", self.d, self.k)));
        }
        if !data.len().is_multiple_of(self.d) {
            return Err(AccelError::Shape(format!("{} values are not whole samples of {}", data.len(), self.d)));
        }
        if centres.len() != self.k * self.d {
            return Err(AccelError::Shape(format!(
                "{} centre values, expected k * d = {}",
                centres.len(),
                self.k * self.d
            )));
        }
        Ok(data.len() / self.d)
    }
}

/// Partial results of one assignment pass: what ranks all-reduce.
#[derive(Debug, Clone, PartialEq)]
pub struct Partials {
    /// `k * d` sums of the samples assigned to each centre (row-major by centre).
    pub sums: Vec<f64>,
    /// Samples assigned to each centre.
    pub counts: Vec<u64>,
    /// Sum of the squared distances of the samples to their centres (the inertia).
    pub inertia: f64,
}

impl Partials {
    /// Zeroed partials for `shape`.
    pub fn zeros(shape: Shape) -> Partials {
        Partials { sums: vec![0.0; shape.k * shape.d], counts: vec![0; shape.k], inertia: 0.0 }
    }

    /// The partials packed as one `f64` vector, `sums` then `counts` then `inertia`: the
    /// single buffer a distributed K-Means all-reduces (counts below 2^53 are exact in `f64`).
    pub fn to_packed(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.sums.len() + self.counts.len() + 1);
        v.extend_from_slice(&self.sums);
        v.extend(self.counts.iter().map(|&c| c as f64));
        v.push(self.inertia);
        v
    }

    /// Unpacks what [`Partials::to_packed`] produced (after a reduction).
    pub fn from_packed(shape: Shape, packed: &[f64]) -> Result<Partials, AccelError> {
        let (kd, k) = (shape.k * shape.d, shape.k);
        if packed.len() != kd + k + 1 {
            return Err(AccelError::Shape(format!(
                "packed partials of {} values, expected {}",
                packed.len(),
                kd + k + 1
            )));
        }
        let counts = packed[kd..kd + k]
            .iter()
            .map(|&c| {
                if c >= 0.0 && c.fract() == 0.0 && c < 9.007_199_254_740_992e15 {
                    Ok(c as u64)
                } else {
                    Err(AccelError::Shape(format!("count {c} is not a whole number")))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Partials { sums: packed[..kd].to_vec(), counts, inertia: packed[kd + k] })
    }
}

/// Centres transposed for the distance kernel: for each block of eight centres, one
/// `[f32; 8]` per feature holding that feature of the eight centres (lanes past `k` repeat
/// centre 0 and are never chosen).
fn transpose(shape: Shape, centres: &[f32]) -> Vec<[f32; LANES]> {
    let (d, k) = (shape.d, shape.k);
    let blocks = k.div_ceil(LANES);
    let mut t = vec![[0.0f32; LANES]; blocks * d];
    for (b, rows) in t.chunks_exact_mut(d).enumerate() {
        for (j, lanes) in rows.iter_mut().enumerate() {
            for (l, v) in lanes.iter_mut().enumerate() {
                let c = if b * LANES + l < k { b * LANES + l } else { 0 };
                *v = centres[c * d + j];
            }
        }
    }
    t
}

/// Squared distances of `x` to eight centres at once. Feature `j` is added to partial sum
/// `j mod 2` (features in order within each), and the distance is `p0 + p1`: two
/// independent chains keep the adder busy, and the eight lanes are independent, so this
/// compiles to SIMD.
#[inline(always)]
fn dist8(x: &[f32], ct: &[[f32; LANES]]) -> [f32; LANES] {
    let mut p = [[0.0f32; LANES]; 2];
    let xs = x.chunks_exact(2);
    let cs = ct.chunks_exact(2);
    let (xr, cr) = (xs.remainder(), cs.remainder());
    for (x4, c4) in xs.zip(cs) {
        for ((acc, &xv), c) in p.iter_mut().zip(x4).zip(c4) {
            for (a, &cv) in acc.iter_mut().zip(c) {
                let t = xv - cv;
                *a += t * t;
            }
        }
    }
    for ((acc, &xv), c) in p.iter_mut().zip(xr).zip(cr) {
        for (a, &cv) in acc.iter_mut().zip(c) {
            let t = xv - cv;
            *a += t * t;
        }
    }
    let mut out = [0.0f32; LANES];
    for (l, o) in out.iter_mut().enumerate() {
        *o = p[0][l] + p[1][l];
    }
    out
}

/// Nearest centre of sample `x` (ties to the lower index) and its squared distance.
#[inline(always)]
fn nearest(x: &[f32], ct: &[[f32; LANES]], shape: Shape) -> (usize, f32) {
    let mut best = (0usize, f32::INFINITY);
    for (b, block) in ct.chunks_exact(shape.d).enumerate() {
        let dist = dist8(x, block);
        let live = (shape.k - b * LANES).min(LANES);
        for (l, &dl) in dist.iter().enumerate().take(live) {
            if dl < best.1 {
                best = (b * LANES + l, dl);
            }
        }
    }
    best
}

/// The assignment step: labels every sample of `data` with its nearest centre into `labels`
/// and adds each sample to its centre's sum and count in `out` (which is not cleared, so
/// several blocks can accumulate into one [`Partials`]).
///
/// A sample whose distances are all NaN or infinite is labelled 0.
pub fn assign(
    shape: Shape,
    data: &[f32],
    centres: &[f32],
    labels: &mut [u32],
    out: &mut Partials,
) -> Result<(), AccelError> {
    let n = shape.check(data, centres)?;
    if labels.len() != n {
        return Err(AccelError::Shape(format!("{} labels for {n} samples", labels.len())));
    }
    if out.sums.len() != shape.k * shape.d || out.counts.len() != shape.k {
        return Err(AccelError::Shape("partials do not match the shape".into()));
    }
    let ct = transpose(shape, centres);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU supports AVX (checked just above). AVX only widens the same IEEE
        // subtract/multiply/add (no fused multiply-add), so results are bit-identical.
        unsafe { assign_rows_avx(shape, data, &ct, labels, out) };
        return Ok(());
    }
    assign_rows(shape, data, &ct, labels, out);
    Ok(())
}

/// [`assign_rows`] compiled for AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn assign_rows_avx(shape: Shape, data: &[f32], ct: &[[f32; LANES]], labels: &mut [u32], out: &mut Partials) {
    assign_rows(shape, data, ct, labels, out)
}

/// The assignment loop over checked inputs.
#[inline(always)]
fn assign_rows(shape: Shape, data: &[f32], ct: &[[f32; LANES]], labels: &mut [u32], out: &mut Partials) {
    let d = shape.d;
    for (x, label) in data.chunks_exact(d).zip(labels.iter_mut()) {
        let (j, dj) = nearest(x, ct, shape);
        *label = j as u32;
        out.inertia += dj as f64;
        out.counts[j] += 1;
        if let Some(row) = out.sums.get_mut(j * d..(j + 1) * d) {
            for (s, &v) in row.iter_mut().zip(x) {
                *s += v as f64;
            }
        }
    }
}

/// The centre update: each centre becomes the mean of its samples (`sums / count`, rounded
/// to `f32`); a centre with no samples keeps its previous position from `centres`, which is
/// updated in place. Returns the largest squared shift of any centre.
pub fn update_centres(shape: Shape, partials: &Partials, centres: &mut [f32]) -> Result<f64, AccelError> {
    shape.check(&[], centres)?;
    if partials.sums.len() != shape.k * shape.d || partials.counts.len() != shape.k {
        return Err(AccelError::Shape("partials do not match the shape".into()));
    }
    let mut max_shift = 0.0f64;
    let rows = partials.sums.chunks_exact(shape.d).zip(&partials.counts);
    for (c, (s, &count)) in centres.chunks_exact_mut(shape.d).zip(rows) {
        if count == 0 {
            continue;
        }
        let mut shift = 0.0f64;
        for (cv, &sv) in c.iter_mut().zip(s) {
            let new = (sv / count as f64) as f32;
            let t = (new - *cv) as f64;
            shift += t * t;
            *cv = new;
        }
        max_shift = max_shift.max(shift);
    }
    Ok(max_shift)
}

/// Result of [`lloyd`].
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Final centres (`k * d`).
    pub centres: Vec<f32>,
    /// Label of every sample for the final centres' predecessors (the last assignment).
    pub labels: Vec<u32>,
    /// Iterations run.
    pub iterations: usize,
    /// Inertia of the last assignment.
    pub inertia: f64,
}

/// Lloyd's algorithm on one core from `init` centres: at most `max_iter` rounds of
/// [`assign`] and [`update_centres`], stopping early once no centre moved by more than
/// `tol` (squared distance).
pub fn lloyd(shape: Shape, data: &[f32], init: &[f32], max_iter: usize, tol: f64) -> Result<Fit, AccelError> {
    let n = shape.check(data, init)?;
    let mut centres = init.to_vec();
    let mut labels = vec![0u32; n];
    let mut fit = Fit { centres: Vec::new(), labels: Vec::new(), iterations: 0, inertia: 0.0 };
    for it in 0..max_iter {
        let mut p = Partials::zeros(shape);
        assign(shape, data, &centres, &mut labels, &mut p)?;
        let shift = update_centres(shape, &p, &mut centres)?;
        fit.iterations = it + 1;
        fit.inertia = p.inertia;
        if shift <= tol {
            break;
        }
    }
    fit.centres = centres;
    fit.labels = labels;
    Ok(fit)
}

/// Features of Covertype-shaped data: 10 integer-valued quantities, 4 one-hot wilderness
/// areas, 40 one-hot soil types.
pub const COVERTYPE_D: usize = 54;

/// Samples in the real Covertype data set.
pub const COVERTYPE_N: usize = 581_012;

/// Deterministic Covertype-shaped data: `n` samples of [`COVERTYPE_D`] features from
/// seven classes (as K-Means with k = 7 expects), all values integers like the real set
/// (elevation 1859..3858 m, aspect 0..360, slope 0..66, distances, hillshades 0..255, then
/// the one-hot areas and soils). Row-major `f32`; the same `seed` gives the same data.
pub fn covertype_like(n: usize, seed: u64) -> Vec<f32> {
    const RANGES: [(f32, f32); 10] = [
        (1859.0, 3858.0),
        (0.0, 360.0),
        (0.0, 66.0),
        (0.0, 1397.0),
        (-173.0, 601.0),
        (0.0, 7117.0),
        (0.0, 254.0),
        (0.0, 254.0),
        (0.0, 254.0),
        (0.0, 7173.0),
    ];
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut unit = move || (next() >> 40) as f32 / (1u64 << 24) as f32;
    // Class prototypes: a centre and a spread per quantity, a favourite area and soil.
    let protos: Vec<([f32; 10], usize, usize)> = (0..7)
        .map(|_| {
            let mut c = [0.0f32; 10];
            for (v, &(lo, hi)) in c.iter_mut().zip(&RANGES) {
                *v = lo + (hi - lo) * (0.2 + 0.6 * unit());
            }
            (c, (unit() * 4.0) as usize % 4, (unit() * 40.0) as usize % 40)
        })
        .collect();
    let mut out = Vec::with_capacity(n * COVERTYPE_D);
    for _ in 0..n {
        let (c, area, soil) = &protos[(unit() * 7.0) as usize % 7];
        for (j, &(lo, hi)) in RANGES.iter().enumerate() {
            // Sum of three uniforms: a bell around the prototype, 15% of the range wide.
            let noise = (unit() + unit() + unit() - 1.5) * 0.1 * (hi - lo);
            out.push((c[j] + noise).round().clamp(lo, hi));
        }
        let area = if unit() < 0.8 { *area } else { (unit() * 4.0) as usize % 4 };
        let soil = if unit() < 0.7 { *soil } else { (unit() * 40.0) as usize % 40 };
        out.extend((0..4).map(|a| if a == area { 1.0 } else { 0.0 }));
        out.extend((0..40).map(|t| if t == soil { 1.0 } else { 0.0 }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (SplitMix64) so tests need no dependency.
    fn gen(seed: u64, n: usize, scale: f32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                ((z >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
            })
            .collect()
    }

    /// The straightforward reference: one distance per (sample, centre) in f64, plain loops.
    fn reference(shape: Shape, data: &[f32], centres: &[f32]) -> (Vec<u32>, Vec<f64>, Vec<u64>) {
        let (d, k) = (shape.d, shape.k);
        let n = data.len() / d;
        let mut labels = vec![0u32; n];
        let mut sums = vec![0.0f64; k * d];
        let mut counts = vec![0u64; k];
        for i in 0..n {
            let mut best = (0usize, f64::INFINITY);
            for j in 0..k {
                let mut s = 0.0f64;
                for f in 0..d {
                    let t = data[i * d + f] as f64 - centres[j * d + f] as f64;
                    s += t * t;
                }
                if s < best.1 {
                    best = (j, s);
                }
            }
            labels[i] = best.0 as u32;
            counts[best.0] += 1;
            for f in 0..d {
                sums[best.0 * d + f] += data[i * d + f] as f64;
            }
        }
        (labels, sums, counts)
    }

    #[test]
    fn assignment_matches_the_reference_on_integer_data() {
        // Integer-valued data: the f32 lane sums and the f64 reference are both exact, so
        // labels, sums and counts must agree exactly (d = 13 exercises the remainder lanes).
        for &(d, k) in &[(1usize, 1usize), (13, 5), (54, 7), (8, 3)] {
            let shape = Shape { d, k };
            let data: Vec<f32> = gen(d as u64, 300 * d, 64.0).iter().map(|v| v.round()).collect();
            let centres: Vec<f32> = gen(99 + k as u64, k * d, 64.0).iter().map(|v| v.round() + 0.25).collect();
            let mut labels = vec![0; 300];
            let mut p = Partials::zeros(shape);
            assign(shape, &data, &centres, &mut labels, &mut p).unwrap();
            let (rl, rs, rc) = reference(shape, &data, &centres);
            assert_eq!(labels, rl, "d={d} k={k}");
            assert_eq!(p.sums, rs);
            assert_eq!(p.counts, rc);
            assert_eq!(p.counts.iter().sum::<u64>(), 300);
        }
    }

    #[test]
    fn assignment_matches_the_reference_on_random_floats() {
        let shape = Shape { d: 54, k: 7 };
        let data = gen(1, 2000 * 54, 10.0);
        let centres = gen(2, 7 * 54, 10.0);
        let mut labels = vec![0; 2000];
        let mut p = Partials::zeros(shape);
        assign(shape, &data, &centres, &mut labels, &mut p).unwrap();
        let (rl, rs, rc) = reference(shape, &data, &centres);
        assert_eq!(labels, rl);
        assert_eq!(p.counts, rc);
        for (a, b) in p.sums.iter().zip(&rs) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn ties_go_to_the_lower_centre_and_empty_centres_stay() {
        let shape = Shape { d: 2, k: 3 };
        let data = [0.0, 0.0, 2.0, 0.0];
        let mut centres = vec![1.0, 0.0, 1.0, 0.0, 50.0, 50.0];
        let mut labels = [9u32; 2];
        let mut p = Partials::zeros(shape);
        assign(shape, &data, &centres, &mut labels, &mut p).unwrap();
        assert_eq!(labels, [0, 0]);
        assert_eq!(p.counts, vec![2, 0, 0]);
        update_centres(shape, &p, &mut centres).unwrap();
        assert_eq!(centres, vec![1.0, 0.0, 1.0, 0.0, 50.0, 50.0]);
    }

    #[test]
    fn blocks_accumulate_to_the_whole() {
        let shape = Shape { d: 10, k: 4 };
        let data: Vec<f32> = gen(5, 1000 * 10, 100.0).iter().map(|v| v.round()).collect();
        let centres: Vec<f32> = data[..40].to_vec();
        let mut whole = Partials::zeros(shape);
        let mut labels = vec![0; 1000];
        assign(shape, &data, &centres, &mut labels, &mut whole).unwrap();
        let mut parts = Partials::zeros(shape);
        let mut l2 = vec![0; 1000];
        for (blk, lb) in data.chunks(370).zip(l2.chunks_mut(37)) {
            assign(shape, blk, &centres, lb, &mut parts).unwrap();
        }
        assert_eq!(labels, l2);
        assert_eq!(whole, parts);
        let packed = whole.to_packed();
        assert_eq!(Partials::from_packed(shape, &packed).unwrap(), whole);
        assert!(Partials::from_packed(shape, &packed[1..]).is_err());
    }

    #[test]
    fn lloyd_separates_two_blobs_and_is_deterministic() {
        let shape = Shape { d: 3, k: 2 };
        let mut data = Vec::new();
        for (i, v) in gen(7, 600, 1.0).chunks(3).enumerate() {
            let off = if i % 2 == 0 { 10.0 } else { -10.0 };
            data.extend(v.iter().map(|x| x + off));
        }
        let init = [data[0], data[1], data[2], data[0] + 1.0, data[1], data[2]];
        let a = lloyd(shape, &data, &init, 50, 0.0).unwrap();
        let b = lloyd(shape, &data, &init, 50, 0.0).unwrap();
        assert_eq!(a, b);
        for (i, &l) in a.labels.iter().enumerate() {
            assert_eq!(l, a.labels[i % 2], "sample {i}");
        }
        assert_ne!(a.labels[0], a.labels[1]);
        assert!(a.iterations < 50);
    }

    #[test]
    fn covertype_like_data_has_the_shape_and_is_seeded() {
        let a = covertype_like(500, 1);
        assert_eq!(a.len(), 500 * COVERTYPE_D);
        assert_eq!(a, covertype_like(500, 1));
        assert_ne!(a, covertype_like(500, 2));
        for row in a.chunks_exact(COVERTYPE_D) {
            assert!(row.iter().all(|v| v.fract() == 0.0));
            assert!((1859.0..=3858.0).contains(&row[0]));
            assert_eq!(row[10..14].iter().sum::<f32>(), 1.0);
            assert_eq!(row[14..].iter().sum::<f32>(), 1.0);
        }
        let init: Vec<f32> = a[..7 * COVERTYPE_D].to_vec();
        let fit = lloyd(Shape { d: COVERTYPE_D, k: 7 }, &a, &init, 20, 0.0).unwrap();
        assert!(fit.iterations >= 2);
    }

    #[test]
    fn the_simd_path_and_the_portable_path_agree_bit_for_bit() {
        let shape = Shape { d: 54, k: 11 };
        let data = gen(3, 3000 * 54, 1000.0);
        let centres = gen(4, 11 * 54, 1000.0);
        let mut la = vec![0; 3000];
        let mut pa = Partials::zeros(shape);
        assign(shape, &data, &centres, &mut la, &mut pa).unwrap();
        let mut lb = vec![0; 3000];
        let mut pb = Partials::zeros(shape);
        assign_rows(shape, &data, &transpose(shape, &centres), &mut lb, &mut pb);
        assert_eq!(la, lb);
        assert_eq!(pa.inertia.to_bits(), pb.inertia.to_bits());
        assert_eq!(pa, pb);
        assert!(la.iter().any(|&l| l >= 8), "the second block of eight centres is used");
    }

    #[test]
    fn bad_shapes_are_errors() {
        let s = Shape { d: 3, k: 2 };
        let mut p = Partials::zeros(s);
        assert!(assign(s, &[1.0; 4], &[0.0; 6], &mut [0; 1], &mut p).is_err());
        assert!(assign(s, &[1.0; 3], &[0.0; 5], &mut [0; 1], &mut p).is_err());
        assert!(assign(s, &[1.0; 3], &[0.0; 6], &mut [0; 2], &mut p).is_err());
        assert!(assign(Shape { d: 0, k: 1 }, &[], &[], &mut [], &mut p).is_err());
    }
}
