//! `jq` parses every `--json`: the commands that take `--json` are found by walking the
//! command tree (`linerate [PATH] --help`), so a new one cannot be forgotten; each runs on a
//! small case (shared memory, or a TAP or veth between namespaces this test creates) and its
//! standard output goes through the real `jq`. Keys are unique and identifier-like
//! (snake_case, not starting with a digit) and figures are numbers, not formatted strings.

mod common;

use common::{Scratch, BIN, BLACKLIST, RULES};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The subcommands `linerate PATH --help` lists (hidden ones are not listed).
fn subcommands(path: &[String]) -> Vec<String> {
    let out = Command::new(BIN).args(path).arg("--help").output().expect("linerate runs");
    assert!(out.status.success(), "linerate {} --help failed", path.join(" "));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut in_commands = false;
    let mut names = Vec::new();
    for line in text.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
        } else if in_commands && line.trim().is_empty() {
            in_commands = false;
        } else if in_commands {
            if let Some(name) = line.split_whitespace().next().filter(|n| *n != "help") {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// True if `linerate PATH --help` lists a `--json` option (`--json` or `-J, --json`).
fn takes_json(path: &[String]) -> bool {
    let out = Command::new(BIN).args(path).arg("--help").output().expect("linerate runs");
    String::from_utf8_lossy(&out.stdout).lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("--json")
            || l.split_once(", ").is_some_and(|(short, rest)| short.len() == 2 && rest.starts_with("--json"))
    })
}

/// Every command path (space-joined) whose definition has a `--json` option.
fn json_commands() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        if !path.is_empty() && takes_json(&path) {
            found.insert(path.join(" "));
        }
        for sub in subcommands(&path) {
            todo.push([path.clone(), vec![sub]].concat());
        }
    }
    found
}

/// Any JSON value, checked while it is parsed: no object repeats a key (serde_json's `Value`
/// would keep the last one silently), every key is identifier-like.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

/// snake_case ASCII, not starting with a digit.
fn identifier_like(k: &str) -> bool {
    k.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && k.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_none<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        let mut seen = HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if !identifier_like(&k) {
                return Err(de::Error::custom(format!("key {k:?} is not identifier-like (snake_case)")));
            }
            if !seen.insert(k.clone()) {
                return Err(de::Error::custom(format!("key {k:?} appears twice in one object")));
            }
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// A string that is a figure formatted for people ("16.38 kB", "9.41 Gbit/s", "97.5%").
fn formatted_figure(s: &str) -> bool {
    let t: Vec<&str> = s.split_whitespace().collect();
    let number = |x: &str| x.parse::<f64>().is_ok_and(f64::is_finite);
    match t.as_slice() {
        [one] => one.strip_suffix('%').is_some_and(number),
        [n, unit] => number(n) && unit.chars().any(|c| c.is_alphabetic()) && unit.len() <= 8 && !unit.contains(':'),
        _ => false,
    }
}

/// Every string value anywhere in `v` that is a formatted figure, with its key path.
fn figures_as_strings(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if formatted_figure(s) => out.push(format!("{at} = {s:?}")),
        serde_json::Value::Array(a) => {
            a.iter().enumerate().for_each(|(i, x)| figures_as_strings(x, &format!("{at}[{i}]"), out))
        }
        serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| figures_as_strings(x, &format!("{at}.{k}"), out)),
        _ => {}
    }
}

