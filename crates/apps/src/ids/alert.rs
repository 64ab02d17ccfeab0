//! The host side of the IDS: turn packets the units sent to the host into alerts, write a
//! Snort-style alert log ("alert_fast" lines) and a pcap of the matched packets, and keep the
//! set of (sid, flow) pairs seen.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::Ipv4Addr;
use std::path::Path;

use accel::ids::RuleSet;
use link::pcap::PcapWriter;
use link::time::unix_nanos;
use link::{FrameBatch, Instant, Link, LinkError, MAX_FRAME};
use middlebox::parse::parse;
use middlebox::testlinks::NullLink;
use middlebox::HostPacket;

use super::eve::alert_record;
use super::flow::FlowKey;
use super::utc::Utc;

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
    /// The classtype's description (Snort's default classifications; else the classtype itself).
    pub classification: Option<String>,
    /// Priority: the rule's `priority`, else its classtype's (1 is the most severe; 0: none).
    pub priority: u32,
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

    /// The alert as a Snort `alert_fast` line, stamped `stamp` (nanoseconds since the Unix
    /// epoch, shown in UTC).
    pub fn fast_line(&self, stamp: u64) -> String {
        let proto = match self.proto {
            6 => "TCP".to_string(),
            17 => "UDP".to_string(),
            1 => "ICMP".to_string(),
            p => format!("PROTO:{p:03}"),
        };
        let class = self.classification.as_deref().map(|c| format!(" [Classification: {c}]")).unwrap_or_default();
        // Ports only for TCP and UDP, as Snort prints them.
        let ep =
            |(a, p): (Ipv4Addr, u16)| if matches!(self.proto, 6 | 17) { format!("{a}:{p}") } else { a.to_string() };
        format!(
            "{}  [**] [{}:{}:{}] \"{}\" [**]{} [Priority: {}] {{{}}} {} -> {}",
            Utc::from_unix_nanos(stamp).snort(),
            self.gid,
            self.sid,
            self.rev,
            self.msg,
            class,
            self.priority,
            proto,
            ep(self.src),
            ep(self.dst)
        )
    }
}

/// The alerts a host packet carries (one per tag), looked up in `rules`.
pub fn alerts_of(hp: &HostPacket, rules: &RuleSet) -> Vec<Alert> {
    let Some(ip) = parse(&hp.frame).ok().and_then(|h| h.ipv4) else { return Vec::new() };
    let (sp, dp) = ip.ports.unwrap_or((0, 0));
    hp.tags
        .iter()
        .map(|&sid| {
            let r = rules.rule(sid);
            let classtype = r.and_then(|r| r.classtype.clone());
            Alert {
                gid: r.map_or(1, |r| r.gid),
                sid,
                rev: r.map_or(0, |r| r.rev),
                msg: r.map_or_else(|| "unknown rule".into(), |r| r.msg.clone()),
                classification: r.and_then(|r| r.classification().map(String::from)).or_else(|| classtype.clone()),
                classtype,
                priority: r.map_or(0, |r| r.priority()),
                proto: ip.proto,
                src: (ip.src, sp),
                dst: (ip.dst, dp),
            }
        })
        .collect()
}

/// A text output: a file, or standard output for `-`.
type TextOut = BufWriter<Box<dyn Write + Send>>;

fn open_text(path: &Path, what: &str) -> Result<TextOut, String> {
    let w: Box<dyn Write + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdout())
    } else {
        Box::new(File::create(path).map_err(|e| format!("{what} {}: {e}", path.display()))?)
    };
    Ok(BufWriter::new(w))
}

/// Where alerts go: an optional alert log (Snort alert_fast lines), an optional EVE JSON log,
/// an optional pcap of matched packets, and the (sid, flow) set. Alerts are stamped with the
/// packet's capture time when it has one (a replayed capture), else with the time now.
pub struct AlertSink {
    log: Option<TextOut>,
    eve: Option<TextOut>,
    pcap: Option<PcapWriter<NullLink>>,
    batch: FrameBatch,
    pairs: BTreeSet<(u32, FlowKey)>,
    /// Alerts written.
    pub alerts: u64,
    /// Packets the host received.
    pub packets: u64,
    /// Packets the units could not verify (reorder buffers full), recorded without alert.
    pub unverified: u64,
    /// True if alerting packets are dropped (IPS): the EVE action is `blocked`, else `allowed`.
    blocked: bool,
}

