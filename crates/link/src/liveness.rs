//! Whether the process at the other end of a shared-memory link is still there.
//!
//! Each side holds an open-file-description lock (`F_OFD_SETLK`) on one byte of the segment:
//! the creator (side A) byte 0, the opener (side B) byte 1. The kernel releases a lock when the
//! last descriptor of its open file goes, so also when the process is killed with SIGKILL and
//! never runs its `Drop`. A side asks (`F_OFD_GETLK`) whether the other's byte is still locked:
//! once it was and no longer is, the peer is gone. The question costs a system call, so it is
//! asked only when the link is idle, at most every [`CHECK_EVERY`].

use crate::LinkError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Least time between two questions.
pub const CHECK_EVERY: Duration = Duration::from_millis(100);
/// Idle polls between two looks at the clock (a busy-polling loop idles millions of times a
/// second; a clock read each time would cost more than the question).
const POLLS_PER_CLOCK: u32 = 256;

/// This side's lock and what is known of the other side's.
pub(crate) struct PeerWatch {
    fd: OwnedFd,
    theirs: i64,
    seen: bool,
    gone: bool,
    idle_polls: u32,
    last_check: Instant,
}

/// A one-byte write lock at `byte` for `fcntl`.
fn lock_at(byte: i64, kind: libc::c_short) -> libc::flock {
    // SAFETY: flock is plain old data; all-zero is a valid value (l_pid must be 0 for OFD locks).
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = byte;
    l.l_len = 1;
    l
}

impl PeerWatch {
    /// Lock byte `ours` of the segment open as `fd`; the peer locks `theirs`.
    pub(crate) fn new(fd: OwnedFd, ours: i64, theirs: i64) -> Result<PeerWatch, LinkError> {
        let mut l = lock_at(ours, libc::F_WRLCK as libc::c_short);
        // SAFETY: fd is open; l is a valid flock for an OFD lock.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &mut l) } != 0 {
            return Err(LinkError::last_os("fcntl(F_OFD_SETLK) on the shared-memory link"));
        }
        Ok(PeerWatch { fd, theirs, seen: false, gone: false, idle_polls: 0, last_check: Instant::now() })
    }

    /// The segment's descriptor.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Whether the peer's byte is locked now (`None` if the kernel would not say).
    fn peer_holds_lock(&self) -> Option<bool> {
        let mut l = lock_at(self.theirs, libc::F_WRLCK as libc::c_short);
        // SAFETY: fd is open; F_OFD_GETLK fills l with a conflicting lock or sets F_UNLCK.
        if unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_OFD_GETLK, &mut l) } != 0 {
            return None;
        }
        Some(l.l_type != libc::F_UNLCK as libc::c_short)
    }

    /// Called when a poll found nothing: true once the peer is known to be gone (it held its
    /// lock once and holds it no more).
    pub(crate) fn idle_and_gone(&mut self) -> bool {
        if self.gone {
            return true;
        }
        self.idle_polls += 1;
        if self.idle_polls < POLLS_PER_CLOCK {
            return false;
        }
        self.idle_polls = 0;
        let now = Instant::now();
        if now.duration_since(self.last_check) < CHECK_EVERY {
            return false;
        }
        self.last_check = now;
        self.check_now()
    }

    /// Ask at once, whatever the rate limit (a peer seen alive before, now unlocked, is gone).
    pub(crate) fn check_now(&mut self) -> bool {
        match self.peer_holds_lock() {
            Some(true) => self.seen = true,
            Some(false) if self.seen => self.gone = true,
            _ => {}
        }
        self.gone
    }
}
