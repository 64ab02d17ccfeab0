//! CRC32C (Castagnoli) of a packet, header then payload in one pass, with the CPU's `crc32`
//! instruction kept busy on three streams at once.
//!
//! The instruction has a latency of three cycles and a throughput of one per cycle, so one
//! dependent chain runs at a third of its speed. The payload is cut into three equal blocks of
//! `L` bytes (and a short rest), whose CRCs run interleaved from state 0; the states are then
//! joined by "shifting" a state over `L` zero bytes, which is linear in the state and so a
//! lookup in four 256-entry tables built for that `L`. Packets of one write all have the same
//! payload size but the last, so each thread keeps the tables of the block sizes it met twice
//! in a row (a few KiB each); other sizes, and CPUs without SSE 4.2, use the `crc32c` crate
//! (same result, the unit tests check it).

use std::cell::RefCell;

/// Block sizes whose tables a thread keeps.
const CACHED: usize = 4;

/// Shift tables for one block size: `t[k][b]` is the state `b << 8k` shifted over the block.
type Tables = [[u32; 256]; 4];

#[derive(Default)]
struct Cache {
    /// (block bytes, tables), most recently built last.
    tables: Vec<(usize, Box<Tables>)>,
    /// The block size that missed last (built when it misses again).
    last_miss: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The CRC32C of `head` followed by `tail` (the packet's header bytes and its payload).
pub fn crc32c_two(head: &[u8], tail: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU has SSE 4.2 (checked just above).
            return unsafe { x86::crc_two(head, tail) };
        }
    }
    crc32c::crc32c_append(crc32c::crc32c(head), tail)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Cache, Tables, CACHE, CACHED};
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};

    /// Advance raw state `s` over `b`, serially.
    #[target_feature(enable = "sse4.2")]
    unsafe fn serial(mut s: u64, b: &[u8]) -> u64 {
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            s = _mm_crc32_u64(s, u64::from_le_bytes(w.try_into().unwrap_or_default()));
        }
        for &x in words.remainder() {
            s = u64::from(_mm_crc32_u8(s as u32, x));
        }
        s
    }

    /// The tables that shift a state over `len` zero bytes (`len` a multiple of 8).
    #[target_feature(enable = "sse4.2")]
    unsafe fn build(len: usize) -> Box<Tables> {
        let mut t = Box::new([[0u32; 256]; 4]);
        for (k, row) in t.iter_mut().enumerate() {
            for (b, e) in row.iter_mut().enumerate() {
                let mut s = (b as u64) << (8 * k);
                for _ in 0..len / 8 {
                    s = _mm_crc32_u64(s, 0);
                }
                *e = s as u32;
            }
        }
        t
    }

    #[inline]
    fn shift(t: &Tables, s: u64) -> u64 {
        let s = s as u32;
        u64::from(
            t[0][(s & 0xff) as usize]
                ^ t[1][((s >> 8) & 0xff) as usize]
                ^ t[2][((s >> 16) & 0xff) as usize]
                ^ t[3][(s >> 24) as usize],
        )
    }

    /// Advance state `s` over `b` three streams at a time, if the tables of its block size are
    /// (or now get) cached; None otherwise.
    #[target_feature(enable = "sse4.2")]
    unsafe fn parallel(s: u64, b: &[u8], cache: &mut Cache) -> Option<u64> {
        let len = b.len() / 24 * 8;
        if len < 64 {
            return None;
        }
        let t = match cache.tables.iter().position(|(l, _)| *l == len) {
            Some(i) => &cache.tables[i].1,
            None if cache.last_miss == len => {
                if cache.tables.len() == CACHED {
                    cache.tables.remove(0);
                }
                cache.tables.push((len, build(len)));
                &cache.tables[cache.tables.len() - 1].1
            }
            None => {
                cache.last_miss = len;
                return None;
            }
        };
        let (a, rest) = b.split_at(len);
        let (bb, rest) = rest.split_at(len);
        let (c, rest) = rest.split_at(len);
        let (mut s0, mut s1, mut s2) = (s, 0u64, 0u64);
        for ((x, y), z) in a.chunks_exact(8).zip(bb.chunks_exact(8)).zip(c.chunks_exact(8)) {
            s0 = _mm_crc32_u64(s0, u64::from_le_bytes(x.try_into().unwrap_or_default()));
            s1 = _mm_crc32_u64(s1, u64::from_le_bytes(y.try_into().unwrap_or_default()));
            s2 = _mm_crc32_u64(s2, u64::from_le_bytes(z.try_into().unwrap_or_default()));
        }
        let s = shift(t, shift(t, s0) ^ s1) ^ s2;
        Some(serial(s, rest))
    }

    /// See [`super::crc32c_two`].
    #[target_feature(enable = "sse4.2")]
    pub unsafe fn crc_two(head: &[u8], tail: &[u8]) -> u32 {
        let s = serial(u64::from(u32::MAX), head);
        let s = CACHE
            .try_with(|c| {
                let mut c = c.borrow_mut();
                // SAFETY: this function runs with SSE 4.2 (its caller checked).
                unsafe { parallel(s, tail, &mut c) }
            })
            .ok()
            .flatten()
            .unwrap_or_else(|| serial(s, tail));
        !(s as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn equals_the_crc32c_crate_for_every_split_and_length() {
        assert_eq!(crc32c_two(b"1234", b"56789"), 0xe306_9283);
        let all = data(9100, 7);
        for len in (0..200).chain([767, 768, 1423, 1424, 1425, 1472, 4096, 8924, 9000]) {
            for head in [0usize, 1, 7, 44, 45] {
                let d = &all[..(head + len).min(all.len())];
                let (h, t) = d.split_at(head.min(d.len()));
                let want = crc32c::crc32c(d);
                // Three times: the tables are built on the second miss and used on the third.
                for _ in 0..3 {
                    assert_eq!(crc32c_two(h, t), want, "head {head}, len {len}");
                }
            }
        }
    }

    #[test]
    fn a_flipped_bit_changes_the_crc() {
        let mut d = data(1468, 3);
        let good = crc32c_two(&d[..44], &d[44..]);
        let _ = crc32c_two(&d[..44], &d[44..]);
        for i in [0, 43, 44, 500, 1000, 1467] {
            d[i] ^= 0x10;
            assert_ne!(crc32c_two(&d[..44], &d[44..]), good, "bit in byte {i}");
            d[i] ^= 0x10;
        }
    }
}
