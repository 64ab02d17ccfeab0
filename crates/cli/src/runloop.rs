//! Driving a stack on real time: busy-poll while there is work, then sleep briefly on the
//! link's file descriptor; stop on a deadline or on SIGINT/SIGTERM.

use link::{Instant, Link};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Make SIGINT and SIGTERM request a clean stop (see [`stop_requested`]).
pub fn install_stop_handler() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// True once SIGINT or SIGTERM arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Idle polls to spin before sleeping on the link's file descriptor.
const SPIN_POLLS: u32 = 2000;

/// Tracks idleness and sleeps (up to 1 ms) on the link's fd after a spin of idle polls.
pub struct Idler {
    idle: u32,
}

impl Idler {
    /// A fresh idler.
    pub fn new() -> Self {
        Idler { idle: 0 }
    }

    /// Call after each poll with whether it did any work.
    pub fn after_poll<L: Link>(&mut self, link: &L, worked: bool) {
        if worked {
            self.idle = 0;
            return;
        }
        self.idle += 1;
        if self.idle < SPIN_POLLS {
            std::hint::spin_loop();
            return;
        }
        match link.raw_fd() {
            Some(fd) => {
                let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                // SAFETY: pfd is a valid pollfd array of length 1 for the duration of the call.
                unsafe { libc::poll(&mut pfd, 1, 1) };
            }
            None => std::thread::sleep(Duration::from_micros(50)),
        }
    }
}

/// Real time now.
pub fn now() -> Instant {
    Instant::now()
}
