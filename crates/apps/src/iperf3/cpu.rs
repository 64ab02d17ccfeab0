//! The CPU use of this process over a test, as iperf3 reports it: percent of the wall-clock
//! time spent in user and system mode.

use std::time::{Duration, Instant};

/// CPU times of the process (user, system).
fn cpu_times() -> (Duration, Duration) {
    // SAFETY: getrusage writes a rusage struct we own; zeroed is a valid initial value.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer has no other preconditions.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) } != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    (tv(r.ru_utime), tv(r.ru_stime))
}

/// A start point for measuring CPU use.
#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    wall: Instant,
    user: Duration,
    system: Duration,
}

impl CpuClock {
    /// Start measuring now.
    pub fn start() -> CpuClock {
        let (user, system) = cpu_times();
        CpuClock { wall: Instant::now(), user, system }
    }

    /// Percent of the wall-clock time since the start spent on the CPU: total, user, system.
    pub fn utilization(&self) -> [f64; 3] {
        let wall = self.wall.elapsed().as_secs_f64();
        if wall <= 0.0 {
            return [0.0; 3];
        }
        let (user, system) = cpu_times();
        let u = (user.saturating_sub(self.user)).as_secs_f64() / wall * 100.0;
        let s = (system.saturating_sub(self.system)).as_secs_f64() / wall * 100.0;
        [u + s, u, s]
    }
}
