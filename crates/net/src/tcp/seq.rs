//! Sequence-number arithmetic modulo 2^32 (RFC 9293 section 3.4).

/// `a < b` in sequence space (either as a [`Seq`] or as a raw `u32` off the wire).
#[inline]
pub fn lt(a: impl Into<Seq>, b: impl Into<Seq>) -> bool {
    a.into() < b.into()
}

/// `a <= b` in sequence space.
#[inline]
pub fn le(a: impl Into<Seq>, b: impl Into<Seq>) -> bool {
    a.into() <= b.into()
}

/// `a > b` in sequence space.
#[inline]
pub fn gt(a: impl Into<Seq>, b: impl Into<Seq>) -> bool {
    a.into() > b.into()
}

/// `a >= b` in sequence space.
#[inline]
pub fn ge(a: impl Into<Seq>, b: impl Into<Seq>) -> bool {
    a.into() >= b.into()
}

/// The later of two sequence numbers.
#[inline]
pub fn max<T: Into<Seq> + Copy>(a: T, b: T) -> T {
    if gt(a, b) {
        a
    } else {
        b
    }
}

/// Distance from `from` to `to` (to - from), assuming `to` is not before `from` (see
/// [`Seq::bytes_to`] where it may be).
#[inline]
pub fn dist(from: impl Into<Seq>, to: impl Into<Seq>) -> u32 {
    to.into().0.wrapping_sub(from.into().0)
}

/// A sequence number as a type: comparisons and arithmetic modulo 2^32 (RFC 9293 section
/// 3.4), so that code cannot compare or subtract two of them as plain integers. `a < b` means
/// `a` comes before `b` in sequence space (meaningful within 2^31 of each other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Seq(pub u32);

impl Seq {
    /// Bytes from `self` up to `later`; 0 when `later` is not after `self` (a window edge
    /// that fell behind is an empty window, never a wrapped-around 4 GB one).
    #[inline]
    pub fn bytes_to(self, later: Seq) -> u32 {
        if later > self {
            later.0.wrapping_sub(self.0)
        } else {
            0
        }
    }

    /// The later of two sequence numbers.
    #[inline]
    #[cfg(test)]
    pub fn later(self, other: Seq) -> Seq {
        if other > self {
            other
        } else {
            self
        }
    }
}

impl From<u32> for Seq {
    #[inline]
    fn from(v: u32) -> Seq {
        Seq(v)
    }
}

impl PartialOrd for Seq {
    #[inline]
    fn partial_cmp(&self, other: &Seq) -> Option<std::cmp::Ordering> {
        Some((self.0.wrapping_sub(other.0) as i32).cmp(&0))
    }
}

impl std::ops::Add<u32> for Seq {
    type Output = Seq;
    #[inline]
    fn add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }
}

impl std::ops::AddAssign<u32> for Seq {
    #[inline]
    fn add_assign(&mut self, n: u32) {
        self.0 = self.0.wrapping_add(n);
    }
}

impl std::ops::Sub<u32> for Seq {
    type Output = Seq;
    #[inline]
    fn sub(self, n: u32) -> Seq {
        Seq(self.0.wrapping_sub(n))
    }
}

/// A range of sequence numbers `[start, end)` (a SACK block, a D-SACK, a lost segment),
/// with `end` not before `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqRange {
    /// The first sequence number in the range.
    pub start: Seq,
    /// The sequence number just past the range.
    pub end: Seq,
}

impl SeqRange {
    /// The range `[start, end)`.
    #[inline]
    pub fn new(start: impl Into<Seq>, end: impl Into<Seq>) -> SeqRange {
        SeqRange { start: start.into(), end: end.into() }
    }

    /// Bytes in the range.
    #[inline]
    pub fn len(self) -> u32 {
        dist(self.start, self.end)
    }

    /// The range as a SACK block on the wire (left edge, right edge).
    #[inline]
    pub fn block(self) -> (u32, u32) {
        (self.start.0, self.end.0)
    }
}

impl From<(u32, u32)> for SeqRange {
    /// A SACK block off the wire (left edge, right edge).
    #[inline]
    fn from((start, end): (u32, u32)) -> SeqRange {
        SeqRange::new(start, end)
    }
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

    #[test]
    fn the_seq_type_compares_and_measures_across_the_wrap() {
        let (a, b) = (Seq(u32::MAX - 5), Seq(3));
        assert!(a < b, "the later number compares greater across the wrap");
        assert!(b > a);
        assert!(a <= Seq(u32::MAX - 5));
        assert_eq!(a + 9, b);
        assert_eq!(b - 9, a);
        assert_eq!(a.bytes_to(b), 9);
        assert_eq!(b.bytes_to(a), 0, "an edge behind is an empty window");
        assert_eq!(a.later(b), b);
        let mut c = a;
        c += 9;
        assert_eq!(c, b);
    }

    #[test]
    fn a_range_measures_across_the_wrap_and_converts_to_a_wire_block() {
        let r = SeqRange::new(u32::MAX - 5, 3);
        assert_eq!(r.len(), 9);
        assert_eq!(r.block(), (u32::MAX - 5, 3));
        assert_eq!(SeqRange::from((10, 20)), SeqRange::new(Seq(10), Seq(20)));
    }
}
