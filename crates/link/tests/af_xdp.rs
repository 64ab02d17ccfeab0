//! AF_XDP on one end of a veth pair inside a namespace this test creates, AF_PACKET on the
//! other: frames both ways (through batches and in place), the steering program passing what
//! is not the stack's, the program detached when the link goes, and each fault's sentence.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use common::{can_run_as_root, frame, poll_until, Netns, ETHERTYPE};
use link::af_xdp::{self, Steer, XdpConfig, XdpLink};
use link::packet::PacketLink;
use link::{FrameBatch, Instant, Link, LinkError};

/// An IPv4/UDP-looking frame to `dst` (only the fields the steering program reads matter).
fn ipv4_frame(dst: Ipv4Addr, seq: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xaa]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 9, 0, 1]);
    f[30..34].copy_from_slice(&dst.octets());
    f[59] = seq;
    f
}

/// An IPv6/UDP-looking frame to `dst` (only the fields the steering program reads matter).
fn ipv6_frame(dst: Ipv6Addr, seq: u8) -> Vec<u8> {
    let mut f = vec![0u8; 70];
    f[0..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xaa]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    f[14] = 0x60;
    f[19] = 8;
    f[20] = 17;
    f[21] = 64;
    f[22..38].copy_from_slice(&"fd77::9".parse::<Ipv6Addr>().unwrap().octets());
    f[38..54].copy_from_slice(&dst.octets());
    f[69] = seq;
    f
}

fn rx_test_frames(link: &mut dyn Link, got: &mut Vec<Vec<u8>>) {
    let mut rx = FrameBatch::new(64, 2048);
    link.rx_batch(Instant::now(), &mut rx).unwrap();
    got.extend(rx.iter().filter(|f| f[12..14] == ETHERTYPE).map(|f| f.to_vec()));
}

/// A namespace with veth lrxa <-> lrxb, both up, without IPv6 addresses.
fn veth(mtu: &str) -> Netns {
    let ns = Netns::new();
    ns.ip(&["link", "add", "lrxa", "mtu", mtu, "type", "veth", "peer", "name", "lrxb", "mtu", mtu]).unwrap();
    // No IPv6 link-local addresses: the kernel's own ND and MLD frames would add to the counts.
    ns.ip(&["link", "set", "lrxa", "addrgenmode", "none"]).unwrap();
    ns.ip(&["link", "set", "lrxb", "addrgenmode", "none"]).unwrap();
    ns.ip(&["link", "set", "lrxa", "up"]).unwrap();
    ns.ip(&["link", "set", "lrxb", "up"]).unwrap();
    ns
}

fn xdp_on(ns: &Netns, ifname: &str, steer: Steer) -> XdpLink {
    af_xdp::create_in_netns(&ns.name, ifname, 1, &XdpConfig::new(steer)).unwrap().pop().unwrap()
}

/// Attach the steering program to `ifname` inside `ns`.
fn ns_attach(ns: &Netns, ifname: &str) -> std::sync::Arc<af_xdp::XdpInterface> {
    let ifname = ifname.to_string();
    link::netns::run_in_netns(&ns.name, move || af_xdp::XdpInterface::attach(&ifname, &XdpConfig::new(Steer::All)))
        .unwrap()
}

