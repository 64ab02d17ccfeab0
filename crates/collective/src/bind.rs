//! Pinning a rank to a CPU, as OpenMPI's `mpirun` binds each rank to a core: ranks are
//! spread over the CPUs round-robin, so two busy-polling ranks never share a core while
//! another is free (sharing one, each would spin through its time slice while the other
//! waits for the CPU), and when ranks outnumber the CPUs, neighbours in rank order (the
//! first partners of recursive doubling and of the barrier) sit on different CPUs and the
//! scheduler does not move ranks around behind the algorithm's back.

/// The CPUs this thread may run on (its affinity mask), in increasing order; empty if the
/// mask cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the zeroed cpu_set_t we pass with its exact size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to `cpu`; false if the kernel refused.
pub fn bind_thread(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t with one CPU set, passed with its exact size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// The CPU of `cpus` that rank `rank` of the ranks on this machine is bound to
/// (round-robin); `None` if there are none.
pub fn cpu_for(rank: usize, cpus: &[usize]) -> Option<usize> {
    cpus.get(rank.checked_rem(cpus.len())?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_spread_round_robin_over_the_allowed_cpus() {
        assert_eq!(cpu_for(0, &[0, 1]), Some(0));
        assert_eq!(cpu_for(1, &[2, 5]), Some(5));
        assert_eq!(cpu_for(2, &[2, 5]), Some(2));
        assert_eq!(cpu_for(3, &[0, 1]), Some(1));
        assert_eq!(cpu_for(0, &[]), None);
        assert!(!allowed_cpus().is_empty(), "the affinity mask of this thread could not be read");
    }
}
