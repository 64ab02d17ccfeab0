//! Paper 004 (Rosebud): Fig. 7 forwarding throughput against packet size for 1..N units,
//! Fig. 8 IDS throughput and packet rate, Fig. 9 cost per packet with and without software
//! reordering; all from `linerate bench middlebox` run in-process.

use super::figure::{Axis, Figure, Kind, Series};
use super::{args, column, table, Ctx};
use crate::output::Table;
use std::time::Duration;

/// The repository's data file `rel` (under `data/`): from the working directory if it is
/// there, else from the source tree this binary was built from.
fn data(rel: &str) -> String {
    let here = std::path::Path::new("data").join(rel);
    if here.exists() {
        return here.display().to_string();
    }
    format!("{}/../../data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// Run `bench middlebox` with `argv` (and the repository's rules and blacklist).
fn bench(argv: &[&str]) -> Result<Vec<Table>, String> {
    let (rules, blacklist) = (data("ids/snort3-community.rules"), data("firewall/drop-prefixes.txt"));
    let mut all = argv.to_vec();
    all.extend(["--rules", &rules, "--blacklist", &blacklist]);
    args::<crate::bench_middlebox::MiddleboxBenchArgs>(&all).and_then(|a| crate::bench_middlebox::measure_all(&a))
}

/// Rows of `t` whose workload starts with `what` and unit count is `units`: (frame, column).
fn rows(t: &Table, what: &str, units: f64, col: &str, ys: f64) -> Result<Vec<(f64, f64)>, String> {
    let (w, f, u, c) = (column(t, "workload")?, column(t, "frame")?, column(t, "units")?, column(t, col)?);
    Ok(t.rows()
        .iter()
        .filter(|r| r.get(w).is_some_and(|x| x.render() == what))
        .filter(|r| r.get(u).and_then(|x| x.num()) == Some(units))
        .filter_map(|r| Some((r.get(f)?.num()?, r.get(c)?.num()? * ys)))
        .filter(|(_, y)| y.is_finite() && *y > 0.0)
        .collect())
}

/// Every figure of paper 004.
pub fn figures(ctx: &Ctx) -> Vec<Result<Figure, (String, String)>> {
    let secs = ctx.pick("200ms", "1s");
    let sizes = ctx.pick("64,256,1500,9000", "64,128,256,512,1024,1500,2048,4096,9000");
    ctx.say("004", &format!("linerate bench middlebox: forwarding {sizes} B on 1 and 2 units, IDS"));
    let main = bench(&["--duration", secs, "--sizes", sizes, "--units", "1,2", "--skip", "firewall,swap"]);
    ctx.say("004", "linerate bench middlebox: IDS without software reordering");
    let plain = bench(&[
        "--duration",
        secs,
        "--sizes",
        "64",
        "--units",
        "1",
        "--skip",
        "forward,firewall,swap",
        "--no-reorder",
    ]);
    let mut out = Vec::new();
    match &main {
        Ok(t) => {
            out.push(fig7(t).map_err(|e| ("Fig. 7".into(), e)));
            out.push(fig7c(ctx).map_err(|e| ("Fig. 7c".into(), e)));
            out.push(fig8(t, false).map_err(|e| ("Fig. 8a".into(), e)));
            out.push(fig8(t, true).map_err(|e| ("Fig. 8b".into(), e)));
        }
        Err(e) => {
            ["Fig. 7", "Fig. 7c", "Fig. 8a", "Fig. 8b"].iter().for_each(|f| out.push(Err((f.to_string(), e.clone()))))
        }
    }
    out.push(fig8c(ctx).map_err(|e| ("Fig. 8c".into(), e)));
    out.push(match (&main, &plain) {
        (Ok(a), Ok(b)) => fig9(ctx, a, b).map_err(|e| ("Fig. 9".into(), e)),
        (Err(e), _) | (_, Err(e)) => Err(("Fig. 9".into(), e.clone())),
    });
    out
}

/// Fig. 7: forwarding throughput against packet size on 1 and 2 units.
fn fig7(tables: &[Table]) -> Result<Figure, String> {
    let t = table(tables, "forwarding")?;
    let mut f = Figure::new(
        "004",
        "004-fig7",
        "Fig. 7",
        "forwarding throughput against packet size",
        Axis::log("frame size", "B"),
        Axis::lin("throughput", "Gbit/s"),
    );
    for u in [1.0, 2.0] {
        let s = rows(t, "forward (threads)", u, "throughput", 1e-9)?;
        f.add(Series::new(
            &format!("linerate, {u:.0} unit(s), busy-polling threads"),
            Kind::Linerate,
            &s,
            "linerate bench middlebox",
        ));
    }
    let sizes: Vec<f64> =
        f.series.first().map(|s| s.points.iter().map(|p| p.x).filter(|&x| x > 64.0).collect()).unwrap_or_default();
    let paper: Vec<(f64, f64)> = sizes.iter().map(|&x| (x, 100.0)).collect();
    f.add(Series::new("16 RPUs, 100 Gbit/s for every size but 64 B", Kind::Paper, &paper, "paper 004 Sec. 6.1"));
    let one = f.find(Kind::Linerate, "1 unit").and_then(|s| s.points.last()).copied();
    let two = f.find(Kind::Linerate, "2 unit").and_then(|s| s.points.last()).copied();
    f.paper_measured = "Forwarding rate of a simple forwarder on 16 and 8 RISC-V RPUs against packet size (64 B to \
        9 KB) on 100 and 200 Gbit/s links: 100 Gbit/s for every size but 64 B (88%, 125 Mpps) with 16 RPUs; 8 RPUs \
        need 1024 B packets for 200 Gbit/s. Fig. 7c: round trip through the FPGA, 0.765 µs at the smallest size \
        plus serialization (their Eq. 1)."
        .into();
    f.we_measured =
        "Frames per second through linerate's middlebox runtime (port 0 -> load balancer -> unit -> port 1) \
        with busy-polling threads, 1 and 2 units, frames generated in memory."
            .into();
    f.differences = "An FPGA with 16 RPUs and 100/200 Gbit/s MACs vs threads on a 2-core CPU, frames copied in memory \
        (no NIC); 2 units already use both cores. The round trip is Fig. 7c."
        .into();
    f.ratio = match (one, two) {
        (Some(a), Some(b)) => format!(
            "at {:.0} B: 1 unit {:.1} Gbit/s, 2 units {:.1} Gbit/s ({:.2}x of the paper's 100 Gbit/s)",
            a.x,
            a.y,
            b.y,
            b.y / 100.0
        ),
        _ => "no forwarding figure".into(),
    };
    Ok(f)
}

/// Rosebud's Eq. (1): the estimated forwarding latency (µs) of a `size`-byte packet.
pub fn rosebud_eq1_us(size: f64) -> f64 {
    size * 8.0 * (2.0 / 100.0 + 2.0 / 32.0) / 1000.0 + 0.765
}

/// Fig. 7c: latency through the middlebox against packet size (one frame in flight).
fn fig7c(ctx: &Ctx) -> Result<Figure, String> {
    let sizes: Vec<usize> = ctx.pick(vec![64, 1500, 9000], vec![64, 128, 256, 512, 1024, 1500, 2048, 4096, 9000]);
    let count = ctx.pick(2_000, 20_000);
    let budget = Duration::from_secs(ctx.pick(1, 5));
    let mut f = Figure::new(
        "004",
        "004-fig7c",
        "Fig. 7c",
        "forwarding latency through the middlebox against packet size",
        Axis::log("frame size", "B"),
        Axis::log("latency (median)", "µs"),
    );
    let mut pts = Vec::new();
    for &s in &sizes {
        ctx.say("004", &format!("latency through 1 forwarding unit, {s} B frames, up to {count} frames or {budget:?}"));
        let v = crate::bench_middlebox::forward_latency(s, 1, count, budget)?;
        pts.push((s as f64, v[v.len() / 2] as f64 / 1e3));
    }
    f.add(Series::new(
        "linerate, port 0 -> 1 unit -> port 1 (in-memory links)",
        Kind::Linerate,
        &pts,
        "this run, median",
    ));
    let eq: Vec<(f64, f64)> =
        [64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 9000.0].iter().map(|&x| (x, rosebud_eq1_us(x))).collect();
    f.add(Series::new("Rosebud Eq. (1): serialization + 0.765 µs", Kind::Theory, &eq, "paper 004 Sec. 6.2, Eq. (1)"));
    f.add(Series::new(
        "minimum forwarding latency 0.765 µs (smallest packet)",
        Kind::Paper,
        &[(64.0, 0.765)],
        "paper 004 Sec. 6.2",
    ));
    f.paper_measured = "Round trip from the traffic generator through the FPGA under test and back, against packet size, at \
        low and maximum load: serialization dominates (their Eq. 1, 0.765 µs at the smallest size plus MAC serialization \
        at 100 Gbit/s and RPU loading at 32 Gbit/s); full load adds 32.8 µs only at 64 B."
        .into();
    f.we_measured = "Time from handing one frame to port 0 of a running linerate middlebox (one forwarding unit; the \
        distributor and the unit run to completion on one busy-polling thread, the timing thread on the other \
        core) until it leaves port 1, one frame in flight, median of up to 20,000 frames (at most 5 s per size); \
        the ports are in-memory links."
        .into();
    f.differences =
        "No MACs or wires: a frame crosses two in-memory links, the runtime's slots and one thread; with a \
        thread each for the distributor and the unit, three busy threads would share 2 cores and a frame would \
        wait for a scheduler tick (4 ms) rather than for the middlebox."
            .into();
    let first = pts.first().copied();
    f.ratio = match first {
        Some((x, y)) => format!("at {x:.0} B: {y:.2} µs vs Rosebud's 0.765 µs minimum ({:.2}x)", y / 0.765),
        None => "no measurement".into(),
    };
    Ok(f)
}

/// The IDS rows (threads) as (units, frame size, Gbit/s or Mframe/s).
fn ids_rows(t: &Table, rate: bool) -> Result<Vec<(f64, f64, f64)>, String> {
    let (col, ys) = if rate { ("frame rate", 1e-6) } else { ("throughput", 1e-9) };
    let mut v = Vec::new();
    for u in [1.0, 2.0] {
        v.extend(rows(t, "ids", u, col, ys)?.into_iter().map(|(x, y)| (u, x, y)));
    }
    Ok(v)
}

/// Fig. 8a (throughput) or 8b (packet rate) of the IDS.
fn fig8(tables: &[Table], rate: bool) -> Result<Figure, String> {
    let t = table(tables, "IDS (community rules")?;
    let (id, name, y) = if rate {
        ("004-fig8b", "Fig. 8b", Axis::lin("packet rate", "Mframe/s"))
    } else {
        ("004-fig8a", "Fig. 8a", Axis::lin("throughput", "Gbit/s"))
    };
    let mut f = Figure::new("004", id, name, "IDS (Snort community rules) against units", Axis::lin("units", ""), y);
    let r = ids_rows(t, rate)?;
    let avg = r.first().map_or(0.0, |p| p.1);
    let pts: Vec<(f64, f64)> = r.iter().map(|p| (p.0, p.2)).collect();
    if pts.is_empty() {
        let why = t.rows().iter().flat_map(|r| r.iter()).find_map(|c| match c {
            crate::output::Cell::Missing(w) if !w.is_empty() => Some(w.clone()),
            _ => None,
        });
        return Err(format!("the IDS was not measured: {}", why.unwrap_or_else(|| "no rows".into())));
    }
    f.add(Series::new(
        &format!("linerate IDS, software reordering, trace of {avg:.0} B frames on average"),
        Kind::Linerate,
        &pts,
        "linerate bench middlebox",
    ));
    if !rate {
        f.add(Series::new(
            "SW reorder, 166 Gbit/s at 2048 B (8 RPUs)",
            Kind::Paper,
            &[(8.0, 166.0)],
            "paper 004 Sec. 7.1.3",
        ));
        f.x = Axis::lin("units (RPUs in the paper)", "");
    } else {
        f.add(Series::new(
            "packet-rate limit, SW reorder: 138 Mpps (8 RPUs)",
            Kind::Paper,
            &[(8.0, 138.0)],
            "paper 004 Sec. 7.1.3",
        ));
        f.add(Series::new(
            "Snort on a multi-core Xeon: 4.7 Mpps (low end)",
            Kind::Paper,
            &[(1.0, 4.7)],
            "paper 004 Sec. 7.1.3",
        ));
        f.add(Series::new(
            "Snort on a multi-core Xeon: 5.6 Mpps (high end)",
            Kind::Paper,
            &[(1.0, 5.6)],
            "paper 004 Sec. 7.1.3",
        ));
        f.x = Axis::lin("units (RPUs in the paper; Snort drawn at 1)", "");
    }
    f.miss(
        "Snort",
        "not packaged here (Debian has no snort package); the paper's Snort figures are drawn as its stated numbers",
    );
    f.miss("Hyperscan", "compared on the pattern-matching stage alone, where it applies: Fig. 8c");
    f.paper_measured =
        "Pigasus IDS on 8 Rosebud RPUs with hardware or software (RISC-V) TCP reordering, against packet \
        size, beside Snort 3 with Hyperscan on a multi-core Xeon: hardware reordering almost 200 Gbit/s above 800 B, \
        software reordering almost 100 Gbit/s at 800 B and 166 Gbit/s at 2048 B; packet rate limited to 60 and 138 \
        Mpps (as the text states for HW and SW reordering), Snort between 4.7 and 5.6 Mpps."
            .into();
    f.we_measured = "linerate's IDS units (Snort 3 community rules, fast-pattern prefilter then full verification, \
        software TCP reordering) on a trace of 2,000 background and 200 attack conversations with 0.3% reordering, \
        on 1 and 2 units (threads)."
        .into();
    f.differences = "Pigasus' hardware string matchers on 8 RPUs at 200 Gbit/s vs the whole rule engine in software \
        on a 2-core CPU; one trace of mixed sizes instead of a sweep of packet sizes."
        .into();
    let best = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    f.ratio = if rate {
        format!("best {best:.2} Mframe/s vs Snort's 4.7-5.6 Mpps ({:.2}x of 5.6) and Rosebud SW-reorder's 138 Mpps ({:.3}x)", best / 5.6, best / 138.0)
    } else {
        format!("best {best:.2} Gbit/s vs Rosebud SW reordering 166 Gbit/s at 2048 B ({:.3}x)", best / 166.0)
    };
    Ok(f)
}

/// Frames per callgrind run of Fig. 9 at least (quick, full): loading the rules under callgrind
/// (3.5 G instructions, not counted) costs far more than the frames (about 21 k each).
const CALLGRIND_FRAMES: (u64, u64) = (3_000, 50_000);

/// Instructions per frame of one IDS unit in step mode, with and without software reordering,
/// each from one callgrind run of `bench-peer ids-cost` counting only the frames' function
/// (so the rule loading both runs share is not counted): (without, with).
fn callgrind_cost(ctx: &Ctx, frames: u64) -> Result<(f64, f64), String> {
    let rules = data("ids/snort3-community.rules");
    let n = frames.to_string();
    let per_frame = |no_reorder: bool| -> Result<f64, String> {
        let mut argv = vec!["bench-peer", "ids-cost", "--frames", &n, "--rules", &rules];
        if no_reorder {
            argv.push("--no-reorder");
        }
        let (ir, out) = crate::callgrind::instructions(&argv, Some(crate::bench_middlebox::IDS_COST_FN))?;
        let pushed: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("frames "))
            .and_then(|v| v.trim().parse().ok())
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("ids-cost printed no frame count: {out}"))?;
        if ir == 0 {
            return Err("callgrind counted no instructions in the frames' function".into());
        }
        Ok(ir as f64 / pushed as f64)
    };
    ctx.say("004", &format!("IDS cost per packet under callgrind, {frames} frames, without software reordering"));
    let off = per_frame(true)?;
    ctx.say("004", &format!("IDS cost per packet under callgrind, {frames} frames, with software reordering"));
    Ok((off, per_frame(false)?))
}

