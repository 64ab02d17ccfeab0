//! Sequence-number arithmetic modulo 2^32 (RFC 9293 section 3.4).

/// `a < b` in sequence space.
#[inline]
pub fn lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a <= b` in sequence space.
#[inline]
pub fn le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

/// `a > b` in sequence space.
#[inline]
pub fn gt(a: u32, b: u32) -> bool {
    lt(b, a)
}

/// `a >= b` in sequence space.
#[inline]
pub fn ge(a: u32, b: u32) -> bool {
    le(b, a)
}

/// The later of two sequence numbers.
#[inline]
pub fn max(a: u32, b: u32) -> u32 {
    if gt(a, b) {
        a
    } else {
        b
    }
}

/// Distance from `from` to `to` (to - from), assuming `to` is not before `from`.
#[inline]
pub fn dist(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap() {
        assert!(lt(u32::MAX - 5, 3));
        assert!(gt(3, u32::MAX - 5));
        assert!(le(7, 7) && ge(7, 7));
        assert_eq!(dist(u32::MAX - 1, 2), 4);
        assert_eq!(max(u32::MAX, 1), 1);
    }
}
