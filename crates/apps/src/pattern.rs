//! Deterministic payload bytes: the HTTP responder's bodies and the iperf sender's data.
//! Byte `i` of a stream is `byte(i)`; anyone can recompute a stream to check what arrived.

/// Period of the pattern (a prime, so the pattern does not line up with buffer sizes).
pub const PERIOD: usize = 65_521;

/// Byte `i` of the pattern's first period.
const fn entry(i: usize) -> u8 {
    let x = (i as u32).wrapping_mul(2_654_435_761).rotate_left(11) ^ (i as u32 >> 3);
    (x ^ (x >> 16) ^ (x >> 8)) as u8
}

/// Two periods back to back, so that every offset has a contiguous run of [`PERIOD`] bytes.
static TABLE: [u8; 2 * PERIOD] = {
    let mut t = [0u8; 2 * PERIOD];
    let mut i = 0;
    while i < PERIOD {
        t[i] = entry(i);
        t[i + PERIOD] = entry(i);
        i += 1;
    }
    t
};

/// Byte `i` of the stream.
pub fn byte(i: u64) -> u8 {
    TABLE[(i % PERIOD as u64) as usize]
}

/// The stream from offset `offset` on: a contiguous run of [`PERIOD`] bytes.
pub fn run_at(offset: u64) -> &'static [u8] {
    let o = (offset % PERIOD as u64) as usize;
    &TABLE[o..o + PERIOD]
}

/// Fill `out` with the stream's bytes from `offset` on.
pub fn fill(offset: u64, out: &mut [u8]) {
    let mut done = 0;
    while done < out.len() {
        let run = run_at(offset + done as u64);
        let n = run.len().min(out.len() - done);
        out[done..done + n].copy_from_slice(&run[..n]);
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_agree_with_bytes_across_the_period() {
        let mut buf = vec![0u8; 3 * PERIOD];
        fill(12_345, &mut buf);
        for (i, b) in buf.iter().enumerate() {
            assert_eq!(*b, byte(12_345 + i as u64));
        }
        assert_eq!(run_at(PERIOD as u64 - 1)[1], byte(0));
        // Not trivially constant.
        assert!(buf[..256].iter().collect::<std::collections::HashSet<_>>().len() > 100);
    }
}
