//! Impairment done by the Linux kernel on the egress of a device in a network namespace: loss,
//! reordering (a fraction of packets held back by a delay) and duplication, as netem's
//! `loss L% reorder R% duplicate P% delay D` does.
//!
//! netem is used when the kernel has it. Otherwise a substitute made of kernel parts that
//! exist without it:
//! - loss and duplication: an nftables table of the netdev family with a chain on the
//!   device's egress hook. A lost packet is forwarded (`fwd`) to a veth end that is down, which
//!   discards it: the sender is told its packet went out, as with netem (a plain `drop` at
//!   egress is reported back to the sender as a local drop, which TCP just sends again).
//!   A duplicate is made with `dup to` the device itself; the copy carries a mark so it passes
//!   the chain exactly once.
//! - reordering: an iptables rule (mangle POSTROUTING, `statistic` match) sends a fraction of
//!   the device's IPv4 packets to an NFQUEUE with bypass; a delayer thread holds each for the
//!   delay and then accepts it, so packets sent after it overtake it. (nftables' own `queue`
//!   needs nft_queue, which kernels without netem often lack too.)
//!
//! Everything is created inside the given namespace (never the host's) and removed when the
//! [`LinuxImpair`] guard is dropped, also on panic.

mod nfqueue;

use crate::netns::Netns;
use crate::TestbedError;
use nfqueue::Delayer;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The mark that duplicates carry through the egress chain.
const DUP_MARK: &str = "0x4c520001";
/// Random draws are compared in parts per million.
const PPM: f64 = 1_000_000.0;
/// Longest delay accepted.
const MAX_DELAY: Duration = Duration::from_secs(10);

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// What to do to a device's egress: probabilities in [0, 1] and the reordering delay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinuxImpairSpec {
    /// Probability that a packet is lost.
    pub loss: f64,
    /// Probability that a packet is reordered (held back by `delay` while others pass).
    pub reorder: f64,
    /// Probability that a packet is sent twice.
    pub duplicate: f64,
    /// How long a reordered packet is held back while the others pass at once.
    pub delay: Duration,
}

impl LinuxImpairSpec {
    /// The loss, reordering, duplication and delay of a userspace [`link::impair::Impairment`].
    pub fn from_impairment(i: &link::impair::Impairment) -> LinuxImpairSpec {
        LinuxImpairSpec { loss: i.loss, reorder: i.reorder, duplicate: i.duplicate, delay: i.delay }
    }

    /// Check that the figures make sense.
    pub fn validate(&self) -> Result<(), TestbedError> {
        for (what, p) in [("loss", self.loss), ("reorder", self.reorder), ("duplicate", self.duplicate)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(TestbedError::Setup(format!("{what} {p} is not a probability in [0, 1]")));
            }
        }
        if self.reorder > 0.0 && self.delay.is_zero() {
            return Err(TestbedError::Setup("reordering needs a delay greater than zero".into()));
        }
        if self.delay > MAX_DELAY {
            return Err(TestbedError::Setup(format!("delay {:?} is longer than {MAX_DELAY:?}", self.delay)));
        }
        Ok(())
    }
}

impl std::fmt::Display for LinuxImpairSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "loss {}%, reorder {}% (delay {} µs), duplicate {}%",
            self.loss * 100.0,
            self.reorder * 100.0,
            self.delay.as_micros(),
            self.duplicate * 100.0
        )
    }
}

/// How the impairment is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// The netem qdisc.
    Netem,
    /// nftables on the netdev egress hook (loss, duplication) and an NFQUEUE delayer (reordering).
    NftNfqueue,
}

impl std::fmt::Display for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mechanism::Netem => "netem",
            Mechanism::NftNfqueue => "nftables+nfqueue",
        })
    }
}

/// Packets impaired so far; `None` where the mechanism does not count (netem counts only drops).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImpairCounters {
    /// Packets lost.
    pub dropped: Option<u64>,
    /// Duplicates sent (each counted where it passes the egress hook, so exactly once).
    pub duplicated: Option<u64>,
    /// Packets held back and then sent.
    pub delayed: Option<u64>,
}

