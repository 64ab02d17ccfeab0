//! Reading and replaying capture files through `link::pcap`'s public API only: the input is
//! written to a file, which `read_frames` and `PcapReplay::open` must accept or reject alike
//! without panicking. A replay (paced or not, through batches of a random slot size, wrapped
//! in a `PcapWriter`) hands out exactly the file's frames that fit, in order, counts the rest
//! as oversize, and finishes; the capture the writer made of what it received reads back as
//! the same frames.
//!
//! Input: 1 byte of options (pacing, slot size), then the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use link::pcap::{read_frames, PcapReplay, PcapWriter};
use link::{FrameBatch, Instant, Link, MAX_FRAME};
use std::path::PathBuf;
use std::time::Duration;

/// A file of this process in memory-backed /dev/shm if there is one (a disk write per run
/// would slow the fuzzer a hundredfold), else in the temp directory.
fn scratch(name: &str) -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    dir.join(format!("linerate-fuzz-pcap-{}-{name}", std::process::id()))
}

/// Removes the scratch files when a run ends.
struct Cleanup([PathBuf; 2]);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&opt, file)) = data.split_first() else { return };
    let paced = opt & 1 != 0;
    let slot = [60, 128, 1514, 2048, MAX_FRAME][usize::from(opt >> 1) % 5];
    let input = scratch("in.pcap");
    let output = scratch("out.pcap");
    let _cleanup = Cleanup([input.clone(), output.clone()]);
    std::fs::write(&input, file).expect("temp dir is writable");
    let frames = read_frames(&input);
    let replay = PcapReplay::open(&input, paced);
    let (frames, replay) = match (frames, replay) {
        (Ok(f), Ok(r)) => (f, r),
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string());
            return;
        }
        (f, r) => panic!("read_frames and PcapReplay::open disagree: {:?} vs {:?}", f.err(), r.err()),
    };
    assert_eq!(replay.total(), frames.len());
    let mut link = PcapWriter::new(replay, &output).expect("temp dir is writable");
    let mut batch = FrameBatch::new(4, slot);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut now = Instant::ZERO;
    // Unpaced: every call makes progress. Paced: a frame's time may lie far ahead; a jump to
    // the end of time releases everything.
    for round in 0..frames.len() + 2 {
        if link.inner().is_finished() {
            break;
        }
        if paced && round > 0 {
            now = if round == 1 { now + Duration::from_millis(1) } else { Instant::from_nanos(u64::MAX) };
        }
        batch.clear();
        let n = link.rx_batch(now, &mut batch).expect("replay never fails");
        assert_eq!(n, batch.len());
        got.extend(batch.iter().map(<[u8]>::to_vec));
    }
    assert!(link.inner().is_finished(), "{} frames left", link.inner().remaining());
    let fits: Vec<Vec<u8>> = frames.iter().filter(|f| f.len() <= slot.min(MAX_FRAME)).cloned().collect();
    assert_eq!(got, fits);
    let st = link.stats();
    assert_eq!(st.rx_frames + st.dropped_oversize, frames.len() as u64);
    assert_eq!(st.rx_frames, got.len() as u64);
    link.flush().expect("temp dir is writable");
    drop(link);
    assert_eq!(read_frames(&output).expect("our own capture reads back"), got);
});
