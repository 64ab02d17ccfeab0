//! Matching tests: header filtering, buffers, flowbits, partial rules, reload, threads.

use std::net::Ipv4Addr;
use std::sync::Arc;

use accel::ids::{FlowBits, HeaderFields, Matches, PacketMeta, Proto, RuleSet, RuleSetHandle, Scratch, Vars};

fn set(rules: &str) -> RuleSet {
    RuleSet::parse(rules, "test.rules", &Vars::default(), true).unwrap().0
}

fn meta(proto: Proto, sp: u16, dp: u16, to_server: Option<bool>) -> PacketMeta {
    PacketMeta {
        proto,
        src: Ipv4Addr::new(203, 0, 113, 5),
        dst: Ipv4Addr::new(10, 0, 0, 2),
        src_port: sp,
        dst_port: dp,
        to_server,
        established: true,
    }
}

fn sids(s: &RuleSet, m: &PacketMeta, payload: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    s.match_payload(m, payload, &mut Scratch::new(), &mut out);
    out
}

#[test]
fn header_filters_and_order() {
    let s = set(r#"
alert tcp any any -> any 80 (content:"evil"; sid:30;)
alert tcp any any -> any 80 (content:"evil"; flow:to_client; sid:20;)
alert udp any any -> any 80 (content:"evil"; sid:10;)
alert tcp any 80 <> any any (content:"evil"; sid:40;)
alert tcp any any -> 10.9.0.0/16 any (content:"evil"; sid:50;)
alert ip any any -> any any (content:"EVIL",nocase; sid:5;)
alert tcp any any -> any any (content:"EVIL"; sid:6;)
"#);
    assert_eq!(sids(&s, &meta(Proto::Tcp, 40000, 80, Some(true)), b"..evil.."), vec![5, 30, 40]);
    assert_eq!(sids(&s, &meta(Proto::Tcp, 40000, 80, None), b"..evil.."), vec![5, 20, 30, 40]);
    assert_eq!(sids(&s, &meta(Proto::Udp, 40000, 80, None), b"..evil.."), vec![5, 10]);
    // <> matches with source and destination swapped.
    assert_eq!(sids(&s, &meta(Proto::Tcp, 5555, 80, Some(true)), b"evil"), vec![5, 30, 40]);
    assert_eq!(sids(&s, &meta(Proto::Tcp, 80, 5555, Some(true)), b"evil"), vec![5, 40]);
    assert_eq!(sids(&s, &meta(Proto::Icmp, 0, 0, None), b"EVIL"), vec![5]);
    assert_eq!(sids(&s, &meta(Proto::Tcp, 1, 2, None), b"nothing here"), Vec::<u32>::new());
    // Appends to what the caller already has.
    let mut out = vec![999];
    s.match_payload(&meta(Proto::Tcp, 1, 2, None), b"EVIL", &mut Scratch::new(), &mut out);
    assert_eq!(out, vec![999, 5, 6]);
}

#[test]
fn rules_without_content_use_port_groups() {
    let s = set(r#"
alert udp any any -> any 53 (dsize:>10; sid:1;)
alert udp any 53 -> any any (pcre:"/^\x00\x01/"; sid:2;)
alert udp any any -> any any (byte_test:1,=,7,0; sid:3;)
"#);
    assert_eq!(sids(&s, &meta(Proto::Udp, 4000, 53, None), b"0123456789ab"), vec![1]);
    assert_eq!(sids(&s, &meta(Proto::Udp, 53, 4000, None), b"\x00\x01zz"), vec![2]);
    assert_eq!(sids(&s, &meta(Proto::Udp, 9, 9, None), b"\x07"), vec![3]);
    assert_eq!(sids(&s, &meta(Proto::Udp, 4000, 54, None), b"0123456789ab"), Vec::<u32>::new());
}

#[test]
fn http_buffers() {
    let s = set(r#"
alert tcp any any -> any $HTTP_PORTS (flow:to_server; http_uri; content:"/etc/passwd"; sid:1;)
alert tcp any any -> any $HTTP_PORTS (http_raw_uri; content:"%2e%2e"; sid:2;)
alert tcp any any -> any $HTTP_PORTS (http_method; content:"POST"; http_client_body; content:"cmd=",depth 4; sid:3;)
alert tcp any any -> any $HTTP_PORTS (http_header; content:"User-Agent|3A| evilbot"; http_cookie; content:"admin=1"; sid:4;)
alert tcp any $HTTP_PORTS -> any any (http_stat_code; content:"500"; file_data; content:"stack trace"; sid:5;)
alert tcp any any -> any $HTTP_PORTS (http_uri; content:"GET"; sid:6;)
"#);
    let m = meta(Proto::Tcp, 40000, 80, Some(true));
    let req = b"GET /a/%2e%2e/etc%2fpasswd HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_eq!(sids(&s, &m, req), vec![1, 2]);
    let post = b"POST /x HTTP/1.1\r\nUser-Agent: evilbot\r\nCookie: admin=1\r\nContent-Length: 9\r\n\r\ncmd=ls -l";
    assert_eq!(sids(&s, &m, post), vec![3, 4]);
    // The body is de-chunked before matching.
    let chunked = b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\ncm\r\n2\r\nd=\r\n0\r\n\r\n";
    assert_eq!(sids(&s, &m, chunked), vec![3]);
    let resp = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 16\r\n\r\nhere stack trace";
    assert_eq!(sids(&s, &meta(Proto::Tcp, 80, 40000, Some(false)), resp), vec![5]);
    // Pipelined requests: the second one matches.
    let two = b"GET /ok HTTP/1.1\r\n\r\nGET /etc/passwd HTTP/1.1\r\n\r\n";
    assert_eq!(sids(&s, &m, two), vec![1]);
    // HTTP buffers do not exist in non-HTTP payloads.
    assert_eq!(sids(&s, &m, b"/etc/passwd"), Vec::<u32>::new());
}

#[test]
fn flowbits_across_calls() {
    let s = set(r#"
alert tcp any any -> any 21 (flow:to_server; content:"USER "; flowbits:set,ftp.login; flowbits:noalert; sid:1;)
alert tcp any 21 -> any any (flow:to_client; content:"230 "; flowbits:isset,ftp.login; sid:2;)
alert tcp any 21 -> any any (flow:to_client; content:"230 "; flowbits:isnotset,ftp.login; sid:3;)
"#);
    let mut flow = FlowBits::new();
    let mut scratch = Scratch::new();
    let mut m = Matches::default();
    let up = meta(Proto::Tcp, 40000, 21, Some(true));
    let down = meta(Proto::Tcp, 21, 40000, Some(false));
    s.match_packet(&down, &HeaderFields::default(), b"230 ok", &mut flow, &mut scratch, &mut m);
    assert_eq!(m.confirmed, vec![3]);
    s.match_packet(&up, &HeaderFields::default(), b"USER bob", &mut flow, &mut scratch, &mut m);
    assert_eq!(m.confirmed, Vec::<u32>::new(), "noalert");
    s.match_packet(&down, &HeaderFields::default(), b"230 ok", &mut flow, &mut scratch, &mut m);
    assert_eq!(m.confirmed, vec![2]);
    // match_payload starts from empty flowbits each call.
    assert_eq!(sids(&s, &down, b"230 ok"), vec![3]);
}

#[test]
fn header_fields_and_partial_rules() {
    let s = set(r#"
alert icmp any any -> any any (itype:8; content:"ping"; sid:1;)
alert tcp any any -> any any (flags:S; content:"syn"; sid:2;)
alert tcp any any -> any any (content:"tls"; ssl_state:client_hello; sid:3;)
alert tcp any any -> any any (content:"abab"; pcre:"/(ab)\1/"; sid:4;)
"#);
    // A backreference runs on PCRE2: sid 4 is fully supported.
    assert!(!s.is_fully_supported(3) && s.is_fully_supported(4));
    let mut m = Matches::default();
    let mut flow = FlowBits::new();
    let mut sc = Scratch::new();
    let hdr = HeaderFields { icmp_type: Some(8), tcp_flags: Some(0x02), ..Default::default() };
    s.match_packet(&meta(Proto::Icmp, 0, 0, None), &hdr, b"ping", &mut flow, &mut sc, &mut m);
    assert_eq!(m.confirmed, vec![1]);
    // Unknown header fields: the rule does not match.
    assert_eq!(sids(&s, &meta(Proto::Icmp, 0, 0, None), b"ping"), Vec::<u32>::new());
    s.match_packet(&meta(Proto::Tcp, 1, 2, None), &hdr, b"syn tls abab", &mut flow, &mut sc, &mut m);
    assert_eq!(m.confirmed, vec![2, 4]);
    // Partial rules never confirm; they are reported as approximate.
    assert_eq!(m.approximate, vec![3]);
    assert_eq!(sids(&s, &meta(Proto::Tcp, 1, 2, None), b"tls abab"), vec![4]);
}

#[test]
fn reload_and_threads() {
    let h = RuleSetHandle::new(set("alert tcp any any -> any any (content:\"one\"; sid:1;)"));
    let old: Arc<RuleSet> = h.current();
    h.replace(set("alert tcp any any -> any any (content:\"two\"; sid:2;)"));
    let m = meta(Proto::Tcp, 1, 2, None);
    assert_eq!(sids(&old, &m, b"one two"), vec![1]);
    assert_eq!(sids(&h.current(), &m, b"one two"), vec![2]);
    let cur = h.current();
    std::thread::scope(|sc| {
        for t in 0..2 {
            let cur = &cur;
            sc.spawn(move || {
                let mut scratch = Scratch::new();
                let mut out = Vec::new();
                for i in 0..1000 {
                    out.clear();
                    let p = if (i + t) % 2 == 0 { &b"two"[..] } else { &b"none"[..] };
                    cur.match_payload(&m, p, &mut scratch, &mut out);
                    assert_eq!(out.len(), usize::from((i + t) % 2 == 0));
                }
            });
        }
    });
}
