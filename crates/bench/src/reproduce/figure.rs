//! One reproduced figure: its series (ours, peers, the paper's stated numbers, theory), the
//! text of its report section, and its CSV form.

use std::path::Path;

/// What a series is, which decides how it is drawn and labelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Measured on linerate in this run (lines with round markers).
    Linerate,
    /// A software peer measured in the same run (lines with square markers).
    Peer,
    /// A number the paper states in its text or tables (large markers, no line).
    Paper,
    /// A curve computed from a formula (thin line, no markers).
    Theory,
}

impl Kind {
    /// The name of the kind in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Linerate => "linerate",
            Kind::Peer => "peer",
            Kind::Paper => "paper",
            Kind::Theory => "theory",
        }
    }
}

/// One point: x, y and an optional standard deviation of y.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The x value (in the axis' unit, or a category index).
    pub x: f64,
    /// The y value (in the axis' unit).
    pub y: f64,
    /// Standard deviation of y over repeated runs, if measured.
    pub sd: Option<f64>,
}

/// A named series of points.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend label.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Its points.
    pub points: Vec<Point>,
    /// Where the numbers come from (a paper section or table, a formula, a command).
    pub source: String,
}

impl Series {
    /// A series of `kind` named `name` from `(x, y)` pairs, citing `source`.
    pub fn new(name: &str, kind: Kind, xy: &[(f64, f64)], source: &str) -> Series {
        Series {
            name: name.into(),
            kind,
            points: xy.iter().map(|&(x, y)| Point { x, y, sd: None }).collect(),
            source: source.into(),
        }
    }
}

/// An axis: label, unit (shown in brackets) and whether it is logarithmic.
#[derive(Clone, Debug)]
pub struct Axis {
    /// What the axis shows.
    pub label: String,
    /// Its unit, e.g. `Gbit/s` (empty for a plain count).
    pub unit: String,
    /// Logarithmic scale (base 10).
    pub log: bool,
}

impl Axis {
    /// A linear axis.
    pub fn lin(label: &str, unit: &str) -> Axis {
        Axis { label: label.into(), unit: unit.into(), log: false }
    }

    /// A logarithmic axis.
    pub fn log(label: &str, unit: &str) -> Axis {
        Axis { label: label.into(), unit: unit.into(), log: true }
    }

    /// The label with its unit, as drawn.
    pub fn caption(&self) -> String {
        if self.unit.is_empty() {
            self.label.clone()
        } else {
            format!("{} [{}]", self.label, self.unit)
        }
    }
}

/// A reproduced figure or table of one paper.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File stem and anchor, e.g. `000-fig3-4`.
    pub id: String,
    /// The paper's number, `000`..`004`.
    pub paper: String,
    /// The figure's name in the paper, e.g. `Fig. 3-4`.
    pub name: String,
    /// What the figure shows.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// Names of the x positions when x is categorical (x values are indices).
    pub categories: Vec<String>,
    /// The series.
    pub series: Vec<Series>,
    /// Peers that were not measured and why ("not installed", "not packaged here", ...).
    pub missing: Vec<(String, String)>,
    /// What the paper measured.
    pub paper_measured: String,
    /// What we measured.
    pub we_measured: String,
    /// How the two set-ups differ.
    pub differences: String,
    /// The headline ratio, in words.
    pub ratio: String,
}

/// The columns of every figure's CSV, in order.
pub const CSV_COLUMNS: [&str; 9] = ["figure", "series", "kind", "x", "x_unit", "y", "y_unit", "stddev", "source"];

impl Figure {
    /// An empty figure of `paper` called `name` (file stem `id`), with its axes.
    pub fn new(paper: &str, id: &str, name: &str, title: &str, x: Axis, y: Axis) -> Figure {
        Figure {
            id: id.into(),
            paper: paper.into(),
            name: name.into(),
            title: title.into(),
            x,
            y,
            categories: Vec::new(),
            series: Vec::new(),
            missing: Vec::new(),
            paper_measured: String::new(),
            we_measured: String::new(),
            differences: String::new(),
            ratio: String::new(),
        }
    }

    /// Add a series (ignored if it has no points: an empty series is recorded with
    /// [`Figure::missing`] instead).
    pub fn add(&mut self, s: Series) {
        if !s.points.is_empty() {
            self.series.push(s);
        }
    }

    /// Record that `peer` could not be measured and why.
    pub fn miss(&mut self, peer: &str, why: &str) {
        self.missing.push((peer.into(), why.into()));
    }

