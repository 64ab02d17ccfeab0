//! Our multi-pattern literal matcher for the prefilter: ASCII case-insensitive, reporting the
//! set of patterns present in a buffer (each pattern once per scan).
//!
//! Like Pigasus's hashed string matcher, it looks at every position through small filter
//! tables and only confirms where a filter fires:
//! - the buffer is first ASCII-lowercased into scratch memory (vectorized copy), so patterns
//!   (stored lowercased) are confirmed with plain byte comparison;
//! - 1-byte patterns: a byte-presence table filled in the same pass;
//! - 2-byte patterns: an exact 64 Ki-bit bitmap; 3-byte patterns: a hashed bitmap; all three
//!   filters are read at every position without branching, and only a set bit leads on;
//! - longer patterns: each is anchored at one of its 4-byte windows, chosen to be rare among
//!   all patterns (so `User-Agent: xyz` is found through `xyz`, not through `User`, which
//!   half the rules and all web traffic contain); a 64 Ki-bit bitmap of hashed anchors, then an
//!   open-addressing table from the anchor to the patterns using it, then the comparison.
//!
//! A pattern found once is not confirmed again in the same scan.

/// Bits in the hashed 4-byte anchor filter (128 KiB).
const BITS4_LOG2: u32 = 20;
/// Bits in the hashed 3-byte filter.
const BITS3_LOG2: u32 = 13;

#[inline(always)]
fn hash4(k: u32) -> u32 {
    k.wrapping_mul(0x9E37_79B1)
}

#[inline(always)]
fn hash3(k: u32) -> u32 {
    (k & 0x00FF_FFFF).wrapping_mul(0x85EB_CA77)
}

/// The compiled matcher.
#[derive(Debug, Clone)]
pub struct Mpm {
    /// Lowercased patterns by id.
    pats: Vec<Vec<u8>>,
    /// 1-byte patterns: (byte, id).
    one: Vec<(u8, u32)>,
    /// Exact bitmap of 2-byte patterns (little-endian u16).
    bits2: Box<[u64; 1024]>,
    /// 2-byte patterns: sorted (key, id).
    two: Vec<(u16, u32)>,
    /// Bitmap of hash3(key) >> (32 - BITS3_LOG2) for 3-byte patterns.
    bits3: Box<[u64; 1 << (BITS3_LOG2 - 6)]>,
    /// 3-byte patterns: sorted (key, id), key = 3 bytes little-endian.
    three: Vec<(u32, u32)>,
    /// Bitmap of hash4(anchor) >> (32 - BITS4_LOG2) for patterns of 4+ bytes.
    bits4: Box<[u64; 1 << (BITS4_LOG2 - 6)]>,
    /// Open-addressing table: (4-byte anchor, start, len) into `ids4`; len 0 = empty.
    slots4: Vec<(u32, u32, u32)>,
    /// (pattern id, anchor offset in the pattern).
    ids4: Vec<(u32, u32)>,
    mask4: u32,
}

/// Per-thread scan memory.
#[derive(Debug, Clone)]
pub struct MpmScratch {
    fold: Vec<u8>,
    present: Box<[u32; 256]>,
    seen: Vec<u32>,
    epoch: u32,
}

impl Default for MpmScratch {
    fn default() -> Self {
        MpmScratch { fold: Vec::new(), present: Box::new([0; 256]), seen: Vec::new(), epoch: 0 }
    }
}

/// Zero bytes after the folded haystack.
const PAD: usize = 3;

impl MpmScratch {
    /// Swaps the ASCII-lowercased copy of the last scanned haystack (padding removed) into
    /// `out`, whose old buffer the scratch keeps for its next scan: the verification's filters
    /// reuse the fold at no cost. `out` is empty if the last scan stopped early (an empty
    /// haystack or no patterns).
    pub fn swap_folded(&mut self, out: &mut Vec<u8>) {
        std::mem::swap(&mut self.fold, out);
        let n = out.len().saturating_sub(PAD);
        out.truncate(n);
    }
}

fn le(b: &[u8]) -> u32 {
    let mut k = 0u32;
    for (i, &x) in b.iter().take(4).enumerate() {
        k |= u32::from(x) << (8 * i);
    }
    k
}

fn set_bit(bits: &mut [u64], h: usize) {
    bits[h / 64] |= 1 << (h % 64);
}

