//! Element types and reduction operators, and the reduction kernel on little-endian bytes.
//!
//! Messages carry elements little-endian. Reductions combine two operands at a time:
//! integers wrap on overflow (as numpy's fixed-width integers do); `f16` and `bf16` are
//! computed in `f32` and rounded back after every operation (as numpy does for `float16`).
//! Every operator is commutative bit for bit (IEEE addition and multiplication are; `max`
//! and `min` here treat `+0` as larger than `-0` and return a canonical NaN if either operand
//! is NaN), so two ranks combining the same pair in either operand order get identical bits.
//! Which pairs are combined, and in which order, is fixed by each algorithm (see
//! [`crate::schedule`]); NaN payloads are not preserved.

use half::{bf16, f16};

/// The element types a communicator reduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// 32-bit two's complement (the paper's 32-bit fixed point).
    I32,
    /// 64-bit two's complement.
    I64,
    /// Unsigned 8-bit (also bytes, and booleans as 0/1).
    U8,
    /// 8-bit two's complement.
    I8,
    /// Unsigned 16-bit.
    U16,
    /// 16-bit two's complement.
    I16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 64-bit.
    U64,
}

impl DType {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::I8 => 1,
            DType::F16 | DType::BF16 | DType::U16 | DType::I16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }
}

/// Reduction operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// Addition.
    Sum,
    /// Multiplication.
    Prod,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Bitwise and (on a float: of its IEEE bits).
    Band,
    /// Bitwise or (on a float: of its IEEE bits).
    Bor,
    /// Bitwise exclusive or (on a float: of its IEEE bits).
    Bxor,
    /// Logical and: 1 if both operands are non-zero, else 0.
    Land,
    /// Logical or: 1 if either operand is non-zero, else 0.
    Lor,
    /// Logical exclusive or: 1 if exactly one operand is non-zero, else 0.
    Lxor,
}

impl ReduceOp {
    /// Whether the operator is a logical one (its result is 0 or 1).
    pub fn is_logical(self) -> bool {
        matches!(self, ReduceOp::Land | ReduceOp::Lor | ReduceOp::Lxor)
    }

    /// The operator named `name` (`sum prod max min band bor bxor land lor lxor`, any case).
    pub fn parse(name: &str) -> Option<ReduceOp> {
        Some(match name.to_ascii_lowercase().as_str() {
            "sum" => ReduceOp::Sum,
            "prod" => ReduceOp::Prod,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            "band" => ReduceOp::Band,
            "bor" => ReduceOp::Bor,
            "bxor" => ReduceOp::Bxor,
            "land" => ReduceOp::Land,
            "lor" => ReduceOp::Lor,
            "lxor" => ReduceOp::Lxor,
            _ => return None,
        })
    }
}

/// The logical operators on "is non-zero" truth values.
#[inline(always)]
fn logical(op: ReduceOp, a: bool, b: bool) -> bool {
    match op {
        ReduceOp::Land => a && b,
        ReduceOp::Lor => a || b,
        _ => a != b,
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that travels as one of the [`DType`]s.
pub trait Element: Copy + Send + Sync + 'static + bytemuck::Pod + sealed::Sealed {
    /// The wire type.
    const DTYPE: DType;
    /// Writes the element little-endian into `out` (exactly `DTYPE.size()` bytes).
    fn write_le(self, out: &mut [u8]);
    /// Reads an element from `b` (exactly `DTYPE.size()` bytes).
    fn read_le(b: &[u8]) -> Self;
    /// `a op b`, commutative bit for bit.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! int_element {
    ($t:ty, $d:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
            #[inline]
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline]
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Band => a & b,
                    ReduceOp::Bor => a | b,
                    ReduceOp::Bxor => a ^ b,
                    ReduceOp::Land | ReduceOp::Lor | ReduceOp::Lxor => <$t>::from(logical(op, a != 0, b != 0)),
                }
            }
        }
    };
}
int_element!(i32, DType::I32);
int_element!(i64, DType::I64);
int_element!(u8, DType::U8);
int_element!(i8, DType::I8);
int_element!(u16, DType::U16);
int_element!(i16, DType::I16);
int_element!(u32, DType::U32);
int_element!(u64, DType::U64);

