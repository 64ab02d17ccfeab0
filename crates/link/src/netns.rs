//! Run a piece of setup code inside a named network namespace, on a short-lived thread.
//!
//! A thread that `setns`es into `/var/run/netns/<name>` changes only its own namespace; file
//! descriptors it opens there (a TAP, an AF_PACKET socket) stay bound to that namespace and
//! remain valid in every thread of the process after it exits.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::LinkError;

/// Path of the namespace file `ip netns add <name>` creates.
pub fn netns_path(name: &str) -> Result<String, LinkError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && name != "."
        && name != "..";
    if !ok {
        return Err(LinkError::Config(format!(
            "network namespace name {name:?} must be 1..=200 characters of [A-Za-z0-9._-]"
        )));
    }
    Ok(format!("/var/run/netns/{name}"))
}

/// Run `f` on a new thread that has entered network namespace `name`; returns what `f` returns.
pub fn run_in_netns<T, F>(name: &str, f: F) -> Result<T, LinkError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, LinkError> + Send + 'static,
{
    let path = netns_path(name)?;
    let cpath = CString::new(path.clone()).map_err(|e| LinkError::Config(e.to_string()))?;
    let handle = std::thread::Builder::new()
        .name(format!("netns-{name}"))
        .spawn(move || {
            // SAFETY: valid C string; O_RDONLY open of a namespace file.
            let fd = unsafe { libc::open(cpath.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                let source = std::io::Error::last_os_error();
                if source.kind() == std::io::ErrorKind::NotFound {
                    return Err(LinkError::Config(format!("network namespace {path} does not exist")));
                }
                return Err(LinkError::Os { op: "open of a network namespace", source });
            }
            // SAFETY: fd was just returned by open and is owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: fd refers to a namespace file; setns affects only this thread, which
            // ends when `f` returns.
            if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(LinkError::last_os("setns into a network namespace"));
            }
            f()
        })
        .map_err(|source| LinkError::Os { op: "spawn of the namespace thread", source })?;
    handle.join().map_err(|_| LinkError::Config("the namespace setup thread panicked".into()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(netns_path("ok-name_1").is_ok());
        assert!(netns_path("../etc").is_err());
        assert!(netns_path("").is_err());
        assert!(matches!(run_in_netns("lrt-surely-missing-ns", || Ok(())), Err(LinkError::Config(_))));
    }
}
