//! The testbeds themselves: the in-process switch topology and namespace clean-up.

use std::net::SocketAddrV4;
use std::process::Command;
use std::time::Duration;
use testbed::{netns_unavailable, Netns, Testbed, TestbedConfig};

#[test]
fn three_hosts_talk_through_the_switch_in_virtual_time() {
    let mut tb = Testbed::new(TestbedConfig::default());
    let ids: Vec<_> = (1..=3).map(|i| tb.add_host(&format!("10.0.0.{i}/24")).unwrap()).collect();
    let socks: Vec<_> = ids.iter().map(|&h| tb.host(h).udp_bind(9).unwrap()).collect();
    for (i, &h) in ids.iter().enumerate() {
        for (j, &to) in ids.iter().enumerate() {
            if i != j {
                let dst = SocketAddrV4::new(tb.host_ref(to).ip(), 9);
                tb.host(h).udp_send_to(socks[i], dst, &[i as u8, j as u8]).unwrap();
            }
        }
    }
    tb.run_for(Duration::from_millis(1)).unwrap();
    assert_eq!(tb.now().as_nanos(), 1_000_000);
    let mut buf = [0u8; 8];
    for (j, &h) in ids.iter().enumerate() {
        let mut from = vec![];
        while let Some((n, _)) = tb.host(h).udp_recv_from(socks[j], &mut buf).unwrap() {
            assert_eq!((n, buf[1]), (2, j as u8));
            from.push(buf[0]);
        }
        from.sort();
        assert_eq!(from.len(), 2, "host {j} got {from:?}");
    }
    assert_eq!(tb.switch_drops(), (0, 0));
}

#[test]
fn run_until_stops_at_the_condition_or_the_limit() {
    let mut tb = Testbed::default();
    let a = tb.add_host("10.0.0.1/24").unwrap();
    let reached = tb.run_until(Duration::from_millis(1), |tb| tb.now().as_nanos() >= 200_000).unwrap();
    assert!(reached);
    assert_eq!(tb.now().as_nanos(), 200_000);
    assert!(!tb.run_until(Duration::from_micros(100), |_| false).unwrap());
    assert_eq!(tb.host_ref(a).counters().get(net::Counter::arp_requests_sent), 1);
}

fn netns_exists(name: &str) -> bool {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().any(|l| l.split_whitespace().next() == Some(name))
}

/// True if namespaces are available; otherwise the test fails saying why.
fn can_run() -> bool {
    match netns_unavailable() {
        None => true,
        Some(why) => panic!("NOT RUN: {why} (run `make test` as root)"),
    }
}

#[test]
fn namespaces_are_removed_on_drop_and_on_panic() {
    if !can_run() {
        return;
    }
    let ns = Netns::create("lrtb").unwrap();
    let name = ns.name().to_string();
    assert!(netns_exists(&name));
    drop(ns);
    assert!(!netns_exists(&name));
    let name = std::thread::spawn(|| {
        let ns = Netns::create("lrtb").unwrap();
        let name = ns.name().to_string();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _keep = ns;
            panic!("test failure inside a namespace");
        }));
        let _ = std::panic::take_hook();
        assert!(r.is_err());
        name
    })
    .join()
    .unwrap();
    assert!(!netns_exists(&name), "namespace {name} left behind after a panic");
}

#[test]
fn veth_pair_connects_two_linux_namespaces() {
    if !can_run() {
        return;
    }
    let a = Netns::create("lrtb").unwrap();
    let b = Netns::create("lrtb").unwrap();
    testbed::netns::veth_pair(&a, "va", "10.88.0.1/24", &b, "vb", "10.88.0.2/24", 1500).unwrap();
    let out = a.run("ping", &["-c", "2", "-i", "0.05", "-W", "1", "10.88.0.2"]).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}
