//! `linerate demo` (what `make demo` runs): every capability has its row, every row passed,
//! and the tour is short; a step that fails shows FAILED and makes the demo exit non-zero.

mod common;

use common::{Scratch, BIN};
use std::process::Command;
use std::time::{Duration, Instant};

/// The rows the tour must show, one per capability.
const ROWS: [&str; 18] = [
    "ARP:",
    "ICMP echo:",
    "UDP echo:",
    "UDP over an impaired link",
    "ICMP port unreachable",
    "Raw Ethernet",
    "Robustness:",
    "TCP: 20 MB",
    "TCP: 10,000 concurrent connections",
    "RDMA writes over an impaired link",
    "RDMA: 64 senders",
    "Middlebox: forwarding",
    "Firewall:",
    "IDS:",
    "SPN:",
    "Collectives: all-reduce",
    "K-Means:",
    "pcap capture",
];

#[test]
fn demo_shows_every_capability_and_each_passes() {
    let _serial = common::serial();
    let t = Scratch::new("demo");
    let pcap = t.file("demo.pcap");
    let start = Instant::now();
    let o = Command::new(BIN).args(["demo", "--pcap", &pcap]).output().unwrap();
    let took = start.elapsed();
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "the demo failed");
    assert!(!out.contains("FAILED"), "a step failed");
    // Narrow text: no line wider than 100 columns (full rows are in --json).
    let widest = out.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(widest <= 100, "a {widest}-column line");
    for row in ROWS {
        let at = out.lines().position(|l| l.starts_with(row)).unwrap_or_else(|| panic!("no row {row:?}"));
        // Every row says what it checked, in words (no Rust debug text), on the lines after it.
        let said = out.lines().nth(at + 1).unwrap_or("");
        assert!(said.starts_with("    ") && said.len() > 20, "{row}: {said:?}");
        assert!(!said.contains("Some(") && !said.contains("Ok("), "{said}");
    }
    // The phrases may wrap: look for them in the text with its line breaks as spaces.
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("exactly the 40 planted attacks"), "IDS row");
    assert!(out.contains("exactly as a plain scan says"), "firewall row");
    assert!(out.contains("equal the local evaluator"), "SPN row");
    assert!(out.contains("every rank holds the exact sum"), "all-reduce row");
    assert!(out.contains("equal a single-process run bit for bit"), "K-Means row");
    assert!(took < Duration::from_secs(60), "the demo took {took:?}");
}

#[test]
fn a_failing_step_shows_failed_and_the_demo_exits_non_zero() {
    let _serial = common::serial();
    // The capture cannot be written: that step fails, the others still run.
    let o = Command::new(BIN).args(["demo", "--pcap", "/nonexistent-dir/x.pcap"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    let line = out.lines().find(|l| l.starts_with("pcap capture")).expect("the pcap row");
    assert!(line.contains("FAILED"), "{line}");
    assert!(out.lines().any(|l| l.starts_with("K-Means:") && !l.contains("FAILED")), "{out}");
}

#[test]
fn demo_json_carries_each_figure_as_a_number_with_its_unit() {
    let _serial = common::serial();
    let t = Scratch::new("demo-json");
    let pcap = t.file("demo.pcap");
    let o = Command::new(BIN).args(["demo", "--json", "--pcap", &pcap]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    let rows = doc["tables"][0]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), ROWS.len(), "{doc}");
    let mut measured = 0;
    for r in rows {
        let what = r["capability"].as_str().expect("capability");
        assert!(r["result"].as_str().is_some_and(|s| !s.is_empty()), "{what}: a result in words");
        match &r["measured"] {
            serde_json::Value::Number(n) => {
                assert!(n.as_f64().is_some_and(|v| v.is_finite() && v >= 0.0), "{what}: {n}");
                assert!(r["unit"].as_str().is_some_and(|u| !u.is_empty()), "{what}: a number carries its unit");
                measured += 1;
            }
            serde_json::Value::Null => {}
            other => panic!("{what}: the figure is {other}, not a number"),
        }
    }
    assert!(measured >= ROWS.len() - 1, "every step but the raw-frame check measures a figure");
}
