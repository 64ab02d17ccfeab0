//! Results as aligned text tables or typed JSON.
//!
//! Every command's results are [`Table`]s of typed [`Cell`]s: a number carries its [`Unit`]
//! and is rendered with a readable prefix for people (`49.64 µs`, `9.41 Gbit/s`) and as the
//! raw number in base units for programs.
//!
//! # The JSON convention
//!
//! With `--json` a command prints exactly one JSON document on standard output and nothing
//! else (progress, logs and the output of child commands go to standard error; a command
//! that refreshes, `middlebox stats --watch N`, prints one compact document per line):
//!
//! ```text
//! {"tables": [
//!   {"title": "...",
//!    "units": {"rtt": "s", "bytes": "B"},
//!    "rows": [{"seq": 0, "rtt": 4.964e-5, "bytes": 64}, ...],
//!    "summary": {"replies": 10, "rtt_median": 4.9e-5}}
//! ]}
//! ```
//!
//! * Keys are `snake_case`, derived from the column's header without its parenthesised
//!   part (`"linerate (shm)"` → `linerate`, `"Linux (veth)"` → `linux`), so a figure has
//!   the same key in every command.
//! * Numbers are JSON numbers in base units: seconds (`s`), bits per second (`bit/s`),
//!   frames per second (`frame/s`), operations per second (`op/s`), bytes (`B`), bytes
//!   per second (`B/s`), plain counts (`count`) and dimensionless ratios (`ratio`, where a
//!   percentage shown as `97.5%` is `0.975`).
//! * `units` maps a key to its unit when all its numbers share one (row keys and summary
//!   keys alike). Where a column's unit changes from row to row (a comparison table with one
//!   metric per row), each row says its unit in its own `"unit"` key.
//! * A figure that could not be measured is `null`, with the reason in `<key>_note`
//!   (`"linux": null, "linux_note": "skipped: needs root"`).
//! * Summary lines (totals, medians, verdicts) are in `summary`, never among the rows.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The unit of a number in a [`Cell`]; numbers are kept in the base unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Seconds (shown as ns, µs, ms or s).
    Seconds,
    /// Bits per second (shown with an SI prefix).
    BitsPerSec,
    /// Frames per second (shown with an SI prefix).
    FramesPerSec,
    /// Operations (requests, connections, inferences) per second.
    OpsPerSec,
    /// Bytes (shown exactly below 10 KiB, else in KiB, MiB, GiB or TiB).
    Bytes,
    /// Bytes per second (shown with an SI prefix).
    BytesPerSec,
    /// A plain count (shown as an integer).
    Count,
    /// A dimensionless ratio (shown with two decimals).
    Ratio,
    /// A fraction shown as a percentage (0.975 is shown as `97.5%`).
    Percent,
}

impl Unit {
    /// The unit's name in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::BitsPerSec => "bit/s",
            Unit::FramesPerSec => "frame/s",
            Unit::OpsPerSec => "op/s",
            Unit::Bytes => "B",
            Unit::BytesPerSec => "B/s",
            Unit::Count => "count",
            Unit::Ratio | Unit::Percent => "ratio",
        }
    }

    /// `v` (in the base unit) for people.
    pub fn render(self, v: f64) -> String {
        if !v.is_finite() {
            return "-".into();
        }
        match self {
            Unit::Seconds => fmt_seconds(v),
            Unit::BitsPerSec => fmt_si(v, "bit/s"),
            Unit::FramesPerSec => fmt_si(v, "frame/s"),
            Unit::OpsPerSec => fmt_si(v, "/s"),
            Unit::BytesPerSec => fmt_si(v, "B/s"),
            Unit::Bytes if v.abs() < 10.0 * 1024.0 => format!("{v:.0} B"),
            Unit::Bytes => fmt_binary(v),
            Unit::Count if v.fract() == 0.0 => format!("{v:.0}"),
            Unit::Count => format!("{v:.2}"),
            Unit::Ratio => format!("{v:.2}"),
            Unit::Percent => format!("{:.1}%", v * 100.0),
        }
    }
}

/// One cell of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text (names, addresses, verdicts).
    Text(String),
    /// A number in the base unit of its unit.
    Num(f64, Unit),
    /// No figure, with the reason (empty if there is nothing to say).
    Missing(String),
    /// Whether a goal was met: "met" or "MISSED" for people, a JSON boolean for programs.
    Goal(bool),
}

