//! What Linux and hostile traffic send cannot stop or lock out a linerate host on a TAP:
//! fragmented pings and UDP datagrams up to 65,507 bytes, a packet from an off-link source, a
//! SYN flood of 100,000 spoofed SYNs while curl keeps connecting, and 20,000 sequential
//! HTTP/1.0 connections (TIME-WAIT). Needs root and the Python venv (`make setup`); without
//! them every test fails saying why.

mod common;

use common::{can_run, counters, serial, sha256_file, skip_unless, tap_run, venv_python, Scratch, HOST, LINUX};

#[test]
fn pings_of_1473_8000_and_65000_bytes_from_linux_get_every_reply() {
    if !can_run(&["ping"]) {
        return;
    }
    let _one = serial();
    let script = format!(
        "for s in 1473 8000 65000; do ping -c 5 -i 0.05 -W 2 -s $s {HOST} | grep 'packets transmitted' || exit 1; done"
    );
    let out = tap_run(&script, &["--json"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ping failed: {text}");
    assert_eq!(text.matches("5 packets transmitted, 5 received").count(), 3, "{text}");
    let c = counters(&out.stdout);
    common::assert_rx_accounting(&c);
    assert!(c["ipv4_reassembled"] >= 15 && c["ipv4_fragmented_sent"] >= 15, "{c:?}");
}

#[test]
fn linux_ping_with_record_route_sees_the_host_in_the_route() {
    if !can_run(&["ping"]) {
        return;
    }
    let _one = serial();
    let out = tap_run(&format!("ping -R -c 2 -W 1 {HOST}"), &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let route: Vec<&str> =
        text.split("RR:").nth(1).unwrap_or("").split("\n\n").next().unwrap_or("").split_whitespace().collect();
    assert!(route.contains(&HOST), "the echo reply's recorded route lacks {HOST}: {text}");
}

#[test]
fn udp_echo_of_1473_8000_and_65507_byte_datagrams_through_socat_keeps_hashes() {
    if !can_run(&["socat", "head"]) {
        return;
    }
    let _one = serial();
    let dir = Scratch::new("bigudp");
    let sizes = [1473usize, 8000, 65507];
    let mut script = String::new();
    for n in sizes {
        let (i, o) = (dir.file(&format!("in{n}")), dir.file(&format!("out{n}")));
        // One read of the file is one datagram (-b above the size); the echo is one datagram.
        script +=
            &format!("head -c {n} /dev/urandom > {i} && socat -b 65536 -T 3 - UDP:{HOST}:7 < {i} > {o} || exit 1; ");
    }
    let out = tap_run(&script, &[]);
    assert!(out.status.success(), "socat failed");
    for n in sizes {
        let (a, b) = (sha256_file(&dir.file(&format!("in{n}"))), sha256_file(&dir.file(&format!("out{n}"))));
        assert_eq!(a.1, n as u64);
        assert_eq!(a, b, "the echo of a {n}-byte datagram differs");
    }
}

#[test]
fn a_packet_from_an_off_link_source_is_counted_and_the_host_keeps_answering() {
    let python = venv_python();
    if !skip_unless(common::unavailable(&["ping"]).or(python.clone().err())) {
        return;
    }
    let _one = serial();
    let py = python.unwrap();
    let dir = Scratch::new("offlink");
    let send = dir.file("send.py");
    std::fs::write(
        &send,
        format!(
            r#"
from scapy.all import Ether, IP, ICMP, TCP, sendp, get_if_hwaddr
mac = get_if_hwaddr("lrtap0")
dst = "02:00:0a:4d:00:02"
frames = [Ether(src=mac, dst=dst) / IP(src=s, dst="{HOST}") / ICMP() for s in ("192.168.99.1", "0.0.0.0", "127.0.0.1", "224.0.0.9", "10.77.0.255")]
frames.append(Ether(src=mac, dst=dst) / IP(src="192.168.99.1", dst="{HOST}") / TCP(dport=80, flags="S"))
sendp(frames, iface="lrtap0", verbose=False)
"#
        ),
    )
    .unwrap();
    let script = format!("ping -c 2 -W 1 {HOST} >/dev/null && {py} {send} && ping -c 3 -i 0.1 -W 1 {HOST}");
    let out = tap_run(&script, &["--json"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the host stopped answering: {text}");
    assert!(text.contains("3 packets transmitted, 3 received"), "ping's output is on stderr under --json: {text}");
    let c = counters(&out.stdout);
    assert_eq!(c.get("rx_drop_ipv4_no_route"), Some(&2), "{c:?}");
    assert_eq!(c.get("rx_drop_ipv4_martian_src"), Some(&4), "{c:?}");
    common::assert_rx_accounting(&c);
}

#[test]
fn a_flood_of_100000_spoofed_syns_leaves_99_percent_of_curl_requests_successful() {
    let python = venv_python();
    if !skip_unless(common::unavailable(&["curl"]).or(python.clone().err())) {
        return;
    }
    let _one = serial();
    let py = python.unwrap();
    let dir = Scratch::new("synflood");
    let flood = format!("{} syn-flood lrtap0 02:00:0a:4d:00:02 {HOST} 100000 5000", common::HOSTILE_FRAMES);
    let (go, codes) = (dir.file("go"), dir.file("codes"));
    // curl starts a request every 100 ms while the flood runs, each with a 5 s limit.
    let script = format!(
        "{py} {flood} {go} & F=$!; while [ ! -e {go} ]; do sleep 0.2; done; \
         for i in $(seq 200); do (curl -s -o /dev/null -m 5 -w '%{{http_code}}\\n' http://{HOST}/size/1000 >> {codes}) & sleep 0.1; done; \
         wait $F; wait"
    );
    let out = tap_run(&script, &["--json", "--duration", "300"]);
    assert!(out.status.success(), "the flood script failed");
    let codes = std::fs::read_to_string(&codes).unwrap_or_default();
    let ok = codes.lines().filter(|l| l.trim() == "200").count();
    let c = counters(&out.stdout);
    common::assert_rx_accounting(&c);
    eprintln!("curl: {ok} of 200 requests answered; counters {c:?}");
    assert!(ok >= 198, "only {ok} of 200 curl requests succeeded during the flood");
    assert!(c["tcp_syncookies_sent"] > 90_000, "{c:?}");
}

#[test]
fn twenty_thousand_sequential_http_1_0_connections_from_linux_all_succeed() {
    let python = venv_python();
    if !skip_unless(common::unavailable(&[]).or(python.clone().err())) {
        return;
    }
    let _one = serial();
    let py = python.unwrap();
    let dir = Scratch::new("http20k");
    let client = dir.file("client.py");
    std::fs::write(
        &client,
        format!(
            r#"
import socket, sys
ok = 0
for i in range(20000):
    s = socket.create_connection(("{HOST}", 80), timeout=5)
    s.sendall(b"GET /size/100 HTTP/1.0\r\n\r\n")
    got = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        got += d
    s.close()
    if got.startswith(b"HTTP/1.0 200") or got.startswith(b"HTTP/1.1 200"):
        ok += 1
    else:
        print("request %d: %r" % (i, got[:80]))
        sys.exit(1)
print("ok %d" % ok)
"#
        ),
    )
    .unwrap();
    let out = tap_run(&format!("{py} {client}"), &["--json"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a connection failed: {text}");
    assert!(text.contains("ok 20000"), "the client's output is on stderr under --json: {text}");
    let c = counters(&out.stdout);
    common::assert_rx_accounting(&c);
    assert_eq!(c.get("rx_drop_tcp_table_full").copied().unwrap_or(0), 0, "{c:?}");
    let _ = LINUX;
}

#[test]
fn four_thousand_readers_that_never_read_stay_under_the_memory_budget_and_new_clients_are_served() {
    if !can_run(&["python3", "curl"]) {
        return;
    }
    let _one = serial();
    let dir = Scratch::new("stalled");
    let script = dir.file("stall.py");
    // 4,096 connections each asking for 100 MB and never reading (a 4 KiB receive buffer):
    // the host's send buffers fill. Its resident memory is read from /proc while they hang,
    // a new client fetches a page, then every stalled socket is closed with unread data (a
    // reset). Prints "rss_kib N" and "served N".
    std::fs::write(
        &script,
        format!(
            r#"
import socket, sys, time, subprocess
pid = int(sys.argv[1])
def rss():
    for line in open(f"/proc/{{pid}}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
socks = []
for i in range(4096):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("{HOST}", 80))
    s.send(b"GET /size/100000000 HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
time.sleep(4)
peak = rss()
print("rss_kib", peak, flush=True)
page = subprocess.run(["curl", "-s", "-m", "10", "http://{HOST}/size/1000"], capture_output=True).stdout
print("served", len(page), flush=True)
for s in socks:
    s.close()
time.sleep(2)
print("rss_after_kib", rss(), flush=True)
"#
        ),
    )
    .unwrap();
    // sh's parent is the linerate process (ip netns exec runs sh in its place).
    let out = tap_run(&format!("ulimit -n 16384; python3 {script} $PPID"), &["--json", "--max-sessions", "8192"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let value = |key: &str| -> u64 {
        let line =
            text.lines().find(|l| l.starts_with(&format!("{key} "))).unwrap_or_else(|| panic!("no {key}: {text}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let (rss, served, rss_after) = (value("rss_kib"), value("served"), value("rss_after_kib"));
    eprintln!("resident: {} MiB with 4,096 stalled readers, {} MiB after they closed", rss / 1024, rss_after / 1024);
    assert!(rss < 256 * 1024, "resident memory {rss} KiB is over the 256 MiB budget");
    assert_eq!(served, 1000, "a new client was not served");
    let c = counters(&out.stdout);
    common::assert_rx_accounting(&c);
    assert!(c["tcp_established_passive"] >= 4097, "{c:?}");
    assert!(c["tcp_mem_peak_bytes"] <= 256 << 20, "{c:?}");
    // Their buffers came back: what stays is at most the pools' blocks.
    assert!(c.get("tcp_mem_bytes").copied().unwrap_or(0) <= 32 << 20, "{c:?}");
}

#[test]
fn a_linux_client_killed_with_sigkill_mid_transfer_is_reset_and_the_host_serves_the_next() {
    if !can_run(&["curl"]) {
        return;
    }
    let _one = serial();
    // A 1 GB download killed after a second (the kernel resets the connection for the dead
    // process); then a new client fetches a page.
    let script = format!(
        "curl -s -o /dev/null http://{HOST}/size/1000000000 & P=$!; sleep 1; kill -9 $P; wait $P; \
         echo got $(curl -s -m 10 http://{HOST}/size/1000 | wc -c)"
    );
    let out = tap_run(&script, &["--json"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("got 1000"), "the next client was not served: {text}");
    let c = counters(&out.stdout);
    common::assert_rx_accounting(&c);
    assert!(c.get("tcp_resets_received").copied().unwrap_or(0) >= 1, "the reset of the killed client: {c:?}");
}

/// Two linerate processes on a shared-memory link: the client is killed with SIGKILL mid-
/// transfer (no chance to mark its end closed); the server notices through the link's lock
/// within a second, reports what it received and exits cleanly; a new server and client on a
/// new link then run a whole test (the machine recovered: no segment or lock left behind).
#[test]
fn an_iperf_client_killed_with_sigkill_on_the_shm_link_is_noticed_and_the_server_reports() {
    if !can_run(&[]) {
        return;
    }
    let _one = serial();
    let name = format!("kill9-{}", std::process::id());
    let server = |name: &str| {
        std::process::Command::new(common::BIN)
            .args(["iperf", "-s", "--shm", name, "--duration", "60s", "--json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let client = |name: &str, secs: &str| {
        std::process::Command::new(common::BIN)
            .args(["iperf", "-c", "10.0.0.1", "--shm", name, "-t", secs])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let s = server(&name);
    let mut c = client(&name, "30s");
    std::thread::sleep(std::time::Duration::from_millis(2000));
    c.kill().unwrap(); // SIGKILL
    let _ = c.wait();
    let killed_at = std::time::Instant::now();
    let out = s.wait_with_output().unwrap();
    let took = killed_at.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the server failed: {err}");
    assert!(took < std::time::Duration::from_secs(5), "the server noticed the dead client only after {took:?}");
    assert!(err.contains("the link's peer is gone") && err.contains("received"), "no report of the dead peer: {err}");
    assert!(!std::path::Path::new(&format!("/dev/shm/linerate-{name}")).exists(), "the segment outlived the server");
    // A new pair on the same name runs a whole test.
    let s = server(&name);
    let c = client(&name, "1s").wait().unwrap();
    let out = s.wait_with_output().unwrap();
    assert!(c.success() && out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The 32 hostile cases of issue 25 from scapy on the Linux side (blind RST/SYN/ACK/FIN/data
/// and bogus SACK on a live connection, ICMP errors quoting it, malformed TCP options and flag
/// sets, lying IP and UDP lengths, overlapping, oversize, tiny, duplicate and never-completed
/// fragments, 2,000 slowloris connections, 10,000 mutated segments): after each the host still
/// answers a ping and a fresh TCP echo, the live connection still echoes, and the receive
/// accounting read from `linerate stats --json` holds exactly; at the end too.
#[test]
fn thirty_two_hostile_cases_leave_the_host_serving_and_its_accounting_exact() {
    let python = venv_python();
    if !skip_unless(common::unavailable(&["ping"]).or(python.clone().err())) {
        return;
    }
    let _one = serial();
    let py = python.unwrap();
    // sh's parent is the linerate process: the script reads its counters with `linerate stats`
    // after each case and checks the receive accounting identity (naming the case if not).
    let script = format!("{py} {} lrtap0 02:00:0a:4d:00:02 {HOST} {} $PPID", common::HOSTILE_CASES, common::BIN);
    let out = tap_run(&script, &["--json", "--duration", "600", "--max-sessions", "8192"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a hostile case failed: {text}");
    assert!(text.contains("32 of 32 hostile cases passed"), "{text}");
    assert!(text.contains("receive accounting held after each of 32 cases"), "{text}");
    let c = counters(&out.stdout);
    common::assert_rx_accounting(&c);
    assert!(c.get("tcp_challenge_acks").copied().unwrap_or(0) > 0, "no challenge ACK for the blind attacks: {c:?}");
    let dropped: u64 = c.iter().filter(|(k, _)| k.starts_with("rx_drop_")).map(|(_, v)| v).sum();
    assert!(dropped > 1_000, "{c:?}");
}
