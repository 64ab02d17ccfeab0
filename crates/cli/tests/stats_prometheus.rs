//! `linerate stats --prometheus`: the counters of the running instances as OpenMetrics text.

mod common;

use common::{Scratch, BIN};
use std::process::Command;

#[test]
fn stats_prints_openmetrics_text() {
    let dir = Scratch::new("stats-om");
    // An instance entry as a running command publishes it (this test's process is alive).
    let doc = serde_json::json!({
        "name": "om-test", "command": "tap", "pid": std::process::id(), "namespaces": [],
        "counters": { "rx_frames": 7, "rx_delivered": 5, "rx_drop_bad_checksum": 2, "tx_frames": 0 },
    });
    std::fs::write(dir.path("om-test.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = Command::new(BIN)
        .args(["stats", "--prometheus"])
        .env("LINERATE_RUN_DIR", &dir.0)
        .output()
        .expect("linerate runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let pid = std::process::id();
    let labels = format!("{{instance=\"om-test\",command=\"tap\",pid=\"{pid}\"}}");
    for (metric, v) in [("rx_frames", 7), ("rx_delivered", 5), ("rx_drop_bad_checksum", 2), ("tx_frames", 0)] {
        assert!(text.contains(&format!("# TYPE linerate_{metric} unknown\n")), "{text}");
        assert!(text.lines().any(|l| l == format!("linerate_{metric}{labels} {v}")), "{metric}: {text}");
    }
    assert!(text.ends_with("# EOF\n"), "{text}");
    // Every line is a comment or `name{labels} value`.
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, rest) = l.split_once('{').unwrap_or_else(|| panic!("no labels: {l}"));
        assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{l}");
        assert!(rest.rsplit_once("} ").is_some_and(|(_, v)| v.parse::<u64>().is_ok()), "{l}");
    }
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// `curl` the URL: (HTTP status, body); status 0 if nothing answered.
fn curl(url: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "5", "-o", "-", "-w", "\n%{http_code}", url])
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// Kills and reaps a child on drop.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Removes, when dropped, the shared-memory segments `/dev/shm/linerate-PREFIX…SUFFIX` that
/// killed processes could not remove themselves.
struct ShmSegments(String, String);

impl Drop for ShmSegments {
    fn drop(&mut self) {
        let Ok(dir) = std::fs::read_dir("/dev/shm") else { return };
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(rest) = name.strip_prefix("linerate-") {
                if rest.starts_with(&self.0) && rest.ends_with(&self.1) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

#[test]
fn metrics_port_serves_the_counters_to_curl() {
    if !common::can_run(&["curl"]) {
        return;
    }
    let dir = Scratch::new("metrics-port");
    let pid = std::process::id();
    // The servers are killed: their shared-memory links are removed here, also on failure.
    let _segments = ShmSegments("lr26-metrics-".to_string(), format!("-{pid}"));
    let blacklist = common::BLACKLIST;
    let (host_shm, fw_shm) = (format!("shm:lr26-metrics-{pid}"), format!("shm-new:lr26-metrics-fw-{pid}"));
    let fw_name = format!("lr26-metrics-fw-{pid}");
    let (iperf3_shm, rdma_shm) = (format!("shm:lr26-metrics-ip3-{pid}"), format!("shm:lr26-metrics-rdma-{pid}"));
    let cases: [(&str, Vec<&str>); 4] = [
        ("host", vec!["host", "--link", &host_shm, "--ip", "10.0.0.2/24", "-t", "20s"]),
        (
            "firewall",
            vec!["firewall", "--blacklist", blacklist, "--input", &fw_shm, "--duration", "20s", "--name", &fw_name],
        ),
        // The long-running servers: iperf3's and the RDMA node's.
        ("iperf3 -s", vec!["iperf3", "-s", "--link", &iperf3_shm, "--duration", "20s"]),
        ("rdma serve", vec!["rdma", "serve", "--link", &rdma_shm, "--region", "64KiB", "--limit", "20s"]),
    ];
    for (command, args) in cases {
        let port = free_port();
        let child = Command::new(BIN)
            .args(&args)
            .args(["--metrics-port", &port.to_string()])
            .env("LINERATE_RUN_DIR", &dir.0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("linerate starts");
        let child = Killed(child);
        let url = format!("http://127.0.0.1:{port}/metrics");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let mut last = (0, String::new());
        // Wait until the endpoint answers with this process's counters.
        while std::time::Instant::now() < deadline {
            last = curl(&url);
            if last.0 == 200 && last.1.contains(&format!("pid=\"{}\"", child.0.id())) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let (code, body) = last;
        assert_eq!(code, 200, "{command}: {body}");
        assert!(body.contains(&format!("command=\"{command}\"")), "{command}: {body}");
        assert!(body.lines().any(|l| l.starts_with("# TYPE linerate_")), "{command}: {body}");
        assert!(body.ends_with("# EOF\n"), "{command}: {body}");
        let (other, _) = curl(&format!("http://127.0.0.1:{port}/nothing"));
        assert_eq!(other, 404, "{command}: another path");
    }
    // A port that is taken is refused with one sentence.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = Command::new(BIN)
        .args(["host", "--link", &format!("shm:lr26-metrics-taken-{pid}"), "--ip", "10.0.0.2/24", "-t", "1s"])
        .args(["--metrics-port", &port])
        .env("LINERATE_RUN_DIR", &dir.0)
        .output()
        .expect("linerate runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(&format!("--metrics-port {port}: cannot listen")), "{err}");
}
