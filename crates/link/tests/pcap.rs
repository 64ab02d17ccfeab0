//! Capture a mem-pair conversation, read it back, and let tshark read it when installed.

use std::process::{Command, Stdio};

use link::pcap::{read_frames, PcapWriter};
use link::{mem, FrameBatch, Instant, Link, LinkConfig};

fn frame(i: u32) -> Vec<u8> {
    let mut f = vec![0u8; 60 + (i as usize * 53) % 1400];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..18].copy_from_slice(&i.to_be_bytes());
    f
}

/// Removes the capture file on drop, also when the test fails.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn capture_round_trips_and_tshark_reads_it() {
    let path = std::env::temp_dir().join(format!("linerate-it-{}.pcap", std::process::id()));
    let _cleanup = RemoveOnDrop(path.clone());
    let (a, mut b) = mem::pair(LinkConfig::default().depth(64));
    let mut w = PcapWriter::new(a, &path).unwrap();
    let mut tx = FrameBatch::new(16, 1518);
    let mut rx = FrameBatch::new(64, 1518);
    let mut expect = Vec::new();
    for round in 0..50u32 {
        for k in 0..16 {
            tx.push(&frame(round * 16 + k));
        }
        let now = Instant::from_micros(round as u64 * 100);
        while !tx.is_empty() {
            w.tx_batch(now, &mut tx).unwrap();
            rx.clear();
            b.rx_batch(now, &mut rx).unwrap();
        }
        expect.extend((0..16).map(|k| frame(round * 16 + k)));
        // And one frame the other way, captured on receive.
        let mut back = FrameBatch::new(1, 1518);
        back.push(&frame(100_000 + round));
        b.tx_batch(now, &mut back).unwrap();
        rx.clear();
        assert_eq!(w.rx_batch(now, &mut rx).unwrap(), 1);
        expect.push(frame(100_000 + round));
    }
    w.flush().unwrap();
    drop(w);
    let got = read_frames(&path).unwrap();
    assert_eq!(got.len(), expect.len());
    assert!(got == expect, "captured frames differ from the frames moved");

    // A check that cannot run fails and says why (make setup installs tshark).
    let have_tshark = Command::new("tshark").arg("--version").stdout(Stdio::null()).status().is_ok();
    assert!(have_tshark, "NOT RUN: tshark is not installed, so the capture cannot be checked (make setup installs it)");
    let out = Command::new("tshark").arg("-r").arg(&path).output().unwrap();
    assert!(out.status.success(), "tshark -r failed: {}", String::from_utf8_lossy(&out.stderr));
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(lines, expect.len(), "tshark saw a different number of frames");
}