fn xdp_attached(ns: &Netns, ifname: &str) -> bool {
    let out = std::process::Command::new("ip").args(["-n", &ns.name, "-d", "link", "show", ifname]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains("prog/xdp")
}

#[test]
fn af_xdp_carries_frames_both_ways_in_batches_and_in_place() {
    if !can_run_as_root("af_xdp_carries_frames_both_ways_in_batches_and_in_place") {
        return;
    }
    let ns = veth("1500");
    let mut x = xdp_on(&ns, "lrxa", Steer::All);
    let mut p: PacketLink = link::packet::create_in_netns(&ns.name, "lrxb", 1500).unwrap();
    assert_eq!(x.kind(), "af_xdp");
    assert_eq!(x.max_frame(), 1518);
    eprintln!("AF_XDP mode: {}", x.mode_label());
    assert!(xdp_attached(&ns, "lrxa"), "the steering program is not attached");

    // AF_PACKET -> AF_XDP, received through batches: 3000 frames (more than a ring) in order.
    let n = 3000u32;
    let (mut next, mut got) = (0u32, Vec::new());
    let mut tx = FrameBatch::new(32, 2048);
    poll_until(Duration::from_secs(20), || {
        while next < n && !tx.is_full() {
            assert!(tx.push(&frame(next)));
            next += 1;
        }
        p.tx_batch(Instant::now(), &mut tx).unwrap();
        rx_test_frames(&mut x, &mut got);
        got.len() >= n as usize
    });
    assert_eq!(got.len(), n as usize, "frames lost on the way into AF_XDP");
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f, &frame(i as u32), "frame {i} differs");
    }

    // AF_XDP -> AF_PACKET: through batches, then built in place (the receiver drains as it
    // goes: its socket buffer holds only so many frames).
    let mut back = Vec::new();
    let mut tx = FrameBatch::new(32, 2048);
    for i in 0..100 {
        assert!(tx.push(&frame(i)));
        if tx.is_full() || i == 99 {
            while !tx.is_empty() {
                x.tx_batch(Instant::now(), &mut tx).unwrap();
            }
            rx_test_frames(&mut p, &mut back);
        }
    }
    for i in 100..200u32 {
        let f = frame(i);
        let built = x.tx_in_place(Instant::now(), &mut |slot: &mut [u8]| {
            slot[..f.len()].copy_from_slice(&f);
            f.len()
        });
        assert!(matches!(built, Some(Ok(true))), "in-place transmit refused frame {i}");
        if i % 16 == 0 {
            x.tx_batch(Instant::now(), &mut FrameBatch::new(1, 64)).unwrap();
            rx_test_frames(&mut p, &mut back);
        }
    }
    x.tx_batch(Instant::now(), &mut FrameBatch::new(1, 64)).unwrap();
    poll_until(Duration::from_secs(10), || {
        rx_test_frames(&mut p, &mut back);
        back.len() >= 200
    });
    assert_eq!(back.len(), 200, "frames lost on the way out of AF_XDP");
    for (i, f) in back.iter().enumerate() {
        assert_eq!(f, &frame(i as u32), "frame {i} differs");
    }

    // Received in place, answered through the lent transmit side.
    let mut tx = FrameBatch::new(8, 2048);
    for i in 0..8 {
        assert!(tx.push(&frame(1000 + i)));
    }
    p.tx_batch(Instant::now(), &mut tx).unwrap();
    let mut echoed = 0;
    poll_until(Duration::from_secs(10), || {
        let r = x.rx_in_place(Instant::now(), 64, &mut |txl: &mut dyn Link, f: &[u8]| {
            if f[12..14] == ETHERTYPE {
                let mut b = FrameBatch::new(1, 2048);
                assert!(b.push(f));
                assert_eq!(txl.tx_batch(Instant::now(), &mut b).unwrap(), 1);
            }
        });
        echoed += r.unwrap().unwrap();
        echoed >= 8
    });
    let mut back = Vec::new();
    poll_until(Duration::from_secs(10), || {
        rx_test_frames(&mut p, &mut back);
        back.len() >= 8
    });
    assert_eq!(back, (0..8).map(|i| frame(1000 + i)).collect::<Vec<_>>());
    let s = x.stats();
    assert_eq!((s.rx_frames, s.tx_frames), (u64::from(n) + 8, 208));

    drop(x);
    assert!(!xdp_attached(&ns, "lrxa"), "the steering program outlived its link");
}

/// Send `frames` from lrxb to lrxa, where `x` has the steering program; what `x` took and
/// what passed to the kernel (seen by an AF_PACKET socket on lrxa), once at least `mine`
/// and `kernels` of them arrived (or 5 s passed).
fn steered(
    ns: &Netns,
    x: &mut XdpLink,
    frames: &[Vec<u8>],
    mine: usize,
    kernels: usize,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut kernel_side = link::packet::create_in_netns(&ns.name, "lrxa", 1500).unwrap();
    let mut p = link::packet::create_in_netns(&ns.name, "lrxb", 1500).unwrap();
    let mut tx = FrameBatch::new(8, 2048);
    for f in frames {
        assert!(tx.push(f));
    }
    p.tx_batch(Instant::now(), &mut tx).unwrap();
    let (mut took, mut passed) = (Vec::new(), Vec::new());
    poll_until(Duration::from_secs(5), || {
        let mut rx = FrameBatch::new(16, 2048);
        x.rx_batch(Instant::now(), &mut rx).unwrap();
        took.extend(rx.iter().map(|f| f.to_vec()));
        let mut rx = FrameBatch::new(16, 2048);
        kernel_side.rx_batch(Instant::now(), &mut rx).unwrap();
        passed.extend(rx.iter().filter(|f| f[6..12] == [0x02, 0, 0, 0, 0, 0xaa]).map(|f| f.to_vec()));
        took.len() >= mine && passed.len() >= kernels
    });
    (took, passed)
}

