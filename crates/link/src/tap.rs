//! A Linux TAP device: frames written here enter the kernel as if received on `ifname`.
//!
//! The TAP is created in the network namespace of the calling thread; [`create_in_netns`]
//! creates it inside a named namespace from a short-lived thread. The descriptor is
//! non-blocking: `rx_batch` reads until `EAGAIN` or the batch is full, `tx_batch` writes until
//! `EAGAIN` (the rest stays in the batch).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::ifreq::{self, would_block};
use crate::netns::run_in_netns;
use crate::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};

/// A TAP device (Ethernet frames, no packet-information header).
pub struct TapLink {
    fd: OwnedFd,
    ifname: String,
    max_frame: usize,
    stats: LinkStats,
    /// Receive buffer for batches whose slots are smaller than a frame can be.
    scratch: Box<[u8]>,
}

fn check_mtu(mtu: usize) -> Result<(), LinkError> {
    if !(68..=MAX_FRAME - 18).contains(&mtu) {
        return Err(LinkError::Config(format!("TAP mtu {mtu} is outside 68..={}", MAX_FRAME - 18)));
    }
    Ok(())
}

impl TapLink {
    /// Create (or attach to) TAP `ifname` in this thread's namespace, set its MTU and bring it up.
    ///
    /// Not run as a doctest: it needs root (CAP_NET_ADMIN) and `/dev/net/tun`.
    ///
    /// ```no_run
    /// use link::tap::TapLink;
    /// use link::{FrameBatch, Instant, Link};
    /// let mut tap = TapLink::open("lr0", 1500)?;
    /// // Linux sees the device lr0 (`ip addr add 10.0.0.1/24 dev lr0`); what it sends there
    /// // arrives here (a `net::Stack` on this link answers it as a host).
    /// let mut rx = FrameBatch::new(32, tap.max_frame());
    /// let n = tap.rx_batch(Instant::now(), &mut rx)?;
    /// # let _ = n;
    /// # Ok::<(), link::LinkError>(())
    /// ```
    pub fn open(ifname: &str, mtu: usize) -> Result<TapLink, LinkError> {
        check_mtu(mtu)?;
        let mut req = ifreq::ifreq(ifname)?;
        // SAFETY: valid C string literal; plain open(2).
        let fd = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(LinkError::last_os("open /dev/net/tun"));
        }
        // SAFETY: fd was just returned by open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads a valid ifreq (name + flags) and may write the name back.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) } != 0 {
            return Err(LinkError::last_os("TUNSETIFF (create the TAP device)"));
        }
        ifreq::set_mtu_and_up(ifname, mtu)?;
        Self::from_fd(fd, ifname, mtu)
    }

    /// Wrap a TAP descriptor somebody else configured (it is made non-blocking).
    pub fn from_fd(fd: OwnedFd, ifname: &str, mtu: usize) -> Result<TapLink, LinkError> {
        check_mtu(mtu)?;
        // SAFETY: fd is a valid open descriptor we own.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(LinkError::last_os("fcntl F_GETFL on the TAP"));
        }
        // SAFETY: as above; only adds O_NONBLOCK to the flags just read.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(LinkError::last_os("fcntl O_NONBLOCK on the TAP"));
        }
        let max_frame = mtu + 18;
        Ok(TapLink {
            fd,
            ifname: ifname.to_string(),
            max_frame,
            stats: LinkStats::default(),
            scratch: vec![0u8; max_frame + 1].into_boxed_slice(),
        })
    }

    /// The interface's name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Read one frame into `buf`: Ok(Some(len)), Ok(None) when nothing is waiting.
    fn read_into(fd: i32, buf: &mut [u8]) -> Result<Option<usize>, LinkError> {
        for _ in 0..8 {
            // SAFETY: buf is a valid writable buffer of buf.len() bytes.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let e = std::io::Error::last_os_error();
            if would_block(&e) {
                return Ok(None);
            }
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(LinkError::Os { op: "read from the TAP", source: e });
            }
        }
        Ok(None)
    }
}

/// Create TAP `ifname` inside network namespace `netns_name` (`/var/run/netns/<name>`),
/// set its MTU and bring it up there; the returned link works from any thread.
pub fn create_in_netns(netns_name: &str, ifname: &str, mtu: usize) -> Result<TapLink, LinkError> {
    let ifname = ifname.to_string();
    run_in_netns(netns_name, move || TapLink::open(&ifname, mtu))
}

impl Link for TapLink {
    fn max_frame(&self) -> usize {
        self.max_frame
    }

    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let fd = self.fd.as_raw_fd();
        let direct = batch.slot_size() > self.max_frame;
        let mut got = 0;
        // Bounded: every read consumes a frame from the kernel, dropped or kept.
        for _ in 0..batch.capacity() * 2 + 16 {
            if batch.is_full() {
                break;
            }
            // One byte more than the largest frame, so an oversize frame shows as truncated.
            let len = if direct {
                let mut res = Ok(None);
                let max = self.max_frame + 1;
                // The outcome is in `res` (a frame, nothing, or an oversize one), so whether
                // the slot was kept says nothing more.
                let _ = batch.push_with(|slot| {
                    res = Self::read_into(fd, &mut slot[..max]);
                    match &res {
                        Ok(Some(n)) if *n > 0 && *n < max => *n,
                        _ => 0,
                    }
                });
                res?
            } else {
                let res = Self::read_into(fd, &mut self.scratch)?;
                if let Some(n) = res.filter(|&n| n > 0 && n <= self.max_frame) {
                    if !batch.push(&self.scratch[..n]) {
                        self.stats.rx_dropped_no_room += 1;
                        continue;
                    }
                }
                res
            };
            match len {
                None | Some(0) => break,
                Some(n) if n > self.max_frame => self.stats.dropped_oversize += 1,
                Some(n) => {
                    got += 1;
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += n as u64;
                }
            }
        }
        Ok(got)
    }

    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let fd = self.fd.as_raw_fd();
        let (mut i, mut sent) = (0, 0);
        let mut error = None;
        while i < batch.len() {
            let frame = batch.get(i);
            if frame.len() > self.max_frame {
                self.stats.dropped_oversize += 1;
                i += 1;
                continue;
            }
            // SAFETY: frame is a valid readable buffer of frame.len() bytes.
            let n = unsafe { libc::write(fd, frame.as_ptr() as *const libc::c_void, frame.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if would_block(&e) {
                    break;
                }
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                error = Some(e);
                break;
            }
            self.stats.tx_frames += 1;
            self.stats.tx_bytes += frame.len() as u64;
            sent += 1;
            i += 1;
        }
        batch.consume_front(i);
        match error {
            // Report the failure only when nothing went out, so no sent frame is double-counted.
            Some(source) if sent == 0 => Err(LinkError::Os { op: "write to the TAP", source }),
            _ => Ok(sent),
        }
    }

    fn stats(&self) -> LinkStats {
        self.stats
    }

    fn kind(&self) -> &'static str {
        "tap"
    }

    fn raw_fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_arguments_are_config_errors() {
        assert!(matches!(TapLink::open("lrtap0", 10), Err(LinkError::Config(_))));
        assert!(matches!(TapLink::open("name/with/slash", 1500), Err(LinkError::Config(_))));
        assert!(matches!(create_in_netns("lrt-no-such-ns-x", "lrtap0", 1500), Err(LinkError::Config(_))));
    }
}
