//! TCP options: a borrowing iterator over raw options, and a fixed-size
//! summary ([`TcpOptions`]) that parses from and emits to the wire.

use crate::error::WireError;

/// TCP option kind numbers.
pub mod option_kind {
    /// End of option list.
    pub const EOL: u8 = 0;
    /// No-operation (padding).
    pub const NOP: u8 = 1;
    /// Maximum segment size.
    pub const MSS: u8 = 2;
    /// Window scale.
    pub const WINDOW_SCALE: u8 = 3;
    /// SACK permitted.
    pub const SACK_PERMITTED: u8 = 4;
    /// SACK blocks.
    pub const SACK: u8 = 5;
    /// Timestamps.
    pub const TIMESTAMPS: u8 = 8;
}

/// Largest window-scale shift allowed by RFC 7323.
pub const MAX_WINDOW_SCALE: u8 = 14;
/// Room for options in a TCP header (60 - 20 bytes).
pub const MAX_OPTIONS_LEN: usize = 40;

/// One TCP option as found on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// End of option list (kind 0); the iterator stops after it.
    EndOfList,
    /// No-operation padding (kind 1).
    NoOp,
    /// Maximum segment size (kind 2).
    Mss(u16),
    /// Window scale shift count as sent (kind 3), not clamped.
    WindowScale(u8),
    /// SACK permitted (kind 4).
    SackPermitted,
    /// Up to four SACK blocks `(left, right)` (kind 5), in wire order.
    Sack([Option<(u32, u32)>; 4]),
    /// Timestamps (kind 8).
    Timestamps {
        /// Sender's timestamp value.
        tsval: u32,
        /// Echoed timestamp.
        tsecr: u32,
    },
    /// An option this crate does not interpret.
    Unknown {
        /// Option kind.
        kind: u8,
        /// Option body (without kind and length bytes).
        data: &'a [u8],
    },
}

/// Iterator over the options area of a TCP header.
///
/// Yields `Err(BadOption)` once and then stops if an option's length byte is
/// missing, below 2, runs past the area, or is wrong for a known kind.
#[derive(Debug, Clone)]
pub struct TcpOptionsIter<'a> {
    data: &'a [u8],
    done: bool,
}

impl<'a> TcpOptionsIter<'a> {
    /// Iterates over `data`, the bytes between the fixed header and the payload.
    pub fn new(data: &'a [u8]) -> Self {
        TcpOptionsIter { data, done: false }
    }

    /// Stops the iteration with an error.
    fn fail(&mut self) -> Option<Result<TcpOption<'a>, WireError>> {
        self.done = true;
        Some(Err(WireError::BadOption))
    }
}

/// Decodes a SACK option body of 1 to 4 blocks.
fn sack_blocks(body: &[u8]) -> Option<[Option<(u32, u32)>; 4]> {
    let (blocks, rest) = body.as_chunks::<8>();
    if blocks.is_empty() || blocks.len() > 4 || !rest.is_empty() {
        return None;
    }
    let mut out = [None; 4];
    for (slot, b) in out.iter_mut().zip(blocks) {
        let left = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let right = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        *slot = Some((left, right));
    }
    Some(out)
}

impl<'a> Iterator for TcpOptionsIter<'a> {
    type Item = Result<TcpOption<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let data = self.data;
        let Some((&kind, rest)) = data.split_first() else {
            self.done = true;
            return None;
        };
        match kind {
            option_kind::EOL => {
                self.done = true;
                return Some(Ok(TcpOption::EndOfList));
            }
            option_kind::NOP => {
                self.data = rest;
                return Some(Ok(TcpOption::NoOp));
            }
            _ => {}
        }
        let Some(&len) = rest.first() else {
            return self.fail();
        };
        let len = usize::from(len);
        let (Some(body), Some(after)) = (data.get(2..len), data.get(len..)) else {
            return self.fail();
        };
        self.data = after;
        let opt = match (kind, body) {
            (option_kind::MSS, &[a, b]) => TcpOption::Mss(u16::from_be_bytes([a, b])),
            (option_kind::WINDOW_SCALE, &[s]) => TcpOption::WindowScale(s),
            (option_kind::SACK_PERMITTED, &[]) => TcpOption::SackPermitted,
            (option_kind::TIMESTAMPS, &[a, b, c, d, e, f, g, h]) => TcpOption::Timestamps {
                tsval: u32::from_be_bytes([a, b, c, d]),
                tsecr: u32::from_be_bytes([e, f, g, h]),
            },
            (option_kind::SACK, body) => match sack_blocks(body) {
                Some(blocks) => TcpOption::Sack(blocks),
                None => return self.fail(),
            },
            (
                option_kind::MSS | option_kind::WINDOW_SCALE | option_kind::SACK_PERMITTED | option_kind::TIMESTAMPS,
                _,
            ) => return self.fail(),
            (kind, data) => TcpOption::Unknown { kind, data },
        };
        Some(Ok(opt))
    }
}

