//! AF_PACKET on an existing interface, moving batches with `recvmmsg` / `sendmmsg`.
//!
//! The socket is bound to one interface for all EtherTypes and ignores frames sent out of it
//! (PACKET_IGNORE_OUTGOING), so it sees what the wire delivers. It is created in the calling
//! thread's network namespace; [`create_in_netns`] opens it inside a named namespace.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::ifreq::{self, would_block};
use crate::netns::run_in_netns;
use crate::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};

/// Frames moved per system call.
pub const MMSG_BATCH: usize = 64;
/// `PACKET_IGNORE_OUTGOING` from `<linux/if_packet.h>` (Linux 4.20+).
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
/// `PACKET_QDISC_BYPASS` from `<linux/if_packet.h>` (Linux 3.14+).
const PACKET_QDISC_BYPASS: libc::c_int = 20;
/// Receive and send buffer asked of the kernel, bytes.
const SOCKET_BUFFER: libc::c_int = 8 << 20;

/// An AF_PACKET raw socket bound to one interface.
pub struct PacketLink {
    fd: OwnedFd,
    ifname: String,
    max_frame: usize,
    stats: LinkStats,
    /// Frames the kernel dropped because the socket's receive queue was full, summed from
    /// `PACKET_STATISTICS` (which resets on every read).
    kernel_dropped: std::cell::Cell<u64>,
    /// Receive buffers: MMSG_BATCH slots of `buf_size` bytes.
    bufs: Box<[u8]>,
    buf_size: usize,
    iovs: Box<[libc::iovec]>,
    msgs: Box<[libc::mmsghdr]>,
}

// SAFETY: the raw pointers inside `iovs` and `msgs` are scratch space, rewritten before every
// system call to point into `bufs` or the caller's batch; nothing else refers to them.
unsafe impl Send for PacketLink {}

fn setsockopt_int(
    fd: i32,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
    op: &'static str,
) -> Result<(), LinkError> {
    // SAFETY: value is a live c_int and the length passed matches it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(LinkError::last_os(op));
    }
    Ok(())
}

impl PacketLink {
    /// Open a raw socket on `ifname` (in this thread's namespace) for frames up to `mtu + 18` bytes.
    pub fn open(ifname: &str, mtu: usize) -> Result<PacketLink, LinkError> {
        if !(68..=MAX_FRAME - 18).contains(&mtu) {
            return Err(LinkError::Config(format!("AF_PACKET mtu {mtu} is outside 68..={}", MAX_FRAME - 18)));
        }
        let ifindex = ifreq::index(ifname)?;
        // Protocol 0: the socket receives nothing until bound to the interface below, so no
        // frame of another interface slips in between socket() and bind().
        // SAFETY: plain socket(2) call.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(LinkError::last_os("socket(AF_PACKET)"));
        }
        // SAFETY: fd was just returned by socket and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        setsockopt_int(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            1,
            "setsockopt PACKET_IGNORE_OUTGOING",
        )?;
        // Room for bursts: the default socket buffer (about 200 KiB) holds some 90 full-size
        // frames, and a frame dropped there is a TCP retransmission. As root the limit is
        // lifted (SO_*BUFFORCE); otherwise the system's maximum applies.
        for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
            if setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, force, SOCKET_BUFFER, "SO_*BUFFORCE").is_err() {
                let _ = setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, plain, SOCKET_BUFFER, "SO_*BUF");
            }
        }
        // Sent frames go straight to the driver, past the queueing discipline (as AF_XDP's do).
        let _ = setsockopt_int(fd.as_raw_fd(), libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS");
        // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: sll is a valid sockaddr_ll and the length matches.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(LinkError::last_os("bind of the AF_PACKET socket"));
        }
        let max_frame = mtu + 18;
        let buf_size = (max_frame + 1).next_multiple_of(64);
        // SAFETY: iovec and mmsghdr are plain old data; all-zero (null pointers) is valid.
        let (iov0, msg0): (libc::iovec, libc::mmsghdr) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        Ok(PacketLink {
            fd,
            ifname: ifname.to_string(),
            max_frame,
            stats: LinkStats::default(),
            kernel_dropped: std::cell::Cell::new(0),
            bufs: vec![0u8; MMSG_BATCH * buf_size].into_boxed_slice(),
            buf_size,
            iovs: vec![iov0; MMSG_BATCH].into_boxed_slice(),
            msgs: vec![msg0; MMSG_BATCH].into_boxed_slice(),
        })
    }

    /// The interface's name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Point message `i` at iovec `i`, which covers `len` bytes at `ptr`.
    fn prepare(&mut self, i: usize, ptr: *mut u8, len: usize) {
        self.iovs[i] = libc::iovec { iov_base: ptr as *mut libc::c_void, iov_len: len };
        let m = &mut self.msgs[i];
        m.msg_hdr.msg_name = std::ptr::null_mut();
        m.msg_hdr.msg_namelen = 0;
        m.msg_hdr.msg_iov = &mut self.iovs[i];
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_control = std::ptr::null_mut();
        m.msg_hdr.msg_controllen = 0;
        m.msg_hdr.msg_flags = 0;
        m.msg_len = 0;
    }

    /// Send frames `from..from + n` of `batch` with one sendmmsg; returns how many went out.
    fn send_run(&mut self, batch: &FrameBatch, from: usize, n: usize) -> Result<usize, std::io::Error> {
        for k in 0..n {
            let f = batch.get(from + k);
            self.prepare(k, f.as_ptr() as *mut u8, f.len());
        }
        loop {
            // SAFETY: msgs[..n] point at iovecs covering live frames of `batch`, which the
            // kernel only reads (sendmmsg); n <= MMSG_BATCH.
            let r = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), self.msgs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT)
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Open an AF_PACKET link on `ifname` inside network namespace `netns_name`.
pub fn create_in_netns(netns_name: &str, ifname: &str, mtu: usize) -> Result<PacketLink, LinkError> {
    let ifname = ifname.to_string();
    run_in_netns(netns_name, move || PacketLink::open(&ifname, mtu))
}

