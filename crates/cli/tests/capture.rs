//! Captures through the middlebox commands: pcapng and pcap in and out, `-` for standard
//! input and output, a truncated input processed up to the cut with `--keep-going`, input timestamps kept on the
//! output, and the Wireshark tools on both sides (editcap writes pcapng we read, tshark reads
//! the pcapng we write).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use link::capture::{open_capture, Format};

use common::{Scratch as Tmp, BIN, BLACKLIST, RULES};

/// Run linerate with `stdin` on its standard input; (success, stdout bytes, stderr).
fn run(args: &[&str], stdin: Option<&[u8]>) -> (bool, Vec<u8>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(data) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    let o = child.wait_with_output().unwrap();
    (o.status.success(), o.stdout, String::from_utf8_lossy(&o.stderr).into())
}

/// A test trace of the IDS generator (TCP conversations with attacks) at `path`.
fn trace(t: &Tmp, name: &str) -> PathBuf {
    let p = t.path(name);
    let (ok, _, err) = run(
        &["ids", "--rules", RULES, "--make-trace", p.to_str().unwrap(), "--background", "60", "--attacks", "12"],
        None,
    );
    assert!(ok, "make-trace: {err}");
    p
}

/// (stamp, frame) of every packet, sorted (units may reorder packets of different flows).
fn packets(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let c = open_capture(path).unwrap();
    let mut v: Vec<_> = c.records().iter().map(|r| (r.stamp, c.frame(r).to_vec())).collect();
    v.sort();
    v
}

fn need_tool(tool: &str) {
    let ok = Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    assert!(ok, "NOT RUN: {tool} is not installed (make setup installs it)");
}

#[test]
fn firewall_keeps_input_timestamps_from_pcap_to_pcapng_and_tshark_reads_it() {
    need_tool("tshark");
    let t = Tmp::new("fw");
    let input = trace(&t, "in.pcap");
    let out = t.file("out.pcapng");
    let (ok, stdout, err) =
        run(&["firewall", "--blacklist", BLACKLIST, "--input", input.to_str().unwrap(), "--output", &out], None);
    assert!(ok, "{err}");
    assert!(String::from_utf8_lossy(&stdout).contains("frames processed"));
    assert_eq!(open_capture(Path::new(&out)).unwrap().format, Format::PcapNg);
    let (a, b) = (packets(&input), packets(Path::new(&out)));
    assert!(a.len() > 100);
    assert_eq!(a, b, "every frame passes the firewall with its input timestamp");
    // tshark sees the same frames at the same times (to the nanosecond).
    let o = Command::new("tshark").args(["-r", &out, "-T", "fields", "-e", "frame.time_epoch"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut times: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
    times.sort();
    let mut want: Vec<String> =
        a.iter().map(|(s, _)| format!("{}.{:09}", s / 1_000_000_000, s % 1_000_000_000)).collect();
    want.sort();
    assert_eq!(times, want);
    assert!(want[0].starts_with("1767225600."), "the trace starts on 2026-01-01: {}", want[0]);
}

#[test]
fn stdin_to_stdout_with_an_editcap_pcapng_input_and_a_pcap_output() {
    need_tool("editcap");
    let t = Tmp::new("stdio");
    let input = trace(&t, "in.pcap");
    let ng = t.path("in.pcapng");
    let o = Command::new("editcap").args(["-F", "pcapng"]).arg(&input).arg(&ng).output().unwrap();
    assert!(o.status.success(), "editcap: {}", String::from_utf8_lossy(&o.stderr));
    let data = std::fs::read(&ng).unwrap();
    let (ok, stdout, err) = run(
        &["firewall", "--blacklist", BLACKLIST, "--input", "-", "--output", "-", "--output-format", "pcap"],
        Some(&data),
    );
    assert!(ok, "{err}");
    assert!(err.contains("frames processed"), "the report goes to stderr when the capture takes stdout: {err}");
    let got = t.path("got.pcap");
    std::fs::write(&got, &stdout).unwrap();
    assert_eq!(open_capture(&got).unwrap().format, Format::Pcap);
    assert_eq!(packets(&got), packets(&input));
}

#[test]
fn a_truncated_input_with_keep_going_is_processed_up_to_the_cut_with_a_warning() {
    let t = Tmp::new("cut");
    let input = trace(&t, "in.pcap");
    let all = open_capture(&input).unwrap().len();
    let len = std::fs::metadata(&input).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&input).unwrap().set_len(len - 10).unwrap();
    let out = t.file("out.pcap");
    let (ok, stdout, err) = run(
        &["firewall", "--blacklist", BLACKLIST, "--input", input.to_str().unwrap(), "--output", &out, "--keep-going"],
        None,
    );
    assert!(ok, "a cut capture is not refused with --keep-going: {err}");
    assert!(err.contains("warning") && err.contains(&format!("packet {all}")), "{err}");
    let report = String::from_utf8_lossy(&stdout);
    let row = report.lines().find(|l| l.starts_with("port 0") && l.contains("rx_frames")).unwrap();
    assert!(row.ends_with(&format!(" {}", all - 1)), "{row}");
    assert_eq!(open_capture(Path::new(&out)).unwrap().len(), all - 1);
}

#[test]
fn ids_matched_packets_keep_their_capture_time() {
    let t = Tmp::new("ids");
    let input = trace(&t, "in.pcapng");
    assert_eq!(open_capture(&input).unwrap().format, Format::PcapNg, "--make-trace honours .pcapng");
    let matched = t.file("matched.pcapng");
    let (ok, _, err) = run(&["ids", "--rules", RULES, "--input", input.to_str().unwrap(), "--matched", &matched], None);
    assert!(ok, "{err}");
    let m = packets(Path::new(&matched));
    assert!(!m.is_empty());
    let all = packets(&input);
    for p in &m {
        assert!(all.binary_search(p).is_ok(), "a matched packet with a stamp not in the input: {}", p.0);
    }
}

#[test]
fn bad_capture_inputs_are_one_clear_sentence() {
    let t = Tmp::new("bad");
    let junk = t.path("junk.pcapng");
    std::fs::write(&junk, b"definitely not a capture").unwrap();
    let (ok, _, err) = run(&["firewall", "--blacklist", BLACKLIST, "--input", junk.to_str().unwrap()], None);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("junk.pcapng") && err.contains("not a pcap or pcapng file"), "{err}");
    let (ok, _, err) = run(&["firewall", "--blacklist", BLACKLIST, "--input", "-"], Some(b""));
    assert!(!ok);
    assert!(err.contains("standard input"), "{err}");
}