impl std::fmt::Display for ImpairCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = |c: Option<u64>| c.map_or("n/a".to_string(), |n| n.to_string());
        write!(f, "dropped={} duplicated={} delayed={}", v(self.dropped), v(self.duplicated), v(self.delayed))
    }
}

/// Where the commands run: the caller's namespace or a named one.
#[derive(Clone, Debug)]
enum Place {
    /// The calling thread's namespace.
    Current,
    /// A namespace under /var/run/netns.
    Named(String),
}

impl Place {
    /// A command running `program` in this place.
    fn command(&self, program: &str) -> Command {
        match self {
            Place::Current => Command::new(program),
            Place::Named(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, program]);
                c
            }
        }
    }

    /// Run `program args` (with `stdin` fed in), returning stdout or an error with stderr.
    fn run(&self, program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, TestbedError> {
        let mut cmd = self.command(program);
        cmd.args(args).stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let what = || format!("{program} {}", args.join(" "));
        let mut child = cmd.spawn().map_err(|e| TestbedError::Setup(format!("cannot run {}: {e}", what())))?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| TestbedError::Setup(format!("{}: {e}", what())))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(TestbedError::Setup(format!("`{}` failed: {}", what(), err.trim())));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The namespace file the delayer enters, if any.
    fn netns_path(&self) -> Option<String> {
        match self {
            Place::Current => None,
            Place::Named(ns) => Some(format!("/var/run/netns/{ns}")),
        }
    }
}

/// An impairment in force on a device's egress; dropping it removes everything it set up.
pub struct LinuxImpair {
    /// Where it lives.
    place: Place,
    /// The impaired device.
    dev: String,
    /// netem or the substitute.
    mechanism: Mechanism,
    /// A netem qdisc was added.
    netem: bool,
    /// The nftables table (netdev family) of the substitute.
    table: Option<String>,
    /// The veth end that discards lost packets (its peer goes with it).
    sink: Option<String>,
    /// The iptables program and rule that queue packets to the delayer.
    queue_rule: Option<(String, Vec<String>)>,
    /// The delayer of the substitute.
    delayer: Option<Delayer>,
}

impl LinuxImpair {
    /// Impair the egress of `dev` in `ns` (or, with `None`, in the caller's namespace, which must
    /// not be the host's): netem if the kernel has it, else the nftables+NFQUEUE substitute.
    pub fn apply(ns: Option<&Netns>, dev: &str, spec: &LinuxImpairSpec) -> Result<LinuxImpair, TestbedError> {
        let place = check_place(ns, dev, spec)?;
        match Self::netem(place.clone(), dev, spec) {
            Ok(g) => Ok(g),
            Err(netem_err) => Self::substitute(place, dev, spec).map_err(|e| {
                TestbedError::Setup(format!("netem is unavailable ({netem_err}) and so is the substitute: {e}"))
            }),
        }
    }

    /// Like [`LinuxImpair::apply`] but always with the nftables+NFQUEUE substitute.
    pub fn apply_substitute(
        ns: Option<&Netns>,
        dev: &str,
        spec: &LinuxImpairSpec,
    ) -> Result<LinuxImpair, TestbedError> {
        let place = check_place(ns, dev, spec)?;
        Self::substitute(place, dev, spec)
    }

    /// How the impairment is done.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The impaired device.
    pub fn device(&self) -> &str {
        &self.dev
    }

    /// Packets dropped, duplicated and delayed so far.
    pub fn counters(&self) -> Result<ImpairCounters, TestbedError> {
        if self.netem {
            let out = self.place.run("tc", &["-s", "qdisc", "show", "dev", &self.dev], None)?;
            return Ok(ImpairCounters { dropped: Some(parse_netem_dropped(&out).unwrap_or(0)), ..Default::default() });
        }
        let mut c = ImpairCounters { delayed: self.delayer.as_ref().map(Delayer::delayed), ..Default::default() };
        if let Some(t) = &self.table {
            let out = self.place.run("nft", &["list", "counters", "table", "netdev", t], None)?;
            let counters = parse_nft_counters(&out);
            let get = |name: &str| counters.iter().find(|(n, _)| n == name).map(|&(_, v)| v);
            c.dropped = get("dropped");
            c.duplicated = get("duplicated");
        }
        Ok(c)
    }

