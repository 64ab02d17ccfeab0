//! The job of `linerate collective launch`: N ranks of a program on one machine, joined by
//! one shared-memory fabric, run the way `mpirun` runs them.
//!
//! - With [`OnLink`] the ranks join over a link instead (one interface per rank, possibly
//!   each in its own network namespace), as ranks on different machines would: each gets
//!   `LINERATE_LINK`, `LINERATE_IP` and `LINERATE_ROOT_ADDR`.
//! - Each rank's stdout and stderr are forwarded whole lines at a time (a line of one rank is
//!   never cut by another's), with `[rank]<stdout>:` / `[rank]<stderr>:` in front of each
//!   line under `--tag-output`. Rank 0 reads the launcher's stdin; the others read nothing.
//! - When a rank fails (a non-zero exit or a signal) the launcher names it, stops every other
//!   rank (SIGTERM, then SIGKILL after a grace period), tells each stopped rank why, and
//!   exits with the failed rank's status (128 + signal for a signal).
//! - On every exit, also on SIGINT/SIGTERM/SIGHUP to the launcher, it removes the fabric's
//!   files in `/dev/shm`; `linerate collective cleanup` removes those of jobs killed with
//!   SIGKILL ([`stale_shm_files`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Where POSIX shared memory lives.
const SHM_DIR: &str = "/dev/shm";

/// How long stopped ranks get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(500);

/// How often the launcher looks at its ranks.
const TICK: Duration = Duration::from_millis(5);

/// A signal the launcher received (0: none).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// Routes SIGINT, SIGTERM and SIGHUP to [`SIGNALLED`], so the launcher stops its ranks and
/// removes the fabric before it exits.
fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe; the
        // sigaction struct is fully initialised (zeroed, then the handler set).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// What to run.
pub struct Job {
    /// Number of ranks.
    pub n: usize,
    /// The fabric's name.
    pub fabric: String,
    /// The program and its arguments.
    pub program: Vec<String>,
    /// Put `[rank]<stdout>:` in front of every forwarded line.
    pub tag_output: bool,
    /// Join the ranks over links instead of the fabric.
    pub on_link: Option<OnLink>,
}

/// Where each rank of a job on links runs: `{rank}` in a template becomes the rank number.
pub struct OnLink {
    /// The link spec of every rank (`af_xdp:veth{rank}`).
    pub link: String,
    /// Rank 0's address; rank `r` gets this address plus `r`.
    pub ip: std::net::Ipv4Addr,
    /// The prefix length of the ranks' subnet.
    pub prefix: u8,
    /// Rank 0's IPv6 addresses; rank `r` gets each plus `r`.
    pub ip6: Vec<net::Ipv6Cidr>,
    /// Rank 0's rendezvous address.
    pub root: std::net::SocketAddr,
    /// The network namespace of every rank (`ns{rank}`), if any: the rank runs under
    /// `ip netns exec`.
    pub netns: Option<String>,
}

impl OnLink {
    /// The command that starts rank `r` of `prog args` with its link's variables.
    fn command(&self, r: usize, prog: &str, args: &[String]) -> Command {
        let fill = |t: &str| t.replace("{rank}", &r.to_string());
        let mut c = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &fill(ns), prog]).args(args);
                c
            }
            None => {
                let mut c = Command::new(prog);
                c.args(args);
                c
            }
        };
        let ip = std::net::Ipv4Addr::from(u32::from(self.ip).wrapping_add(r as u32));
        let mut ips = format!("{ip}/{}", self.prefix);
        for c in &self.ip6 {
            let a = std::net::Ipv6Addr::from_bits(c.addr.to_bits().wrapping_add(r as u128));
            ips.push_str(&format!(",{a}/{}", c.prefix_len));
        }
        c.env("LINERATE_LINK", fill(&self.link))
            .env("LINERATE_IP", ips)
            .env("LINERATE_ROOT_ADDR", self.root.to_string());
        c
    }
}

