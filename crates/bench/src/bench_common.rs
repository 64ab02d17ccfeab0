//! What the benchmark commands share: the child-process guard, the receiver's tally, CPU
//! pinning and accounting, the progress bar and table printing.

use crate::output::{Cell, Table, Unit};
use crate::runloop::stop_requested;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use link::Instant;
use net::Config;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Extra time a consumer or child process waits beyond the run itself before it gives up.
pub const GRACE: Duration = Duration::from_secs(10);
/// The line a child prints once it is ready for traffic.
pub const READY: &str = "ready";

/// What a receiver counted: frames (or datagrams), bytes, and the time from the first to the last.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub struct Tally {
    /// Frames or datagrams received.
    pub frames: u64,
    /// Bytes received (whole frames, or UDP payload).
    pub bytes: u64,
    /// Nanoseconds from the first arrival to the last.
    pub span_ns: u64,
    /// Share of its run the counting thread was on a CPU (link benchmark only; below ~90%
    /// the machine was busy with other work and the figures are low).
    #[serde(default)]
    pub cpu_share: f64,
    /// When the first arrived.
    #[serde(skip)]
    first: Option<Instant>,
}

impl Tally {
    /// Count `frames` frames (or datagrams) of `bytes` bytes in all that arrived at `now`.
    pub fn record(&mut self, now: Instant, frames: u64, bytes: u64) {
        let first = *self.first.get_or_insert(now);
        self.frames += frames;
        self.bytes += bytes;
        self.span_ns = (now - first).as_nanos() as u64;
    }

    /// `count` per second of the span (0 if the span is empty).
    pub fn per_sec(&self, count: f64) -> f64 {
        if self.span_ns == 0 {
            return 0.0;
        }
        count * 1e9 / self.span_ns as f64
    }
}

/// Check a measuring time given on the command line: at most an hour (the parser already
/// refused zero and negative ones).
pub fn check_secs(d: Duration) -> Result<Duration, String> {
    if d.is_zero() || d > Duration::from_secs(3600) {
        return Err(format!("{d:?} is outside (0, 1h]"));
    }
    Ok(d)
}

/// `cfg` with the IPv6 address `addr`/64 too, usable at once (no duplicate address
/// detection: the link is the benchmark's own).
pub(crate) fn with_ipv6(cfg: net::Config, addr: std::net::Ipv6Addr) -> Result<net::Config, String> {
    let mut cfg = cfg.ipv6_addr(&format!("{addr}/64")).map_err(msg)?;
    cfg.ipv6.ndp.dad_transmits = 0;
    Ok(cfg)
}

/// An error as text (the commands report errors as strings).
pub fn msg(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// True once `deadline` has passed or the user asked to stop (so guards get to clean up).
pub fn time_up(now: Instant, deadline: Instant) -> bool {
    now >= deadline || stop_requested()
}

/// The two CPUs the two sides of a benchmark are pinned to, if this process may use two.
/// Call it first before pinning anything: it reads the affinity of the calling thread once.
pub fn bench_cpus() -> Option<[usize; 2]> {
    static CPUS: std::sync::OnceLock<Option<[usize; 2]>> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| {
        // SAFETY: an all-zero cpu_set_t is the empty set; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
            return None;
        }
        // SAFETY: every index is below CPU_SETSIZE.
        let mut cpus = (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) });
        Some([cpus.next()?, cpus.next()?])
    })
}