impl Cell {
    /// A number of seconds.
    pub fn secs(v: f64) -> Cell {
        Cell::Num(v, Unit::Seconds)
    }

    /// A duration given in nanoseconds.
    pub fn nanos(v: f64) -> Cell {
        Cell::Num(v / 1e9, Unit::Seconds)
    }

    /// Bits per second.
    pub fn bps(v: f64) -> Cell {
        Cell::Num(v, Unit::BitsPerSec)
    }

    /// A count.
    pub fn count(v: impl Into<f64>) -> Cell {
        Cell::Num(v.into(), Unit::Count)
    }

    /// A count held in a u64 (exact up to 2^53).
    pub fn count_u64(v: u64) -> Cell {
        Cell::Num(v as f64, Unit::Count)
    }

    /// Bytes.
    pub fn bytes(v: u64) -> Cell {
        Cell::Num(v as f64, Unit::Bytes)
    }

    /// A dimensionless ratio.
    pub fn ratio(v: f64) -> Cell {
        Cell::Num(v, Unit::Ratio)
    }

    /// A blank cell.
    pub fn blank() -> Cell {
        Cell::Missing(String::new())
    }

    /// The cell for people.
    pub fn render(&self) -> String {
        match self {
            Cell::Text(s) | Cell::Missing(s) => s.clone(),
            Cell::Num(v, u) => u.render(*v),
            Cell::Goal(met) => if *met { "met" } else { "MISSED" }.into(),
        }
    }

    /// The cell's JSON value (a number in base units, a string, a goal's boolean, or null).
    fn value(&self) -> Value {
        match self {
            Cell::Text(s) => Value::String(s.clone()),
            // Whole counts and byte counts are JSON integers.
            Cell::Num(v, Unit::Count | Unit::Bytes) if v.fract() == 0.0 && v.abs() < 9.0e15 => json!(*v as i64),
            Cell::Num(v, _) => serde_json::Number::from_f64(*v).map(Value::Number).unwrap_or(Value::Null),
            Cell::Missing(_) => Value::Null,
            Cell::Goal(met) => Value::Bool(*met),
        }
    }

    /// The number (in base units), if the cell holds one.
    pub fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(v, _) => Some(*v),
            _ => None,
        }
    }

    /// The cell's unit, if it holds a number.
    pub fn unit(&self) -> Option<Unit> {
        match self {
            Cell::Num(_, u) => Some(*u),
            _ => None,
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.into())
    }
}

impl<E: Into<String>> From<Result<Cell, E>> for Cell {
    fn from(r: Result<Cell, E>) -> Cell {
        r.unwrap_or_else(|e| Cell::Missing(e.into()))
    }
}

/// The JSON key for a header: snake_case, without a parenthesised part.
pub fn key_of(header: &str) -> String {
    let mut base = String::new();
    let mut depth = 0;
    for c in header.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => base.push(c),
            _ => {}
        }
    }
    snake(&base)
}

/// `text` as a snake_case identifier: ASCII letters and digits, `_` between words, never
/// starting with a digit (`"64 B"` → `n64_b`), `value` if nothing is left.
fn snake(text: &str) -> String {
    let mut key = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_alphanumeric() {
            key.push(c.to_ascii_lowercase());
        } else if !key.ends_with('_') && !key.is_empty() {
            key.push('_');
        }
    }
    let key = key.trim_end_matches('_').to_string();
    match key.chars().next() {
        None => "value".into(),
        Some(c) if c.is_ascii_digit() => format!("n{key}"),
        Some(_) => key,
    }
}

/// The keys of a table's columns: [`key_of`] each header, except that headers that would
/// share a key keep their parenthesised part (`"goodput (median)"` → `goodput_median`), and
/// any key still repeated gets a number (`_2`, `_3`): a key is never lost to another.
pub fn column_keys(headers: &[String]) -> Vec<String> {
    let short: Vec<String> = headers.iter().map(|h| key_of(h)).collect();
    let mut keys: Vec<String> = short
        .iter()
        .zip(headers)
        .map(|(k, h)| if short.iter().filter(|o| *o == k).count() > 1 { snake(h) } else { k.clone() })
        .collect();
    for i in 0..keys.len() {
        let base = keys[i].clone();
        let mut n = 1;
        while keys[..i].contains(&keys[i]) {
            n += 1;
            keys[i] = format!("{base}_{n}");
        }
    }
    keys
}

/// A table of typed cells with a title, column headers and summary lines.
pub struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<Cell>>,
    summary: Vec<(String, String, Cell)>,
    reference: bool,
}

