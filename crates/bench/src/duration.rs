//! Durations on the command line: one convention for every time flag.
//!
//! A duration is a number with a unit: `250us`, `500ms`, `5s`, `2m`, `1h` (decimals allowed:
//! `1.5s`). A bare number is seconds (`--duration 5` is five seconds), as for Linux `ping -i`
//! and `iperf3 -t`.
//!
//! Not `humantime`: it reads neither decimals (`1.5s`, `0.2` as `ping -i 0.2` takes) nor a
//! bare number, both of which the flags have always accepted; what is left to parse is a
//! number and a unit from a short table.

use std::time::Duration;

/// The longest duration a flag accepts (a day): beyond it a typo is more likely than intent.
const MAX: Duration = Duration::from_secs(24 * 3600);

/// Parse a duration flag (see the module documentation); zero, negative, non-finite and
/// over-a-day values are refused with one sentence saying what is accepted.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic() || c == 'µ').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("'{s}' has an unknown unit '{unit}' (use ns, us, ms, s, m or h, e.g. 500ms)")),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' is not a duration (e.g. 5s, 500ms, 2m)"))?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("'{s}' is not a positive duration"));
    }
    let d = Duration::from_secs_f64(secs);
    if d > MAX {
        return Err(format!("'{s}' is longer than a day"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("2d").is_err());
        assert!(parse_duration("25h").is_err());
        assert!(parse_duration("nan").is_err());
    }
}