    /// Put netem on the device.
    fn netem(place: Place, dev: &str, spec: &LinuxImpairSpec) -> Result<LinuxImpair, TestbedError> {
        let pct = |p: f64| format!("{}%", p * 100.0);
        // netem's "reorder P% delay D" sends P% at once and delays the rest by D; holding
        // `reorder` of the packets by D (as the substitute and linerate's impairment do) is
        // "reorder (1 - reorder) delay D". Without reordering nothing is delayed.
        let reorder = match spec.reorder {
            r if r > 0.0 => format!(" reorder {} delay {}us", pct(1.0 - r), spec.delay.as_micros()),
            _ => String::new(),
        };
        // The device name was checked (no spaces), so the words split cleanly.
        let cmd = format!(
            "qdisc add dev {dev} root netem limit 100000 loss {} duplicate {}{reorder}",
            pct(spec.loss),
            pct(spec.duplicate)
        );
        let args: Vec<&str> = cmd.split(' ').collect();
        place.run("tc", &args, None)?;
        let mut g = LinuxImpair::empty(place, dev, Mechanism::Netem);
        g.netem = true;
        Ok(g)
    }

    /// Build the substitute; anything half-built is removed again by the guard's drop.
    fn substitute(place: Place, dev: &str, spec: &LinuxImpairSpec) -> Result<LinuxImpair, TestbedError> {
        let mut g = LinuxImpair::empty(place, dev, Mechanism::NftNfqueue);
        let id = format!("{}_{}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
        if spec.loss > 0.0 {
            let (a, b) = free_veth_names(&g.place)?;
            g.place.run("ip", &["link", "add", &a, "type", "veth", "peer", "name", &b], None)?;
            g.sink = Some(a);
        }
        let table = format!("lr_impair_{id}");
        let rules = nft_ruleset(&table, dev, g.sink.as_deref(), spec);
        g.place.run("nft", &["-f", "-"], Some(&rules))?;
        g.table = Some(table);
        if spec.reorder > 0.0 {
            let delayer = Delayer::start(g.place.netns_path(), spec.delay)?;
            let queue = delayer.queue();
            g.delayer = Some(delayer);
            g.queue_rule = Some(add_queue_rule(&g.place, dev, spec.reorder, queue)?);
        }
        Ok(g)
    }

    /// A guard that has set up nothing yet.
    fn empty(place: Place, dev: &str, mechanism: Mechanism) -> LinuxImpair {
        LinuxImpair {
            place,
            dev: dev.to_string(),
            mechanism,
            netem: false,
            table: None,
            sink: None,
            queue_rule: None,
            delayer: None,
        }
    }
}

impl Drop for LinuxImpair {
    fn drop(&mut self) {
        // Stop queueing first, then release what the delayer holds, then the rest.
        if let Some((prog, rule)) = self.queue_rule.take() {
            let mut args: Vec<&str> = vec!["-w", "5", "-t", "mangle", "-D"];
            args.extend(rule.iter().map(String::as_str));
            let _ = self.place.run(&prog, &args, None);
        }
        if let Some(mut d) = self.delayer.take() {
            d.stop();
        }
        if let Some(t) = self.table.take() {
            let _ = self.place.run("nft", &["delete", "table", "netdev", &t], None);
        }
        if let Some(s) = self.sink.take() {
            let _ = self.place.run("ip", &["link", "del", &s], None);
        }
        if self.netem {
            let _ = self.place.run("tc", &["qdisc", "del", "dev", &self.dev, "root"], None);
        }
    }
}

/// Why no impairment can be applied here, or `None`: netem works (tried on a veth pair in a
/// scratch namespace), or the substitute's tools (`nft`, `iptables`) are installed.
pub fn unavailable() -> Option<String> {
    if let Some(why) = crate::netns_unavailable() {
        return Some(why);
    }
    let ns = match Netns::create("lr-impair-probe") {
        Ok(ns) => ns,
        Err(e) => return Some(e.to_string()),
    };
    if let Err(e) = ns.ip(&["link", "add", "probe0", "type", "veth", "peer", "name", "probe1"]) {
        return Some(e.to_string());
    }
    let netem =
        Place::Named(ns.name().to_string()).run("tc", &["qdisc", "add", "dev", "probe0", "root", "netem"], None);
    let Err(netem_err) = netem else { return None };
    for tool in ["nft", "iptables"] {
        if Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Some(format!(
                "netem is unavailable ({netem_err}) and the substitute needs `{tool}`, which is not installed"
            ));
        }
    }
    None
}