impl AlertSink {
    /// A sink writing the alert log to `log` and matched packets to `pcap` (each optional;
    /// `-` is standard output).
    pub fn new(log: Option<&Path>, pcap: Option<&Path>) -> Result<Self, String> {
        let log = log.map(|p| open_text(p, "alert log")).transpose()?;
        let pcap = match pcap {
            Some(p) => Some(
                PcapWriter::new(NullLink::new(), p).map_err(|e: LinkError| format!("alert pcap: {e}"))?.wall_clock(),
            ),
            None => None,
        };
        Ok(AlertSink {
            log,
            eve: None,
            pcap,
            batch: FrameBatch::new(1, MAX_FRAME),
            pairs: BTreeSet::new(),
            alerts: 0,
            packets: 0,
            unverified: 0,
            blocked: false,
        })
    }

    /// Also write every alert as a Suricata EVE JSON line to `path` (`-`: standard output).
    pub fn with_eve(mut self, path: &Path) -> Result<Self, String> {
        self.eve = Some(open_text(path, "EVE log")?);
        Ok(self)
    }

    /// Say whether alerting packets are dropped (IPS, EVE `blocked`) or forwarded (IDS, the
    /// default, EVE `allowed`).
    pub fn blocking(mut self, blocked: bool) -> Self {
        self.blocked = blocked;
        self
    }

    /// Record one host packet.
    pub fn record(&mut self, hp: &HostPacket, rules: &RuleSet) -> Result<(), String> {
        self.packets += 1;
        if hp.tags.is_empty() {
            self.unverified += 1;
        }
        let stamp = hp.meta.stamp.unwrap_or_else(unix_nanos);
        for a in alerts_of(hp, rules) {
            self.alerts += 1;
            self.pairs.insert((a.sid, a.flow()));
            if let Some(log) = self.log.as_mut() {
                writeln!(log, "{}", a.fast_line(stamp)).map_err(|e| format!("alert log: {e}"))?;
            }
            if let Some(eve) = self.eve.as_mut() {
                writeln!(eve, "{}", alert_record(&a, stamp, self.blocked)).map_err(|e| format!("EVE log: {e}"))?;
            }
        }
        if let Some(p) = self.pcap.as_mut() {
            self.batch.clear();
            if self.batch.push_stamped(&hp.frame, stamp) {
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
        if let Some(l) = self.eve.as_mut() {
            l.flush().map_err(|e| format!("EVE log: {e}"))?;
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

    fn alert(proto: u8, classification: Option<&str>, priority: u32) -> Alert {
        Alert {
            gid: 1,
            sid: 2000,
            rev: 3,
            msg: "TEST thing".into(),
            classtype: classification.map(|_| "trojan-activity".into()),
            classification: classification.map(String::from),
            priority,
            proto,
            src: (Ipv4Addr::new(1, 2, 3, 4), 1000),
            dst: (Ipv4Addr::new(5, 6, 7, 8), 80),
        }
    }

    #[test]
    fn fast_line_format() {
        // Snort's alert_fast: stamp, [gid:sid:rev], message, classification, priority, protocol, endpoints.
        let l = alert(6, Some("A Network Trojan was detected"), 1).fast_line(1_709_211_909_000_042_000);
        assert_eq!(l, "02/29-13:05:09.000042  [**] [1:2000:3] \"TEST thing\" [**] [Classification: A Network Trojan was detected] [Priority: 1] {TCP} 1.2.3.4:1000 -> 5.6.7.8:80");
        let l = alert(1, None, 0).fast_line(0);
        assert_eq!(
            l,
            "01/01-00:00:00.000000  [**] [1:2000:3] \"TEST thing\" [**] [Priority: 0] {ICMP} 1.2.3.4 -> 5.6.7.8"
        );
    }
}
