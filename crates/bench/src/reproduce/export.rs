//! `--csv FILE` and `--plot FILE.png` of the `bench` commands: their tables as CSV, and the
//! first table with a numeric column drawn with the same plotting code as `reproduce`.

use super::figure::{csv_text, Axis, Figure, Kind, Point, Series};
use crate::output::{Cell, Table, Unit};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The export options every `linerate bench ...` command takes.
#[derive(clap::Args, Clone, Default)]
pub struct ExportArgs {
    /// Also write the result tables as CSV to FILE (columns: table, row, column, value, unit).
    #[arg(long, value_name = "FILE", global = true)]
    pub csv: Option<PathBuf>,
    /// Also draw the first table with numbers as a PNG plot to FILE.
    #[arg(long, value_name = "FILE.png", global = true)]
    pub plot: Option<PathBuf>,
}

/// The export options of this process's command, if it has any.
static REQUESTED: OnceLock<ExportArgs> = OnceLock::new();

/// Remember the export options (called once by `main` for the `bench` commands).
pub fn request(a: ExportArgs) -> Result<(), String> {
    if a.csv.is_none() && a.plot.is_none() {
        return Ok(());
    }
    if a.plot.is_some() {
        super::plot::ensure_font()?;
    }
    let _ = REQUESTED.set(a);
    Ok(())
}

/// Write what was requested for `tables`; errors go to stderr (the tables are printed anyway).
pub fn write_requested(tables: &[Table]) {
    let Some(a) = REQUESTED.get() else { return };
    if let Some(p) = &a.csv {
        if let Err(e) = std::fs::write(p, tables_csv(tables)) {
            eprintln!("linerate: cannot write {}: {e}", p.display());
        }
    }
    if let Some(p) = &a.plot {
        match tables_figure(tables) {
            Some(f) => {
                if let Err(e) = super::plot::draw(&f, p) {
                    eprintln!("linerate: {e}");
                }
            }
            None => eprintln!("linerate: no table with numbers to plot; {} not written", p.display()),
        }
    }
}

/// Every cell of every table, one per line: table title, row index, column header, value
/// (a number in base units, or text), unit.
pub fn tables_csv(tables: &[Table]) -> String {
    let mut rows: Vec<[String; 5]> = Vec::new();
    for t in tables {
        for (i, r) in t.rows().iter().enumerate() {
            for (h, c) in t.headers().iter().zip(r) {
                let (v, u) = match c {
                    Cell::Num(v, u) => (v.to_string(), u.name().to_string()),
                    Cell::Text(s) => (s.clone(), String::new()),
                    Cell::Missing(s) => (String::new(), format!("missing: {s}")),
                    Cell::Goal(met) => (met.to_string(), "goal met".to_string()),
                };
                rows.push([t.title().to_string(), i.to_string(), h.clone(), v, u]);
            }
        }
    }
    csv_text(&["table", "row", "column", "value", "unit"], rows)
}

/// A unit's display scale and name for the plot's y axis.
fn scale(u: Unit) -> (f64, &'static str) {
    match u {
        Unit::Seconds => (1e6, "µs"),
        Unit::BitsPerSec => (1e-9, "Gbit/s"),
        Unit::FramesPerSec => (1e-6, "Mframe/s"),
        Unit::OpsPerSec => (1e-6, "Mop/s"),
        Unit::BytesPerSec => (1e-9, "GB/s"),
        Unit::Bytes => (1.0, "B"),
        Unit::Count | Unit::Ratio => (1.0, ""),
        Unit::Percent => (100.0, "%"),
    }
}

/// The main result as a figure: the first table with a numeric column that is not a
/// reference (memcpy; a reference only if nothing else has numbers). x is the first column
/// (numbers, or the row's text as categories), each numeric column with the unit of the first
/// numeric column after it is a series.
pub fn tables_figure(tables: &[Table]) -> Option<Figure> {
    let results = tables.iter().filter(|t| !t.is_reference());
    for t in results.chain(tables.iter().filter(|t| t.is_reference())) {
        let rows = t.rows();
        let unit_of = |j: usize| rows.iter().find_map(|r| r.get(j).and_then(Cell::unit));
        let Some((first, yunit)) = (1..t.headers().len()).find_map(|j| unit_of(j).map(|u| (j, u))) else {
            continue;
        };
        let numeric_x = rows.iter().all(|r| matches!(r.first(), Some(Cell::Num(..))));
        let (ys, yname) = scale(yunit);
        let xunit = if numeric_x { rows.first().and_then(|r| r[0].unit()).map_or("", |u| scale(u).1) } else { "" };
        let mut f = Figure::new(
            "bench",
            "bench",
            "",
            t.title(),
            Axis::lin(&t.headers()[0], xunit),
            Axis::lin(&t.headers()[first], yname),
        );
        if !numeric_x {
            f.categories = rows.iter().map(|r| r.first().map(Cell::render).unwrap_or_default()).collect();
        }
        for j in first..t.headers().len() {
            if unit_of(j) != Some(yunit) {
                continue;
            }
            let points: Vec<Point> = rows
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let y = r.get(j)?.num()? * ys;
                    let x = if numeric_x { r[0].num()? * scale(r[0].unit()?).0 } else { i as f64 };
                    y.is_finite().then_some(Point { x, y, sd: None })
                })
                .collect();
            f.add(Series { name: t.headers()[j].clone(), kind: Kind::Linerate, points, source: String::new() });
        }
        if !f.series.is_empty() {
            return Some(f);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Table {
        let mut t = Table::new("goodput", &["size", "linerate", "Linux", "ratio"]);
        t.row(vec![Cell::bytes(64), Cell::bps(1e9), Cell::bps(2e9), Cell::ratio(0.5)]);
        t.row(vec![Cell::bytes(1500), Cell::bps(9e9), Cell::Missing("skipped".into()), Cell::ratio(1.0)]);
        t
    }

    #[test]
    fn csv_has_one_line_per_cell() {
        let csv = tables_csv(&[t()]);
        assert!(csv.starts_with("table,row,column,value,unit\n"));
        assert!(csv.contains("goodput,1,Linux,,missing: skipped\n"), "{csv}");
        assert!(csv.contains("goodput,0,linerate,1000000000,bit/s\n"), "{csv}");
        assert_eq!(csv.lines().count(), 1 + 8);
    }

    #[test]
    fn figure_takes_the_columns_of_the_first_unit() {
        let f = tables_figure(&[t()]).unwrap();
        assert_eq!(f.series.len(), 2, "the ratio column is another unit");
        assert_eq!(f.series[0].points[1].y, 9.0);
        assert_eq!(f.series[1].points.len(), 1);
        assert_eq!(f.y.unit, "Gbit/s");
        let mut c = Table::new("rtt", &["metric", "linerate"]);
        c.row(vec![Cell::from("UDP"), Cell::secs(1e-5)]);
        let f = tables_figure(&[Table::new("empty", &["a"]), c]).unwrap();
        assert_eq!(f.categories, vec!["UDP".to_string()]);
    }

    #[test]
    fn figure_draws_the_result_not_the_memcpy_reference() {
        let m = || {
            let mut m = Table::new("memcpy", &["copy size", "memcpy"]);
            m.row(vec![Cell::bytes(64), Cell::Num(1e10, Unit::BytesPerSec)]);
            m.into_reference()
        };
        assert_eq!(tables_figure(&[m(), t()]).unwrap().title, "goodput");
        assert_eq!(tables_figure(&[m()]).unwrap().title, "memcpy", "a reference alone is drawn");
    }
}
