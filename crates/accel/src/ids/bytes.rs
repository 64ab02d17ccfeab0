//! Number extraction for `byte_test`, `byte_jump` and `byte_extract` (Snort 3 semantics).

use super::rule::ByteRead;

/// Reads the number described by `r` at absolute position `pos` of `buf`.
/// Returns (value, bytes consumed), or `None` when out of bounds or not a number.
pub fn read_number(buf: &[u8], pos: i64, r: &ByteRead) -> Option<(u32, usize)> {
    if pos < 0 || pos as u64 >= buf.len() as u64 {
        return None;
    }
    let pos = pos as usize;
    let n = usize::from(r.bytes);
    let (mut v, used) = match r.string_base {
        None => {
            let b = buf.get(pos..pos.checked_add(n)?)?;
            let mut v: u32 = 0;
            if r.little {
                for (i, &x) in b.iter().enumerate() {
                    v |= u32::from(x) << (8 * i);
                }
            } else {
                for &x in b {
                    v = v << 8 | u32::from(x);
                }
            }
            (v, n)
        }
        Some(base) => {
            // Like strtoul over at most `n` bytes: optional spaces and sign, digits of the base.
            let end = (pos + n).min(buf.len());
            let s = &buf[pos..end];
            let mut i = 0;
            while i < s.len() && s[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < s.len() && s[i] == b'+' {
                i += 1;
            }
            if base == 16 && i + 1 < s.len() && s[i] == b'0' && (s[i + 1] | 0x20) == b'x' {
                i += 2;
            }
            let digits_start = i;
            let mut v: u64 = 0;
            while i < s.len() {
                let d = match (s[i] as char).to_digit(base) {
                    Some(d) => d,
                    None => break,
                };
                v = v.saturating_mul(u64::from(base)).saturating_add(u64::from(d));
                i += 1;
            }
            if i == digits_start {
                return None;
            }
            (v.min(u64::from(u32::MAX)) as u32, i)
        }
    };
    if let Some(mask) = r.bitmask {
        v &= mask;
        if v != 0 {
            v >>= mask.trailing_zeros();
        }
    }
    Some((v, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::rule::Num;

    fn rd(bytes: u8, little: bool, base: Option<u32>, mask: Option<u32>) -> ByteRead {
        ByteRead { bytes, offset: Num::Lit(0), relative: false, little, string_base: base, bitmask: mask }
    }

    #[test]
    fn binary_and_text() {
        let b = [0x01, 0x02, 0x03, 0x04];
        assert_eq!(read_number(&b, 0, &rd(2, false, None, None)), Some((0x0102, 2)));
        assert_eq!(read_number(&b, 0, &rd(2, true, None, None)), Some((0x0201, 2)));
        assert_eq!(read_number(&b, 3, &rd(2, false, None, None)), None);
        assert_eq!(read_number(&b, -1, &rd(1, false, None, None)), None);
        assert_eq!(read_number(&b, 0, &rd(2, false, None, Some(0x0F00))), Some((0x1, 2)));
        assert_eq!(read_number(b" 123x", 0, &rd(5, false, Some(10), None)), Some((123, 4)));
        assert_eq!(read_number(b"ff", 0, &rd(2, false, Some(16), None)), Some((255, 2)));
        assert_eq!(read_number(b"zz", 0, &rd(2, false, Some(10), None)), None);
        assert_eq!(read_number(b"99999999999", 0, &rd(10, false, Some(10), None)), Some((u32::MAX, 10)));
    }
}
