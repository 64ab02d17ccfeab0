//! Every field of [`RdmaConfig`] by name, so that the Python package and the CLI set and read
//! the same settings under the same names (`segment_size`, `rto`, `transport`, ...) without a
//! second list that could drift. Durations are seconds; `transport` is `udp:PORT` or
//! `eth:ETHERTYPE` (hex with `0x`, or decimal); `packet_payload` and `first_write_id` may be
//! unset (`None`: the default behaviour their docs describe).

use crate::config::RdmaConfig;
use crate::error::RdmaError;
use crate::peer::Transport;
use std::time::Duration;

/// The value of one setting.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingValue {
    /// A count, size or id.
    Int(u64),
    /// A duration in seconds.
    Secs(f64),
    /// Unset (only for the optional settings).
    Unset,
    /// Text (the transport).
    Text(String),
}

impl std::fmt::Display for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Int(v) => write!(f, "{v}"),
            SettingValue::Secs(v) => write!(f, "{v}s"),
            SettingValue::Unset => f.write_str("none"),
            SettingValue::Text(t) => f.write_str(t),
        }
    }
}

/// The kind of value a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    OptInt,
    Secs,
    Transport,
}

/// Every setting: name and kind, in the order of [`RdmaConfig`]'s fields.
const SETTINGS: &[(&str, Kind)] = &[
    ("transport", Kind::Transport),
    ("packet_payload", Kind::OptInt),
    ("reg_entries", Kind::Int),
    ("mask_width", Kind::Int),
    ("escape_capacity", Kind::Int),
    ("escape_timeout", Kind::Secs),
    ("entry_timeout", Kind::Secs),
    ("notify_capacity", Kind::Int),
    ("recent_capacity", Kind::Int),
    ("recent_linger", Kind::Secs),
    ("register_threshold", Kind::Int),
    ("segment_threshold", Kind::Int),
    ("segment_size", Kind::Int),
    ("command_queue", Kind::Int),
    ("max_ops", Kind::Int),
    ("max_in_flight", Kind::Int),
    ("window", Kind::Int),
    ("rto", Kind::Secs),
    ("max_rto", Kind::Secs),
    ("max_tries", Kind::Int),
    ("max_regions", Kind::Int),
    ("rx_batch", Kind::Int),
    ("first_write_id", Kind::OptInt),
];

/// The transport as its setting spells it.
pub fn transport_name(t: Transport) -> String {
    match t {
        Transport::Udp { port } => format!("udp:{port}"),
        Transport::Eth { ethertype } => format!("eth:{ethertype:#06x}"),
    }
}

/// Parse `udp`, `udp:PORT`, `eth`, `eth:ETHERTYPE` (hex with 0x, or decimal).
pub fn parse_transport(s: &str) -> Result<Transport, RdmaError> {
    let bad = || RdmaError::BadConfig(format!("transport {s:?} is not udp[:PORT] or eth[:ETHERTYPE]"));
    let (kind, arg) = s.split_once(':').map_or((s, None), |(k, a)| (k, Some(a)));
    let num = |a: &str| -> Result<u16, RdmaError> {
        match a.strip_prefix("0x").or_else(|| a.strip_prefix("0X")) {
            Some(h) => u16::from_str_radix(h, 16).map_err(|_| bad()),
            None => a.parse().map_err(|_| bad()),
        }
    };
    match (kind.trim(), arg) {
        ("udp", None) => Ok(Transport::Udp { port: crate::DEFAULT_UDP_PORT }),
        ("udp", Some(p)) => Ok(Transport::Udp { port: num(p)? }),
        ("eth", None) => Ok(Transport::Eth { ethertype: crate::DEFAULT_ETHERTYPE }),
        ("eth", Some(t)) => {
            let ethertype = num(t)?;
            if ethertype < 0x0600 || matches!(ethertype, 0x0800 | 0x0806 | 0x8100 | 0x88a8 | 0x86dd) {
                return Err(RdmaError::BadConfig(format!(
                    "ethertype {ethertype:#06x} is not free for RDMA (below 0x0600, or IPv4/ARP/IPv6/VLAN)"
                )));
            }
            Ok(Transport::Eth { ethertype })
        }
        _ => Err(bad()),
    }
}

fn unknown(name: &str) -> RdmaError {
    let names: Vec<&str> = SETTINGS.iter().map(|(n, _)| *n).collect();
    RdmaError::BadConfig(format!("unknown setting {name:?}; the settings are: {}", names.join(", ")))
}

