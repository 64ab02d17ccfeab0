//! SYN cookies (RFC 4987 section 3.6): when a listener's half-open queue is full, the SYN-ACK
//! carries everything the connection needs in its sequence number and timestamp, and no state
//! is kept until the peer's ACK returns it.
//!
//! Our own layout (the idea is Linux's, the encoding is ours):
//!
//! | ISS bits | meaning |
//! | --- | --- |
//! | 31..27 | time slot: seconds / 64, modulo 32 |
//! | 26..3 | 24 bits of SipHash-2-4 (secret key) over our address, the 4-tuple, the peer's ISN, the full time slot and the MSS index |
//! | 2..0 | index of the peer's MSS in [`MSS_TABLE`] (rounded down) |
//!
//! A cookie is valid for two time slots (64 to 128 s). When the peer's SYN had timestamps,
//! our TSval's low 6 bits carry its options, returned in the ACK's TSecr: bits 0..3 the
//! peer's window-scale shift (15: none), bit 4 SACK permitted. Without timestamps window
//! scaling and SACK are off for the connection, as with Linux.

use super::isn::{siphash24, tuple_bytes};
use super::lookup::FourTuple;
use link::Instant;
use wire::TcpOptions;

/// Peer MSS values a cookie can carry.
pub const MSS_TABLE: [u16; 8] = [536, 1200, 1360, 1440, 1452, 1460, 4312, 8960];

/// Length of a time slot in seconds.
const SLOT_SECS: u64 = 64;
/// Low TSval bits that carry options.
const TS_OPT_BITS: u32 = 6;
const TS_OPT_MASK: u32 = (1 << TS_OPT_BITS) - 1;
const NO_WSCALE: u32 = 0xf;
const SACK_BIT: u32 = 0x10;

/// What a valid cookie gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieState {
    /// The peer's MSS (rounded down to a table value).
    pub mss: u16,
    /// The peer's window-scale shift, if it offered the option (only known with timestamps).
    pub window_scale: Option<u8>,
    /// The peer offered SACK (only known with timestamps).
    pub sack_permitted: bool,
}

/// Makes and checks cookies with a secret key.
#[derive(Debug, Clone)]
pub struct CookieJar {
    key: [u64; 2],
}

fn slot(now: Instant) -> u64 {
    now.as_nanos() / 1_000_000_000 / SLOT_SECS
}

impl CookieJar {
    /// A jar with secret `key`.
    pub fn new(key: [u64; 2]) -> Self {
        CookieJar { key: [key[0] ^ 0x5c0f_fee5, key[1].rotate_left(17)] }
    }

    fn mac(&self, t: &FourTuple, peer_isn: u32, slot: u64, mss_idx: u32) -> u32 {
        let mut tb = [0u8; 36];
        let n = tuple_bytes(t, &mut tb);
        let mut d = [0u8; 49];
        d[..n].copy_from_slice(&tb[..n]);
        d[n..n + 4].copy_from_slice(&peer_isn.to_be_bytes());
        d[n + 4..n + 12].copy_from_slice(&slot.to_be_bytes());
        d[n + 12] = mss_idx as u8;
        (siphash24(self.key, &d[..n + 13]) as u32) & 0x00ff_ffff
    }

    /// Our ISS for a SYN from the tuple's peer with initial sequence `peer_isn` and MSS option
    /// `peer_mss`.
    pub fn make(&self, t: &FourTuple, peer_isn: u32, peer_mss: u16, now: Instant) -> u32 {
        let idx = MSS_TABLE.iter().rposition(|&m| m <= peer_mss).unwrap_or(0) as u32;
        let s = slot(now);
        ((s as u32 & 0x1f) << 27) | (self.mac(t, peer_isn, s, idx) << 3) | idx
    }

