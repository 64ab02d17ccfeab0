//! AF_XDP on an existing interface: frames move through a UMEM shared with the kernel, with no
//! system call per frame and, through [`Link::rx_in_place`] / [`Link::tx_in_place`], no copy
//! in the stack: a received frame is parsed where the kernel put it and a sent frame is built
//! where the kernel takes it.
//!
//! [`XdpInterface::attach`] loads linerate's steering program ([`program`], assembled by this
//! crate from its source) on the interface through a BPF link, which the kernel detaches when
//! the last process holding it exits, killed or not. Native XDP is tried first, then generic
//! (SKB) mode, which [`XdpInterface::mode`] reports (callers warn). Frames for the stack (see
//! [`Steer`]) go to the socket of the queue they arrived on; every other frame passes on to
//! the kernel. [`XdpInterface::open_queue`] binds one socket per queue (zero-copy where the
//! driver supports it, copy mode elsewhere: [`XdpLink::zero_copy`]); one stack per queue is
//! the shared-nothing layout of `docs/DESIGN.md`.
//!
//! Each queue's UMEM holds `ring` chunks of 4 KiB for receiving (all lent to the kernel
//! through the fill ring) and `ring` for sending (taken back from the completion ring).
//! Frames longer than a chunk (jumbo MTUs) use multi-buffer descriptors (`XDP_USE_SG`, Linux
//! 6.6+); received ones are gathered into a scratch buffer, sent ones are split over chunks.
//! The kernel's own drops (receive ring full, no free buffer) are in [`LinkStats`].

mod bpf;
pub mod program;
mod rings;
mod sys;
mod umem;

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

pub use program::Steer;
use rings::MappedRing;
use sys::{MmapOffsets, SockaddrXdp, UmemReg, XdpDesc, XdpStatistics};
use umem::{Umem, CHUNK};

use crate::ifreq;
use crate::netns::run_in_netns;
use crate::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};

/// Largest frame one chunk holds on receive (the kernel keeps 256 bytes of headroom).
const CHUNK_FRAME: usize = CHUNK - sys::XDP_PACKET_HEADROOM;
/// Slots in the socket map: queues 0..MAX_QUEUES can carry a socket.
pub const MAX_QUEUES: u32 = 64;

/// How the steering program runs on the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// Run by the driver before any socket buffer exists.
    Native,
    /// Run by the kernel after building a socket buffer (any interface; slower).
    Generic,
}

/// Options of an AF_XDP attachment.
#[derive(Debug, Clone)]
pub struct XdpConfig {
    /// IP MTU the stack uses; frames up to `mtu + 18` bytes. `None`: the interface's MTU.
    pub mtu: Option<usize>,
    /// Which frames go to linerate; the rest pass to the kernel.
    pub steer: Steer,
    /// Slots of each ring, a power of two (default 2048); also the chunks each direction owns.
    pub ring: u32,
    /// Insist on generic (SKB) mode instead of trying native first.
    pub force_generic: bool,
    /// Insist on copy mode instead of trying zero-copy first.
    pub force_copy: bool,
}

impl XdpConfig {
    /// Defaults for `steer`: the interface's MTU, 2048-slot rings, native and zero-copy tried first.
    pub fn new(steer: Steer) -> XdpConfig {
        XdpConfig { mtu: None, steer, ring: 2048, force_generic: false, force_copy: false }
    }
}

/// linerate's steering program attached to one interface, shared by its queues' sockets.
/// Dropping the last handle (and every [`XdpLink`] of it) detaches the program.
pub struct XdpInterface {
    ifname: String,
    ifindex: u32,
    mtu: usize,
    mode: XdpMode,
    frags: bool,
    ring: u32,
    force_copy: bool,
    map: OwnedFd,
    _prog: OwnedFd,
    _attachment: OwnedFd,
}

fn config_err(msg: String) -> LinkError {
    LinkError::Config(msg)
}

