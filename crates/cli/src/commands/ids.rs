//! `linerate ids`: the Pigasus-style IDS on the middlebox runtime (Rosebud case study 1,
//! software reordering). TCP flows are spread over the units by the symmetric flow hash,
//! reassembled with bounded reorder buffers and matched against Snort rules; matching packets
//! go to the host (alert log + pcap). As an IDS (the default) the host then sends them on out
//! of the other port too, so every frame is forwarded (EVE `action: "allowed"`); with `--ips`
//! they are dropped (EVE `blocked`), and only safe traffic leaves by the other port.
//! `--make-trace` writes a test trace with planted attacks instead; `linerate ids check` says
//! which rules the engine evaluates only in part (see [`crate::commands::ids_check`]).

use crate::commands::ids_check::{require_rules, run_check, CheckArgs, VarArgs};
use crate::commands::middlebox::{open_input, open_output, output_is_stdout, run, summary, IoArgs, RunArgs};
use crate::output::Cell;
use accel::ids::support::partial_rules;
use apps::ids::alert::AlertSink;
use apps::ids::trace::{generate, TraceConfig};
use apps::ids::{self, IdsConfig, IdsRules, IdsUnit};
use link::pcap::PcapWriter;
use link::{FrameBatch, Instant, Link, LinkError, LinkStats, MAX_FRAME};
use middlebox::testlinks::NullLink;
use middlebox::{policy, Runtime, RuntimeConfig, SlotSpec};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Options of `linerate ids`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct IdsArgs {
    #[command(subcommand)]
    command: Option<IdsCommand>,
    /// Snort 3 rules file (Snort 2 and Suricata application-protocol headers such as
    /// `alert http` are mapped where they can be; see `linerate ids check`).
    #[arg(long)]
    rules: Option<PathBuf>,
    /// Refuse a rules file with any broken rule, unknown keyword or option the engine does not
    /// evaluate, naming file:line (default: skip broken rules with a warning, load the others).
    #[arg(long)]
    strict: bool,
    /// Run as an IPS: drop the packets that alert (default: an IDS, which alerts and forwards
    /// every packet).
    #[arg(long)]
    ips: bool,
    #[command(flatten)]
    vars: VarArgs,
    /// Write Snort alert_fast lines here (`-` for standard output), stamped with the packets'
    /// capture time.
    #[arg(long)]
    alerts: Option<PathBuf>,
    /// Write Suricata EVE JSON alert records here, one object per line (`-` for standard output).
    #[arg(long)]
    eve: Option<PathBuf>,
    /// Write the packets sent to the host (matches) to this capture file (pcapng if the name
    /// ends in .pcapng; `-` for standard output), with their original timestamps.
    #[arg(long)]
    matched: Option<PathBuf>,
    /// How long a reorder gap may stay open before it is skipped (a duration: 200ms, 1s; a
    /// bare number is seconds).
    #[arg(value_name = "DURATION", long, default_value = "200ms", value_parser = crate::duration::parse_duration)]
    reorder_timeout: Duration,
    /// Instead of inspecting: write a test trace with attacks planted from the rules to this
    /// pcap (and the expected "sid flow" lines to PATH.expected), then exit.
    #[arg(long)]
    make_trace: Option<PathBuf>,
    /// Seed of --make-trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Background conversations of --make-trace.
    #[arg(long, default_value_t = 2000)]
    background: usize,
    /// Attacks planted by --make-trace.
    #[arg(long, default_value_t = 200)]
    attacks: usize,
    #[command(flatten)]
    io: IoArgs,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    metrics: crate::metrics_http::MetricsArgs,
}

/// Subcommands of `linerate ids`.
#[derive(clap::Subcommand)]
enum IdsCommand {
    /// List every rule that is not fully supported (sid, option, reason) and every rule that
    /// does not load.
    Check(CheckArgs),
}

