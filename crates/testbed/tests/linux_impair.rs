//! The kernel impairing Linux's egress (`testbed::linux_impair`): UDP datagrams with sequence
//! numbers cross a veth pair whose sending end is impaired, and the receiver sees the loss,
//! duplicates and reordering that the counters report. Needs root, nft and iptables; without
//! them each test says why, and fails under CI (CI=true), where it must run.

use std::collections::HashSet;
use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};
use testbed::linux_impair::{LinuxImpair, LinuxImpairSpec, Mechanism};
use testbed::{netns_unavailable, Netns};

/// Datagrams sent.
const N: u32 = 4000;

/// Why these tests cannot run here, or None.
fn unavailable() -> Option<String> {
    if let Some(why) = netns_unavailable() {
        return Some(why);
    }
    for t in ["nft", "iptables"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {t}")]).output();
        if !matches!(found.map(|o| o.status.success()), Ok(true)) {
            return Some(format!("the tool `{t}` is not installed (make setup installs it)"));
        }
    }
    None
}

/// True if the test can run; otherwise it fails saying why (never a silent pass).
fn can_run() -> bool {
    match unavailable() {
        None => true,
        Some(why) => panic!("NOT RUN: {why} (run `make test` as root)"),
    }
}

/// Two namespaces joined by veth `va` (10.89.0.1) — `vb` (10.89.0.2), IPv6 off (no stray
/// packets on the impaired link), neighbours resolved.
fn pair() -> (Netns, Netns) {
    let a = Netns::create("lrimp").unwrap();
    let b = Netns::create("lrimp").unwrap();
    for ns in [&a, &b] {
        for k in ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"] {
            let _ = ns.run("sysctl", &["-qw", k]);
        }
    }
    testbed::netns::veth_pair(&a, "va", "10.89.0.1/24", &b, "vb", "10.89.0.2/24", 1500).unwrap();
    let out = a.run("ping", &["-c", "1", "-W", "2", "10.89.0.2"]).unwrap();
    assert!(out.status.success(), "the veth pair does not work");
    (a, b)
}