/// Defines a commutative IEEE maximum/minimum on one float type (NaN wins, `+0 > -0`), so
/// that the result does not depend on the order of the operands.
macro_rules! commutative_max {
    ($name:ident, $t:ty) => {
        #[doc = concat!("Commutative IEEE maximum/minimum on `", stringify!($t), "` (NaN wins, `+0 > -0`).")]
        #[inline]
        fn $name(a: $t, b: $t, max: bool) -> $t {
            if a.is_nan() || b.is_nan() {
                return <$t>::NAN;
            }
            if a == b {
                // Equal values differ at most in the sign of zero.
                let neg = if max {
                    a.is_sign_negative() && b.is_sign_negative()
                } else {
                    a.is_sign_negative() || b.is_sign_negative()
                };
                return if neg { -a.abs() } else { a.abs() };
            }
            if (a > b) == max {
                a
            } else {
                b
            }
        }
    };
}

commutative_max!(fmax32, f32);
commutative_max!(fmax64, f64);

macro_rules! float_element {
    ($t:ty, $d:expr, $m:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
            #[inline]
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline]
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    ReduceOp::Max => $m(a, b, true),
                    ReduceOp::Min => $m(a, b, false),
                    ReduceOp::Band => <$t>::from_bits(a.to_bits() & b.to_bits()),
                    ReduceOp::Bor => <$t>::from_bits(a.to_bits() | b.to_bits()),
                    ReduceOp::Bxor => <$t>::from_bits(a.to_bits() ^ b.to_bits()),
                    ReduceOp::Land | ReduceOp::Lor | ReduceOp::Lxor => {
                        if logical(op, a != 0.0, b != 0.0) {
                            1.0
                        } else {
                            0.0
                        }
                    }
                }
            }
        }
    };
}
float_element!(f32, DType::F32, fmax32);
float_element!(f64, DType::F64, fmax64);

macro_rules! half_element {
    ($t:ty, $d:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = $d;
            #[inline]
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn read_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes([b[0], b[1]])
            }
            #[inline]
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                let (x, y) = (a.to_f32(), b.to_f32());
                <$t>::from_f32(match op {
                    ReduceOp::Sum => x + y,
                    ReduceOp::Prod => x * y,
                    ReduceOp::Max => fmax32(x, y, true),
                    ReduceOp::Min => fmax32(x, y, false),
                    ReduceOp::Band => return <$t>::from_bits(a.to_bits() & b.to_bits()),
                    ReduceOp::Bor => return <$t>::from_bits(a.to_bits() | b.to_bits()),
                    ReduceOp::Bxor => return <$t>::from_bits(a.to_bits() ^ b.to_bits()),
                    ReduceOp::Land | ReduceOp::Lor | ReduceOp::Lxor => {
                        f32::from(u8::from(logical(op, x != 0.0, y != 0.0)))
                    }
                })
            }
        }
    };
}
half_element!(f16, DType::F16);
half_element!(bf16, DType::BF16);

/// Elements as little-endian bytes (one copy on little-endian machines).
pub fn to_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    to_bytes_in(Vec::new(), data)
}

/// [`to_bytes`] appended to `buf` (a pooled buffer saves the allocation).
pub fn to_bytes_in<T: Element>(mut buf: Vec<u8>, data: &[T]) -> Vec<u8> {
    if cfg!(target_endian = "little") {
        buf.extend_from_slice(bytemuck::cast_slice::<T, u8>(data));
        return buf;
    }
    let (start, s) = (buf.len(), T::DTYPE.size());
    buf.resize(start + data.len() * s, 0);
    for (c, &x) in buf[start..].chunks_exact_mut(s).zip(data) {
        x.write_le(c);
    }
    buf
}

/// Little-endian bytes as elements (a trailing partial element is ignored; one copy on
/// little-endian machines).
pub fn from_bytes<T: Element>(b: &[u8]) -> Vec<T> {
    let n = b.len() / T::DTYPE.size();
    if cfg!(target_endian = "little") {
        // Aligned (as buffers from the allocator are): one copy, no zeroing first.
        if let Ok(elems) = bytemuck::try_cast_slice::<u8, T>(&b[..n * T::DTYPE.size()]) {
            return elems.to_vec();
        }
    }
    let mut v = vec![T::zeroed(); n];
    from_bytes_into(b, &mut v);
    v
}

