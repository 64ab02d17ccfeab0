//! The Internet checksum (RFC 1071): a simple reference, a fast wide
//! accumulator, the IPv4 and IPv6 pseudo headers, and incremental updates (RFC 1624).
//!
//! Conventions: a *sum* (`u64`) is an un-complemented ones-complement partial
//! sum whose 16-bit fold is in network byte order; partial sums may be
//! combined with [`combine`]. A *checksum* (`u16`) is the complemented folded
//! sum, i.e. the value written into a header.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// RFC 1071 checksum computed the obvious way, one 16-bit word at a time.
///
/// Returns the complemented value to store in a header. Kept as the oracle
/// that the fast path is tested against.
pub fn reference(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut pairs = data.chunks_exact(2);
    for p in &mut pairs {
        sum += u64::from(u16::from_be_bytes([p[0], p[1]]));
    }
    if let [last] = pairs.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Adds two partial sums with end-around carry (ones-complement addition).
#[inline]
pub fn combine(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    s + u64::from(carry)
}

/// Fast un-complemented ones-complement sum of `data`, in network order (fold it with
/// [`fold`]). Works for any length and alignment; an odd trailing byte is padded with zero,
/// as RFC 1071 requires.
///
/// Buffers of [`WIDE_MIN`] bytes or more take the AVX2 loop on x86-64 CPUs that have it
/// (checked once at run time), else [`ones_sum_wide`]; shorter ones the portable 64-bit loop.
pub fn ones_sum(data: &[u8]) -> u64 {
    if data.len() < WIDE_MIN {
        return ones_sum_u64(data);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { ones_sum_avx2(data) };
    }
    ones_sum_wide(data)
}

/// Shortest buffer for which the vectorised sum pays off.
pub const WIDE_MIN: usize = 256;

/// The portable sum: 8 bytes at a time in native order into four independent u64
/// accumulators with end-around carry, then converted to network order (the
/// ones-complement sum is byte-order independent up to a final swap).
pub fn ones_sum_u64(data: &[u8]) -> u64 {
    let (words, tail) = data.as_chunks::<8>();
    let mut acc = [0u64; 4];
    let mut quads = words.chunks_exact(4);
    for quad in &mut quads {
        for (a, w) in acc.iter_mut().zip(quad) {
            *a = combine(*a, u64::from_ne_bytes(*w));
        }
    }
    for w in quads.remainder() {
        acc[0] = combine(acc[0], u64::from_ne_bytes(*w));
    }
    if !tail.is_empty() {
        let mut last = [0u8; 8];
        last[..tail.len()].copy_from_slice(tail);
        acc[1] = combine(acc[1], u64::from_ne_bytes(last));
    }
    let native = combine(combine(acc[0], acc[1]), combine(acc[2], acc[3]));
    // Swapping all 8 bytes swaps each 16-bit lane (and reorders lanes, which
    // does not matter for the sum), turning a native-order sum into a
    // network-order one.
    u64::from_be(native)
}

/// The sum as 32-bit words added into sixteen u64 accumulators: no carry to handle (an
/// accumulator would need 2^32 words to overflow), so the loop is plain additions that the
/// compiler turns into vector instructions where the target has them.
#[inline(always)]
pub fn ones_sum_wide(data: &[u8]) -> u64 {
    let (words, tail) = data.as_chunks::<4>();
    let mut acc = [0u64; 16];
    let mut blocks = words.chunks_exact(16);
    for b in &mut blocks {
        for (a, w) in acc.iter_mut().zip(b) {
            *a += u64::from(u32::from_ne_bytes(*w));
        }
    }
    let mut sum = 0u64;
    for w in blocks.remainder() {
        sum += u64::from(u32::from_ne_bytes(*w));
    }
    for a in acc {
        sum = combine(sum, a);
    }
    if !tail.is_empty() {
        let mut last = [0u8; 4];
        last[..tail.len()].copy_from_slice(tail);
        sum = combine(sum, u64::from(u32::from_ne_bytes(last)));
    }
    u64::from_be(sum)
}

/// The sum with AVX2: see [`avx2::sum_blocks`].
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn ones_sum_avx2(data: &[u8]) -> u64 {
    let body = data.len() / 64 * 64;
    // SAFETY: AVX2 is available (the caller's contract); no destination.
    let sum = unsafe { avx2::sum_blocks::<false>(std::ptr::null_mut(), &data[..body]) };
    combine(sum, ones_sum_u64(&data[body..]))
}

/// Copies `src` into `dst` (equal lengths) and returns the un-complemented ones-complement
/// sum of the bytes, as [`ones_sum`] would: one pass over the data instead of a copy and a
/// sum (the sender's payload on its way into a frame).
///
/// # Panics
/// If the lengths differ.
pub fn copy_with_sum(dst: &mut [u8], src: &[u8]) -> u64 {
    assert_eq!(dst.len(), src.len(), "copy_with_sum: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if src.len() >= WIDE_MIN && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { copy_with_sum_avx2(dst, src) };
    }
    // Summed from the source: the destination may be a frame another core reads next, where
    // reading back fresh stores would wait for them.
    let sum = ones_sum(src);
    dst.copy_from_slice(src);
    sum
}

/// [`copy_with_sum`] with AVX2: 64-byte blocks copied and summed in one pass
/// ([`avx2::sum_blocks`]), the tail (it starts at a multiple of 64, an even offset, so the
/// two sums add) copied and summed on its own.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_with_sum_avx2(dst: &mut [u8], src: &[u8]) -> u64 {
    let body = src.len() / 64 * 64;
    let (dst_body, dst_tail) = dst.split_at_mut(body);
    // SAFETY: AVX2 is available (the caller's contract); `dst_body` is as long as the source.
    let sum = unsafe { avx2::sum_blocks::<true>(dst_body.as_mut_ptr(), &src[..body]) };
    let tail = &src[body..];
    dst_tail.copy_from_slice(tail);
    combine(sum, ones_sum_u64(tail))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::combine;
    use std::arch::x86_64::*;

    /// Blocks summed between two folds of the 32-bit lanes: each lane gains at most 0xffff
    /// per block, so 2^15 blocks cannot overflow it.
    const BLOCKS_PER_FOLD: usize = 1 << 15;

    /// The ones-complement sum (network order, not folded) of `src`, a whole number of 64-byte
    /// blocks, copying each block to `dst` on the way when `COPY`: every 16-bit lane is added
    /// into 32-bit lanes (the low halves and the high halves of each 32-bit word apart), four
    /// independent accumulators, folded into a u64 every [`BLOCKS_PER_FOLD`] blocks.
    ///
    /// # Safety
    /// The CPU must support AVX2; with `COPY`, `dst` must be valid for `src.len()` bytes of
    /// writes and not overlap `src`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn sum_blocks<const COPY: bool>(dst: *mut u8, src: &[u8]) -> u64 {
        debug_assert_eq!(src.len() % 64, 0);
        let blocks = src.len() / 64;
        let low = _mm256_set1_epi32(0xffff);
        let mut native = 0u64;
        let mut done = 0;
        while done < blocks {
            let end = blocks.min(done + BLOCKS_PER_FOLD);
            let (mut a, mut b, mut c, mut d) =
                (_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256());
            for k in done..end {
                // SAFETY: block k lies inside `src` (k < blocks); with COPY, inside `dst` too.
                unsafe {
                    let p = src.as_ptr().add(k * 64) as *const __m256i;
                    let x = _mm256_loadu_si256(p);
                    let y = _mm256_loadu_si256(p.add(1));
                    if COPY {
                        let q = dst.add(k * 64) as *mut __m256i;
                        _mm256_storeu_si256(q, x);
                        _mm256_storeu_si256(q.add(1), y);
                    }
                    a = _mm256_add_epi32(a, _mm256_and_si256(x, low));
                    b = _mm256_add_epi32(b, _mm256_srli_epi32::<16>(x));
                    c = _mm256_add_epi32(c, _mm256_and_si256(y, low));
                    d = _mm256_add_epi32(d, _mm256_srli_epi32::<16>(y));
                }
            }
            let mut lanes = [0u32; 8];
            for acc in [a, b, c, d] {
                // SAFETY: `lanes` holds exactly 32 bytes.
                unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc) };
                for l in lanes {
                    native += u64::from(l);
                }
            }
            done = end;
        }
        // The lanes held native-order 16-bit words: fold and swap to network order (swapping
        // the bytes of each 16-bit lane of a folded sum).
        combine(0, u64::from(super::fold(native).swap_bytes()))
    }
}

