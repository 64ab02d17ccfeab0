//! Counters as OpenMetrics text (what Prometheus scrapes): one `unknown`-typed family per
//! counter name, `linerate_<name>`, with `instance`, `command` and `pid` labels, ending in
//! `# EOF`. Written by hand: the format is a few lines of text, and the `prometheus-client`
//! crate's registry of typed metrics does not fit counters known only by name at run time.

use std::collections::BTreeMap;
use std::fmt::Write;

/// One sample: its labels (name, value) and its value.
pub type Sample = (Vec<(&'static str, String)>, u64);

/// `name` as a metric name: `linerate_` and the name with anything outside `[a-zA-Z0-9_]`
/// turned into `_`.
pub fn metric_name(name: &str) -> String {
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    format!("linerate_{clean}")
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Every counter of `instances` as OpenMetrics text, labelled by instance, command and pid.
pub fn exposition(instances: &[crate::statsfile::Entry]) -> String {
    let mut families: BTreeMap<String, Vec<Sample>> = BTreeMap::new();
    for e in instances {
        let labels = vec![("instance", e.name.clone()), ("command", e.command.clone()), ("pid", e.pid.to_string())];
        for (c, v) in &e.counters {
            families.entry(c.clone()).or_default().push((labels.clone(), *v));
        }
    }
    render(&families)
}

/// The exposition of `families` (counter name -> samples), families in name order.
pub fn render(families: &BTreeMap<String, Vec<Sample>>) -> String {
    let mut by_metric: BTreeMap<String, (&str, &Vec<Sample>)> = BTreeMap::new();
    for (name, samples) in families {
        by_metric.insert(metric_name(name), (name, samples));
    }
    let mut out = String::new();
    for (metric, (name, samples)) in by_metric {
        let _ = writeln!(out, "# TYPE {metric} unknown");
        let _ = writeln!(out, "# HELP {metric} linerate counter {}", escape(name));
        for (labels, v) in samples {
            let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            let _ = writeln!(out, "{metric}{{{}}} {v}", l.join(","));
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_labels_and_eof() {
        let mut f = BTreeMap::new();
        f.insert("rx_frames".to_string(), vec![(vec![("instance", "a\"b".to_string())], 5)]);
        f.insert("frames in".to_string(), vec![(vec![("instance", "x".to_string())], 1)]);
        let text = render(&f);
        assert_eq!(
            text,
            "# TYPE linerate_frames_in unknown\n# HELP linerate_frames_in linerate counter frames in\n\
             linerate_frames_in{instance=\"x\"} 1\n\
             # TYPE linerate_rx_frames unknown\n# HELP linerate_rx_frames linerate counter rx_frames\n\
             linerate_rx_frames{instance=\"a\\\"b\"} 5\n# EOF\n"
        );
    }
}
