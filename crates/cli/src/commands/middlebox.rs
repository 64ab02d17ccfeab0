//! What the middlebox commands share (`linerate firewall`, `linerate ids`): opening the input
//! and output links, running a middlebox on threads until its input is consumed, the summary
//! table; and `linerate middlebox stats`, the live counters of running middleboxes.

use crate::output::{Cell, Table, Unit};
use crate::runloop::{install_stop_handler, stop_requested};
use crate::statsfile::{select, StatsPublisher};
use link::capture::Format;
use link::pcap::{PcapReplay, PcapWriter};
use link::shm::ShmLink;
use link::spec::{LinkSpec, OpenOptions};
use link::{Link, LinkConfig};
use middlebox::testlinks::NullLink;
use middlebox::{HostPacket, Runtime, RuntimeStats};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Input and output options shared by the middlebox commands.
#[derive(clap::Args, Debug, Clone)]
pub struct IoArgs {
    /// Where frames come from (port 0): a pcap or pcapng file (`PATH` or `pcap:PATH`, `-` for
    /// standard input; the format is detected), `shm:NAME` (open an existing shared-memory
    /// link), `shm-new:NAME` (create one), `af_packet:IFACE` (or `packet:IFACE`; AF_PACKET, root),
    /// `af_xdp:IFACE` (AF_XDP on the interface's queue 0, every frame; root) or `tap:IFACE` (root).
    #[arg(long)]
    pub input: Option<String>,
    /// Where forwarded frames go (port 1): a capture file to write (`-` for standard output;
    /// frames read from a capture keep their timestamps, live ones get the wall-clock time),
    /// `none`, or a link as for --input.
    #[arg(long, default_value = "none")]
    pub output: String,
    /// Format of a capture --output: pcap or pcapng (default: pcapng if the file name ends in
    /// .pcapng, else pcap).
    #[arg(long, value_parser = ["pcap", "pcapng"])]
    pub output_format: Option<String>,
    /// Replay a pcap input at its recorded pace (default: as fast as possible).
    #[arg(long)]
    pub paced: bool,
    /// IP MTU of shm/af_packet/tap links (af_xdp takes the interface's). 9000, not the 1500 of the other commands: a
    /// bump-in-the-wire must pass the jumbo frames either side may send.
    #[arg(long, default_value_t = 9000, value_parser = crate::flag_values::parse_mtu)]
    pub mtu: usize,
    /// Accept a damaged or truncated capture input: process the packets before the damage
    /// and warn (by default such a file is refused, naming the record, with exit status 1 and
    /// no output written, as tcpdump refuses it).
    #[arg(long)]
    pub keep_going: bool,
}

/// Runtime options shared by the middlebox commands.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Processing units (each on a thread of its own).
    #[arg(long, default_value_t = 2)]
    pub units: usize,
    /// Load-balancing policy: hash (symmetric flow hash), rr (round robin), least (least loaded).
    #[arg(long, default_value = "hash", value_parser = ["hash", "rr", "least"])]
    pub policy: String,
    /// Packet slots per unit.
    #[arg(long, default_value_t = 64)]
    pub slots: usize,
    /// Stop after this long (a duration: 5s, 500ms, 2m; a bare number is seconds; default:
    /// when a pcap input is consumed, else on Ctrl-C).
    #[arg(value_name = "DURATION", short = 't', long, value_parser = crate::duration::parse_duration)]
    pub duration: Option<Duration>,
    /// Name of the instance for `linerate middlebox stats` (default: COMMAND-PID).
    #[arg(long)]
    pub name: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// An input: its link and, for a pcap file, its frame count.
pub struct Input {
    /// The link.
    pub link: Box<dyn Link>,
    /// Frames in the file, for pcap inputs (the run ends when all are processed).
    pub total: Option<u64>,
}