    /// Check the cookie an ACK returns (`ack - 1`) for the SYN with `peer_isn` (`seq - 1`);
    /// `tsecr` is the ACK's echoed timestamp, if any.
    pub fn check(
        &self,
        t: &FourTuple,
        peer_isn: u32,
        cookie: u32,
        tsecr: Option<u32>,
        now: Instant,
    ) -> Option<CookieState> {
        let idx = cookie & 7;
        let now_slot = slot(now);
        let valid = (0..2)
            .filter_map(|age| now_slot.checked_sub(age))
            .any(|s| (s as u32 & 0x1f) == cookie >> 27 && self.mac(t, peer_isn, s, idx) == (cookie >> 3) & 0x00ff_ffff);
        if !valid {
            return None;
        }
        let (window_scale, sack_permitted) = match tsecr {
            Some(ecr) => {
                let ws = ecr & 0xf;
                (if ws == NO_WSCALE || ws > 14 { None } else { Some(ws as u8) }, ecr & SACK_BIT != 0)
            }
            None => (None, false),
        };
        Some(CookieState { mss: MSS_TABLE[idx as usize], window_scale, sack_permitted })
    }
}

/// Our TSval for a cookie SYN-ACK at clock value `clock`: the peer's window scale and SACK in
/// the low bits, never ahead of the clock (so our later timestamps still increase).
pub fn cookie_tsval(clock: u32, syn: &TcpOptions) -> u32 {
    let mut opts = syn.window_scale.map_or(NO_WSCALE, |w| u32::from(w.min(14)));
    if syn.sack_permitted {
        opts |= SACK_BIT;
    }
    let ts = (clock & !TS_OPT_MASK) | opts;
    if ts > clock {
        ts.wrapping_sub(1 << TS_OPT_BITS)
    } else {
        ts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn tuple(port: u16) -> FourTuple {
        FourTuple::new(Ipv4Addr::new(10, 0, 0, 2).into(), 80, (Ipv4Addr::new(10, 0, 0, 1), port).into())
    }

    #[test]
    fn a_cookie_verifies_for_its_tuple_and_isn_within_two_slots() {
        let jar = CookieJar::new([1, 2]);
        let t0 = Instant::ZERO + Duration::from_secs(1000);
        let c = jar.make(&tuple(5000), 77, 1460, t0);
        let ok = jar.check(&tuple(5000), 77, c, None, t0 + Duration::from_secs(60)).unwrap();
        assert_eq!(ok, CookieState { mss: 1460, window_scale: None, sack_permitted: false });
        assert!(jar.check(&tuple(5001), 77, c, None, t0).is_none(), "another port");
        assert!(jar.check(&tuple(5000), 78, c, None, t0).is_none(), "another ISN");
        assert!(jar.check(&tuple(5000), 77, c ^ 1, None, t0).is_none(), "tampered MSS index");
        assert!(jar.check(&tuple(5000), 77, c, None, t0 + Duration::from_secs(200)).is_none(), "too old");
        assert!(CookieJar::new([1, 3]).check(&tuple(5000), 77, c, None, t0).is_none(), "another key");
    }

    #[test]
    fn mss_rounds_down_and_options_ride_in_the_timestamp() {
        let jar = CookieJar::new([9, 9]);
        let c = jar.make(&tuple(1), 5, 1400, Instant::ZERO);
        assert_eq!(jar.check(&tuple(1), 5, c, None, Instant::ZERO).unwrap().mss, 1360);
        let c = jar.make(&tuple(1), 5, 100, Instant::ZERO);
        assert_eq!(jar.check(&tuple(1), 5, c, None, Instant::ZERO).unwrap().mss, 536);
        let syn = TcpOptions { window_scale: Some(7), sack_permitted: true, ..Default::default() };
        let ts = cookie_tsval(1_000_003, &syn);
        assert!(ts <= 1_000_003);
        let st = jar.check(&tuple(1), 5, c, Some(ts), Instant::ZERO).unwrap();
        assert_eq!((st.window_scale, st.sack_permitted), (Some(7), true));
        let ts = cookie_tsval(1_000_003, &TcpOptions::default());
        let st = jar.check(&tuple(1), 5, c, Some(ts), Instant::ZERO).unwrap();
        assert_eq!((st.window_scale, st.sack_permitted), (None, false));
    }
}
