//! Suricata's EVE JSON for alerts: one object per line with the fields log pipelines and jq
//! users read (`timestamp`, `flow_id`, `event_type`, `src_ip`, `src_port`, `dest_ip`,
//! `dest_port`, `proto`, `alert{action, gid, signature_id, rev, signature, category,
//! severity}`).

use serde_json::{json, Value};

use super::alert::Alert;
use super::flow::FlowKey;
use super::utc::Utc;

/// Largest flow id written: 2^53 - 1, so that readers that hold JSON numbers as doubles
/// (jq, JavaScript) keep every digit.
const FLOW_ID_MASK: u64 = (1 << 53) - 1;

/// A flow's id: the same for both directions of a conversation and for every run (FNV-1a of
/// the sorted endpoints and the protocol), never 0.
pub fn flow_id(k: &FlowKey) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(&k.lo.0.octets());
    eat(&k.lo.1.to_be_bytes());
    eat(&k.hi.0.octets());
    eat(&k.hi.1.to_be_bytes());
    eat(&[k.proto]);
    (h & FLOW_ID_MASK).max(1)
}

/// The EVE `proto` name of an IP protocol number.
fn proto_name(p: u8) -> String {
    match p {
        6 => "TCP".into(),
        17 => "UDP".into(),
        1 => "ICMP".into(),
        n => format!("{n:03}"),
    }
}

/// The EVE alert record of `a`, seen at `stamp` nanoseconds since the Unix epoch. The action
/// is Suricata's: `blocked` when the packet was dropped (IPS), `allowed` when it went on (IDS).
pub fn alert_record(a: &Alert, stamp: u64, blocked: bool) -> Value {
    let mut v = json!({
        "timestamp": Utc::from_unix_nanos(stamp).eve(),
        "flow_id": flow_id(&a.flow()),
        "event_type": "alert",
        "src_ip": a.src.0.to_string(),
        "dest_ip": a.dst.0.to_string(),
        "proto": proto_name(a.proto),
        "alert": {
            "action": if blocked { "blocked" } else { "allowed" },
            "gid": a.gid,
            "signature_id": a.sid,
            "rev": a.rev,
            "signature": a.msg,
            "category": a.classification.clone().unwrap_or_default(),
            "severity": a.priority,
        },
    });
    if matches!(a.proto, 6 | 17) {
        v["src_port"] = json!(a.src.1);
        v["dest_port"] = json!(a.dst.1);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn record_has_suricatas_fields() {
        let a = Alert {
            gid: 1,
            sid: 2000,
            rev: 3,
            msg: "TEST \"quoted\" thing".into(),
            classtype: Some("trojan-activity".into()),
            classification: Some("A Network Trojan was detected".into()),
            priority: 1,
            proto: 6,
            src: (Ipv4Addr::new(1, 2, 3, 4), 1000),
            dst: (Ipv4Addr::new(5, 6, 7, 8), 80),
        };
        let v = alert_record(&a, 1_709_211_909_000_042_000, false);
        let text = serde_json::to_string(&v).unwrap();
        assert!(!text.contains('\n'));
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["timestamp"], "2024-02-29T13:05:09.000042+0000");
        assert_eq!(back["event_type"], "alert");
        assert_eq!((back["src_ip"].as_str(), back["src_port"].as_u64()), (Some("1.2.3.4"), Some(1000)));
        assert_eq!((back["dest_ip"].as_str(), back["dest_port"].as_u64()), (Some("5.6.7.8"), Some(80)));
        assert_eq!(back["proto"], "TCP");
        assert_eq!(back["alert"]["signature"], "TEST \"quoted\" thing");
        assert_eq!(back["alert"]["signature_id"], 2000);
        assert_eq!(back["alert"]["action"], "allowed");
        assert_eq!(alert_record(&a, 0, true)["alert"]["action"], "blocked");
        assert_eq!(back["alert"]["severity"], 1);
        assert_eq!(back["alert"]["category"], "A Network Trojan was detected");
        // The same flow from the other side has the same id.
        let mut b = a.clone();
        std::mem::swap(&mut b.src, &mut b.dst);
        assert_eq!(alert_record(&b, 0, false)["flow_id"], back["flow_id"]);
        assert!(back["flow_id"].as_u64().unwrap() <= FLOW_ID_MASK);
    }
}