/// Little-endian bytes into the elements of `out` (as many as both hold).
pub fn from_bytes_into<T: Element>(b: &[u8], out: &mut [T]) {
    let n = out.len().min(b.len() / T::DTYPE.size());
    let whole = &b[..n * T::DTYPE.size()];
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice_mut::<T, u8>(&mut out[..n]).copy_from_slice(whole);
        return;
    }
    for (o, c) in out.iter_mut().zip(whole.chunks_exact(T::DTYPE.size())) {
        *o = T::read_le(c);
    }
}

#[inline(always)]
fn apply<T: Element>(acc: &mut [u8], inc: &[u8], f: impl Fn(T, T) -> T) {
    // Aligned buffers on a little-endian machine: operate on the elements in place (a loop
    // the compiler vectorises); otherwise element by element through the byte encoding.
    if cfg!(target_endian = "little") {
        if let (Ok(a), Ok(b)) = (bytemuck::try_cast_slice_mut::<u8, T>(acc), bytemuck::try_cast_slice::<u8, T>(inc)) {
            for (x, &y) in a.iter_mut().zip(b) {
                *x = f(*x, y);
            }
            return;
        }
    }
    let s = T::DTYPE.size();
    for (a, b) in acc.chunks_exact_mut(s).zip(inc.chunks_exact(s)) {
        f(T::read_le(a), T::read_le(b)).write_le(a);
    }
}

fn reduce_typed<T: Element>(op: ReduceOp, acc: &mut [u8], inc: &[u8]) {
    // One loop per operator, so the operator is not re-dispatched per element.
    match op {
        ReduceOp::Sum => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Sum, a, b)),
        ReduceOp::Prod => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Prod, a, b)),
        ReduceOp::Max => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Max, a, b)),
        ReduceOp::Min => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Min, a, b)),
        ReduceOp::Band => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Band, a, b)),
        ReduceOp::Bor => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Bor, a, b)),
        ReduceOp::Bxor => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Bxor, a, b)),
        ReduceOp::Land => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Land, a, b)),
        ReduceOp::Lor => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Lor, a, b)),
        ReduceOp::Lxor => apply::<T>(acc, inc, |a, b| T::combine(ReduceOp::Lxor, a, b)),
    }
}

/// `acc[i] = acc[i] op inc[i]` element-wise on little-endian bytes of `dtype`. Both slices
/// must have the same length, a multiple of the element size (callers check it).
pub fn reduce_bytes(dtype: DType, op: ReduceOp, acc: &mut [u8], inc: &[u8]) {
    match dtype {
        DType::F16 => reduce_typed::<f16>(op, acc, inc),
        DType::BF16 => reduce_typed::<bf16>(op, acc, inc),
        DType::F32 => reduce_typed::<f32>(op, acc, inc),
        DType::F64 => reduce_typed::<f64>(op, acc, inc),
        DType::I32 => reduce_typed::<i32>(op, acc, inc),
        DType::I64 => reduce_typed::<i64>(op, acc, inc),
        DType::U8 => reduce_typed::<u8>(op, acc, inc),
        DType::I8 => reduce_typed::<i8>(op, acc, inc),
        DType::U16 => reduce_typed::<u16>(op, acc, inc),
        DType::I16 => reduce_typed::<i16>(op, acc, inc),
        DType::U32 => reduce_typed::<u32>(op, acc, inc),
        DType::U64 => reduce_typed::<u64>(op, acc, inc),
    }
}

