//! iperf3 interop: stock `iperf3 -c` in the namespace against `linerate iperf3 -s` (TCP, UDP,
//! reverse, 4 streams, a busy server), and `linerate iperf3 -c` against a stock `iperf3 -s`
//! (TCP, UDP, reverse). Both sides' JSON is parsed and checked: no error, bytes moved, the
//! sender's and receiver's counts agree (exactly where the protocol lets them), a goodput that
//! is no broken transfer. Every run is bounded (-t 2) and leaves no namespace behind. Needs
//! root and iperf3; without them each test fails saying why.

mod common;

use common::{can_run, serial, Scratch, BIN, HOST, LINUX};
use serde_json::Value;
use std::process::{Command, Output};

/// Goodput below which a TCP transfer over the TAP counts as broken, bits/s.
const TCP_FLOOR: f64 = 50e6;
/// The UDP rate asked for, and the least of it that must arrive.
const UDP_RATE: &str = "100M";
const UDP_FLOOR: f64 = 80e6;

/// A namespace prefix unique to this test process and test.
fn prefix(test: &str) -> String {
    format!("ip3-{}-{test}", std::process::id())
}

/// Run `linerate iperf3 ARGS` under a hard time bound with its own namespace prefix; checks
/// afterwards that no namespace of that prefix is left.
fn linerate(test: &str, args: &[&str]) -> Output {
    let p = prefix(test);
    let out = Command::new("timeout")
        .args(["90", BIN, "iperf3", "--ns-prefix", &p])
        .args(args)
        .output()
        .expect("linerate runs");
    eprintln!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let list = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    let left: Vec<String> =
        String::from_utf8_lossy(&list.stdout).lines().filter(|l| l.starts_with(&p)).map(String::from).collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    out
}

/// Parse a JSON file (or fail saying what it holds).
fn json_file(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON ({e}): {text}"))
}

/// Parse a command's standard output as JSON.
fn json_stdout(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e})"))
}

/// A number at `path` ("a.b.c") of `v`.
fn num(v: &Value, path: &str) -> f64 {
    let mut x = v;
    for k in path.split('.') {
        x = &x[k];
    }
    x.as_f64().unwrap_or_else(|| panic!("no number at {path} in {v}"))
}

/// What a reader of `iperf3 -J` output takes from it: the schema's keys, bytes sent and
/// received and the receiver's bits/s. The same code reads stock iperf3's output and ours.
struct Totals {
    sent: f64,
    received: f64,
    bits_per_second: f64,
}

fn iperf3_totals(v: &Value) -> Totals {
    for key in ["start", "intervals", "end"] {
        assert!(v.get(key).is_some(), "no '{key}' in iperf3 JSON: {v}");
    }
    assert!(v["intervals"].as_array().is_some_and(|i| !i.is_empty()), "no intervals: {v}");
    assert!(num(&v["intervals"][0]["sum"], "bits_per_second") >= 0.0);
    Totals {
        sent: num(v, "end.sum_sent.bytes"),
        received: num(v, "end.sum_received.bytes"),
        bits_per_second: num(v, "end.sum_received.bits_per_second"),
    }
}

/// Run stock `iperf3 -c HOST FLAGS -J` against `linerate iperf3 -s --one-off`; returns
/// the client's JSON and linerate's.
fn stock_client(test: &str, flags: &str) -> (Value, Value) {
    let dir = Scratch::new(&format!("ip3-{test}"));
    let file = dir.file("client.json");
    let out = linerate(test, &["-s", "--one-off", "-J", "--run", &format!("iperf3 -c {HOST} {flags} -J > {file}")]);
    let client = json_file(&file);
    assert!(client.get("error").is_none(), "iperf3 reports an error: {}", client["error"]);
    assert!(out.status.success(), "linerate iperf3 -s failed: {:?}", out.status);
    let ours = json_stdout(&out);
    assert_eq!(ours["tests"].as_array().map(Vec::len), Some(1), "one test served: {ours}");
    assert!(ours["tests"][0]["error"].is_null(), "the server's test failed: {ours}");
    (client, ours["tests"][0].clone())
}

