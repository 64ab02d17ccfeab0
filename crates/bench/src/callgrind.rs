//! Instruction counts from valgrind's callgrind: run this binary with some arguments under
//! `valgrind --tool=callgrind` and read the total of instructions executed (`Ir`).

use std::process::Command;

/// Why callgrind cannot be used here, or `None` when `valgrind` runs.
pub fn unavailable() -> Option<String> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("valgrind --version failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Some(format!("not installed (valgrind: {e})")),
    }
}

/// Run this binary with `args` under callgrind; returns the instructions executed (only inside
/// functions matching `only`, callgrind's `--toggle-collect` pattern, when given) and what the
/// program printed on stdout. Fails if the program fails or callgrind reports no total.
pub fn instructions(args: &[&str], only: Option<&str>) -> Result<(u64, String), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let out_file = std::env::temp_dir().join(format!("linerate-callgrind-{}-{}.out", std::process::id(), unique()));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .args(only.map(|f| ["--collect-atstart=no".to_string(), format!("--toggle-collect={f}")]).into_iter().flatten())
        .arg(&exe)
        .args(args)
        .output();
    let text = std::fs::read_to_string(&out_file);
    let _ = std::fs::remove_file(&out_file);
    let out = out.map_err(|e| format!("cannot run valgrind: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        return Err(format!("{} {} under callgrind failed: {}", exe.display(), args.join(" "), tail.join(" / ")));
    }
    let text = text.map_err(|e| format!("no callgrind output {}: {e}", out_file.display()))?;
    let total = total_ir(&text).ok_or_else(|| format!("no instruction total in {}", out_file.display()))?;
    Ok((total, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// A number for this process' output files that is new on every call.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The instruction total of a callgrind output file: its `summary:` (or `totals:`) line,
/// whose first number is `Ir` when that is the first event (the default).
fn total_ir(text: &str) -> Option<u64> {
    let first_event = text.lines().find_map(|l| l.strip_prefix("events:"))?.split_whitespace().next()?;
    if first_event != "Ir" {
        return None;
    }
    ["summary:", "totals:"]
        .iter()
        .find_map(|key| text.lines().find_map(|l| l.strip_prefix(key)))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_is_the_summary_lines_first_number_when_ir_is_the_first_event() {
        let f = "version: 1\ncreator: callgrind-3.22\ncmd: x\nevents: Ir\nfl=(1) a.c\nfn=(1) main\n3 10\nsummary: 123456\ntotals: 123456\n";
        assert_eq!(total_ir(f), Some(123_456));
        assert_eq!(total_ir("events: Ir Dr\ntotals: 77 5\n"), Some(77));
        assert_eq!(total_ir("events: Dr Ir\nsummary: 5 77\n"), None, "Ir is not first");
        assert_eq!(total_ir("events: Ir\n"), None, "no total");
        assert_eq!(total_ir("summary: 5\n"), None, "no events line");
    }
}