/// Validate the inputs and decide where to work; refuses the host's own namespace.
fn check_place(ns: Option<&Netns>, dev: &str, spec: &LinuxImpairSpec) -> Result<Place, TestbedError> {
    spec.validate()?;
    let ok = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if dev.is_empty() || dev.len() > 15 || !dev.chars().all(ok) {
        return Err(TestbedError::Setup(format!("'{dev}' is not a device name (1-15 of A-Z a-z 0-9 - _ .)")));
    }
    let place = match ns {
        Some(ns) => Place::Named(ns.name().to_string()),
        None => {
            if in_host_namespace()? {
                return Err(TestbedError::Setup(
                    "refusing to impair a device in the host's own network namespace; pass a namespace".into(),
                ));
            }
            Place::Current
        }
    };
    place.run("ip", &["link", "show", "dev", dev], None)?;
    Ok(place)
}

/// Whether the calling thread is in the network namespace of PID 1 (the host's).
fn in_host_namespace() -> Result<bool, TestbedError> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &str| {
        std::fs::metadata(p).map(|m| (m.dev(), m.ino())).map_err(|e| TestbedError::Setup(format!("{p}: {e}")))
    };
    Ok(id("/proc/thread-self/ns/net")? == id("/proc/1/ns/net")?)
}

/// Names for the discarding veth pair that no device in `place` has yet.
fn free_veth_names(place: &Place) -> Result<(String, String), TestbedError> {
    let links = place.run("ip", &["-o", "link", "show"], None)?;
    let taken = |n: &str| links.contains(&format!(": {n}:")) || links.contains(&format!(": {n}@"));
    (0..100)
        .map(|i| (format!("lrdrop{i}"), format!("lrdrop{i}p")))
        .find(|(a, b)| !taken(a) && !taken(b))
        .ok_or_else(|| TestbedError::Setup("no free name for the discarding veth pair".into()))
}

/// The nftables table of the substitute: loss and duplication on `dev`'s egress, with counters.
fn nft_ruleset(table: &str, dev: &str, sink: Option<&str>, spec: &LinuxImpairSpec) -> String {
    let ppm = |p: f64| ((p * PPM).round() as u64).clamp(1, PPM as u64);
    let mut chain = format!(
        "    type filter hook egress device \"{dev}\" priority 0; policy accept;\n    \
         meta mark {DUP_MARK} counter name \"duplicated\" accept\n"
    );
    if let Some(sink) = sink {
        let k = ppm(spec.loss);
        chain += &format!("    numgen random mod 1000000 < {k} counter name \"dropped\" fwd to \"{sink}\"\n");
    }
    if spec.duplicate > 0.0 {
        let k = ppm(spec.duplicate);
        chain += &format!(
            "    meta mark 0 numgen random mod 1000000 < {k} meta mark set {DUP_MARK} dup to \"{dev}\" \
             meta mark set 0 counter name \"dup_made\"\n"
        );
    }
    format!(
        "table netdev {table} {{\n  counter dropped {{}}\n  counter duplicated {{}}\n  counter dup_made {{}}\n  \
         chain egress {{\n{chain}  }}\n}}\n"
    )
}

