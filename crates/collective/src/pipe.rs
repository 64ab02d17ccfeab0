//! The collective-level shared-memory transport: a byte pipe between two ranks on one
//! machine, as MPI's and NCCL's shared-memory transports are. Messages go through it framed
//! as on TCP, but with no stack in between: the sender copies a message into the ring once
//! and the receiver copies it out once (large messages stream through in ring-sized chunks,
//! so both copies overlap).
//!
//! A pair `a < b` shares one POSIX segment `/dev/shm/linerate-<job>-pipe-<a>-<b>` with two
//! single-producer single-consumer byte rings (`a` to `b` and `b` to `a`). Rank `a` creates
//! it, rank `b` opens it and at once removes its name (both keep their mappings), so once a
//! pipe is up no file is left behind whatever happens to either rank; a name left by a rank
//! killed before its peer arrived is a `linerate-*` file the launchers' cleanup removes.
//! A rank that closes its end ([`ShmPipe::close`], as a TCP FIN) marks it closed; the peer
//! reads what is left and then sees [`PipeRead::Eof`]. Dropping an end without closing it
//! (a rank failing, a process exiting) tells the peer nothing, as a connection that is
//! never closed: the peer's operations time out, naming whom they wait for.

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes of each direction's ring unless the caller says otherwise: 1 MiB (large messages
/// stream through it in chunks; it stays in the caches the two cores share).
pub const DEFAULT_PIPE_RING: usize = 1 << 20;

/// Value of the `ready` word once the creator has initialised the segment.
const READY: u32 = u32::from_le_bytes(*b"PIPE");

/// Bytes before the rings (the control words, each on its own cache line).
const CONTROL: usize = 4096;

/// One direction's indices: `tail` written by the producer, `head` by the consumer, both
/// counting bytes since the start (they never wrap in practice: 2^64 bytes).
#[repr(C, align(128))]
struct Index(AtomicU64);

#[repr(C)]
struct Control {
    ready: AtomicU32,
    /// Set by the opener once it mapped the segment.
    opened: AtomicU32,
    /// Ring size in bytes (same both ways).
    ring: AtomicU64,
    /// `closed[s]`: side `s` (0 creator, 1 opener) dropped its end.
    closed: [AtomicU32; 2],
    /// Per direction `d` (0: creator to opener, 1: back): producer's and consumer's indices.
    tail: [Index; 2],
    head: [Index; 2],
}

/// What a read found.
#[derive(Debug, PartialEq, Eq)]
pub enum PipeRead<'a> {
    /// Bytes ready (contiguous, possibly only part of what is there).
    Data(&'a [u8]),
    /// Nothing now.
    Empty,
    /// Nothing, and the peer closed its end.
    Eof,
}

/// One rank's end of a pipe.
pub struct ShmPipe {
    base: *mut u8,
    len: usize,
    ring: usize,
    /// 0 if we created it, 1 if we opened it.
    side: usize,
    /// The name to remove on drop if the peer never opened it (creator only).
    name: Option<CString>,
}

// SAFETY: the mapping is shared with one peer process through atomics and the SPSC rule
// (each side writes only its own indices and the ring it produces into); the value owns it.
unsafe impl Send for ShmPipe {}

fn shm_name(job: &str, a: usize, b: usize) -> Result<CString, std::io::Error> {
    CString::new(format!("/linerate-{job}-pipe-{a}-{b}"))
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "job name holds a NUL byte"))
}

