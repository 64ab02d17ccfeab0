//! Calendar time in UTC from nanoseconds since the Unix epoch, for alert timestamps.

/// A UTC date and time to the microsecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    /// Year.
    pub year: i64,
    /// Month, 1..=12.
    pub month: u32,
    /// Day of the month, 1..=31.
    pub day: u32,
    /// Hour, 0..=23.
    pub hour: u32,
    /// Minute, 0..=59.
    pub minute: u32,
    /// Second, 0..=59.
    pub second: u32,
    /// Microseconds, 0..=999,999.
    pub micros: u32,
}

impl Utc {
    /// The date and time `nanos` nanoseconds after 1970-01-01 00:00:00 UTC.
    pub fn from_unix_nanos(nanos: u64) -> Utc {
        let secs = nanos / 1_000_000_000;
        let days = (secs / 86_400) as i64;
        let rem = (secs % 86_400) as u32;
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        Utc {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day,
            hour: rem / 3600,
            minute: (rem / 60) % 60,
            second: rem % 60,
            micros: ((nanos % 1_000_000_000) / 1000) as u32,
        }
    }

    /// Snort's alert stamp `MM/DD-HH:MM:SS.uuuuuu`.
    pub fn snort(&self) -> String {
        format!(
            "{:02}/{:02}-{:02}:{:02}:{:02}.{:06}",
            self.month, self.day, self.hour, self.minute, self.second, self.micros
        )
    }

    /// Suricata's EVE stamp `YYYY-MM-DDTHH:MM:SS.uuuuuu+0000`.
    pub fn eve(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+0000",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.micros
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leap_day_and_epoch() {
        // 2024-02-29 13:05:09.000042 UTC
        let t = Utc::from_unix_nanos(1_709_211_909_000_042_000);
        assert_eq!(t.snort(), "02/29-13:05:09.000042");
        assert_eq!(t.eve(), "2024-02-29T13:05:09.000042+0000");
        assert_eq!(Utc::from_unix_nanos(0).eve(), "1970-01-01T00:00:00.000000+0000");
        assert_eq!(Utc::from_unix_nanos(1_767_225_599_999_999_999).eve(), "2025-12-31T23:59:59.999999+0000");
    }
}
