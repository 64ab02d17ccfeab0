//! TCP interop with the real Linux stack through `linerate tap`: 200 MB each way through
//! `nc` (clean, and with the kernel impairing Linux's side: netem, or where the kernel has no
//! netem its nftables+NFQUEUE substitute), a 50 MB object fetched by curl, and a tshark check
//! of a capture. Needs root; without it (or a tool) each test says why and fails under CI
//! (CI=true), where it must run.

mod common;

use common::{can_run, serial, sha256_file, skip_unless, tap_run, Scratch, HOST, LINUX};

/// Bytes moved each way in the bulk tests.
const BULK: u64 = 200_000_000;
/// Hard bound on every `linerate tap` run, seconds (the tests take well under a minute).
const LIMIT: &str = "90";
/// The impairment of Linux's side of the TAP in the impaired variants (`--linux-impair`):
/// 1% loss, 1% of the packets held back by 1 ms, 0.5% duplication (netem:
/// `loss 1% duplicate 0.5% reorder 99% delay 1ms`).
const LINUX_IMPAIR: &str = "0.01,0.01,0.005,1000";

/// Whether a bulk test impairs Linux's side of the TAP.
#[derive(Clone, Copy, PartialEq)]
enum Impair {
    /// A clean path.
    No,
    /// `--linux-impair LINUX_IMPAIR`: the kernel impairs what Linux sends into the TAP.
    Linux,
}

/// Extra `linerate tap` flags for `imp`.
fn impair_flags(imp: Impair) -> Vec<&'static str> {
    match imp {
        Impair::No => vec![],
        Impair::Linux => vec!["--linux-impair", LINUX_IMPAIR],
    }
}

/// Whether an impaired variant can run (nc, and netem or the substitute's tools).
fn can_impair() -> bool {
    can_run(&["nc"]) && skip_unless(testbed::linux_impair::unavailable())
}

/// Assert from `linerate tap`'s stderr that the impairment happened: drops, duplicates and
/// delays each above zero (netem reports only drops; what it does not count is not checked).
fn assert_impaired(out: &std::process::Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("linux impairment (")).expect("the impairment counters are printed");
    for key in ["dropped", "duplicated", "delayed"] {
        let value = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {key}= in '{line}'"));
        if value != "n/a" {
            let n: u64 = value.parse().unwrap_or_else(|_| panic!("{key}={value} in '{line}'"));
            assert!(n > 0, "no packet was {key}: '{line}'");
        }
    }
}

/// Write `BULK` random bytes to a new file in `dir`; returns its path.
fn random_input(dir: &Scratch) -> String {
    let input = dir.file("in");
    let st = std::process::Command::new("head")
        .args(["-c", &BULK.to_string(), "/dev/urandom"])
        .stdout(std::fs::File::create(&input).unwrap())
        .status();
    assert!(st.unwrap().success(), "cannot write the input file");
    input
}

/// Assert that `output` holds exactly what `input` holds.
fn assert_same(input: &str, output: &str) {
    let (a, b) = (sha256_file(input), sha256_file(output));
    assert_eq!(a.1, BULK, "input size");
    assert_eq!(a, b, "sha256 and length differ between {input} and {output}");
}

/// Linux sends 200 MB with `nc` to the TCP echo and receives them back.
fn linux_to_linerate_echo(name: &str, imp: Impair) {
    let _one_at_a_time = serial();
    let dir = Scratch::new(name);
    let (input, output) = (random_input(&dir), dir.file("out"));
    let script = format!("nc -N {HOST} 7 < {input} > {output}");
    let mut flags = vec!["--duration", LIMIT];
    flags.extend(impair_flags(imp));
    let out = tap_run(&script, &flags);
    assert!(out.status.success(), "nc through the echo failed");
    assert_same(&input, &output);
    if imp == Impair::Linux {
        assert_impaired(&out);
    }
}

/// `--tcp-send` sends 200 MB to `nc -l` on the Linux side.
fn linerate_to_linux_send(name: &str, imp: Impair) {
    let _one_at_a_time = serial();
    let dir = Scratch::new(name);
    let (input, output) = (random_input(&dir), dir.file("out"));
    let script = format!("nc -l -p 5001 > {output}");
    let to = format!("{LINUX}:5001");
    let mut flags = vec!["--duration", LIMIT, "--tcp-send", &to, "--send-file", &input];
    flags.extend(impair_flags(imp));
    let out = tap_run(&script, &flags);
    assert!(out.status.success(), "the send or nc -l failed");
    assert_same(&input, &output);
    if imp == Impair::Linux {
        assert_impaired(&out);
    }
}

#[test]
fn linux_sends_200_mb_through_the_tcp_echo_and_gets_them_back() {
    if can_run(&["nc"]) {
        linux_to_linerate_echo("tcp-echo", Impair::No);
    }
}

#[test]
fn linerate_sends_200_mb_to_nc_listening_on_linux() {
    if can_run(&["nc"]) {
        linerate_to_linux_send("tcp-send", Impair::No);
    }
}

#[test]
fn echo_of_200_mb_survives_netem_loss_reordering_duplication_and_delay() {
    if can_impair() {
        linux_to_linerate_echo("tcp-echo-netem", Impair::Linux);
    }
}

#[test]
fn send_of_200_mb_survives_netem_loss_reordering_duplication_and_delay() {
    if can_impair() {
        linerate_to_linux_send("tcp-send-netem", Impair::Linux);
    }
}

