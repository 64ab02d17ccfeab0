//! A rank that waits long on the shared-memory fabric sleeps on its doorbell instead of
//! spinning or yielding in a loop: ranks that outnumber the cores leave them to the ranks
//! with work. Two ranks as threads of this process (the fabric does not care). The
//! assertions are about what the waiting rank did (slept, used little CPU), not about how
//! fast anything was; the operation timeout only bounds a broken run.

use collective::{fabric_addrs, fabric_host_config, fabric_link_config, Communicator, Config, Endpoint, ShmFabric};
use std::time::{Duration, Instant};

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn rank(name: &str, r: usize, yield_before_sleep: Option<u32>) -> Communicator<ShmFabric> {
    let fab = ShmFabric::join(name, r, 2, fabric_link_config(), Duration::from_secs(10)).unwrap();
    let stack = net::Stack::new(fabric_host_config(r, 2).unwrap(), fab).unwrap();
    let cfg = Config { timeout: Duration::from_secs(30), ..Config::default() };
    let mut c = Communicator::new(stack, Endpoint::new(r, fabric_addrs(2), cfg).unwrap()).unwrap();
    c.yield_before_sleep = yield_before_sleep;
    c
}

/// Rank 0 waits for a message rank 1 sends after `delay`; returns rank 0's (sleeps, CPU
/// time, wall time) of the wait.
fn wait_for_late_message(tag: &str, yield_before_sleep: Option<u32>, delay: Duration) -> (u64, Duration, Duration) {
    let name = format!("coll-idle-{tag}-{}", std::process::id());
    let n1 = name.clone();
    let peer = std::thread::spawn(move || {
        let mut c = rank(&n1, 1, Some(0));
        c.connect().unwrap();
        c.barrier().unwrap();
        std::thread::sleep(delay);
        c.send(0, 5, &[42i32, 43]).unwrap();
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
    let mut c = rank(&name, 0, yield_before_sleep);
    c.connect().unwrap();
    c.barrier().unwrap();
    let (cpu0, wall0, sleeps0) = (thread_cpu(), Instant::now(), c.sleeps());
    let got = c.recv::<i32>(1, 5, 2).unwrap();
    let (cpu, wall, sleeps) = (thread_cpu() - cpu0, wall0.elapsed(), c.sleeps() - sleeps0);
    assert_eq!(got, vec![42, 43]);
    c.barrier().unwrap();
    c.finalize().unwrap();
    peer.join().unwrap();
    (sleeps, cpu, wall)
}

#[test]
fn a_long_wait_sleeps_on_the_doorbell_and_leaves_the_core() {
    let delay = Duration::from_millis(300);
    let (sleeps, cpu, wall) = wait_for_late_message("sleep", Some(16), delay);
    // Rank 0 leaves the barrier up to a few milliseconds after rank 1 starts its delay when
    // this file's tests share the cores (once 296 ms of 300): the wait is long, not exact.
    assert!(wall >= delay / 2, "the message came after {delay:?}, the wait took only {wall:?}");
    assert!(sleeps > 0, "rank 0 never slept while waiting {wall:?}");
    assert!(cpu < wall / 4, "rank 0 used {cpu:?} of CPU while waiting {wall:?} (slept {sleeps} times)");
}

#[test]
fn without_sleeping_the_wait_never_sleeps() {
    let (sleeps, _, wall) = wait_for_late_message("nosleep", None, Duration::from_millis(50));
    assert_eq!(sleeps, 0, "rank 0 slept while told not to (wait took {wall:?})");
}
