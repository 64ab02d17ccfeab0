//! The kernel's AF_XDP interface (`<linux/if_xdp.h>`): constants, structures and the socket
//! option calls, for the driver's own modules.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::LinkError;

/// Address family of XDP sockets.
pub const AF_XDP: libc::c_int = 44;
/// Socket option level of XDP sockets.
pub const SOL_XDP: libc::c_int = 283;

pub const XDP_MMAP_OFFSETS: libc::c_int = 1;
pub const XDP_RX_RING: libc::c_int = 2;
pub const XDP_TX_RING: libc::c_int = 3;
pub const XDP_UMEM_REG: libc::c_int = 4;
pub const XDP_UMEM_FILL_RING: libc::c_int = 5;
pub const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
pub const XDP_STATISTICS: libc::c_int = 7;
pub const XDP_OPTIONS: libc::c_int = 8;

/// `sxdp_flags` of bind: copy mode, zero-copy mode, wake-up flags, multi-buffer.
pub const XDP_COPY: u16 = 1 << 1;
pub const XDP_ZEROCOPY: u16 = 1 << 2;
pub const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
pub const XDP_USE_SG: u16 = 1 << 4;

/// `XDP_OPTIONS` flag: the socket was bound in zero-copy mode.
pub const XDP_OPTIONS_ZEROCOPY: u32 = 1;
/// Ring flag: the kernel needs a system call to make progress on this ring.
pub const XDP_RING_NEED_WAKEUP: u32 = 1;
/// Descriptor option: more fragments of the same frame follow.
pub const XDP_PKT_CONTD: u32 = 1;

pub const XDP_PGOFF_RX_RING: libc::off_t = 0;
pub const XDP_PGOFF_TX_RING: libc::off_t = 0x8000_0000;
pub const XDP_UMEM_PGOFF_FILL_RING: libc::off_t = 0x1_0000_0000;
pub const XDP_UMEM_PGOFF_COMPLETION_RING: libc::off_t = 0x1_8000_0000;

/// Bytes the kernel keeps in front of a received frame in native XDP mode.
pub const XDP_PACKET_HEADROOM: usize = 256;

/// `struct sockaddr_xdp`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SockaddrXdp {
    pub family: u16,
    pub flags: u16,
    pub ifindex: u32,
    pub queue_id: u32,
    pub shared_umem_fd: u32,
}

/// `struct xdp_umem_reg` (the version with `tx_metadata_len`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct UmemReg {
    pub addr: u64,
    pub len: u64,
    pub chunk_size: u32,
    pub headroom: u32,
    pub flags: u32,
    pub tx_metadata_len: u32,
}

/// `struct xdp_ring_offset`: where a ring's indices, descriptors and flags lie in its mapping.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct RingOffset {
    pub producer: u64,
    pub consumer: u64,
    pub desc: u64,
    pub flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MmapOffsets {
    pub rx: RingOffset,
    pub tx: RingOffset,
    pub fr: RingOffset,
    pub cr: RingOffset,
}

/// `struct xdp_desc`: one frame (or fragment) in the RX or TX ring.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct XdpDesc {
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// `struct xdp_statistics`: the kernel's counters of one socket.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XdpStatistics {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// A new, unbound XDP socket.
pub fn xdp_socket() -> Result<OwnedFd, LinkError> {
    // SAFETY: plain socket(2) call.
    let fd = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EAFNOSUPPORT) {
            return Err(LinkError::Config(
                "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): use af_packet:IFACE instead".into(),
            ));
        }
        return Err(LinkError::Os { op: "socket(AF_XDP)", source: e });
    }
    // SAFETY: fd was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(SOL_XDP, name)` with a plain-data value.
pub fn set<T: Copy>(fd: &OwnedFd, name: libc::c_int, value: &T, op: &'static str) -> Result<(), LinkError> {
    // SAFETY: value points at a live T of the size passed; T is plain data (repr(C) or an integer).
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            name,
            value as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(LinkError::last_os(op));
    }
    Ok(())
}

/// `getsockopt(SOL_XDP, name)` into a plain-data value.
pub fn get<T: Copy + Default>(fd: &OwnedFd, name: libc::c_int, op: &'static str) -> Result<T, LinkError> {
    let mut value = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: value is a live T and len its size; the kernel writes at most len bytes.
    let r =
        unsafe { libc::getsockopt(fd.as_raw_fd(), SOL_XDP, name, &mut value as *mut T as *mut libc::c_void, &mut len) };
    if r != 0 {
        return Err(LinkError::last_os(op));
    }
    Ok(value)
}
