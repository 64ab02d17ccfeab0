//! `report.md`: a header with the date and the machine, then one section per figure (what
//! the paper measured, what we measured, how the set-ups differ, the ratio, the files).

use super::figure::Figure;
use std::fmt::Write as _;

/// The machine the run measured on, for the report's header.
pub fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    // Count the machine's CPUs, not the calling thread's affinity (benchmarks pin it to one).
    let cpus = read("/proc/cpuinfo").lines().filter(|l| l.starts_with("processor")).count().max(1);
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    let host = read("/proc/sys/kernel/hostname").trim().to_string();
    format!("{host}: {cpu}, {cpus} CPUs, {:.1} GiB memory, Linux {kernel}", mem_kib as f64 / (1024.0 * 1024.0))
}

/// Today's date and time in UTC, `YYYY-MM-DD HH:MM UTC`.
pub fn now_utc() -> String {
    let t = apps::ids::utc::Utc::from_unix_nanos(link::time::unix_nanos());
    format!("{:04}-{:02}-{:02} {:02}:{:02} UTC", t.year, t.month, t.day, t.hour, t.minute)
}

/// The systems of the papers, by number.
pub fn paper_title(paper: &str) -> &'static str {
    match paper {
        "000" => "TaPaSCo with a 100G TCP/IP stack, network library and SPN inference (TU Darmstadt)",
        "001" => "Receive-side notification for connectionless RDMA (U. Manchester)",
        "002" => "Limago, a 100 GbE TCP/IP stack (UAM / ETH Zurich)",
        "003" => "EasyNet, a 100 Gbit/s network for HLS (ETH Zurich)",
        "004" => "Rosebud, FPGA-accelerated middleboxes (UCSD / MIT)",
        _ => "",
    }
}

/// The whole report of `linerate reproduce <paper>` (`paper` is a number or `all`): header,
/// then the figures grouped by paper, then failures.
pub fn render(figures: &[Figure], failures: &[(String, String)], paper: &str, quick: bool, elapsed_s: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# linerate reproduce: the seed papers' evaluations re-run on linerate\n");
    let _ = writeln!(out, "- Date: {}", now_utc());
    let _ = writeln!(out, "- Machine: {}", machine());
    let _ = writeln!(
        out,
        "- Run: `linerate reproduce {paper}{}` ({}; Hyperscan peer {}), {:.0} s in all",
        if quick { " --quick" } else { "" },
        if quick { "small sizes and short runs" } else { "the default sizes" },
        if cfg!(feature = "hyperscan") { "built in" } else { "not built in" },
        elapsed_s
    );
    let _ = writeln!(
        out,
        "- The papers measured FPGAs on 100 Gbit/s links; linerate runs on this machine's CPUs, its hosts \
         joined by shared-memory links (and the Linux peers by veth pairs in network namespaces). Every \
         figure here is one run on this machine; where it is shared with other work (compilers), the \
         figures are lower and noisier than on an idle machine.\n"
    );
    let _ = writeln!(
        out,
        "Each figure has a PNG and a CSV beside this file. Paper values are only the numbers the papers \
         state in their text or tables (cited in the CSV's `source` column); peers that could not run are \
         marked \"not installed\" (or why not) in the CSV and below.\n"
    );
    let mut last = String::new();
    for f in figures {
        if f.paper != last {
            let _ = writeln!(out, "## {}: {}\n", f.paper, paper_title(&f.paper));
            last = f.paper.clone();
        }
        section(&mut out, f);
    }
    if !failures.is_empty() {
        let _ = writeln!(out, "## Figures that could not be produced\n");
        for (what, why) in failures {
            let _ = writeln!(out, "- {what}: {why}");
        }
        out.push('\n');
    }
    out
}

/// One figure's section.
fn section(out: &mut String, f: &Figure) {
    let _ = writeln!(out, "### {} {}: {}\n", f.paper, f.name, f.title);
    let _ = writeln!(out, "![{} {}]({}.png)\n", f.paper, f.name, f.id);
    let _ = writeln!(out, "- Paper: {}", f.paper_measured);
    let _ = writeln!(out, "- linerate: {}", f.we_measured);
    let _ = writeln!(out, "- Set-ups: {}", f.differences);
    let _ = writeln!(out, "- Ratio: {}", f.ratio);
    for (peer, why) in &f.missing {
        let _ = writeln!(out, "- {peer}: {why}");
    }
    let _ = writeln!(out, "- Data: [{0}.csv]({0}.csv)\n", f.id);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::figure::Axis;

    #[test]
    fn dates_are_civil() {
        let ymd = |days: u64| {
            let t = apps::ids::utc::Utc::from_unix_nanos(days * 86_400 * 1_000_000_000);
            (t.year, t.month, t.day)
        };
        assert_eq!(ymd(0), (1970, 1, 1));
        assert_eq!(ymd(19_723), (2024, 1, 1));
        assert_eq!(ymd(11_016), (2000, 2, 29));
        assert!(now_utc().ends_with(" UTC") && now_utc().starts_with("20"));
    }

    #[test]
    fn sections_name_the_figure_and_its_files() {
        let mut f = Figure::new("001", "001-fig7", "Fig. 7", "latency", Axis::lin("a", ""), Axis::lin("b", ""));
        f.miss("SPFlow", "not installed");
        let r = render(&[f], &[("004 Fig. 9".into(), "boom".into())], "001", true, 12.0);
        assert!(r.contains("### 001 Fig. 7: latency"), "{r}");
        assert!(r.contains("(001-fig7.png)") && r.contains("(001-fig7.csv)"));
        assert!(r.contains("- SPFlow: not installed"));
        assert!(r.contains("- 004 Fig. 9: boom"));
        assert!(r.contains("Machine: ") && r.contains("`linerate reproduce 001 --quick`"), "{r}");
    }
}