impl Table {
    /// An empty table.
    pub fn new(title: &str, headers: &[&str]) -> Self {
        Table {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            summary: Vec::new(),
            reference: false,
        }
    }

    /// Mark this table as a reference measured beside the result (memcpy bandwidth): `--plot`
    /// draws the result, not this.
    pub fn into_reference(mut self) -> Self {
        self.reference = true;
        self
    }

    /// True if this table is a reference, not a result (see [`Table::into_reference`]).
    pub fn is_reference(&self) -> bool {
        self.reference
    }

    /// Append a row (cells beyond the header count are ignored, missing ones are blank).
    pub fn row<C: Into<Cell>>(&mut self, cells: Vec<C>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Add a summary line: `label` for people, its key is [`key_of`]`(label)`.
    pub fn summary(&mut self, label: &str, cell: impl Into<Cell>) {
        self.summary.push((label.into(), key_of(label), cell.into()));
    }

    /// The title.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The column headers.
    pub fn headers(&self) -> &[String] {
        &self.headers
    }

    /// The rows, cells in header order.
    pub fn rows(&self) -> &[Vec<Cell>] {
        &self.rows
    }

    /// The table as aligned text, summary lines below.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| r.iter().take(n).map(Cell::render).collect()).collect();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| -> String {
            let mut s = String::new();
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                s.push_str(&format!("{c:<w$}"));
                if i + 1 < n {
                    s.push_str("  ");
                }
            }
            s.trim_end().to_string() + "\n"
        };
        let mut out = format!("{}\n", self.title);
        out += &line(&self.headers);
        out += &(width.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  ") + "\n");
        for r in &rows {
            out += &line(r);
        }
        for (label, _, cell) in &self.summary {
            out += &format!("{label}: {}\n", cell.render());
        }
        out
    }

    /// The table as JSON (see the module documentation for the shape).
    pub fn to_json(&self) -> Value {
        let keys = column_keys(&self.headers);
        // A column's unit when all its numbers share one.
        let mut units: BTreeMap<String, Option<Unit>> = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            let mut col = self.rows.iter().filter_map(|r| r.get(i).and_then(Cell::unit));
            if let Some(first) = col.next() {
                let same = col.all(|u| u == first);
                units.insert(k.clone(), same.then_some(first));
            }
        }
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut obj = Map::new();
                let mut row_unit: Option<Unit> = None;
                for (k, c) in keys.iter().zip(r.iter()) {
                    obj.insert(k.clone(), c.value());
                    if let Cell::Missing(why) = c {
                        if !why.is_empty() {
                            obj.insert(format!("{k}_note"), Value::String(why.clone()));
                        }
                    }
                    if let (Some(None), Some(u)) = (units.get(k), c.unit()) {
                        row_unit.get_or_insert(u);
                    }
                }
                if let Some(u) = row_unit {
                    obj.insert("unit".into(), Value::String(u.name().into()));
                }
                Value::Object(obj)
            })
            .collect();
        let mut summary = Map::new();
        for (_, k, c) in &self.summary {
            summary.insert(k.clone(), c.value());
            if let Cell::Missing(why) = c {
                if !why.is_empty() {
                    summary.insert(format!("{k}_note"), Value::String(why.clone()));
                }
            }
            if let Some(u) = c.unit() {
                units.insert(k.clone(), Some(u));
            }
        }
        let units: Map<String, Value> =
            units.into_iter().filter_map(|(k, u)| u.map(|u| (k, Value::String(u.name().into())))).collect();
        json!({ "title": self.title, "units": units, "rows": rows, "summary": summary })
    }
}

/// Tables as one JSON document, `{"tables": [...]}`.
pub fn tables_json(tables: &[&Table]) -> Value {
    json!({ "tables": tables.iter().map(|t| t.to_json()).collect::<Vec<_>>() })
}

/// Print tables to stdout: as text separated by blank lines, or as one JSON document.
pub fn print_all(tables: &[&Table], json: bool) {
    if json {
        crate::outln!("{}", serde_json::to_string_pretty(&tables_json(tables)).unwrap_or_default());
    } else {
        let text: Vec<String> = tables.iter().map(|t| t.render()).collect();
        crate::out!("{}", text.join("\n"));
    }
}

