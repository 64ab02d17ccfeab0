//! `linerate ids` as Snort and Suricata users drive it: `ids check` (table and JSON),
//! `--strict` refusing unknown keywords and unsupported options by file:line, no rules loaded
//! being an error, `--var`/`--vars` deciding what matches, an `alert http` rule mapped to TCP
//! on $HTTP_PORTS, alert_fast lines with packet timestamps, priority and classification, and
//! EVE JSON read by jq.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use link::capture::{CaptureWriter, Format};
use middlebox::frames::{self, Endpoints};
use wire::flags::{ACK, FIN, PSH, SYN};

const BIN: &str = env!("CARGO_BIN_EXE_linerate");

/// A temporary directory, removed on drop.
struct Tmp(PathBuf);

impl Tmp {
    fn new(tag: &str) -> Tmp {
        let p = std::env::temp_dir().join(format!("lr-cli-idst-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// `jq -c FILTER` over `input`: its output, or a panic naming the filter when jq fails or
/// prints nothing, `null` or `false`. (Not `jq -e`: jq 1.6 sets its exit status from the last
/// input alone, so a `select` that matches an earlier line of a multi-line input exits 4.)
fn jq(filter: &str, input: &str) -> String {
    let have = Command::new("jq").arg("--version").stdout(Stdio::null()).status().is_ok();
    assert!(have, "NOT RUN: jq is not installed, so the JSON cannot be checked with it (apt-get install jq)");
    let mut child = Command::new("jq")
        .args(["-c", filter])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let empty = out.is_empty() || out == "null" || out == "false";
    assert!(
        o.status.success() && !empty,
        "jq '{filter}' gave {out:?}: {}\ninput:\n{input}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

const RULES: &str = "\
# line 1: a comment\n\
alert tcp any any -> any any (msg:\"full\"; content:\"abc\"; sid:100; rev:1;)\n\
alert tcp any any -> any any (msg:\"tls state\"; content:\"abc\"; ssl_state:client_hello; sid:101; rev:2;)\n\
alert tcp any any -> any any (msg:\"typo\"; content:\"abc\"; frobnicate:3; sid:102;)\n\
alert dns (msg:\"dns service\"; content:\"x\"; sid:103;)\n\
alert tcp any any -> any any (msg:\"broken\"; content:; sid:104;)\n";

#[test]
fn check_lists_every_partial_and_broken_rule_as_a_table_and_as_json() {
    let t = Tmp::new("check");
    let f = t.file("mixed.rules", RULES);
    let (ok, out, err) = run(&["ids", "check", &f]);
    assert!(ok, "{err}");
    assert!(out.contains("5 rules, 1 fully supported, 3 partial, 1 not loaded"), "{out}");
    let row = |sid: &str, opt: &str| out.lines().any(|l| l.split_whitespace().any(|w| w == sid) && l.contains(opt));
    assert!(row("101", "ssl_state"), "{out}");
    assert!(row("102", "frobnicate") && out.contains("unknown keyword"), "{out}");
    assert!(row("103", "dns") && out.contains("application protocol"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("6 ") && l.contains("not loaded") && l.contains("content")), "{out}");
    assert!(
        !out.lines().any(|l| l.split_whitespace().any(|w| w == "100")),
        "the fully supported rule is not listed: {out}"
    );

    // JSON: the typed-table shape every command prints, counts in the summary.
    let (ok, json, err) = run(&["ids", "check", &f, "--json"]);
    assert!(ok, "{err}");
    assert_eq!(jq(".tables | length", &json), "1");
    let s = ".tables[0].summary";
    assert_eq!(jq(&format!("[{s}.rules, {s}.fully_supported, {s}.partial, {s}.not_loaded]"), &json), "[5,1,3,1]");
    assert_eq!(jq(&format!("{s}.file"), &json), format!("\"{f}\""));
    assert_eq!(jq(".tables[0].units.sid", &json), "\"count\"");
    let rows = ".tables[0].rows[]";
    assert_eq!(jq(&format!("[{rows} | select(.status != \"not loaded\") | .sid] | unique"), &json), "[101,102,103]");
    assert_eq!(jq(&format!("{rows} | select(.sid == 102) | .line"), &json), "4");
    assert_eq!(jq(&format!("{rows} | select(.status == \"unknown keyword\") | .option"), &json), "\"frobnicate\"");
    assert_eq!(jq(&format!("[{rows} | select(.status == \"not loaded\") | .line, .sid]"), &json), "[6,null]");
    // --strict fails after the listing, naming the first problem by file and line.
    let (ok, _, err) = run(&["ids", "check", &f, "--strict"]);
    assert!(!ok);
    assert!(err.contains(&format!("{f}:3: sid 101: option 'ssl_state' is not supported")), "{err}");
}

#[test]
fn strict_refuses_unknown_keywords_and_unsupported_options_by_file_and_line() {
    let t = Tmp::new("strict");
    let cap = t.path("none.pcap");
    write_capture(&cap, &[]);
    let unknown = t.file(
        "unknown.rules",
        "alert tcp any any -> any any (msg:\"ok\"; content:\"a\"; sid:1;)\n\nalert tcp any any -> any any (msg:\"typo\"; content:\"a\"; frobnicate:3; sid:2;)\n",
    );
    let (ok, _, err) = run(&["ids", "--rules", &unknown, "--strict", "--input", &cap]);
    assert!(!ok);
    assert_eq!(err.trim(), format!("linerate: rules: {unknown}:3: sid 2: unknown rule option 'frobnicate'"));
    let unsupported =
        t.file("unsup.rules", "alert tcp any any -> any any (msg:\"dce\"; content:\"a\"; dce_opnum:5; sid:7;)\n");
    let (ok, _, err) = run(&["ids", "--rules", &unsupported, "--strict", "--input", &cap]);
    assert!(!ok);
    assert!(err.contains(&format!("{unsupported}:1: sid 7: option 'dce_opnum' is not supported")), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Without --strict both load (as partial rules) and the run goes on.
    let (ok, _, err) = run(&["ids", "--rules", &unknown, "--input", &cap]);
    assert!(ok, "{err}");
    assert!(err.contains("2 rules loaded") && err.contains("1 partial"), "{err}");
    assert!(
        err.contains(&format!(
            "1 rules use unknown keywords and load as partial (the first: {unknown}:3: sid 2: 'frobnicate')"
        )),
        "{err}"
    );
}

#[test]
fn no_rules_loaded_is_an_error_in_one_sentence() {
    let t = Tmp::new("zero");
    let cap = t.path("none.pcap");
    write_capture(&cap, &[]);
    for (name, text, want) in [
        ("empty.rules", "", "the file holds no rules"),
        ("comments.rules", "# only\n# comments\n\n", "the file holds no rules"),
        (
            "broken.rules",
            "alert tcp any any -> any any (msg:\"x\"; content:; sid:1;)\nnot a rule\n",
            "all 2 rules have errors",
        ),
    ] {
        let f = t.file(name, text);
        for args in [vec!["ids", "--rules", &f, "--input", &cap], vec!["ids", "check", &f]] {
            let (ok, _, err) = run(&args);
            assert!(!ok, "{args:?} must fail");
            let last = err.lines().last().unwrap_or("");
            assert!(last.starts_with(&format!("linerate: no rules loaded from {f}: {want}")), "{args:?}: {err}");
        }
    }
}

/// One TCP conversation `client -> server:port` carrying `payload`, a millisecond a packet
/// from 2026-01-01 00:00:01 UTC; returns (stamp, frame) pairs.
fn conversation(client: Ipv4Addr, server: Ipv4Addr, port: u16, payload: &[u8], t0: u64) -> Vec<(u64, Vec<u8>)> {
    let c = Endpoints { src: client, dst: server, sport: 40000 + port % 1000, dport: port };
    let s = c.reversed();
    let n = payload.len() as u32;
    let frames = [
        frames::tcp(&c, 1000, 0, SYN, b""),
        frames::tcp(&s, 5000, 1001, SYN | ACK, b""),
        frames::tcp(&c, 1001, 5001, ACK, b""),
        frames::tcp(&c, 1001, 5001, PSH | ACK, payload),
        frames::tcp(&s, 5001, 1001 + n, ACK, b""),
        frames::tcp(&c, 1001 + n, 5001, FIN | ACK, b""),
        frames::tcp(&s, 5001, 1002 + n, FIN | ACK, b""),
        frames::tcp(&c, 1002 + n, 5002, ACK, b""),
    ];
    frames.into_iter().enumerate().map(|(i, f)| (t0 + i as u64 * 1_000_000, f.unwrap())).collect()
}

fn write_capture(path: &str, packets: &[(u64, Vec<u8>)]) {
    let mut w = CaptureWriter::new(std::fs::File::create(path).unwrap(), Format::Pcap).unwrap();
    for (t, f) in packets {
        w.write_frame(*t, f).unwrap();
    }
    w.flush().unwrap();
}

const T0: u64 = 1_767_225_601_000_000_000; // 2026-01-01 00:00:01 UTC

/// An HTTP attack to 192.168.1.10:80 and the same bytes to port 6000 (not in $HTTP_PORTS).
fn attack_capture(t: &Tmp) -> String {
    let client = Ipv4Addr::new(203, 0, 113, 5);
    let server = Ipv4Addr::new(192, 168, 1, 10);
    let mut p = conversation(client, server, 80, b"GET /evil.php HTTP/1.1\r\nHost: x\r\n\r\n", T0);
    p.extend(conversation(client, server, 6000, b"GET /evil.php HTTP/1.1\r\nHost: x\r\n\r\n", T0 + 100_000_000));
    let cap = t.path("attack.pcap");
    write_capture(&cap, &p);
    cap
}

const HTTP_RULE: &str = "alert http $EXTERNAL_NET any -> $HOME_NET any (msg:\"evil php\"; flow:to_server,established; \
content:\"/evil.php\"; classtype:web-application-attack; sid:1000001; rev:2;)\n";

/// Alert lines of a run of `ids` with `extra` arguments, in time order.
fn alerts(t: &Tmp, cap: &str, rules: &str, extra: &[&str]) -> Vec<String> {
    let log = t.path("alerts.txt");
    let mut args = vec!["ids", "--rules", rules, "--input", cap, "--alerts", &log];
    args.extend_from_slice(extra);
    let (ok, _, err) = run(&args);
    assert!(ok, "{args:?}: {err}");
    // Flows are inspected by several units: sort by time (the lines start with it).
    let mut v: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(String::from).collect();
    v.sort();
    v
}

#[test]
fn vars_decide_what_matches_and_alert_http_maps_to_the_http_ports() {
    let t = Tmp::new("vars");
    let cap = attack_capture(&t);
    let rules = t.file("http.rules", HTTP_RULE);
    // Default variables (HOME_NET any): only the conversation on port 80 is HTTP.
    let a = alerts(&t, &cap, &rules, &[]);
    assert_eq!(a.len(), 1, "{a:?}");
    assert!(a[0].ends_with("{TCP} 203.0.113.5:40080 -> 192.168.1.10:80"), "{a:?}");
    // HOME_NET elsewhere: no alert.
    assert!(alerts(&t, &cap, &rules, &["--var", "HOME_NET=10.0.0.0/8"]).is_empty());
    // HOME_NET from a file, EXTERNAL_NET its complement on the command line: the alert is back.
    let vars = t.file("vars.conf", "ipvar HOME_NET [192.168.1.0/24]\n");
    assert_eq!(alerts(&t, &cap, &rules, &["--vars", &vars, "--var", "EXTERNAL_NET=!$HOME_NET"]).len(), 1);
    // The attacker inside HOME_NET is not EXTERNAL_NET any more.
    assert!(alerts(
        &t,
        &cap,
        &rules,
        &["--var", "HOME_NET=[192.168.1.0/24,203.0.113.0/24]", "--var", "EXTERNAL_NET=!$HOME_NET"]
    )
    .is_empty());
    // Port 6000 counts as HTTP once $HTTP_PORTS says so.
    assert_eq!(alerts(&t, &cap, &rules, &["--var", "HTTP_PORTS=[80,6000]"]).len(), 2);
    // Bad variables are one sentence naming the problem.
    let (ok, _, err) = run(&["ids", "--rules", &rules, "--input", &cap, "--var", "HOME_NET=10.0.0.300/8"]);
    assert!(!ok && err.contains("--var HOME_NET=10.0.0.300/8") && err.lines().count() == 1, "{err}");
    let bad = t.file("bad.conf", "ipvar HOME_NET 10.0.0.0/8\nportvar HTTP_PORTS eighty\n");
    let (ok, _, err) = run(&["ids", "--rules", &rules, "--input", &cap, "--vars", &bad]);
    assert!(!ok && err.contains(&format!("{bad}:2:")), "{err}");
}

#[test]
fn alert_fast_and_eve_json_carry_the_packet_time_priority_and_classification() {
    let t = Tmp::new("eve");
    let cap = attack_capture(&t);
    let rules = t.file(
        "http.rules",
        &format!("{HTTP_RULE}alert tcp any any -> any 6000 (msg:\"prio\"; content:\"evil\"; priority:4; sid:7;)\n"),
    );
    let eve = t.path("eve.json");
    let a = alerts(&t, &cap, &rules, &["--eve", &eve]);
    assert_eq!(a.len(), 2, "{a:?}");
    // The data segment is the 4th packet of each conversation: 3 ms after its start.
    assert_eq!(
        a[0],
        "01/01-00:00:01.003000  [**] [1:1000001:2] \"evil php\" [**] [Classification: Web Application Attack] [Priority: 1] {TCP} 203.0.113.5:40080 -> 192.168.1.10:80"
    );
    assert_eq!(
        a[1],
        "01/01-00:00:01.103000  [**] [1:7:0] \"prio\" [**] [Priority: 4] {TCP} 203.0.113.5:40000 -> 192.168.1.10:6000"
    );
    let text = std::fs::read_to_string(&eve).unwrap();
    assert_eq!(text.lines().count(), 2);
    // jq reads it line by line; select the HTTP alert and check every field.
    let http = jq("select(.alert.signature_id == 1000001)", &text);
    assert_eq!(jq(".timestamp", &http), "\"2026-01-01T00:00:01.003000+0000\"");
    assert_eq!(
        jq("[.event_type, .src_ip, .src_port, .dest_ip, .dest_port, .proto]", &http),
        r#"["alert","203.0.113.5",40080,"192.168.1.10",80,"TCP"]"#
    );
    assert_eq!(
        jq(".alert | [.action, .gid, .signature_id, .rev, .signature, .category, .severity]", &http),
        r#"["allowed",1,1000001,2,"evil php","Web Application Attack",1]"#
    );
    assert_eq!(jq(".flow_id | type", &http), "\"number\"");
    let ids = jq("[.flow_id] | .[0]", &text);
    assert_eq!(ids.lines().count(), 2, "two flows, two ids: {ids}");
    assert_ne!(ids.lines().next(), ids.lines().nth(1), "different flows have different ids");
    // --eve - writes the records to standard output (the report goes on stdout only without it).
    let (ok, out, err) = run(&["ids", "--rules", &rules, "--input", &cap, "--eve", "-", "--output", "none"]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 2, "only the EVE records on stdout: {out}");
    assert_eq!(jq(".event_type", &out), "\"alert\"\n\"alert\"");
    assert!(err.contains("alerts"), "the report goes to stderr: {err}");
}

#[test]
fn ids_forwards_every_frame_and_alerts_while_ips_drops_the_attacks() {
    let t = Tmp::new("mode");
    let cap = attack_capture(&t);
    let rules = t.file(
        "both.rules",
        &format!("{HTTP_RULE}alert tcp any any -> any 6000 (msg:\"six\"; content:\"evil\"; sid:7;)\n"),
    );
    let mut input = link::pcap::read_frames(std::path::Path::new(&cap)).unwrap();
    input.sort();
    for (mode, action) in [(None, "allowed"), (Some("--ips"), "blocked")] {
        let (out, eve) = (t.path("out.pcap"), t.path("eve.json"));
        let mut args = vec!["ids", "--rules", &rules, "--input", &cap, "--output", &out, "--eve", &eve];
        args.extend(mode);
        let (ok, _, err) = run(&args);
        assert!(ok, "{args:?}: {err}");
        let text = std::fs::read_to_string(&eve).unwrap();
        assert_eq!(text.lines().count(), 2, "one alert per attack: {text}");
        assert_eq!(jq(".alert.action", &text), format!("\"{action}\"\n\"{action}\""));
        let mut output = link::pcap::read_frames(std::path::Path::new(&out)).unwrap();
        output.sort();
        if mode.is_none() {
            assert_eq!(output, input, "the IDS forwards every frame, attacks included");
        } else {
            assert_eq!(output.len(), input.len() - 2, "the IPS drops the two attack packets");
            assert!(output.iter().all(|f| !f.windows(9).any(|w| w == b"/evil.php")), "no attack left");
        }
    }
}