    /// The first series of `kind` whose name contains `needle`.
    pub fn find(&self, kind: Kind, needle: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.kind == kind && s.name.contains(needle))
    }

    /// The figure as CSV: one row per point, one row per missing peer (x and y empty, the
    /// reason in `source`). Category names replace indices in `x`.
    pub fn to_csv(&self) -> String {
        let x_unit = if self.categories.is_empty() { self.x.unit.as_str() } else { "category" };
        let mut rows: Vec<[String; 9]> = Vec::new();
        for s in &self.series {
            for p in &s.points {
                let x = match self.categories.get(p.x as usize) {
                    Some(c) if !self.categories.is_empty() => c.clone(),
                    _ => num(p.x),
                };
                let sd = p.sd.map(num).unwrap_or_default();
                let kind = s.kind.name().to_string();
                let y_unit = self.y.unit.clone();
                rows.push([
                    self.id.clone(),
                    s.name.clone(),
                    kind,
                    x,
                    x_unit.into(),
                    num(p.y),
                    y_unit,
                    sd,
                    s.source.clone(),
                ]);
            }
        }
        for (peer, why) in &self.missing {
            let e = String::new;
            rows.push([self.id.clone(), peer.clone(), "peer".into(), e(), e(), e(), e(), e(), why.clone()]);
        }
        csv_text(&CSV_COLUMNS, rows)
    }

    /// Write the CSV to `path`.
    pub fn write_csv(&self, path: &Path) -> Result<(), String> {
        std::fs::write(path, self.to_csv()).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

/// A number for the CSV: up to 6 significant digits, no exponent for ordinary magnitudes.
fn num(v: f64) -> String {
    if v == 0.0 || (1e-4..1e9).contains(&v.abs()) {
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        format!("{v:.6e}")
    }
}

/// CSV text (the `csv` crate quotes what needs quoting): the header line, then the rows.
pub fn csv_text<R: AsRef<[String]>>(header: &[&str], rows: impl IntoIterator<Item = R>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let put = || -> Result<Vec<u8>, csv::Error> {
        w.write_record(header)?;
        for r in rows {
            w.write_record(r.as_ref())?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    };
    // Writing to memory cannot fail; the text is UTF-8 as its fields are.
    String::from_utf8(put().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig() -> Figure {
        let mut f =
            Figure::new("000", "000-x", "Fig. 1", "t", Axis::lin("payload", "B"), Axis::lin("goodput", "Gbit/s"));
        f.add(Series::new("linerate TCP", Kind::Linerate, &[(1024.0, 1.5), (4096.0, 3.25)], "this run"));
        f.add(Series::new("empty", Kind::Peer, &[], "nothing"));
        f.add(Series::new("paper, Eq. (2)", Kind::Paper, &[(4096.0, 98.131)], "Sec. V-C, Eq. (2)"));
        f.miss("Linux", "not installed");
        f
    }

    #[test]
    fn csv_has_the_columns_one_row_per_point_and_the_missing_peers() {
        let csv = fig().to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        assert_eq!(lines.len(), 1 + 3 + 1, "{csv}");
        assert_eq!(lines[1], "000-x,linerate TCP,linerate,1024,B,1.5,Gbit/s,,this run");
        assert_eq!(lines[3], "000-x,\"paper, Eq. (2)\",paper,4096,B,98.131,Gbit/s,,\"Sec. V-C, Eq. (2)\"");
        assert_eq!(lines[4], "000-x,Linux,peer,,,,,,not installed");
    }

    #[test]
    fn categories_replace_indices_and_numbers_are_plain() {
        let mut f = Figure::new("000", "c", "Fig. 5", "t", Axis::lin("protocol", ""), Axis::log("RTT", "µs"));
        f.categories = vec!["UDP".into(), "TCP".into()];
        f.add(Series::new("linerate", Kind::Linerate, &[(0.0, 12.0), (1.0, 3e-7)], "run"));
        let csv = f.to_csv();
        assert!(csv.contains("c,linerate,linerate,UDP,category,12,µs"), "{csv}");
        assert!(csv.contains(",TCP,category,3.000000e-7,"), "{csv}");
        let quoted = csv_text(&["h"], [vec!["a\"b,c".to_string()]]);
        assert_eq!(quoted, "h\n\"a\"\"b,c\"\n");
    }
}
