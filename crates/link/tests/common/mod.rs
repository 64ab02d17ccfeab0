//! Helpers for the integration tests: privilege checks, namespaces and child processes that
//! are always cleaned up.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// True if the test can run; otherwise it fails saying why (never a silent pass).
pub fn can_run_as_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let reason = if unsafe { libc::geteuid() } != 0 {
        Some("needs root (network namespaces, TAP, AF_PACKET)".to_string())
    } else if Command::new("ip").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        Some("the `ip` command (iproute2) is not installed".to_string())
    } else {
        None
    };
    match reason {
        None => true,
        Some(r) => panic!("NOT RUN: {test}: {r} (run `make test` as root)"),
    }
}

/// True if `tool` can be executed.
pub fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Run `ip` with `args`; Err carries the command and its stderr.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!("ip {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// A network namespace this test created; deleted on drop (also when the test panics).
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn new() -> Netns {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!("lrt-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        ip(&["netns", "add", &name]).unwrap();
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]).unwrap();
        ns
    }

    /// `ip -n <ns> args...`
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Start `cmd args...` inside the namespace; killed and reaped on drop.
    pub fn spawn(&self, cmd: &str, args: &[&str]) -> ChildGuard {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.name, cmd])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ChildGuard(child)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("cleanup: {e}");
        }
    }
}

/// A child process killed and reaped on drop.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Poll `f` until it returns true or `limit` passes; returns whether it succeeded.
pub fn poll_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

/// The local experimental EtherType of the test frames.
pub const ETHERTYPE: [u8; 2] = [0x88, 0xb5];

/// Test frame `seq`: 60..1514 bytes, the sequence number after the header, then a pattern.
pub fn frame(seq: u32) -> Vec<u8> {
    let len = 60 + (seq as usize * 37) % 1455;
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xbb]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xaa]);
    f[12..14].copy_from_slice(&ETHERTYPE);
    f[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[18..].iter_mut().enumerate() {
        *b = (seq as usize + i) as u8;
    }
    f
}