fn map(fd: libc::c_int, len: usize) -> Result<*mut u8, std::io::Error> {
    // SAFETY: a fresh shared mapping of a file we hold open; the kernel picks the address.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    // SAFETY: fd is ours; the mapping (if any) keeps the memory alive.
    unsafe { libc::close(fd) };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

impl ShmPipe {
    /// Rank `me` creates the pipe to `peer` (`me < peer`) of job `job` with rings of `ring`
    /// bytes (a power of two, at least 4 KiB); a name left by a crashed run is replaced.
    pub fn create(job: &str, me: usize, peer: usize, ring: usize) -> Result<ShmPipe, std::io::Error> {
        if me >= peer || !ring.is_power_of_two() || ring < 4096 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("pipe {me}->{peer} with a ring of {ring} bytes (the lower rank creates; rings are powers of two from 4 KiB)"),
            ));
        }
        let name = shm_name(job, me, peer)?;
        let len = CONTROL + 2 * ring;
        // SAFETY: plain libc calls on a NUL-terminated name.
        unsafe { libc::shm_unlink(name.as_ptr()) };
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_RDWR, 0o600) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just opened by us.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: our fd and our name.
            unsafe {
                libc::close(fd);
                libc::shm_unlink(name.as_ptr());
            }
            return Err(e);
        }
        let base = map(fd, len).inspect_err(|_| unsafe {
            libc::shm_unlink(name.as_ptr());
        })?;
        let p = ShmPipe { base, len, ring, side: 0, name: Some(name) };
        p.ctl().ring.store(ring as u64, Ordering::Relaxed);
        p.ctl().ready.store(READY, Ordering::Release);
        Ok(p)
    }

    /// Rank `me` opens the pipe rank `peer` (`peer < me`) created: `Ok(None)` if it is not
    /// there yet (try again later). Removes the name once mapped.
    pub fn open(job: &str, me: usize, peer: usize) -> Result<Option<ShmPipe>, std::io::Error> {
        let name = shm_name(job, peer, me)?;
        // SAFETY: plain libc call on a NUL-terminated name.
        let fd = unsafe { libc::shm_open(name.as_ptr(), libc::O_RDWR, 0) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::NotFound { Ok(None) } else { Err(e) };
        }
        // SAFETY: fstat into a zeroed struct on our fd.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let size = if unsafe { libc::fstat(fd, &mut st) } == 0 { st.st_size as usize } else { 0 };
        if size < CONTROL + 2 * 4096 {
            // Being created (not sized yet): try again.
            unsafe { libc::close(fd) };
            return Ok(None);
        }
        let base = map(fd, size)?;
        // SAFETY: the mapping holds at least CONTROL bytes, page-aligned.
        if unsafe { &*(base as *const Control) }.ready.load(Ordering::Acquire) != READY {
            // Not initialised yet: unmap without marking our end closed, try again later.
            // SAFETY: our own fresh mapping, referenced by nothing else.
            unsafe { libc::munmap(base as *mut libc::c_void, size) };
            return Ok(None);
        }
        // SAFETY: as above.
        let ctl = unsafe { &*(base as *const Control) };
        let ring = ctl.ring.load(Ordering::Relaxed) as usize;
        let refused = if !ring.is_power_of_two() || CONTROL + 2 * ring != size {
            Some("a pipe segment of the wrong size")
        } else if ctl.opened.swap(1, Ordering::AcqRel) != 0 {
            Some("the pipe was opened by another rank")
        } else {
            None
        };
        if let Some(why) = refused {
            // SAFETY: our own mapping; `ctl` is not used past this point.
            unsafe { libc::munmap(base as *mut libc::c_void, size) };
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{job}: {why}")));
        }
        let p = ShmPipe { base, len: size, ring, side: 1, name: None };
        // SAFETY: the name is ours to remove now: both ends hold mappings.
        unsafe { libc::shm_unlink(name.as_ptr()) };
        Ok(Some(p))
    }

    fn ctl(&self) -> &Control {
        // SAFETY: `base` is a live, page-aligned mapping of at least CONTROL bytes.
        unsafe { &*(self.base as *const Control) }
    }

    /// Ring of direction `d`.
    fn ring_ptr(&self, d: usize) -> *mut u8 {
        // SAFETY: within the mapping: CONTROL + 2 * ring == len.
        unsafe { self.base.add(CONTROL + d * self.ring) }
    }

    /// Whether the peer has mapped the pipe (always true on the opener's side).
    pub fn peer_attached(&self) -> bool {
        self.side == 1 || self.ctl().opened.load(Ordering::Acquire) != 0
    }

    /// Whether the peer closed its end.
    pub fn peer_closed(&self) -> bool {
        self.ctl().closed[1 - self.side].load(Ordering::Acquire) != 0
    }

    /// Copies as much of `data` as fits into our outgoing ring; returns how much.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let d = self.side;
        let c = self.ctl();
        let tail = c.tail[d].0.load(Ordering::Relaxed);
        let head = c.head[d].0.load(Ordering::Acquire);
        let room = self.ring - (tail - head) as usize;
        let n = room.min(data.len());
        if n == 0 {
            return 0;
        }
        let at = (tail as usize) & (self.ring - 1);
        let first = n.min(self.ring - at);
        let r = self.ring_ptr(d);
        // SAFETY: [at, at+first) and [0, n-first) lie in our ring, in the part the consumer
        // released (head..head+ring); `data` is a separate buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), r.add(at), first);
            std::ptr::copy_nonoverlapping(data.as_ptr().add(first), r, n - first);
        }
        c.tail[d].0.store(tail + n as u64, Ordering::Release);
        n
    }

    /// Bytes the peer has not read yet of what we wrote.
    pub fn unread(&self) -> usize {
        let c = self.ctl();
        (c.tail[self.side].0.load(Ordering::Acquire) - c.head[self.side].0.load(Ordering::Acquire)) as usize
    }

    /// Bytes in our incoming ring not read yet.
    pub fn unread_in(&self) -> usize {
        let c = self.ctl();
        let d = 1 - self.side;
        (c.tail[d].0.load(Ordering::Acquire) - c.head[d].0.load(Ordering::Relaxed)) as usize
    }

    /// What our incoming ring holds (its contiguous part); [`ShmPipe::consume`] what was used.
    pub fn read(&self) -> PipeRead<'_> {
        let d = 1 - self.side;
        let c = self.ctl();
        let head = c.head[d].0.load(Ordering::Relaxed);
        let mut tail = c.tail[d].0.load(Ordering::Acquire);
        if tail == head {
            if !self.peer_closed() {
                return PipeRead::Empty;
            }
            // Closed: anything written before the close is visible now.
            tail = c.tail[d].0.load(Ordering::Acquire);
            if tail == head {
                return PipeRead::Eof;
            }
        }
        let at = (head as usize) & (self.ring - 1);
        let n = ((tail - head) as usize).min(self.ring - at);
        // SAFETY: [at, at+n) lies in the peer's ring, written and published (Acquire above);
        // the producer does not touch it until we move `head` past it.
        PipeRead::Data(unsafe { std::slice::from_raw_parts(self.ring_ptr(d).add(at), n) })
    }

    /// Releases `n` bytes returned by [`ShmPipe::read`].
    pub fn consume(&mut self, n: usize) {
        let d = 1 - self.side;
        let c = self.ctl();
        let head = c.head[d].0.load(Ordering::Relaxed);
        c.head[d].0.store(head + n as u64, Ordering::Release);
    }
}

