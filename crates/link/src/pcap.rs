//! Capture files: [`PcapWriter`] records every frame a link moves; [`PcapReplay`] plays a file back.
//!
//! Files are classic pcap, LINKTYPE_ETHERNET, nanosecond timestamps. A recorded timestamp is
//! the `now` the frame passed with (virtual or monotonic time, not wall-clock time), so
//! captures of virtual-time runs are reproducible; tools show them as times near 1970.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use pcap_file::pcap::{PcapHeader, PcapReader};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};

/// Snap length written to the header (every frame is recorded whole).
const SNAPLEN: u32 = 65535;

fn pcap_err(path: &Path, what: impl std::fmt::Display) -> LinkError {
    LinkError::Pcap(format!("{}: {what}", path.display()))
}

/// A link wrapper that writes every received and sent frame to a pcap file.
pub struct PcapWriter<L: Link> {
    inner: L,
    out: Out,
    path: PathBuf,
    /// A write failure not yet reported; returned by the next call.
    failed: Option<String>,
    /// Copies of the frames offered to the inner link's `tx_batch`.
    shadow: FrameBatch,
}

impl<L: Link> PcapWriter<L> {
    /// Wrap `inner`, creating (truncating) the capture file at `path`.
    pub fn new(inner: L, path: &Path) -> Result<Self, LinkError> {
        let file = File::create(path).map_err(|e| pcap_err(path, format!("cannot create: {e}")))?;
        let header = PcapHeader {
            snaplen: SNAPLEN,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::native(),
            ..PcapHeader::default()
        };
        let mut out = BufWriter::with_capacity(1 << 16, file);
        header.write_to(&mut out).map_err(|e| pcap_err(path, format!("cannot write the header: {e}")))?;
        let shadow = FrameBatch::new(64, inner.max_frame().clamp(1, MAX_FRAME));
        Ok(PcapWriter { inner, out, path: path.to_path_buf(), failed: None, shadow })
    }

    /// The wrapped link.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The wrapped link, mutable.
    pub fn inner_mut(&mut self) -> &mut L {
        &mut self.inner
    }

    /// Path of the capture file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write buffered records to the file.
    pub fn flush(&mut self) -> Result<(), LinkError> {
        self.take_failure()?;
        let path = &self.path;
        self.out.flush().map_err(|e| pcap_err(path, format!("flush failed: {e}")))
    }

    fn take_failure(&mut self) -> Result<(), LinkError> {
        match self.failed.take() {
            Some(m) => Err(pcap_err(&self.path, m)),
            None => Ok(()),
        }
    }
}

type Out = BufWriter<File>;

/// Record frames `from..from + count` of `batch`; a failure is kept in `failed` for the next call.
///
/// The header is written by `pcap-file`; records are written here because its writer offers
/// no way to flush without being consumed. A record is 16 bytes in the header's (native)
/// byte order — seconds, nanoseconds, captured length, original length — then the frame.
fn record(out: &mut Out, failed: &mut Option<String>, now: Instant, batch: &FrameBatch, from: usize, count: usize) {
    let nanos = now.as_nanos();
    // Seconds past u32::MAX (year 2106 in wall time) wrap; virtual and monotonic time never get there.
    let (sec, frac) = ((nanos / 1_000_000_000) as u32, (nanos % 1_000_000_000) as u32);
    for i in from..from + count {
        let frame = batch.get(i);
        let len = frame.len() as u32;
        let mut hdr = [0u8; 16];
        for (k, v) in [sec, frac, len, len].into_iter().enumerate() {
            hdr[k * 4..k * 4 + 4].copy_from_slice(&v.to_ne_bytes());
        }
        if let Err(e) = out.write_all(&hdr).and_then(|_| out.write_all(frame)) {
            failed.get_or_insert_with(|| format!("write failed: {e}"));
            return;
        }
    }
}

impl<L: Link> Drop for PcapWriter<L> {
    fn drop(&mut self) {
        // Nothing to report to from Drop; `flush()` is there for callers who need the result.
        let _ = self.out.flush();
    }
}

