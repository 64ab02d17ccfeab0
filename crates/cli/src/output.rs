//! Results as aligned text tables or JSON.

use serde_json::{json, Value};

/// A table of string cells with a title and column headers.
pub struct Table {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table.
    pub fn new(title: &str, headers: &[&str]) -> Self {
        Table { title: title.into(), headers: headers.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    /// Append a row (cells beyond the header count are ignored, missing ones are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as aligned text.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut width: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().take(n).enumerate() {
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
        for r in &self.rows {
            out += &line(r);
        }
        out
    }

    /// The table as JSON: `{"title":..., "rows":[{header: cell, ...}, ...]}`.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let obj: serde_json::Map<String, Value> =
                    self.headers.iter().zip(r.iter()).map(|(h, c)| (h.clone(), Value::String(c.clone()))).collect();
                Value::Object(obj)
            })
            .collect();
        json!({ "title": self.title, "rows": rows })
    }

    /// As [`Table::print`], to stderr (when standard output carries data, e.g. a capture).
    pub fn eprint(&self, json: bool) {
        if json {
            eprintln!("{}", serde_json::to_string_pretty(&self.to_json()).unwrap_or_default());
        } else {
            eprint!("{}", self.render());
        }
    }

    /// Print as text, or as JSON when `json` is set.
    pub fn print(&self, json: bool) {
        if json {
            println!("{}", serde_json::to_string_pretty(&self.to_json()).unwrap_or_default());
        } else {
            print!("{}", self.render());
        }
    }
}

/// Format a rate with an SI prefix, e.g. `fmt_si(2.5e9, "bit/s")` -> "2.50 Gbit/s".
pub fn fmt_si(v: f64, unit: &str) -> String {
    let (d, p) = if v >= 1e9 {
        (1e9, "G")
    } else if v >= 1e6 {
        (1e6, "M")
    } else if v >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{:.2} {p}{unit}", v / d)
}

/// Format a duration given in nanoseconds in µs with two decimals.
pub fn fmt_us(nanos: f64) -> String {
    format!("{:.2} µs", nanos / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_aligned_columns() {
        let mut t = Table::new("T", &["a", "bbb"]);
        t.row(vec!["xxxx".into(), "y".into()]);
        assert_eq!(t.render(), "T\na     bbb\n----  ---\nxxxx  y\n");
        assert_eq!(t.to_json()["rows"][0]["bbb"], "y");
        assert_eq!(fmt_si(2.5e9, "bit/s"), "2.50 Gbit/s");
    }
}
