//! `linerate host` on AF_XDP, facing the real Linux stack over a veth pair between two
//! namespaces this test creates: ping (also fragmented), curl of 100 MB with the bytes
//! checked, nc both ways with hashes, stock iperf3 both ways, a tshark check of a capture
//! on the Linux side, the kernel still reachable on another address of the host's interface,
//! two shards on a two-queue veth (over IPv4 and IPv6), and no XDP program left behind, also by a killed host.
//! Needs root; without it (or a tool) each test says why and fails.

mod common;

use common::{can_run, serial, sha256_file, Scratch, BIN};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use testbed::Netns;

/// The linerate host's address on the veth.
const HOST: &str = "10.88.0.2";
/// The kernel's own address on the same interface (the host's namespace).
const KERNEL: &str = "10.88.0.3";
/// The Linux peer's address.
const LINUX: &str = "10.88.0.1";
/// A linerate client's address on the Linux peer's interface.
const CLIENT: &str = "10.88.0.4";

/// Two namespaces joined by a veth: `host_ns` (veth `lrx0`, kernel address KERNEL) where
/// linerate runs, `linux_ns` (veth `lrx1`, LINUX) where the Linux tools run.
struct Rig {
    host_ns: Netns,
    linux_ns: Netns,
    host: Option<Child>,
}

impl Rig {
    /// Create the namespaces and the veth (`queues` queues each way).
    fn new(queues: u32) -> Rig {
        Rig::with_mtu(queues, 1500)
    }

    /// [`Rig::new`] with IP MTU `mtu` on both ends of the veth.
    fn with_mtu(queues: u32, mtu: usize) -> Rig {
        let host_ns = Netns::create("lr-xdp-h").unwrap();
        let linux_ns = Netns::create("lr-xdp-l").unwrap();
        let q = queues.to_string();
        host_ns
            .ip(&[
                "link",
                "add",
                "lrx0",
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "type",
                "veth",
                "peer",
                "name",
                "lrx1",
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "netns",
                linux_ns.name(),
            ])
            .unwrap();
        host_ns.ip(&["addr", "add", &format!("{KERNEL}/24"), "dev", "lrx0"]).unwrap();
        linux_ns.ip(&["addr", "add", &format!("{LINUX}/24"), "dev", "lrx1"]).unwrap();
        let mtu = mtu.to_string();
        host_ns.ip(&["link", "set", "lrx0", "mtu", &mtu, "up"]).unwrap();
        linux_ns.ip(&["link", "set", "lrx1", "mtu", &mtu, "up"]).unwrap();
        // Between veths Linux leaves checksums to an offload that never happens: compute them.
        let o = linux_ns.run("ethtool", &["-K", "lrx1", "tx", "off"]).unwrap();
        assert!(o.status.success(), "ethtool -K lrx1 tx off: {}", String::from_utf8_lossy(&o.stderr));
        Rig { host_ns, linux_ns, host: None }
    }