/// The sum of bytes that sit at an odd offset of the data they belong to: `sum` was taken as
/// if they started at an even one, so each 16-bit lane's bytes trade places.
#[inline]
pub fn at_odd_offset(sum: u64) -> u64 {
    u64::from(fold(sum).swap_bytes())
}

/// Folds a partial sum to 16 bits with end-around carry. Not complemented.
#[inline]
pub fn fold(sum: u64) -> u16 {
    let mut s = (sum & 0xffff_ffff) + (sum >> 32);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    s as u16
}

/// Internet checksum of `data` via the fast path: `!fold(ones_sum(data))`.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data))
}

/// Un-complemented partial sum of the IPv4 pseudo header used by UDP and TCP.
#[inline]
pub fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    u64::from(u32::from(src)) + u64::from(u32::from(dst)) + u64::from(protocol) + u64::from(length)
}

/// Un-complemented partial sum of the IPv6 pseudo header (RFC 8200 section 8.1): both
/// addresses, the upper-layer length as 32 bits and the next-header value.
#[inline]
pub fn pseudo_header_sum_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u64 {
    let words = |a: Ipv6Addr| {
        let o = a.octets();
        (0..4).map(|i| u64::from(u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))).sum::<u64>()
    };
    words(src) + words(dst) + u64::from(length) + u64::from(next_header)
}

