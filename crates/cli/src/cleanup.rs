//! `linerate tap --cleanup`: remove the network namespaces (and with them their TAP devices)
//! of linerate runs that were killed before they could remove them.
//!
//! A namespace is removed only if linerate made it and its owner is dead: linerate names its
//! namespaces `<prefix>-<pid>-<n>` (testbed's `Netns`), so the owner is the pid in the name.
//! Two sources are consulted: the entries of dead runs in the run directory (which record
//! the names and their owner's start time, so a reused pid is recognised), and the
//! namespaces whose names start with [`PREFIX`] and whose owning pid no longer exists. A
//! namespace of a live process, or one whose name linerate would not give, is never touched.

use crate::netns_names::{netns_exists, NETNS_DIR};
use crate::statsfile::{alive, entries};
use std::process::{Command, Stdio};

/// The prefix of the namespaces linerate's commands create (`lr-tap`, `lr-ping`, `lr-bench-…`).
pub const PREFIX: &str = "lr-";

/// The owning pid in a name `<prefix>-<pid>-<n>`, if it has that shape.
pub fn owner_pid(name: &str) -> Option<u32> {
    let mut parts = name.rsplitn(3, '-');
    let n = parts.next()?;
    let pid = parts.next()?;
    let prefix = parts.next()?;
    if prefix.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

/// Delete namespace `name` (which removes the TAP and veth devices inside it).
fn delete(name: &str) -> Result<(), String> {
    let out = Command::new("ip")
        .args(["netns", "del", name])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip netns del {name}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// What [`cleanup`] did.
#[derive(Default)]
pub struct Report {
    /// Namespaces removed.
    pub removed: Vec<String>,
    /// Entries of dead runs removed from the run directory.
    pub entries: usize,
    /// Namespaces that could not be removed, with the reason.
    pub failed: Vec<String>,
}

/// Remove the namespaces of dead linerate runs and the entries of dead runs (see the module
/// documentation for what counts as one).
pub fn cleanup() -> Report {
    let mut r = Report::default();
    let remove = |name: &str, r: &mut Report| {
        if r.removed.iter().any(|n| n == name) || !netns_exists(name) {
            return;
        }
        tracing::info!(namespace = name, "removing the namespace of a dead linerate run");
        match delete(name) {
            Ok(()) => r.removed.push(name.to_string()),
            Err(e) => r.failed.push(e),
        }
    };
    for e in entries().into_iter().filter(|e| !e.alive()) {
        for ns in e.namespaces.iter().filter(|ns| owner_pid(ns) == Some(e.pid)) {
            remove(ns, &mut r);
        }
        if std::fs::remove_file(&e.path).is_ok() {
            r.entries += 1;
        }
    }
    let names: Vec<String> = std::fs::read_dir(NETNS_DIR)
        .map(|d| d.flatten().filter_map(|e| e.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    for name in names.iter().filter(|n| n.starts_with(PREFIX)) {
        if let Some(pid) = owner_pid(name) {
            if !alive(pid, None) {
                remove(name, &mut r);
            } else {
                tracing::debug!(namespace = %name, pid, "kept: its process runs");
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_is_the_pid_in_the_name() {
        assert_eq!(owner_pid("lr-tap-1234-0"), Some(1234));
        assert_eq!(owner_pid("lr-bench-ua-77-12"), Some(77));
        assert_eq!(owner_pid("lr-tap"), None);
        assert_eq!(owner_pid("lr-tap-x-0"), None);
        assert_eq!(owner_pid("lr-tap-12-a"), None);
        assert_eq!(owner_pid("-12-0"), None);
        assert!(!netns_exists("../etc"));
    }
}
