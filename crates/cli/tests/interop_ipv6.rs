//! IPv6 interop with the real Linux stack over TAP (issue 27): `linerate tap` gives the host
//! fd77::2/64 (and the link-local address of its MAC) and the Linux side fd77::1/64. Linux's
//! `ping -6` (sizes that fragment included), `ndisc6` and `ip -6 neigh` talk to it; tshark
//! finds nothing malformed in the capture. Needs root; without it each test says why and fails.

mod common;

use common::{can_run, serial, skip_unless, tap_run, venv_python};
use std::process::Command;

/// The host's IPv6 address and its link-local address (from its MAC 02:00:0a:4d:00:02).
const HOST6: &str = "fd77::2";
const HOST_LL: &str = "fe80::aff:fe4d:2";

#[test]
fn linux_ping6_gets_every_reply_at_every_size_and_over_the_link_local_address() {
    if !can_run(&["ping"]) {
        return;
    }
    let script = format!(
        "ping -6 -c 50 -i 0.01 -W 1 {HOST6} && ping -6 -c 5 -i 0.01 -s 3000 -W 1 {HOST6} && \
         ping -6 -c 3 -i 0.05 -s 60000 -W 1 {HOST6} && ping -6 -c 3 -i 0.01 -W 1 {HOST_LL}%lrtap0"
    );
    let out = tap_run(&script, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ping -6 failed");
    for line in ["50 packets transmitted, 50 received", "5 packets transmitted, 5 received"] {
        assert!(text.contains(line), "{line}: {text}");
    }
    assert_eq!(text.matches("3 packets transmitted, 3 received").count(), 2, "{text}");
    assert!(text.contains("60008 bytes from fd77::2"), "{text}");
}

#[test]
fn ndisc6_and_ip_neigh_see_the_host_by_its_mac() {
    if !can_run(&["ndisc6", "ping"]) {
        return;
    }
    let script =
        format!("ndisc6 -r 3 {HOST6} lrtap0 && ping -6 -c 1 -W 1 {HOST6} && ping -6 -c 1 -W 1 {HOST_LL}%lrtap0 && ip -6 neigh show dev lrtap0");
    let out = tap_run(&script, &[]);
    let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert!(out.status.success(), "ndisc6 failed");
    assert!(text.contains("target link-layer address: 02:00:0a:4d:00:02"), "{text}");
    for addr in [HOST6, HOST_LL] {
        let line = text.lines().find(|l| l.starts_with(addr)).unwrap_or_else(|| panic!("{addr} not in: {text}"));
        assert!(line.contains("lladdr 02:00:0a:4d:00:02"), "{line}");
    }
}

#[test]
fn an_ipv6_capture_decodes_in_tshark_without_malformed_packets_or_bad_checksums() {
    if !can_run(&["tshark", "ping", "ndisc6"]) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("linerate-interop6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("host6.pcapng");
    let script = format!(
        "ndisc6 {HOST6} lrtap0; ping -6 -c 3 -i 0.01 -s 3000 -W 1 {HOST6}; ping -6 -c 2 -W 1 {HOST_LL}%lrtap0; true"
    );
    let out = tap_run(&script, &["--pcap", pcap.to_str().unwrap()]);
    assert!(out.status.success());
    let tshark = |filter: &str| -> String {
        let o = Command::new("tshark")
            .args(["-n", "-r", pcap.to_str().unwrap(), "-Y", filter])
            .output()
            .expect("tshark runs");
        assert!(o.status.success(), "tshark failed: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let all = tshark("ipv6");
    let bad = tshark("_ws.malformed || _ws.expert.severity >= \"error\" || icmpv6.checksum.status == \"Bad\"");
    // DAD and the announcement, the solicitation's answer, echoes in fragments, reassembled.
    let filters = ["icmpv6.type == 135", "icmpv6.type == 136", "icmpv6.type == 129", "ipv6.fragment"];
    let missing: Vec<&str> = filters.into_iter().filter(|f| tshark(f).is_empty()).collect();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{all}");
    assert!(missing.is_empty(), "nothing matches {missing:?} in the capture:\n{all}");
    assert!(all.lines().count() >= 20, "expected NDP, fragmented echoes and replies; got:\n{all}");
    assert!(bad.is_empty(), "malformed or bad-checksum packets:\n{bad}");
}

/// The hostile IPv6 cases from scapy on the Linux side (forged advertisements for other hosts'
/// addresses and for the host's own, a solicitation flood from 5,000 sources, a flood of 1,000
/// router advertisements with prefixes, Neighbor Discovery that crossed a router or lies,
/// extension-header chains that never end, routing header type 0, a hop-by-hop flood,
/// overlapping, tiny and never-completed fragments): after each the host still answers
/// `ping -6` and its receive accounting, read from `linerate stats --json`, holds exactly.
#[test]
fn hostile_ipv6_cases_leave_the_host_answering_and_its_accounting_exact() {
    let python = venv_python();
    if !skip_unless(common::unavailable(&["ping"]).or(python.clone().err())) {
        return;
    }
    let _one = serial();
    let py = python.unwrap();
    let script = format!("{py} {} lrtap0 02:00:0a:4d:00:02 {HOST6} {} $PPID", common::HOSTILE_CASES6, common::BIN);
    let out = tap_run(&script, &["--json", "--duration", "300"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a hostile case failed: {text}");
    assert!(text.contains("10 of 10 hostile IPv6 cases passed"), "{text}");
    assert!(text.contains("receive accounting held after each of 10 cases"), "{text}");
    let c = common::counters(&out.stdout);
    common::assert_rx_accounting(&c);
    let get = |name: &str| c.get(name).copied().unwrap_or(0);
    // Bounded: the router table and the neighbour cache never grew past their limits.
    assert_eq!(get("ndp_router_adverts_accepted"), 8, "routers learned");
    assert_eq!(get("rx_drop_ndp_router_table_full"), 992);
    assert!(get("rx_drop_ndp_conflict") >= 50);
    assert!(get("rx_drop_ndp_advert_no_entry") >= 512);
    assert!(get("rx_drop_ipv6_ext_too_long") >= 100);
    assert!(get("rx_drop_ipv6_ext_routing_header") >= 100);
    assert!(get("rx_drop_ipv6_frag_overlap") >= 49);
}

/// `linerate host --ip6` on AF_PACKET over a veth between two namespaces: Linux's `ping -6`
/// (sizes that fragment included) reaches it, and its accounting holds at exit.
#[test]
fn a_host_on_af_packet_with_an_ipv6_address_answers_linux_over_veth() {
    host_with_an_ipv6_address_answers_linux_over_veth("af_packet");
}

/// The same on AF_XDP: the steering program hands the host its IPv6 and its solicitations.
#[test]
fn a_host_on_af_xdp_with_an_ipv6_address_answers_linux_over_veth() {
    host_with_an_ipv6_address_answers_linux_over_veth("af_xdp");
}

fn host_with_an_ipv6_address_answers_linux_over_veth(kind: &str) {
    if !can_run(&["ping", "ethtool"]) {
        return;
    }
    let _one = serial();
    let host_ns = testbed::netns::Netns::create("lr-v6h").unwrap();
    let linux_ns = testbed::netns::Netns::create("lr-v6l").unwrap();
    testbed::netns::veth_pair(&host_ns, "lr6h0", "10.78.0.9/24", &linux_ns, "lr6l0", "10.78.0.1/24", 1500).unwrap();
    linux_ns.ip(&["-6", "addr", "add", "fd78::1/64", "dev", "lr6l0", "nodad"]).unwrap();
    let o = linux_ns.run("ethtool", &["-K", "lr6l0", "tx", "off"]).unwrap();
    assert!(o.status.success(), "ethtool: {}", String::from_utf8_lossy(&o.stderr));
    let host = host_ns
        .command(common::BIN)
        .args(["host", "--link", &format!("{kind}:lr6h0"), "--ip", "10.78.0.2/24", "--ip6", "fd78::2/64"])
        .args(["--duration", "8s", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Duplicate address detection takes about a second; then every echo is answered.
    let script = "for i in $(seq 50); do ping -6 -c 1 -W 1 fd78::2 >/dev/null && break; sleep 0.1; done; \
                  ping -6 -c 20 -i 0.01 -W 1 fd78::2 && ping -6 -c 3 -i 0.05 -s 3000 -W 1 fd78::2";
    let ping = linux_ns.command("sh").args(["-c", script]).output().unwrap();
    let out = host.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&ping.stdout);
    eprintln!("{text}\n--- host stderr\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(ping.status.success(), "ping -6 failed: {text}");
    assert!(text.contains("20 packets transmitted, 20 received"), "{text}");
    assert!(text.contains("3 packets transmitted, 3 received"), "{text}");
    assert!(out.status.success(), "the host failed");
    let c = common::host_totals(&out.stdout);
    common::assert_rx_accounting(&c);
    assert!(c.get("icmpv6_echo_replied").copied().unwrap_or(0) >= 23, "{c:?}");
    assert_eq!(c.get("ndp_dad_succeeded").copied(), Some(2), "{c:?}");
}

/// `linerate ping -6` from a linerate host to the Linux kernel over TAP: requests of 3,000
/// bytes leave in fragments Linux reassembles, and its fragmented replies are reassembled.
#[test]
fn linerate_ping6_to_linux_gets_every_reply_in_fragments_both_ways() {
    if !can_run(&[]) {
        return;
    }
    let _one = serial();
    let out = Command::new(common::BIN).args(["ping", "-6", "-c", "5", "-s", "3000", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let rows = v.pointer("/tables/0/rows").and_then(|r| r.as_array()).expect("rows");
    assert_eq!(rows.len(), 5, "{text}");
    assert!(rows.iter().all(|r| r["from"] == "fd77::1"), "{text}");
}

/// `linerate iperf` between two processes over IPv6: the server at fd00::1 (and 10.0.0.1), the
/// client at fd00::2 connecting to fd00::1 on a shared-memory link; the client's JSON names the
/// IPv6 server and every byte sent was acknowledged, and the server counted them all.
#[test]
fn linerate_iperf_runs_between_two_processes_over_ipv6() {
    use std::process::Stdio;
    let shm = format!("iperf6-{}", std::process::id());
    let server = Command::new(common::BIN)
        .args(["iperf", "-s", "--shm", &shm, "--ip6", "fd00::1/64", "--duration", "30s", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iperf -s starts");
    let client = Command::new(common::BIN)
        .args(["iperf", "-c", "fd00::1", "--shm", &shm, "--ip6", "fd00::2/64", "-t", "1s", "--json"])
        .output()
        .unwrap();
    let out = server.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&client.stderr);
    assert!(client.status.success(), "client failed: {err}");
    let j: serde_json::Value = serde_json::from_slice(&client.stdout).expect("iperf -c --json prints JSON");
    let t = &j["tables"][0];
    assert_eq!(t["title"], "iperf client -> [fd00::1]:5201", "{j}");
    let row = &t["rows"][0];
    let sent = row["sent"].as_u64().unwrap_or(0);
    assert!(sent > 1_000_000 && row["received"].as_u64() == Some(sent), "{j}");
    assert!(out.status.success(), "server failed: {}", String::from_utf8_lossy(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("iperf -s --json prints JSON");
    assert_eq!(s["tables"][0]["rows"][0]["bytes"].as_u64(), Some(sent), "the server received it all: {s}");
}