#[test]
fn stock_client_tcp_against_linerate_server() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (c, ours) = stock_client("tcp", "-t 2");
    let Totals { sent, received, bits_per_second: bps } = iperf3_totals(&c);
    assert!(sent > 0.0);
    // The server reads every byte the client wrote before it answers with its count.
    assert_eq!(received, sent, "receiver and sender disagree");
    assert_eq!(num(&ours, "bytes_received"), received, "linerate's own count differs from what it reported");
    assert!(bps > TCP_FLOOR, "goodput {bps} bit/s is below {TCP_FLOOR}");
}

#[test]
fn stock_client_udp_against_linerate_server() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (c, ours) = stock_client("udp", &format!("-t 2 -u -b {UDP_RATE}"));
    let sum = &c["end"]["sum"];
    let (bytes, packets, lost) = (num(sum, "bytes"), num(sum, "packets"), num(sum, "lost_packets"));
    assert!(bytes > 0.0 && packets > 0.0);
    assert!(lost <= packets * 0.05, "{lost} of {packets} datagrams lost");
    assert!(num(sum, "jitter_ms") >= 0.0);
    // What the client reports as received is what the linerate server counted.
    assert_eq!(num(&c, "end.sum_received.bytes"), num(&ours, "bytes_received"));
    let bps = num(&c, "end.sum_received.bits_per_second");
    assert!(bps > UDP_FLOOR, "UDP goodput {bps} bit/s is below {UDP_FLOOR}");
}

#[test]
fn stock_client_reverse_tcp_and_udp() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (c, ours) = stock_client("rev", "-t 2 -R");
    let (sent, received) = (num(&c, "end.sum_sent.bytes"), num(&c, "end.sum_received.bytes"));
    assert_eq!(sent, num(&ours, "bytes_sent"), "the client shows what the server sent");
    // The client stops counting when it sends TEST_END; what was still queued or in flight
    // (at most 4 MiB per stream queued, plus the time TEST_END takes to arrive) is not counted.
    assert!(received > 0.0 && received <= sent, "received {received} of {sent}");
    assert!(sent - received <= (16u64 << 20) as f64 + 0.1 * sent, "received {received} of {sent}");
    let bps = num(&c, "end.sum_received.bits_per_second");
    assert!(bps > TCP_FLOOR, "goodput {bps} bit/s is below {TCP_FLOOR}");

    let (c, ours) = stock_client("revudp", &format!("-t 2 -u -b {UDP_RATE} -R"));
    let sum = &c["end"]["sum"];
    assert!(num(sum, "packets") > 0.0 && num(sum, "lost_packets") <= num(sum, "packets") * 0.05);
    assert_eq!(num(&c, "end.sum_sent.bytes"), num(&ours, "bytes_sent"));
    let bps = num(&c, "end.sum_received.bits_per_second");
    assert!(bps > UDP_FLOOR, "UDP goodput {bps} bit/s is below {UDP_FLOOR}");
}

#[test]
fn stock_client_four_streams() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (c, _) = stock_client("par", "-t 2 -P 4");
    let streams = c["end"]["streams"].as_array().expect("per-stream results");
    assert_eq!(streams.len(), 4);
    for s in streams {
        let (tx, rx) = (num(s, "sender.bytes"), num(s, "receiver.bytes"));
        assert!(tx > 0.0 && rx == tx, "stream sent {tx}, received {rx}");
    }
    assert_eq!(num(&c, "end.sum_sent.bytes"), num(&c, "end.sum_received.bytes"));
    let bps = num(&c, "end.sum_received.bits_per_second");
    assert!(bps > TCP_FLOOR, "goodput {bps} bit/s is below {TCP_FLOOR}");
}

#[test]
fn stock_client_byte_count_and_omitted_start() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    const N: f64 = (20u64 << 20) as f64;
    for (name, flags) in [("n", "-n 20M"), ("nrev", "-n 20M -R")] {
        let (c, _) = stock_client(name, flags);
        assert_eq!(num(&c, "end.sum_sent.bytes"), N, "{flags}: the sender sends exactly the count");
        assert_eq!(num(&c, "end.sum_received.bytes"), N, "{flags}: the receiver gets all of it");
    }
    // -O 1: one second left out at the start, then 2 s measured on both sides.
    let (c, ours) = stock_client("omit", "-t 2 -O 1");
    let secs = num(&c, "end.sum_received.seconds");
    assert!((1.8..2.6).contains(&secs), "the server measured {secs} s");
    assert!((1.8..2.6).contains(&num(&ours, "seconds")));
    let (sent, received) = (num(&c, "end.sum_sent.bytes"), num(&c, "end.sum_received.bytes"));
    // The two sides drop their omitted bytes at their own moment: what is in flight then
    // counts on one side only.
    assert!((received - sent).abs() <= 0.05 * sent, "sent {sent}, received {received}");
}

