//! The repository's middlebox program example (`examples/ttl_guard.rs`) builds with the tests
//! (cargo builds a crate's examples for `cargo test`) and runs to its expected counts.

use std::process::Command;

#[test]
fn ttl_guard_example_runs_and_reports_its_counts() {
    // Test binaries live in target/<profile>/deps, examples in target/<profile>/examples.
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples").join("ttl_guard");
    assert!(bin.exists(), "{} was not built with the tests", bin.display());
    let out = Command::new(&bin).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}: {stdout}{}", bin.display(), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("forwarded to port 1 with TTL 63:   1600 of 1600"), "{stdout}");
    assert!(stdout.contains("DNS queries to the host:           100"), "{stdout}");
    assert!(stdout.contains("ttl_expired=100") && stdout.contains("truncated=100"), "{stdout}");
}