/// Fig. 9: cost per packet with and without software reordering: instructions from callgrind
/// where valgrind runs, else ns (1 thread, step mode).
fn fig9(ctx: &Ctx, with: &[Table], without: &[Table]) -> Result<Figure, String> {
    let ns = |tables: &[Table]| -> Result<f64, String> {
        let t = table(tables, "IDS (community rules")?;
        let r = rows(t, "ids (1 thread, step)", 1.0, "frame rate", 1.0)?;
        r.first().map(|p| 1e9 / p.1).ok_or_else(|| "no IDS step-mode rate".to_string())
    };
    let (ns_on, ns_off) = (ns(with)?, ns(without)?);
    let frames = ctx.pick(CALLGRIND_FRAMES.0, CALLGRIND_FRAMES.1);
    let counted = match crate::callgrind::unavailable() {
        None => callgrind_cost(ctx, frames),
        Some(why) => Err(why),
    };
    let unit = if counted.is_ok() { "instructions" } else { "ns" };
    let mut f = Figure::new(
        "004",
        "004-fig9",
        "Fig. 9",
        "cost per packet with and without software reordering",
        Axis::lin("reordering", ""),
        Axis::lin("cost per packet", unit),
    );
    f.categories = vec!["without software reordering".into(), "with software reordering".into()];
    let (off, on) = match &counted {
        Ok((off, on)) => {
            f.add(Series::new(
                "linerate IDS unit, 1 thread (step mode), callgrind",
                Kind::Linerate,
                &[(0.0, *off), (1.0, *on)],
                &format!("callgrind Ir of bench-peer ids-cost --frames {frames} in the frames' function, per frame that entered"),
            ));
            f.add(Series::new(
                "60.2 / 138.4 cycles per packet (single-issue RISC-V: at most as many instructions)",
                Kind::Paper,
                &[(0.0, 60.2), (1.0, 138.4)],
                "paper 004 Sec. 7.1.4 (cycles; drawn on the instruction axis)",
            ));
            (*off, *on)
        }
        Err(why) => {
            f.add(Series::new(
                "linerate IDS unit, 1 thread (step mode)",
                Kind::Linerate,
                &[(0.0, ns_off), (1.0, ns_on)],
                "linerate bench middlebox",
            ));
            f.add(Series::new(
                "60.2 cycles (HW reorder) / 138.4 cycles (SW reorder) at 64 B, x 4 ns at 250 MHz",
                Kind::Paper,
                &[(0.0, 60.2 * 4.0), (1.0, 138.4 * 4.0)],
                "paper 004 Sec. 7.1.4 (cycles at the stated 250 MHz)",
            ));
            f.miss("callgrind instruction counts", &format!("{why}; time per packet in ns instead"));
            (ns_off, ns_on)
        }
    };
    f.paper_measured =
        "Average RISC-V cycles per packet derived from the packet rate: 60.2 cycles for small packets when \
        the hardware reorders, 138.4 cycles at 64 B when the software reorders (flow state table on the core)."
            .into();
    f.we_measured = match &counted {
        Ok(_) => format!(
            "Instructions per packet of one linerate IDS unit in step mode (one thread) on the IDS trace, with its \
             software reordering on (8 segments per flow) and off (out-of-order segments not held): callgrind's \
             instruction count of the function that pushes at least {frames} frames (rule loading not counted), over the \
             frames that entered. Timed beside it: {ns_off:.0} ns without and {ns_on:.0} ns with reordering."
        ),
        Err(why) => format!(
            "Time per packet of one linerate IDS unit in step mode (one thread) on the IDS trace, with its software \
             reordering on (8 segments per flow) and off (out-of-order segments not held); not instructions: {why}."
        ),
    };
    f.differences =
        "A 250 MHz RISC-V core handing payloads to hardware matchers vs the whole inspection (prefilter and \
        rule verification) in software on an x86 core; the paper counts cycles of a single-issue core, we count \
        x86 instructions (or ns)."
            .into();
    f.ratio = format!(
        "reordering costs {:.2}x here ({on:.0} vs {off:.0} {unit}) vs {:.2}x in the paper (138.4 vs 60.2 cycles)",
        on / off,
        138.4 / 60.2
    );
    Ok(f)
}