/// As [`print_all`], to stderr (when standard output carries data, e.g. a capture).
pub fn eprint_all(tables: &[&Table], json: bool) {
    if json {
        eprintln!("{}", serde_json::to_string_pretty(&tables_json(tables)).unwrap_or_default());
    } else {
        let text: Vec<String> = tables.iter().map(|t| t.render()).collect();
        eprint!("{}", text.join("\n"));
    }
}

impl Table {
    /// Print this table alone (see [`print_all`]).
    pub fn print(&self, json: bool) {
        print_all(&[self], json);
    }

    /// Print this table alone to stderr (see [`eprint_all`]).
    pub fn eprint(&self, json: bool) {
        eprint_all(&[self], json);
    }
}

/// Format a size in bytes with a binary prefix, e.g. `fmt_binary(16384.0)` -> "16.00 KiB".
pub fn fmt_binary(v: f64) -> String {
    let mut d = 1024.0;
    for p in ["KiB", "MiB", "GiB"] {
        if v.abs() < d * 1024.0 {
            return format!("{:.2} {p}", v / d);
        }
        d *= 1024.0;
    }
    format!("{:.2} TiB", v / d)
}

/// Format a rate with an SI prefix, e.g. `fmt_si(2.5e9, "bit/s")` -> "2.50 Gbit/s".
pub fn fmt_si(v: f64, unit: &str) -> String {
    let (d, p) = if v.abs() >= 1e9 {
        (1e9, "G")
    } else if v.abs() >= 1e6 {
        (1e6, "M")
    } else if v.abs() >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{:.2} {p}{unit}", v / d)
}

/// Format a duration given in nanoseconds in µs with two decimals. Kept for text-only
/// output; tables take [`Cell::nanos`], which JSON carries as seconds.
#[allow(dead_code)]
pub fn fmt_us(nanos: f64) -> String {
    format!("{:.2} µs", nanos / 1e3)
}

/// Format seconds with the prefix that suits: ns, µs (two decimals), ms or s.
pub fn fmt_seconds(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0 s".into()
    } else if a < 1e-6 {
        format!("{:.0} ns", v * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} µs", v * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", v * 1e3)
    } else {
        format!("{v:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned_columns_and_typed_json() {
        let mut t = Table::new("T", &["a", "bbb (x)"]);
        t.row(vec![Cell::from("xxxx"), Cell::secs(49.64e-6)]);
        t.summary("replies", Cell::count(1.0));
        assert_eq!(t.render(), "T\na     bbb (x)\n----  --------\nxxxx  49.64 µs\nreplies: 1\n");
        let j = t.to_json();
        assert_eq!(j["rows"][0]["bbb"], json!(49.64e-6));
        assert_eq!(j["units"]["bbb"], "s");
        assert_eq!(j["summary"]["replies"], 1);
        assert_eq!(fmt_si(2.5e9, "bit/s"), "2.50 Gbit/s");
    }

    #[test]
    fn mixed_units_go_to_the_row_and_missing_figures_to_null_with_a_note() {
        let mut t = Table::new("T", &["metric", "ours", "Linux (veth)", "ratio"]);
        t.row(vec![Cell::from("goodput"), Cell::bps(1e9), Cell::bps(5e8), Cell::ratio(2.0)]);
        t.row(vec![Cell::from("rtt"), Cell::secs(1e-5), Cell::Missing("skipped: no root".into()), Cell::blank()]);
        let j = t.to_json();
        assert_eq!(j["rows"][0]["unit"], "bit/s");
        assert_eq!(j["rows"][1]["unit"], "s");
        assert_eq!(j["rows"][1]["linux"], Value::Null);
        assert_eq!(j["rows"][1]["linux_note"], "skipped: no root");
        assert_eq!(j["units"]["ratio"], "ratio");
        assert_eq!(key_of("copy size"), "copy_size");
        assert_eq!(key_of("GB/s"), "gb_s");
        assert_eq!(key_of("3 copies of memcpy"), "n3_copies_of_memcpy");
        assert_eq!(Unit::Bytes.render(16384.0), "16.00 KiB");
        assert_eq!(Unit::Bytes.render(1_048_576.0 * 1.5), "1.50 MiB");
        assert_eq!(Unit::Bytes.render(9000.0), "9000 B");
        let headers: Vec<String> =
            ["goodput (median)", "goodput (overall)", "rtt", "rtt", "p99"].iter().map(|s| s.to_string()).collect();
        assert_eq!(column_keys(&headers), ["goodput_median", "goodput_overall", "rtt", "rtt_2", "p99"]);
    }
}