/// The address family of a transport checksum's pseudo header: IPv4 (RFC 768/793) or IPv6
/// (RFC 8200). Lets UDP, TCP and ICMPv6 take either family's addresses with one method.
pub trait PseudoHeader: Copy {
    /// True for IPv4, where a UDP checksum of 0 means "none"; IPv6 requires one.
    const UDP_CHECKSUM_OPTIONAL: bool;
    /// The un-complemented sum of the pseudo header for `length` bytes of `protocol`.
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64;
}

impl PseudoHeader for Ipv4Addr {
    const UDP_CHECKSUM_OPTIONAL: bool = true;
    #[inline]
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64 {
        pseudo_header_sum(src, dst, protocol, length as u16)
    }
}

impl PseudoHeader for Ipv6Addr {
    const UDP_CHECKSUM_OPTIONAL: bool = false;
    #[inline]
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64 {
        pseudo_header_sum_v6(src, dst, protocol, length)
    }
}

/// Either family, chosen by the addresses (a transport that serves both, as TCP does). A
/// mixed pair sums the IPv4 address as its IPv4-mapped IPv6 form. UDP over IPv4 through this
/// type still needs a checksum: use [`Ipv4Addr`] where a zero checksum must mean "none".
impl PseudoHeader for IpAddr {
    const UDP_CHECKSUM_OPTIONAL: bool = false;
    #[inline]
    fn pseudo_sum(src: Self, dst: Self, protocol: u8, length: u32) -> u64 {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => pseudo_header_sum(s, d, protocol, length as u16),
            (s, d) => pseudo_header_sum_v6(as_v6(s), as_v6(d), protocol, length),
        }
    }
}

fn as_v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// UDP/TCP/ICMPv6 checksum over pseudo header + `segment` (header and payload), for IPv4
/// or IPv6 addresses.
///
/// To fill a header, zero its checksum field first and store the result. To
/// verify a received segment, compute over the segment with the checksum
/// field in place: the result is 0 when it is correct. The IPv4 pseudo-header
/// length is `segment.len()` truncated to 16 bits; IPv6's is 32 bits.
#[inline]
pub fn transport_checksum<A: PseudoHeader>(src: A, dst: A, protocol: u8, segment: &[u8]) -> u16 {
    let pseudo = A::pseudo_sum(src, dst, protocol, segment.len() as u32);
    !fold(combine(pseudo, ones_sum(segment)))
}

/// Incrementally updates `old_checksum` after a 16-bit field changed from
/// `old` to `new` (RFC 1624 eqn. 3: `HC' = ~(~HC + ~m + m')`).
///
/// Equals a full recompute except when the covered data becomes all zero
/// (then the full recompute yields 0xffff and this yields 0; both verify).
#[inline]
pub fn update16(old_checksum: u16, old: u16, new: u16) -> u16 {
    let s = u64::from(!old_checksum) + u64::from(!old) + u64::from(new);
    !fold(s)
}