/// Gbit/s and Mframe/s of `scan` over `frames` (`bytes` in all), the best of `reps` passes.
fn scan_rate(frames: &[Vec<u8>], bytes: usize, reps: usize, mut scan: impl FnMut(&[u8]) -> u64) -> (f64, f64, u64) {
    let (mut best, mut hits) = (f64::MAX, 0);
    for _ in 0..reps {
        let t = std::time::Instant::now();
        hits = frames.iter().map(|f| scan(f)).sum();
        best = best.min(t.elapsed().as_secs_f64());
    }
    (bytes as f64 * 8.0 / best / 1e9, frames.len() as f64 / best / 1e6, hits)
}

/// Hyperscan's literal matcher on the rules' fast patterns: (Gbit/s, Mframe/s, hits), or why not.
#[cfg(feature = "hyperscan")]
fn hyperscan(
    set: &accel::ids::RuleSet,
    frames: &[Vec<u8>],
    bytes: usize,
    reps: usize,
) -> Result<(f64, f64, u64), String> {
    let mut uniq: Vec<(Vec<u8>, bool)> = accel::ids::fast_patterns(set).into_iter().map(|(_, p, nc)| (p, nc)).collect();
    uniq.sort();
    uniq.dedup();
    let mut hs = accel::hs::HsLiterals::compile(&uniq, true)?;
    let mut seen = vec![0u32; uniq.len()];
    let mut epoch = 0u32;
    Ok(scan_rate(frames, bytes, reps, |f| {
        epoch += 1;
        let mut hits = 0;
        let _ = hs.scan(f, &mut |id| {
            if let Some(s) = seen.get_mut(id as usize) {
                if *s != epoch {
                    *s = epoch;
                    hits += 1;
                }
            }
        });
        hits
    }))
}