/// Check one command's standard output: `jq` parses it (every document, one or several), each
/// document is an object with unique identifier-like keys and no figure as a string; in the
/// tables format every key with a unit holds numbers (or null).
fn check_output(what: &str, stdout: &[u8]) {
    assert!(!stdout.iter().all(u8::is_ascii_whitespace), "{what}: nothing on stdout");
    let mut jq = Command::new("jq")
        .args(["-e", "type == \"object\""])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jq runs");
    jq.stdin.take().expect("stdin").write_all(stdout).expect("jq reads");
    let jq = jq.wait_with_output().expect("jq ends");
    assert!(
        jq.status.success(),
        "{what}: jq rejects the output ({}): {}\n{}",
        jq.status,
        String::from_utf8_lossy(&jq.stderr),
        String::from_utf8_lossy(stdout)
    );
    for doc in serde_json::Deserializer::from_slice(stdout).into_iter::<Checked>() {
        if let Err(e) = doc {
            panic!("{what}: {e}\n{}", String::from_utf8_lossy(stdout));
        }
    }
    for doc in serde_json::Deserializer::from_slice(stdout).into_iter::<serde_json::Value>() {
        let v = doc.expect("parsed above");
        let mut bad = Vec::new();
        figures_as_strings(&v, "", &mut bad);
        assert!(bad.is_empty(), "{what}: figures carried as strings: {bad:?}");
        let Some(tables) = v.get("tables").and_then(|t| t.as_array()) else { continue };
        for t in tables {
            let units = t["units"].as_object().map(|u| u.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
            let rows = t["rows"].as_array().into_iter().flatten().chain(std::iter::once(&t["summary"]));
            for row in rows {
                for k in &units {
                    let x = &row[k.as_str()];
                    assert!(x.is_number() || x.is_null(), "{what}: {k} has a unit but holds {x} in {row}");
                }
            }
        }
    }
}

/// The run directory of this test's instances (so `stats` sees only them).
fn run_dir() -> String {
    std::env::temp_dir().join(format!("lr26-jq-run-{}", std::process::id())).to_string_lossy().into_owned()
}

/// linerate with this test's run directory.
fn linerate() -> Command {
    let mut c = Command::new(BIN);
    c.env("LINERATE_RUN_DIR", run_dir());
    c
}

/// Run linerate with `args`; it must succeed. Returns its output.
fn run(args: &[&str]) -> Output {
    let out = linerate().args(args).output().expect("linerate runs");
    eprintln!("$ linerate {}\n--- stderr\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "linerate {} failed", args.join(" "));
    out
}

/// A child linerate, killed and reaped on drop.
struct Bg(Option<Child>);

impl Bg {
    fn start(args: &[&str]) -> Bg {
        let child = linerate().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        Bg(Some(child.expect("linerate starts")))
    }

    /// Wait (bounded) for it to end; it must succeed.
    fn finish(mut self, what: &str) -> Output {
        let mut child = self.0.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let out = child.wait_with_output().expect("output");
        eprintln!("$ {what}\n--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what} failed ({})", out.status);
        out
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A shared-memory link name unique to this test run.
fn shm(tag: &str) -> String {
    format!("lr26-jq-{tag}-{}", std::process::id())
}

/// The outputs of every command that takes `--json`, by command path; each case is small.
fn outputs(dir: &Scratch) -> BTreeMap<&'static str, Vec<u8>> {
    let mut o = BTreeMap::new();
    let model = dir.file("m.json");
    let inputs = dir.file("x.csv");
    run(&["spn", "generate", "--vars", "6", "-o", &model, "--samples", "20", "--samples-out", &inputs]);
    let trace = dir.file("t.pcap");
    run(&["ids", "--rules", RULES, "--make-trace", &trace, "--background", "30", "--attacks", "3"]);

    o.insert("demo", run(&["demo", "--json"]).stdout);
    o.insert("ping", run(&["ping", "--via", "mem", "-c", "2", "-i", "5ms", "--json"]).stdout);
    o.insert("tap", run(&["tap", "--cleanup", "--json"]).stdout);
    // Long-running ones, seen by `stats` and `middlebox stats` while they run.
    let host =
        Bg::start(&["host", "--link", &format!("shm:{}", shm("host")), "--ip", "10.0.0.2/24", "-t", "3s", "--json"]);
    let name = format!("lr26-jq-fw-{}", std::process::id());
    let input = format!("shm-new:{}", shm("fw"));
    let fw = Bg::start(&["firewall", "--blacklist", BLACKLIST, "--input", &input, "--duration", "3s", "--name", &name]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !linerate().args(["middlebox", "stats", &name]).output().is_ok_and(|o| o.status.success()) {
        assert!(Instant::now() < deadline, "the firewall did not show up in middlebox stats");
        std::thread::sleep(Duration::from_millis(50));
    }
    o.insert("stats", run(&["stats", "--json"]).stdout);
    o.insert("middlebox stats", run(&["middlebox", "stats", &name, "--json"]).stdout);
    o.insert("host", host.finish("host -t 3s --json").stdout);
    fw.finish("firewall --duration 3s");
    let out = dir.file("o.pcap");
    o.insert(
        "firewall",
        run(&["firewall", "--blacklist", BLACKLIST, "--input", &trace, "--output", &out, "--json"]).stdout,
    );
    o.insert("ids", run(&["ids", "--rules", RULES, "--input", &trace, "--output", &out, "--json"]).stdout);
    o.insert("ids check", run(&["ids", "check", RULES, "--json"]).stdout);
    o.insert("spn compile", run(&["spn", "compile", &model, "--json"]).stdout);
    o.insert("spn eval", run(&["spn", "eval", &model, &inputs, "--json"]).stdout);
    o.insert("spn bench", run(&["spn", "bench", "--duration", "100ms", "--transports", "udp", "--json"]).stdout);
    o.insert("rdma bench", run(&["rdma", "bench", "--reps", "2", "--mib", "1", "--json"]).stdout);
    o.insert(
        "bench link",
        run(&["bench", "link", "--duration", "50ms", "--sizes", "64", "--kinds", "mem,shm", "--json"]).stdout,
    );
    o.insert("bench udp", run(&["bench", "udp", "--duration", "100ms", "--json"]).stdout);
    o.insert("bench tcp", run(&["bench", "tcp", "--duration", "100ms", "--repeat", "1", "--json"]).stdout);
    o.insert(
        "bench middlebox",
        run(&["bench", "middlebox", "--duration", "50ms", "--sizes", "64", "--units", "1", "--swaps", "2", "--json"])
            .stdout,
    );
    o.insert("bench collective", run(&["bench", "collective", "--ranks", "2", "--json"]).stdout);
    o.insert("kmeans", run(&["kmeans", "--ranks", "2", "--samples", "2000", "--iters", "2", "--json"]).stdout);

    // Two processes on one shared-memory link: iperf and iperf3 (server and client).
    let link = shm("iperf");
    let server = Bg::start(&["iperf", "-s", "--shm", &link, "--duration", "20s", "--json"]);
    o.insert("iperf", run(&["iperf", "-c", "10.0.0.1", "--shm", &link, "-t", "300ms", "--json"]).stdout);
    let server_out = server.finish("iperf -s");
    assert!(server_out.stdout.starts_with(b"{"), "iperf -s --json printed its document");
    // iperf3 against stock iperf3 on a TAP, both ways (the client's output is in iperf3's schema).
    let server =
        run(&["iperf3", "-s", "-1", "-J", "--ns-prefix", "lr26jq", "--run", "iperf3 -c 10.77.0.2 -t 1 > /dev/null"]);
    check_output("iperf3 -s -J", &server.stdout);
    o.insert(
        "iperf3",
        run(&["iperf3", "-c", "10.77.0.1", "-t", "1", "-J", "--ns-prefix", "lr26jq", "--run", "iperf3 -s -1"]).stdout,
    );

    // On a TAP in a namespace of its own: the SPN service queried from Linux, and an RDMA
    // node written to from the Linux side (the command's --run goes to files).
    let answers = dir.file("query.json");
    let query = format!("{BIN} spn query --server 10.77.0.2:5005 --input {inputs} --json > {answers}");
    run(&["spn", "serve", "--tap", "--model", &model, "--transport", "udp", "--ns-prefix", "lr26jq", "--run", &query]);
    o.insert("spn query", std::fs::read(&answers).expect("spn query wrote its JSON"));
    let written = dir.file("write.json");
    let write = format!(
        "{BIN} rdma write --af-packet lrtap0 --ip 10.77.0.3/24 --to 10.77.0.2 --key 0x10001 --size 64KiB --limit 30s --json > {written}"
    );
    o.insert(
        "rdma serve",
        run(&[
            "rdma",
            "serve",
            "--tap",
            "--region",
            "64KiB",
            "--until-notified",
            "64KiB",
            "--limit",
            "60s",
            "--run",
            &write,
            "--json",
        ])
        .stdout,
    );
    o.insert("rdma write", std::fs::read(&written).expect("rdma write wrote its JSON"));
    o
}

#[test]
fn jq_parses_every_json_output_and_keys_are_identifiers() {
    if !common::can_run(&["jq", "iperf3"]) {
        return;
    }
    let _serial = common::serial();
    let commands = json_commands();
    assert!(commands.len() >= 20, "the walk found only {commands:?}");
    let dir = Scratch::new("json-jq");
    let outputs = outputs(&dir);
    let covered: BTreeSet<String> = outputs.keys().map(|k| k.to_string()).collect();
    let missing: Vec<&String> = commands.difference(&covered).collect();
    assert!(missing.is_empty(), "commands with --json that this test does not run yet (add a case): {missing:?}");
    for (what, stdout) in &outputs {
        check_output(what, stdout);
        // Every --json but iperf3's (iperf3's own schema) is in the tables format.
        if *what != "iperf3" {
            let v: serde_json::Value = serde_json::Deserializer::from_slice(stdout)
                .into_iter()
                .next()
                .and_then(Result::ok)
                .unwrap_or_else(|| panic!("{what}: no JSON document"));
            assert!(v["tables"].is_array(), "{what}: not the tables format: {v}");
        }
    }
}

#[test]
fn the_key_check_catches_repeats_bad_names_and_formatted_figures() {
    let parse = |s: &str| serde_json::from_str::<Checked>(s).map(|_| ()).map_err(|e| e.to_string());
    assert!(parse(r#"{"a": 1, "b": {"c_2": [1, {"d": null}]}}"#).is_ok());
    assert!(parse(r#"{"goodput": 1, "goodput": 2}"#).unwrap_err().contains("appears twice"));
    assert!(parse(r#"{"64b_rtt": 1}"#).unwrap_err().contains("not identifier-like"));
    assert!(parse(r#"{"frames in": 1}"#).unwrap_err().contains("not identifier-like"));
    assert!(formatted_figure("16.38 kB") && formatted_figure("97.5%") && formatted_figure("9.41 Gbit/s"));
    assert!(!formatted_figure("0000000000001234") && !formatted_figure("10.0.0.1") && !formatted_figure("rdma write"));
}
