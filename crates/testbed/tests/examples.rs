//! The repository's Rust application example (`examples/tcp_upper.rs`) builds with the tests
//! (cargo builds a crate's examples for `cargo test`) and runs to its expected transcript.

use std::process::Command;

#[test]
fn tcp_upper_example_runs_and_answers_in_upper_case() {
    // Test binaries live in target/<profile>/deps, examples in target/<profile>/examples.
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().unwrap().parent().unwrap().join("examples").join("tcp_upper");
    assert!(bin.exists(), "{} was not built with the tests", bin.display());
    let out = Command::new(&bin).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}: {stdout}{}", bin.display(), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("HELLO\nLINERATE SPEAKS TCP\nBYE\n"), "{stdout}");
    assert!(stdout.contains("30 bytes each way over linerate TCP"), "{stdout}");
}