impl XdpInterface {
    /// Attach linerate's program to `ifname` (in this thread's network namespace).
    pub fn attach(ifname: &str, config: &XdpConfig) -> Result<Arc<XdpInterface>, LinkError> {
        if !config.ring.is_power_of_two() || !(64..=16384).contains(&config.ring) {
            return Err(config_err(format!("AF_XDP ring size {} must be a power of two in 64..=16384", config.ring)));
        }
        let ifindex = ifreq::index(ifname)? as u32;
        let (up, if_mtu) = ifreq::flags_and_mtu(ifname)?;
        if !up {
            return Err(config_err(format!("interface {ifname} is down: bring it up with `ip link set {ifname} up`")));
        }
        let mtu = config.mtu.unwrap_or(if_mtu);
        if !(68..=MAX_FRAME - 18).contains(&mtu) {
            return Err(config_err(format!("AF_XDP mtu {mtu} is outside 68..={}", MAX_FRAME - 18)));
        }
        let frags = mtu + 18 > CHUNK_FRAME;
        let map = bpf::create_xskmap(MAX_QUEUES)?;
        let insns = program::steering_program(&config.steer, map.as_raw_fd());
        let prog = bpf::load_xdp_program(&insns, frags).map_err(|e| match e {
            LinkError::Config(m) if frags => config_err(format!(
                "MTU {mtu} on {ifname} needs multi-buffer XDP, which this kernel refused ({m}); the largest MTU without it is {}",
                CHUNK_FRAME - 18
            )),
            other => other,
        })?;
        let modes: &[(u32, XdpMode)] = if config.force_generic {
            &[(bpf::XDP_FLAGS_SKB_MODE, XdpMode::Generic)]
        } else {
            &[(bpf::XDP_FLAGS_DRV_MODE, XdpMode::Native), (bpf::XDP_FLAGS_SKB_MODE, XdpMode::Generic)]
        };
        let mut last = None;
        for &(flags, mode) in modes {
            match attach_when_free(&prog, ifindex, flags) {
                Ok(attachment) => {
                    return Ok(Arc::new(XdpInterface {
                        ifname: ifname.to_string(),
                        ifindex,
                        mtu,
                        mode,
                        frags,
                        ring: config.ring,
                        force_copy: config.force_copy,
                        map,
                        _prog: prog,
                        _attachment: attachment,
                    }))
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EEXIST)) => {
                    return Err(config_err(format!(
                        "{ifname} already has an XDP program attached (see `ip link show {ifname}`): \
                         detach it (`ip link set {ifname} xdp off`, or `linerate cleanup` if a killed linerate left it)"
                    )));
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) => {
                    return Err(config_err(format!(
                        "attaching XDP to {ifname} needs CAP_NET_ADMIN and CAP_BPF (run as root): {e}"
                    )));
                }
                Err(e) => last = Some(e),
            }
        }
        let e = last.expect("at least one mode tried");
        Err(config_err(format!(
            "{ifname} takes no XDP program ({e}); the kernel needs CONFIG_XDP_SOCKETS and generic XDP: use af_packet:{ifname} instead"
        )))
    }

    /// The interface's name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The IP MTU the queues carry.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// Native or generic XDP, whichever the kernel accepted.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// True when frames longer than a chunk use multi-buffer descriptors.
    pub fn multi_buffer(&self) -> bool {
        self.frags
    }

    /// Open the socket of queue `queue` and put it in the program's map.
    pub fn open_queue(self: &Arc<Self>, queue: u32) -> Result<XdpLink, LinkError> {
        if queue >= MAX_QUEUES {
            return Err(config_err(format!("AF_XDP queue {queue} is beyond the {MAX_QUEUES} linerate supports")));
        }
        let try_zero_copy = !self.force_copy;
        // A socket closed a moment ago frees its queue in deferred kernel work: a busy queue
        // is retried for a bounded while before it is reported.
        let mut tries = 0;
        let mut bind = |zc: bool| loop {
            match XdpLink::bind(self, queue, zc) {
                Err(LinkError::Os { source, .. })
                    if source.raw_os_error() == Some(libc::EBUSY) && tries < BUSY_RETRIES =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => return other,
            }
        };
        let link = match bind(try_zero_copy) {
            Err(LinkError::Os { source, .. })
                if try_zero_copy && matches!(source.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)) =>
            {
                bind(false).map_err(busy_sentence(&self.ifname, queue))?
            }
            other => other.map_err(busy_sentence(&self.ifname, queue))?,
        };
        bpf::map_set(&self.map, queue, &link.fd)?;
        Ok(link)
    }
}

/// Attach `prog` to `ifindex` in mode `flags`, trying again for up to [`BUSY_RETRIES`] x 10 ms
/// while the interface says an XDP program is there: a program of a socket closed a moment ago
/// (a process that just exited, an open that just failed) is detached by deferred kernel work.
fn attach_when_free(prog: &OwnedFd, ifindex: u32, flags: u32) -> std::io::Result<OwnedFd> {
    let mut tries = 0;
    loop {
        match bpf::attach_xdp(prog, ifindex, flags) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EEXIST)) && tries < BUSY_RETRIES => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Tries of a bind whose queue is busy (10 ms apart) before it is reported.