/// The nftables ruleset of a namespace (None: the host's).
fn ruleset(ns: Option<&Netns>) -> String {
    let out = match ns {
        Some(ns) => ns.run("nft", &["list", "ruleset"]).unwrap(),
        None => Command::new("nft").args(["list", "ruleset"]).output().unwrap(),
    };
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the receiver saw: distinct sequence numbers, duplicates, and arrivals behind a later one.
struct Seen {
    distinct: usize,
    duplicates: usize,
    reordered: usize,
}

/// Send `N` paced datagrams from `a` to `b` and say what arrived.
fn exchange(a: &Netns, b: &Netns) -> Seen {
    let rx = b.spawn(|| {
        let s = UdpSocket::bind("10.89.0.2:9000").unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let (mut got, mut seen) = (Vec::new(), HashSet::new());
        let (mut buf, start, mut last) = ([0u8; 64], Instant::now(), Instant::now());
        // Until a second of silence after the first datagram, at most 20 s.
        while start.elapsed() < Duration::from_secs(20) && (got.is_empty() || last.elapsed() < Duration::from_secs(1)) {
            if let Ok(n) = s.recv(&mut buf) {
                if n >= 4 {
                    got.push(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
                    last = Instant::now();
                }
            }
        }
        let (mut duplicates, mut reordered, mut max) = (0, 0, None);
        for &q in &got {
            if !seen.insert(q) {
                duplicates += 1;
            } else if max.is_some_and(|m| q < m) {
                reordered += 1;
            }
            max = max.max(Some(q));
        }
        Seen { distinct: seen.len(), duplicates, reordered }
    });
    std::thread::sleep(Duration::from_millis(100));
    a.enter(|| {
        let s = UdpSocket::bind("10.89.0.1:0").unwrap();
        for q in 0..N {
            s.send_to(&q.to_be_bytes(), "10.89.0.2:9000").unwrap();
            std::thread::sleep(Duration::from_micros(100));
        }
    })
    .unwrap();
    rx.join().unwrap().unwrap()
}

#[test]
fn substitute_loses_duplicates_and_reorders_what_it_counts() {
    if !can_run() {
        return;
    }
    let (a, b) = pair();
    let spec = LinuxImpairSpec { loss: 0.05, reorder: 0.05, duplicate: 0.05, delay: Duration::from_millis(3) };
    let imp = LinuxImpair::apply_substitute(Some(&a), "va", &spec).unwrap();
    assert_eq!(imp.mechanism(), Mechanism::NftNfqueue);
    let table = ruleset(Some(&a));
    assert!(table.contains("lr_impair_") && table.contains("hook egress device \"va\""), "{table}");
    assert!(!ruleset(None).contains("lr_impair_"), "the table must not appear in the host's namespace");
    let seen = exchange(&a, &b);
    let c = imp.counters().unwrap();
    // The copies the dup rule made (counted in the rule) against those seen leaving (`duplicated`).
    let listing = a.run("nft", &["list", "counter", "netdev", &table_name(&table), "dup_made"]).unwrap().stdout;
    let made = String::from_utf8_lossy(&listing)
        .split_whitespace()
        .skip_while(|w| *w != "packets")
        .nth(1)
        .and_then(|v| v.parse::<u64>().ok());
    eprintln!(
        "{c}; receiver: {} distinct of {N}, {} duplicates, {} reordered; copies made: {made:?}",
        seen.distinct, seen.duplicates, seen.reordered
    );
    let (dropped, duplicated, delayed) = (c.dropped.unwrap(), c.duplicated.unwrap(), c.delayed.unwrap());
    // 5% of 4000 is 200 (standard deviation about 14): margins far beyond chance.
    let lost = (N as usize - seen.distinct) as u64;
    assert!((60..=400).contains(&lost), "lost {lost}");
    assert_eq!(dropped, lost, "every loss is counted, and nothing else is lost");
    assert!((60..=400).contains(&duplicated), "duplicated {duplicated}");
    assert_eq!(seen.duplicates as u64, duplicated, "each duplicate arrives exactly once");
    assert_eq!(made, Some(duplicated), "each copy made leaves once (no copies of copies)");
    assert!((60..=400).contains(&delayed), "delayed {delayed}");
    assert!(seen.reordered as u64 >= delayed / 3, "held packets are overtaken: {} reordered", seen.reordered);
    drop(imp);
    let after = ruleset(Some(&a));
    assert!(!after.contains("lr_impair_") && !after.contains("NFQUEUE") && !after.contains("queue"), "{after}");
    let links = String::from_utf8_lossy(&a.run("ip", &["-o", "link"]).unwrap().stdout).into_owned();
    assert!(!links.contains("lrdrop"), "{links}");
}

/// The table's name in a ruleset listing.
fn table_name(ruleset: &str) -> String {
    ruleset
        .lines()
        .find_map(|l| l.strip_prefix("table netdev ").and_then(|r| r.split_whitespace().next()))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn apply_prefers_netem_and_a_panic_still_removes_everything() {
    if !can_run() {
        return;
    }
    let (a, _b) = pair();
    let spec = LinuxImpairSpec { loss: 0.01, reorder: 0.01, duplicate: 0.005, delay: Duration::from_millis(1) };
    let has_netem = {
        let ok =
            a.run("tc", &["qdisc", "add", "dev", "va", "root", "netem", "delay", "1ms"]).map(|o| o.status.success());
        let _ = a.run("tc", &["qdisc", "del", "dev", "va", "root"]);
        matches!(ok, Ok(true))
    };
    let name = a.name().to_string();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let imp = LinuxImpair::apply(Some(&a), "va", &spec).unwrap();
        let want = if has_netem { Mechanism::Netem } else { Mechanism::NftNfqueue };
        assert_eq!(imp.mechanism(), want);
        let c = imp.counters().unwrap();
        assert!(c.dropped.is_some(), "{c}");
        panic!("a test failing while {name} is impaired");
    }));
    assert!(r.is_err());
    let after = ruleset(Some(&a));
    assert!(!after.contains("lr_impair_") && !after.contains("queue"), "left behind after a panic: {after}");
    let qdisc = String::from_utf8_lossy(&a.run("tc", &["qdisc", "show", "dev", "va"]).unwrap().stdout).into_owned();
    assert!(!qdisc.contains("netem"), "{qdisc}");
    assert!(LinuxImpair::apply(Some(&a), "nosuchdev", &spec).is_err());
    assert!(LinuxImpair::apply(None, "va", &spec).is_err(), "the host's namespace is refused");
}
