//! The innermost loop of the code program: combining a table operand into a row of lanes,
//! `out[l] ∘= table[class[l]]`, portable or with AVX2 (four lanes) or AVX-512 (eight lanes)
//! gathers.
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

/// The instruction set an evaluation loop is compiled for.
pub(crate) mod level {
    /// Portable code (SSE2 on x86-64).
    pub const PORTABLE: u8 = 0;
    /// AVX2: four-lane gathers.
    pub const AVX2: u8 = 1;
    /// AVX-512F: eight-lane gathers.
    pub const AVX512: u8 = 2;
}

/// `out[l] ∘= table[min(classes[l], table.len() - 1)]` for every lane (`classes` at least as
/// long as `out`), with gathers at `LEVEL`. An empty table gives NaN (the log-space
/// fallback), as a malformed program must not panic.
///
/// `LEVEL` may exceed [`level::PORTABLE`] only where the CPU has that level ([`best_level`]).
#[inline(always)]
pub(crate) fn table<const LEVEL: u8>(out: &mut [f64], classes: &[u16], table: &[f64], c: Combine) {
    let Some(last) = table.len().checked_sub(1) else {
        out.iter_mut().for_each(|a| c.one(a, f64::NAN));
        return;
    };
    let classes = &classes[..out.len().min(classes.len())];
    let out = &mut out[..classes.len()];
    #[cfg(target_arch = "x86_64")]
    if LEVEL != level::PORTABLE && last < i32::MAX as usize {
        // SAFETY: LEVEL is above PORTABLE only where the CPU has that level (see above); the
        // slices are as the kernels need (same length, table not empty and indexable by i32).
        unsafe {
            if LEVEL == level::AVX512 {
                x86::table_avx512(out, classes, table, c)
            } else {
                x86::table_avx2(out, classes, table, c)
            }
        };
        return;
    }
    c.rows(out, classes.iter().map(|&k| table[usize::from(k).min(last)]));
}

/// The widest level this CPU has: AVX-512F, AVX2 or portable (the standard library caches
/// the CPU's answer after the first query).
#[inline]
pub(crate) fn best_level() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx2") {
            return level::AVX512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return level::AVX2;
        }
    }
    level::PORTABLE
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

    /// [`super::table`] eight lanes at a time with AVX-512 `vgatherdpd`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F and AVX2; `table` must not be empty and shorter than
    /// 2^31 entries; `classes` must be as long as `out`.
    #[target_feature(enable = "avx512f,avx2")]
    #[inline]
    pub(super) unsafe fn table_avx512(out: &mut [f64], classes: &[u16], table: &[f64], c: Combine) {
        let n = out.len().min(classes.len());
        let last = table.len() - 1;
        let octs = n / 8;
        let limit = _mm256_set1_epi32(last as i32);
        let base = table.as_ptr();
        let (op, w) = match c {
            Combine::Set => (0, 1.0),
            Combine::Mul => (1, 1.0),
            Combine::SetScaled(w) => (2, w),
            Combine::AddScaled(w) => (3, w),
        };
        let wv = _mm512_set1_pd(w);
        for q in 0..octs {
            // SAFETY: lanes 8q..8q+8 are within `classes` and `out` (q < n / 8); the indices
            // are clamped to `last`, so every gathered element is within `table`.
            unsafe {
                let k = _mm_loadu_si128(classes.as_ptr().add(8 * q) as *const __m128i);
                let idx = _mm256_min_epu32(_mm256_cvtepu16_epi32(k), limit);
                let x = _mm512_i32gather_pd::<8>(idx, base);
                let p = out.as_mut_ptr().add(8 * q);
                let v = match op {
                    0 => x,
                    1 => _mm512_mul_pd(_mm512_loadu_pd(p), x),
                    2 => _mm512_mul_pd(wv, x),
                    _ => _mm512_add_pd(_mm512_loadu_pd(p), _mm512_mul_pd(wv, x)),
                };
                _mm512_storeu_pd(p, v);
            }
        }
        let done = octs * 8;
        c.rows(&mut out[done..n], classes[done..n].iter().map(|&k| table[usize::from(k).min(last)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every level this CPU has agrees with the portable loop to the bit, for every
    /// combination and a tail.
    #[test]
    fn gathers_match_portable() {
        let t: Vec<f64> = (0..16).map(|i| 0.1 + f64::from(i) / 7.0).collect();
        let classes: Vec<u16> = (0..23).map(|i| (i * 5 % 19) as u16).collect(); // some above 15
        for c in [Combine::Set, Combine::Mul, Combine::SetScaled(0.3), Combine::AddScaled(0.7)] {
            let start: Vec<f64> = (0..23).map(|i| 1.0 + f64::from(i)).collect();
            let mut b = start.clone();
            table::<{ level::PORTABLE }>(&mut b, &classes, &t, c);
            let best = best_level();
            if best >= level::AVX2 {
                let mut a = start.clone();
                table::<{ level::AVX2 }>(&mut a, &classes, &t, c);
                assert_eq!(a, b, "AVX2 {c:?}");
            }
            if best >= level::AVX512 {
                let mut a = start.clone();
                table::<{ level::AVX512 }>(&mut a, &classes, &t, c);
                assert_eq!(a, b, "AVX-512 {c:?}");
            }
            let want = |l: usize| t[usize::from(classes[l]).min(15)];
            let expected = match c {
                Combine::Set => want(22),
                Combine::Mul => 23.0 * want(22),
                Combine::SetScaled(w) => w * want(22),
                Combine::AddScaled(w) => 23.0 + w * want(22),
            };
            assert_eq!(b[22], expected);
        }
        let mut a = vec![1.0; 3];
        table::<{ level::PORTABLE }>(&mut a, &[0, 1, 2], &[], Combine::Mul);
        assert!(a.iter().all(|x| x.is_nan()));
    }
}
