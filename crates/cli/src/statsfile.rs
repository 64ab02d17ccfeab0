//! Live counters of running linerate processes, shared through small JSON files so that
//! `linerate stats` can show them (like Limago's statistics module).
//!
//! Each long-running command (`tap`, `iperf -s`, `spn serve`, `middlebox`, `kmeans` ranks...)
//! writes `<name>.json` into the per-user run directory ([`run_dir`]): its name, command,
//! pid, the pid's start time (so a reused pid is not taken for the instance), the network
//! namespaces it created, and its counters. An entry whose process is gone is dropped by
//! [`read_all`]; its namespaces are removed by `linerate tap --cleanup`.

use serde_json::{json, Value};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The per-user directory holding one `<name>.json` per running instance:
/// `$LINERATE_RUN_DIR` if set, else `$XDG_RUNTIME_DIR/linerate`, else `/tmp/linerate-<uid>`.
pub fn run_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LINERATE_RUN_DIR") {
        return PathBuf::from(d);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d).join("linerate"),
        // SAFETY: getuid has no preconditions and cannot fail.
        None => PathBuf::from(format!("/tmp/linerate-{}", unsafe { libc::getuid() })),
    }
}

/// Create the run directory (mode 0700) if needed and check that it is ours: a directory of
/// another user (say one planted in /tmp) is refused, not written into, and so is a default
/// directory that others can read. (A directory named by `LINERATE_RUN_DIR` is the user's
/// choice: its mode is left as it is.)
pub fn ensure_run_dir() -> std::io::Result<PathBuf> {
    let dir = run_dir();
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    let meta = std::fs::symlink_metadata(&dir)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != uid {
        return Err(std::io::Error::other(format!(
            "{} is not a directory owned by uid {uid}; remove it or set LINERATE_RUN_DIR",
            dir.display()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 && std::env::var_os("LINERATE_RUN_DIR").is_none() {
        return Err(std::io::Error::other(format!(
            "{} is open to other users (mode {mode:o}); make it private with chmod 700 or remove it",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The start time of process `pid` in clock ticks since boot (field 22 of /proc/PID/stat),
/// or None if there is no such process.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// True if process `pid` runs and is the one that started at `started` (clock ticks since
/// boot; None: any process with that pid).
pub fn alive(pid: u32, started: Option<u64>) -> bool {
    if pid == 0 {
        return false;
    }
    match (start_time(pid), started) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(now), Some(then)) => now == then,
    }
}

/// Minimum time between two writes of [`StatsPublisher::publish_every`].
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// Publishes a process's counters periodically; removes its file on drop.
pub struct StatsPublisher {
    path: PathBuf,
    name: String,
    command: String,
    started: Option<u64>,
    namespaces: Vec<String>,
    last: Option<Instant>,
}

impl StatsPublisher {
    /// A publisher for instance `name` of this process, running `command` (e.g. "iperf -s");
    /// writes an entry with no counters at once so the instance is listed from the start.
    pub fn new(name: &str, command: &str) -> std::io::Result<Self> {
        let dir = ensure_run_dir()?;
        let p = StatsPublisher {
            path: dir.join(format!("{name}.json")),
            name: name.into(),
            command: command.into(),
            started: start_time(std::process::id()),
            namespaces: Vec::new(),
            last: None,
        };
        p.publish::<&str>(&[])?;
        tracing::info!(path = %p.path.display(), command, "publishing counters for linerate stats");
        Ok(p)
    }

    /// Record a network namespace this instance created (for `linerate tap --cleanup`).
    pub fn with_namespace(mut self, ns: &str) -> std::io::Result<Self> {
        self.namespaces.push(ns.into());
        self.publish::<&str>(&[])?;
        Ok(self)
    }

    /// Write the current counters (atomically: temp file + rename).
    pub fn publish<K: AsRef<str>>(&self, counters: &[(K, u64)]) -> std::io::Result<()> {
        let map: serde_json::Map<String, Value> =
            counters.iter().map(|(k, v)| (k.as_ref().to_string(), json!(v))).collect();
        let doc = json!({
            "name": self.name,
            "command": self.command,
            "pid": std::process::id(),
            "started": self.started,
            "namespaces": self.namespaces,
            "counters": map,
        });
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&doc)?)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Publish the counters `f` gives if a quarter second has passed since the last write
    /// (call it from a poll loop; errors are ignored, the counters are only informative).
    pub fn publish_every<K: AsRef<str>>(&mut self, f: impl FnOnce() -> Vec<(K, u64)>) {
        if self.last.is_some_and(|t| t.elapsed() < PUBLISH_EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        let _ = self.publish(&f());
    }
}

impl Drop for StatsPublisher {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One instance's entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Where it is stored.
    pub path: PathBuf,
    /// Instance name.
    pub name: String,
    /// The command it runs ("tap", "iperf -s"...).
    pub command: String,
    /// Its process.
    pub pid: u32,
    /// Its process's start time (clock ticks since boot), if recorded.
    pub started: Option<u64>,
    /// Network namespaces it created.
    pub namespaces: Vec<String>,
    /// Its counters by name.
    pub counters: Vec<(String, u64)>,
}

impl Entry {
    /// True if its process still runs (same pid, same start time).
    pub fn alive(&self) -> bool {
        alive(self.pid, self.started)
    }

    fn parse(path: PathBuf, doc: &Value) -> Entry {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
        };
        Entry {
            path,
            name: doc["name"].as_str().unwrap_or("?").to_string(),
            command: doc["command"].as_str().unwrap_or("?").to_string(),
            pid: doc["pid"].as_u64().unwrap_or(0) as u32,
            started: doc["started"].as_u64(),
            namespaces: strings(&doc["namespaces"]),
            counters: doc["counters"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0))).collect())
                .unwrap_or_default(),
        }
    }
}

/// Every entry in the run directory, live or dead, sorted by name.
pub fn entries() -> Vec<Entry> {
    tracing::debug!(dir = %run_dir().display(), "reading the run directory");
    let Ok(dir) = std::fs::read_dir(run_dir()) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let Ok(doc) = serde_json::from_slice::<Value>(&bytes) else { continue };
        out.push(Entry::parse(path, &doc));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The entries of live instances. Entries of dead processes are removed, except those that
/// still name a namespace (left for `linerate tap --cleanup`, which removes both).
pub fn read_all() -> Vec<Entry> {
    let mut live = Vec::new();
    for e in entries() {
        if e.alive() {
            live.push(e);
        } else if !e.namespaces.iter().any(|n| crate::netns_names::netns_exists(n)) {
            tracing::info!(name = %e.name, pid = e.pid, "dropping the entry of a process that is gone");
            let _ = std::fs::remove_file(&e.path);
        } else {
            tracing::info!(name = %e.name, pid = e.pid, namespaces = ?e.namespaces, "dead run left namespaces: linerate tap --cleanup removes them");
        }
    }
    live
}

/// The live instances `linerate stats` and `linerate middlebox stats` show: the one called
/// `name` (all if None) among those `kind` keeps; one sentence naming `what` (an instance, a
/// middlebox) and the run directory if there is none.
pub fn select(name: Option<&str>, what: &str, kind: impl Fn(&Entry) -> bool) -> Result<Vec<Entry>, String> {
    let found: Vec<Entry> = read_all().into_iter().filter(|e| kind(e) && name.is_none_or(|w| w == e.name)).collect();
    if !found.is_empty() {
        return Ok(found);
    }
    Err(match name {
        Some(n) => format!("no running {what} is called '{n}' (looked in {})", run_dir().display()),
        None => format!("no {what} is running (looked in {})", run_dir().display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_start_time_is_read_and_matches() {
        let me = std::process::id();
        let t = start_time(me).expect("our own /proc entry");
        assert!(alive(me, Some(t)));
        assert!(!alive(me, Some(t + 1)), "a different start time is another process");
        assert!(!alive(0, None));
    }
}