#[test]
fn curl_fetches_50_mb_from_the_http_responder() {
    if !can_run(&["curl"]) {
        return;
    }
    const SIZE: usize = 50_000_000;
    let _one_at_a_time = serial();
    let dir = Scratch::new("http");
    let output = dir.file("body");
    let script = format!("curl -sS --fail --max-time 60 -o {output} http://{HOST}/size/{SIZE} && curl -sS -o /dev/null -w '%{{http_code}}\n' http://{HOST}/nothing");
    let out = tap_run(&script, &["--duration", LIMIT]);
    assert!(out.status.success(), "curl failed");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().next(), Some("404"), "an unknown path is not found");
    let mut expected = vec![0u8; SIZE];
    apps::pattern::fill(0, &mut expected);
    let want = {
        use sha2::{Digest, Sha256};
        format!("{:x}", Sha256::digest(&expected))
    };
    assert_eq!(sha256_file(&output), (want, SIZE as u64), "body differs from the pattern");
}

#[test]
fn capture_shows_full_handshake_options_and_no_errors_or_retransmissions() {
    if !can_run(&["tshark", "nc", "curl"]) {
        return;
    }
    let _one_at_a_time = serial();
    let dir = Scratch::new("tcp-pcap");
    let (input, pcap) = (dir.file("in"), dir.file("host.pcap"));
    std::fs::write(&input, (0..1_000_000u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>()).unwrap();
    let (echoed, sent) = (dir.file("echoed"), dir.file("sent"));
    let script = format!(
        "nc -l -p 5001 > {sent} & nc -N {HOST} 7 < {input} > {echoed} && curl -sS --fail -o /dev/null http://{HOST}/size/1000000 && wait"
    );
    let to = format!("{LINUX}:5001");
    let out = tap_run(&script, &["--duration", LIMIT, "--pcap", &pcap, "--tcp-send", &to, "--send-file", &input]);
    assert!(out.status.success(), "the clean run failed");
    assert_eq!(sha256_file(&echoed), sha256_file(&input));
    assert_eq!(sha256_file(&sent), sha256_file(&input));
    let tshark = |filter: &str, fields: &[&str]| -> Vec<String> {
        let mut c = std::process::Command::new("tshark");
        c.args(["-n", "-r", &pcap, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-Y", filter]);
        if !fields.is_empty() {
            c.args(["-T", "fields", "-E", "separator=|"]);
            fields.iter().for_each(|f| {
                c.args(["-e", f]);
            });
        }
        let o = c.output().expect("tshark runs");
        assert!(o.status.success(), "tshark failed: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect()
    };
    // Our SYN (to nc -l) and SYN-ACKs (from the echo and HTTP) carry all four options.
    let opts = [
        "tcp.flags.ack",
        "tcp.options.mss_val",
        "tcp.options.wscale.shift",
        "tcp.options.sack_perm",
        "tcp.options.timestamp.tsval",
    ];
    let syns = tshark(&format!("tcp.flags.syn == 1 && ip.src == {HOST}"), &opts);
    eprintln!("our SYNs (ack|mss|wscale|sack|tsval):\n{}", syns.join("\n"));
    assert!(
        syns.iter().any(|l| l.starts_with("0|")) && syns.iter().filter(|l| l.starts_with("1|")).count() >= 2,
        "{syns:?}"
    );
    for l in &syns {
        assert!(l.split('|').all(|f| !f.is_empty()), "a handshake segment lacks an option: {l}");
    }
    // Linux's software checksum writes a zero result as 0xffff (CSUM_MANGLED_0, valid per
    // RFC 1624), which tshark flags as bad; only that exact case from the Linux side is excused.
    let bad = tshark(
        &format!(
            "_ws.malformed || ip.checksum.status == \"Bad\" || (tcp.checksum.status == \"Bad\" \
             && !(ip.src == {LINUX} && tcp.checksum == 0xffff && tcp.checksum_calculated == 0x0000))"
        ),
        &[],
    );
    assert!(bad.is_empty(), "malformed or bad-checksum packets:\n{}", bad.join("\n"));
    let retx = tshark("tcp.analysis.retransmission || tcp.analysis.spurious_retransmission", &[]);
    assert!(retx.is_empty(), "retransmissions in a clean run:\n{}", retx.join("\n"));
    assert!(tshark("tcp", &[]).len() > 1000, "the capture holds the transfers");
}

/// `linerate bench tcp --impairment-grid`: both senders, linerate's and Linux's, move the
/// bytes over a TAP with loss on their egress, and the bytes are checked (a short run; the
/// full grid is a benchmark, not a test).
#[test]
fn the_impairment_grid_benchmark_runs_both_senders_and_checks_the_bytes() {
    if !(can_run(&["curl", "cmp", "nc", "nstat"]) && can_impair()) {
        return;
    }
    let _one = serial();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
        .args(["bench", "tcp", "--impairment-grid", "--grid-bytes", "3000000", "--grid-rows", "1% loss"])
        .args(["--grid-limit-secs", "60", "--json"])
        .output()
        .expect("linerate runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the grid failed:\n{stdout}\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("the JSON parses");
    let rows = v["tables"][0]["rows"].as_array().expect("a table of rows");
    // "1% loss" matches two rows: loss alone, and loss with reordering and duplication.
    assert_eq!(rows.len(), 2, "{stdout}");
    for row in rows {
        for side in ["linerate_sends", "linux_sends"] {
            let secs = row[side].as_f64().unwrap_or_else(|| panic!("{side} is a number of seconds: {row}"));
            assert!(secs > 0.0 && secs < 60.0, "{side}: {row}");
        }
        let ours = row["linerate_retransmits"].as_u64().unwrap_or(0);
        assert!(ours > 0, "1% loss on linerate's egress made it retransmit: {row}");
    }
    let ns = std::process::Command::new("ip").args(["netns", "list"]).output().expect("ip runs");
    assert!(!String::from_utf8_lossy(&ns.stdout).contains("lr-grid"), "the grid's namespaces were left behind");
}