/// Load the rules, reporting skipped rules (file:line: problem) on stderr; no rule loaded is
/// an error.
fn load(a: &IdsArgs, path: &Path) -> Result<IdsRules, String> {
    let vars = a.vars.build()?;
    let (set, report) = ids::load_rules_with(path, &vars, a.strict).map_err(|e| format!("rules: {e}"))?;
    require_rules(path, &report)?;
    if !report.errors.is_empty() {
        eprintln!("linerate: warning: {} rules skipped (use --strict to refuse the file):", report.errors.len());
        for e in report.errors.iter().take(5) {
            eprintln!("  {e}");
        }
    }
    // Unknown keywords are most often typos: say so even when the rules load.
    let unknown: Vec<_> = partial_rules(&set.full).into_iter().filter(|p| p.gaps.iter().any(|g| g.unknown)).collect();
    if let Some(first) = unknown.first() {
        let kw = first.gaps.iter().find(|g| g.unknown).map_or("", |g| g.option.as_str());
        eprintln!(
            "linerate: warning: {} rules use unknown keywords and load as partial (the first: {}:{}: sid {}: '{kw}')",
            unknown.len(),
            path.display(),
            first.line,
            first.sid
        );
    }
    eprintln!(
        "linerate: {} rules loaded from {} ({} fully supported, {} partial; 'linerate ids check' lists them)",
        report.loaded(),
        path.display(),
        report.fully_supported,
        report.partial
    );
    Ok(set)
}

/// Whether an output takes standard output (then the report goes to stderr); more than one
/// is refused.
fn one_stdout(a: &IdsArgs) -> Result<bool, String> {
    let dash = |p: &Option<PathBuf>| p.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let n = [output_is_stdout(&a.io), dash(&a.matched), dash(&a.alerts), dash(&a.eve)].iter().filter(|&&b| b).count();
    if n > 1 {
        return Err("only one of --output, --matched, --alerts and --eve can be standard output".into());
    }
    Ok(n == 1)
}

/// Run `linerate ids`.
pub fn run_ids(a: IdsArgs) -> Result<ExitCode, String> {
    if let Some(IdsCommand::Check(c)) = a.command {
        return run_check(c);
    }
    let _metrics = crate::metrics_http::serve(&a.metrics)?;
    let path = a.rules.clone().ok_or("--rules is required (or use 'linerate ids check RULES')")?;
    let stdout_taken = one_stdout(&a)?;
    let rules = load(&a, &path)?;
    let set = rules.full.clone();
    if let Some(path) = &a.make_trace {
        return make_trace(&set, path, &a);
    }
    let input = open_input(&a.io)?;
    let output = SharedOut(Arc::new(Mutex::new(open_output(&a.io)?)));
    let host_out = output.clone();
    let units = a.run.units;
    let policy = policy::by_name(&a.run.policy, units).ok_or_else(|| format!("unknown policy '{}'", a.run.policy))?;
    if a.run.policy != "hash" {
        eprintln!("linerate: warning: the IDS reassembles flows per unit; only --policy hash keeps a flow on one unit");
    }
    let slots = SlotSpec::new(a.run.slots, 9216 + 256);
    let cfg = IdsConfig {
        slots,
        reorder_total: (a.run.slots / 2).max(1),
        reorder_timeout: a.reorder_timeout,
        ..IdsConfig::default()
    };
    let mut b = Runtime::builder_with(RuntimeConfig { slots, ..RuntimeConfig::default() })
        .port_boxed(input.link)
        .port(output)
        .policy_boxed(policy);
    for _ in 0..units {
        b = b.unit(IdsUnit::new(rules.clone(), cfg));
    }
    let rt = b.build().map_err(|e| e.to_string())?;
    let mut sink = AlertSink::new(a.alerts.as_deref(), a.matched.as_deref())?.blocking(a.ips);
    if let Some(eve) = &a.eve {
        sink = sink.with_eve(eve)?;
    }
    let name = a.run.name.clone().unwrap_or_else(|| format!("ids-{}", std::process::id()));
    let (mut passed_on, mut batch) = (0u64, FrameBatch::new(1, MAX_FRAME));
    let o = run(rt, input.total, a.run.duration, ("ids", &name), |hp| {
        sink.record(&hp, &set)?;
        if !a.ips {
            passed_on += host_out.send(&mut batch, &hp.frame, hp.meta.stamp)?;
        }
        Ok(())
    })?;
    sink.finish()?;
    let title =
        format!("linerate ids: {} rules from {}, {units} units, {} policy", set.len(), path.display(), o.stats.policy);
    let mut t = summary(&title, &o);
    t.row(vec![Cell::from("host"), Cell::from("alerts"), Cell::count(sink.alerts as f64)]);
    t.row(vec![Cell::from("host"), Cell::from("distinct (sid, flow)"), Cell::count(sink.pairs().len() as f64)]);
    t.row(vec![Cell::from("host"), Cell::from("unverified (reorder overflow)"), Cell::count(sink.unverified as f64)]);
    let mode = if a.ips { "dropped (IPS)" } else { "forwarded after alerting (IDS)" };
    let n = if a.ips { sink.packets } else { passed_on };
    t.row(vec![Cell::from("host"), Cell::from(mode), Cell::count(n as f64)]);
    if stdout_taken {
        t.eprint(a.run.json);
    } else {
        t.print(a.run.json);
    }
    Ok(ExitCode::SUCCESS)
}