fn link_spec(spec: &str, mtu: usize) -> Result<Option<Box<dyn Link>>, String> {
    let cfg = LinkConfig::default().mtu(mtu);
    if let Some(name) = spec.strip_prefix("shm:") {
        return ShmLink::open(name, Duration::from_secs(10))
            .map(|l| Some(Box::new(l) as Box<dyn Link>))
            .map_err(|e| format!("cannot open shared-memory link '{name}': {e}"));
    }
    if let Some(name) = spec.strip_prefix("shm-new:") {
        return ShmLink::create(name, cfg)
            .map(|l| Some(Box::new(l) as Box<dyn Link>))
            .map_err(|e| format!("cannot create shared-memory link '{name}': {e}"));
    }
    let live = ["packet:", "af_packet:", "af-packet:", "af_xdp:", "af-xdp:", "tap:"];
    if live.iter().any(|p| spec.starts_with(p)) {
        let parsed: LinkSpec = spec.parse()?;
        // AF_XDP takes every frame of the queue (no addresses: a bump in the wire owns its
        // interface) at the interface's MTU; AF_PACKET and TAP take --mtu.
        let mtu = if matches!(parsed, LinkSpec::AfXdp(_)) { None } else { Some(mtu) };
        let opts = OpenOptions { mtu, ..OpenOptions::default() };
        let opened = parsed.open(&opts).map_err(|e| format!("cannot open {parsed}: {e}"))?;
        crate::link_stack::warn_about(&parsed, &opened);
        return Ok(opened.links.into_iter().next());
    }
    Ok(None)
}

/// Open the input named by `io.input`.
pub fn open_input(io: &IoArgs) -> Result<Input, String> {
    let input = io.input.as_deref().ok_or("--input is required")?;
    if let Some(l) = link_spec(input, io.mtu)? {
        return Ok(Input { link: l, total: None });
    }
    let path = input.strip_prefix("pcap:").unwrap_or(input);
    let replay = PcapReplay::open(Path::new(path), io.paced).map_err(|e| format!("input: {e}"))?;
    // Refused before any output is opened: a damaged input leaves no output file that looks
    // like the whole result.
    if let Some(d) = replay.damage() {
        if !io.keep_going {
            return Err(format!("{d}; nothing was processed (--keep-going uses the packets before the damage)"));
        }
    }
    if let Some(w) = replay.warning() {
        eprintln!("linerate: warning: {w}");
    }
    if replay.skipped() > 0 {
        eprintln!(
            "linerate: warning: {path}: {} packets skipped (not Ethernet, or malformed blocks)",
            replay.skipped()
        );
    }
    let total = replay.total() as u64;
    Ok(Input { link: Box::new(replay), total: Some(total) })
}

/// Open the output named by `io.output`.
pub fn open_output(io: &IoArgs) -> Result<Box<dyn Link>, String> {
    if io.output == "none" {
        return Ok(Box::new(NullLink::new()));
    }
    if let Some(l) = link_spec(&io.output, io.mtu)? {
        return Ok(l);
    }
    let path = Path::new(io.output.strip_prefix("pcap:").unwrap_or(&io.output));
    let format = io.output_format.as_deref().and_then(Format::from_name).unwrap_or_else(|| Format::for_path(path));
    PcapWriter::with_format(NullLink::new(), path, format)
        .map(|w| Box::new(w.wall_clock()) as Box<dyn Link>)
        .map_err(|e| format!("output: {e}"))
}

/// True when the capture output goes to standard output (reports then go to stderr).
pub fn output_is_stdout(io: &IoArgs) -> bool {
    io.output == "-" || io.output == "pcap:-"
}

/// Print a command's summary: to standard output, or to stderr when the capture goes there.
pub fn print_summary(t: &Table, io: &IoArgs, json: bool) {
    if output_is_stdout(io) {
        t.eprint(json);
    } else {
        t.print(json);
    }
}

/// How a run ended.
pub struct RunOutcome {
    /// Final counters.
    pub stats: RuntimeStats,
    /// From start until the input was consumed and the middlebox quiet (or stopped).
    pub elapsed: Duration,
}

