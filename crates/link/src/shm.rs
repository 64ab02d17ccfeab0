//! A "cable" between two processes: two rings in a POSIX shared-memory segment.
//!
//! `/dev/shm/linerate-<name>` holds a 4096-byte header followed by ring A->B and ring B->A
//! (see [`crate::ring`] for the ring layout). The creator is side A; [`ShmLink::open`] maps
//! the segment as side B once the creator has marked it ready. Each side marks its ring ends
//! closed when dropped, so the peer sees [`LinkError::Closed`] once it has drained the ring;
//! the creator also removes the name on drop (an open mapping stays valid). A peer process
//! that dies without dropping its end (SIGKILL) is noticed through its lock on the segment
//! ([`crate::liveness`]): an idle side then gets [`LinkError::Closed`] too, within about
//! 100 ms.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use crate::liveness::PeerWatch;
use crate::mem::{ring_rx, ring_rx_with, ring_stats, RingTx};
use crate::ring::{self, RingConsumer, RingLayout, RingMemory, RingProducer};
use crate::{FrameBatch, Instant, Link, LinkConfig, LinkError, LinkStats};

/// Magic number at the start of a segment ("LRTSHM01").
pub const SHM_MAGIC: u64 = u64::from_le_bytes(*b"LRTSHM01");
/// Version of the segment layout.
pub const SHM_VERSION: u32 = 1;
/// Bytes reserved for the segment header; ring A->B starts here.
pub const SHM_HEADER_BYTES: usize = 4096;
/// Value of the header's ready word once the creator has finished.
const READY: u32 = u32::from_le_bytes(*b"REDY");

/// The segment header at offset 0.
#[repr(C)]
struct ShmHeader {
    magic: u64,
    version: u32,
    ready: AtomicU32,
    mtu: u32,
    depth: u32,
    ring_ab: u64,
    ring_ba: u64,
    total: u64,
    creator_pid: u32,
}

/// Which end of the cable a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The creator.
    A,
    /// The process that opened an existing segment.
    B,
}

