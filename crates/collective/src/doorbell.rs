//! Doorbells: how a rank of a shared-memory fabric sleeps in the kernel while it has nothing
//! to do, and how a peer that hands it a frame wakes it.
//!
//! Each rank owns one small shared segment `/dev/shm/linerate-<fabric>-bell-<rank>` with two
//! words: `asleep` (the owner is about to sleep or sleeps) and `rings` (a futex word bumped
//! by every wake-up). The owner [`Doorbell::arm`]s (sets `asleep`, reads `rings`), checks its
//! rings once more, and only then [`Doorbell::sleep`]s on `rings` while it still holds the
//! value it read. A sender pushes its frame first and then [`Doorbell::ring`]s, which costs
//! one load unless the owner is asleep; then it bumps `rings` and calls `FUTEX_WAKE`. With
//! sequentially consistent accesses on both words, either the sender sees `asleep` (and the
//! sleep returns at once or is woken), or the owner's last check sees the frame: no wake-up
//! is lost. Sleeps are bounded by a timeout anyway, so a peer that died mid-way costs at
//! most that.
//!
//! Only for ranks that share a machine (the futex word lives in shared memory, so it is a
//! process-shared futex).

use std::ffi::CString;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant as StdInstant};

/// Size of a bell segment (one page).
const BELL_BYTES: usize = 4096;

/// Value of the `ready` word once the creator has initialised the segment.
const READY: u32 = u32::from_le_bytes(*b"BELL");

#[repr(C)]
struct Words {
    ready: AtomicU32,
    asleep: AtomicU32,
    rings: AtomicU32,
}

/// One mapped bell: ours (created, unlinked on drop) or a peer's (opened).
pub struct Doorbell {
    words: *const Words,
    /// The name to unlink when the creator drops it.
    unlink: Option<CString>,
}

// SAFETY: the mapping is only touched through atomics and lives as long as the value.
unsafe impl Send for Doorbell {}
// SAFETY: as above: shared access goes through atomics only.
unsafe impl Sync for Doorbell {}

fn shm_name(fabric: &str, rank: usize) -> Result<CString, std::io::Error> {
    CString::new(format!("/linerate-{fabric}-bell-{rank}"))
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "fabric name holds a NUL byte"))
}

fn map(fd: libc::c_int) -> Result<*const Words, std::io::Error> {
    // SAFETY: a fresh shared mapping of a file we hold open; the kernel picks the address.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), BELL_BYTES, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
    };
    // SAFETY: fd is ours; the mapping (if any) keeps the memory alive.
    unsafe { libc::close(fd) };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as *const Words)
}

impl Doorbell {
    /// Creates rank `rank`'s bell of fabric `fabric` (a name left by a crashed run is
    /// replaced).
    pub fn create(fabric: &str, rank: usize) -> Result<Doorbell, std::io::Error> {
        let name = shm_name(fabric, rank)?;
        // SAFETY: plain libc calls on a NUL-terminated name.
        unsafe { libc::shm_unlink(name.as_ptr()) };
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just opened by us.
        if unsafe { libc::ftruncate(fd, BELL_BYTES as libc::off_t) } != 0 {
            let e = std::io::Error::last_os_error();
            unsafe {
                libc::close(fd);
                libc::shm_unlink(name.as_ptr());
            }
            return Err(e);
        }
        let words = map(fd).inspect_err(|_| unsafe {
            libc::shm_unlink(name.as_ptr());
        })?;
        let bell = Doorbell { words, unlink: Some(name) };
        bell.w().ready.store(READY, Ordering::Release);
        Ok(bell)
    }