/// The options this stack understands, as a fixed-size value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpOptions {
    /// Maximum segment size.
    pub mss: Option<u16>,
    /// Window scale shift (at most 14).
    pub window_scale: Option<u8>,
    /// SACK permitted.
    pub sack_permitted: bool,
    /// Timestamps `(tsval, tsecr)`.
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks `(left, right)`; `Some` entries are emitted in order.
    pub sack_blocks: [Option<(u32, u32)>; 4],
}

impl TcpOptions {
    /// Collects options from an iterator (e.g. [`TcpOptionsIter`]).
    ///
    /// Unknown options are skipped, a window scale above 14 is clamped to 14
    /// (RFC 7323), a later duplicate overrides an earlier one, and the first
    /// error is returned.
    pub fn parse<'a, I>(iter: I) -> Result<Self, WireError>
    where
        I: IntoIterator<Item = Result<TcpOption<'a>, WireError>>,
    {
        let mut o = TcpOptions::default();
        for opt in iter {
            match opt? {
                TcpOption::EndOfList => break,
                TcpOption::NoOp | TcpOption::Unknown { .. } => {}
                TcpOption::Mss(m) => o.mss = Some(m),
                TcpOption::WindowScale(s) => o.window_scale = Some(s.min(MAX_WINDOW_SCALE)),
                TcpOption::SackPermitted => o.sack_permitted = true,
                TcpOption::Sack(blocks) => o.sack_blocks = blocks,
                TcpOption::Timestamps { tsval, tsecr } => o.timestamps = Some((tsval, tsecr)),
            }
        }
        Ok(o)
    }

    /// Decodes the options area `data` (the bytes between the fixed header and the payload),
    /// as [`Self::parse`] over a [`TcpOptionsIter`] does. The layout nearly every segment of
    /// an established connection carries — none, or NOP NOP timestamps (RFC 7323 Appendix
    /// A) — is read directly.
    pub fn from_bytes(data: &[u8]) -> Result<Self, WireError> {
        match data {
            [] => Ok(TcpOptions::default()),
            [1, 1, 8, 10, v0, v1, v2, v3, e0, e1, e2, e3] => Ok(TcpOptions {
                timestamps: Some((u32::from_be_bytes([*v0, *v1, *v2, *v3]), u32::from_be_bytes([*e0, *e1, *e2, *e3]))),
                ..TcpOptions::default()
            }),
            _ => TcpOptions::parse(TcpOptionsIter::new(data)),
        }
    }