/// The output port, shared by the runtime and the host: as an IDS the host sends the packets
/// it alerted on out of it after logging them.
#[derive(Clone)]
struct SharedOut(Arc<Mutex<Box<dyn Link>>>);

/// How often the host retries a frame the output has no room for (every 100 µs: 1 s).
const OUTPUT_RETRIES: usize = 10_000;

impl SharedOut {
    fn with<T>(&self, f: impl FnOnce(&mut dyn Link) -> T) -> T {
        let mut l = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(l.as_mut())
    }

    /// Send `frame` (stamped with its capture time if it has one) out; 1 once sent. An
    /// output that stays full for a second is an error.
    fn send(&self, batch: &mut FrameBatch, frame: &[u8], stamp: Option<u64>) -> Result<u64, String> {
        batch.clear();
        let pushed = match stamp {
            Some(s) => batch.push_stamped(frame, s),
            None => batch.push(frame),
        };
        if !pushed {
            return Err(format!("a {}-byte frame does not fit the output batch", frame.len()));
        }
        for _ in 0..OUTPUT_RETRIES {
            if self.with(|l| l.tx_batch(Instant::now(), batch)).map_err(|e| format!("output: {e}"))? == 1 {
                return Ok(1);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Err("output: no room for an alerted frame for a second".into())
    }
}

impl Link for SharedOut {
    fn max_frame(&self) -> usize {
        self.with(|l| l.max_frame())
    }
    fn rx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.with(|l| l.rx_batch(now, batch))
    }
    fn tx_batch(&mut self, now: Instant, batch: &mut FrameBatch) -> Result<usize, LinkError> {
        self.with(|l| l.tx_batch(now, batch))
    }
    fn stats(&self) -> LinkStats {
        self.with(|l| l.stats())
    }
    fn kind(&self) -> &'static str {
        self.with(|l| l.kind())
    }
    fn raw_fd(&self) -> Option<i32> {
        self.with(|l| l.raw_fd())
    }
}

/// Timestamp of a generated trace's first frame: 2026-01-01 00:00:00 UTC.
const TRACE_START_NANOS: u64 = 1_767_225_600 * 1_000_000_000;

fn make_trace(set: &accel::ids::RuleSet, path: &Path, a: &IdsArgs) -> Result<ExitCode, String> {
    let cfg =
        TraceConfig { seed: a.seed, background_flows: a.background, attacks: a.attacks, ..TraceConfig::default() };
    let t = generate(set, &cfg);
    let mut w = PcapWriter::new(NullLink::new(), path).map_err(|e| e.to_string())?;
    let mut batch = FrameBatch::new(1, MAX_FRAME);
    for (i, f) in t.frames.iter().enumerate() {
        batch.clear();
        if !batch.push(f) {
            return Err(format!("trace frame {i} of {} bytes is larger than a frame ({MAX_FRAME})", f.len()));
        }
        // One frame a microsecond from a fixed date, so a trace is the same file every time.
        let at = Instant::from_nanos(TRACE_START_NANOS + i as u64 * 1_000);
        w.tx_batch(at, &mut batch).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())?;
    let exp = PathBuf::from(format!("{}.expected", path.display()));
    let mut f = std::fs::File::create(&exp).map_err(|e| format!("{}: {e}", exp.display()))?;
    for (sid, key) in &t.planted {
        writeln!(f, "{sid} {key}").map_err(|e| e.to_string())?;
    }
    bench::outln!(
        "wrote {} frames ({} of attacks) to {}; {} attacks planted (listed in {}); {} of {} data segments reordered; {} contents split across segments",
        t.frames.len(),
        t.attack_frames,
        path.display(),
        t.planted.len(),
        exp.display(),
        t.reordered,
        t.data_segments,
        t.split_contents
    );
    Ok(ExitCode::SUCCESS)
}
