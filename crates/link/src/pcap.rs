//! Capture files on links: [`PcapWriter`] records every frame a link moves; [`PcapReplay`]
//! plays a file back. Both formats are read and written (see [`crate::capture`]): the
//! writer picks pcapng for a `.pcapng` path (or when asked), the reader detects the format,
//! and the path `-` is standard output or input.
//!
//! A recorded timestamp is the frame's stamp when it carries one (a frame replayed from a
//! capture keeps its original time through a middlebox), else the `now` it passed with:
//! virtual time on a testbed (reproducible captures, shown near 1970), or with
//! [`PcapWriter::wall_clock`] the wall-clock time of a live link polled on [`Instant::now`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::capture::{open_capture, Capture, CaptureWriter, Format};
use crate::time::unix_nanos;
use crate::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};

fn pcap_err(path: &Path, what: impl std::fmt::Display) -> LinkError {
    LinkError::Pcap(format!("{}: {what}", path.display()))
}

type Out = CaptureWriter<BufWriter<Box<dyn Write + Send>>>;

/// Open `path` for writing a capture in `format`; `-` is standard output.
fn create(path: &Path, format: Format) -> Result<Out, LinkError> {
    let sink: Box<dyn Write + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdout())
    } else {
        Box::new(File::create(path).map_err(|e| pcap_err(path, format!("cannot create: {e}")))?)
    };
    CaptureWriter::new(BufWriter::with_capacity(1 << 16, sink), format)
        .map_err(|e| pcap_err(path, format!("cannot write the header: {e}")))
}

/// A link wrapper that writes every received and sent frame to a capture file.
pub struct PcapWriter<L: Link> {
    inner: L,
    out: Out,
    path: PathBuf,
    /// Added to `now` for frames without a stamp (wall clock minus monotonic clock), if set.
    wall_offset: Option<i128>,
    /// A write failure not yet reported; returned by the next call.
    failed: Option<String>,
    /// Copies of the frames offered to the inner link's `tx_batch`.
    shadow: FrameBatch,
}

impl<L: Link> PcapWriter<L> {
    /// Wrap `inner`, creating (truncating) the capture file at `path` (`-`: standard output),
    /// pcapng if the path ends in `.pcapng`, else classic pcap.
    pub fn new(inner: L, path: &Path) -> Result<Self, LinkError> {
        Self::with_format(inner, path, Format::for_path(path))
    }

    /// Wrap `inner`, writing `format` to `path` (`-`: standard output).
    pub fn with_format(inner: L, path: &Path, format: Format) -> Result<Self, LinkError> {
        let out = create(path, format)?;
        let shadow = FrameBatch::new(64, inner.max_frame().clamp(1, MAX_FRAME));
        Ok(PcapWriter { inner, out, path: path.to_path_buf(), wall_offset: None, failed: None, shadow })
    }