/// Without the `hyperscan` feature: why there is no Hyperscan figure.
#[cfg(not(feature = "hyperscan"))]
fn hyperscan(_: &accel::ids::RuleSet, _: &[Vec<u8>], _: usize, _: usize) -> Result<(f64, f64, u64), String> {
    Err("not built into this linerate (cargo build --release -p linerate-cli --features hyperscan, with libhyperscan-dev installed)".into())
}

/// Fig. 8c: the pattern-matching stage alone, linerate's prefilter beside Hyperscan, on the
/// IDS trace's frames.
fn fig8c(ctx: &Ctx) -> Result<Figure, String> {
    ctx.say("004", "IDS pattern matching: linerate's prefilter beside Hyperscan");
    let path = data("ids/snort3-community.rules");
    let (rules, _) = apps::ids::load_rules(std::path::Path::new(&path), false).map_err(|e| format!("{path}: {e}"))?;
    let trace = apps::ids::trace::generate(&rules.full, &apps::ids::trace::TraceConfig::default());
    let bytes: usize = trace.frames.iter().map(Vec::len).sum();
    let reps = ctx.pick(3, 10);
    let pre = rules.full.prefilter();
    let mut ms = accel::ids::mpm::MpmScratch::default();
    let ours = scan_rate(&trace.frames, bytes, reps, |f| {
        let mut hits = 0;
        pre.scan(f, &mut ms, |_| hits += 1);
        hits
    });
    let mut f = Figure::new(
        "004",
        "004-fig8c",
        "Fig. 8c",
        "IDS pattern matching alone: linerate's prefilter beside Hyperscan (one core)",
        Axis::lin("matcher", ""),
        Axis::lin("throughput", "Gbit/s"),
    );
    f.categories = vec!["linerate prefilter".into(), "Hyperscan".into()];
    f.add(Series::new(
        "one core, whole frames of the IDS trace",
        Kind::Linerate,
        &[(0.0, ours.0)],
        "this run, best of passes",
    ));
    let hs = hyperscan(&rules.full, &trace.frames, bytes, reps);
    match &hs {
        Ok(h) => f.add(Series::new(
            "Hyperscan literal matcher (same fast patterns)",
            Kind::Peer,
            &[(1.0, h.0)],
            "this run, best of passes",
        )),
        Err(why) => f.miss("Hyperscan", why),
    }
    f.miss("Snort", "not packaged here (Debian has no snort package)");
    f.paper_measured =
        "Pigasus' string matchers are in hardware (16 per RPU); the paper's software peer is Snort 3 with Hyperscan \
        on a multi-core Xeon at 4.7 to 5.6 Mpps; it states no pattern-matching rate alone."
            .into();
    f.we_measured = format!(
        "The multi-pattern prefilter stage of linerate's IDS (the rules' fast patterns) over the {} frames ({:.1} MB) of the IDS \
         trace on one core, beside Hyperscan's literal matcher compiled from the same fast patterns when it is built in: \
         {:.2} Gbit/s, {:.2} Mframe/s.",
        trace.frames.len(),
        bytes as f64 / 1e6,
        ours.0,
        ours.1
    );
    f.differences =
        "Both in software on the same core; this is the stage Pigasus puts in hardware, not a whole IDS.".into();
    f.ratio = match &hs {
        Ok(h) => format!("linerate prefilter / Hyperscan {:.2}x ({:.2} vs {:.2} Gbit/s)", ours.0 / h.0, ours.0, h.0),
        Err(_) => format!("prefilter {:.2} Gbit/s; Hyperscan not measured", ours.0),
    };
    Ok(f)
}
