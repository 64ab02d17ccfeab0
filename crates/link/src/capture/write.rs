//! Writing captures: a classic pcap header (nanosecond magic) or a pcapng section with one
//! Ethernet interface (`if_tsresol` = nanoseconds), then one record per frame.

use std::io::{self, Write};

use super::endian::Endian;
use super::pcapng::{block, opt, BYTE_ORDER_MAGIC};
use super::{Format, LINKTYPE_ETHERNET};

/// Snap length written to the headers (every frame is recorded whole).
const SNAPLEN: u32 = 262_144;

/// Writes frames to `W` as a capture file of one format.
pub struct CaptureWriter<W: Write> {
    out: W,
    format: Format,
    e: Endian,
    buf: Vec<u8>,
}

impl<W: Write> CaptureWriter<W> {
    /// Start a capture in `format` on `out` (the file header is written now), in this
    /// machine's byte order.
    pub fn new(out: W, format: Format) -> io::Result<Self> {
        Self::with_byte_order(out, format, Endian::native())
    }

    /// As [`CaptureWriter::new`], in byte order `e` (tests write both).
    pub(crate) fn with_byte_order(out: W, format: Format, e: Endian) -> io::Result<Self> {
        let mut w = CaptureWriter { out, format, e, buf: Vec::with_capacity(256) };
        let b = &mut w.buf;
        match format {
            Format::Pcap => {
                e.put_u32(b, 0xa1b2_3c4d); // nanosecond timestamps
                e.put_u16(b, 2);
                e.put_u16(b, 4);
                e.put_u32(b, 0); // thiszone
                e.put_u32(b, 0); // sigfigs
                e.put_u32(b, SNAPLEN);
                e.put_u32(b, u32::from(LINKTYPE_ETHERNET));
            }
            Format::PcapNg => {
                let app = concat!("linerate ", env!("CARGO_PKG_VERSION")).as_bytes();
                let mut opts = Vec::new();
                put_option(e, &mut opts, opt::SHB_USERAPPL, app);
                put_option(e, &mut opts, opt::END, &[]);
                put_block(e, b, block::SHB, |b| {
                    e.put_u32(b, BYTE_ORDER_MAGIC);
                    e.put_u16(b, 1);
                    e.put_u16(b, 0);
                    e.put_u64(b, u64::MAX); // section length not given
                    b.extend_from_slice(&opts);
                });
                let mut opts = Vec::new();
                put_option(e, &mut opts, opt::IF_TSRESOL, &[9]);
                put_option(e, &mut opts, opt::END, &[]);
                put_block(e, b, block::IDB, |b| {
                    e.put_u16(b, LINKTYPE_ETHERNET);
                    e.put_u16(b, 0);
                    e.put_u32(b, SNAPLEN);
                    b.extend_from_slice(&opts);
                });
            }
        }
        w.out.write_all(&w.buf)?;
        Ok(w)
    }

    /// The format being written.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Append `frame`, captured at `stamp` nanoseconds since the Unix epoch.
    pub fn write_frame(&mut self, stamp: u64, frame: &[u8]) -> io::Result<()> {
        let e = self.e;
        let len = u32::try_from(frame.len()).map_err(|_| io::Error::other("frame larger than 4 GiB"))?;
        self.buf.clear();
        match self.format {
            Format::Pcap => {
                // Seconds past u32::MAX (year 2106) wrap, as in every classic pcap file.
                e.put_u32(&mut self.buf, (stamp / 1_000_000_000) as u32);
                e.put_u32(&mut self.buf, (stamp % 1_000_000_000) as u32);
                e.put_u32(&mut self.buf, len);
                e.put_u32(&mut self.buf, len);
                self.out.write_all(&self.buf)?;
                self.out.write_all(frame)
            }
            Format::PcapNg => {
                let pad = frame.len().next_multiple_of(4) - frame.len();
                let total = 32 + frame.len() + pad;
                let total = u32::try_from(total).map_err(|_| io::Error::other("frame too large for pcapng"))?;
                e.put_u32(&mut self.buf, block::EPB);
                e.put_u32(&mut self.buf, total);
                e.put_u32(&mut self.buf, 0); // interface 0
                e.put_u32(&mut self.buf, (stamp >> 32) as u32);
                e.put_u32(&mut self.buf, stamp as u32);
                e.put_u32(&mut self.buf, len);
                e.put_u32(&mut self.buf, len);
                self.out.write_all(&self.buf)?;
                self.out.write_all(frame)?;
                self.buf.clear();
                self.buf.extend_from_slice(&[0; 3][..pad]);
                e.put_u32(&mut self.buf, total);
                self.out.write_all(&self.buf)
            }
        }
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// Append one option (code, length, value padded to 4 bytes).
fn put_option(e: Endian, out: &mut Vec<u8>, code: u16, value: &[u8]) {
    e.put_u16(out, code);
    e.put_u16(out, value.len() as u16);
    out.extend_from_slice(value);
    out.resize(out.len() + (value.len().next_multiple_of(4) - value.len()), 0);
}

/// Append a whole block of `btype` whose body `body` writes (a multiple of 4 bytes).
fn put_block(e: Endian, out: &mut Vec<u8>, btype: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    e.put_u32(out, btype);
    e.put_u32(out, 0);
    body(out);
    let total = (out.len() - start + 4) as u32;
    let mut len = Vec::with_capacity(4);
    e.put_u32(&mut len, total);
    out[start + 4..start + 8].copy_from_slice(&len);
    out.extend_from_slice(&len);
}
