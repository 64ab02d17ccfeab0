//! The few `bpf(2)` commands the AF_XDP driver needs: create the socket map, load the steering
//! program, attach it to an interface as a BPF link, put a socket in the map.
//!
//! Attaching through a BPF link (not the older netlink attach) ties the program's life to a
//! file descriptor: when the last process holding it exits, killed or not, the kernel detaches
//! the program, so a crashed linerate never leaves an interface steering frames to nobody.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::LinkError;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;

const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// `prog_flags`: the program understands multi-buffer frames.
const BPF_F_XDP_HAS_FRAGS: u32 = 1 << 5;

/// `XDP_FLAGS_SKB_MODE`: generic XDP, run after the kernel built a socket buffer.
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: native XDP, run by the driver.
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// The `bpf_attr` union, as large as any command here needs (the kernel zero-checks the tail).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32_at(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64_at(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name_at(&mut self, off: usize, name: &str) -> &mut Self {
        let b = name.as_bytes();
        let n = b.len().min(15);
        self.0[off..off + n].copy_from_slice(&b[..n]);
        self
    }
}

fn sys_bpf(cmd: libc::c_long, attr: &mut Attr) -> std::io::Result<libc::c_long> {
    // SAFETY: attr is a live, zero-initialised bpf_attr of the size passed.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr as *mut Attr, std::mem::size_of::<Attr>() as u32) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: the kernel just returned this new descriptor, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn permission_hint(e: std::io::Error, what: &str) -> LinkError {
    if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) {
        return LinkError::Config(format!("{what} needs CAP_BPF and CAP_NET_ADMIN (run as root): {e}"));
    }
    LinkError::Config(format!("{what} failed: {e}"))
}

/// A new socket map (`BPF_MAP_TYPE_XSKMAP`) with one slot per queue.
pub fn create_xskmap(entries: u32) -> Result<OwnedFd, LinkError> {
    let mut a = Attr::new();
    a.u32_at(0, BPF_MAP_TYPE_XSKMAP).u32_at(4, 4).u32_at(8, 4).u32_at(12, entries).name_at(28, "linerate_xsks");
    sys_bpf(BPF_MAP_CREATE, &mut a).map(owned).map_err(|e| permission_hint(e, "creating the XDP socket map"))
}

/// Put socket `sock` in slot `queue` of `map`.
pub fn map_set(map: &OwnedFd, queue: u32, sock: &OwnedFd) -> Result<(), LinkError> {
    let key = queue;
    let value = sock.as_raw_fd() as u32;
    let mut a = Attr::new();
    a.u32_at(0, map.as_raw_fd() as u32).u64_at(8, &key as *const u32 as u64).u64_at(16, &value as *const u32 as u64);
    sys_bpf(BPF_MAP_UPDATE_ELEM, &mut a)
        .map(|_| ())
        .map_err(|e| permission_hint(e, "adding the socket to the XDP socket map"))
}

/// Empty slot `queue` of `map` (nothing in it is fine).
pub fn map_clear(map: &OwnedFd, queue: u32) {
    let key = queue;
    let mut a = Attr::new();
    a.u32_at(0, map.as_raw_fd() as u32).u64_at(8, &key as *const u32 as u64);
    let _ = sys_bpf(BPF_MAP_DELETE_ELEM, &mut a);
}

/// Load an XDP program of `insns` (8-byte instructions); the verifier's log is in the error.
pub fn load_xdp_program(insns: &[u64], frags: bool) -> Result<OwnedFd, LinkError> {
    let license = c"Dual MIT/GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut a = Attr::new();
    a.u32_at(0, BPF_PROG_TYPE_XDP)
        .u32_at(4, insns.len() as u32)
        .u64_at(8, insns.as_ptr() as u64)
        .u64_at(16, license.as_ptr() as u64)
        .u32_at(24, 1) // log_level
        .u32_at(28, log.len() as u32)
        .u64_at(32, log.as_mut_ptr() as u64)
        .u32_at(44, if frags { BPF_F_XDP_HAS_FRAGS } else { 0 })
        .name_at(48, "linerate_steer")
        .u32_at(68, BPF_XDP); // expected_attach_type
    match sys_bpf(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => Ok(owned(fd)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) && log[0] == 0 => {
            Err(permission_hint(e, "loading the XDP program"))
        }
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let tail: String =
                text.lines().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | ");
            Err(LinkError::Config(format!("the kernel refused linerate's XDP program: {e} (verifier: {tail})")))
        }
    }
}

/// Attach `prog` to interface `ifindex` in `mode` (`XDP_FLAGS_DRV_MODE` or `_SKB_MODE`) as a BPF link.
pub fn attach_xdp(prog: &OwnedFd, ifindex: u32, mode: u32) -> std::io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32_at(0, prog.as_raw_fd() as u32).u32_at(4, ifindex).u32_at(8, BPF_XDP).u32_at(12, mode);
    sys_bpf(BPF_LINK_CREATE, &mut a).map(owned)
}
