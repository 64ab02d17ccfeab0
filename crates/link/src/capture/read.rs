//! Loading a capture: the format from its magic number, classic pcap records here, pcapng
//! blocks in [`super::pcapng`].

use std::io::Read;
use std::path::Path;

use super::endian::Endian;
use super::{pcapng, Format, LINKTYPE_ETHERNET};
use crate::LinkError;

/// Largest record a classic pcap file may claim (tcpdump's largest snap length); a larger
/// length means the file is damaged from that record on.
const MAX_RECORD: usize = 262_144;

/// One packet of a capture: where its bytes lie in the file and when it was captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureRecord {
    /// Capture time, nanoseconds since the Unix epoch (0 when the file does not say).
    pub stamp: u64,
    /// Length of the packet on the wire (at least the captured length).
    pub orig_len: u32,
    pub(crate) start: usize,
    pub(crate) len: usize,
}

/// What parsing a file found, besides its records.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub records: Vec<CaptureRecord>,
    /// Why reading stopped before the end of the file (a cut or damaged record), if it did.
    pub warning: Option<String>,
    /// Packets on interfaces whose link type is not Ethernet.
    pub other_link: u64,
    /// Packet blocks that were malformed (skipped, the file went on).
    pub malformed: u64,
    /// What the first malformed block was, and where.
    pub malformed_note: Option<String>,
    /// Blocks of kinds linerate does not use (name resolution, statistics, ...).
    pub unknown_blocks: u64,
}

/// A whole capture file in memory and the Ethernet packets found in it.
#[derive(Debug)]
pub struct Capture {
    /// The file's format.
    pub format: Format,
    data: Vec<u8>,
    parsed: Parsed,
}

impl Capture {
    /// The packets, in file order.
    pub fn records(&self) -> &[CaptureRecord] {
        &self.parsed.records
    }

    /// Number of packets.
    pub fn len(&self) -> usize {
        self.parsed.records.len()
    }

    /// True when the capture holds no packet.
    pub fn is_empty(&self) -> bool {
        self.parsed.records.is_empty()
    }

    /// The captured bytes of `r`.
    pub fn frame(&self, r: &CaptureRecord) -> &[u8] {
        &self.data[r.start..r.start + r.len]
    }

    /// Why reading stopped before the end of the file (the last record was cut short or
    /// damaged); the packets before it are all here.
    pub fn warning(&self) -> Option<&str> {
        self.parsed.warning.as_deref()
    }

    /// What is wrong with the file, naming it and the record, if anything is: where reading
    /// stopped (a cut or damaged record), else the first malformed block that was skipped.
    /// A tool that must not pass off part of a file as the whole refuses it on this.
    pub fn damage(&self) -> Option<&str> {
        match self.parsed.warning.as_deref() {
            Some(w) => Some(w.split_once("; the ").map_or(w, |(d, _)| d)),
            None => self.parsed.malformed_note.as_deref(),
        }
    }

    /// Packets skipped because their interface is not Ethernet.
    pub fn other_link(&self) -> u64 {
        self.parsed.other_link
    }

    /// Malformed packet blocks skipped.
    pub fn malformed(&self) -> u64 {
        self.parsed.malformed
    }

    /// Blocks of other kinds skipped (pcapng name resolution, statistics, custom, ...).
    pub fn unknown_blocks(&self) -> u64 {
        self.parsed.unknown_blocks
    }
}