impl Mpm {
    /// Compiles patterns (lowercased here); ids are list indices. Empty patterns never match.
    pub fn new(patterns: &[Vec<u8>]) -> Mpm {
        let pats: Vec<Vec<u8>> = patterns.iter().map(|p| p.to_ascii_lowercase()).collect();
        let mut one = Vec::new();
        let mut bits2 = Box::new([0u64; 1024]);
        let mut two = Vec::new();
        let mut bits3 = Box::new([0u64; 1 << (BITS3_LOG2 - 6)]);
        let mut three = Vec::new();
        let mut bits4 = Box::new([0u64; 1 << (BITS4_LOG2 - 6)]);
        let mut groups: std::collections::BTreeMap<u32, Vec<(u32, u32)>> = std::collections::BTreeMap::new();
        // How many patterns contain each 4-gram: common 4-grams make poor anchors.
        let mut freq: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        for p in pats.iter().filter(|p| p.len() >= 4) {
            let mut ws: Vec<u32> = p.windows(4).map(le).collect();
            ws.sort_unstable();
            ws.dedup();
            for w in ws {
                *freq.entry(w).or_insert(0) += 1;
            }
        }
        // Short patterns first, so that long ones (with more choice) avoid their buckets.
        let mut order: Vec<usize> = (0..pats.len()).collect();
        order.sort_by_key(|&i| pats[i].len());
        for id in order {
            let p = &pats[id];
            let id = id as u32;
            match p.len() {
                0 => {}
                1 => one.push((p[0], id)),
                2 => {
                    let k = le(p);
                    set_bit(&mut bits2[..], k as usize);
                    two.push((k as u16, id));
                }
                3 => {
                    let k = le(p);
                    set_bit(&mut bits3[..], (hash3(k) >> (32 - BITS3_LOG2)) as usize);
                    three.push((k, id));
                }
                _ => {
                    let off = anchor(p, &freq, &groups);
                    let k = le(&p[off..off + 4]);
                    set_bit(&mut bits4[..], (hash4(k) >> (32 - BITS4_LOG2)) as usize);
                    groups.entry(k).or_default().push((id, off as u32));
                }
            }
        }
        one.sort_unstable();
        two.sort_unstable();
        three.sort_unstable();
        let cap = (groups.len() * 2).next_power_of_two().max(16);
        let mask4 = (cap - 1) as u32;
        let mut slots4 = vec![(0u32, 0u32, 0u32); cap];
        let mut ids4 = Vec::new();
        for (k, ids) in groups {
            let mut s = (hash4(k) & mask4) as usize;
            while slots4[s].2 != 0 {
                s = (s + 1) & mask4 as usize;
            }
            slots4[s] = (k, ids4.len() as u32, ids.len() as u32);
            ids4.extend_from_slice(&ids);
        }
        Mpm { pats, one, bits2, two, bits3, three, bits4, slots4, ids4, mask4 }
    }

    /// Number of patterns.
    pub fn len(&self) -> usize {
        self.pats.len()
    }

    /// Whether there is no pattern.
    pub fn is_empty(&self) -> bool {
        self.pats.is_empty()
    }

    /// Calls `hit(id)` once for every pattern present in `hay` (ASCII case-insensitive).
    pub fn scan(&self, hay: &[u8], s: &mut MpmScratch, mut hit: impl FnMut(u32)) {
        let n = hay.len();
        s.fold.clear();
        if n == 0 || self.pats.is_empty() {
            return;
        }
        if s.seen.len() != self.pats.len() {
            s.seen = vec![0; self.pats.len()];
        }
        s.epoch = s.epoch.wrapping_add(1);
        if s.epoch == 0 {
            s.seen.iter_mut().for_each(|x| *x = 0);
            s.present.iter_mut().for_each(|x| *x = 0);
            s.epoch = 1;
        }
        let epoch = s.epoch;
        s.fold.extend(hay.iter().map(u8::to_ascii_lowercase));
        // Padding so that every position has a 4-byte window; windows that run into the
        // padding are bounds-checked before any hit is reported.
        s.fold.extend_from_slice(&[0; PAD]);
        let fold = &s.fold[..];
        let seen = &mut s.seen[..];
        let present = &mut *s.present;
        let (b2, b3, b4) = (&*self.bits2, &*self.bits3, &*self.bits4);
        for (i, win) in fold.windows(4).enumerate() {
            let w = u32::from_le_bytes([win[0], win[1], win[2], win[3]]);
            present[(w as u8) as usize] = epoch;
            let k2 = (w as u16) as usize;
            let h3 = (hash3(w) >> (32 - BITS3_LOG2)) as usize;
            let h4 = (hash4(w) >> (32 - BITS4_LOG2)) as usize;
            let f2 = b2[k2 >> 6] >> (k2 & 63);
            let f3 = b3[h3 >> 6] >> (h3 & 63);
            let f4 = b4[h4 >> 6] >> (h4 & 63);
            if (f2 | f3 | f4) & 1 != 0 {
                self.confirm(fold, n, i, w, (f2 & 1) | (f3 & 1) << 1 | (f4 & 1) << 2, seen, epoch, &mut hit);
            }
        }
        for &(b, id) in &self.one {
            if present[b as usize] == epoch && seen[id as usize] != epoch {
                seen[id as usize] = epoch;
                hit(id);
            }
        }
    }

    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn confirm(
        &self,
        fold: &[u8],
        n: usize,
        i: usize,
        w: u32,
        f: u64,
        seen: &mut [u32],
        epoch: u32,
        hit: &mut impl FnMut(u32),
    ) {
        if f & 1 != 0 && i + 2 <= n {
            let k = w as u16;
            let mut j = self.two.partition_point(|&(kk, _)| kk < k);
            while let Some(&(kk, id)) = self.two.get(j) {
                if kk != k {
                    break;
                }
                if seen[id as usize] != epoch {
                    seen[id as usize] = epoch;
                    hit(id);
                }
                j += 1;
            }
        }
        if f & 2 != 0 && i + 3 <= n {
            let k = w & 0x00FF_FFFF;
            let mut j = self.three.partition_point(|&(kk, _)| kk < k);
            while let Some(&(kk, id)) = self.three.get(j) {
                if kk != k {
                    break;
                }
                if seen[id as usize] != epoch {
                    seen[id as usize] = epoch;
                    hit(id);
                }
                j += 1;
            }
        }
        if f & 4 != 0 && i + 4 <= n {
            let mut s = (hash4(w) & self.mask4) as usize;
            loop {
                let (k, start, len) = self.slots4[s];
                if len == 0 {
                    return;
                }
                if k == w {
                    for &(id, off) in &self.ids4[start as usize..(start + len) as usize] {
                        if seen[id as usize] == epoch {
                            continue;
                        }
                        let p = &self.pats[id as usize];
                        let off = off as usize;
                        if i >= off && i - off + p.len() <= n && fold[i - off..i - off + p.len()] == p[..] {
                            seen[id as usize] = epoch;
                            hit(id);
                        }
                    }
                    return;
                }
                s = (s + 1) & self.mask4 as usize;
            }
        }
    }
}