fn int_field<'c>(cfg: &'c mut RdmaConfig, name: &str) -> Option<&'c mut usize> {
    Some(match name {
        "reg_entries" => &mut cfg.reg_entries,
        "mask_width" => &mut cfg.mask_width,
        "escape_capacity" => &mut cfg.escape_capacity,
        "notify_capacity" => &mut cfg.notify_capacity,
        "recent_capacity" => &mut cfg.recent_capacity,
        "register_threshold" => &mut cfg.register_threshold,
        "segment_threshold" => &mut cfg.segment_threshold,
        "segment_size" => &mut cfg.segment_size,
        "command_queue" => &mut cfg.command_queue,
        "max_ops" => &mut cfg.max_ops,
        "max_in_flight" => &mut cfg.max_in_flight,
        "window" => &mut cfg.window,
        "max_regions" => &mut cfg.max_regions,
        "rx_batch" => &mut cfg.rx_batch,
        _ => return None,
    })
}

fn secs_field<'c>(cfg: &'c mut RdmaConfig, name: &str) -> Option<&'c mut Duration> {
    Some(match name {
        "escape_timeout" => &mut cfg.escape_timeout,
        "entry_timeout" => &mut cfg.entry_timeout,
        "recent_linger" => &mut cfg.recent_linger,
        "rto" => &mut cfg.rto,
        "max_rto" => &mut cfg.max_rto,
        _ => return None,
    })
}

impl RdmaConfig {
    /// The names of every setting, in field order.
    pub fn setting_names() -> impl Iterator<Item = &'static str> {
        SETTINGS.iter().map(|(n, _)| *n)
    }

    /// Every setting with its value, in field order.
    pub fn settings(&self) -> Vec<(&'static str, SettingValue)> {
        Self::setting_names().map(|n| (n, self.get(n).unwrap_or(SettingValue::Unset))).collect()
    }

    /// The value of setting `name`, or None if there is no such setting.
    pub fn get(&self, name: &str) -> Option<SettingValue> {
        let mut c = self.clone();
        let v = match name {
            "transport" => SettingValue::Text(transport_name(self.transport)),
            "packet_payload" => self.packet_payload.map_or(SettingValue::Unset, |v| SettingValue::Int(v as u64)),
            "first_write_id" => self.first_write_id.map_or(SettingValue::Unset, SettingValue::Int),
            "max_tries" => SettingValue::Int(u64::from(self.max_tries)),
            n => {
                if let Some(v) = int_field(&mut c, n) {
                    SettingValue::Int(*v as u64)
                } else {
                    SettingValue::Secs(secs_field(&mut c, n)?.as_secs_f64())
                }
            }
        };
        Some(v)
    }

    /// Set `name` to `value`. An unknown name, a value of the wrong kind or out of range is
    /// one error naming the setting; the configuration is unchanged then. (Whether the
    /// settings agree with each other is [`RdmaConfig::validate`]'s job.)
    pub fn set(&mut self, name: &str, value: SettingValue) -> Result<(), RdmaError> {
        let kind = SETTINGS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k).ok_or_else(|| unknown(name))?;
        let wrong = |want: &str| RdmaError::BadConfig(format!("setting {name} takes {want}, not {value}"));
        let int = |v: &SettingValue| match v {
            SettingValue::Int(i) => Some(*i),
            _ => None,
        };
        match kind {
            Kind::Transport => match &value {
                SettingValue::Text(t) => self.transport = parse_transport(t)?,
                _ => return Err(wrong("udp:PORT or eth:ETHERTYPE")),
            },
            Kind::OptInt => {
                let v = match value {
                    SettingValue::Unset => None,
                    SettingValue::Int(i) => Some(i),
                    _ => return Err(wrong("a whole number or none")),
                };
                if name == "packet_payload" {
                    self.packet_payload = v.map(|v| usize::try_from(v).unwrap_or(usize::MAX));
                } else {
                    self.first_write_id = v;
                }
            }
            Kind::Secs => {
                let s = match value {
                    SettingValue::Secs(s) => s,
                    SettingValue::Int(i) => i as f64,
                    _ => return Err(wrong("a duration in seconds")),
                };
                let d = Duration::try_from_secs_f64(s).map_err(|_| wrong("a duration in seconds (>= 0)"))?;
                *secs_field(self, name).ok_or_else(|| unknown(name))? = d;
            }
            Kind::Int => {
                let v = int(&value).ok_or_else(|| wrong("a whole number"))?;
                if name == "max_tries" {
                    self.max_tries = u32::try_from(v).map_err(|_| wrong("a number below 2^32"))?;
                } else {
                    *int_field(self, name).ok_or_else(|| unknown(name))? = usize::try_from(v).unwrap_or(usize::MAX);
                }
            }
        }
        Ok(())
    }

    /// Set `name` from text, as the CLI's `--set NAME=VALUE` gives it: whole numbers with an
    /// optional K/M/G/KiB/MiB/GiB suffix (powers of 1024), durations with a unit (`5ms`, `1s`,
    /// `200us`; a bare number is seconds), `none` for an unset optional setting.
    pub fn set_text(&mut self, name: &str, text: &str) -> Result<(), RdmaError> {
        let kind = SETTINGS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k).ok_or_else(|| unknown(name))?;
        let bad = |want: &str| RdmaError::BadConfig(format!("setting {name} takes {want}, not {text:?}"));
        let t = text.trim();
        let value = match kind {
            Kind::Transport => SettingValue::Text(t.to_string()),
            Kind::OptInt if t.eq_ignore_ascii_case("none") => SettingValue::Unset,
            Kind::Int | Kind::OptInt => SettingValue::Int(parse_size(t).ok_or_else(|| bad("a whole number"))?),
            Kind::Secs => SettingValue::Secs(parse_secs(t).ok_or_else(|| bad("a duration such as 5ms"))?),
        };
        self.set(name, value)
    }
}