impl Link for PacketLink {
    fn max_frame(&self) -> usize {
        self.max_frame
    }

    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let want = (batch.capacity() - batch.len()).min(MMSG_BATCH);
        if want == 0 {
            return Ok(0);
        }
        let base = self.bufs.as_mut_ptr();
        for i in 0..want {
            // SAFETY: i < MMSG_BATCH, so the buffer lies inside `bufs`.
            let p = unsafe { base.add(i * self.buf_size) };
            self.prepare(i, p, self.buf_size);
        }
        // SAFETY: msgs[..want] point at iovecs covering distinct buffers inside `bufs`.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                want as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if would_block(&e) || e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(LinkError::Os { op: "recvmmsg on the AF_PACKET socket", source: e });
        }
        let mut got = 0;
        for i in 0..r as usize {
            let len = self.msgs[i].msg_len as usize;
            let truncated = self.msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            if truncated || len > self.max_frame {
                self.stats.dropped_oversize += 1;
                continue;
            }
            let start = i * self.buf_size;
            if batch.push(&self.bufs[start..start + len]) {
                got += 1;
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += len as u64;
            } else {
                self.stats.rx_dropped_no_room += 1;
            }
        }
        Ok(got)
    }

    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let total = batch.len();
        let (mut i, mut sent) = (0usize, 0usize);
        let mut error = None;
        // Bounded: each round either consumes frames or stops.
        while i < total {
            if batch.get(i).len() > self.max_frame {
                self.stats.dropped_oversize += 1;
                i += 1;
                continue;
            }
            let mut n = 0;
            while i + n < total && n < MMSG_BATCH && batch.get(i + n).len() <= self.max_frame {
                n += 1;
            }
            match self.send_run(batch, i, n) {
                Ok(k) => {
                    for f in 0..k {
                        self.stats.tx_bytes += batch.get(i + f).len() as u64;
                    }
                    self.stats.tx_frames += k as u64;
                    sent += k;
                    i += k;
                    if k < n {
                        break;
                    }
                }
                Err(e) if would_block(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        batch.consume_front(i);
        match error {
            // Report the failure only when nothing went out, so no sent frame is double-counted.
            Some(source) if sent == 0 => Err(LinkError::Os { op: "sendmmsg on the AF_PACKET socket", source }),
            _ => Ok(sent),
        }
    }

    fn stats(&self) -> LinkStats {
        let mut t = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: getsockopt fills a tpacket_stats of the length given.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut t as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 {
            self.kernel_dropped.set(self.kernel_dropped.get() + u64::from(t.tp_drops));
        }
        LinkStats { rx_kernel_dropped: self.kernel_dropped.get(), ..self.stats }
    }

    fn kind(&self) -> &'static str {
        "af_packet"
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
        assert!(matches!(PacketLink::open("lo", 10), Err(LinkError::Config(_))));
        assert!(matches!(PacketLink::open("surely-no-such", 1500), Err(LinkError::Config(_))));
        assert!(matches!(create_in_netns("lrt-no-such-ns-y", "veth0", 1500), Err(LinkError::Config(_))));
    }
}
