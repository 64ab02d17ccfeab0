//! The conventions every `linerate` command shares, checked on the real binary: typed JSON
//! (one document on stdout, numbers as numbers), durations with units, `--version`, shell
//! completions, `-v`/`RUST_LOG` logging, `linerate stats` seeing every long-running command
//! and dropping dead ones, `linerate tap --cleanup`, and the per-user run directory.

mod common;

use common::{serial, unavailable, Scratch, BIN, BLACKLIST, HOST, RULES};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run linerate with `args` (and `env`), printing its output for a failing test.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = Command::new(BIN).args(args).envs(env.iter().copied()).output().expect("linerate runs");
    eprintln!(
        "$ linerate {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run linerate with `--json` among `args`; it must succeed and print exactly one JSON
/// document of the shared shape on stdout, whose numbers are numbers. Returns the document.
fn json_of(args: &[&str], env: &[(&str, &str)]) -> Value {
    let out = run_env(args, env);
    assert!(out.status.success(), "linerate {} failed", args.join(" "));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout of linerate {} is not one JSON document: {e}", args.join(" ")));
    check_typed(&v, &args.join(" "));
    v
}

/// A string that is a formatted number ("49.64 µs", "2216", "97.5%", "1.50"): JSON must carry
/// such figures as numbers.
fn is_formatted_number(s: &str) -> bool {
    let tokens: Vec<&str> = s.split_whitespace().collect();
    let Some(first) = tokens.first() else { return false };
    let first = first.trim_end_matches(['%', 'x', '×']);
    tokens.len() <= 2 && first.parse::<f64>().is_ok_and(f64::is_finite)
}

/// The unit names the JSON convention allows.
const UNITS: [&str; 8] = ["s", "bit/s", "frame/s", "op/s", "B", "B/s", "count", "ratio"];

/// Check the shape `{"tables":[{"title","units","rows","summary"}]}` and the types: every
/// key with a unit holds numbers (or null with a note), no string holds a formatted number.
fn check_typed(v: &Value, what: &str) {
    let tables = v["tables"].as_array().unwrap_or_else(|| panic!("{what}: no tables array: {v}"));
    assert!(!tables.is_empty(), "{what}: no table");
    for t in tables {
        assert!(t["title"].is_string(), "{what}: a table without title: {t}");
        let units = t["units"].as_object().unwrap_or_else(|| panic!("{what}: no units object: {t}"));
        for (k, u) in units {
            assert!(UNITS.contains(&u.as_str().unwrap_or("")), "{what}: key {k} has unit {u}, not one of {UNITS:?}");
        }
        let rows = t["rows"].as_array().unwrap_or_else(|| panic!("{what}: no rows array: {t}"));
        let summary = t["summary"].as_object().unwrap_or_else(|| panic!("{what}: no summary object: {t}"));
        let objects = rows.iter().map(|r| r.as_object().unwrap_or_else(|| panic!("{what}: a row is not an object")));
        for obj in objects.chain(std::iter::once(summary)) {
            for (k, val) in obj {
                if let Some(s) = val.as_str() {
                    assert!(!is_formatted_number(s), "{what}: {k} is the string {s:?}, not a number");
                }
                if units.contains_key(k) {
                    // A figure with a unit is a number, or null when it could not be measured.
                    assert!(val.is_number() || val.is_null(), "{what}: {k} = {val} should be a number");
                }
                if k == "unit" {
                    assert!(UNITS.contains(&val.as_str().unwrap_or("")), "{what}: row unit {val}");
                }
            }
        }
    }
}

/// The rows of table `i`.
fn rows(v: &Value, i: usize) -> &Vec<Value> {
    v["tables"][i]["rows"].as_array().expect("rows")
}

/// A child process stopped and reaped on drop: SIGTERM (so it removes its shared memory and
/// namespace), then SIGKILL if it has not ended within two seconds.
struct Proc(Child);

impl Proc {
    /// Wait for the child to end by itself and collect its piped output.
    fn finish(mut self) -> Output {
        use std::io::Read;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        if let Some(mut s) = self.0.stdout.take() {
            s.read_to_end(&mut stdout).expect("stdout reads");
        }
        if let Some(mut s) = self.0.stderr.take() {
            s.read_to_end(&mut stderr).expect("stderr reads");
        }
        let status = self.0.wait().expect("the child ends");
        Output { status, stdout, stderr }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            signal(self, libc::SIGTERM);
            let end = Instant::now() + Duration::from_secs(2);
            while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start linerate in the background with `args` and `env`, output discarded.
fn spawn(args: &[&str], env: &[(&str, &str)]) -> Proc {
    Proc(
        Command::new(BIN)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("linerate starts"),
    )
}

/// Send `sig` to `p`.
fn signal(p: &Proc, sig: i32) {
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(p.0.id() as i32, sig) };
}

/// Poll `f` every 50 ms for up to `secs` seconds until it returns Some.
fn wait_for<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(t) = f() {
            return Some(t);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The (instance, command, pid) rows `linerate stats --json` lists (none if it fails).
fn stats(env: &[(&str, &str)]) -> Vec<(String, String, u64)> {
    let out = Command::new(BIN).args(["stats", "--json"]).envs(env.iter().copied()).output().expect("stats runs");
    if !out.status.success() {
        return Vec::new();
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("stats --json parses");
    check_typed(&v, "stats --json");
    let mut seen: Vec<(String, String, u64)> = rows(&v, 0)
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (s("instance"), s("command"), r["pid"].as_u64().expect("pid is a number"))
        })
        .collect();
    seen.dedup();
    seen
}

/// Namespaces that exist now.
fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip runs");
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
}

/// Deletes the named namespaces on drop (whatever a test leaves, also when it fails).
struct NsGuard(Vec<String>);

impl Drop for NsGuard {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).stderr(Stdio::null()).status();
        }
    }
}