/// Read a whole capture from `input` (named `name` in errors and warnings), detecting classic
/// pcap (either byte order, micro- or nanosecond) or pcapng by the magic number.
pub fn read_capture(mut input: impl Read, name: &str) -> Result<Capture, LinkError> {
    let mut data = Vec::new();
    input.read_to_end(&mut data).map_err(|e| LinkError::Pcap(format!("{name}: cannot read: {e}")))?;
    let err = |m: String| LinkError::Pcap(format!("{name}: {m}"));
    if data.len() < 4 {
        return Err(err("not a pcap or pcapng file (shorter than a file header)".into()));
    }
    let magic = [data[0], data[1], data[2], data[3]];
    let (format, parsed) = match magic {
        [0x0a, 0x0d, 0x0d, 0x0a] => (Format::PcapNg, pcapng::parse(&data, name).map_err(err)?),
        [0xd4, 0xc3, 0xb2, 0xa1] => (Format::Pcap, parse_pcap(&data, Endian::Little, 1000, name).map_err(err)?),
        [0xa1, 0xb2, 0xc3, 0xd4] => (Format::Pcap, parse_pcap(&data, Endian::Big, 1000, name).map_err(err)?),
        [0x4d, 0x3c, 0xb2, 0xa1] => (Format::Pcap, parse_pcap(&data, Endian::Little, 1, name).map_err(err)?),
        [0xa1, 0xb2, 0x3c, 0x4d] => (Format::Pcap, parse_pcap(&data, Endian::Big, 1, name).map_err(err)?),
        _ => return Err(err("not a pcap or pcapng file (unknown magic number)".into())),
    };
    Ok(Capture { format, data, parsed })
}

/// Open and read the capture at `path`; `-` reads standard input.
pub fn open_capture(path: &Path) -> Result<Capture, LinkError> {
    if path.as_os_str() == "-" {
        return read_capture(std::io::stdin().lock(), "standard input");
    }
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| LinkError::Pcap(format!("{name}: cannot open: {e}")))?;
    read_capture(file, &name)
}

impl Parsed {
    /// Count a malformed block (number `block`, 1-based, at byte `at`) skipped; the first one
    /// is described.
    pub(crate) fn note_malformed(&mut self, name: &str, block: usize, at: usize, what: &str) {
        self.malformed += 1;
        if self.malformed_note.is_none() {
            self.malformed_note = Some(format!("{name}: block {block} (at byte {at}) is malformed: {what}"));
        }
    }
}

/// The warning for a file that ends inside record `n` (1-based).
pub(crate) fn cut_short(name: &str, n: usize, have: usize, need: usize) -> String {
    format!(
        "{name}: the capture ends inside packet {n} ({have} of {need} bytes); the {} complete packets before it are used",
        n - 1
    )
}

/// Classic pcap: a 24-byte header, then records of a 16-byte header and the packet.
/// `frac_ns` is the length of a timestamp fraction unit in nanoseconds (1000 or 1).
fn parse_pcap(data: &[u8], e: Endian, frac_ns: u64, name: &str) -> Result<Parsed, String> {
    if data.len() < 24 {
        return Err("the pcap file header is cut short".into());
    }
    let linktype = e.u32(data, 20) & 0x0fff_ffff;
    if linktype != u32::from(LINKTYPE_ETHERNET) {
        return Err(format!("link type {linktype} is not Ethernet (1)"));
    }
    let mut p = Parsed::default();
    let mut at = 24;
    while at < data.len() {
        let n = p.records.len() + 1;
        if data.len() - at < 16 {
            p.warning = Some(cut_short(name, n, data.len() - at, 16));
            break;
        }
        let (sec, frac) = (u64::from(e.u32(data, at)), u64::from(e.u32(data, at + 4)));
        let (incl, orig) = (e.u32(data, at + 8) as usize, e.u32(data, at + 12));
        if incl > MAX_RECORD {
            p.warning = Some(format!(
                "{name}: the capture is damaged at packet {n} (it claims {incl} bytes, more than any capture holds); the {} complete packets before it are used",
                n - 1
            ));
            break;
        }
        if data.len() - at - 16 < incl {
            p.warning = Some(cut_short(name, n, data.len() - at, 16 + incl));
            break;
        }
        let stamp = sec.saturating_mul(1_000_000_000).saturating_add(frac.saturating_mul(frac_ns));
        p.records.push(CaptureRecord { stamp, orig_len: orig.max(incl as u32), start: at + 16, len: incl });
        at += 16 + incl;
    }
    Ok(p)
}
