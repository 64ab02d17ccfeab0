//! The host side of the IDS: turn packets the units sent to the host into alerts, write a
//! Snort-style alert log ("alert_fast" lines) and a pcap of the matched packets, and keep the
//! set of (sid, flow) pairs seen.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use accel::ids::RuleSet;
use link::pcap::PcapWriter;
use link::{FrameBatch, Instant, Link, LinkError, MAX_FRAME};
use middlebox::parse::parse;
use middlebox::testlinks::NullLink;
use middlebox::HostPacket;

use super::flow::FlowKey;

/// One rule that matched one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// Generator id.
    pub gid: u32,
    /// Rule id.
    pub sid: u32,
    /// Rule revision.
    pub rev: u32,
    /// The rule's message.
    pub msg: String,
    /// The rule's classtype.
    pub classtype: Option<String>,
    /// IP protocol.
    pub proto: u8,
    /// Source endpoint of the packet.
    pub src: (Ipv4Addr, u16),
    /// Destination endpoint of the packet.
    pub dst: (Ipv4Addr, u16),
}

impl Alert {
    /// The flow of the alert.
    pub fn flow(&self) -> FlowKey {
        FlowKey::of(self.src.0, self.src.1, self.dst.0, self.dst.1, self.proto).0
    }

    /// The alert as a Snort `alert_fast` line, stamped `when` (UTC).
    pub fn fast_line(&self, when: SystemTime) -> String {
        let proto = match self.proto {
            6 => "TCP".to_string(),
            17 => "UDP".to_string(),
            1 => "ICMP".to_string(),
            p => format!("PROTO:{p:03}"),
        };
        let class = self.classtype.as_deref().map(|c| format!(" [Classification: {c}]")).unwrap_or_default();
        format!(
            "{}  [**] [{}:{}:{}] \"{}\" [**]{} {{{}}} {}:{} -> {}:{}",
            timestamp(when),
            self.gid,
            self.sid,
            self.rev,
            self.msg,
            class,
            proto,
            self.src.0,
            self.src.1,
            self.dst.0,
            self.dst.1
        )
    }
}

/// `MM/DD-HH:MM:SS.uuuuuu` in UTC, as Snort stamps alerts.
pub fn timestamp(when: SystemTime) -> String {
    let d = when.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let _year = yoe + era * 400 + i64::from(month <= 2);
    format!("{month:02}/{day:02}-{:02}:{:02}:{:02}.{:06}", rem / 3600, (rem / 60) % 60, rem % 60, d.subsec_micros())
}

/// The alerts a host packet carries (one per tag), looked up in `rules`.
pub fn alerts_of(hp: &HostPacket, rules: &RuleSet) -> Vec<Alert> {
    let Some(ip) = parse(&hp.frame).ok().and_then(|h| h.ipv4) else { return Vec::new() };
    let (sp, dp) = ip.ports.unwrap_or((0, 0));
    hp.tags
        .iter()
        .map(|&sid| {
            let r = rules.rule(sid);
            Alert {
                gid: r.map_or(1, |r| r.gid),
                sid,
                rev: r.map_or(0, |r| r.rev),
                msg: r.map_or_else(|| "unknown rule".into(), |r| r.msg.clone()),
                classtype: r.and_then(|r| r.classtype.clone()),
                proto: ip.proto,
                src: (ip.src, sp),
                dst: (ip.dst, dp),
            }
        })
        .collect()
}

/// Where alerts go: an optional alert log, an optional pcap of matched packets, and the
/// (sid, flow) set.
pub struct AlertSink {
    log: Option<BufWriter<File>>,
    pcap: Option<PcapWriter<NullLink>>,
    batch: FrameBatch,
    pairs: BTreeSet<(u32, FlowKey)>,
    /// Alerts written.
    pub alerts: u64,
    /// Packets the host received.
    pub packets: u64,
    /// Packets the units could not verify (reorder buffers full), recorded without alert.
    pub unverified: u64,
}

impl AlertSink {
    /// A sink writing the alert log to `log` and matched packets to `pcap` (each optional).
    pub fn new(log: Option<&Path>, pcap: Option<&Path>) -> Result<Self, String> {
        let log = match log {
            Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| format!("alert log {}: {e}", p.display()))?)),
            None => None,
        };
        let pcap = match pcap {
            Some(p) => Some(
                PcapWriter::new(NullLink::new(), p).map_err(|e: LinkError| format!("alert pcap: {e}"))?.wall_clock(),
            ),
            None => None,
        };
        Ok(AlertSink {
            log,
            pcap,
            batch: FrameBatch::new(1, MAX_FRAME),
            pairs: BTreeSet::new(),
            alerts: 0,
            packets: 0,
            unverified: 0,
        })
    }

    /// Record one host packet.
    pub fn record(&mut self, hp: &HostPacket, rules: &RuleSet) -> Result<(), String> {
        self.packets += 1;
        if hp.tags.is_empty() {
            self.unverified += 1;
        }
        let now = SystemTime::now();
        for a in alerts_of(hp, rules) {
            self.alerts += 1;
            self.pairs.insert((a.sid, a.flow()));
            if let Some(log) = self.log.as_mut() {
                writeln!(log, "{}", a.fast_line(now)).map_err(|e| format!("alert log: {e}"))?;
            }
        }
        if let Some(p) = self.pcap.as_mut() {
            self.batch.clear();
            if self.batch.push_stamped(&hp.frame, hp.meta.stamp.unwrap_or(0)) {
                p.tx_batch(Instant::now(), &mut self.batch).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// The distinct (sid, flow) pairs alerted so far.
    pub fn pairs(&self) -> &BTreeSet<(u32, FlowKey)> {
        &self.pairs
    }

    /// Flush the files.
    pub fn finish(&mut self) -> Result<(), String> {
        if let Some(l) = self.log.as_mut() {
            l.flush().map_err(|e| format!("alert log: {e}"))?;
        }
        if let Some(p) = self.pcap.as_mut() {
            p.flush().map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn snort_style_timestamp() {
        // 2024-02-29 13:05:09.000042 UTC
        let t = UNIX_EPOCH + Duration::from_secs(1_709_211_909) + Duration::from_micros(42);
        assert_eq!(timestamp(t), "02/29-13:05:09.000042");
    }

    #[test]
    fn fast_line_format() {
        let a = Alert {
            gid: 1,
            sid: 2000,
            rev: 3,
            msg: "TEST thing".into(),
            classtype: Some("trojan-activity".into()),
            proto: 6,
            src: (Ipv4Addr::new(1, 2, 3, 4), 1000),
            dst: (Ipv4Addr::new(5, 6, 7, 8), 80),
        };
        let l = a.fast_line(UNIX_EPOCH);
        assert_eq!(l, "01/01-00:00:00.000000  [**] [1:2000:3] \"TEST thing\" [**] [Classification: trojan-activity] {TCP} 1.2.3.4:1000 -> 5.6.7.8:80");
    }
}
