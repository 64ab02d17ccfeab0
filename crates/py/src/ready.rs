//! Readiness of a live host's sockets as file descriptors: each socket that was asked for its
//! `fileno()` gets an eventfd that is readable while the socket has something to take (data, a
//! connection to accept, end of stream, an error), so `selectors` and asyncio can wait on it.
//! The host refreshes them after every poll and every socket call.

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use net::{RawHandle, TcpHandle, TcpListener, UdpHandle};
use testbed::HostStack;

/// What a socket waits for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Interest {
    /// A UDP socket: a datagram is queued.
    Udp(UdpHandle),
    /// A raw socket: always reported ready (its queue has no peek).
    Raw(RawHandle),
    /// A TCP connection: data, end of stream or an error.
    Tcp(TcpHandle),
    /// A listener: an established connection waits to be accepted.
    Listener(TcpListener),
}

/// An eventfd (non-blocking, close-on-exec) used as a level-triggered readiness flag.
struct EventFd {
    fd: OwnedFd,
    set: bool,
}

impl EventFd {
    fn new() -> std::io::Result<EventFd> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new descriptor we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        Ok(EventFd { fd: unsafe { OwnedFd::from_raw_fd(fd) }, set: false })
    }

    /// Make the descriptor readable (`on`) or not; a no-op when it already is so.
    fn show(&mut self, on: bool) {
        if on == self.set {
            return;
        }
        let mut v: u64 = 1;
        let p = std::ptr::addr_of_mut!(v).cast::<libc::c_void>();
        // SAFETY: `p` points at 8 valid bytes, the size eventfd reads and writes.
        let n = unsafe {
            if on {
                libc::write(self.fd.as_raw_fd(), p, 8)
            } else {
                libc::read(self.fd.as_raw_fd(), p, 8)
            }
        };
        // A failed write (counter full) or read (already zero) leaves the state as it is.
        if n == 8 || !on {
            self.set = on;
        }
    }
}

/// The readiness descriptors of one live host and the connections accepted for listeners
/// that are watched (a listener's queue cannot be peeked, so they are taken early).
#[derive(Default)]
pub(crate) struct Readiness {
    watches: Vec<(Interest, EventFd)>,
    accepted: HashMap<u16, VecDeque<TcpHandle>>,
}

impl Readiness {
    /// The descriptor of `what`, made on first use.
    pub(crate) fn fileno(&mut self, stack: &mut HostStack, what: Interest) -> std::io::Result<RawFd> {
        if let Some((_, e)) = self.watches.iter().find(|(w, _)| *w == what) {
            return Ok(e.fd.as_raw_fd());
        }
        self.watches.push((what, EventFd::new()?));
        self.refresh(stack);
        Ok(self.watches.last().map_or(-1, |(_, e)| e.fd.as_raw_fd()))
    }

    /// Stop watching `what` (its socket closed): the descriptor is closed; a listener's
    /// connections nobody accepted are closed too.
    pub(crate) fn forget(&mut self, stack: &mut HostStack, what: Interest) {
        self.watches.retain(|(w, _)| *w != what);
        if let Interest::Listener(l) = what {
            for h in self.accepted.remove(&l.port()).unwrap_or_default() {
                let _ = stack.tcp_close(h);
            }
        }
    }

    /// The next connection of listener `l`: one taken early, else the stack's next.
    pub(crate) fn accept(&mut self, stack: &mut HostStack, l: TcpListener) -> Option<TcpHandle> {
        let early = self.accepted.get_mut(&l.port()).and_then(VecDeque::pop_front);
        early.or_else(|| stack.tcp_accept(l))
    }

    /// Bring every descriptor up to date with the stack.
    pub(crate) fn refresh(&mut self, stack: &mut HostStack) {
        for (what, fd) in &mut self.watches {
            let ready = match *what {
                Interest::Udp(h) => stack.udp_queued(h).map_or(true, |n| n > 0),
                Interest::Raw(_) => true,
                Interest::Tcp(h) => tcp_ready(stack, h),
                Interest::Listener(l) => {
                    let q = self.accepted.entry(l.port()).or_default();
                    while let Some(h) = stack.tcp_accept(l) {
                        q.push_back(h);
                    }
                    !q.is_empty()
                }
            };
            fd.show(ready);
        }
    }
}

/// True if a `recv` on `h` would not block: data, end of stream, an error or a stale handle.
pub(crate) fn tcp_ready(stack: &HostStack, h: TcpHandle) -> bool {
    let data = stack.tcp_recv_ready(h).map_or(true, |n| n > 0);
    data || stack.tcp_at_eof(h).unwrap_or(true) || stack.tcp_error(h).map_or(true, |e| e.is_some())
}