impl<L: Link> Link for PcapWriter<L> {
    fn max_frame(&self) -> usize {
        self.inner.max_frame()
    }

    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.take_failure()?;
        let start = batch.len();
        let n = self.inner.rx_batch(now, batch)?;
        record(&mut self.out, &mut self.failed, now, batch, start, n);
        Ok(n)
    }

    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.take_failure()?;
        // The inner link removes the frames it sends (and the oversize ones it drops) from the
        // batch, so keep a copy of the candidates: frames within its size, in order; the `n`
        // it reports sent are the first `n` of them.
        let max = self.inner.max_frame();
        if self.shadow.capacity() < batch.len() || self.shadow.slot_size() < max {
            // Only when a caller uses a larger batch than before; not on the steady path.
            self.shadow = FrameBatch::new(batch.len(), max.max(1));
        }
        self.shadow.clear();
        for f in batch.iter().filter(|f| f.len() <= max) {
            self.shadow.push(f);
        }
        let n = self.inner.tx_batch(now, batch)?;
        record(&mut self.out, &mut self.failed, now, &self.shadow, 0, n.min(self.shadow.len()));
        Ok(n)
    }

    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }

    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    fn raw_fd(&self) -> Option<i32> {
        self.inner.raw_fd()
    }
}

/// A frame loaded from a capture file: its place in `data` and its recorded time.
#[derive(Debug, Clone, Copy)]
struct Record {
    start: usize,
    len: usize,
    ts: u64,
}

/// Load every packet of a pcap file into one buffer.
fn load(path: &Path) -> Result<(Vec<u8>, Vec<Record>), LinkError> {
    let file = File::open(path).map_err(|e| pcap_err(path, format!("cannot open: {e}")))?;
    let mut reader =
        PcapReader::new(BufReader::new(file)).map_err(|e| pcap_err(path, format!("not a pcap file: {e}")))?;
    if reader.header().datalink != DataLink::ETHERNET {
        return Err(pcap_err(path, format!("link type {:?} is not Ethernet", reader.header().datalink)));
    }
    let (mut data, mut records) = (Vec::new(), Vec::new());
    while let Some(packet) = reader.next_packet() {
        let packet = packet.map_err(|e| pcap_err(path, format!("packet {}: {e}", records.len() + 1)))?;
        records.push(Record { start: data.len(), len: packet.data.len(), ts: packet.timestamp.as_nanos() as u64 });
        data.extend_from_slice(&packet.data);
    }
    Ok((data, records))
}

/// Every frame of a pcap file, in order (for tests and tools).
pub fn read_frames(path: &Path) -> Result<Vec<Vec<u8>>, LinkError> {
    let (data, records) = load(path)?;
    Ok(records.iter().map(|r| data[r.start..r.start + r.len].to_vec()).collect())
}

/// A link that receives the frames of a capture file and discards what it is sent.
///
/// Without pacing, `rx_batch` hands out frames as fast as batches take them. With pacing,
/// a frame is ready once `now - first_now >= its_time - first_time`, where `first_now` is the
/// `now` of the first `rx_batch` call. Frames larger than [`MAX_FRAME`] or than the batch's
/// slots are dropped and counted as `dropped_oversize`.
pub struct PcapReplay {
    data: Vec<u8>,
    records: Vec<Record>,
    next: usize,
    paced: bool,
    start: Option<Instant>,
    stats: LinkStats,
}

impl PcapReplay {
    /// Load the capture at `path` (all of it, into memory).
    pub fn open(path: &Path, paced: bool) -> Result<Self, LinkError> {
        let (data, records) = load(path)?;
        Ok(PcapReplay { data, records, next: 0, paced, start: None, stats: LinkStats::default() })
    }

    /// Frames in the file.
    pub fn total(&self) -> usize {
        self.records.len()
    }

    /// Frames not yet handed out.
    pub fn remaining(&self) -> usize {
        self.records.len() - self.next
    }

    /// True once every frame has been handed out.
    pub fn is_finished(&self) -> bool {
        self.next == self.records.len()
    }
}

