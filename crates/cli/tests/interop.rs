//! Interop with the real Linux stack: `linerate tap` puts a linerate host on a TAP device in a
//! namespace of its own, and Linux tools inside that namespace talk to it. Needs root; without
//! it each test says why and fails under CI (CI=true), where it must run.

mod common;

use common::{can_run, tap_run, HOST};
use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-interop-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn linux_ping_gets_100_of_100_replies() {
    if !can_run(&["ping"]) {
        return;
    }
    let out = tap_run(&format!("ping -c 100 -i 0.01 -W 1 {HOST}"), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ping failed");
    assert!(text.contains("100 packets transmitted, 100 received"), "{text}");
}

#[test]
fn arping_resolves_the_mac() {
    if !can_run(&["arping"]) {
        return;
    }
    let out = tap_run(&format!("arping -c 3 -i lrtap0 {HOST}"), &[]);
    let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(out.status.success(), "arping failed");
    // The host's MAC is derived from its address: 02:00:0a:4d:00:02.
    assert!(text.contains("02:00:0a:4d:00:02"), "{text}");
    assert!(text.contains("3 packets received") || text.matches("from").count() >= 3, "{text}");
}

#[test]
fn ten_megabytes_through_socat_udp_echo_keep_their_sha256() {
    if !can_run(&["socat", "sha256sum"]) {
        return;
    }
    let dir = scratch("socat");
    let (input, output) = (dir.join("in"), dir.join("out"));
    // UDP has no flow control and socat sends as fast as it reads its input, so the echoes
    // come back faster than socat drains its socket: its receive buffer is raised with
    // SO_RCVBUFFORCE (SOL_SOCKET=1, option 33) on socat's own socket, no system setting.
    let script = format!(
        "head -c 10000000 /dev/urandom > {i} && socat -b1400 -t 3 -T 10 - UDP:{HOST}:7,setsockopt-int=1:33:33554432 < {i} > {o}",
        i = input.display(),
        o = output.display()
    );
    let out = tap_run(&script, &[]);
    assert!(out.status.success(), "socat failed");
    let sum = |p: &PathBuf| {
        let o = Command::new("sha256sum").arg(p).output().unwrap();
        String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap_or("").to_string()
    };
    let (a, b) = (sum(&input), sum(&output));
    let sizes = (std::fs::metadata(&input).unwrap().len(), std::fs::metadata(&output).map(|m| m.len()).unwrap_or(0));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(sizes.0, 10_000_000);
    assert_eq!(a, b, "sha256 differs; bytes in/out = {sizes:?}");
}

#[test]
fn pcapng_decodes_in_tshark_without_malformed_packets_or_bad_checksums_at_wall_clock_time() {
    if !can_run(&["tshark", "ping", "socat"]) {
        return;
    }
    let dir = scratch("pcap");
    let pcap = dir.join("host.pcapng");
    let started = std::time::SystemTime::now();
    let script = format!(
        "ping -c 5 -i 0.01 {HOST} && echo hello | socat -t 1 - UDP:{HOST}:7 && echo x | socat - UDP:{HOST}:9 ; true"
    );
    let out = tap_run(&script, &["--pcap", pcap.to_str().unwrap()]);
    assert!(out.status.success());
    let tshark = |filter: &str| -> String {
        let o = Command::new("tshark")
            .args(["-n", "-r", pcap.to_str().unwrap()])
            .args(["-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"])
            .args(["-Y", filter])
            .output()
            .expect("tshark runs");
        assert!(o.status.success(), "tshark failed: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let all = tshark("frame");
    eprintln!("{all}");
    assert!(all.lines().count() >= 14, "expected ARP, 5 pings, echo, port unreachable; got:\n{all}");
    for proto in ["arp", "icmp.type == 0", "icmp.type == 3", "udp"] {
        assert!(!tshark(proto).is_empty(), "no {proto} in the capture");
    }
    let bad = tshark("_ws.malformed || _ws.expert.severity >= \"error\" || ip.checksum.status == \"Bad\" || udp.checksum.status == \"Bad\" || icmp.checksum.status == \"Bad\"");
    // A live capture is stamped with the wall-clock time (not time since boot).
    let cap = link::capture::open_capture(&pcap).expect("our capture reads back");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(bad.is_empty(), "malformed or bad-checksum packets:\n{bad}");
    assert_eq!(cap.format, link::capture::Format::PcapNg);
    let epoch = |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let (from, to) = (epoch(started) - 1_000_000_000, epoch(std::time::SystemTime::now()) + 1_000_000_000);
    for r in cap.records() {
        assert!((from..to).contains(&r.stamp), "packet stamped {} ns, outside the run {from}..{to}", r.stamp);
    }
}

#[test]
fn tap_capture_to_stdout_is_a_pcap_tshark_reads_and_the_run_output_goes_to_stderr() {
    if !can_run(&["tshark", "ping"]) {
        return;
    }
    let dir = scratch("pcap-stdout");
    let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["tap", "--pcap", "-", "--pcap-format", "pcapng", "--run", &format!("ping -c 3 -i 0.01 {HOST}")])
        .output()
        .expect("linerate runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("3 received"), "ping's output goes to stderr: {stderr}");
    let cap = dir.join("stdout.pcapng");
    std::fs::write(&cap, &out.stdout).unwrap();
    let parsed = link::capture::open_capture(&cap).expect("standard output holds a capture");
    let o = Command::new("tshark").args(["-n", "-r", cap.to_str().unwrap(), "-Y", "icmp.type == 0"]).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(parsed.format, link::capture::Format::PcapNg);
    assert!(parsed.warning().is_none(), "{:?}", parsed.warning());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3, "three echo replies in the capture");
}
