//! What the interop tests share: deciding whether they can run (root, tools), running
//! `linerate tap` with a script in its namespace, and scratch directories.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The linerate command under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_linerate");
/// The firewall blacklist the repository carries.
pub const BLACKLIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/firewall/drop-prefixes.txt");
/// The Snort 3 community rules the repository carries.
pub const RULES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ids/snort3-community.rules");

/// The linerate host's address in `linerate tap`'s default set-up.
pub const HOST: &str = "10.77.0.2";
/// The Linux side's address.
pub const LINUX: &str = "10.77.0.1";

/// Why these tests cannot run here, or None.
pub fn unavailable(tools: &[&str]) -> Option<String> {
    if let Some(why) = testbed::netns_unavailable() {
        return Some(why);
    }
    for t in tools {
        let found = Command::new("sh").args(["-c", &format!("command -v {t}")]).output().map(|o| o.status.success());
        if !matches!(found, Ok(true)) {
            return Some(format!("the tool `{t}` is not installed (make setup installs it)"));
        }
    }
    None
}

/// True if the test can run; otherwise it fails saying why (a test that cannot run is never
/// a pass, whoever runs it).
pub fn can_run(tools: &[&str]) -> bool {
    skip_unless(unavailable(tools))
}

/// True if `why` is None; otherwise the test fails with the reason.
pub fn skip_unless(why: Option<String>) -> bool {
    match why {
        None => true,
        Some(why) => panic!("NOT RUN: {why} (run `make test` as root)"),
    }
}

/// Hold while a test runs so that the tests of one binary run one at a time: on two cores,
/// concurrent 200 MB transfers would starve each other (and a starved host makes Linux
/// retransmit in what should be a clean capture).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Run `linerate tap` with `extra` flags and `script` as its --run command; stdout and stderr
/// are printed (cargo shows them for failing tests). A run that succeeded must end with the
/// receive accounting identity holding (`linerate tap` prints it, and fails if it does not).
pub fn tap_run(script: &str, extra: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_linerate"))
        .arg("tap")
        .args(extra)
        .args(["--run", script])
        .output()
        .expect("linerate runs");
    eprintln!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        assert_accounting_line(&out.stderr);
    }
    out
}

/// Check the receive accounting line `linerate tap` (or `stats`) printed on stderr says the
/// identity holds.
pub fn assert_accounting_line(stderr: &[u8]) {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().find(|l| l.contains("receive accounting: rx_frames")).unwrap_or_else(|| {
        panic!("no receive accounting line in the output: {text}");
    });
    assert!(line.ends_with("(holds)"), "{line}");
}

/// The final counters `linerate tap --json` printed, by name (stdout holds the JSON alone:
/// the --run command's output goes to stderr).
pub fn counters(stdout: &[u8]) -> std::collections::HashMap<String, u64> {
    let text = String::from_utf8_lossy(stdout);
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("stdout is one JSON document");
    let mut out = std::collections::HashMap::new();
    for row in v["tables"][0]["rows"].as_array().expect("rows") {
        let name = row["counter"].as_str().unwrap_or_default().to_string();
        let value = row["value"].as_u64().unwrap_or_else(|| panic!("a counter is a number: {row}"));
        out.insert(name, value);
    }
    out
}

/// Every counter's total from `linerate host --json` (a `counter`/`total` table, one column
/// per shard beside the total).
pub fn host_totals(stdout: &[u8]) -> std::collections::HashMap<String, u64> {
    let v: serde_json::Value = serde_json::from_slice(stdout).expect("the host prints JSON");
    let rows = v.pointer("/tables/0/rows").and_then(|r| r.as_array()).cloned().unwrap_or_default();
    rows.iter().filter_map(|r| Some((r.get("counter")?.as_str()?.to_string(), r.get("total")?.as_u64()?))).collect()
}

/// Assert `rx_frames = rx_delivered + Σ rx_drop_*` on counters read by name.
pub fn assert_rx_accounting(c: &std::collections::HashMap<String, u64>) {
    let acc = net::RxAccounting::from_named(c.iter().map(|(k, v)| (k.as_str(), *v)));
    if let Err(e) = acc.check() {
        panic!("{e}: {c:?}");
    }
}

/// A scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh directory for test `name`.
    pub fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("linerate-interop-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// A path inside, as a string for scripts.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }

    /// A path inside.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The SHA-256 and length of a file (0 bytes if it is missing).
pub fn sha256_file(path: &str) -> (String, u64) {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let Ok(mut f) = std::fs::File::open(Path::new(path)) else { return (String::new(), 0) };
    let (mut h, mut buf, mut len) = (Sha256::new(), vec![0u8; 1 << 20], 0u64);
    loop {
        match f.read(&mut buf).unwrap() {
            0 => break,
            n => {
                h.update(&buf[..n]);
                len += n as u64;
            }
        }
    }
    (format!("{:x}", h.finalize()), len)
}

/// The venv's Python (with scapy), or why it is missing.
pub fn venv_python() -> Result<String, String> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    if p.exists() {
        Ok(p.to_string_lossy().into_owned())
    } else {
        Err(format!("{} is missing (make setup creates it)", p.display()))
    }
}

/// The hostile-frame generator the interop tests run with the venv's Python
/// (`hostile_frames.py syn-flood|mutate ...`, see its docstring).
pub const HOSTILE_FRAMES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/hostile_frames.py");

/// The 32 hostile cases of issue 25 (`hostile_cases.py IFACE HOST_MAC HOST_IP`, see its
/// docstring), run with the venv's Python in the namespace of the host's link.
pub const HOSTILE_CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/hostile_cases.py");

/// The hostile IPv6 cases of issue 27 (`hostile_cases6.py IFACE HOST_MAC HOST_IP6`, see its
/// docstring), run like [`HOSTILE_CASES`].
pub const HOSTILE_CASES6: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/hostile_cases6.py");