/// Every element of `buf` (little-endian `dtype`) replaced by its truth value, 1 or 0: the
/// input of a logical reduction, so that a value no other rank's was combined with (one
/// rank, or a part only this rank holds) comes out as 0 or 1 too.
pub fn truth_in_place(dtype: DType, buf: &mut [u8]) {
    let zeros = vec![0u8; buf.len()];
    reduce_bytes(dtype, ReduceOp::Lor, buf, &zeros);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap_like_numpy() {
        assert_eq!(i32::combine(ReduceOp::Sum, i32::MAX, 1), i32::MIN);
        assert_eq!(i64::combine(ReduceOp::Prod, i64::MAX, 2), -2);
        assert_eq!(i32::combine(ReduceOp::Min, -3, 2), -3);
    }

    #[test]
    fn bitwise_and_logical_operators() {
        assert_eq!(u8::combine(ReduceOp::Band, 0b1100, 0b1010), 0b1000);
        assert_eq!(u32::combine(ReduceOp::Bor, 0b1100, 0b1010), 0b1110);
        assert_eq!(i16::combine(ReduceOp::Bxor, -1, 0), -1);
        assert_eq!(i64::combine(ReduceOp::Land, 7, -3), 1);
        assert_eq!(u64::combine(ReduceOp::Land, 7, 0), 0);
        assert_eq!(i8::combine(ReduceOp::Lor, 0, -128), 1);
        assert_eq!(u16::combine(ReduceOp::Lxor, 5, 9), 0);
        assert_eq!(u8::combine(ReduceOp::Sum, 255, 2), 1);
        assert_eq!(f64::combine(ReduceOp::Land, 0.5, -2.0), 1.0);
        assert_eq!(f32::combine(ReduceOp::Lor, 0.0, -0.0), 0.0);
        assert_eq!(f16::combine(ReduceOp::Lxor, f16::ONE, f16::ZERO), f16::ONE);
        for op in ["sum", "PROD", "max", "min", "band", "bor", "bxor", "land", "lor", "lxor"] {
            assert!(ReduceOp::parse(op).is_some(), "{op}");
        }
        assert_eq!(ReduceOp::parse("avg"), None);
        let mut b = to_bytes(&[0i16, -3, 7, 1]);
        truth_in_place(DType::I16, &mut b);
        assert_eq!(from_bytes::<i16>(&b), [0, 1, 1, 1]);
    }

    #[test]
    fn float_max_min_are_commutative_in_bits() {
        for &(a, b) in &[(0.0f32, -0.0f32), (1.0, 2.0), (f32::NAN, 1.0), (-0.0, -0.0)] {
            for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::Prod] {
                let x = f32::combine(op, a, b).to_bits();
                let y = f32::combine(op, b, a).to_bits();
                assert_eq!(x, y, "{op:?} {a} {b}");
            }
        }
        assert_eq!(f64::combine(ReduceOp::Max, -0.0, 0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(f64::combine(ReduceOp::Min, -0.0, 0.0).to_bits(), (-0.0f64).to_bits());
        assert!(f64::combine(ReduceOp::Max, 1.0, f64::NAN).is_nan());
    }

    #[test]
    fn halves_round_after_each_operation() {
        // 2048 + 1 is not representable in f16: the sum rounds back to 2048 (ties to even).
        let a = f16::from_f32(2048.0);
        assert_eq!(f16::combine(ReduceOp::Sum, a, f16::from_f32(1.0)), a);
        let b = bf16::from_f32(3.0);
        assert_eq!(bf16::combine(ReduceOp::Prod, b, b).to_f32(), 9.0);
    }

    #[test]
    fn unaligned_buffers_reduce_like_aligned_ones() {
        let x: Vec<f64> = (0..9).map(|i| i as f64 * 0.5).collect();
        let y: Vec<f64> = (0..9).map(|i| 1.0 - i as f64).collect();
        let mut aligned = to_bytes(&x);
        reduce_bytes(DType::F64, ReduceOp::Sum, &mut aligned, &to_bytes(&y));
        // The same bytes at an offset that is not 8-aligned cannot be viewed as f64: the
        // byte path is taken.
        let mut buf = [0u8; 80];
        let mut inc = [0u8; 80];
        let off = |p: *const u8| (1..8).find(|&o| !(p as usize + o).is_multiple_of(8)).unwrap_or(1);
        let (ob, oi) = (off(buf.as_ptr()), off(inc.as_ptr()));
        buf[ob..ob + 72].copy_from_slice(&to_bytes(&x));
        inc[oi..oi + 72].copy_from_slice(&to_bytes(&y));
        reduce_bytes(DType::F64, ReduceOp::Sum, &mut buf[ob..ob + 72], &inc[oi..oi + 72]);
        assert_eq!(&buf[ob..ob + 72], &aligned[..]);
        assert_eq!(from_bytes::<f64>(&buf[ob..ob + 72]), (0..9).map(|i| 1.0 - i as f64 * 0.5).collect::<Vec<_>>());
        assert_eq!(from_bytes::<i32>(&[1, 0, 0, 0, 9]), vec![1]);
    }

    #[test]
    fn bytes_round_trip_and_reduce() {
        let x = [1.5f64, -2.0, 3.25];
        let mut a = to_bytes(&x);
        assert_eq!(from_bytes::<f64>(&a), x);
        reduce_bytes(DType::F64, ReduceOp::Sum, &mut a, &to_bytes(&[1.0f64, 1.0, 1.0]));
        assert_eq!(from_bytes::<f64>(&a), [2.5, -1.0, 4.25]);
    }
}