/// A byte count or number: digits with an optional K, M, G (or KiB, MiB, GiB; powers of 1024)
/// suffix, or a hexadecimal `0x...`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok();
    }
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let n: u64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "" | "B" => 1,
        "K" | "k" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// A duration in seconds from `1.5`, `5ms`, `200us`, `2s`, `1m`.
fn parse_secs(s: &str) -> Option<f64> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        _ => return None,
    };
    Some(v * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_round_trips_and_every_field_is_named() {
        let mut c = RdmaConfig::default();
        for (name, v) in RdmaConfig::default().settings() {
            // Change each to a distinct value and read it back.
            let new = match v {
                SettingValue::Int(i) => SettingValue::Int(i + 3),
                SettingValue::Secs(s) => SettingValue::Secs(s + 0.25),
                SettingValue::Unset => SettingValue::Int(77),
                SettingValue::Text(_) => SettingValue::Text("eth:0x88b6".into()),
            };
            c.set(name, new.clone()).unwrap();
            assert_eq!(c.get(name), Some(new), "{name}");
        }
        assert_eq!(c.transport, Transport::Eth { ethertype: 0x88b6 });
        assert_eq!(c.packet_payload, Some(77));
        assert_eq!(c.first_write_id, Some(77));
        assert_eq!(c.max_tries, RdmaConfig::default().max_tries + 3);
        // The Debug form names every field: each must be a setting.
        let dbg = format!("{:?}", RdmaConfig::default());
        let fields = dbg.matches(": ").count() - dbg.matches("Udp {").count();
        assert_eq!(fields, SETTINGS.len(), "{dbg}");
        for name in RdmaConfig::setting_names() {
            assert!(dbg.contains(&format!("{name}: ")), "{name} is not a field");
        }
    }

    #[test]
    fn bad_settings_are_one_error_and_change_nothing() {
        let mut c = RdmaConfig::default();
        let e = c.set("segment_sise", SettingValue::Int(1)).unwrap_err().to_string();
        assert!(e.contains("unknown setting \"segment_sise\"") && e.contains("segment_size"), "{e}");
        let e = c.set("rto", SettingValue::Text("x".into())).unwrap_err().to_string();
        assert!(e.contains("rto takes a duration"), "{e}");
        assert!(c.set("rto", SettingValue::Secs(-1.0)).is_err());
        assert!(c.set_text("transport", "eth:0x0800").is_err());
        assert!(c.set_text("window", "lots").is_err());
        assert_eq!(format!("{c:?}"), format!("{:?}", RdmaConfig::default()));
        c.set_text("segment_size", "256KiB").unwrap();
        c.set_text("rto", "5ms").unwrap();
        c.set_text("packet_payload", "none").unwrap();
        c.set_text("transport", "udp:4000").unwrap();
        assert_eq!(
            (c.segment_size, c.rto, c.transport),
            (256 << 10, Duration::from_millis(5), Transport::Udp { port: 4000 })
        );
        assert_eq!(parse_size("64MiB"), Some(64 << 20));
        assert_eq!(parse_size("0x10001"), Some(0x10001));
    }
}
