//! `linerate bench tcp --impairment-grid`: linerate's TCP sender against Linux's, each
//! sending the same bytes over a TAP link whose sender side is impaired, in the same run.
//!
//! - linerate sends: a linerate host on a TAP (its egress impaired by linerate's own
//!   impairment) serves the bytes over HTTP; `curl` in the namespace downloads them and `cmp`
//!   checks them against the expected file.
//! - Linux sends: `nc` in the namespace sends the file to a linerate receiver that checks
//!   every byte against the pattern; Linux's egress into the TAP is impaired by the kernel
//!   (netem, or the nftables/NFQUEUE substitute).
//!
//! The two impairments are made equivalent: a lost packet is one MSS-sized segment on both
//! sides (Linux's TAP gets `gso_max_segs 1`, so its qdisc sees segments rather than GSO
//! super-packets, and loss is drawn per segment as ours is), and reordering holds the chosen
//! share of packets back by the given time while the others pass at once, with no delay on
//! the rest (ours: `reorder_hold` with no base delay; netem: "reorder (1 - p) delay D").

use crate::bench_common::msg;
use crate::output::{Cell, Table};
use crate::runloop::{now, stop_requested, Idler};
use apps::{pattern, HttpServer};
use link::impair::Impairment;
use link::Link;
use net::{Config, Recv, Stack, TcpHandle, TcpListener};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use testbed::linux_impair::{LinuxImpair, LinuxImpairSpec};
use testbed::tap::TAP_IFNAME;
use testbed::TapSetup;

/// One row of the grid: a name and the impairment of the sender's egress.
struct Row {
    name: &'static str,
    loss: f64,
    reorder: f64,
    duplicate: f64,
    hold: Duration,
}

/// The rows of the table.
const ROWS: [Row; 6] = [
    Row { name: "none", loss: 0.0, reorder: 0.0, duplicate: 0.0, hold: Duration::ZERO },
    Row { name: "1% loss", loss: 0.01, reorder: 0.0, duplicate: 0.0, hold: Duration::ZERO },
    Row { name: "5% loss", loss: 0.05, reorder: 0.0, duplicate: 0.0, hold: Duration::ZERO },
    Row { name: "1% reordered by 1 ms", loss: 0.0, reorder: 0.01, duplicate: 0.0, hold: Duration::from_millis(1) },
    Row { name: "5% reordered by 5 ms", loss: 0.0, reorder: 0.05, duplicate: 0.0, hold: Duration::from_millis(5) },
    Row {
        name: "1% loss + 1% reorder + 1% dup, 2 ms",
        loss: 0.01,
        reorder: 0.01,
        duplicate: 0.01,
        hold: Duration::from_millis(2),
    },
];

const LINUX_CIDR: &str = "10.78.0.1/24";
const HOST_CIDR: &str = "10.78.0.2/24";
const HTTP_PORT: u16 = 80;
const SINK_PORT: u16 = 9;

/// The outcome of one transfer.
struct Transfer {
    secs: f64,
    /// Segments the sender retransmitted (Linux's from `nstat`), if known.
    retransmits: Option<u64>,
    /// Retransmission timeouts of the sender, if known.
    timeouts: Option<u64>,
}

/// Run the grid: `bytes` per transfer, rows whose name contains `only` (all if empty).
pub fn run(bytes: u64, only: &str, limit: Duration, json: bool) -> Result<bool, String> {
    if let Some(why) = testbed::netns_unavailable().or_else(testbed::linux_impair::unavailable) {
        return Err(format!("the impairment grid needs network namespaces and a kernel impairment: {why}"));
    }
    let file = PatternFile::create(bytes).map_err(|e| format!("cannot write the pattern file: {e}"))?;
    let mut t = Table::new(
        &format!(
            "TCP sender under impairment on its egress, {} per transfer (time to send; ratio < 1: linerate faster)",
            crate::output::fmt_si(bytes as f64, "B")
        ),
        &[
            "impairment",
            "linerate sends",
            "Linux sends",
            "ratio",
            "linerate retransmits",
            "Linux retransmits",
            "linerate timeouts",
            "Linux timeouts",
        ],
    );
    let mut all_ok = true;
    for row in ROWS.iter().filter(|r| r.name.contains(only)) {
        if stop_requested() {
            return Err("interrupted".into());
        }
        eprintln!("impairment grid: {} ...", row.name);
        let ours = linerate_sends(row, bytes, &file.path, limit);
        let linux = linux_sends(row, bytes, &file.path, limit);
        let cell = |r: &Result<Transfer, String>| match r {
            Ok(x) => Cell::secs(x.secs),
            Err(e) => Cell::Missing(format!("failed: {e}")),
        };
        let ratio = match (&ours, &linux) {
            (Ok(o), Ok(l)) => Cell::ratio(o.secs / l.secs),
            _ => Cell::blank(),
        };
        let count = |r: &Result<Transfer, String>, f: fn(&Transfer) -> Option<u64>| {
            r.as_ref().ok().and_then(f).map_or(Cell::blank(), Cell::count_u64)
        };
        all_ok &= ours.is_ok() && linux.is_ok();
        t.row(vec![
            Cell::from(row.name),
            cell(&ours),
            cell(&linux),
            ratio,
            count(&ours, |x| x.retransmits),
            count(&linux, |x| x.retransmits),
            count(&ours, |x| x.timeouts),
            count(&linux, |x| x.timeouts),
        ]);
    }
    t.print(json);
    Ok(all_ok)
}

