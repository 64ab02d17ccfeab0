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
            assert!(tx.push(&frame(round * 16 + k)));
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
        assert!(back.push(&frame(100_000 + round)));
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

/// Fail (never skip) when a Wireshark tool is missing.
fn need_tool(tool: &str) {
    let ok = Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    assert!(ok, "NOT RUN: {tool} is not installed, so the capture cannot be checked (make setup installs it)");
}

/// Run a tool, panicking with its stderr when it fails; returns its stdout.
fn tool(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `n` frames stamped a millisecond apart from a date in 2026 (plus odd nanoseconds), written
/// through a `PcapWriter` to `path`; returns the (stamp, frame) pairs.
fn write_stamped(path: &std::path::Path, n: u32) -> Vec<(u64, Vec<u8>)> {
    // The peer stays alive (a mem link whose peer is gone reports Closed) and holds every frame.
    let (a, _peer) = mem::pair(LinkConfig::default().depth(64));
    let mut w = PcapWriter::new(a, path).unwrap();
    let mut expect = Vec::new();
    for i in 0..n {
        let stamp = 1_780_000_000_000_000_000 + u64::from(i) * 1_000_000 + u64::from(i) * 7;
        let mut b = FrameBatch::new(1, 1518);
        assert!(b.push_stamped(&frame(i), stamp));
        w.tx_batch(Instant::ZERO, &mut b).unwrap();
        expect.push((stamp, frame(i)));
    }
    w.flush().unwrap();
    expect
}

fn read_stamped(path: &std::path::Path) -> Vec<(u64, Vec<u8>)> {
    let c = link::capture::open_capture(path).unwrap();
    assert!(c.warning().is_none(), "{:?}", c.warning());
    c.records().iter().map(|r| (r.stamp, c.frame(r).to_vec())).collect()
}

#[test]
fn tshark_reads_our_pcapng_with_its_timestamps() {
    need_tool("tshark");
    let path = std::env::temp_dir().join(format!("linerate-it-{}.pcapng", std::process::id()));
    let _cleanup = RemoveOnDrop(path.clone());
    let expect = write_stamped(&path, 40);
    let info = tool(Command::new("capinfos").arg("-t").arg(&path));
    assert!(info.contains("pcapng"), "capinfos: {info}");
    let out = tool(Command::new("tshark").arg("-r").arg(&path).args([
        "-T",
        "fields",
        "-e",
        "frame.time_epoch",
        "-e",
        "frame.len",
    ]));
    let rows: Vec<(String, usize)> = out
        .lines()
        .map(|l| {
            let (t, len) = l.split_once('\t').unwrap();
            (t.to_string(), len.parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), expect.len(), "tshark saw a different number of frames");
    for ((t, len), (stamp, f)) in rows.iter().zip(&expect) {
        assert_eq!(*len, f.len());
        let want = format!("{}.{:09}", stamp / 1_000_000_000, stamp % 1_000_000_000);
        assert_eq!(t, &want, "tshark's timestamp");
    }
}

#[test]
fn pcapng_made_by_editcap_reads_back_exactly_at_nano_and_microsecond_resolution() {
    need_tool("editcap");
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    let ours = dir.join(format!("linerate-it-{pid}-ours.pcap"));
    let ng = dir.join(format!("linerate-it-{pid}-editcap.pcapng"));
    let usec = dir.join(format!("linerate-it-{pid}-usec.pcap"));
    let ng_usec = dir.join(format!("linerate-it-{pid}-usec.pcapng"));
    let _c = [
        RemoveOnDrop(ours.clone()),
        RemoveOnDrop(ng.clone()),
        RemoveOnDrop(usec.clone()),
        RemoveOnDrop(ng_usec.clone()),
    ];
    let expect = write_stamped(&ours, 25);
    // Nanosecond pcap -> pcapng (Wireshark writes if_tsresol 9).
    tool(Command::new("editcap").args(["-F", "pcapng"]).arg(&ours).arg(&ng));
    assert_eq!(link::capture::open_capture(&ng).unwrap().format, link::capture::Format::PcapNg);
    assert_eq!(read_stamped(&ng), expect);
    // Microsecond pcap (editcap's "pcap") -> pcapng with microsecond interfaces: if_tsresol 6.
    tool(Command::new("editcap").args(["-F", "pcap"]).arg(&ours).arg(&usec));
    tool(Command::new("editcap").args(["-F", "pcapng"]).arg(&usec).arg(&ng_usec));
    let micro: Vec<(u64, Vec<u8>)> = expect.iter().map(|(t, f)| (t / 1000 * 1000, f.clone())).collect();
    assert_eq!(read_stamped(&usec), micro, "microsecond pcap");
    assert_eq!(read_stamped(&ng_usec), micro, "microsecond pcapng");
}

#[test]
fn a_capture_cut_mid_record_replays_up_to_the_cut_with_a_warning() {
    let dir = std::env::temp_dir();
    for name in ["cut.pcap", "cut.pcapng"] {
        let path = dir.join(format!("linerate-it-{}-{name}", std::process::id()));
        let _cleanup = RemoveOnDrop(path.clone());
        let expect = write_stamped(&path, 10);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 20).unwrap();
        let replay = link::pcap::PcapReplay::open(&path, false).unwrap();
        assert_eq!(replay.total(), 9, "{name}");
        let w = replay.warning().expect("a warning about the cut");
        assert!(w.contains("packet 10") && w.contains("9 complete packets"), "{w}");
        assert_eq!(read_frames(&path).unwrap(), expect[..9].iter().map(|(_, f)| f.clone()).collect::<Vec<_>>());
    }
}