#[test]
fn af_xdp_takes_only_the_hosts_frames_and_passes_the_rest_to_the_kernel() {
    if !can_run_as_root("af_xdp_takes_only_the_hosts_frames_and_passes_the_rest_to_the_kernel") {
        return;
    }
    let ns = veth("1500");
    let ours = Ipv4Addr::new(10, 9, 0, 2);
    let mut x = xdp_on(&ns, "lrxa", Steer::ipv4(vec![ours]));
    // What passes to the kernel is still seen by an AF_PACKET socket on the same interface.
    let frames = [ipv4_frame(ours, 1), ipv4_frame(Ipv4Addr::new(10, 9, 0, 3), 2), frame(7), ipv4_frame(ours, 3)];
    let (mine, kernels) = steered(&ns, &mut x, &frames, 2, 2);
    assert_eq!(mine, vec![ipv4_frame(ours, 1), ipv4_frame(ours, 3)]);
    assert_eq!(kernels, vec![ipv4_frame(Ipv4Addr::new(10, 9, 0, 3), 2), frame(7)]);
}

#[test]
fn af_xdp_takes_the_hosts_ipv6_and_its_solicitations_and_passes_the_rest() {
    if !can_run_as_root("af_xdp_takes_the_hosts_ipv6_and_its_solicitations_and_passes_the_rest") {
        return;
    }
    let ns = veth("1500");
    let ours: Ipv6Addr = "fd77::2".parse().unwrap();
    let other: Ipv6Addr = "fd77::3".parse().unwrap();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let solicited: Ipv6Addr = "ff02::1:ff00:2".parse().unwrap();
    let steer = Steer::Host { ipv4: vec![Ipv4Addr::new(10, 9, 0, 2)], ipv6: vec![ours] };
    let mut x = xdp_on(&ns, "lrxa", steer);
    let mut frames: Vec<Vec<u8>> = [ours, other, solicited, all_nodes, ours]
        .into_iter()
        .enumerate()
        .map(|(i, d)| ipv6_frame(d, i as u8))
        .collect();
    frames.push(ipv4_frame(Ipv4Addr::new(10, 9, 0, 2), 9));
    let (mine, kernels) = steered(&ns, &mut x, &frames, 4, 2);
    let want_mine = vec![
        ipv6_frame(ours, 0),
        ipv6_frame(solicited, 2),
        ipv6_frame(ours, 4),
        ipv4_frame(Ipv4Addr::new(10, 9, 0, 2), 9),
    ];
    assert_eq!(mine, want_mine);
    assert_eq!(kernels, vec![ipv6_frame(other, 1), ipv6_frame(all_nodes, 3)]);
}

#[test]
fn af_xdp_faults_say_what_is_wrong() {
    if !can_run_as_root("af_xdp_faults_say_what_is_wrong") {
        return;
    }
    let ns = veth("1500");
    let msg = |r: Result<Vec<XdpLink>, LinkError>| match r {
        Err(e) => e.to_string(),
        Ok(_) => "opened".to_string(),
    };
    let cfg = XdpConfig::new(Steer::All);
    let m = msg(af_xdp::create_in_netns(&ns.name, "lrx-nosuch", 1, &cfg));
    assert!(m.contains("no interface named"), "{m}");
    ns.ip(&["link", "set", "lrxb", "down"]).unwrap();
    let m = msg(af_xdp::create_in_netns(&ns.name, "lrxb", 1, &cfg));
    assert!(m.contains("is down") && m.contains("ip link set lrxb up"), "{m}");
    let m = msg(af_xdp::create_in_netns(&ns.name, "lrxa", 4, &cfg));
    assert!(m.contains("no queue 1"), "{m}");
    let _held = xdp_on(&ns, "lrxa", Steer::All);
    let m = msg(af_xdp::create_in_netns(&ns.name, "lrxa", 1, &cfg));
    assert!(m.contains("already has an XDP program"), "{m}");
    drop(_held);
    let iface = ns_attach(&ns, "lrxa");
    let _first = iface.open_queue(0).unwrap();
    let m = match iface.open_queue(0) {
        Err(e) => e.to_string(),
        Ok(_) => "opened".into(),
    };
    assert!(m.contains("queue 0 of lrxa is already used"), "{m}");
    let mut big = cfg.clone();
    big.ring = 100;
    let m = msg(af_xdp::create_in_netns(&ns.name, "lrxa", 1, &big));
    assert!(m.contains("power of two"), "{m}");
}
