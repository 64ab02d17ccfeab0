//! Interface ioctls shared by the TAP and AF_PACKET drivers: name checks, MTU, up, index.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::LinkError;

/// An `ifreq` carrying interface name `ifname` (checked: 1..=15 bytes, no NUL or '/').
pub(crate) fn ifreq(ifname: &str) -> Result<libc::ifreq, LinkError> {
    let bytes = ifname.as_bytes();
    if bytes.is_empty()
        || bytes.len() >= libc::IFNAMSIZ
        || bytes.iter().any(|&b| b == 0 || b == b'/' || b.is_ascii_whitespace())
    {
        return Err(LinkError::Config(format!(
            "interface name {ifname:?} must be 1..=15 bytes without '/', NUL or spaces"
        )));
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// A datagram socket for interface ioctls, in the calling thread's network namespace.
fn ctl_socket() -> Result<OwnedFd, LinkError> {
    // SAFETY: plain socket(2) call.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(LinkError::last_os("socket for interface ioctls"));
    }
    // SAFETY: fd was just returned by socket and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Set the MTU of `ifname` and bring it up (in the calling thread's network namespace).
pub(crate) fn set_mtu_and_up(ifname: &str, mtu: usize) -> Result<(), LinkError> {
    let sock = ctl_socket()?;
    let mut req = ifreq(ifname)?;
    req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    // SAFETY: req is a valid ifreq naming the interface; SIOCSIFMTU reads ifru_mtu.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFMTU, &mut req) } != 0 {
        return Err(LinkError::last_os("SIOCSIFMTU"));
    }
    let mut req = ifreq(ifname)?;
    // SAFETY: SIOCGIFFLAGS fills ifru_flags of a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return Err(LinkError::last_os("SIOCGIFFLAGS"));
    }
    // SAFETY: the kernel has just written ifru_flags, the active member.
    unsafe { req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
    // SAFETY: SIOCSIFFLAGS reads ifru_flags of a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &mut req) } != 0 {
        return Err(LinkError::last_os("SIOCSIFFLAGS"));
    }
    Ok(())
}

/// Whether `ifname` is up, and its MTU (in the calling thread's network namespace).
pub(crate) fn flags_and_mtu(ifname: &str) -> Result<(bool, usize), LinkError> {
    index(ifname)?;
    let sock = ctl_socket()?;
    let mut req = ifreq(ifname)?;
    // SAFETY: SIOCGIFFLAGS fills ifru_flags of a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } != 0 {
        return Err(LinkError::last_os("SIOCGIFFLAGS"));
    }
    // SAFETY: the kernel has just written ifru_flags, the active member.
    let up = unsafe { req.ifr_ifru.ifru_flags } & libc::IFF_UP as libc::c_short != 0;
    let mut req = ifreq(ifname)?;
    // SAFETY: SIOCGIFMTU fills ifru_mtu of a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req) } != 0 {
        return Err(LinkError::last_os("SIOCGIFMTU"));
    }
    // SAFETY: the kernel has just written ifru_mtu, the active member.
    Ok((up, unsafe { req.ifr_ifru.ifru_mtu }.max(0) as usize))
}

/// The hardware (MAC) address of `ifname` (in the calling thread's network namespace).
pub(crate) fn hwaddr(ifname: &str) -> Result<[u8; 6], LinkError> {
    let sock = ctl_socket()?;
    let mut req = ifreq(ifname)?;
    // SAFETY: SIOCGIFHWADDR fills ifru_hwaddr of a valid ifreq.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req) } != 0 {
        return Err(LinkError::last_os("SIOCGIFHWADDR"));
    }
    // SAFETY: the kernel has just written ifru_hwaddr, the active member.
    let data = unsafe { req.ifr_ifru.ifru_hwaddr.sa_data };
    let mut mac = [0u8; 6];
    for (m, d) in mac.iter_mut().zip(data.iter()) {
        *m = *d as u8;
    }
    Ok(mac)
}

/// Index of interface `ifname` in the calling thread's network namespace.
pub(crate) fn index(ifname: &str) -> Result<i32, LinkError> {
    ifreq(ifname)?;
    let c = std::ffi::CString::new(ifname).map_err(|e| LinkError::Config(e.to_string()))?;
    // SAFETY: valid C string.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(LinkError::Config(format!("no interface named {ifname:?} in this network namespace")));
    }
    Ok(idx as i32)
}

/// True if the error is "try again later" (EAGAIN / EWOULDBLOCK).
pub(crate) fn would_block(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(ifreq("lrtap0").is_ok());
        assert!(ifreq("").is_err());
        assert!(ifreq("0123456789abcdef").is_err());
        assert!(ifreq("a/b").is_err());
        assert!(index("surely-no-such").is_err());
    }
}

/// `struct ethtool_channels` of `<linux/ethtool.h>`.
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

/// `ETHTOOL_GCHANNELS`.
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// How many receive queues `ifname` uses (its RX-only plus combined channels, as `ethtool -l`
/// shows them), or `None` where the driver does not say (in the calling thread's namespace).
pub fn rx_queues(ifname: &str) -> Option<u32> {
    let sock = ctl_socket().ok()?;
    let mut req = ifreq(ifname).ok()?;
    let mut ch = EthtoolChannels { cmd: ETHTOOL_GCHANNELS, ..EthtoolChannels::default() };
    req.ifr_ifru.ifru_data = &mut ch as *mut EthtoolChannels as *mut libc::c_char;
    // SAFETY: req names the interface and points at an ethtool_channels the kernel fills.
    if unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req) } != 0 {
        return None;
    }
    let n = ch.rx_count + ch.combined_count;
    (n > 0).then_some(n)
}