/// Forwards `src` to the launcher's stdout or stderr one whole line at a time.
fn forward(src: impl Read + Send + 'static, rank: usize, stderr: bool, tag: bool) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::with_capacity(64 << 10, src);
        let prefix =
            if tag { format!("[{rank}]<{}>:", if stderr { "stderr" } else { "stdout" }) } else { String::new() };
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            // One locked write per line: other ranks' lines go before or after it, never inside.
            let res = if stderr {
                let mut o = std::io::stderr().lock();
                o.write_all(prefix.as_bytes()).and_then(|_| o.write_all(&line)).and_then(|_| o.flush())
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(prefix.as_bytes()).and_then(|_| o.write_all(&line)).and_then(|_| o.flush())
            };
            if res.is_err() {
                return;
            }
        }
    })
}

/// How a rank ended, in words, and the exit code the launcher passes on.
fn describe(s: ExitStatus) -> (String, u8) {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => (format!("exited with status {c}"), u8::try_from(c).unwrap_or(1)),
        (None, Some(sig)) => (format!("was killed by signal {sig}"), u8::try_from(128 + sig).unwrap_or(255)),
        _ => ("ended".into(), 1),
    }
}

/// Sends `sig` to a child that may have exited already.
fn signal(c: &Child, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(c.id()) {
        // SAFETY: kill(2) on the pid of our own child, which we have not reaped yet (so the
        // pid cannot belong to another process).
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Paths of the fabric's files in `/dev/shm` (rings and doorbells: `linerate-<fabric>-…`).
fn fabric_files(fabric: &str) -> Vec<PathBuf> {
    let prefix = format!("linerate-{fabric}-");
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else { return Vec::new() };
    dir.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).map(|e| e.path()).collect()
}

/// Runs the job to its end; the exit code is the first failed rank's (0 if none failed).
pub fn run(job: Job) -> Result<ExitCode, String> {
    catch_signals();
    let (prog, args) = job.program.split_first().ok_or("no program given")?;
    let mut children: Vec<Child> = Vec::new();
    let mut pumps = Vec::new();
    for r in 0..job.n {
        let mut cmd = match &job.on_link {
            Some(l) => l.command(r, prog, args),
            None => {
                let mut c = Command::new(prog);
                c.args(args);
                c
            }
        };
        let spawned = cmd
            .env("LINERATE_RANK", r.to_string())
            .env("LINERATE_WORLD_SIZE", job.n.to_string())
            .env("LINERATE_LOCAL_RANK", r.to_string())
            .env("LINERATE_FABRIC", &job.fabric)
            .stdin(if r == 0 { Stdio::inherit() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        match spawned {
            Ok(mut c) => {
                if let Some(o) = c.stdout.take() {
                    pumps.push(forward(o, r, false, job.tag_output));
                }
                if let Some(e) = c.stderr.take() {
                    pumps.push(forward(e, r, true, job.tag_output));
                }
                children.push(c);
            }
            Err(e) => {
                stop(&mut children, &[]);
                remove_files(&job.fabric);
                return Err(format!("cannot start {prog}: {e}"));
            }
        }
    }
    let code = supervise(&mut children);
    // The ranks are gone: their output ends; wait for the last lines (bounded, in case a
    // rank left a child holding the pipe open).
    let deadline = Instant::now() + Duration::from_secs(2);
    for p in pumps {
        while !p.is_finished() && Instant::now() < deadline {
            std::thread::sleep(TICK);
        }
        if p.is_finished() {
            let _ = p.join();
        }
    }
    remove_files(&job.fabric);
    Ok(ExitCode::from(code))
}

/// Waits for every rank; on the first failure (or a signal to the launcher) stops the others.
/// Returns the exit code to pass on.
fn supervise(children: &mut [Child]) -> u8 {
    let n = children.len();
    let mut done: Vec<Option<ExitStatus>> = vec![None; n];
    loop {
        let mut failed = None;
        for (r, c) in children.iter_mut().enumerate() {
            if done[r].is_none() {
                if let Ok(Some(s)) = c.try_wait() {
                    done[r] = Some(s);
                    if !s.success() && failed.is_none() {
                        failed = Some((r, s));
                    }
                }
            }
        }
        let sig = SIGNALLED.load(Ordering::SeqCst);
        if let Some((r, s)) = failed {
            let (what, code) = describe(s);
            let running: Vec<usize> = (0..n).filter(|&k| done[k].is_none()).collect();
            eprintln!("linerate collective launch: rank {r} {what}; stopping ranks {running:?}");
            for k in stop(children, &running) {
                eprintln!("linerate collective launch: rank {k} stopped because rank {r} {what}");
            }
            return code;
        }
        if sig != 0 {
            let running: Vec<usize> = (0..n).filter(|&k| done[k].is_none()).collect();
            eprintln!("linerate collective launch: signal {sig}: stopping ranks {running:?}");
            stop(children, &running);
            return u8::try_from(128 + sig).unwrap_or(255);
        }
        if done.iter().all(Option::is_some) {
            return 0;
        }
        std::thread::sleep(TICK);
    }
}

/// Stops the ranks `which` (SIGTERM, SIGKILL after [`GRACE`]) and reaps them; returns those
/// that were still running. With `which` empty, stops every child.
fn stop(children: &mut [Child], which: &[usize]) -> Vec<usize> {
    let all: Vec<usize> = (0..children.len()).collect();
    let which = if which.is_empty() { &all[..] } else { which };
    let mut stopped = Vec::new();
    for &k in which {
        if matches!(children[k].try_wait(), Ok(None)) {
            signal(&children[k], libc::SIGTERM);
            stopped.push(k);
        }
    }
    let deadline = Instant::now() + GRACE;
    for &k in which {
        while matches!(children[k].try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(TICK);
        }
        if matches!(children[k].try_wait(), Ok(None)) {
            let _ = children[k].kill();
        }
        let _ = children[k].wait();
    }
    stopped
}

/// Removes the fabric's files (a rank that died left its rings and doorbell behind).
fn remove_files(fabric: &str) {
    for p in fabric_files(fabric) {
        let _ = std::fs::remove_file(p);
    }
}

/// Files in `/dev/shm` that carry linerate's prefix and that no live process maps or holds
/// open, unchanged for `min_age` (so a file being created is not taken): what jobs killed
/// before they could clean up left behind.
/// With `fabric`, only that fabric's files.
pub fn stale_shm_files(min_age: Duration, fabric: Option<&str>) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else { return Vec::new() };
    let prefix = fabric.map_or_else(|| "linerate-".to_string(), |f| format!("linerate-{f}-"));
    let ours: Vec<PathBuf> = dir
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| {
            let m = e.metadata().and_then(|m| m.modified()).unwrap_or(SystemTime::now());
            m.elapsed().unwrap_or_default() >= min_age
        })
        .map(|e| e.path())
        .collect();
    if ours.is_empty() {
        return ours;
    }
    let used = files_in_use();
    ours.into_iter().filter(|p| !used.contains(p)).collect()
}

/// Every `/dev/shm` path that a live process maps or has open (from `/proc`).
fn files_in_use() -> std::collections::HashSet<PathBuf> {
    let mut used = std::collections::HashSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return used };
    for p in procs.flatten() {
        if !p.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(maps) = std::fs::read_to_string(p.path().join("maps")) {
            for l in maps.lines() {
                if let Some(i) = l.find(SHM_DIR) {
                    let path = l[i..].trim_end_matches(" (deleted)");
                    used.insert(PathBuf::from(path));
                }
            }
        }
        if let Ok(fds) = std::fs::read_dir(p.path().join("fd")) {
            for fd in fds.flatten() {
                if let Ok(t) = std::fs::read_link(fd.path()) {
                    if t.starts_with(SHM_DIR) {
                        used.insert(t);
                    }
                }
            }
        }
    }
    used
}

/// `linerate collective cleanup`: removes [`stale_shm_files`]; returns what it removed.
pub fn cleanup(min_age: Duration, fabric: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let mut removed = Vec::new();
    for p in stale_shm_files(min_age, fabric) {
        std::fs::remove_file(&p).map_err(|e| format!("cannot remove {}: {e}", p.display()))?;
        removed.push(p);
    }
    Ok(removed)
}