/// Pin the calling thread to CPU `cpu` (ignored if that fails: the figures just get noisier).
pub fn pin_cpu(cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET on a valid set; sched_setaffinity reads the set of the size passed and
    // affects only the calling thread.
    unsafe {
        libc::CPU_SET(cpu % libc::CPU_SETSIZE as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The calling thread's CPUs when [`remember_cpus`] first ran.
static ORIGINAL_CPUS: std::sync::OnceLock<libc::cpu_set_t> = std::sync::OnceLock::new();

/// Remember the calling thread's CPUs (the process's, before any benchmark pinned it), for
/// [`unpin`].
pub fn remember_cpus() {
    ORIGINAL_CPUS.get_or_init(|| {
        // SAFETY: an all-zero cpu_set_t is the empty set; sched_getaffinity writes at most the
        // size passed into it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        set
    });
}

/// Give the calling thread back the CPUs [`remember_cpus`] saw. A benchmark pins its thread to
/// one CPU; a later measurement in the same process whose threads inherit that pin would run
/// them all on one CPU.
pub fn unpin() {
    if let Some(set) = ORIGINAL_CPUS.get() {
        // SAFETY: `set` is a valid cpu_set_t of the size passed; this affects only the calling
        // thread.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    }
}

/// Pin the calling thread to side `side` (0 or 1) of [`bench_cpus`], if there are two CPUs.
pub fn pin_side(side: usize) {
    if let Some(cpus) = bench_cpus() {
        pin_cpu(cpus[side]);
    }
}

/// The `--cpu` arguments that pin a child process to side 1, if there are two CPUs.
pub fn child_cpu_args() -> Vec<String> {
    bench_cpus().map(|c| vec!["--cpu".to_string(), c[1].to_string()]).unwrap_or_default()
}

/// Measures the share of wall time the calling thread spends on a CPU.
pub struct CpuMeter {
    /// Wall clock at the start.
    wall: Instant,
    /// Thread CPU time at the start.
    cpu: Duration,
}

impl CpuMeter {
    /// Start measuring on the calling thread.
    pub fn start() -> CpuMeter {
        CpuMeter { wall: Instant::now(), cpu: thread_cpu_time() }
    }

    /// CPU time over wall time since the start, on the calling thread (the one that started).
    pub fn share(&self) -> f64 {
        let wall = (Instant::now() - self.wall).as_secs_f64();
        (thread_cpu_time().saturating_sub(self.cpu)).as_secs_f64() / wall.max(1e-9)
    }
}

/// CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the thread CPU clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A name for a shared-memory link that no other run uses.
pub fn unique_name(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Make the kernel kill this (child) process if the thread that spawned it dies.
pub fn die_with_parent() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag of the calling process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
}

/// A progress bar on stderr with `steps` steps, or a hidden one when `hidden`.
pub fn progress(steps: u64, hidden: bool) -> ProgressBar {
    if hidden {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} ({elapsed})") {
        pb.set_style(style);
    }
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// Run one step of a benchmark under the progress bar's message `what`, advancing it after.
pub fn step<T>(pb: &ProgressBar, what: &str, f: impl FnOnce() -> T) -> T {
    pb.set_message(what.to_string());
    let r = f();
    pb.inc(1);
    r
}

/// The median of `n` (at least 1) runs of `f`: single-connection goodput on this shared
/// machine moves between runs by up to 3x, so one run says little.
pub fn median_of(n: usize, mut f: impl FnMut() -> Result<f64, String>) -> Result<f64, String> {
    let mut v = (0..n.max(1)).map(|_| f()).collect::<Result<Vec<f64>, String>>()?;
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// The peer's figures, or why the table has none: "failed: …" when its run failed,
/// "skipped: …" when it could not run here (`skipped`).
pub fn peer_or_reason<F>(peer: &Option<Result<F, String>>, skipped: Option<String>) -> Result<&F, String> {
    match (peer, skipped) {
        (Some(Ok(f)), _) => Ok(f),
        (Some(Err(e)), _) => Err(format!("failed: {e}")),
        (None, Some(why)) => Err(format!("skipped: {why}")),
        (None, None) => Err(String::new()),
    }
}

/// Print tables as text separated by blank lines, or as one JSON array (and write the
/// `--csv`/`--plot` files a `bench` command was asked for).
pub fn print_tables(tables: &[Table], json: bool) {
    crate::reproduce::export::write_requested(tables);
    crate::output::print_all(&tables.iter().collect::<Vec<_>>(), json);
}

/// Round trips before measuring.
pub const WARMUP: u64 = 1_000;
/// Round trips measured.
pub const EXCHANGES: u64 = 20_000;
/// Lost replies tolerated before a round-trip measurement is abandoned.
pub const MAX_LOST: u64 = 50;

/// The value at percentile `p` (0..=100) of `sorted` (nearest rank), as f64 (NaN if empty).
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64
}

/// Run [`WARMUP`] then [`EXCHANGES`] round trips with `exchange(seq)` (which returns the
/// round-trip time in ns, or None if the reply did not come); returns the measured times, sorted.
pub fn rtt_samples(mut exchange: impl FnMut(u64) -> Result<Option<u64>, String>) -> Result<Vec<u64>, String> {
    let mut samples = Vec::with_capacity(EXCHANGES as usize);
    let mut lost = 0;
    for seq in 0..WARMUP + EXCHANGES {
        match exchange(seq)? {
            Some(ns) if seq >= WARMUP => samples.push(ns),
            Some(_) => {}
            None => lost += 1,
        }
        if lost > MAX_LOST || stop_requested() {
            return Err(format!("round trip: {lost} replies lost after {seq} requests"));
        }
    }
    samples.sort_unstable();
    Ok(samples)
}

/// One comparison row: metric, our figure, the peer's figure (or why there is none) and
/// their ratio (ours / the peer's), the figures in `unit`.
pub fn ratio_row(t: &mut Table, metric: &str, ours: f64, peer: Result<f64, &str>, unit: Unit) {
    let (k, ratio) = match peer {
        Ok(k) => (Cell::Num(k, unit), Cell::ratio(ours / k)),
        Err(why) => (Cell::Missing(why.to_string()), Cell::Missing("-".into())),
    };
    t.row(vec![Cell::from(metric), Cell::Num(ours, unit), k, ratio]);
}

/// How long a blocking kernel socket waits before checking whether to stop.
pub const SOCKET_TICK: Duration = Duration::from_millis(20);

/// How a kernel socket of a benchmark waits for data.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Non-blocking, spinning on `WouldBlock` (busy-polling).
    Spin,
    /// Blocking (with a short timeout so loops can check whether to stop).
    Block,
}

impl Mode {
    /// Configure a UDP socket for this mode.
    pub fn apply_udp(self, sock: &std::net::UdpSocket) -> std::io::Result<()> {
        match self {
            Mode::Spin => sock.set_nonblocking(true),
            Mode::Block => sock.set_read_timeout(Some(SOCKET_TICK)),
        }
    }

    /// Configure a TCP stream for this mode.
    pub fn apply_tcp(self, sock: &std::net::TcpStream) -> std::io::Result<()> {
        match self {
            Mode::Spin => sock.set_nonblocking(true),
            Mode::Block => sock.set_nonblocking(false).and_then(|_| sock.set_read_timeout(Some(SOCKET_TICK))),
        }
    }
}

/// True for the errors a non-blocking or timed-out receive returns when nothing arrived.
pub fn nothing_yet(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// A kernel server thread in a namespace (pinned to side 1), stopped and joined by
/// [`NsServer::finish`].
pub struct NsServer<T> {
    /// Set to ask the server to stop.
    stop: Arc<AtomicBool>,
    /// The server thread.
    handle: std::thread::JoinHandle<Result<Result<T, String>, testbed::TestbedError>>,
}

impl<T: Send + 'static> NsServer<T> {
    /// In `ns`, make a socket with `bind`, then run `serve(socket, stop)` there.
    pub fn start<S: 'static>(
        ns: &testbed::Netns,
        bind: impl FnOnce() -> std::io::Result<S> + Send + 'static,
        serve: impl FnOnce(S, &AtomicBool) -> Result<T, String> + Send + 'static,
    ) -> Result<NsServer<T>, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready, bound) = mpsc::channel();
        let flag = stop.clone();
        let handle = ns.spawn(move || {
            pin_side(1);
            let bound = bind();
            let _ = ready.send(bound.as_ref().map(|_| ()).map_err(msg));
            serve(bound.map_err(msg)?, &flag)
        });
        let server = NsServer { stop, handle };
        match bound.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(())) => Ok(server),
            Ok(Err(e)) => Err(format!("server bind: {e}")),
            Err(_) => Err(server.finish().err().unwrap_or_else(|| "the server thread did not start".into())),
        }
    }

    /// Ask the server to stop and collect its result.
    pub fn finish(self) -> Result<T, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().map_err(|_| "the server thread panicked".to_string())?.map_err(msg)?
    }
}