/// Incrementally updates `old_checksum` after a 32-bit field (e.g. an IPv4
/// address or a TCP sequence number) changed from `old` to `new`.
#[inline]
pub fn update32(old_checksum: u16, old: u32, new: u32) -> u16 {
    let s = u64::from(!old_checksum)
        + u64::from(!(old >> 16) as u16)
        + u64::from(!(old as u16))
        + u64::from((new >> 16) as u16)
        + u64::from(new as u16);
    !fold(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn either_family_sums_as_its_own_family() {
        let (s4, d4) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let (s6, d6): (Ipv6Addr, Ipv6Addr) = ("fd77::1".parse().unwrap(), "fd77::2".parse().unwrap());
        let seg = [1u8, 2, 3, 4, 5, 6, 7];
        assert_eq!(transport_checksum(IpAddr::V4(s4), IpAddr::V4(d4), 6, &seg), transport_checksum(s4, d4, 6, &seg));
        assert_eq!(transport_checksum(IpAddr::V6(s6), IpAddr::V6(d6), 6, &seg), transport_checksum(s6, d6, 6, &seg));
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example: sum of these words is ddf2 (un-complemented).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(ones_sum(&data)), 0xddf2);
        assert_eq!(reference(&data), !0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn empty_and_edges() {
        assert_eq!(reference(&[]), 0xffff);
        assert_eq!(checksum(&[]), 0xffff);
        assert_eq!(checksum(&[0x12]), reference(&[0x12]));
        assert_eq!(checksum(&[0x12]), !0x1200);
        assert_eq!(fold(u64::MAX), 0xffff);
        assert_eq!(fold(0), 0);
        assert_eq!(combine(u64::MAX, 1), 1);
    }

    #[test]
    fn all_ones_every_length_and_offset() {
        let buf = [0xffu8; 300];
        for start in 0..8 {
            for len in 0..(buf.len() - start) {
                let d = &buf[start..start + len];
                assert_eq!(checksum(d), reference(d), "start {start} len {len}");
            }
        }
    }

    #[test]
    fn patterned_every_length_and_offset() {
        let buf: Vec<u8> = (0..400u32).map(|i| (i * 37 + 11) as u8).collect();
        for start in 0..8 {
            for len in 0..(buf.len() - start) {
                let d = &buf[start..start + len];
                assert_eq!(checksum(d), reference(d), "start {start} len {len}");
            }
        }
    }

    #[test]
    fn every_sum_agrees_on_every_length_and_offset_around_the_wide_threshold() {
        let buf: Vec<u8> = (0..9100u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let lens = (0..600).chain([1460, 1461, 1514, 4095, 8960, 8961, 9000]);
        for len in lens {
            for start in 0..8 {
                let d = &buf[start..start + len];
                let want = fold(ones_sum_u64(d));
                assert_eq!(fold(ones_sum_wide(d)), want, "wide, start {start} len {len}");
                assert_eq!(fold(ones_sum(d)), want, "dispatched, start {start} len {len}");
                assert_eq!(!want, reference(d), "reference, start {start} len {len}");
            }
        }
    }

    #[test]
    fn large_all_ones_does_not_overflow() {
        let buf = vec![0xffu8; 1 << 20];
        assert_eq!(checksum(&buf), reference(&buf));
        assert_eq!(checksum(&buf), 0);
    }

    #[test]
    fn buffers_past_the_vector_loops_fold_interval_sum_and_copy_right() {
        // More than 2^15 blocks of 64 bytes, mostly at the largest lane value, odd length.
        let mut buf = vec![0xffu8; (5 << 20) + 37];
        for (i, b) in buf.iter_mut().enumerate().step_by(4099) {
            *b = i as u8;
        }
        assert_eq!(checksum(&buf), reference(&buf));
        let mut out = vec![0u8; buf.len()];
        assert_eq!(!fold(copy_with_sum(&mut out, &buf)), reference(&buf));
        assert!(out == buf);
    }

    #[test]
    fn ipv4_header_golden() {
        // Wikipedia / classic example header, checksum b861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8,
            0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
        assert_eq!(reference(&h), 0xb861);
        h[10] = 0xb8;
        h[11] = 0x61;
        assert_eq!(checksum(&h), 0);
    }

    #[test]
    fn transport_verifies_to_zero() {
        let src = Ipv4Addr::new(10, 0, 0, 1);
        let dst = Ipv4Addr::new(10, 0, 0, 2);
        let mut seg = [0x12u8, 0x34, 0x00, 0x35, 0x00, 0x0b, 0, 0, b'a', b'b', b'c'];
        let c = transport_checksum(src, dst, 17, &seg);
        seg[6..8].copy_from_slice(&c.to_be_bytes());
        assert_eq!(transport_checksum(src, dst, 17, &seg), 0);
        // Reference computation with an explicit pseudo header.
        let mut ph = Vec::new();
        ph.extend_from_slice(&src.octets());
        ph.extend_from_slice(&dst.octets());
        ph.extend_from_slice(&[0, 17, 0, seg.len() as u8]);
        seg[6..8].copy_from_slice(&[0, 0]);
        ph.extend_from_slice(&seg);
        assert_eq!(reference(&ph), c);
    }

    proptest! {
        #[test]
        fn copy_with_sum_copies_and_sums_like_ones_sum(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            let mut out = vec![0u8; data.len()];
            let sum = copy_with_sum(&mut out, &data);
            prop_assert_eq!(&out, &data);
            prop_assert_eq!(!fold(sum), reference(&data));
        }

        #[test]
        fn a_sum_split_at_an_odd_offset_adds_up(data in proptest::collection::vec(any::<u8>(), 1..2000), cut in any::<usize>()) {
            let cut = cut % data.len();
            let (a, b) = data.split_at(cut);
            let b_sum = if cut % 2 == 1 { at_odd_offset(ones_sum(b)) } else { ones_sum(b) };
            prop_assert_eq!(fold(combine(ones_sum(a), b_sum)), fold(ones_sum(&data)));
        }

        #[test]
        fn fast_matches_reference(data in proptest::collection::vec(any::<u8>(), 0..2048), off in 0usize..8) {
            let off = off.min(data.len());
            let d = &data[off..];
            prop_assert_eq!(checksum(d), reference(d));
        }

        #[test]
        fn split_sums_combine(data in proptest::collection::vec(any::<u8>(), 0..512), cut in 0usize..256) {
            // Splitting at an even offset and combining partial sums gives the same result.
            let cut = (cut * 2).min(data.len() & !1);
            let s = combine(ones_sum(&data[..cut]), ones_sum(&data[cut..]));
            prop_assert_eq!(!fold(s), reference(&data));
        }

        #[test]
        fn update16_matches_recompute(
            mut words in proptest::collection::vec(any::<u16>(), 1..64),
            idx in any::<proptest::sample::Index>(),
            new in any::<u16>(),
        ) {
            // Keep one fixed non-zero word so the data never becomes all zero.
            words.push(0x4500);
            let i = idx.index(words.len() - 1);
            let bytes = |w: &[u16]| w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
            let before = reference(&bytes(&words));
            let old = words[i];
            words[i] = new;
            let full = reference(&bytes(&words));
            let fast_full = checksum(&bytes(&words));
            let inc = update16(before, old, new);
            prop_assert_eq!(inc, full);
            prop_assert_eq!(fast_full, full);
        }

        #[test]
        fn update32_matches_recompute(
            mut words in proptest::collection::vec(any::<u32>(), 1..32),
            idx in any::<proptest::sample::Index>(),
            new in any::<u32>(),
        ) {
            words.push(0x4500_0000);
            let i = idx.index(words.len() - 1);
            let bytes = |w: &[u32]| w.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>();
            let before = checksum(&bytes(&words));
            let old = words[i];
            words[i] = new;
            let full = reference(&bytes(&words));
            prop_assert_eq!(update32(before, old, new), full);
        }

        #[test]
        fn update_then_verify(data in proptest::collection::vec(any::<u8>(), 2..64), new in any::<u16>()) {
            // Even in the all-zero corner case the updated checksum verifies.
            let mut d = data.clone();
            if d.len() % 2 == 1 { d.push(0); }
            let c = checksum(&d);
            let old = u16::from_be_bytes([d[0], d[1]]);
            d[0..2].copy_from_slice(&new.to_be_bytes());
            let c2 = update16(c, old, new);
            d.extend_from_slice(&c2.to_be_bytes());
            prop_assert_eq!(fold(ones_sum(&d)) == 0xffff || d.iter().all(|&b| b == 0), true);
        }
    }
}