/// A unique shared-memory link name for this test process.
fn shm_name(tag: &str) -> String {
    format!("cli-{tag}-{}", std::process::id())
}

#[test]
fn every_benchmark_prints_typed_json() {
    if !common::can_run(&["jq"]) {
        return;
    }
    let _one = serial();
    let cases: [&[&str]; 9] = [
        &["bench", "link", "--duration", "100ms", "--sizes", "64", "--kinds", "mem,shm", "--json"],
        &["bench", "udp", "--duration", "200ms", "--json"],
        &["bench", "udp", "--link", "af_xdp", "--duration", "200ms", "--json"],
        &["bench", "tcp", "--duration", "200ms", "--repeat", "1", "--json"],
        &["bench", "tcp", "--link", "af_xdp", "--duration", "200ms", "--repeat", "1", "--many", "200", "--json"],
        &["bench", "middlebox", "--duration", "50ms", "--sizes", "64", "--units", "1", "--swaps", "2", "--json"],
        &["bench", "collective", "--ranks", "2", "--json"],
        &["rdma", "bench", "--reps", "5", "--mib", "1", "--json"],
        &["spn", "bench", "--duration", "200ms", "--transports", "udp", "--json"],
    ];
    for args in cases {
        let v = json_of(args, &[]);
        // jq reads it too, and finds numbers where the figures are.
        let mut jq = Command::new("jq")
            .args(["-e", "[.tables[].rows[] | to_entries[] | select(.value | type == \"number\")] | length > 0"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("jq runs");
        use std::io::Write;
        jq.stdin.take().unwrap().write_all(v.to_string().as_bytes()).unwrap();
        assert!(jq.wait().unwrap().success(), "jq finds no number in linerate {}", args.join(" "));
    }
    // The comparison tables carry one unit per row and the peer's figure as a number.
    let v = json_of(&["bench", "link", "--duration", "100ms", "--sizes", "64", "--kinds", "mem", "--json"], &[]);
    let link = &rows(&v, 1)[0];
    assert!(link["frame_rate"].as_f64().is_some_and(|f| f > 1000.0), "{link}");
    assert_eq!(v["tables"][1]["units"]["frame_rate"], "frame/s");
    assert_eq!(v["tables"][1]["units"]["throughput"], "bit/s");
}

#[test]
fn the_other_commands_print_typed_json() {
    if !common::can_run(&[]) {
        return;
    }
    let _one = serial();
    let ping = json_of(&["ping", "--via", "mem", "-c", "3", "-i", "5ms", "--json"], &[]);
    assert_eq!(ping["tables"][0]["summary"]["replies"], 3);
    assert!(ping["tables"][0]["summary"]["rtt_median"].as_f64().is_some_and(|s| s > 0.0 && s < 1.0), "{ping}");
    assert!(rows(&ping, 0).iter().all(|r| r["rtt"].is_number() && r["bytes"] == 56), "{ping}");
    json_of(&["demo", "--json"], &[]);

    let dir = Scratch::new("cli-json");
    let model = dir.file("m.json");
    assert!(run_env(&["spn", "generate", "--vars", "6", "-o", &model], &[]).status.success());
    let compiled = json_of(&["spn", "compile", &model, "--json"], &[]);
    let inputs = rows(&compiled, 0).iter().find(|r| r["property"] == "inputs").expect("an inputs row");
    assert_eq!(inputs["value"], 6, "{compiled}");

    let trace = dir.file("t.pcap");
    let made = run_env(&["ids", "--rules", RULES, "--make-trace", &trace, "--background", "50", "--attacks", "5"], &[]);
    assert!(made.status.success());
    let fw = json_of(
        &["firewall", "--blacklist", BLACKLIST, "--input", &trace, "--output", &dir.file("o.pcap"), "--json"],
        &[],
    );
    assert!(fw["tables"][0]["summary"]["frames_processed"].as_u64().is_some_and(|n| n > 0), "{fw}");
    let ids = json_of(&["ids", "--rules", RULES, "--input", &trace, "--output", &dir.file("i.pcap"), "--json"], &[]);
    let alerts = rows(&ids, 0).iter().find(|r| r["counter"] == "alerts").expect("an alerts row");
    assert!(alerts["value"].as_u64().is_some_and(|n| n > 0), "{ids}");

    // iperf: the server's and the client's JSON, progress lines on stderr.
    let run_dir = dir.file("run");
    let env = [("LINERATE_RUN_DIR", run_dir.as_str())];
    let shm = shm_name("iperf-json");
    let server = Command::new(BIN)
        .args(["iperf", "-s", "--shm", &shm, "--duration", "20s", "-i", "200ms", "--json"])
        .envs(env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iperf -s starts");
    let server = Proc(server);
    let client = json_of(&["iperf", "-c", "10.0.0.1", "--shm", &shm, "-t", "1s", "-i", "200ms", "--json"], &env);
    let row = &rows(&client, 0)[0];
    assert!(row["goodput"].as_f64().is_some_and(|g| g > 1e6), "{client}");
    assert!(row["duration"].as_f64().is_some_and(|d| d > 0.5 && d < 5.0), "{client}");
    assert_eq!(client["tables"][0]["units"]["goodput"], "bit/s");
    let out = server.finish();
    let v: Value = serde_json::from_slice(&out.stdout).expect("iperf -s --json prints one JSON document");
    check_typed(&v, "iperf -s --json");
    assert_eq!(rows(&v, 0).len(), 1, "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("received"), "progress lines go to stderr");

    json_of(&["tap", "--cleanup", "--json"], &env);

    // A live firewall: `stats` and `middlebox stats` list it with numbers; --watch gives one
    // document per line.
    let name = format!("cli-fw-{}", std::process::id());
    let input = format!("shm-new:{}", shm_name("fw"));
    let fw =
        spawn(&["firewall", "--blacklist", BLACKLIST, "--input", &input, "--duration", "20s", "--name", &name], &env);
    let listed = wait_for(10, || stats(&env).into_iter().find(|s| s.0 == name && s.1 == "firewall"));
    assert!(listed.is_some(), "stats lists the firewall");
    let mb = json_of(&["middlebox", "stats", &name, "--json"], &env);
    let unit = rows(&mb, 0).iter().find(|r| r["element"] == "unit0").expect("a unit0 row");
    assert!(unit["rx_frames"].is_u64(), "{mb}");
    let watch = run_env(&["middlebox", "stats", &name, "--json", "--watch", "1"], &env);
    let lines: Vec<&[u8]> = watch.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "one document per refresh");
    for l in lines {
        check_typed(&serde_json::from_slice(l).expect("each line is a JSON document"), "middlebox stats --watch");
    }
    signal(&fw, libc::SIGTERM);
}

#[test]
fn tap_json_with_run_keeps_the_commands_output_off_stdout() {
    if !common::can_run(&["ping"]) {
        return;
    }
    let _one = serial();
    let prefix = format!("lr-cli-{}", std::process::id());
    let script = format!("ping -c 2 -i 0.2 -W 1 {HOST} && echo cli-marker-line");
    let out = run_env(&["tap", "--ns-prefix", &prefix, "--json", "--run", &script], &[]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON alone");
    check_typed(&v, "tap --json --run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cli-marker-line") && stderr.contains("2 received"), "the command's output is on stderr");
    let rx = rows(&v, 0).iter().find(|r| r["counter"] == "rx_frames").expect("an rx_frames row");
    assert!(rx["value"].as_u64().is_some_and(|n| n >= 2), "{v}");
    assert!(!namespaces().iter().any(|n| n.starts_with(&prefix)), "tap left its namespace");
}

#[test]
fn durations_take_units_and_bad_ones_get_one_sentence() {
    let t = Instant::now();
    let out = run_env(&["ping", "--via", "mem", "-c", "3", "-i", "100ms"], &[]);
    assert!(out.status.success());
    assert!(t.elapsed() >= Duration::from_millis(200), "-i 100ms waited between requests");
    for (args, why) in [
        (&["ping", "--via", "mem", "-i", "5parsecs"][..], "unknown unit"),
        (&["ping", "--via", "mem", "-i", "0"][..], "not a positive duration"),
        (&["bench", "link", "--duration", "2d"][..], "unknown unit"),
        (&["iperf", "-s", "--duration", "25h"][..], "longer than a day"),
        (&["tap", "--duration", "1.2.3s"][..], "not a duration"),
    ] {
        let out = run_env(args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} is refused");
        assert!(err.contains(why) && !err.contains("panicked"), "{args:?}: {err}");
    }
    // A bare number is seconds: the server stops after 0.3 s (and 300ms is the same).
    let dir = Scratch::new("cli-dur");
    let env = [("LINERATE_RUN_DIR", dir.0.to_str().unwrap())];
    for d in ["0.3", "300ms"] {
        let t = Instant::now();
        let out = run_env(&["iperf", "-s", "--shm", &shm_name("dur"), "--duration", d], &env);
        assert!(out.status.success());
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(5), "--duration {d} took {took:?}");
    }
}

#[test]
fn version_completions_and_help_examples() {
    let out = run_env(&["--version"], &[]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("linerate {}", env!("CARGO_PKG_VERSION"))));
    let dir = Scratch::new("cli-compl");
    for shell in ["bash", "zsh", "fish"] {
        let out = run_env(&["completions", shell], &[]);
        assert!(out.status.success() && out.stdout.len() > 1000, "{shell} completions");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("iperf") && text.contains("cleanup"), "{shell} completions name the commands and flags");
        if shell == "bash" {
            let path = dir.path("linerate.bash");
            std::fs::write(&path, &out.stdout).unwrap();
            let check = Command::new("bash").arg("-n").arg(&path).output().expect("bash runs");
            assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
        }
    }
    assert_eq!(run_env(&["completions", "tcsh"], &[]).status.code(), Some(2));
    for cmd in [&["--help"][..], &["tap", "--help"], &["bench", "udp", "--help"], &["spn", "serve", "--help"]] {
        let out = run_env(cmd, &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Examples:\n  linerate"), "{cmd:?} shows examples");
    }
    let text = String::from_utf8_lossy(&run_env(&["iperf", "--help"], &[]).stdout).to_string();
    assert!(text.contains("a bare number is seconds") && text.contains("<DURATION>"), "{text}");
}

#[test]
fn verbose_and_rust_log_log_to_stderr() {
    let quiet = run_env(&["ping", "--via", "mem", "-c", "1"], &[("RUST_LOG", "")]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains(" INFO "), "no logging without -v");
    let loud = run_env(&["-v", "ping", "--via", "mem", "-c", "1"], &[("RUST_LOG", "")]);
    assert!(loud.status.success());
    assert!(String::from_utf8_lossy(&loud.stderr).contains(" INFO linerate: starting"), "-v logs to stderr");
    assert!(!String::from_utf8_lossy(&loud.stdout).contains("INFO"), "logs stay off stdout");
    assert!(!String::from_utf8_lossy(&loud.stderr).contains("DEBUG"), "-v is info, not debug");
    let dir = Scratch::new("cli-log");
    let env = [("RUST_LOG", "linerate=debug"), ("LINERATE_RUN_DIR", dir.0.to_str().unwrap())];
    let debug = run_env(&["stats"], &env);
    assert!(String::from_utf8_lossy(&debug.stderr).contains("DEBUG linerate::statsfile: reading the run directory"));
    let vv = run_env(&["-vv", "stats"], &[("RUST_LOG", ""), env[1]]);
    assert!(String::from_utf8_lossy(&vv.stderr).contains("DEBUG"), "-vv is debug");
}

#[test]
fn stats_sees_iperf_server_and_spn_serve_and_drops_dead_instances() {
    let _one = serial();
    let dir = Scratch::new("cli-stats");
    let run_dir = dir.file("run");
    let env = [("LINERATE_RUN_DIR", run_dir.as_str())];
    let (shm, spn_shm) = (shm_name("stats"), shm_name("stats-spn"));
    let server = spawn(&["iperf", "-s", "--shm", &shm, "--duration", "60s"], &env);
    let pid = server.0.id() as u64;
    let listed = wait_for(10, || stats(&env).into_iter().find(|s| s.1 == "iperf -s" && s.2 == pid));
    assert!(listed.is_some(), "stats lists iperf -s");
    // spn serve opens a link another process made: a second server's.
    let _spn_link = spawn(&["iperf", "-s", "--shm", &spn_shm, "--duration", "60s"], &env);
    let serve = spawn(&["spn", "serve", "--vars", "4", "--shm", &spn_shm, "--limit", "60s"], &env);
    // The client is listed while it sends.
    let client = spawn(&["iperf", "-c", "10.0.0.1", "--shm", &shm, "-t", "3s"], &env);
    let cpid = client.0.id() as u64;
    assert!(wait_for(10, || stats(&env).into_iter().find(|s| s.1 == "iperf -c" && s.2 == cpid)).is_some());
    let spn_pid = serve.0.id() as u64;
    let listed = wait_for(10, || stats(&env).into_iter().find(|s| s.1 == "spn serve" && s.2 == spn_pid));
    let (spn_name, _, _) = listed.expect("stats lists spn serve");
    // SIGKILL: no chance to remove its entry; stats notices the process is gone.
    signal(&serve, libc::SIGKILL);
    drop(serve);
    let now = stats(&env);
    assert!(!now.iter().any(|s| s.0 == spn_name), "a killed instance is not listed: {now:?}");
    assert!(now.iter().any(|s| s.2 == pid), "the live one still is: {now:?}");
    assert!(!Path::new(&run_dir).join(format!("{spn_name}.json")).exists(), "its entry was removed");
    // A reused pid: an entry naming a live pid (ours) with another start time is dead too.
    let fake = serde_json::json!({"name": "reused", "command": "tap", "pid": std::process::id(),
        "started": 1, "namespaces": [], "counters": {"rx_frames": 5}});
    std::fs::write(Path::new(&run_dir).join("reused.json"), fake.to_string()).unwrap();
    assert!(!stats(&env).iter().any(|s| s.0 == "reused"), "a reused pid is not taken for the instance");
    assert!(!Path::new(&run_dir).join("reused.json").exists());
    // A clean stop removes the entry itself.
    signal(&server, libc::SIGTERM);
    let gone = wait_for(10, || (!stats(&env).iter().any(|s| s.2 == pid)).then_some(()));
    assert!(gone.is_some(), "iperf -s removed its entry on exit");
    assert!(!Path::new(&run_dir).join(format!("iperf-s-{shm}.json")).exists());
}

#[test]
fn tap_cleanup_removes_the_namespace_of_a_killed_tap_only() {
    if !common::can_run(&[]) {
        return;
    }
    let _one = serial();
    let dir = Scratch::new("cli-cleanup");
    let run_dir = dir.file("run");
    let env = [("LINERATE_RUN_DIR", run_dir.as_str())];
    let me = std::process::id();
    let (dead_prefix, live_prefix) = (format!("lr-cli-dead-{me}"), format!("lr-cli-live-{me}"));
    // Not linerate's: a name without the prefix, with a pid that does not run.
    let foreign = format!("cli-foreign-{me}-99999999-0");
    let mut guard = NsGuard(vec![foreign.clone()]);
    assert!(Command::new("ip").args(["netns", "add", &foreign]).status().unwrap().success());
    let victim = spawn(&["tap", "--ns-prefix", &dead_prefix, "--duration", "60s"], &env);
    let live = spawn(&["tap", "--ns-prefix", &live_prefix, "--duration", "60s"], &env);
    let (vpid, lpid) = (victim.0.id(), live.0.id());
    let (dead_ns, live_ns) = (format!("{dead_prefix}-{vpid}-0"), format!("{live_prefix}-{lpid}-0"));
    guard.0.extend([dead_ns.clone(), live_ns.clone()]);
    let both = wait_for(10, || {
        let n = namespaces();
        let s = stats(&env);
        (n.contains(&dead_ns) && n.contains(&live_ns) && s.len() == 2).then_some(())
    });
    assert!(both.is_some(), "both taps are up and listed");
    let has_tap =
        Command::new("ip").args(["netns", "exec", &dead_ns, "ip", "link", "show", "lrtap0"]).output().unwrap();
    assert!(has_tap.status.success(), "the TAP is in the namespace");
    signal(&victim, libc::SIGKILL);
    drop(victim);
    assert!(namespaces().contains(&dead_ns), "SIGKILL leaves the namespace behind");
    let v = json_of(&["tap", "--cleanup", "--json"], &env);
    let removed: Vec<&str> = rows(&v, 0).iter().filter_map(|r| r["namespace"].as_str()).collect();
    assert!(removed.contains(&dead_ns.as_str()), "{v}");
    assert!(!removed.contains(&live_ns.as_str()) && !removed.contains(&foreign.as_str()), "{v}");
    let n = namespaces();
    assert!(!n.contains(&dead_ns), "the killed run's namespace is gone");
    assert!(n.contains(&live_ns), "the live run's namespace is kept");
    assert!(n.contains(&foreign), "a namespace linerate did not name is kept");
    assert!(stats(&env).iter().all(|s| s.2 == lpid as u64), "the dead entry is gone, the live one listed");
    signal(&live, libc::SIGTERM);
    let gone = wait_for(10, || (!namespaces().contains(&live_ns)).then_some(()));
    assert!(gone.is_some(), "a clean stop removes its own namespace");
}

/// The uid of user `nobody`, or why the per-user test cannot run.
fn nobody() -> Result<u32, String> {
    if let Some(why) = unavailable(&["setpriv", "id"]) {
        return Err(why);
    }
    let out = Command::new("id").args(["-u", "nobody"]).output().map_err(|e| e.to_string())?;
    let uid = String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|_| "there is no user nobody".to_string())?;
    let probe = as_nobody_uid(uid, &["--version"], &[]).output();
    match probe {
        Ok(o) if o.status.success() => Ok(uid),
        _ => Err(format!("user nobody cannot run {BIN}")),
    }
}