/// A child `linerate bench-peer ...` process whose stdout lines we read; killed on drop.
pub struct PeerProcess {
    /// The child.
    child: Child,
    /// Its stdout, line by line, from a reader thread.
    lines: mpsc::Receiver<String>,
}

impl PeerProcess {
    /// Start `linerate bench-peer <args> [--cpu N]` (pinned to side 1) with stdout piped to
    /// us and stderr shared.
    pub fn spawn(args: &[&str]) -> Result<PeerProcess, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find our own executable: {e}"))?;
        let mut child = Command::new(exe)
            .arg("bench-peer")
            .args(args)
            .args(child_cpu_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the peer process: {e}"))?;
        let out = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        // From here on the guard kills the child on every path.
        let guard = PeerProcess { child, lines };
        let out = out.ok_or("the peer process has no stdout")?;
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(guard)
    }

    /// The next line the child prints, waiting at most `timeout`.
    pub fn next_line(&mut self, timeout: Duration) -> Result<String, String> {
        self.lines.recv_timeout(timeout).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => format!("the peer process said nothing for {timeout:?}"),
            mpsc::RecvTimeoutError::Disconnected => "the peer process exited early (its message is above)".to_string(),
        })
    }

    /// The next line, parsed as JSON.
    pub fn next_json<T: DeserializeOwned>(&mut self, timeout: Duration) -> Result<T, String> {
        let line = self.next_line(timeout)?;
        serde_json::from_str(&line).map_err(|e| format!("the peer process printed {line:?}: {e}"))
    }

    /// Wait (up to ten seconds) for the child to print [`READY`].
    pub fn expect_ready(&mut self) -> Result<(), String> {
        match self.next_line(Duration::from_secs(10))? {
            line if line == READY => Ok(()),
            line => Err(format!("the peer process printed {line:?} instead of {READY:?}")),
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stack configuration for `ip` (CIDR) on a link of IP MTU `mtu` with MSS = MTU - 40,
/// room for `sessions` connections (and as many half-open), and optionally `buffer` bytes of
/// send and receive buffer per connection.
pub fn tcp_stack_config(ip: &str, mtu: usize, sessions: usize, buffer: Option<usize>) -> Result<Config, String> {
    let mut cfg = Config::parse_host(ip).map_err(msg)?.mtu(mtu).mss((mtu - 40) as u16);
    cfg.tcp.max_sessions = sessions;
    cfg.tcp.syn_backlog = sessions;
    if !(1..=1 << 20).contains(&sessions) {
        return Err(format!("{sessions} sessions is outside 1..=2^20"));
    }
    if let Some(b) = buffer {
        if !(1024..=1 << 30).contains(&b) {
            return Err(format!("--buffer {b} is outside 1024..=2^30 bytes"));
        }
        // An explicit size is the size: no growth (bounded memory per session when
        // thousands of connections run).
        (cfg.tcp.tx_buffer, cfg.tcp.rx_buffer) = (b, b);
        (cfg.tcp.tx_buffer_max, cfg.tcp.rx_buffer_max) = (b, b);
    }
    // TCP's memory budget for comparisons (`bench tcp` with and without it): MiB, 0 for none.
    if let Ok(v) = std::env::var("LINERATE_TCP_MEM_MIB") {
        let mib: usize = v.parse().map_err(|_| format!("LINERATE_TCP_MEM_MIB={v} is not a number of MiB"))?;
        let limit = if mib == 0 { usize::MAX } else { mib << 20 };
        (cfg.tcp.mem_limit, cfg.tcp.mem_pressure) = (limit, if mib == 0 { usize::MAX } else { limit / 4 });
    }
    Ok(cfg)
}
