//! TAP against the Linux kernel stack in a namespace: the kernel's ARP request arrives, our
//! hand-made ARP reply is accepted (the kernel then sends its ICMP echo to our MAC).

mod common;

use std::time::Duration;

use common::{can_run_as_root, poll_until, Netns};
use link::{FrameBatch, Instant, Link};

const OUR_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x02, 0x02];
const KERNEL_IP: [u8; 4] = [10, 211, 0, 1];
const OUR_IP: [u8; 4] = [10, 211, 0, 2];

/// If `f` is an ARP request for OUR_IP, the sender's MAC.
fn arp_request_for_us(f: &[u8]) -> Option<[u8; 6]> {
    let is_req = f.len() >= 42
        && f[12..14] == [0x08, 0x06]
        && f[14..16] == [0, 1]
        && f[16..18] == [0x08, 0x00]
        && f[20..22] == [0, 1]
        && f[28..32] == KERNEL_IP
        && f[38..42] == OUR_IP;
    is_req.then(|| f[22..28].try_into().unwrap())
}

fn arp_reply(to_mac: [u8; 6]) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    f.extend_from_slice(&to_mac);
    f.extend_from_slice(&OUR_MAC);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2]);
    f.extend_from_slice(&OUR_MAC);
    f.extend_from_slice(&OUR_IP);
    f.extend_from_slice(&to_mac);
    f.extend_from_slice(&KERNEL_IP);
    f.resize(60, 0);
    f
}

/// An IPv4 ICMP echo request to OUR_IP, addressed to OUR_MAC.
fn is_echo_to_us(f: &[u8]) -> bool {
    f.len() >= 35 && f[0..6] == OUR_MAC && f[12..14] == [0x08, 0x00] && f[23] == 1 && f[30..34] == OUR_IP && f[34] == 8
}

#[test]
fn tap_sees_kernel_arp_and_answers_it() {
    if !can_run_as_root("tap_sees_kernel_arp_and_answers_it") {
        return;
    }
    let ns = Netns::new();
    let mut tap = link::tap::create_in_netns(&ns.name, "lrtap0", 1500).unwrap();
    assert_eq!(tap.kind(), "tap");
    assert!(tap.raw_fd().is_some());
    ns.ip(&["addr", "add", "10.211.0.1/24", "dev", "lrtap0"]).unwrap();
    let _ping = ns.spawn("ping", &["-c", "3", "-W", "1", "10.211.0.2"]);

    let mut rx = FrameBatch::new(32, 2048);
    let mut kernel_mac = None;
    let found = poll_until(Duration::from_secs(5), || {
        rx.clear();
        tap.rx_batch(Instant::now(), &mut rx).unwrap();
        kernel_mac = rx.iter().find_map(arp_request_for_us);
        kernel_mac.is_some()
    });
    assert!(found, "no ARP request for 10.211.0.2 arrived on the TAP within 5 s");

    let mut tx = FrameBatch::new(1, 2048);
    assert!(tx.push(&arp_reply(kernel_mac.unwrap())));
    assert_eq!(tap.tx_batch(Instant::now(), &mut tx).unwrap(), 1);
    let echoed = poll_until(Duration::from_secs(5), || {
        rx.clear();
        tap.rx_batch(Instant::now(), &mut rx).unwrap();
        rx.iter().any(is_echo_to_us)
    });
    assert!(echoed, "the kernel did not send its ICMP echo to our MAC after our ARP reply");
    let s = tap.stats();
    assert!(s.rx_frames >= 2 && s.tx_frames == 1, "{s:?}");
}
