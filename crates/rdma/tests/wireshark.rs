//! The Wireshark dissector shipped in `wireshark/linerate_rdma.lua` decodes captures of
//! linerate RDMA over UDP and raw Ethernet: tshark's fields match what was sent, CRCs of
//! real packets verify and a corrupted one is flagged.

mod common;

use common::{drain, pattern};
use net::Config;
use rdma::{Peer, RdmaConfig, Transport, WriteOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use testbed::{HostOptions, Testbed, TestbedConfig};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("wireshark/linerate_rdma.lua")
}

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Rows of the given fields for every lrrdma packet in `pcap`.
fn decode(pcap: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.arg("-n").arg("-X").arg(format!("lua_script:{}", script().display())).arg("-r").arg(pcap);
    c.args(["-Y", "lrrdma", "-T", "fields", "-E", "separator=|"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let out = c.output().expect("tshark runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("Lua: Error"), "tshark failed: {err}");
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('|').map(str::to_string).collect()).collect()
}

/// Two hosts, host 0 captured; host 0 writes 3000 bytes registered and 100 unregistered
/// into host 1 and sends one corrupted packet.
fn capture(transport: Transport, pcap: &Path) -> (u32, u64, u64) {
    let cfg = RdmaConfig { transport, ..RdmaConfig::default() }.packet_payload(1024);
    let mut tb = Testbed::new(TestbedConfig::default());
    let a = tb
        .add_host_with(Config::host("10.0.0.1/24"), HostOptions { impairment: None, pcap: Some(pcap.into()) })
        .unwrap();
    let b = tb.add_host("10.0.0.2/24").unwrap();
    let mut na = rdma::RdmaNode::new(tb.host(a), cfg.clone()).unwrap();
    let mut nb = rdma::RdmaNode::new(tb.host(b), cfg).unwrap();
    let key = nb.register(vec![0u8; 8192]).unwrap();
    let dst = nb.address(tb.host(b));
    let w1 = na.post_write_with(dst, key, 100, pattern(3000, 1), WriteOptions { registered: Some(true) }).unwrap();
    let w2 = na.post_write_with(dst, key, 5000, pattern(100, 2), WriteOptions { registered: Some(false) }).unwrap();
    let mut done = Vec::new();
    for _ in 0..2000 {
        let now = tb.now();
        na.poll(tb.host(a), now).unwrap();
        nb.poll(tb.host(b), now).unwrap();
        tb.step().unwrap();
        drain(na.completions(), &mut done);
        if done.len() == 2 && na.packets_in_flight() == 0 {
            break;
        }
    }
    assert_eq!(done.len(), 2);
    // One corrupted packet (a payload byte flipped after the CRC was computed).
    let mut bad = vec![0u8; 48 + 4];
    let r = rdma::wire::RdmaRepr {
        ty: rdma::wire::PacketType::Data,
        flags: 0,
        op_id: 77,
        index: 0,
        count: 1,
        key: key.0,
        op_len: 4,
        offset: 0,
        stride: 4,
        span: 0,
    };
    r.emit(&mut bad, b"abcd").unwrap();
    bad[50] ^= 0xff;
    match (transport, dst) {
        (Transport::Udp { .. }, Peer::Udp(to)) => {
            let s = tb.host(a).udp_bind(4444).unwrap();
            tb.host(a).udp_send_to(s, to, &bad).unwrap();
        }
        (Transport::Eth { ethertype }, Peer::Eth(to)) => {
            // The node holds the EtherType's socket: close it, then send on a raw socket.
            na.close(tb.host(a)).unwrap();
            let raw = tb.host(a).raw_bind(ethertype).unwrap();
            tb.host(a).raw_send(raw, to, &bad).unwrap();
        }
        _ => unreachable!(),
    }
    for _ in 0..20 {
        tb.step().unwrap();
    }
    drop(tb);
    (key.0, w1, w2)
}

fn check(transport: Transport, name: &str) {
    // A test that cannot run fails and says why (make setup installs tshark).
    assert!(
        tshark_available(),
        "NOT RUN: tshark is not installed, so the dissector cannot be checked (make setup installs it)"
    );
    let dir = std::env::temp_dir().join(format!("lrrdma-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("a.pcap");
    let (key, w1, w2) = capture(transport, &pcap);
    let rows = decode(
        &pcap,
        &[
            "lrrdma.type",
            "lrrdma.write_id",
            "lrrdma.index",
            "lrrdma.count",
            "lrrdma.key",
            "lrrdma.offset",
            "lrrdma.payload_len",
            "lrrdma.flags.registered",
            "lrrdma.crc.status",
            "lrrdma.op_len",
            "lrrdma.segment_no",
            "lrrdma.span",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{name}: {} packets decoded, e.g. {:?}", rows.len(), rows.first());
    let keyhex = format!("0x{key:08x}");
    let find = |ty: &str, wid: u64, idx: &str| {
        rows.iter().filter(|r| r[0] == ty && r[1] == wid.to_string() && r[2] == idx).count()
    };
    // The registered write: RegisterFirst then two Data packets of 1024/1024/952 bytes,
    // each ACKed: the spans of its ACKs (runs answered at once) add up to 3, starting at 0.
    assert_eq!(find("1", w1, "0"), 1, "{rows:?}");
    assert_eq!(find("2", w1, "1") + find("2", w1, "2"), 2, "{rows:?}");
    let acks: Vec<_> = rows.iter().filter(|r| r[0] == "3" && r[1] == w1.to_string()).collect();
    let spans: u32 = acks.iter().map(|r| r[11].parse::<u32>().unwrap()).sum();
    assert_eq!((spans, acks[0][2].as_str()), (3, "0"), "{acks:?}");
    assert!(rows.iter().filter(|r| r[0] != "3").all(|r| r[11] == "0"), "a span only on ACKs");
    let first = rows.iter().find(|r| r[0] == "1").unwrap();
    assert_eq!(first[3..11].to_vec(), vec!["3", &keyhex, "100", "1024", "1", "good", "3000", "0"]);
    // The unregistered write: one Data packet, its ACK, the Notify (index = count) and its ACK.
    assert_eq!(find("2", w2, "0"), 1);
    assert_eq!(find("5", w2, "1"), 1, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r[1] == w2.to_string() && r[0] == "3").count(), 2);
    let d = rows.iter().find(|r| r[0] == "2" && r[1] == w2.to_string()).unwrap();
    assert_eq!((d[5].as_str(), d[6].as_str(), d[7].as_str()), ("5000", "100", "0"));
    // Every real packet's CRC verifies; the corrupted one is flagged.
    let bad: Vec<_> = rows.iter().filter(|r| r[8] != "good").collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0][1], "0", "op 77 is write 0, segment 77: {bad:?}");
}

#[test]
fn tshark_decodes_rdma_over_udp() {
    check(Transport::Udp { port: rdma::DEFAULT_UDP_PORT }, "udp");
}

#[test]
fn tshark_decodes_rdma_over_raw_ethernet() {
    check(Transport::Eth { ethertype: rdma::DEFAULT_ETHERTYPE }, "eth");
}