/// Run linerate as user `uid` (setpriv and env exec, so the child's pid is linerate's) with
/// no run-directory variables but `env`.
fn as_nobody_uid(uid: u32, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new("setpriv");
    c.args([format!("--reuid={uid}"), format!("--regid={uid}"), "--clear-groups".into(), "--".into()]);
    c.args(["env", "-u", "LINERATE_RUN_DIR", "-u", "XDG_RUNTIME_DIR"]);
    c.args(env.iter().map(|(k, v)| format!("{k}={v}")));
    c.arg(BIN).args(args);
    c
}

#[test]
fn the_run_directory_is_per_user_and_private() {
    let uid = match nobody() {
        Ok(uid) => uid,
        Err(why) => panic!("NOT RUN: {why}"),
    };
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let shm = shm_name("nobody");
    let as_nobody = |args: &[&str], env: &[(&str, &str)]| as_nobody_uid(uid, args, env);
    let server = Proc(
        as_nobody(&["iperf", "-s", "--shm", &shm, "--duration", "30s"], &[]).stdout(Stdio::null()).spawn().unwrap(),
    );
    let dir = format!("/tmp/linerate-{uid}");
    let entry = Path::new(&dir).join(format!("iperf-s-{shm}.json"));
    assert!(wait_for(10, || entry.exists().then_some(())).is_some(), "nobody's entry is in {dir}");
    let meta = std::fs::metadata(&dir).unwrap();
    assert_eq!(meta.uid(), uid, "{dir} belongs to nobody");
    assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{dir} is private");
    let theirs = as_nobody(&["stats", "--json"], &[]).output().unwrap();
    assert!(String::from_utf8_lossy(&theirs.stdout).contains(&shm), "nobody's stats sees its instance");
    let mut ours = Command::new(BIN);
    let ours =
        ours.args(["stats", "--json"]).env_remove("LINERATE_RUN_DIR").env_remove("XDG_RUNTIME_DIR").output().unwrap();
    assert!(!String::from_utf8_lossy(&ours.stdout).contains(&shm), "root's stats does not list nobody's instance");
    drop(server);

    // $XDG_RUNTIME_DIR/linerate when the session has one; a directory of another user there is refused.
    let scratch = Scratch::new("cli-xdg");
    let xdg = scratch.path("xdg");
    std::fs::create_dir(&xdg).unwrap();
    std::os::unix::fs::chown(&xdg, Some(uid), None).unwrap();
    std::fs::set_permissions(&scratch.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let xdg_s = xdg.to_str().unwrap();
    let quick = ["iperf", "-s", "--shm", &shm_name("xdg"), "--duration", "200ms"];
    assert!(as_nobody(&quick, &[("XDG_RUNTIME_DIR", xdg_s)]).output().unwrap().status.success());
    let made = std::fs::metadata(xdg.join("linerate")).expect("$XDG_RUNTIME_DIR/linerate is made");
    assert_eq!((made.uid(), made.permissions().mode() & 0o777), (uid, 0o700));
    let planted = scratch.path("planted");
    std::fs::create_dir_all(planted.join("linerate")).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let refused = as_nobody(
        &["iperf", "-s", "--shm", &shm_name("planted"), "--duration", "200ms"],
        &[("XDG_RUNTIME_DIR", planted.to_str().unwrap())],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("not a directory owned by uid"), "{err}");
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    // Ours but open to others: refused too (and left as it is).
    let open = scratch.path("open");
    std::fs::create_dir_all(open.join("linerate")).unwrap();
    std::os::unix::fs::chown(open.join("linerate"), Some(uid), None).unwrap();
    std::fs::set_permissions(open.join("linerate"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let quick = ["iperf", "-s", "--shm", &shm_name("open"), "--duration", "200ms"];
    let refused = as_nobody(&quick, &[("XDG_RUNTIME_DIR", open.to_str().unwrap())]).output().unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("open to other users"), "{err}");
    let mode = std::fs::metadata(open.join("linerate")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755, "linerate does not change a directory's mode");
}