const BUSY_RETRIES: u32 = 30;

/// The sentence for a queue another socket holds; other errors pass unchanged.
fn busy_sentence(ifname: &str, queue: u32) -> impl Fn(LinkError) -> LinkError + '_ {
    move |e| {
        match e {
        LinkError::Os { source, .. } if source.raw_os_error() == Some(libc::EBUSY) => config_err(format!(
            "queue {queue} of {ifname} is already used by another AF_XDP socket (another linerate?): stop it or pick other queues"
        )),
        other => other,
    }
    }
}

/// Attach to `ifname` in this thread's namespace and open queues `0..queues`.
pub fn open(ifname: &str, queues: u32, config: &XdpConfig) -> Result<Vec<XdpLink>, LinkError> {
    let iface = XdpInterface::attach(ifname, config)?;
    (0..queues.max(1)).map(|q| iface.open_queue(q)).collect()
}

/// [`open`] inside network namespace `netns_name`.
pub fn create_in_netns(
    netns_name: &str,
    ifname: &str,
    queues: u32,
    config: &XdpConfig,
) -> Result<Vec<XdpLink>, LinkError> {
    let (ifname, config) = (ifname.to_string(), config.clone());
    run_in_netns(netns_name, move || open(&ifname, queues, &config))
}

/// The receive side of a queue: RX and fill rings over the first half of the UMEM.
struct RxSide {
    fd: i32,
    ring: MappedRing<XdpDesc>,
    fill: MappedRing<u64>,
    base: *mut u8,
    /// Where a multi-buffer frame is gathered.
    scratch: Vec<u8>,
    frames: u64,
    bytes: u64,
    oversize: u64,
    no_room: u64,
}

/// The transmit side of a queue: TX and completion rings over the second half of the UMEM,
/// itself a [`Link`] that never receives, lent beside frames handed out in place.
pub struct XdpTx {
    fd: i32,
    ring: MappedRing<XdpDesc>,
    comp: MappedRing<u64>,
    base: *mut u8,
    /// Transmit chunks we own (not in the TX ring, not awaiting completion).
    free: Vec<u64>,
    /// Descriptors written by `tx_in_place` and not yet submitted.
    staged: u32,
    zero_copy: bool,
    max_frame: usize,
    frames: u64,
    bytes: u64,
    oversize: u64,
}

// SAFETY: `base` points into the UMEM owned by the XdpLink that owns this side; the chunks it
// touches through it are this side's alone (see the module docs), so it may move with its link.
unsafe impl Send for XdpTx {}
// SAFETY: as for XdpTx: the receive chunks are the receive side's alone.
unsafe impl Send for RxSide {}

/// One queue of an interface as a [`Link`].
pub struct XdpLink {
    rx: RxSide,
    tx: XdpTx,
    queue: u32,
    fd: OwnedFd,
    iface: Arc<XdpInterface>,
    // Dropped after the rings (fields drop in order): the kernel's view of it goes with `fd`.
    _umem: Umem,
}