/// A mapped segment; unmapped when the last ring end and link let go of it.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    /// Map `len` bytes of `fd` shared, read-write.
    fn new(fd: &OwnedFd, len: usize) -> Result<Self, LinkError> {
        // SAFETY: a fresh shared mapping of a file we hold open; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(LinkError::last_os("mmap of the shared-memory link"));
        }
        Ok(Mapping { ptr: p as *mut u8, len })
    }

    fn header(&self) -> &ShmHeader {
        // SAFETY: every mapping is at least SHM_HEADER_BYTES long (checked before mapping) and
        // page-aligned; the plain fields are only written by the creator before `ready`.
        unsafe { &*(self.ptr as *const ShmHeader) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; nothing refers to the memory any
        // more (ring ends hold an Arc to this mapping).
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

// SAFETY: the mapping is plain shared bytes; all concurrent access follows the ring protocol.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

// SAFETY: mmap returns a page-aligned region of `len` bytes that stays mapped until Drop.
unsafe impl RingMemory for Mapping {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// One end of a shared-memory link between two processes (or threads).
pub struct ShmLink {
    tx: RingTx,
    rx: RingConsumer,
    side: Side,
    path: String,
    /// Set on the creator: the name to remove on drop.
    unlink: Option<CString>,
    /// Our lock on the segment, and whether the peer process still holds its own.
    watch: PeerWatch,
}

fn shm_name(name: &str) -> Result<CString, LinkError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if !ok {
        return Err(LinkError::Config(format!(
            "shared-memory link name {name:?} must be 1..=200 characters of [A-Za-z0-9._-]"
        )));
    }
    CString::new(format!("/linerate-{name}")).map_err(|e| LinkError::Config(e.to_string()))
}

fn page_round(n: usize) -> usize {
    n.next_multiple_of(4096)
}

fn unlink(name: &CString) {
    // SAFETY: `name` is a valid NUL-terminated string.
    unsafe { libc::shm_unlink(name.as_ptr()) };
}

impl ShmLink {
    /// Create `/dev/shm/linerate-<name>` and become side A. Fails if the name exists. The
    /// other process (or thread) attaches with [`ShmLink::open`].
    ///
    /// ```
    /// use link::shm::ShmLink;
    /// use link::{FrameBatch, Instant, Link, LinkConfig};
    /// use std::time::Duration;
    ///
    /// let name = format!("doc-{}", std::process::id());
    /// let mut a = ShmLink::create(&name, LinkConfig::default())?;
    /// let mut b = ShmLink::open(&name, Duration::from_secs(1))?;
    /// let mut batch = FrameBatch::new(4, a.max_frame());
    /// assert!(batch.push(&[0xab; 64]));
    /// assert_eq!(a.tx_batch(Instant::ZERO, &mut batch)?, 1);
    /// let mut got = FrameBatch::new(4, b.max_frame());
    /// assert_eq!(b.rx_batch(Instant::ZERO, &mut got)?, 1);
    /// # Ok::<(), link::LinkError>(())
    /// ```
    pub fn create(name: &str, config: LinkConfig) -> Result<ShmLink, LinkError> {
        config.validate()?;
        let cname = shm_name(name)?;
        let path = format!("/dev/shm/linerate-{name}");
        let layout = RingLayout::new(config.depth, config.max_frame())?;
        let ring_span = page_round(layout.bytes());
        let total = SHM_HEADER_BYTES + 2 * ring_span;
        // SAFETY: valid C string; O_EXCL so we never reuse somebody else's segment.
        let fd = unsafe {
            libc::shm_open(cname.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC, 0o600)
        };
        if fd < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EEXIST) {
                return Err(LinkError::Config(format!(
                    "{path} already exists: another link uses this name, or a crashed one left it behind (remove the file)"
                )));
            }
            return Err(LinkError::Os { op: "shm_open (create)", source: err });
        }
        // SAFETY: fd was just returned by shm_open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // Locked before the segment is marked ready, so an opener always finds our lock.
        let built = PeerWatch::new(fd, 0, 1)
            .and_then(|watch| Ok((Self::build_a(watch.fd(), total, ring_span, layout, config)?, watch)));
        match built {
            Ok(((tx, rx), watch)) => Ok(ShmLink {
                tx: RingTx::new(tx, config.max_frame()),
                rx,
                side: Side::A,
                path,
                unlink: Some(cname),
                watch,
            }),
            Err(e) => {
                unlink(&cname);
                Err(e)
            }
        }
    }

    fn build_a(
        fd: &OwnedFd,
        total: usize,
        ring_span: usize,
        layout: RingLayout,
        config: LinkConfig,
    ) -> Result<(RingProducer, RingConsumer), LinkError> {
        // SAFETY: fd is a valid shared-memory descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), total as libc::off_t) } != 0 {
            return Err(LinkError::last_os("ftruncate of the shared-memory link"));
        }
        let map = Mapping::new(fd, total)?;
        let hdr = map.ptr as *mut ShmHeader;
        // SAFETY: the mapping is at least SHM_HEADER_BYTES long and page-aligned; `ready` is
        // still zero (fresh file), so no opener reads these fields yet.
        unsafe {
            (*hdr).magic = SHM_MAGIC;
            (*hdr).version = SHM_VERSION;
            (*hdr).mtu = config.mtu as u32;
            (*hdr).depth = config.depth as u32;
            (*hdr).ring_ab = SHM_HEADER_BYTES as u64;
            (*hdr).ring_ba = (SHM_HEADER_BYTES + ring_span) as u64;
            (*hdr).total = total as u64;
            (*hdr).creator_pid = std::process::id();
        }
        let mem: Arc<dyn RingMemory> = Arc::new(map);
        ring::format(&mem, SHM_HEADER_BYTES, &layout)?;
        ring::format(&mem, SHM_HEADER_BYTES + ring_span, &layout)?;
        let tx = ring::attach_producer(mem.clone(), SHM_HEADER_BYTES)?;
        let rx = ring::attach_consumer(mem.clone(), SHM_HEADER_BYTES + ring_span)?;
        // SAFETY: as above; publishing `ready` with Release makes every write above visible.
        unsafe { &(*hdr).ready }.store(READY, Ordering::Release);
        Ok((tx, rx))
    }

    /// Open the segment `name` as side B, waiting up to `timeout` for it to appear and be ready.
    pub fn open(name: &str, timeout: Duration) -> Result<ShmLink, LinkError> {
        let cname = shm_name(name)?;
        let path = format!("/dev/shm/linerate-{name}");
        let deadline = StdInstant::now() + timeout;
        let (fd, size) = Self::wait_for_file(&cname, &path, deadline, timeout)?;
        let map = Mapping::new(&fd, size)?;
        let watch = PeerWatch::new(fd, 1, 0).map_err(|e| match e {
            LinkError::Os { source, .. } if source.raw_os_error() == Some(libc::EAGAIN) => {
                LinkError::Config(format!("{path} is already open in another process (a link has two ends)"))
            }
            other => other,
        })?;
        // Wait (bounded) for the creator to finish the header and rings.
        loop {
            if map.header().ready.load(Ordering::Acquire) == READY {
                break;
            }
            if StdInstant::now() >= deadline {
                let h = map.header();
                let what = if h.magic != SHM_MAGIC {
                    format!("bad magic {:#018x}: not a linerate link", h.magic)
                } else {
                    "its creator never marked it ready".to_string()
                };
                return Err(LinkError::Config(format!("{path}: {what} (waited {timeout:?})")));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let (ab, ba, mtu) = Self::validate(&map, &path, size)?;
        let mem: Arc<dyn RingMemory> = Arc::new(map);
        let tx = ring::attach_producer(mem.clone(), ba).map_err(|e| Self::ctx(&path, e))?;
        let rx = ring::attach_consumer(mem, ab).map_err(|e| Self::ctx(&path, e))?;
        Ok(ShmLink { tx: RingTx::new(tx, mtu + 18), rx, side: Side::B, path, unlink: None, watch })
    }

    fn ctx(path: &str, e: LinkError) -> LinkError {
        match e {
            LinkError::Config(m) => LinkError::Config(format!("{path}: {m}")),
            other => other,
        }
    }

    /// Poll until the file exists and is at least a header long.
    fn wait_for_file(
        cname: &CString,
        path: &str,
        deadline: StdInstant,
        timeout: Duration,
    ) -> Result<(OwnedFd, usize), LinkError> {
        loop {
            // SAFETY: valid C string; opening an existing object only.
            let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC, 0) };
            if fd >= 0 {
                // SAFETY: fd was just returned by shm_open and is owned by nobody else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                // SAFETY: an all-zero stat is a valid value; fstat fills it.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: fd is valid and st is writable.
                if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
                    return Err(LinkError::last_os("fstat of the shared-memory link"));
                }
                if st.st_size as usize >= SHM_HEADER_BYTES {
                    return Ok((fd, st.st_size as usize));
                }
            } else {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() != Some(libc::ENOENT) {
                    return Err(LinkError::Os { op: "shm_open (open)", source: err });
                }
            }
            if StdInstant::now() >= deadline {
                return Err(LinkError::Config(format!("{path} did not appear within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Check the ready header against the file; returns the ring offsets and the MTU.
    fn validate(map: &Mapping, path: &str, size: usize) -> Result<(usize, usize, usize), LinkError> {
        let h = map.header();
        let bad = |what: String| Err(LinkError::Config(format!("{path}: {what}")));
        if h.magic != SHM_MAGIC {
            return bad(format!("bad magic {:#018x}: not a linerate link", h.magic));
        }
        if h.version != SHM_VERSION {
            return bad(format!("layout version {} but this build reads version {SHM_VERSION}", h.version));
        }
        if h.total as usize != size {
            return bad(format!("header says {} bytes but the file has {size}", h.total));
        }
        let config = LinkConfig { mtu: h.mtu as usize, depth: h.depth as usize };
        if let Err(e) = config.validate() {
            return bad(format!("header holds an unusable configuration: {e}"));
        }
        let need = RingLayout::new(config.depth, config.max_frame())?.bytes() as u64;
        let (ab, ba) = (h.ring_ab, h.ring_ba);
        let fits = |off: u64| off >= SHM_HEADER_BYTES as u64 && off.checked_add(need).is_some_and(|e| e <= h.total);
        if !fits(ab) || !fits(ba) || ab.abs_diff(ba) < need {
            return bad(format!("ring offsets {ab} and {ba} (each {need} bytes) do not fit a {size}-byte file"));
        }
        Ok((ab as usize, ba as usize, config.mtu))
    }

    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Path of the segment in the file system.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Hand up to `max` received frames to `f` in place (zero copy); returns how many.
    pub fn rx_with(&mut self, max: usize, f: impl FnMut(&[u8])) -> Result<usize, LinkError> {
        let n = ring_rx_with(&mut self.rx, max, f)?;
        self.closed_if_peer_gone(n)
    }

    /// True if the peer process is gone (killed, or exited): it held its lock on the
    /// segment and holds it no more. Asks the kernel now.
    pub fn peer_gone(&mut self) -> bool {
        self.watch.check_now()
    }

    /// `n` frames received: after an empty poll, [`LinkError::Closed`] once the peer process is
    /// gone, whether or not it could mark its ring closed (a SIGKILL leaves no time to).
    fn closed_if_peer_gone(&mut self, n: usize) -> Result<usize, LinkError> {
        if n == 0 && self.watch.idle_and_gone() {
            return Err(LinkError::Closed);
        }
        Ok(n)
    }
}

impl Drop for ShmLink {
    fn drop(&mut self) {
        if let Some(name) = &self.unlink {
            unlink(name);
        }
    }
}

impl Link for ShmLink {
    fn max_frame(&self) -> usize {
        self.tx.max_frame()
    }
    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let n = ring_rx(&mut self.rx, batch)?;
        self.closed_if_peer_gone(n)
    }
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.tx.tx_batch(now, batch)
    }
    fn stats(&self) -> LinkStats {
        ring_stats(self.tx.producer(), &self.rx)
    }
    fn kind(&self) -> &'static str {
        "shm"
    }
    fn rx_in_place(
        &mut self,
        _now: Instant,
        max: usize,
        f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Option<Result<usize, LinkError>> {
        let got = self.tx.serve_in_place(&mut self.rx, max, f);
        Some(got.and_then(|n| self.closed_if_peer_gone(n)))
    }
    fn tx_in_place(
        &mut self,
        now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        self.tx.tx_in_place(now, build)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unique(tag: &str) -> String {
        use std::sync::atomic::AtomicUsize;
        static N: AtomicUsize = AtomicUsize::new(0);
        format!("unit-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
    }

    #[test]
    fn create_open_round_trip_and_unlink() {
        let name = unique("rt");
        let mut a = ShmLink::create(&name, LinkConfig::default().depth(64)).unwrap();
        let mut b = ShmLink::open(&name, Duration::from_secs(1)).unwrap();
        assert_eq!((a.side(), b.side()), (Side::A, Side::B));
        assert_eq!(b.max_frame(), 1518);
        let mut batch = FrameBatch::new(4, 2048);
        assert!(batch.push(b"hello from a"));
        assert_eq!(a.tx_batch(Instant::ZERO, &mut batch).unwrap(), 1);
        let mut got = FrameBatch::new(4, 2048);
        assert_eq!(b.rx_batch(Instant::ZERO, &mut got).unwrap(), 1);
        assert_eq!(got.get(0), b"hello from a");
        assert!(ShmLink::open(&name, Duration::from_millis(10)).is_err(), "a second side B is refused");
        let path = a.path().to_string();
        assert!(std::path::Path::new(&path).exists());
        drop(a);
        assert!(!std::path::Path::new(&path).exists());
        assert!(matches!(b.rx_batch(Instant::ZERO, &mut got), Err(LinkError::Closed)));
    }

    #[test]
    fn names_are_checked_and_duplicates_refused() {
        assert!(matches!(ShmLink::create("a/b", LinkConfig::default()), Err(LinkError::Config(_))));
        let name = unique("dup");
        let _a = ShmLink::create(&name, LinkConfig::default().depth(4)).unwrap();
        let err = ShmLink::create(&name, LinkConfig::default()).err().unwrap();
        assert!(err.to_string().contains("already exists"), "{err}");
    }

    #[test]
    fn open_of_missing_name_times_out_clearly() {
        let err = ShmLink::open(&unique("missing"), Duration::from_millis(20)).err().unwrap();
        assert!(err.to_string().contains("did not appear"), "{err}");
    }
}
