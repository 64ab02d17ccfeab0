//! The middlebox commands end to end: `linerate firewall` and `linerate ids` on pcap files,
//! broken input files, and `linerate middlebox stats` while a firewall runs.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Scratch as Tmp, BIN, BLACKLIST, RULES};

fn need(path: &str) {
    assert!(Path::new(path).exists(), "this test needs {path}");
}

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// The value of a summary row `where counter value`.
fn value(out: &str, what: &str, counter: &str) -> Option<u64> {
    out.lines().find(|l| l.starts_with(what) && l.contains(counter))?.split_whitespace().last()?.parse().ok()
}

#[test]
fn ids_finds_the_planted_attacks_in_a_pcap() {
    need(RULES);
    let t = Tmp::new("ids");
    let trace = t.path("trace.pcap");
    let (ok, out, err) = run(&[
        "ids",
        "--rules",
        RULES,
        "--make-trace",
        trace.to_str().unwrap(),
        "--background",
        "300",
        "--attacks",
        "40",
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("40 attacks planted"), "{out}");
    let alerts = t.path("alerts.log");
    let matched = t.path("matched.pcap");
    let fwd = t.path("fwd.pcap");
    let (ok, out, err) = run(&[
        "ids",
        "--rules",
        RULES,
        "--input",
        trace.to_str().unwrap(),
        "--output",
        fwd.to_str().unwrap(),
        "--alerts",
        alerts.to_str().unwrap(),
        "--matched",
        matched.to_str().unwrap(),
        "--units",
        "2",
    ]);
    assert!(ok, "{out}{err}");
    assert_eq!(value(&out, "host", "distinct (sid, flow)"), Some(40), "{out}");
    let expected = std::fs::read_to_string(format!("{}.expected", trace.display())).unwrap();
    let log = std::fs::read_to_string(&alerts).unwrap();
    assert_eq!(log.lines().count(), 40);
    for line in expected.lines() {
        let sid = line.split_whitespace().next().unwrap();
        assert!(log.contains(&format!("[1:{sid}:")), "sid {sid} not alerted:\n{log}");
    }
    // An IDS: every frame goes on, the attacks too.
    let forwarded = link::pcap::read_frames(&fwd).unwrap().len();
    let host = link::pcap::read_frames(&matched).unwrap().len();
    let total = link::pcap::read_frames(&trace).unwrap().len();
    assert_eq!(forwarded, total, "the IDS forwards every frame");
    assert!(host >= 40, "{host} packets alerted");
    // An IPS: what alerts stays behind.
    let (ok, out, err) = run(&[
        "ids",
        "--ips",
        "--rules",
        RULES,
        "--input",
        trace.to_str().unwrap(),
        "--output",
        fwd.to_str().unwrap(),
        "--matched",
        matched.to_str().unwrap(),
        "--units",
        "2",
    ]);
    assert!(ok, "{out}{err}");
    let forwarded = link::pcap::read_frames(&fwd).unwrap().len();
    let host = link::pcap::read_frames(&matched).unwrap().len();
    assert_eq!(forwarded + host, total, "the IPS drops exactly what went to the host");
    assert!(host >= 40);
}

#[test]
fn firewall_filters_a_pcap_and_a_bad_blacklist_is_named() {
    need(BLACKLIST);
    let t = Tmp::new("fw");
    // A pcap with one frame from a blacklisted source (1.10.16.0/20) and one from elsewhere.
    let input = t.path("in.pcap");
    {
        let mut w = link::pcap::PcapWriter::new(middlebox::testlinks::NullLink::new(), &input).unwrap();
        let mut b = link::FrameBatch::new(2, 2048);
        for src in [[1, 10, 16, 5], [8, 8, 8, 8]] {
            let e = middlebox::frames::Endpoints { src: src.into(), dst: [10, 0, 0, 1].into(), sport: 1, dport: 2 };
            assert!(b.push(&middlebox::frames::udp(&e, b"hi").unwrap()));
        }
        use link::Link;
        w.tx_batch(link::Instant::ZERO, &mut b).unwrap();
    }
    let out_pcap = t.path("out.pcap");
    let (ok, out, err) = run(&[
        "firewall",
        "--blacklist",
        BLACKLIST,
        "--input",
        input.to_str().unwrap(),
        "--output",
        out_pcap.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    let frames = link::pcap::read_frames(&out_pcap).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(&frames[0][26..30], &[8, 8, 8, 8]);
    assert!(out.contains("blocked"), "{out}");

    let bad = t.path("bad.txt");
    std::fs::write(&bad, "1.2.3.0/24\n1.2.3.4/40\n").unwrap();
    let (ok, _, err) = run(&["firewall", "--blacklist", bad.to_str().unwrap(), "--input", input.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains(&format!("{}:2:", bad.display())), "{err}");

    let bad_rules = t.path("bad.rules");
    std::fs::write(&bad_rules, "alert tcp any any -> any any (msg:\"x\"; sid:1;)\nalert tcp any any -> any any (msg:\"y\"; content:; sid:2;)\n").unwrap();
    let (ok, _, err) =
        run(&["ids", "--rules", bad_rules.to_str().unwrap(), "--strict", "--input", input.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains(&format!("{}:2:", bad_rules.display())), "{err}");
}

#[test]
fn middlebox_stats_shows_a_running_firewall() {
    need(BLACKLIST);
    let t = Tmp::new("stats");
    let run_dir = t.path("run");
    let name = format!("mbtest-{}", std::process::id());
    let shm = format!("lr-mbtest-{}", std::process::id());
    let mut child = Command::new(BIN)
        .args([
            "firewall",
            "--blacklist",
            BLACKLIST,
            "--input",
            &format!("shm-new:{shm}"),
            "--duration",
            "4",
            "--name",
            &name,
        ])
        .env("LINERATE_RUN_DIR", &run_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    for _ in 0..30 {
        std::thread::sleep(Duration::from_millis(200));
        let o =
            Command::new(BIN).args(["middlebox", "stats", &name]).env("LINERATE_RUN_DIR", &run_dir).output().unwrap();
        seen = String::from_utf8_lossy(&o.stdout).into();
        if o.status.success() && seen.contains("unit0") {
            break;
        }
    }
    // SIGTERM: the firewall stops cleanly and removes its shared-memory segment.
    // SAFETY: kill with a valid pid of our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "the firewall exits cleanly on SIGTERM: {status:?}");
    assert!(!Path::new(&format!("/dev/shm/linerate-{shm}")).exists(), "shm segment removed");
    assert!(seen.contains(&name) && seen.contains("port0") && seen.contains("unit1"), "{seen}");
}

/// `linerate firewall` as a bump in the wire on two veths through AF_XDP: a Linux sender in
/// one namespace, a Linux receiver in another, the firewall in a third between them. Datagrams
/// from an allowed source arrive; those from a blacklisted one (1.10.16.0/20) do not.
#[test]
fn firewall_on_af_xdp_between_two_linux_namespaces_forwards_the_allowed_and_drops_the_blacklisted() {
    need(BLACKLIST);
    if !common::can_run(&["python3", "ethtool"]) {
        return;
    }
    let _one = common::serial();
    let (a, m, b) = (
        testbed::Netns::create("mbx-a").unwrap(),
        testbed::Netns::create("mbx-m").unwrap(),
        testbed::Netns::create("mbx-b").unwrap(),
    );
    let ip = |ns: &testbed::Netns, args: &[&str]| ns.ip(args).unwrap_or_else(|e| panic!("ip {args:?}: {e}"));
    ip(&m, &["link", "add", "mxa0", "type", "veth", "peer", "name", "mxa1", "netns", a.name()]);
    ip(&m, &["link", "add", "mxb0", "type", "veth", "peer", "name", "mxb1", "netns", b.name()]);
    for (ns, ifname) in [(&m, "mxa0"), (&m, "mxb0"), (&a, "mxa1"), (&b, "mxb1")] {
        ip(ns, &["link", "set", ifname, "up"]);
    }
    ip(&a, &["addr", "add", "10.93.0.1/24", "dev", "mxa1"]);
    ip(&a, &["addr", "add", "1.10.16.5/32", "dev", "mxa1"]);
    ip(&b, &["addr", "add", "10.93.0.2/24", "dev", "mxb1"]);
    ip(&b, &["route", "add", "1.10.16.0/20", "dev", "mxb1"]);
    // The firewall forwards one way: the sender knows the receiver's MAC without ARP, and
    // computes its checksums (between veths the kernel leaves them to an offload).
    let mac = b.run("cat", &["/sys/class/net/mxb1/address"]).unwrap();
    let mac = String::from_utf8_lossy(&mac.stdout).trim().to_string();
    ip(&a, &["neigh", "add", "10.93.0.2", "lladdr", &mac, "dev", "mxa1", "nud", "permanent"]);
    assert!(a.run("ethtool", &["-K", "mxa1", "tx", "off"]).unwrap().status.success());
    let fw = m
        .command(BIN)
        .args(["firewall", "--blacklist", BLACKLIST, "--input", "af_xdp:mxa0", "--output", "af_xdp:mxb0"])
        .args(["--duration", "6s", "--units", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let receiver = b
        .command("python3")
        .args([
            "-c",
            "import socket,collections\n\
             s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(('10.93.0.2',9000)); s.settimeout(3)\n\
             n=collections.Counter()\n\
             try:\n  while True:\n    d,(src,_)=s.recvfrom(2048); n[src]+=1\n\
             except socket.timeout: pass\n\
             print(n['10.93.0.1'], n['1.10.16.5'])",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = a
        .run(
            "python3",
            &[
                "-c",
                "import socket,time\n\
                 for src in ('10.93.0.1','1.10.16.5'):\n  s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind((src,0))\n  \
                 for i in range(200):\n    s.sendto(b'x'*(100+i),('10.93.0.2',9000)); time.sleep(0.001)",
            ],
        )
        .unwrap();
    assert!(sent.status.success(), "sender: {}", String::from_utf8_lossy(&sent.stderr));
    let got = receiver.wait_with_output().unwrap();
    let fw = fw.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&fw.stdout), String::from_utf8_lossy(&fw.stderr));
    assert!(fw.status.success(), "firewall: {out}{err}");
    let counts: Vec<u64> =
        String::from_utf8_lossy(&got.stdout).split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_eq!(counts, [200, 0], "datagrams from the allowed and the blacklisted source; firewall: {out}{err}");
    assert_eq!(value(&out, "unit 0 (firewall)", "blocked"), Some(200), "{out}");
}