impl XdpLink {
    fn bind(iface: &Arc<XdpInterface>, queue: u32, zero_copy: bool) -> Result<XdpLink, LinkError> {
        let n = iface.ring;
        let umem = Umem::new(2 * n as usize)?;
        let fd = sys::xdp_socket()?;
        let reg = UmemReg {
            addr: umem.base() as u64,
            len: umem.len() as u64,
            chunk_size: CHUNK as u32,
            ..Default::default()
        };
        sys::set(&fd, sys::XDP_UMEM_REG, &reg, "AF_XDP UMEM registration")?;
        for (opt, what) in [
            (sys::XDP_UMEM_FILL_RING, "AF_XDP fill ring size"),
            (sys::XDP_UMEM_COMPLETION_RING, "AF_XDP completion ring size"),
            (sys::XDP_RX_RING, "AF_XDP RX ring size"),
            (sys::XDP_TX_RING, "AF_XDP TX ring size"),
        ] {
            sys::set(&fd, opt, &n, what)?;
        }
        let off: MmapOffsets = sys::get(&fd, sys::XDP_MMAP_OFFSETS, "AF_XDP ring offsets")?;
        let rx_ring = MappedRing::<XdpDesc>::map(&fd, &off.rx, n, sys::XDP_PGOFF_RX_RING, false)?;
        let tx_ring = MappedRing::<XdpDesc>::map(&fd, &off.tx, n, sys::XDP_PGOFF_TX_RING, true)?;
        let mut fill = MappedRing::<u64>::map(&fd, &off.fr, n, sys::XDP_UMEM_PGOFF_FILL_RING, true)?;
        let comp = MappedRing::<u64>::map(&fd, &off.cr, n, sys::XDP_UMEM_PGOFF_COMPLETION_RING, false)?;
        // Lend every receive chunk to the kernel before binding.
        let got = fill.free(n);
        debug_assert_eq!(got, n);
        for i in 0..n {
            fill.write(i, u64::from(i) * CHUNK as u64);
        }
        fill.submit(n);
        let mut flags = sys::XDP_USE_NEED_WAKEUP | if zero_copy { sys::XDP_ZEROCOPY } else { sys::XDP_COPY };
        if iface.frags {
            flags |= sys::XDP_USE_SG;
        }
        let sa = SockaddrXdp {
            family: sys::AF_XDP as u16,
            flags,
            ifindex: iface.ifindex,
            queue_id: queue,
            shared_umem_fd: 0,
        };
        // SAFETY: sa is a valid sockaddr_xdp and the length matches it.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sa as *const SockaddrXdp as *const libc::sockaddr,
                std::mem::size_of::<SockaddrXdp>() as libc::socklen_t,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            let name = &iface.ifname;
            return Err(match e.raw_os_error() {
                Some(libc::EINVAL) if !zero_copy => config_err(format!(
                    "{name} has no queue {queue} (or refuses AF_XDP on it): use fewer queues (`ethtool -l {name}` lists them)"
                )),
                Some(libc::EOPNOTSUPP) if iface.frags && !zero_copy => config_err(format!(
                    "{name} cannot carry MTU {} over AF_XDP (no multi-buffer support); the largest MTU without it is {}",
                    iface.mtu,
                    CHUNK_FRAME - 18
                )),
                _ => LinkError::Os { op: "bind of the AF_XDP socket", source: e },
            });
        }
        let options: u32 = sys::get(&fd, sys::XDP_OPTIONS, "AF_XDP options").unwrap_or(0);
        let zero_copy = options & sys::XDP_OPTIONS_ZEROCOPY != 0;
        let max_frame = iface.mtu + 18;
        let base = umem.base();
        Ok(XdpLink {
            rx: RxSide {
                fd: fd.as_raw_fd(),
                ring: rx_ring,
                fill,
                base,
                scratch: Vec::with_capacity(if iface.frags { max_frame } else { 0 }),
                frames: 0,
                bytes: 0,
                oversize: 0,
                no_room: 0,
            },
            tx: XdpTx {
                fd: fd.as_raw_fd(),
                ring: tx_ring,
                comp,
                base,
                free: (n..2 * n).map(|i| u64::from(i) * CHUNK as u64).collect(),
                staged: 0,
                zero_copy,
                max_frame,
                frames: 0,
                bytes: 0,
                oversize: 0,
            },
            queue,
            fd,
            iface: Arc::clone(iface),
            _umem: umem,
        })
    }

    /// The queue this socket is bound to.
    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// The attachment this queue belongs to (mode, MTU, interface name).
    pub fn interface(&self) -> &Arc<XdpInterface> {
        &self.iface
    }

    /// True if the kernel bound the socket in zero-copy mode (false: copy mode).
    pub fn zero_copy(&self) -> bool {
        self.tx.zero_copy
    }

    /// The kernel's counters of this socket.
    pub fn kernel_stats(&self) -> XdpStatistics {
        sys::get(&self.fd, sys::XDP_STATISTICS, "AF_XDP statistics").unwrap_or_default()
    }

    /// "native/copy" and the like, for reports.
    pub fn mode_label(&self) -> String {
        let m = match self.iface.mode {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        };
        format!("{m}/{}", if self.zero_copy() { "zero-copy" } else { "copy" })
    }
}

impl Drop for XdpLink {
    fn drop(&mut self) {
        bpf::map_clear(&self.iface.map, self.queue);
    }
}