/// The expected bytes in a file the Linux tools read (removed on drop).
struct PatternFile {
    path: PathBuf,
}

impl PatternFile {
    fn create(bytes: u64) -> std::io::Result<PatternFile> {
        let path = std::env::temp_dir().join(format!("linerate-grid-{}.bin", std::process::id()));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let mut off = 0u64;
        while off < bytes {
            let run = pattern::run_at(off);
            let n = (bytes - off).min(run.len() as u64) as usize;
            f.write_all(&run[..n])?;
            off += n as u64;
        }
        f.flush()?;
        Ok(PatternFile { path })
    }
}

impl Drop for PatternFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn host_config() -> Result<Config, String> {
    Config::parse_host(HOST_CIDR).map_err(|e| e.to_string())
}

/// The linerate host's egress impairment for `row` (per frame; reordered frames held by the
/// row's time, the others undelayed).
fn our_impairment(row: &Row) -> Impairment {
    Impairment {
        loss: row.loss,
        reorder: row.reorder,
        duplicate: row.duplicate,
        reorder_hold: row.hold,
        seed: 0x9e37,
        ..Default::default()
    }
}

/// linerate serves `bytes` over HTTP; curl downloads them and cmp checks them.
fn linerate_sends(row: &Row, bytes: u64, file: &Path, limit: Duration) -> Result<Transfer, String> {
    let mut setup = TapSetup::create_impaired("lr-grid", LINUX_CIDR, host_config()?, None, Some(our_impairment(row)))
        .map_err(msg)?;
    let mut http = HttpServer::listen(&mut setup.stack, HTTP_PORT).map_err(msg)?;
    let host = HOST_CIDR.split('/').next().unwrap_or_default();
    let cmd =
        format!("curl -sf --max-time {} http://{host}/size/{bytes} | cmp -s - {}", limit.as_secs(), file.display());
    let t0 = Instant::now();
    let child = setup.ns.command("sh").args(["-c", &cmd]).stdin(Stdio::null()).spawn().map_err(msg)?;
    let status = serve_until_exit(&mut setup.stack, child, limit, |s| http.serve(s).map(|n| n > 0))?;
    let secs = t0.elapsed().as_secs_f64();
    if !status {
        return Err("curl failed or the bytes differ (cmp)".into());
    }
    let counter = |name: &str| setup.stack.counters().iter().find(|(n, _)| *n == name).map(|(_, v)| v);
    Ok(Transfer { secs, retransmits: counter("tcp_retransmits"), timeouts: counter("tcp_rto_fired") })
}

