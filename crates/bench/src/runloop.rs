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

/// Request the clean stop that SIGINT and SIGTERM request (the reader of standard output
/// went away: see [`crate::stdout`]).
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// True once SIGINT or SIGTERM arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Idle polls to spin before sleeping on the link's file descriptor.
const SPIN_POLLS: u32 = 2000;

/// Tracks idleness and sleeps (up to 1 ms) on the link's fd after a spin of idle polls.
#[derive(Default)]
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

/// Poll `stack` on real time up to `max_polls` times, stopping after the first poll that
/// receives nothing; returns the frames received. Services that walk many connections after
/// each round call this so that one walk serves several batches.
pub fn poll_burst<L: Link>(stack: &mut net::Stack<L>, max_polls: usize) -> Result<usize, net::NetError> {
    let mut frames = 0;
    for _ in 0..max_polls.max(1) {
        match stack.poll(Instant::now())? {
            0 => break,
            n => frames += n,
        }
    }
    Ok(frames)
}

/// Polls per service round for a host with `connections` connections (see [`poll_burst`]).
pub fn polls_for(connections: usize) -> usize {
    (1 + connections / 128).min(64)
}

/// Real time now.
pub fn now() -> Instant {
    Instant::now()
}

/// Start the `--run` command `cmd` with `sh -c`, in namespace `ns` if given (else in this
/// one), stdin closed and stdout to `stdout`.
pub fn spawn_run(
    ns: Option<&testbed::Netns>,
    cmd: &str,
    stdout: std::process::Stdio,
) -> Result<std::process::Child, String> {
    let mut c = match ns {
        Some(ns) => ns.command("sh"),
        None => std::process::Command::new("sh"),
    };
    c.args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .spawn()
        .map_err(|e| format!("cannot run '{cmd}': {e}"))
}
