//! Paper 001 (receive-side notification for connectionless RDMA): Fig. 7 latency of send,
//! receive and registered receive against size, Table 1 registration-table memory; both
//! from `linerate rdma bench` run in-process.

use super::figure::{Axis, Figure, Kind, Point, Series};
use super::{column, table, xy, Ctx};
use crate::output::Table;

/// The paper's stated latencies for a 1 KB transfer (Sec. 4, text beside Fig. 7), in µs.
const PAPER_1KB: [(&str, f64); 2] = [("receive", 5.23), ("registered receive", 4.21)];

/// The paper's Table 1 BRAM counts, rows = table entries 64..1024, columns = bitmask width
/// 64..1024 bits.
const PAPER_BRAM: [[f64; 5]; 5] = [
    [47.0, 49.0, 53.0, 60.0, 74.0],
    [47.0, 49.0, 53.0, 60.0, 74.0],
    [47.0, 49.0, 53.0, 60.0, 74.0],
    [47.0, 49.0, 53.0, 60.0, 74.0],
    [47.0, 52.0, 57.5, 68.0, 89.5],
];

/// Every figure of paper 001.
pub fn figures(ctx: &Ctx) -> Vec<Result<Figure, (String, String)>> {
    ctx.say("001", "linerate rdma bench: latency 64 B..1 MiB, goodput, table memory");
    let argv = if ctx.quick { vec!["--reps", "20", "--mib", "8"] } else { vec!["--reps", "200", "--mib", "64"] };
    let tables = ctx.commands.rdma_bench(&argv);
    match tables {
        Err(e) => vec![Err(("Fig. 7".into(), e.clone())), Err(("Table 1".into(), e))],
        Ok(t) => vec![fig7(&t).map_err(|e| ("Fig. 7".into(), e)), table1(&t).map_err(|e| ("Table 1".into(), e))],
    }
}

/// Fig. 7: latency against size.
fn fig7(tables: &[Table]) -> Result<Figure, String> {
    let t = table(tables, "RDMA latency")?;
    let mut f = Figure::new(
        "001",
        "001-fig7",
        "Fig. 7",
        "send, receive and registered-receive latency against transfer size",
        Axis::log("transfer size", "B"),
        Axis::log("latency", "µs"),
    );
    for (col, name) in [
        ("send (all ACKed)", "linerate send (all ACKed)"),
        ("unregistered recv (Notify)", "linerate receive (Notify from the sender)"),
        ("registered recv (local)", "linerate registered receive (local)"),
    ] {
        f.add(Series::new(name, Kind::Linerate, &xy(t, "size", col, 1.0, 1e6)?, "linerate rdma bench, median"));
    }
    for (name, us) in PAPER_1KB {
        f.add(Series::new(
            &format!("{name}, 1 KB (ZCU102)"),
            Kind::Paper,
            &[(1024.0, us)],
            "paper 001 Sec. 4 (text on Fig. 7)",
        ));
    }
    let at = |needle: &str, size: f64| {
        f.find(Kind::Linerate, needle).and_then(|s| s.points.iter().find(|p| p.x == size)).map(|p| p.y)
    };
    let (recv, reg) = (at("receive (Notify", 1024.0), at("registered", 1024.0));
    f.paper_measured = "Send, receive (notified by the sender after the last ACK) and registered receive \
        (notified locally by the receive registration table) latency of one RDMA write, 64 B to 1 MiB, \
        over one hop inside a Zynq UltraScale+ ZCU102; at 1 KB 5.23 µs receive vs 4.21 µs registered \
        (about 20% less), converging at about 32 KB."
        .into();
    f.we_measured = "The same three latencies of linerate's RDMA writes between two threads on a \
        shared-memory link (both busy-poll), median over repetitions per size."
        .into();
    f.differences = "FPGA network interface with its router on one chip vs a software RDMA engine over \
        linerate's UDP on a shared-memory ring between two CPU cores; no DMA from user space."
        .into();
    f.ratio = match (recv, reg) {
        (Some(r), Some(g)) => format!(
            "at 1 KB linerate receive {r:.2} µs vs paper 5.23 µs ({:.2}x), registered {g:.2} µs vs 4.21 µs \
             ({:.2}x); registered/receive {:.2} here vs 0.80 in the paper",
            r / 5.23,
            g / 4.21,
            g / r
        ),
        _ => "no 1 KB point was measured".into(),
    };
    Ok(f)
}

/// Table 1: registration-table memory over entries x bitmask width.
fn table1(tables: &[Table]) -> Result<Figure, String> {
    let t = table(tables, "Registration table memory")?;
    let mut f = Figure::new(
        "001",
        "001-table1",
        "Table 1",
        "receive registration table memory over entries x bitmask width",
        Axis::log("table entries", ""),
        Axis::log("memory", "KiB"),
    );
    let widths = [64usize, 128, 256, 512, 1024];
    for (wi, w) in widths.iter().enumerate() {
        let header = format!("mask {w} ({} KiB at 512 B)", w / 2);
        let j = column(t, &header)?;
        let points: Vec<Point> = t
            .rows()
            .iter()
            .filter_map(|r| Some(Point { x: r.first()?.num()?, y: r.get(j)?.num()? / 1024.0, sd: None }))
            .collect();
        f.add(Series {
            name: format!("linerate, mask {w} bits"),
            kind: Kind::Linerate,
            points,
            source: "RegTable::memory_bytes".into(),
        });
        let paper: Vec<(f64, f64)> = [64.0, 128.0, 256.0, 512.0, 1024.0]
            .iter()
            .zip(PAPER_BRAM.iter())
            .map(|(e, row)| (*e, row[wi] * 4.5))
            .collect();
        f.add(Series::new(
            &format!("BRAM36 x 4.5 KiB, mask {w}"),
            Kind::Paper,
            &paper,
            "paper 001 Table 1 BRAM count (x 36 Kbit per BRAM36 block)",
        ));
    }
    let ours_max =
        f.series.iter().filter(|s| s.kind == Kind::Linerate).flat_map(|s| &s.points).map(|p| p.y).fold(0.0, f64::max);
    f.paper_measured = "Area of the receive registration module on the ZCU102 (LUTs and BRAMs) for 64..1024 \
        table entries and bitmasks of 64..1024 bits (32..512 KB operations at 512 B packets); 47 to 89.5 \
        BRAMs, at most 9.81% of the device."
        .into();
    f.we_measured = "The bytes linerate's registration table allocates for the same grid (entries x \
        bitmask bits plus per-entry state), computed by RegTable::memory_bytes."
        .into();
    f.differences = "Block RAMs are allocated in fixed 36 Kbit blocks whatever the entry width (so the paper's \
        counts are flat until the width forces another block), while linerate's table is ordinary heap memory \
        sized exactly; the paper's BRAM counts are drawn as their capacity (count x 4.5 KiB)."
        .into();
    let paper_max = 89.5 * 4.5;
    f.ratio = format!(
        "largest configuration (1024 entries x 1024 bits): linerate {ours_max:.1} KiB vs {paper_max:.1} KiB of BRAM \
         blocks ({:.2}x)",
        ours_max / paper_max
    );
    Ok(f)
}
