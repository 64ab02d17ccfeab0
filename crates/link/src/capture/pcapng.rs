//! pcapng reading: Section Header, Interface Description, Enhanced, Simple and (obsolete)
//! Packet blocks, in either byte order per section; every other block is skipped. Interface
//! timestamps honour `if_tsresol` (decimal or binary) and `if_tsoffset`.

use super::endian::Endian;
use super::read::{cut_short, CaptureRecord, Parsed};
use super::LINKTYPE_ETHERNET;

/// Block types.
pub(crate) mod block {
    /// Section Header Block.
    pub const SHB: u32 = 0x0a0d_0d0a;
    /// Interface Description Block.
    pub const IDB: u32 = 1;
    /// Packet Block (obsolete).
    pub const PB: u32 = 2;
    /// Simple Packet Block.
    pub const SPB: u32 = 3;
    /// Enhanced Packet Block.
    pub const EPB: u32 = 6;
}

/// The byte-order magic of a Section Header Block, as a number.
pub(crate) const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
/// Option codes used here.
pub(crate) mod opt {
    /// End of options.
    pub const END: u16 = 0;
    /// `shb_userappl`: the application that wrote the section.
    pub const SHB_USERAPPL: u16 = 4;
    /// `if_tsresol`: the interface's timestamp unit.
    pub const IF_TSRESOL: u16 = 9;
    /// `if_tsoffset`: seconds added to the interface's timestamps.
    pub const IF_TSOFFSET: u16 = 14;
}

/// An interface of the current section.
#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: u16,
    snaplen: u32,
    /// Timestamp unit: 10^-k (decimal) or 2^-k (binary) seconds.
    resol: Resolution,
    /// Seconds added to every timestamp.
    offset: i64,
}

/// A timestamp unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    Decimal(u8),
    Binary(u8),
}

impl Resolution {
    fn from_option(v: u8) -> Resolution {
        if v & 0x80 == 0 {
            Resolution::Decimal(v)
        } else {
            Resolution::Binary(v & 0x7f)
        }
    }

