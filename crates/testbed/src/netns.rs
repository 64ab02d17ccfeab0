//! Linux network namespaces that a test or command creates for itself, with veth pairs and
//! TAP devices in them, always removed again (the guards delete on drop, also on panic).

use crate::TestbedError;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// Why namespace tests cannot run here, or `None` if they can (root and `ip` available).
pub fn netns_unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root".into());
    }
    match Command::new("ip").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => None,
        _ => Some("the `ip` command (iproute2) is missing".into()),
    }
}

/// A network namespace created by us and deleted when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Create a namespace named `<prefix>-<pid>-<n>` with its loopback up.
    pub fn create(prefix: &str) -> Result<Netns, TestbedError> {
        if let Some(why) = netns_unavailable() {
            return Err(TestbedError::Setup(why));
        }
        let name = format!("{prefix}-{}-{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
        run_checked(Command::new("ip").args(["netns", "add", &name]))?;
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run `ip -n <ns> <args>`, failing with its stderr if it fails.
    pub fn ip(&self, args: &[&str]) -> Result<(), TestbedError> {
        run_checked(Command::new("ip").arg("-n").arg(&self.name).args(args)).map(|_| ())
    }

    /// A command that runs `program args` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Run `program args` inside the namespace and collect its output (not checked).
    pub fn run(&self, program: &str, args: &[&str]) -> Result<Output, TestbedError> {
        self.command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| TestbedError::Setup(format!("cannot run {program}: {e}")))
    }

    /// Run `f` on a thread that has entered this namespace (sockets it opens live there).
    pub fn enter<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, TestbedError> {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || -> Result<T, TestbedError> {
            enter_netns(&path)?;
            Ok(f())
        })
        .join()
        .map_err(|_| TestbedError::Setup("thread in namespace panicked".into()))?
    }

    /// Spawn a long-lived thread inside this namespace.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<Result<T, TestbedError>> {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            enter_netns(&path)?;
            Ok(f())
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace also removes the veth ends and TAP devices inside it.
        let _ = Command::new("ip").args(["netns", "del", &self.name]).stderr(Stdio::null()).status();
    }
}

/// Move the calling thread into the network namespace at `path`.
pub fn enter_netns(path: &str) -> Result<(), TestbedError> {
    let file = std::fs::File::open(path).map_err(|e| TestbedError::Setup(format!("open {path}: {e}")))?;
    use std::os::fd::AsRawFd;
    // SAFETY: the fd is a valid namespace file for the duration of the call; setns only
    // affects the calling thread.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(TestbedError::Setup(format!("setns {path}: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

/// Connect namespaces `a` and `b` with a veth pair, addresses in CIDR form, links up.
pub fn veth_pair(
    a: &Netns,
    a_if: &str,
    a_cidr: &str,
    b: &Netns,
    b_if: &str,
    b_cidr: &str,
    mtu: usize,
) -> Result<(), TestbedError> {
    let mtu = mtu.to_string();
    a.ip(&["link", "add", a_if, "mtu", &mtu, "type", "veth", "peer", "name", b_if, "netns", b.name(), "mtu", &mtu])?;
    a.ip(&["addr", "add", a_cidr, "dev", a_if])?;
    b.ip(&["addr", "add", b_cidr, "dev", b_if])?;
    a.ip(&["link", "set", a_if, "up"])?;
    b.ip(&["link", "set", b_if, "up"])?;
    Ok(())
}

fn run_checked(cmd: &mut Command) -> Result<Output, TestbedError> {
    let out = cmd.output().map_err(|e| TestbedError::Setup(format!("cannot run {cmd:?}: {e}")))?;
    if !out.status.success() {
        return Err(TestbedError::Setup(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(out)
}