impl ShmPipe {
    /// Closes our end: the peer reads what we wrote, then [`PipeRead::Eof`].
    pub fn close(self) {
        self.ctl().closed[self.side].store(1, Ordering::Release);
    }
}

impl Drop for ShmPipe {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            if !self.peer_attached() {
                // SAFETY: our own name; the peer never arrived to remove it.
                unsafe { libc::shm_unlink(name.as_ptr()) };
            }
        }
        // SAFETY: unmapping our own mapping; nothing borrows it past `self`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(p: &mut ShmPipe, out: &mut Vec<u8>) -> bool {
        loop {
            match p.read() {
                PipeRead::Data(b) => {
                    let n = b.len();
                    out.extend_from_slice(b);
                    p.consume(n);
                }
                PipeRead::Empty => return false,
                PipeRead::Eof => return true,
            }
        }
    }

    #[test]
    fn bytes_cross_both_ways_wrap_around_and_end_in_eof_with_no_file_left() {
        let job = format!("pipe-unit-{}", std::process::id());
        let path = format!("/dev/shm/linerate-{job}-pipe-0-1");
        assert!(ShmPipe::open(&job, 1, 0).unwrap().is_none(), "not created yet");
        let mut a = ShmPipe::create(&job, 0, 1, 4096).unwrap();
        assert!(!a.peer_attached());
        let mut b = ShmPipe::open(&job, 1, 0).unwrap().expect("created");
        assert!(a.peer_attached());
        assert!(!std::path::Path::new(&path).exists(), "the opener removes the name");
        // 10,000 bytes through a 4 KiB ring: the writer stops when full, wraps around.
        let msg: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (mut sent, mut got) = (0, Vec::new());
        while got.len() < msg.len() {
            sent += a.write(&msg[sent..]);
            assert!(a.unread() <= 4096);
            assert!(!read_all(&mut b, &mut got));
        }
        assert_eq!(got, msg);
        assert_eq!(b.write(b"back"), 4);
        let mut back = Vec::new();
        assert!(!read_all(&mut a, &mut back));
        assert_eq!(back, b"back");
        // The creator leaves with bytes unread: they are still delivered, then Eof.
        assert_eq!(a.write(b"last"), 4);
        a.close();
        let mut tail = Vec::new();
        assert!(read_all(&mut b, &mut tail));
        assert_eq!(tail, b"last");
    }

    #[test]
    fn a_pipe_never_opened_is_removed_by_its_creator_and_bad_arguments_are_refused() {
        let job = format!("pipe-unit2-{}", std::process::id());
        let path = format!("/dev/shm/linerate-{job}-pipe-2-5");
        let a = ShmPipe::create(&job, 2, 5, 8192).unwrap();
        assert!(std::path::Path::new(&path).exists());
        drop(a);
        assert!(!std::path::Path::new(&path).exists());
        assert!(ShmPipe::create(&job, 5, 2, 8192).is_err(), "the lower rank creates");
        assert!(ShmPipe::create(&job, 0, 1, 5000).is_err(), "not a power of two");
        assert!(ShmPipe::create("a\0b", 0, 1, 8192).is_err());
    }
}