impl Link for PcapReplay {
    fn max_frame(&self) -> usize {
        MAX_FRAME
    }

    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let start = *self.start.get_or_insert(now);
        let first_ts = self.records.first().map_or(0, |r| r.ts);
        let elapsed = now.as_nanos().saturating_sub(start.as_nanos());
        let mut got = 0;
        while !batch.is_full() && self.next < self.records.len() {
            let r = self.records[self.next];
            if self.paced && r.ts.saturating_sub(first_ts) > elapsed {
                break;
            }
            self.next += 1;
            if r.len > MAX_FRAME || !batch.push(&self.data[r.start..r.start + r.len]) {
                self.stats.dropped_oversize += 1;
                continue;
            }
            got += 1;
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += r.len as u64;
        }
        Ok(got)
    }

    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let n = batch.len();
        self.stats.tx_frames += n as u64;
        self.stats.tx_bytes += batch.iter().map(|f| f.len() as u64).sum::<u64>();
        batch.clear();
        Ok(n)
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }

    fn kind(&self) -> &'static str {
        "pcap"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{mem, LinkConfig};
    use std::time::Duration;

    /// A temporary path, removed on drop (also when the test fails).
    struct Tmp(PathBuf);

    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn tmp(name: &str) -> Tmp {
        Tmp(std::env::temp_dir().join(format!("linerate-{}-{name}", std::process::id())))
    }

    #[test]
    fn writer_records_rx_and_tx_and_replay_paces() {
        let guard = tmp("unit.pcap");
        let path = guard.0.clone();
        let (a, mut b) = mem::pair(LinkConfig::default().depth(4));
        let mut w = PcapWriter::new(a, &path).unwrap();
        let mut batch = FrameBatch::new(8, 2048);
        for i in 0..6u8 {
            batch.push(&[i; 60]);
        }
        batch.push(&[9; 1600]); // oversize: dropped by the mem link, not recorded
                                // Depth 4: four go out; two and the oversize one stay.
        assert_eq!(w.tx_batch(Instant::from_micros(10), &mut batch).unwrap(), 4);
        assert_eq!(batch.len(), 3);
        let mut got = FrameBatch::new(8, 2048);
        b.rx_batch(Instant::ZERO, &mut got).unwrap();
        assert_eq!(w.tx_batch(Instant::from_micros(20), &mut batch).unwrap(), 2);
        assert!(batch.is_empty());
        assert_eq!(w.stats().dropped_oversize, 1);
        got.clear();
        got.push(b"reply frame");
        b.tx_batch(Instant::ZERO, &mut got).unwrap();
        let mut rx = FrameBatch::new(8, 2048);
        assert_eq!(w.rx_batch(Instant::from_micros(30), &mut rx).unwrap(), 1);
        w.flush().unwrap();
        drop(w);
        let frames = read_frames(&path).unwrap();
        let mut expect: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 60]).collect();
        expect.push(b"reply frame".to_vec());
        assert_eq!(frames, expect);

        let mut replay = PcapReplay::open(&path, true).unwrap();
        assert_eq!(replay.total(), 7);
        let mut out = FrameBatch::new(16, 2048);
        assert_eq!(replay.rx_batch(Instant::from_millis(100), &mut out).unwrap(), 4, "t=10us frames only");
        assert_eq!(replay.rx_batch(Instant::from_millis(100) + Duration::from_micros(10), &mut out).unwrap(), 2);
        assert_eq!(replay.rx_batch(Instant::from_millis(100) + Duration::from_micros(20), &mut out).unwrap(), 1);
        assert!(replay.is_finished());
        let mut all = PcapReplay::open(&path, false).unwrap();
        out.clear();
        assert_eq!(all.rx_batch(Instant::ZERO, &mut out).unwrap(), 7);
        assert_eq!(all.tx_batch(Instant::ZERO, &mut out).unwrap(), 7);
        assert_eq!(all.stats().tx_frames, 7);
    }

    #[test]
    fn bad_files_are_pcap_errors() {
        let missing = tmp("missing.pcap");
        let e = read_frames(&missing.0).err().unwrap();
        assert!(matches!(e, LinkError::Pcap(ref m) if m.contains("missing.pcap") && m.contains("cannot open")), "{e}");
        let junk = tmp("junk.pcap");
        std::fs::write(&junk.0, b"this is not a capture file at all").unwrap();
        let e = PcapReplay::open(&junk.0, false).err().unwrap();
        assert!(matches!(e, LinkError::Pcap(ref m) if m.contains("not a pcap file")), "{e}");
    }
}