    /// Start `linerate host` on AF_XDP with `extra` flags; returns once it answers a ping.
    fn start_host(&mut self, extra: &[&str]) {
        let child = self
            .host_ns
            .command(BIN)
            .args(["host", "--link", "af_xdp:lrx0", "--ip", &format!("{HOST}/24"), "--duration", "240s", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("linerate host starts");
        self.host = Some(child);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(15) {
            if self.linux(&format!("ping -c 1 -W 1 {HOST}")).status.success() {
                return;
            }
        }
        let out = self.stop_host();
        panic!("the host never answered a ping: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Run `script` with sh in the Linux namespace.
    fn linux(&self, script: &str) -> Output {
        self.linux_ns.command("sh").args(["-c", script]).output().expect("sh runs")
    }

    /// Stop the host with SIGINT (as Ctrl-C) and collect its output.
    fn stop_host(&mut self) -> Output {
        let child = self.host.take().expect("a host runs");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let out = child.wait_with_output().expect("linerate host ends");
        eprintln!(
            "--- host stdout\n{}--- host stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Start tshark on the Linux side's veth, writing the first `snaplen` bytes of each frame
    /// to `pcap` for at most `secs`; returns once it captures (stop it with SIGINT).
    fn capture(&self, pcap: &str, snaplen: u32, secs: u32) -> Child {
        let child = self
            .linux_ns
            .command("tshark")
            .args(["-i", "lrx1", "-q", "-w", pcap, "-s", &snaplen.to_string(), "-a", &format!("duration:{secs}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        child
    }

    /// True if an XDP program is attached to the host's veth.
    fn xdp_attached(&self) -> bool {
        let o = self.host_ns.run("ip", &["-d", "link", "show", "lrx0"]).unwrap();
        String::from_utf8_lossy(&o.stdout).contains("prog/xdp")
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.host.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Counter `name` (the "total" column) from the host's JSON table.
/// Wait (at most `limit`) until `linerate stats` shows counter `name` of the host with `pid`
/// at `at_least` or more (the host publishes every few hundred ms); the last value seen.
fn wait_for_published(pid: u32, name: &str, at_least: u64, limit: Duration) -> u64 {
    let start = std::time::Instant::now();
    loop {
        let o = Command::new(BIN).args(["stats", "--json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        let rows = v.pointer("/tables/0/rows").and_then(|r| r.as_array()).cloned().unwrap_or_default();
        let seen = rows
            .iter()
            .filter(|r| r["pid"].as_u64() == Some(u64::from(pid)) && r["counter"] == name)
            .filter_map(|r| r["value"].as_u64())
            .max()
            .unwrap_or(0);
        if seen >= at_least || start.elapsed() > limit {
            return seen;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn counter(out: &Output, name: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the host prints JSON");
    let rows = v.pointer("/tables/0/rows").or_else(|| v.pointer("/rows")).and_then(|r| r.as_array()).cloned();
    let rows = rows.unwrap_or_else(|| v.as_array().cloned().unwrap_or_default());
    rows.iter()
        .find(|r| r.get("counter").and_then(|c| c.as_str()) == Some(name))
        .and_then(|r| r.get("total").and_then(|t| t.as_u64()))
        .unwrap_or(0)
}

/// Every counter's total from the host's JSON table.
fn totals(out: &Output) -> std::collections::HashMap<String, u64> {
    common::host_totals(&out.stdout)
}

/// bits_per_second of the receiver in iperf3 -J output.
fn iperf3_bps(out: &Output) -> f64 {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("iperf3 -J: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    v.pointer("/end/sum_received/bits_per_second").and_then(|b| b.as_f64()).unwrap_or(0.0)
}

#[test]
fn af_xdp_host_serves_linux_tools_and_passes_the_kernels_traffic() {
    if !can_run(&["ping", "curl", "nc", "iperf3", "tshark", "ethtool"]) {
        return;
    }
    let _one_at_a_time = serial();
    let dir = Scratch::new("af-xdp");
    let mut rig = Rig::new(1);
    // The kernel of the host's namespace listens on its own address of the same interface.
    let (input, echoed, to_kernel, body, pcap) =
        (dir.file("in"), dir.file("echoed"), dir.file("kernel"), dir.file("body"), dir.file("linux.pcap"));
    std::fs::write(&input, (0..20_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<u8>>())
        .unwrap();
    let mut kernel_listener = rig
        .host_ns
        .command("sh")
        .args(["-c", &format!("timeout 60 nc -l {KERNEL} 9999 > {to_kernel}")])
        .spawn()
        .unwrap();
    rig.start_host(&[]);
    assert!(rig.xdp_attached(), "no XDP program on lrx0 while the host runs");

    let ping =
        rig.linux(&format!("ping -c 3 -i 0.2 {HOST} && ping -c 2 -i 0.2 -s 8000 {HOST} && ping -c 2 -i 0.2 {KERNEL}"));
    assert!(ping.status.success(), "ping: {}", String::from_utf8_lossy(&ping.stdout));

    // A capture on the Linux side while the byte-checked transfers run.
    let mut tshark = rig.capture(&pcap, 128, 100);
    let script = format!(
        "set -e; nc -N {HOST} 7 < {input} > {echoed}; nc -N {HOST} 9 < {input}; \
         nc -N {KERNEL} 9999 < {input}; \
         curl -sS --fail --max-time 60 -o {body} http://{HOST}/size/100000000"
    );
    let t = rig.linux(&script);
    assert!(t.status.success(), "transfers: {}", String::from_utf8_lossy(&t.stderr));
    // SAFETY: kill(2) on our own child's pid: tshark finishes its file on SIGINT.
    unsafe { libc::kill(tshark.id() as i32, libc::SIGINT) };
    let _ = tshark.wait();
    let _ = kernel_listener.wait();
    assert_eq!(sha256_file(&echoed), sha256_file(&input), "the echo changed the bytes");
    assert_eq!(sha256_file(&to_kernel), sha256_file(&input), "the kernel's socket on {KERNEL} did not get the bytes");
    let mut expected = vec![0u8; 100_000_000];
    apps::pattern::fill(0, &mut expected);
    let want = {
        use sha2::{Digest, Sha256};
        format!("{:x}", Sha256::digest(&expected))
    };
    assert_eq!(sha256_file(&body), (want, 100_000_000), "the HTTP body differs from the pattern");

    let o = Command::new("tshark")
        .args([
            "-n",
            "-r",
            &pcap,
            "-o",
            "ip.check_checksum:TRUE",
            "-Y",
            "_ws.malformed || ip.checksum.status == \"Bad\"",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty(), "malformed frames:\n{}", String::from_utf8_lossy(&o.stdout));
    let all = Command::new("tshark").args(["-n", "-r", &pcap, "-Y", "tcp"]).output().unwrap();
    assert!(all.stdout.split(|&b| b == b'\n').count() > 1000, "the capture holds the transfers");

    // Stock iperf3 both ways (a floor, not a benchmark: two cores shared with the build).
    for reverse in [false, true] {
        let o = rig.linux(&format!("timeout 30 iperf3 -c {HOST} -t 2 -J {}", if reverse { "-R" } else { "" }));
        assert!(o.status.success(), "iperf3 (reverse: {reverse}) failed: {}", String::from_utf8_lossy(&o.stdout));
        let bps = iperf3_bps(&o);
        eprintln!("iperf3 {}: {:.2} Gbit/s", if reverse { "-R" } else { "" }, bps / 1e9);
        assert!(bps > 2e8, "iperf3 (reverse: {reverse}) moved only {bps} bit/s");
    }

    // An iperf3 client exits once it has sent its last message: the host counts the test when
    // it reads that, which on a loaded machine can be after the client is gone.
    let pid = rig.host.as_ref().expect("a host runs").id();
    wait_for_published(pid, "iperf3_tests", 2, Duration::from_secs(10));
    let out = rig.stop_host();
    assert!(out.status.success(), "the host failed");
    assert_eq!(counter(&out, "tcp_sink_bytes"), 20_000_000);
    assert_eq!(counter(&out, "http_ok"), 1);
    assert_eq!(counter(&out, "iperf3_tests"), 2);
    assert!(counter(&out, "icmp_echo_replied") >= 5);
    common::assert_rx_accounting(&totals(&out));
    assert!(!rig.xdp_attached(), "the XDP program outlived the host");
}

#[test]
fn af_xdp_host_carries_jumbo_frames_with_an_mss_that_fills_them() {
    if !can_run(&["ping", "nc", "tshark", "ethtool"]) {
        return;
    }
    let _one_at_a_time = serial();
    let dir = Scratch::new("af-xdp-jumbo");
    let mut rig = Rig::with_mtu(1, 9000);
    let (input, echoed, pcap) = (dir.file("in"), dir.file("echoed"), dir.file("jumbo.pcap"));
    std::fs::write(&input, (0..8_000_000u32).map(|i| (i.wrapping_mul(40503) >> 7) as u8).collect::<Vec<u8>>()).unwrap();
    rig.start_host(&[]);
    let mut tshark = rig.capture(&pcap, 96, 60);
    // Whole 9000-byte IP packets both ways (DF set: no fragmentation), then TCP both ways.
    let script = format!(
        "set -e; ping -c 2 -i 0.2 -M do -s 8972 {HOST}; nc -N {HOST} 7 < {input} > {echoed}; nc -N {HOST} 9 < {input}"
    );
    let t = rig.linux(&script);
    // SAFETY: kill(2) on our own child's pid: tshark finishes its file on SIGINT.
    unsafe { libc::kill(tshark.id() as i32, libc::SIGINT) };
    let _ = tshark.wait();
    assert!(
        t.status.success(),
        "jumbo transfers: {}{}",
        String::from_utf8_lossy(&t.stdout),
        String::from_utf8_lossy(&t.stderr)
    );
    assert_eq!(sha256_file(&echoed), sha256_file(&input), "the echo changed the bytes");
    let fields = |filter: &str, field: &str| -> Vec<u64> {
        let o = Command::new("tshark")
            .args(["-n", "-r", &pcap, "-Y", filter, "-T", "fields", "-e", field])
            .output()
            .unwrap();
        assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
    };
    // The host announces the MSS of its interface's MTU, as Linux does, and fills it.
    let mss = fields(&format!("ip.src == {HOST} && tcp.flags.syn == 1"), "tcp.options.mss_val");
    assert!(!mss.is_empty() && mss.iter().all(|&m| m == 8960), "the host's SYN-ACKs announce MSS {mss:?}, not 8960");
    let big = fields(&format!("ip.src == {HOST} && tcp.len > 8000"), "frame.len");
    assert!(big.len() > 100, "the host sent only {} TCP frames over 8000 bytes", big.len());
    assert!(big.iter().all(|&l| l <= 9014), "a frame over the MTU: {:?}", big.iter().max());
    let out = rig.stop_host();
    assert!(out.status.success(), "the host failed");
    assert_eq!(counter(&out, "tcp_sink_bytes"), 8_000_000);
    common::assert_rx_accounting(&totals(&out));
}

#[test]
fn damaged_frames_and_a_syn_flood_over_af_xdp_are_counted_and_the_host_keeps_serving() {
    let python = common::venv_python();
    if !common::skip_unless(common::unavailable(&["ping", "curl", "ethtool"]).or(python.clone().err())) {
        return;
    }
    let _one_at_a_time = serial();
    let py = python.unwrap();
    let dir = Scratch::new("af-xdp-hostile");
    let mut rig = Rig::new(1);
    rig.start_host(&[]);
    let mac = rig.host_ns.run("cat", &["/sys/class/net/lrx0/address"]).unwrap();
    let mac = String::from_utf8_lossy(&mac.stdout).trim().to_string();
    let gen = common::HOSTILE_FRAMES;
    let (go, codes) = (dir.file("go"), dir.file("codes"));
    // 20,000 damaged frames, then 30,000 spoofed SYNs at 5,000/s while curl starts a request
    // every 100 ms (each with a 5 s limit); then the host must still answer everything.
    let script = format!(
        "set -e; {py} {gen} mutate lrx1 {mac} {HOST} 20000; \
         ping -c 2 -i 0.2 -W 1 {HOST} >/dev/null; \
         {py} {gen} syn-flood lrx1 {mac} {HOST} 30000 5000 {go} & F=$!; \
         while [ ! -e {go} ]; do sleep 0.2; done; \
         for i in $(seq 60); do (curl -s -o /dev/null -m 5 -w '%{{http_code}}\\n' http://{HOST}/size/1000 >> {codes}) & sleep 0.1; done; \
         wait $F; wait; \
         ping -c 3 -i 0.2 -W 1 {HOST} >/dev/null && curl -sS --fail -m 5 -o /dev/null http://{HOST}/size/100000"
    );
    let t = rig.linux(&script);
    let out = rig.stop_host();
    eprintln!("{}{}", String::from_utf8_lossy(&t.stdout), String::from_utf8_lossy(&t.stderr));
    assert!(t.status.success(), "the host stopped serving after the damaged frames or the flood");
    assert!(out.status.success(), "the host failed");
    let codes = std::fs::read_to_string(&codes).unwrap_or_default();
    let ok = codes.lines().filter(|l| l.trim() == "200").count();
    assert!(ok >= 59, "only {ok} of 60 curl requests succeeded during the flood");
    let c = totals(&out);
    common::assert_rx_accounting(&c);
    let dropped: u64 = c.iter().filter(|(k, _)| k.starts_with("rx_drop_")).map(|(_, v)| v).sum();
    assert!(dropped > 5_000, "only {dropped} damaged frames counted as dropped: {c:?}");
    assert!(c.get("tcp_syncookies_sent").copied().unwrap_or(0) > 20_000, "{c:?}");
}

#[test]
fn a_killed_af_xdp_host_leaves_no_xdp_program_and_faults_have_sentences() {
    if !can_run(&["ping", "ethtool"]) {
        return;
    }
    let _one_at_a_time = serial();
    let mut rig = Rig::new(1);
    rig.start_host(&[]);
    assert!(rig.xdp_attached());
    let mut child = rig.host.take().unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    assert!(!rig.xdp_attached(), "a killed host left its XDP program attached");
    let cleanup = Command::new(BIN).args(["tap", "--cleanup"]).output().unwrap();
    assert!(cleanup.status.success(), "tap --cleanup: {}", String::from_utf8_lossy(&cleanup.stderr));

    let fault = |rig: &Rig, args: &[&str]| -> String {
        let o = rig.host_ns.command(BIN).arg("host").args(args).args(["--duration", "5s"]).output().unwrap();
        assert!(!o.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let ip = format!("{HOST}/24");
    let e = fault(&rig, &["--link", "af_xdp:lrx-nosuch", "--ip", &ip]);
    assert!(e.contains("no interface named \"lrx-nosuch\""), "{e}");
    let e = fault(&rig, &["--link", "af_xdp:lrx0", "--ip", &ip, "--queues", "3"]);
    assert!(e.contains("has no queue 1"), "{e}");
    let e = fault(&rig, &["--link", "veth0", "--ip", &ip]);
    assert!(e.contains("KIND:NAME"), "{e}");
    rig.host_ns.ip(&["link", "set", "lrx0", "down"]).unwrap();
    let e = fault(&rig, &["--link", "af_xdp:lrx0", "--ip", &ip]);
    assert!(e.contains("lrx0 is down"), "{e}");
    rig.host_ns.ip(&["link", "set", "lrx0", "up"]).unwrap();
    rig.start_host(&[]);
    let e = fault(&rig, &["--link", "af_xdp:lrx0", "--ip", "10.88.0.4/24"]);
    assert!(e.contains("already has an XDP program attached"), "{e}");
    // What the kernel does to the interface under a running host: it keeps answering.
    for change in
        [&["link", "set", "lrx0", "down"][..], &["link", "set", "lrx0", "up"], &["link", "set", "lrx0", "mtu", "1400"]]
    {
        rig.host_ns.ip(change).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    let ping = rig.linux(&format!("ping -c 2 -i 0.2 -W 2 {HOST}"));
    assert!(ping.status.success(), "no answer after down/up and an MTU change");
    let out = rig.stop_host();
    assert!(out.status.success());
}

#[test]
fn two_af_xdp_shards_share_the_connections_of_a_two_queue_veth() {
    if !can_run(&["nc", "ethtool"]) {
        return;
    }
    let _one_at_a_time = serial();
    let dir = Scratch::new("af-xdp-shards");
    let mut rig = Rig::new(2);
    // One queue of two opened: the host says the other queue's flows go to the kernel.
    let one = rig
        .host_ns
        .command(BIN)
        .args(["host", "--link", "af_xdp:lrx0", "--ip", &format!("{HOST}/24"), "--duration", "200ms"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&one.stderr);
    assert!(one.status.success() && err.contains("lrx0 receives on 2 queues and linerate opened 1"), "{err}");
    rig.start_host(&["--queues", "2"]);
    shards_split_echoes_and_a_sharded_client(&mut rig, &dir, HOST, &["--ip", &format!("{CLIENT}/24")]);
}

#[test]
fn two_af_xdp_shards_share_the_ipv6_connections_of_a_two_queue_veth() {
    if !can_run(&["nc", "ethtool", "ping"]) {
        return;
    }
    let _one_at_a_time = serial();
    let dir = Scratch::new("af-xdp-shards6");
    let mut rig = Rig::new(2);
    rig.linux_ns.ip(&["-6", "addr", "add", "fd88::1/64", "dev", "lrx1", "nodad"]).unwrap();
    rig.start_host(&["--queues", "2", "--ip6", "fd88::2/64"]);
    // Each shard's address leaves duplicate address detection about a second after start.
    let start = Instant::now();
    while !rig.linux("ping -6 -c 1 -W 1 fd88::2").status.success() {
        assert!(start.elapsed() < Duration::from_secs(15), "the host never answered ping -6");
    }
    let client = ["--ip", &format!("{CLIENT}/24"), "--ip6", "fd88::4/64"];
    shards_split_echoes_and_a_sharded_client(&mut rig, &dir, "fd88::2", &client);
}

/// With a two-shard host running on `rig`: 64 Linux `nc` connections to `host` port 7 echo
/// their bytes, a two-shard `linerate iperf` client (AF_XDP on the Linux side's veth, at
/// `client_ip`) splits 16 connections to `host` port 5001 between its shards as the host's
/// shards do; the host's counters account for every frame.
fn shards_split_echoes_and_a_sharded_client(rig: &mut Rig, dir: &Scratch, host: &str, client_ip: &[&str]) {
    // 64 connections at once, each echoing its own bytes.
    let mut script = String::from("set -e\n");
    for i in 0..64 {
        let (inp, out) = (dir.file(&format!("in{i}")), dir.file(&format!("out{i}")));
        std::fs::write(&inp, (0..100_000u32).map(|k| (k * 7 + i * 13) as u8).collect::<Vec<u8>>()).unwrap();
        script.push_str(&format!("timeout 60 nc -N {host} 7 < {inp} > {out} &\n"));
    }
    script.push_str("wait\n");
    let t = rig.linux(&script);
    assert!(t.status.success(), "nc: {}", String::from_utf8_lossy(&t.stderr));
    for i in 0..64 {
        let (inp, out) = (dir.file(&format!("in{i}")), dir.file(&format!("out{i}")));
        assert_eq!(sha256_file(&out), sha256_file(&inp), "connection {i} changed its bytes");
    }
    // A sharded linerate client on the other end (AF_XDP on lrx1's two queues, its own
    // address): each shard opens its connections from ports that hash back to it, so every
    // connection's replies reach the shard that opened it (else they would be reset), and the
    // host's shards take the same split by the same hash.
    let client = rig
        .linux_ns
        .command(BIN)
        .args(["iperf", "-c", host, "-p", "5001", "--link", "af_xdp:lrx1", "--queues", "2"])
        .args(client_ip)
        .args(["-P", "16", "-t", "1s", "--json"])
        .output()
        .unwrap();
    let ct = String::from_utf8_lossy(&client.stdout);
    assert!(client.status.success(), "the sharded client: {ct}{}", String::from_utf8_lossy(&client.stderr));
    let cv: serde_json::Value = serde_json::from_str(&ct).expect("the client prints JSON");
    let crows = cv.pointer("/tables/0/rows").and_then(|r| r.as_array()).cloned().unwrap_or_default();
    let reported: Vec<u64> = crows.iter().map(|r| r["reported"].as_u64().unwrap_or(0)).collect();
    assert_eq!(reported, [8, 8, 16], "connections reported per client shard, then all: {ct}");
    // `linerate stats` lists each shard and their sum (published every few hundred ms).
    std::thread::sleep(Duration::from_millis(1200));
    let pid = rig.host.as_ref().unwrap().id();
    let stats = Command::new(BIN).args(["stats", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    for want in [format!("host-{pid}.shard0"), format!("host-{pid}.shard1"), format!("host-{pid} (all shards)")] {
        assert!(text.contains(&want), "linerate stats shows no {want}:\n{text}");
    }
    let out = rig.stop_host();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v.to_string();
    eprintln!("{text}");
    let row = |name: &str| -> Vec<u64> {
        let rows = v.pointer("/tables/0/rows").or_else(|| v.pointer("/rows")).and_then(|r| r.as_array()).cloned();
        let rows = rows.unwrap_or_else(|| v.as_array().cloned().unwrap_or_default());
        let r =
            rows.iter().find(|r| r.get("counter").and_then(|c| c.as_str()) == Some(name)).cloned().unwrap_or_default();
        ["total", "shard_0", "shard_1"].iter().map(|k| r.get(*k).and_then(|x| x.as_u64()).unwrap_or(0)).collect()
    };
    common::assert_rx_accounting(&totals(&out));
    let opens = row("tcp_passive_opens");
    assert_eq!(opens[0], 64 + 16, "{opens:?}");
    assert!(opens[1] > 0 && opens[2] > 0, "one shard took every connection: {opens:?}");
    assert_eq!(row("iperf_connections"), [16, 8, 8], "the host's shards split the client's connections as it did");
}