    /// Stamp frames that carry no capture time with the wall-clock time: `now` is taken to be
    /// a reading of [`Instant::now`] (the monotonic clock), as on live links.
    pub fn wall_clock(mut self) -> Self {
        self.wall_offset = Some(i128::from(unix_nanos()) - i128::from(Instant::now().as_nanos()));
        self
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

    /// The format being written.
    pub fn format(&self) -> Format {
        self.out.format()
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

    /// The time to record for a frame without a stamp that passed at `now`.
    fn default_stamp(&self, now: Instant) -> u64 {
        match self.wall_offset {
            Some(off) => (i128::from(now.as_nanos()) + off).clamp(0, i128::from(u64::MAX)) as u64,
            None => now.as_nanos(),
        }
    }
}

/// Record frames `from..from + count` of `batch`, each at its stamp or else at `default`; a
/// failure is kept in `failed` for the next call.
fn record(out: &mut Out, failed: &mut Option<String>, default: u64, batch: &FrameBatch, from: usize, count: usize) {
    for i in from..from + count {
        let stamp = batch.stamp(i).unwrap_or(default);
        if let Err(e) = out.write_frame(stamp, batch.get(i)) {
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
        let d = self.default_stamp(now);
        record(&mut self.out, &mut self.failed, d, batch, start, n);
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
        for i in 0..batch.len() {
            let f = batch.get(i);
            if f.len() <= max {
                // Cannot fail: the shadow holds as many frames as the batch, in slots of `max`.
                let copied = self.shadow.push_stamped(f, batch.stamp(i).unwrap_or(0));
                debug_assert!(copied, "the shadow batch is sized for the whole batch");
            }
        }
        let n = self.inner.tx_batch(now, batch)?;
        let d = self.default_stamp(now);
        record(&mut self.out, &mut self.failed, d, &self.shadow, 0, n.min(self.shadow.len()));
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

/// Every frame of a pcap or pcapng file (`-`: standard input), in order (for tests and tools).
/// A record cut short at the end of the file is left out.
pub fn read_frames(path: &Path) -> Result<Vec<Vec<u8>>, LinkError> {
    let cap = open_capture(path)?;
    Ok(cap.records().iter().map(|r| cap.frame(r).to_vec()).collect())
}

/// A link that receives the frames of a capture file and discards what it is sent.
///
/// Frames are handed out stamped with their recorded time. Without pacing, `rx_batch` hands
/// them out as fast as batches take them. With pacing, a frame is ready once
/// `now - first_now >= its_time - first_time`, where `first_now` is the `now` of the first
/// `rx_batch` call. Frames larger than [`MAX_FRAME`] or than the batch's slots are dropped and
/// counted as `dropped_oversize`.
pub struct PcapReplay {
    cap: Capture,
    next: usize,
    paced: bool,
    start: Option<Instant>,
    stats: LinkStats,
}

impl PcapReplay {
    /// Load the capture at `path` (all of it, into memory; `-` reads standard input).
    pub fn open(path: &Path, paced: bool) -> Result<Self, LinkError> {
        let cap = open_capture(path)?;
        Ok(PcapReplay { cap, next: 0, paced, start: None, stats: LinkStats::default() })
    }

    /// Frames in the file.
    pub fn total(&self) -> usize {
        self.cap.len()
    }

    /// Frames not yet handed out.
    pub fn remaining(&self) -> usize {
        self.cap.len() - self.next
    }

    /// True once every frame has been handed out.
    pub fn is_finished(&self) -> bool {
        self.next == self.cap.len()
    }

    /// Why the file was read only up to a point (its last record cut short or damaged).
    pub fn warning(&self) -> Option<&str> {
        self.cap.warning()
    }

    /// What is wrong with the file, naming it and the record (see `Capture::damage`).
    pub fn damage(&self) -> Option<&str> {
        self.cap.damage()
    }

    /// Packets of the file left out: on interfaces that are not Ethernet, or malformed.
    pub fn skipped(&self) -> u64 {
        self.cap.other_link() + self.cap.malformed()
    }
}

impl Link for PcapReplay {
    fn max_frame(&self) -> usize {
        MAX_FRAME
    }

    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let start = *self.start.get_or_insert(now);
        let records = self.cap.records();
        let first_ts = records.first().map_or(0, |r| r.stamp);
        let elapsed = now.as_nanos().saturating_sub(start.as_nanos());
        let mut got = 0;
        while !batch.is_full() && self.next < records.len() {
            let r = records[self.next];
            if self.paced && r.stamp.saturating_sub(first_ts) > elapsed {
                break;
            }
            self.next += 1;
            let frame = self.cap.frame(&r);
            if frame.len() > MAX_FRAME || !batch.push_stamped(frame, r.stamp) {
                self.stats.dropped_oversize += 1;
                continue;
            }
            got += 1;
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += frame.len() as u64;
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
            assert!(batch.push(&[i; 60]));
        }
        assert!(batch.push(&[9; 1600])); // oversize: dropped by the mem link, not recorded
                                         // Depth 4: four go out; two and the oversize one stay.
        assert_eq!(w.tx_batch(Instant::from_micros(10), &mut batch).unwrap(), 4);
        assert_eq!(batch.len(), 3);
        let mut got = FrameBatch::new(8, 2048);
        b.rx_batch(Instant::ZERO, &mut got).unwrap();
        assert_eq!(w.tx_batch(Instant::from_micros(20), &mut batch).unwrap(), 2);
        assert!(batch.is_empty());
        assert_eq!(w.stats().dropped_oversize, 1);
        got.clear();
        assert!(got.push(b"reply frame"));
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
        assert!(matches!(e, LinkError::Pcap(ref m) if m.contains("not a pcap or pcapng file")), "{e}");
    }
}
