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
    /// The date and time `nanos` nanoseconds after 1970-01-01 00:00:00 UTC (the calendar
    /// from the `time` crate).
    pub fn from_unix_nanos(nanos: u64) -> Utc {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(nanos))
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        Utc {
            year: i64::from(t.year()),
            month: u32::from(u8::from(t.month())),
            day: u32::from(t.day()),
            hour: u32::from(t.hour()),
            minute: u32::from(t.minute()),
            second: u32::from(t.second()),
            micros: t.microsecond(),
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
