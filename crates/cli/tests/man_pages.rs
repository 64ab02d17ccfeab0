//! `linerate man DIR`: a man page per visible command, generated from the command-line
//! definition (clap_mangen), which `man -l` renders.

mod common;

use common::{Scratch, BIN};
use std::process::Command;

#[test]
fn a_man_page_per_command_that_man_renders() {
    if !common::can_run(&["man"]) {
        return;
    }
    let dir = Scratch::new("man-pages");
    let out = Command::new(BIN).args(["man", dir.0.to_str().unwrap()]).output().expect("linerate runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut pages: Vec<String> =
        std::fs::read_dir(&dir.0).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    pages.sort();
    for want in ["linerate.1", "linerate-ping.1", "linerate-bench-link.1", "linerate-spn-serve.1", "linerate-man.1"] {
        assert!(pages.iter().any(|p| p == want), "{want} missing from {pages:?}");
    }
    assert!(pages.len() >= 30, "{pages:?}");
    assert!(!pages.iter().any(|p| p.contains("bench-peer")), "hidden commands get no page: {pages:?}");
    for p in &pages {
        let text = std::fs::read_to_string(dir.path(p)).unwrap();
        assert!(text.contains(".TH "), "{p} is not a man page");
    }
    // man renders one: its sections and an option with its help text.
    let page = dir.path("linerate-ping.1");
    let out = Command::new("man").arg("-l").arg(&page).env("MANPAGER", "cat").env("MANWIDTH", "100").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "man -l failed: {}", String::from_utf8_lossy(&out.stderr));
    for want in ["NAME", "SYNOPSIS", "OPTIONS", "linerate-ping", "--count", "--json"] {
        assert!(text.contains(want), "{want} missing from the rendered page:\n{text}");
    }
}