/// Add the iptables rule that queues a `reorder` fraction of `dev`'s packets to `queue`;
/// returns the program and the rule (for deleting it).
fn add_queue_rule(place: &Place, dev: &str, reorder: f64, queue: u16) -> Result<(String, Vec<String>), TestbedError> {
    let rule: Vec<String> = [
        "POSTROUTING",
        "-o",
        dev,
        "-m",
        "statistic",
        "--mode",
        "random",
        "--probability",
        &format!("{reorder}"),
        "-j",
        "NFQUEUE",
        "--queue-num",
        &queue.to_string(),
        "--queue-bypass",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut errors = Vec::new();
    for prog in ["iptables-nft", "iptables-legacy", "iptables"] {
        let mut args: Vec<&str> = vec!["-w", "5", "-t", "mangle", "-A"];
        args.extend(rule.iter().map(String::as_str));
        match place.run(prog, &args, None) {
            Ok(_) => return Ok((prog.to_string(), rule)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(TestbedError::Setup(format!(
        "cannot add the NFQUEUE rule (install the iptables package): {}",
        errors.join("; ")
    )))
}

/// The named counters in `nft list counters` output: (name, packets).
fn parse_nft_counters(text: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut name: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("counter ") {
            name = rest.split_whitespace().next().map(|n| n.trim_matches('"').to_string());
        } else if let (Some(n), Some(rest)) = (name.as_ref(), line.strip_prefix("packets ")) {
            if let Some(v) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
                out.push((n.clone(), v));
            }
            name = None;
        }
    }
    out
}

/// The drop count of the netem qdisc in `tc -s qdisc show` output.
fn parse_netem_dropped(text: &str) -> Option<u64> {
    let mut in_netem = false;
    for line in text.lines() {
        if line.starts_with("qdisc ") {
            in_netem = line.starts_with("qdisc netem ");
        } else if in_netem {
            if let Some(i) = line.find("(dropped ") {
                let rest = &line[i + "(dropped ".len()..];
                return rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|v| v.parse().ok());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_specs_and_device_names_are_refused_with_reasons() {
        let ok = LinuxImpairSpec { loss: 0.01, reorder: 0.01, duplicate: 0.005, delay: Duration::from_millis(1) };
        assert!(ok.validate().is_ok());
        for bad in [
            LinuxImpairSpec { loss: 1.5, ..ok.clone() },
            LinuxImpairSpec { duplicate: -0.1, ..ok.clone() },
            LinuxImpairSpec { reorder: f64::NAN, ..ok.clone() },
            LinuxImpairSpec { delay: Duration::ZERO, ..ok.clone() },
            LinuxImpairSpec { delay: Duration::from_secs(60), ..ok.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        for dev in ["", "a\"b", "waytoolongdevicename", "x y"] {
            let e = check_place(None, dev, &ok).expect_err("refused").to_string();
            assert!(e.contains("device name") || e.contains("host"), "{e}");
        }
    }

    #[test]
    fn ruleset_has_the_chain_on_the_device_and_only_the_asked_rules() {
        let spec = LinuxImpairSpec { loss: 0.01, reorder: 0.0, duplicate: 0.005, delay: Duration::ZERO };
        let r = nft_ruleset("t1", "lrtap0", Some("lrdrop0"), &spec);
        assert!(r.contains("hook egress device \"lrtap0\""), "{r}");
        assert!(r.contains("< 10000 counter name \"dropped\" fwd to \"lrdrop0\""), "{r}");
        assert!(r.contains("< 5000 meta mark set 0x4c520001 dup to \"lrtap0\""), "{r}");
        let none = nft_ruleset("t1", "lrtap0", None, &LinuxImpairSpec::default());
        assert!(!none.contains("numgen"), "{none}");
    }

    #[test]
    fn counters_are_parsed_from_nft_and_tc_output() {
        let nft = "table netdev t {\n\tcounter dropped {\n\t\tpackets 21 bytes 2058\n\t}\n\
                   \tcounter \"duplicated\" {\n\t\tpackets 35 bytes 3430\n\t}\n}\n";
        assert_eq!(parse_nft_counters(nft), vec![("dropped".into(), 21), ("duplicated".into(), 35)]);
        let tc = "qdisc netem 8001: root refcnt 2 limit 1000 loss 1%\n \
                  Sent 9438 bytes 99 pkt (dropped 3, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\n";
        assert_eq!(parse_netem_dropped(tc), Some(3));
        assert_eq!(parse_netem_dropped("qdisc noqueue 0: root\n Sent 1 bytes 1 pkt (dropped 9, x)\n"), None);
    }
}