    /// Bytes used by everything but SACK blocks.
    fn base_len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.timestamps.is_some() {
            n += 12;
        } else if self.sack_permitted {
            n += 4;
        }
        if self.window_scale.is_some() {
            n += 4;
        }
        n
    }

    /// Number of SACK blocks that will be emitted: the `Some` entries, as many as fit in 40 bytes.
    pub fn emitted_sack_blocks(&self) -> usize {
        let room = (MAX_OPTIONS_LEN - self.base_len()).saturating_sub(4) / 8;
        self.sack_blocks.iter().flatten().count().min(room)
    }

    /// Length of the options [`Self::emit`] writes, a multiple of 4 and at most 40.
    pub fn emitted_len(&self) -> usize {
        if self.sack_blocks == [None; 4] {
            return self.base_len();
        }
        let blocks = self.emitted_sack_blocks();
        self.base_len() + if blocks > 0 { 4 + 8 * blocks } else { 0 }
    }

    /// Writes the options at the start of `buf`, NOP-padded; returns [`Self::emitted_len`].
    ///
    /// Layout follows Linux: MSS; SACK-permitted + timestamps (or NOP NOP
    /// before whichever is alone); NOP + window scale; NOP NOP + SACK blocks.
    /// SACK blocks that do not fit in 40 bytes are left out (like Linux with
    /// timestamps: at most 3).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if let TcpOptions {
            mss: None,
            window_scale: None,
            sack_permitted: false,
            timestamps,
            sack_blocks: [None, None, None, None],
        } = *self
        {
            // What nearly every segment of an established connection carries, written whole.
            return match timestamps {
                None => Ok(0),
                Some((tsval, tsecr)) => {
                    let out = buf.get_mut(..12).ok_or(WireError::Truncated)?;
                    out[..4].copy_from_slice(&[option_kind::NOP, option_kind::NOP, option_kind::TIMESTAMPS, 10]);
                    out[4..8].copy_from_slice(&tsval.to_be_bytes());
                    out[8..].copy_from_slice(&tsecr.to_be_bytes());
                    Ok(12)
                }
            };
        }
        let len = self.emitted_len();
        let out = buf.get_mut(..len).ok_or(WireError::Truncated)?;
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        use option_kind::*;
        if let Some(mss) = self.mss {
            let m = mss.to_be_bytes();
            put(&[MSS, 4, m[0], m[1]]);
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((tsval, tsecr))) => {
                put(&if sp { [SACK_PERMITTED, 2] } else { [NOP, NOP] });
                put(&[TIMESTAMPS, 10]);
                put(&tsval.to_be_bytes());
                put(&tsecr.to_be_bytes());
            }
            (true, None) => put(&[NOP, NOP, SACK_PERMITTED, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.window_scale {
            put(&[NOP, WINDOW_SCALE, 3, ws]);
        }
        let blocks = self.emitted_sack_blocks();
        if blocks > 0 {
            put(&[NOP, NOP, SACK, (2 + 8 * blocks) as u8]);
            for (left, right) in self.sack_blocks.iter().flatten().take(blocks) {
                put(&left.to_be_bytes());
                put(&right.to_be_bytes());
            }
        }
        debug_assert_eq!(at, len);
        Ok(len)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Options of a Linux SYN: mss 1460, sackOK, TS val 2845234021 ecr 0, nop, wscale 7.
    const SYN_OPTS: [u8; 20] = [
        0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0xa9, 0x96, 0xd3, 0x65, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03,
        0x03, 0x07,
    ];

    fn collect(data: &[u8]) -> Vec<Result<TcpOption<'_>, WireError>> {
        TcpOptionsIter::new(data).collect()
    }

    #[test]
    fn golden_syn_options() {
        let opts = collect(&SYN_OPTS);
        assert_eq!(
            opts,
            vec![
                Ok(TcpOption::Mss(1460)),
                Ok(TcpOption::SackPermitted),
                Ok(TcpOption::Timestamps { tsval: 2845234021, tsecr: 0 }),
                Ok(TcpOption::NoOp),
                Ok(TcpOption::WindowScale(7)),
            ]
        );
        let o = TcpOptions::parse(TcpOptionsIter::new(&SYN_OPTS)).unwrap();
        assert_eq!(
            o,
            TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((2845234021, 0)),
                sack_blocks: [None; 4],
            }
        );
        assert_eq!(o.emitted_len(), 20);
        let mut out = [0u8; 20];
        assert_eq!(o.emit(&mut out), Ok(20));
        assert_eq!(out, SYN_OPTS);
    }

    #[test]
    fn linux_layouts_without_timestamps() {
        // mss 1460,nop,nop,sackOK,nop,wscale 7
        let o = TcpOptions { mss: Some(1460), window_scale: Some(7), sack_permitted: true, ..Default::default() };
        let mut out = [0u8; 12];
        assert_eq!(o.emit(&mut out), Ok(12));
        assert_eq!(out, [2, 4, 5, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7]);
        // nop,nop,TS val 1 ecr 2
        let o = TcpOptions { timestamps: Some((1, 2)), ..Default::default() };
        let mut out = [0u8; 12];
        assert_eq!(o.emit(&mut out), Ok(12));
        assert_eq!(out, [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(TcpOptions::default().emitted_len(), 0);
        assert_eq!(o.emit(&mut [0u8; 11]), Err(WireError::Truncated));
    }

    #[test]
    fn sack_blocks_are_trimmed_to_fit() {
        let all = [Some((1, 2)), Some((3, 4)), Some((5, 6)), Some((7, 8))];
        let o = TcpOptions { sack_blocks: all, ..Default::default() };
        assert_eq!(o.emitted_sack_blocks(), 4);
        assert_eq!(o.emitted_len(), 36);
        let o = TcpOptions { timestamps: Some((9, 9)), ..o };
        assert_eq!(o.emitted_sack_blocks(), 3);
        assert_eq!(o.emitted_len(), 40);
        let mut buf = [0u8; 40];
        o.emit(&mut buf).unwrap();
        let back = TcpOptions::parse(TcpOptionsIter::new(&buf)).unwrap();
        assert_eq!(back.sack_blocks, [Some((1, 2)), Some((3, 4)), Some((5, 6)), None]);
        let o = TcpOptions { mss: Some(1), window_scale: Some(1), ..o };
        assert_eq!(o.emitted_sack_blocks(), 2);
        assert_eq!(o.emitted_len(), 40);
    }

    #[test]
    fn eol_unknown_and_clamp() {
        let data = [1, 0xfe, 4, 0xaa, 0xbb, 3, 3, 20, 0, 2, 4, 5, 0xb4];
        let opts = collect(&data);
        assert_eq!(
            opts,
            vec![
                Ok(TcpOption::NoOp),
                Ok(TcpOption::Unknown { kind: 0xfe, data: &[0xaa, 0xbb] }),
                Ok(TcpOption::WindowScale(20)),
                Ok(TcpOption::EndOfList),
            ]
        );
        let o = TcpOptions::parse(TcpOptionsIter::new(&data)).unwrap();
        assert_eq!(o.window_scale, Some(14));
        assert_eq!(o.mss, None, "options after EOL are ignored");
    }

    #[test]
    fn malformed() {
        for bad in [
            &[2u8][..],              // missing length
            &[2, 4, 5][..],          // runs past the area
            &[0xfe, 1][..],          // length below 2
            &[2, 3, 5][..],          // wrong MSS length
            &[3, 4, 1, 1][..],       // wrong window-scale length
            &[4, 3, 0][..],          // wrong sack-permitted length
            &[8, 2][..],             // wrong timestamps length
            &[5, 2][..],             // empty SACK
            &[5, 6, 0, 0, 0, 0][..], // partial SACK block
        ] {
            let v = collect(bad);
            assert_eq!(v.last(), Some(&Err(WireError::BadOption)), "{bad:?}");
            assert_eq!(TcpOptions::parse(TcpOptionsIter::new(bad)), Err(WireError::BadOption));
        }
        let mut five = vec![5u8, 42];
        five.extend_from_slice(&[0; 40]);
        assert_eq!(collect(&five), vec![Err(WireError::BadOption)]);
    }

    pub(crate) fn arb_options() -> impl Strategy<Value = TcpOptions> {
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(0u8..=14),
            any::<bool>(),
            proptest::option::of(any::<(u32, u32)>()),
            proptest::collection::vec(any::<(u32, u32)>(), 0..=4),
        )
            .prop_map(|(mss, window_scale, sack_permitted, timestamps, blocks)| {
                let mut sack_blocks = [None; 4];
                for (s, b) in sack_blocks.iter_mut().zip(blocks) {
                    *s = Some(b);
                }
                TcpOptions { mss, window_scale, sack_permitted, timestamps, sack_blocks }
            })
    }

    /// What a parse of the emitted options gives back: SACK blocks trimmed to fit.
    pub(crate) fn expected_after_roundtrip(o: &TcpOptions) -> TcpOptions {
        let mut e = *o;
        let n = o.emitted_sack_blocks();
        for s in e.sack_blocks.iter_mut().skip(n) {
            *s = None;
        }
        e
    }

    proptest! {
        #[test]
        fn roundtrip(o in arb_options()) {
            let mut buf = [0u8; 40];
            let n = o.emit(&mut buf).unwrap();
            prop_assert_eq!(n, o.emitted_len());
            prop_assert!(n % 4 == 0 && n <= 40);
            let back = TcpOptions::parse(TcpOptionsIter::new(&buf[..n])).unwrap();
            prop_assert_eq!(back, expected_after_roundtrip(&o));
        }

        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..48)) {
            let n = TcpOptionsIter::new(&data).take(100).count();
            prop_assert!(n <= data.len() + 1);
            let _ = TcpOptions::parse(TcpOptionsIter::new(&data));
        }

        #[test]
        fn from_bytes_agrees_with_the_iterator(data in proptest::collection::vec(any::<u8>(), 0..48), o in arb_options()) {
            prop_assert_eq!(TcpOptions::from_bytes(&data), TcpOptions::parse(TcpOptionsIter::new(&data)));
            let mut buf = [0u8; 40];
            let n = o.emit(&mut buf).unwrap();
            prop_assert_eq!(TcpOptions::from_bytes(&buf[..n]), Ok(expected_after_roundtrip(&o)));
        }
    }

    #[test]
    fn from_bytes_reads_the_timestamp_layout() {
        let o = TcpOptions::from_bytes(&[1, 1, 8, 10, 0, 0, 0, 1, 0xff, 0, 0, 2]).unwrap();
        assert_eq!(o, TcpOptions { timestamps: Some((1, 0xff00_0002)), ..Default::default() });
        assert_eq!(TcpOptions::from_bytes(&[]), Ok(TcpOptions::default()));
        // The same bytes in another order go the long way and still decode.
        let o = TcpOptions::from_bytes(&[8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1]).unwrap();
        assert_eq!(o.timestamps, Some((1, 2)));
        assert_eq!(TcpOptions::from_bytes(&[1, 1, 8, 9, 0, 0, 0, 1, 0, 0, 0]), Err(WireError::BadOption));
    }
}