/// Run `rt` on threads, hand host packets to `on_host`, publish counters as instance `name`
/// of `command` ("firewall", "ids"), and stop when a pcap input of `total` frames is
/// processed, after `duration`, or on Ctrl-C.
pub fn run(
    rt: Runtime,
    total: Option<u64>,
    duration: Option<Duration>,
    (command, name): (&str, &str),
    mut on_host: impl FnMut(HostPacket) -> Result<(), String>,
) -> Result<RunOutcome, String> {
    install_stop_handler();
    let mut publisher = StatsPublisher::new(name, command).map_err(|e| format!("stats file: {e}"))?;
    let running = rt.start().map_err(|e| e.to_string())?;
    let c = running.control();
    let start = Instant::now();
    let deadline = duration.map(|d| start + d);
    let mut flushed = false;
    let mut end = None;
    let mut result = Ok(());
    loop {
        for hp in c.host_recv_all() {
            if let Err(e) = on_host(hp) {
                result = Err(e);
            }
        }
        while let Some(t) = c.trap() {
            eprintln!("linerate: unit {} trapped: {}", t.meta.unit, t.reason);
        }
        let now = Instant::now();
        publisher.publish_every(|| c.stats().flat());
        if result.is_err() || stop_requested() || deadline.is_some_and(|d| now >= d) {
            break;
        }
        if let Some(total) = total {
            let s = c.stats();
            let link = &s.ports[0].link;
            let consumed = link.rx_frames + link.dropped_oversize + link.rx_dropped_no_room >= total;
            if consumed && c.is_quiet() && s.ports[0].rx_frames + s.ports[0].drops.total() >= link.rx_frames {
                if flushed {
                    end = Some(now);
                    break;
                }
                // Let the programs release what they keep (reorder buffers), then wait again.
                for u in 0..c.units() {
                    let _ = c.flush(u);
                }
                flushed = true;
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let _ = c.wait_quiet(Duration::from_secs(2));
    let mut rt = running.stop().map_err(|e| e.to_string())?;
    for hp in rt.control().host_recv_all() {
        on_host(hp)?;
    }
    result?;
    let stats = rt.stats();
    let flat = stats.flat();
    let _ = publisher.publish(&flat.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>());
    let elapsed = end.unwrap_or_else(Instant::now) - start;
    // Flush and close the output (a pcap writer finishes its file when dropped).
    drop(rt.into_ports());
    Ok(RunOutcome { stats, elapsed })
}

/// The summary of a middlebox run: traffic per port and unit, drops by reason, rates.
pub fn summary(title: &str, o: &RunOutcome) -> Table {
    let s = &o.stats;
    let secs = o.elapsed.as_secs_f64().max(1e-9);
    let mut t = Table::new(title, &["where", "counter", "value"]);
    let mut row = |w: &str, c: &str, v: u64| t.row(vec![Cell::from(w), Cell::from(c), Cell::count_u64(v)]);
    for (i, p) in s.ports.iter().enumerate() {
        let w = format!("port {i} ({})", p.kind);
        row(&w, "rx_frames", p.rx_frames);
        row(&w, "tx_frames", p.tx_frames);
        if p.stalls > 0 {
            row(&w, "stalls_units_full", p.stalls);
        }
        for (r, n) in p.drops.iter() {
            row(&w, &format!("drop_{r}"), n);
        }
    }
    for (i, u) in s.units.iter().enumerate() {
        let w = format!("unit {i} ({})", u.program);
        row(&w, "rx_frames", u.unit.rx_frames);
        row(&w, "to_port", u.unit.to_port);
        row(&w, "to_host", u.unit.to_host);
        row(&w, "max_slots_used", u.lb.max_occupancy as u64);
        row(&w, "slots", u.slots as u64);
        for (r, n) in u.unit.drops.iter().chain(u.lb.drops.iter()) {
            row(&w, &format!("drop_{r}"), n);
        }
        for (r, n) in &u.program_counters {
            row(&w, r, *n);
        }
    }
    let frames: u64 = s.ports.iter().map(|p| p.rx_frames).sum();
    let bytes: u64 = s.ports.iter().map(|p| p.rx_bytes).sum();
    t.summary("frames processed", Cell::count_u64(frames));
    t.summary("host packets", Cell::count_u64(s.host.delivered));
    t.summary("time", Cell::secs(secs));
    t.summary("frame rate", Cell::Num(frames as f64 / secs, Unit::FramesPerSec));
    t.summary("throughput", Cell::bps(bytes as f64 * 8.0 / secs));
    t
}

/// Options of `linerate middlebox`.
#[derive(clap::Subcommand)]
pub enum MiddleboxCommand {
    /// Live counters of running middleboxes (firewall, ids): per port and per unit.
    Stats(StatsArgs),
}

/// Options of `linerate middlebox stats`.
#[derive(clap::Args)]
pub struct StatsArgs {
    /// Show only the instance with this name.
    name: Option<String>,
    /// Refresh this many times, once a second (0: once); with --json, one JSON document per
    /// line per refresh.
    #[arg(long, default_value_t = 0)]
    watch: u32,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Run `linerate middlebox ...`.
pub fn run_command(c: MiddleboxCommand) -> Result<ExitCode, String> {
    match c {
        MiddleboxCommand::Stats(a) => stats(a),
    }
}

/// Columns of the per-element table.
const COLUMNS: [&str; 8] =
    ["rx_frames", "tx_frames", "to_port", "to_host", "stalls", "lb_stalls", "occupancy", "max_occupancy"];

fn stats(a: StatsArgs) -> Result<ExitCode, String> {
    for round in 0..=a.watch {
        if round > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        // A middlebox publishes its elements' counters (`unit0.…`); a name picks any instance.
        let is_middlebox = |e: &crate::statsfile::Entry| e.counters.iter().any(|(k, _)| k.starts_with("unit0."));
        let all = select(a.name.as_deref(), "middlebox", |e| a.name.is_some() || is_middlebox(e))?;
        let mut tables = Vec::new();
        for crate::statsfile::Entry { name, pid, counters, .. } in &all {
            let mut headers = vec!["element"];
            headers.extend(COLUMNS);
            headers.push("drops and app counters");
            let mut t = Table::new(&format!("{name} (pid {pid})"), &headers);
            let mut elements: Vec<&str> = Vec::new();
            for (k, _) in counters {
                if let Some((e, _)) = k.split_once('.') {
                    if !elements.contains(&e) {
                        elements.push(e);
                    }
                }
            }
            for e in elements {
                let get = |c: &str| counters.iter().find(|(k, _)| k == &format!("{e}.{c}")).map(|(_, v)| *v);
                let mut cells = vec![Cell::from(e)];
                cells.extend(COLUMNS.iter().map(|c| get(c).map_or(Cell::blank(), Cell::count_u64)));
                let extra: Vec<String> = counters
                    .iter()
                    .filter_map(|(k, v)| {
                        let rest = k.strip_prefix(&format!("{e}."))?;
                        let r = rest
                            .strip_prefix("drop.")
                            .map(|r| format!("drop_{r}"))
                            .or_else(|| rest.strip_prefix("app.").map(String::from))?;
                        (*v > 0).then(|| format!("{r}={v}"))
                    })
                    .collect();
                cells.push(Cell::Text(extra.join(" ")));
                t.row(cells);
            }
            tables.push(t);
        }
        let tables: Vec<&Table> = tables.iter().collect();
        if a.json && a.watch > 0 {
            // Watching: one compact document per refresh (JSON Lines).
            bench::outln!("{}", crate::output::tables_json(&tables));
        } else {
            crate::output::print_all(&tables, a.json);
        }
    }
    Ok(ExitCode::SUCCESS)
}