impl RxSide {
    /// Hand up to `max` received frames to `f` (gathering multi-buffer ones), then give their
    /// chunks back to the kernel; returns the frames handed.
    fn drain(&mut self, max: usize, max_frame: usize, mut f: impl FnMut(&[u8])) -> usize {
        let ready = self.ring.ready(u32::MAX);
        let (mut i, mut handed) = (0u32, 0usize);
        while i < ready && handed < max {
            // Find the frame's last descriptor; a frame cut by `ready` waits for the next call.
            let mut last = i;
            while self.ring.read(last).options & sys::XDP_PKT_CONTD != 0 && last + 1 < ready {
                last += 1;
            }
            if self.ring.read(last).options & sys::XDP_PKT_CONTD != 0 {
                break;
            }
            let first = self.ring.read(i);
            if last == i {
                let len = first.len as usize;
                if len > max_frame {
                    self.oversize += 1;
                } else {
                    // SAFETY: the kernel wrote `len` bytes at `addr` inside a receive chunk it
                    // handed back to us through the RX ring; nobody writes the chunk until we
                    // put it back in the fill ring below.
                    let frame = unsafe { std::slice::from_raw_parts(self.base.add(first.addr as usize), len) };
                    f(frame);
                    handed += 1;
                    self.frames += 1;
                    self.bytes += len as u64;
                }
            } else if self.gather(i, last, max_frame) {
                f(&self.scratch);
                handed += 1;
                self.frames += 1;
                self.bytes += self.scratch.len() as u64;
            } else {
                self.oversize += 1;
            }
            i = last + 1;
        }
        if i > 0 {
            self.recycle(i);
        }
        handed
    }

    /// Copy the fragments in descriptors `first..=last` into the scratch buffer; false if the
    /// frame is longer than `max_frame`.
    fn gather(&mut self, first: u32, last: u32, max_frame: usize) -> bool {
        self.scratch.clear();
        for k in first..=last {
            let d = self.ring.read(k);
            if self.scratch.len() + d.len as usize > max_frame {
                return false;
            }
            // SAFETY: as for a single-chunk frame in `drain`, for each fragment's chunk.
            let part = unsafe { std::slice::from_raw_parts(self.base.add(d.addr as usize), d.len as usize) };
            self.scratch.extend_from_slice(part);
        }
        true
    }

    /// Give the chunks of the first `n` RX descriptors back to the kernel through the fill
    /// ring (which always has room for them: the receive chunks are exactly its slots).
    fn recycle(&mut self, n: u32) {
        let back = n.min(self.fill.free(n));
        for k in 0..back {
            let addr = self.ring.read(k).addr & !(CHUNK as u64 - 1);
            self.fill.write(k, addr);
        }
        self.fill.submit(back);
        self.ring.release(n);
        if self.fill.needs_wakeup() {
            // SAFETY: a zero-timeout poll of our own socket, which prompts the driver to refill.
            let mut pfd = libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 };
            unsafe { libc::poll(&mut pfd, 1, 0) };
        }
    }
}

impl XdpTx {
    /// Take back chunks the kernel has finished sending.
    fn reap(&mut self) {
        let n = self.comp.ready(u32::MAX);
        for i in 0..n {
            self.free.push(self.comp.read(i) & !(CHUNK as u64 - 1));
        }
        self.comp.release(n);
    }

    /// Submit staged descriptors and prompt the kernel to send them.
    fn flush(&mut self) -> Result<(), LinkError> {
        if self.staged > 0 {
            self.ring.submit(self.staged);
            self.staged = 0;
        }
        if self.ring.in_flight() == 0 || (self.zero_copy && !self.ring.needs_wakeup()) {
            return Ok(());
        }
        // Copy mode sends a bounded number of frames per call and says EAGAIN when more wait:
        // call again while it makes progress, a bounded number of times.
        for _ in 0..(self.ring.entries() / 16 + 2) {
            // SAFETY: a zero-length send on our own socket: the kernel walks the TX ring.
            let r = unsafe { libc::sendto(self.fd, std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
            if r >= 0 && self.ring.in_flight() == 0 {
                break;
            }
            if r < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) | Some(libc::EINTR) => {
                        if self.ring.in_flight() == 0 {
                            break;
                        }
                    }
                    Some(libc::ENETDOWN) | Some(libc::ENXIO) => {
                        return Err(LinkError::Os {
                            op: "send on the AF_XDP socket (is the interface down?)",
                            source: e,
                        })
                    }
                    _ => return Err(LinkError::Os { op: "send on the AF_XDP socket", source: e }),
                }
            }
        }
        Ok(())
    }

    /// The frame bytes of chunk `addr`.
    fn chunk(&mut self, addr: u64) -> &mut [u8] {
        // SAFETY: `addr` is a transmit chunk we own (taken from `free`), CHUNK bytes inside the UMEM.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(addr as usize), CHUNK) }
    }

    /// Queue `frame` (split over chunks when longer than one); false if no room.
    fn push(&mut self, frame: &[u8]) -> bool {
        let parts = frame.len().div_ceil(CHUNK).max(1) as u32;
        if self.free.len() < parts as usize {
            self.reap();
        }
        if self.free.len() < parts as usize || self.ring.free(self.staged + parts) < self.staged + parts {
            return false;
        }
        for (k, piece) in frame.chunks(CHUNK).enumerate() {
            let addr = self.free.pop().expect("counted above");
            self.chunk(addr)[..piece.len()].copy_from_slice(piece);
            let options = if (k as u32) + 1 < parts { sys::XDP_PKT_CONTD } else { 0 };
            let at = self.staged;
            self.ring.write(at, XdpDesc { addr, len: piece.len() as u32, options });
            self.staged += 1;
        }
        self.frames += 1;
        self.bytes += frame.len() as u64;
        true
    }
}

