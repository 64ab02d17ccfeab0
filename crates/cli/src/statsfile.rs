//! Live counters of running linerate processes, shared through small JSON files so that
//! `linerate stats` can show them (like Limago's statistics module).

use serde_json::{json, Value};
use std::path::PathBuf;

/// Directory holding one `<name>.json` per running instance (`LINERATE_RUN_DIR` overrides).
pub fn run_dir() -> PathBuf {
    std::env::var_os("LINERATE_RUN_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp/linerate-run"))
}

/// Publishes a process's counters periodically; removes its file on drop.
pub struct StatsPublisher {
    path: PathBuf,
    name: String,
}

impl StatsPublisher {
    /// A publisher for instance `name` (of this process).
    pub fn new(name: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(run_dir())?;
        Ok(StatsPublisher { path: run_dir().join(format!("{name}.json")), name: name.into() })
    }

    /// Write the current counters (atomically: temp file + rename).
    pub fn publish(&self, counters: &[(&str, u64)]) -> std::io::Result<()> {
        let map: serde_json::Map<String, Value> = counters.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        let doc = json!({ "name": self.name, "pid": std::process::id(), "counters": map });
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&doc)?)?;
        std::fs::rename(&tmp, &self.path)
    }
}

impl Drop for StatsPublisher {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Snapshots of every live instance: (name, pid, counters). Files of dead processes are removed.
pub fn read_all() -> Vec<(String, u32, Vec<(String, u64)>)> {
    let Ok(dir) = std::fs::read_dir(run_dir()) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else { continue };
        let Ok(doc) = serde_json::from_slice::<Value>(&bytes) else { continue };
        let pid = doc["pid"].as_u64().unwrap_or(0) as u32;
        // SAFETY: kill with signal 0 only checks whether the process exists.
        if pid == 0 || unsafe { libc::kill(pid as i32, 0) } != 0 {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let name = doc["name"].as_str().unwrap_or("?").to_string();
        let counters = doc["counters"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0))).collect())
            .unwrap_or_default();
        out.push((name, pid, counters));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