/// nc sends the file to a linerate receiver that checks every byte.
fn linux_sends(row: &Row, bytes: u64, file: &Path, limit: Duration) -> Result<Transfer, String> {
    let mut setup = TapSetup::create("lr-grid", LINUX_CIDR, host_config()?, None).map_err(msg)?;
    // One segment per packet in Linux's qdisc, so loss is drawn per segment as ours is.
    setup.ns.ip(&["link", "set", TAP_IFNAME, "gso_max_segs", "1"]).map_err(msg)?;
    let spec = LinuxImpairSpec { loss: row.loss, reorder: row.reorder, duplicate: row.duplicate, delay: row.hold };
    let _guard = if row.loss + row.reorder + row.duplicate > 0.0 {
        Some(LinuxImpair::apply(Some(&setup.ns), TAP_IFNAME, &spec).map_err(|e| format!("Linux impairment: {e}"))?)
    } else {
        None
    };
    let mut rx = CheckingReceiver::listen(&mut setup.stack, SINK_PORT)?;
    let host = HOST_CIDR.split('/').next().unwrap_or_default();
    let before = linux_counters(&setup.ns);
    let cmd = format!("nc -N -w {} {host} {SINK_PORT} < {}", limit.as_secs(), file.display());
    let t0 = Instant::now();
    let child = setup.ns.command("sh").args(["-c", &cmd]).stdin(Stdio::null()).spawn().map_err(msg)?;
    let ok = serve_until_exit(&mut setup.stack, child, limit, |s| rx.serve(s))?;
    let secs = t0.elapsed().as_secs_f64();
    let after = linux_counters(&setup.ns);
    let delta = |i: usize| after.zip(before).map(|(a, b)| a[i].saturating_sub(b[i]));
    let (retransmits, timeouts) = (delta(0), delta(1));
    if !ok {
        return Err("nc failed".into());
    }
    match (rx.received, rx.mismatches) {
        (n, 0) if n == bytes => Ok(Transfer { secs, retransmits, timeouts }),
        (n, 0) => Err(format!("{n} of {bytes} bytes arrived")),
        (_, m) => Err(format!("{m} bytes differ from what was sent")),
    }
}

/// Linux's TCP retransmitted segments and retransmission timeouts so far in the namespace
/// (`nstat -az`: TcpRetransSegs, TcpExtTCPTimeouts).
fn linux_counters(ns: &testbed::Netns) -> Option<[u64; 2]> {
    let out = ns.command("nstat").args(["-az", "TcpRetransSegs", "TcpExtTCPTimeouts"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
    };
    Some([get("TcpRetransSegs")?, get("TcpExtTCPTimeouts")?])
}

/// Poll the host and run `serve` until `child` exits (and then a little longer, so the last
/// acknowledgements go out); returns whether it exited with success.
fn serve_until_exit(
    stack: &mut Stack<Box<dyn Link>>,
    mut child: Child,
    limit: Duration,
    mut serve: impl FnMut(&mut Stack<Box<dyn Link>>) -> Result<bool, net::NetError>,
) -> Result<bool, String> {
    let start = now();
    let mut idler = Idler::new();
    let mut last_check = start;
    let mut exited: Option<(bool, link::Instant)> = None;
    loop {
        let t = now();
        let mut worked = stack.poll(t).map_err(msg)? > 0;
        worked |= serve(stack).map_err(msg)?;
        stack.flush().map_err(msg)?;
        idler.after_poll(stack.link(), worked);
        if let Some((ok, at)) = exited {
            if t - at >= Duration::from_millis(200) {
                return Ok(ok);
            }
            continue;
        }
        if t - last_check >= Duration::from_millis(2) {
            last_check = t;
            if let Some(status) = child.try_wait().map_err(msg)? {
                exited = Some((status.success(), t));
            }
        }
        if t - start > limit || stop_requested() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("not done within {} s", limit.as_secs()));
        }
    }
}

/// Accepts one connection and checks every byte against the pattern.
struct CheckingReceiver {
    listener: TcpListener,
    conn: Option<TcpHandle>,
    received: u64,
    mismatches: u64,
    done: bool,
    buf: Vec<u8>,
}

impl CheckingReceiver {
    fn listen(stack: &mut Stack<Box<dyn Link>>, port: u16) -> Result<Self, String> {
        let listener = stack.tcp_listen(port, 4).map_err(msg)?;
        Ok(CheckingReceiver { listener, conn: None, received: 0, mismatches: 0, done: false, buf: vec![0; 256 * 1024] })
    }

    fn serve(&mut self, stack: &mut Stack<Box<dyn Link>>) -> Result<bool, net::NetError> {
        if self.conn.is_none() && !self.done {
            self.conn = stack.tcp_accept(self.listener);
        }
        let Some(h) = self.conn else { return Ok(false) };
        let mut worked = false;
        loop {
            match stack.tcp_recv(h, &mut self.buf)? {
                Recv::Data(n) => {
                    worked = true;
                    let mut off = 0;
                    while off < n {
                        let run = pattern::run_at(self.received);
                        let k = (n - off).min(run.len());
                        self.mismatches +=
                            self.buf[off..off + k].iter().zip(run).filter(|(a, b)| a != b).count() as u64;
                        self.received += k as u64;
                        off += k;
                    }
                }
                Recv::Eof => {
                    stack.tcp_close(h)?;
                    self.conn = None;
                    self.done = true;
                    return Ok(worked);
                }
                _ => return Ok(worked),
            }
        }
    }
}