#[test]
fn stock_client_both_ways() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (c, ours) = stock_client("bidir", "-t 2 --bidir");
    let (up_tx, up_rx) = (num(&c, "end.sum_sent.bytes"), num(&c, "end.sum_received.bytes"));
    assert!(up_tx > 0.0 && up_rx == up_tx, "client to server: sent {up_tx}, received {up_rx}");
    let (down_tx, down_rx) =
        (num(&c, "end.sum_sent_bidir_reverse.bytes"), num(&c, "end.sum_received_bidir_reverse.bytes"));
    assert!(down_rx > 0.0 && down_rx <= down_tx, "server to client: sent {down_tx}, received {down_rx}");
    assert_eq!(num(&ours, "bytes_sent"), down_tx);
    let bps = num(&c, "end.sum_received_bidir_reverse.bits_per_second");
    assert!(bps > TCP_FLOOR, "goodput {bps} bit/s is below {TCP_FLOOR}");
}

#[test]
fn busy_server_denies_a_second_client() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let dir = Scratch::new("ip3-busy");
    let (first, second) = (dir.file("first.json"), dir.file("second.json"));
    let script = format!("iperf3 -c {HOST} -t 3 -J > {first} & sleep 1; iperf3 -c {HOST} -t 1 -J > {second}; wait");
    let out = linerate("busy", &["-s", "-J", "--run", &script]);
    assert!(out.status.success(), "linerate iperf3 -s failed: {:?}", out.status);
    let (a, b) = (json_file(&first), json_file(&second));
    assert!(a.get("error").is_none(), "the first test failed: {}", a["error"]);
    let why = b["error"].as_str().unwrap_or_else(|| panic!("the second client was not refused: {b}"));
    assert!(why.contains("busy"), "the second client's error: {why}");
    let ours = json_stdout(&out);
    assert!(num(&ours, "denied") >= 1.0, "{ours}");
    assert!(num(&a, "end.sum_received.bytes") > 0.0);
}

/// Run `linerate iperf3 -c LINUX -t 2 FLAGS -J` against a stock `iperf3 -s -1 -J` it starts in
/// the namespace; returns linerate's JSON and the stock server's.
fn linerate_client(test: &str, flags: &[&str]) -> (Value, Value) {
    let dir = Scratch::new(&format!("ip3-{test}"));
    let file = dir.file("server.json");
    let mut args = vec!["-c", LINUX, "-t", "2", "-J"];
    args.extend_from_slice(flags);
    let run = format!("iperf3 -s -1 -J > {file}");
    args.extend_from_slice(&["--run", &run]);
    let out = linerate(test, &args);
    assert!(out.status.success(), "linerate iperf3 -c failed: {:?}", out.status);
    let server = json_file(&file);
    assert!(server.get("error").is_none(), "the stock server reports an error: {}", server["error"]);
    (json_stdout(&out), server)
}

#[test]
fn linerate_client_tcp_against_stock_server() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (ours, server) = linerate_client("ctcp", &[]);
    // Ours is read with the same code as stock iperf3's output.
    let Totals { sent, received, bits_per_second: bps } = iperf3_totals(&ours);
    assert!(ours["end"]["sum_sent_bidir_reverse"].is_null() && ours["start"]["test_start"]["protocol"] == "TCP");
    assert!(sent > 0.0 && received > 0.0 && received <= sent, "sent {sent}, received {received}");
    // The receiver's figure is the stock server's own count.
    assert_eq!(received, iperf3_totals(&server).received);
    assert!(bps > TCP_FLOOR, "goodput {bps} bit/s is below {TCP_FLOOR}");
    assert!((1.5..3.0).contains(&num(&ours, "end.sum_sent.seconds")));
}

