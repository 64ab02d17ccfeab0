//! The innermost loop of the code program: combining a table operand into a row of lanes,
//! `out[l] ∘= table[class[l]]`, portable or with AVX2 gathers.
//!
//! Both builds do the same IEEE operations in the same order (a multiply, or a multiply and
//! then an add; never fused), so results are identical to the bit whichever runs.

/// How an operand's value `x` is combined into the destination `a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Combine {
    /// `a = x` (a product's first operand).
    Set,
    /// `a *= x` (a product's further operands).
    Mul,
    /// `a = w * x` (a sum's first operand).
    SetScaled(f64),
    /// `a += w * x` (a sum's further operands).
    AddScaled(f64),
}

impl Combine {
    /// Apply to one lane.
    #[inline(always)]
    pub(crate) fn one(self, a: &mut f64, x: f64) {
        match self {
            Combine::Set => *a = x,
            Combine::Mul => *a *= x,
            Combine::SetScaled(w) => *a = w * x,
            Combine::AddScaled(w) => *a += w * x,
        }
    }

    /// Apply lane by lane to `out` from `xs` (the loop is chosen once, outside the lanes).
    #[inline(always)]
    pub(crate) fn rows(self, out: &mut [f64], xs: impl Iterator<Item = f64>) {
        let pairs = out.iter_mut().zip(xs);
        match self {
            Combine::Set => pairs.for_each(|(a, x)| *a = x),
            Combine::Mul => pairs.for_each(|(a, x)| *a *= x),
            Combine::SetScaled(w) => pairs.for_each(|(a, x)| *a = w * x),
            Combine::AddScaled(w) => pairs.for_each(|(a, x)| *a += w * x),
        }
    }
}

/// `out[l] ∘= table[min(classes[l], table.len() - 1)]` for every lane (`classes` at least as
/// long as `out`); with AVX2 gathers if `AVX2`. An empty table gives NaN (the log-space
/// fallback), as a malformed program must not panic.
///
/// `AVX2` may be true only where the CPU has AVX2 ([`has_avx2`]).
#[inline(always)]
pub(crate) fn table<const AVX2: bool>(out: &mut [f64], classes: &[u16], table: &[f64], c: Combine) {
    let Some(last) = table.len().checked_sub(1) else {
        out.iter_mut().for_each(|a| c.one(a, f64::NAN));
        return;
    };
    let classes = &classes[..out.len().min(classes.len())];
    let out = &mut out[..classes.len()];
    #[cfg(target_arch = "x86_64")]
    if AVX2 && last < i32::MAX as usize {
        // SAFETY: AVX2 is true only where the CPU has AVX2 (see above); the slices are
        // as `table_avx2` needs (same length, table not empty and indexable by i32).
        unsafe { x86::table_avx2(out, classes, table, c) };
        return;
    }
    c.rows(out, classes.iter().map(|&k| table[usize::from(k).min(last)]));
}

/// Whether the CPU has AVX2 (cached by the standard library after the first query).
#[inline]
pub(crate) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Combine;
    use std::arch::x86_64::*;

    /// [`super::table`] four lanes at a time with `vgatherdpd`.
    ///
    /// # Safety
    /// The CPU must support AVX2; `table` must not be empty and shorter than 2^31 entries;
    /// `classes` must be as long as `out`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn table_avx2(out: &mut [f64], classes: &[u16], table: &[f64], c: Combine) {
        let n = out.len().min(classes.len());
        let last = table.len() - 1;
        let quads = n / 4;
        let limit = _mm_set1_epi32(last as i32);
        let base = table.as_ptr();
        let (op, w) = match c {
            Combine::Set => (0, 1.0),
            Combine::Mul => (1, 1.0),
            Combine::SetScaled(w) => (2, w),
            Combine::AddScaled(w) => (3, w),
        };
        let wv = _mm256_set1_pd(w);
        for q in 0..quads {
            // SAFETY: lanes 4q..4q+4 are within `classes` and `out` (q < n / 4); the indices
            // are clamped to `last`, so every gathered element is within `table`.
            unsafe {
                let k = _mm_loadl_epi64(classes.as_ptr().add(4 * q) as *const __m128i);
                let idx = _mm_min_epu32(_mm_cvtepu16_epi32(k), limit);
                let x = _mm256_i32gather_pd::<8>(base, idx);
                let p = out.as_mut_ptr().add(4 * q);
                let v = match op {
                    0 => x,
                    1 => _mm256_mul_pd(_mm256_loadu_pd(p), x),
                    2 => _mm256_mul_pd(wv, x),
                    _ => _mm256_add_pd(_mm256_loadu_pd(p), _mm256_mul_pd(wv, x)),
                };
                _mm256_storeu_pd(p, v);
            }
        }
        let done = quads * 4;
        c.rows(&mut out[done..n], classes[done..n].iter().map(|&k| table[usize::from(k).min(last)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AVX2 and portable builds agree to the bit, for every combination and a tail.
    #[test]
    fn gather_matches_portable() {
        let t: Vec<f64> = (0..16).map(|i| 0.1 + f64::from(i) / 7.0).collect();
        let classes: Vec<u16> = (0..23).map(|i| (i * 5 % 19) as u16).collect(); // some above 15
        for c in [Combine::Set, Combine::Mul, Combine::SetScaled(0.3), Combine::AddScaled(0.7)] {
            let mut a: Vec<f64> = (0..23).map(|i| 1.0 + f64::from(i)).collect();
            let mut b = a.clone();
            if has_avx2() {
                table::<true>(&mut a, &classes, &t, c);
            } else {
                table::<false>(&mut a, &classes, &t, c);
            }
            table::<false>(&mut b, &classes, &t, c);
            assert_eq!(a, b, "{c:?}");
            let want = |l: usize| t[usize::from(classes[l]).min(15)];
            assert_eq!(
                b[22],
                match c {
                    Combine::Set => want(22),
                    Combine::Mul => 23.0 * want(22),
                    Combine::SetScaled(w) => w * want(22),
                    Combine::AddScaled(w) => 23.0 + w * want(22),
                }
            );
        }
        let mut a = vec![1.0; 3];
        table::<false>(&mut a, &[0, 1, 2], &[], Combine::Mul);
        assert!(a.iter().all(|x| x.is_nan()));
    }
}