/// The offset of the 4-byte window of `p` to anchor it on: the one fewest patterns contain,
/// then the one whose anchor bucket is smallest so far, then a byte-diversity tie-break.
fn anchor(
    p: &[u8],
    freq: &std::collections::HashMap<u32, u32>,
    groups: &std::collections::BTreeMap<u32, Vec<(u32, u32)>>,
) -> usize {
    let mut best = (u64::MAX, 0usize);
    for off in 0..=p.len() - 4 {
        let w = &p[off..off + 4];
        let k = le(w);
        let f = u64::from(freq.get(&k).copied().unwrap_or(0));
        let b = groups.get(&k).map_or(0, |g| g.len()) as u64;
        // Windows of one repeated byte (padding, "AAAA") and of spaces/zeros are common in traffic.
        let mut uniq = w.to_vec();
        uniq.sort_unstable();
        uniq.dedup();
        let dull = w.iter().filter(|&&c| c == 0 || c == b' ' || c == 0xff).count() as u64;
        let score = f * 64 + b * 16 + (4 - uniq.len() as u64) * 4 + dull * 8;
        if score < best.0 {
            best = (score, off);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(pats: &[Vec<u8>], hay: &[u8]) -> Vec<u32> {
        let h = hay.to_ascii_lowercase();
        let mut v: Vec<u32> = pats
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty() && h.windows(p.len()).any(|w| w == p.to_ascii_lowercase().as_slice()))
            .map(|(i, _)| i as u32)
            .collect();
        v.sort();
        v
    }

    fn run(m: &Mpm, hay: &[u8]) -> Vec<u32> {
        let mut s = MpmScratch::default();
        let mut v = Vec::new();
        m.scan(hay, &mut s, |id| v.push(id));
        v.sort();
        v
    }

    #[test]
    fn finds_each_length() {
        let pats: Vec<Vec<u8>> = vec![
            b"m".to_vec(),
            b"ab".to_vec(),
            b"abc".to_vec(),
            b"abcd".to_vec(),
            b"AbCdEfG".to_vec(),
            b"\r\n".to_vec(),
        ];
        let m = Mpm::new(&pats);
        assert_eq!(run(&m, b"xxABCDEFGxx"), vec![1, 2, 3, 4]);
        assert_eq!(run(&m, b"M\r\n"), vec![0, 5]);
        assert_eq!(run(&m, b"ab"), vec![1]);
        assert_eq!(run(&m, b""), Vec::<u32>::new());
    }

    proptest! {
        #[test]
        fn matches_naive(pats in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'B'), Just(b'c'), Just(0u8), Just(b'\n')], 1..7), 1..30),
                         hay in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'C'), Just(0u8), Just(b'\n'), any::<u8>()], 0..200)) {
            let m = Mpm::new(&pats);
            prop_assert_eq!(run(&m, &hay), naive(&pats, &hay));
        }
    }
}