#[test]
fn linerate_client_json_into_a_closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    // `linerate iperf3 -c … -J | head -c 10`, with the reader gone before the JSON is written.
    let p = prefix("pipe");
    let mut child = Command::new("timeout")
        .args(["90", BIN, "iperf3", "--ns-prefix", &p, "-c", LINUX, "-t", "1", "-J", "--run", "iperf3 -s -1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("linerate runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("linerate ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // Ended by SIGPIPE, after its clean-up (timeout(1) passes the signal on, or says 128 + it).
    let by_sigpipe = out.status.signal() == Some(libc::SIGPIPE) || out.status.code() == Some(128 + libc::SIGPIPE);
    assert!(by_sigpipe, "{:?}: {err}", out.status);
    let list = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&p), "a namespace was left behind");
}

#[test]
fn linerate_client_udp_against_stock_server() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (ours, server) = linerate_client("cudp", &["-u", "-b", UDP_RATE]);
    let totals = iperf3_totals(&ours);
    let rx = &ours["end"]["sum_received"];
    let (packets, lost) = (num(rx, "packets"), num(rx, "lost_packets"));
    assert!(packets > 0.0 && lost <= packets * 0.05, "{lost} of {packets} lost");
    assert_eq!(totals.received, iperf3_totals(&server).received);
    assert!(packets <= num(&ours, "end.sum_sent.packets"), "the server saw sequence numbers never sent");
    let bps = totals.bits_per_second;
    assert!(bps > UDP_FLOOR, "UDP goodput {bps} bit/s is below {UDP_FLOOR}");
}

#[test]
fn linerate_client_reverse_against_stock_server() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    let (ours, server) = linerate_client("crev", &["-R"]);
    assert_eq!(ours["start"]["test_start"]["reverse"], 1);
    let Totals { sent, received, bits_per_second: bps } = iperf3_totals(&ours);
    assert!(received > 0.0 && received <= sent, "sent {sent}, received {received}");
    assert_eq!(sent, iperf3_totals(&server).sent, "the sender's figure is the stock server's");
    assert!(bps > TCP_FLOOR, "goodput {bps} bit/s is below {TCP_FLOOR}");

    let (ours, _) = linerate_client("crevudp", &["-u", "-b", UDP_RATE, "-R"]);
    let rx = &ours["end"]["sum_received"];
    assert!(num(rx, "lost_packets") <= num(rx, "packets") * 0.05);
    let bps = iperf3_totals(&ours).bits_per_second;
    assert!(bps > UDP_FLOOR, "UDP goodput {bps} bit/s is below {UDP_FLOOR}");
}

#[test]
fn bad_options_get_one_sentence() {
    for args in [&["-c", LINUX, "-P", "0"][..], &["-c", LINUX, "-b", "fast"], &["-c", LINUX, "-t", "0"]] {
        let out = Command::new(BIN).arg("iperf3").args(args).output().expect("linerate runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.lines().any(|l| l.contains("error") || l.starts_with("linerate:")), "{args:?}: {err}");
    }
}

/// The median of some figures.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn server_goodput_beside_the_linux_server() {
    let _g = serial();
    if !can_run(&["iperf3"]) {
        return;
    }
    // Alternating runs over the same kind of TAP: stock iperf3 -c sending to the linerate
    // server, and the linerate client sending to the stock Linux server; each receiver's own
    // count.
    let (mut linerate_server, mut linux_server) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let (c, _) = stock_client(&format!("gl{round}"), "-t 2");
        linerate_server.push(num(&c, "end.sum_received.bits_per_second"));
        let (_, server) = linerate_client(&format!("gx{round}"), &[]);
        linux_server.push(num(&server, "end.sum_received.bits_per_second"));
    }
    let (a, b) = (median(linerate_server.clone()), median(linux_server.clone()));
    eprintln!(
        "iperf3 TCP goodput, median of 3 runs of 2 s: linerate server {:.0} bit/s {linerate_server:?}, \
         Linux server {:.0} bit/s {linux_server:?}, ratio {:.2}",
        a,
        b,
        a / b
    );
    assert!(a > TCP_FLOOR && b > TCP_FLOOR, "a goodput below {TCP_FLOOR}: {a} and {b}");
}
