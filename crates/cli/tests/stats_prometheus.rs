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