    /// Nanoseconds in `units` of this resolution.
    fn to_nanos(self, units: u64) -> u64 {
        match self {
            Resolution::Decimal(k) if k <= 9 => units.saturating_mul(10u64.pow(u32::from(9 - k))),
            Resolution::Decimal(k) => 10u64.checked_pow(u32::from(k - 9)).map_or(0, |d| units / d),
            Resolution::Binary(k) => {
                let ns = (u128::from(units) * 1_000_000_000) >> k.min(127);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        }
    }
}

impl Interface {
    fn stamp(&self, units: u64) -> u64 {
        self.resol.to_nanos(units).saturating_add_signed(self.offset.saturating_mul(1_000_000_000))
    }
}

/// Read the options in `b` (after a block's fixed fields), calling `f(code, value)` for each
/// until the end option or the end of `b`; a malformed option ends the list.
fn options(b: &[u8], e: Endian, mut f: impl FnMut(u16, &[u8])) {
    let mut at = 0;
    while b.len() - at >= 4 {
        let (code, len) = (e.u16(b, at), usize::from(e.u16(b, at + 2)));
        if code == opt::END || b.len() - at - 4 < len {
            return;
        }
        f(code, &b[at + 4..at + 4 + len]);
        at += 4 + len.next_multiple_of(4).min(b.len() - at - 4);
    }
}

/// Parse the blocks of a pcapng file (the caller checked the first magic number).
pub(crate) fn parse(data: &[u8], name: &str) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut e = Endian::native();
    let mut ifaces: Vec<Interface> = Vec::new();
    let mut at = 0;
    let mut blocks = 0usize;
    while at < data.len() {
        let n = p.records.len() + 1;
        let rest = &data[at..];
        if rest.len() < 12 {
            p.warning = Some(cut_short(name, n, rest.len(), 12));
            break;
        }
        let raw_type = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
        if raw_type == block::SHB {
            // A new section: its byte-order magic says how to read everything in it.
            e = match [rest[8], rest[9], rest[10], rest[11]] {
                [0x1a, 0x2b, 0x3c, 0x4d] => Endian::Big,
                [0x4d, 0x3c, 0x2b, 0x1a] => Endian::Little,
                _ if blocks == 0 => return Err("not a pcapng file (bad byte-order magic)".into()),
                _ => {
                    p.warning = Some(damaged(name, n, "a section header with a bad byte-order magic"));
                    break;
                }
            };
            ifaces.clear();
        }
        let btype = e.u32(rest, 0);
        let total = e.u32(rest, 4) as usize;
        if total < 12 || !total.is_multiple_of(4) {
            p.warning = Some(damaged(name, n, &format!("a block length of {total}")));
            break;
        }
        if rest.len() < total {
            p.warning = Some(cut_short(name, n, rest.len(), total));
            break;
        }
        if e.u32(rest, total - 4) as usize != total {
            p.warning = Some(damaged(name, n, "a block whose trailing length differs from its leading one"));
            break;
        }
        let body = &rest[8..total - 4];
        let base = at + 8;
        match btype {
            block::SHB => {}
            block::IDB => {
                if body.len() < 8 {
                    p.note_malformed(name, blocks + 1, at, "an interface description shorter than its fixed fields");
                    // Keep numbering: packets refer to interfaces by position.
                    ifaces.push(Interface { linktype: 0, snaplen: 0, resol: Resolution::Decimal(6), offset: 0 });
                } else {
                    let mut i = Interface {
                        linktype: e.u16(body, 0),
                        snaplen: e.u32(body, 4),
                        resol: Resolution::Decimal(6),
                        offset: 0,
                    };
                    options(&body[8..], e, |code, v| match code {
                        opt::IF_TSRESOL if !v.is_empty() => i.resol = Resolution::from_option(v[0]),
                        opt::IF_TSOFFSET if v.len() >= 8 => i.offset = e.u64(v, 0) as i64,
                        _ => {}
                    });
                    ifaces.push(i);
                }
            }
            block::EPB | block::PB => {
                // EPB: interface u32; PB: interface u16 + drops u16. Then timestamp high and
                // low, captured length, original length, data.
                let fixed = 20;
                if body.len() < fixed {
                    p.note_malformed(name, blocks + 1, at, "a packet block shorter than its fixed fields");
                } else {
                    let iface = if btype == block::EPB { e.u32(body, 0) } else { u32::from(e.u16(body, 0)) };
                    let units = (u64::from(e.u32(body, 4)) << 32) | u64::from(e.u32(body, 8));
                    let (cap, orig) = (e.u32(body, 12) as usize, e.u32(body, 16));
                    match ifaces.get(iface as usize) {
                        _ if body.len() - fixed < cap => p.note_malformed(
                            name,
                            blocks + 1,
                            at,
                            &format!("a captured length of {cap} beyond its block"),
                        ),
                        None => p.note_malformed(
                            name,
                            blocks + 1,
                            at,
                            &format!("a packet on interface {iface}, which was never described"),
                        ),
                        Some(i) if i.linktype != LINKTYPE_ETHERNET => p.other_link += 1,
                        Some(i) => p.records.push(CaptureRecord {
                            stamp: i.stamp(units),
                            orig_len: orig.max(cap as u32),
                            start: base + fixed,
                            len: cap,
                        }),
                    }
                }
            }
            block::SPB => match (body.len() >= 4, ifaces.first()) {
                (true, Some(i)) if i.linktype == LINKTYPE_ETHERNET => {
                    let orig = e.u32(body, 0);
                    let mut cap = (orig as usize).min(body.len() - 4);
                    if i.snaplen != 0 {
                        cap = cap.min(i.snaplen as usize);
                    }
                    p.records.push(CaptureRecord { stamp: 0, orig_len: orig, start: base + 4, len: cap });
                }
                (true, Some(_)) => p.other_link += 1,
                (true, None) => {
                    p.note_malformed(name, blocks + 1, at, "a simple packet block before any interface description")
                }
                (false, _) => {
                    p.note_malformed(name, blocks + 1, at, "a simple packet block shorter than its fixed fields")
                }
            },
            _ => p.unknown_blocks += 1,
        }
        blocks += 1;
        at += total;
    }
    Ok(p)
}

/// The warning for a file damaged at packet `n` (1-based).
fn damaged(name: &str, n: usize, what: &str) -> String {
    format!("{name}: the capture is damaged at packet {n} ({what}); the {} packets before it are used", n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions_convert_to_nanoseconds() {
        assert_eq!(Resolution::from_option(6).to_nanos(1_500_000), 1_500_000_000);
        assert_eq!(Resolution::from_option(9).to_nanos(42), 42);
        assert_eq!(Resolution::from_option(12).to_nanos(5_000), 5);
        assert_eq!(Resolution::from_option(0x80 | 10).to_nanos(1024), 1_000_000_000);
        assert_eq!(Resolution::from_option(0x80 | 30).to_nanos(1 << 29), 500_000_000);
        assert_eq!(Resolution::from_option(60).to_nanos(u64::MAX), 0, "a unit far below 1 ns");
        assert_eq!(Resolution::from_option(0).to_nanos(u64::MAX), u64::MAX, "saturates");
    }
}
