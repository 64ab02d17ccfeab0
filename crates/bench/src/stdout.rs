//! Standard output that a reader closing the pipe ends quietly, as Unix tools do.
//!
//! `println!` panics when the write fails, so `linerate iperf3 -c … -J | head -c 10` used to
//! end in a panic message. Every command prints its results through [`outln!`](crate::outln)
//! and [`out!`](crate::out) instead. When the reader has closed the pipe, the write is
//! dropped, what is still to be printed is dropped too, and a stop is requested as Ctrl-C
//! would (see [`crate::runloop::request_stop`]): the command ends its loop and removes what
//! it created (namespaces, child processes, shared memory); then `main` ends the process by
//! SIGPIPE ([`end_if_closed`]: status 141 in the shell, nothing on stderr), as `cat` or `jq`
//! would. Any other write error (a full disk) is one line on stderr and exit status 1.
//! SIGPIPE itself stays ignored while the program runs, so a peer that closes a socket is an
//! error the command handles, not a sudden death that skips the clean-up.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write found the pipe closed.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Write `args` to standard output and flush, as described above.
pub fn write_fmt(args: fmt::Arguments<'_>) {
    if closed() {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        drop(out);
        if e.kind() == ErrorKind::BrokenPipe {
            CLOSED.store(true, Ordering::Relaxed);
            crate::runloop::request_stop();
            return;
        }
        eprintln!("linerate: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// True once a write to standard output found the reader gone.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// If the reader of standard output went away, end the process by SIGPIPE now (call it when
/// the command has returned and cleaned up).
pub fn end_if_closed() {
    if closed() {
        end_by_sigpipe();
    }
}

/// End the process as the default SIGPIPE disposition would.
fn end_by_sigpipe() -> ! {
    // SAFETY: restoring a signal's default disposition and raising it have no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Not reached where SIGPIPE's default action ends the process; 128 + SIGPIPE otherwise.
    std::process::exit(128 + libc::SIGPIPE)
}

/// `println!` to standard output through [`write_fmt`]: a closed pipe ends the program quietly.
#[macro_export]
macro_rules! outln {
    () => { $crate::stdout::write_fmt(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::write_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` to standard output through [`write_fmt`]: a closed pipe ends the program quietly.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::write_fmt(format_args!($($arg)*)) };
}