    /// Opens rank `rank`'s bell, waiting up to `timeout` for its creator.
    pub fn open(fabric: &str, rank: usize, timeout: Duration) -> Result<Doorbell, std::io::Error> {
        let name = shm_name(fabric, rank)?;
        let start = StdInstant::now();
        loop {
            // SAFETY: plain libc calls on a NUL-terminated name; the size is checked before
            // mapping, so the mapping never extends past the file.
            let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
            if fd >= 0 {
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                let ok = unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_size as usize >= BELL_BYTES;
                if ok {
                    let bell = Doorbell { words: map(fd)?, unlink: None };
                    if bell.w().ready.load(Ordering::Acquire) == READY {
                        return Ok(bell);
                    }
                } else {
                    unsafe { libc::close(fd) };
                }
            }
            if start.elapsed() > timeout {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("doorbell of rank {rank} of fabric {fabric} did not appear within {timeout:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn w(&self) -> &Words {
        // SAFETY: `words` points into a live mapping of BELL_BYTES bytes, page-aligned.
        unsafe { &*self.words }
    }

    /// Owner: announces the intent to sleep and returns the token for [`Doorbell::sleep`].
    /// Check for work once more after this; sleep only if there is none.
    pub fn arm(&self) -> u32 {
        self.w().asleep.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.w().rings.load(Ordering::SeqCst)
    }

    /// Owner: sleeps until rung (after the `arm` that gave `token`) or `timeout`; returns
    /// whether it actually slept in the kernel.
    pub fn sleep(&self, token: u32, timeout: Duration) -> bool {
        let w = self.w();
        let mut slept = false;
        if w.rings.load(Ordering::SeqCst) == token {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: FUTEX_WAIT on a u32 in a live shared mapping with a relative timeout;
            // any outcome (woken, timed out, value changed, signal) is fine.
            unsafe {
                libc::syscall(libc::SYS_futex, &w.rings as *const AtomicU32, libc::FUTEX_WAIT, token, &ts);
            }
            slept = true;
        }
        w.asleep.store(0, Ordering::SeqCst);
        slept
    }

    /// Owner: withdraws an [`Doorbell::arm`] without sleeping (work turned up).
    pub fn disarm(&self) {
        self.w().asleep.store(0, Ordering::SeqCst);
    }

    /// Sender (after its frame is in the owner's ring): wakes the owner if it sleeps.
    /// Returns whether a wake-up was issued.
    pub fn ring(&self) -> bool {
        let w = self.w();
        fence(Ordering::SeqCst);
        if w.asleep.load(Ordering::SeqCst) == 0 {
            return false;
        }
        w.rings.fetch_add(1, Ordering::SeqCst);
        // SAFETY: FUTEX_WAKE on a u32 in a live shared mapping.
        unsafe {
            libc::syscall(libc::SYS_futex, &w.rings as *const AtomicU32, libc::FUTEX_WAKE, 1);
        }
        true
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping; nothing borrows it past `self`.
        unsafe { libc::munmap(self.words as *mut libc::c_void, BELL_BYTES) };
        if let Some(name) = &self.unlink {
            unsafe { libc::shm_unlink(name.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_wakes_a_sleeper_and_an_unarmed_bell_costs_no_wake() {
        let fabric = format!("bell-unit-{}", std::process::id());
        let mine = Doorbell::create(&fabric, 0).unwrap();
        let theirs = Doorbell::open(&fabric, 0, Duration::from_secs(1)).unwrap();
        assert!(!theirs.ring(), "nobody sleeps: no wake-up");
        // Rung between arm and sleep: the sleep returns at once (the token is stale).
        let t = mine.arm();
        assert!(theirs.ring());
        let start = StdInstant::now();
        assert!(!mine.sleep(t, Duration::from_secs(5)));
        assert!(start.elapsed() < Duration::from_secs(1));
        // A real sleep, woken from another thread well before its timeout.
        let t = mine.arm();
        let waker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            theirs.ring()
        });
        let start = StdInstant::now();
        assert!(mine.sleep(t, Duration::from_secs(5)));
        assert!(waker.join().unwrap());
        assert!(start.elapsed() < Duration::from_secs(4), "woken, not timed out: {:?}", start.elapsed());
        // Unwoken: the timeout bounds the sleep.
        let t = mine.arm();
        assert!(mine.sleep(t, Duration::from_millis(20)));
        let path = format!("/dev/shm/linerate-{fabric}-bell-0");
        assert!(std::path::Path::new(&path).exists());
        drop(mine);
        assert!(!std::path::Path::new(&path).exists(), "the creator removes its bell");
    }
}