impl Link for XdpTx {
    fn max_frame(&self) -> usize {
        self.max_frame
    }
    fn rx_batch(&mut self, _now: Instant, _batch: &mut FrameBatch) -> Result<usize, LinkError> {
        Ok(0)
    }
    fn tx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let mut taken = 0;
        while taken < batch.len() {
            let frame = batch.get(taken);
            if frame.len() > self.max_frame {
                self.oversize += 1;
            } else if !self.push(frame) {
                // Send what is queued, take back what completed, and try once more.
                self.flush()?;
                self.reap();
                if !self.push(batch.get(taken)) {
                    break;
                }
            }
            taken += 1;
        }
        batch.consume_front(taken);
        self.flush()?;
        self.reap();
        Ok(taken)
    }
    fn stats(&self) -> LinkStats {
        LinkStats {
            tx_frames: self.frames,
            tx_bytes: self.bytes,
            dropped_oversize: self.oversize,
            ..LinkStats::default()
        }
    }
    fn kind(&self) -> &'static str {
        "af_xdp-tx"
    }
    fn tx_in_place(
        &mut self,
        _now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        if self.max_frame > CHUNK {
            // A jumbo frame may span chunks: such links build in the batch instead.
            return None;
        }
        if self.free.is_empty() {
            self.reap();
        }
        if self.free.is_empty() || self.ring.free(self.staged + 1) < self.staged + 1 {
            return Some(Ok(false));
        }
        let addr = *self.free.last().expect("checked above");
        let max = self.max_frame;
        let len = build(&mut self.chunk(addr)[..max]);
        if len == 0 || len > max {
            return Some(Ok(false));
        }
        self.free.pop();
        let at = self.staged;
        self.ring.write(at, XdpDesc { addr, len: len as u32, options: 0 });
        self.staged += 1;
        self.frames += 1;
        self.bytes += len as u64;
        Some(Ok(true))
    }
}

impl Link for XdpLink {
    fn max_frame(&self) -> usize {
        self.tx.max_frame
    }
    fn rx_batch(&mut self, _now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        let room = batch.capacity() - batch.len();
        let max_frame = self.tx.max_frame;
        let mut no_room = 0;
        let n = self.rx.drain(room, max_frame, |f| {
            if !batch.push(f) {
                no_room += 1;
            }
        });
        self.rx.no_room += no_room;
        Ok(n - no_room as usize)
    }
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.tx.tx_batch(now, batch)
    }
    fn stats(&self) -> LinkStats {
        let k = self.kernel_stats();
        LinkStats {
            rx_frames: self.rx.frames,
            rx_bytes: self.rx.bytes,
            rx_dropped_no_room: self.rx.no_room,
            rx_ring_full: k.rx_ring_full,
            rx_no_buffer: k.rx_fill_ring_empty_descs,
            rx_kernel_dropped: k.rx_dropped.saturating_sub(k.rx_fill_ring_empty_descs),
            dropped_oversize: self.rx.oversize + self.tx.oversize,
            ..self.tx.stats()
        }
    }
    fn kind(&self) -> &'static str {
        "af_xdp"
    }
    fn raw_fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }
    fn rx_in_place(
        &mut self,
        _now: Instant,
        max: usize,
        f: &mut dyn FnMut(&mut dyn Link, &[u8]),
    ) -> Option<Result<usize, LinkError>> {
        let max_frame = self.tx.max_frame;
        let tx = &mut self.tx;
        Some(Ok(self.rx.drain(max, max_frame, |frame| f(tx, frame))))
    }
    fn tx_in_place(
        &mut self,
        now: Instant,
        build: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Option<Result<bool, LinkError>> {
        self.tx.tx_in_place(now, build)
    }
}
