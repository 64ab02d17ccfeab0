//! Rule parser tests: header forms, options, content decoding, errors with file:line:problem.

use std::net::Ipv4Addr;

use accel::ids::parse::{decode_content, parse_rule, Reason, RuleError};
use accel::ids::rule::*;
use accel::ids::{RuleSet, Vars};
use accel::AccelError;
use proptest::prelude::*;

fn rule(text: &str) -> Rule {
    parse_rule(text, 1, &Vars::default()).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn err(text: &str) -> String {
    parse_rule(text, 1, &Vars::default()).expect_err(text).reason.to_string()
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

#[test]
fn header_forms() {
    let r = rule("alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (sid:1;)");
    assert_eq!(r.action, Action::Alert);
    assert_eq!(r.proto, RuleProto::Tcp);
    assert!(r.src.is_any() && r.dst.is_any());
    assert!(r.dst_ports.contains(80) && !r.dst_ports.contains(81));
    assert!(!r.bidirectional);

    let r = rule("drop udp [10.0.0.0/8,!10.1.0.0/16] [1:1023,!53] <> 192.168.1.7 1024: (sid:2;)");
    assert_eq!(r.action, Action::Drop);
    assert!(r.bidirectional);
    assert!(r.src.matches(ip("10.2.3.4")) && !r.src.matches(ip("10.1.3.4")) && !r.src.matches(ip("11.0.0.1")));
    assert!(
        r.src_ports.contains(1)
            && r.src_ports.contains(1023)
            && !r.src_ports.contains(53)
            && !r.src_ports.contains(1024)
    );
    assert!(r.dst.matches(ip("192.168.1.7")) && !r.dst.matches(ip("192.168.1.8")));
    assert!(r.dst_ports.contains(65535) && !r.dst_ports.contains(1023));

    let r = rule("pass icmp !$HOME_NET any -> any :100 (sid:3;)");
    assert_eq!(r.action, Action::Pass);
    assert_eq!(r.proto, RuleProto::Icmp);
    // HOME_NET is any by default, so !HOME_NET matches nothing.
    assert!(!r.src.matches(ip("1.2.3.4")));
    assert!(r.dst_ports.contains(0) && r.dst_ports.contains(100) && !r.dst_ports.contains(101));

    for (a, want) in [("log", Action::Log), ("reject", Action::Reject), ("sdrop", Action::Sdrop)] {
        assert_eq!(rule(&format!("{a} ip any any -> any any (sid:4;)")).action, want);
    }
    let r = rule("alert tcp any $HTTP_PORTS -> any !$HTTP_PORTS (sid:5;)");
    assert!(r.src_ports.contains(8080) && !r.dst_ports.contains(8080) && r.dst_ports.contains(22));
    let r = rule("alert tcp any any -> any [$HTTP_PORTS,$ORACLE_PORTS] (sid:6;)");
    assert!(r.dst_ports.contains(80) && r.dst_ports.contains(1521) && !r.dst_ports.contains(22));
}

#[test]
fn variables_can_be_set_and_nest() {
    let mut v = Vars::default();
    v.set_net("HOME_NET", "[192.168.0.0/16,10.0.0.0/8]");
    v.set_net("EXTERNAL_NET", "!$HOME_NET");
    let r = parse_rule("alert tcp $EXTERNAL_NET any -> $HTTP_SERVERS 80 (sid:1;)", 1, &v).unwrap();
    assert!(r.src.matches(ip("8.8.8.8")) && !r.src.matches(ip("10.0.0.1")));
    assert!(r.dst.matches(ip("192.168.3.3")) && !r.dst.matches(ip("8.8.8.8")));
    let e = parse_rule("alert tcp $NOPE any -> any any (sid:1;)", 1, &v).unwrap_err();
    assert!(e.reason.to_string().contains("undefined address variable '$NOPE'"), "{e}");
    v.set_net("LOOP", "$LOOP");
    assert!(parse_rule("alert tcp $LOOP any -> any any (sid:1;)", 1, &v)
        .unwrap_err()
        .reason
        .to_string()
        .contains("cycle"));
    // Rule files may define variables themselves.
    let (set, rep) = RuleSet::parse(
        "ipvar MINE 1.2.3.4\nportvar P [7,9]\nalert udp any any -> $MINE $P (sid:9;)\n",
        "t",
        &Vars::default(),
        true,
    )
    .unwrap();
    assert_eq!(rep.fully_supported, 1);
    let r = set.rule(9).unwrap();
    assert!(r.dst.matches(ip("1.2.3.4")) && r.dst_ports.contains(9) && !r.dst_ports.contains(8));
}

#[test]
fn content_decoding() {
    assert_eq!(decode_content(r#""abc""#).unwrap().0, b"abc");
    assert_eq!(decode_content(r#""a|0d 0A|b""#).unwrap().0, b"a\r\nb");
    assert_eq!(decode_content(r#""|00 01 FF|""#).unwrap().0, [0, 1, 255]);
    assert_eq!(decode_content(r#""|0d0a|""#).unwrap().0, b"\r\n");
    assert_eq!(decode_content(r#""q\"x\;y\\z\:""#).unwrap().0, b"q\"x;y\\z:");
    assert!(decode_content(r#""|0|""#).unwrap_err().to_string().contains("odd number"));
    assert!(decode_content(r#""|zz|""#).unwrap_err().to_string().contains("not a hex digit"));
    assert!(decode_content(r#""abc"#).unwrap_err().to_string().contains("unterminated"));
}

#[test]
fn every_content_modifier() {
    let r = rule(
        r#"alert tcp any any -> any any (content:"GET",depth 3,offset 0,nocase; content:!"x|00|y",distance 1,within 10; content:"z",fast_pattern,fast_pattern_offset 0,fast_pattern_length 1; sid:7;)"#,
    );
    let c: Vec<&Content> = r.contents().collect();
    assert_eq!(c.len(), 3);
    assert_eq!(c[0].pattern, b"GET");
    assert!(c[0].nocase && !c[0].negated);
    assert_eq!((c[0].offset, c[0].depth), (Some(Num::Lit(0)), Some(Num::Lit(3))));
    assert!(c[1].negated && c[1].is_relative());
    assert_eq!(c[1].pattern, b"x\0y");
    assert_eq!((c[1].distance, c[1].within), (Some(Num::Lit(1)), Some(Num::Lit(10))));
    assert!(c[2].fast_pattern);
    assert_eq!(r.fast_pattern().unwrap().pattern, b"z");
    // Snort 2 style separate modifiers apply to the previous content.
    let r = rule(
        r#"alert tcp any any -> any any (content:"abcd"; nocase; depth:4; content:"e"; distance:0; within:1; sid:8;)"#,
    );
    let c: Vec<&Content> = r.contents().collect();
    assert!(c[0].nocase && c[0].depth == Some(Num::Lit(4)));
    assert_eq!(c[1].within, Some(Num::Lit(1)));
    // Without fast_pattern the longest non-negated content is the fast pattern.
    let r = rule(r#"alert tcp any any -> any any (content:!"longest-negated"; content:"ab"; content:"abcd"; sid:9;)"#);
    assert_eq!(r.fast_pattern().unwrap().pattern, b"abcd");
}

#[test]
fn other_options() {
    let r = rule(
        r#"alert tcp any any -> any any (msg:"a \"quoted\" msg\; ok"; flow:to_server,established; flowbits:set,a.b; flowbits:isset,x|y; flowbits:noalert; http_uri; content:"/x"; pcre:"/^\/x/Ri"; byte_test:2,>,10,0,relative,little; byte_jump:2,0,relative,align,multiplier 2,post_offset -1; byte_extract:1,0,len,relative; isdataat:!len,relative; bufferlen:>3; dsize:<100; itype:8; icode:0<>3; flags:SA+,12; fragbits:!M; ttl:<=5; service:http,ssl; classtype:misc; reference:url,x; metadata:policy x; gid:1; sid:10; rev:3;)"#,
    );
    assert_eq!(r.msg, "a \"quoted\" msg; ok");
    assert_eq!(r.flow.to_server, Some(true));
    assert!(r.flow.established);
    assert_eq!(r.flowbits.len(), 3);
    assert!(r.noalert());
    assert_eq!(r.segments.len(), 1);
    assert_eq!(r.segments[0].buffer, BufferKind::HttpUri);
    assert_eq!(r.segments[0].items.len(), 7);
    assert_eq!(r.vars, vec!["len".to_string()]);
    assert_eq!(r.header_tests.len(), 6);
    assert_eq!(r.services, vec!["http".to_string(), "ssl".to_string()]);
    assert_eq!((r.gid, r.sid, r.rev), (1, 10, 3));
    assert!(r.fully_supported(), "{:?}", r.unsupported);
}

#[test]
fn unsupported_options_are_listed_not_ignored() {
    let r = rule(
        r#"alert tcp any any -> any any (content:"a"; ssl_state:client_hello; detection_filter:track by_src,count 5,seconds 60; sid:11;)"#,
    );
    assert_eq!(r.unsupported, vec!["ssl_state".to_string(), "detection_filter".to_string()]);
    // Options on an unsupported buffer are dropped from evaluation and the rule is partial.
    let r = rule(r#"alert tcp any any -> any any (content:"a"; dce_stub_data; content:"b"; sid:12;)"#);
    assert_eq!(r.contents().count(), 1);
    assert!(!r.fully_supported());
    let r = rule(r#"alert dns (msg:"service rule"; content:"x"; sid:13;)"#);
    assert_eq!(r.unsupported, vec!["header:service (dns)".to_string()]);
    // A keyword no rule language has is named as unknown.
    let r = rule(r#"alert tcp any any -> any any (content:"a"; frobnicate:3; sid:14;)"#);
    assert_eq!(r.unsupported, vec![format!("frobnicate {}", accel::ids::parse::UNKNOWN_OPTION)]);
}

#[test]
fn application_protocol_headers_map_to_tcp_on_the_service_ports() {
    use accel::ids::rule::RuleProto;
    let http_ports = accel::ids::parse::parse_ports("$HTTP_PORTS", &Vars::default(), 0).unwrap();
    // Snort 3 service rule: TCP, server (destination) port in $HTTP_PORTS.
    let r = rule(r#"alert http (msg:"svc"; content:"x"; sid:20;)"#);
    assert_eq!(r.proto, RuleProto::Tcp);
    assert!(r.fully_supported(), "{:?}", r.unsupported);
    assert_eq!(r.dst_ports, http_ports);
    assert!(r.src_ports.contains(40000));
    assert!(
        r.approximations.iter().any(|a| a.starts_with("http header (TCP on $HTTP_PORTS")),
        "{:?}",
        r.approximations
    );
    // Suricata / Snort 2 form with addresses; to the client the server is the source.
    let r = rule(
        r#"alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"s"; flow:to_client,established; content:"x"; sid:21;)"#,
    );
    assert_eq!((r.proto, r.src_ports == http_ports, r.dst_ports.contains(40000)), (RuleProto::Tcp, true, true));
    // A header port list is narrowed, not replaced.
    let r = rule(r#"alert http any any -> any [80,8080,9] (content:"x"; sid:22;)"#);
    assert!(r.dst_ports.contains(80) && r.dst_ports.contains(8080) && !r.dst_ports.contains(9));
    // $HTTP_PORTS set by the user is what the mapping uses.
    let mut v = Vars::default();
    v.set_port("HTTP_PORTS", "8000");
    let (set, _) = RuleSet::parse(r#"alert http any any -> any any (content:"x"; sid:23;)"#, "t", &v, true).unwrap();
    let r = set.rule(23).unwrap();
    assert!(r.dst_ports.contains(8000) && !r.dst_ports.contains(80));
    // A protocol without a mapping keeps its addresses and is partial.
    let r = rule(r#"alert tls $HOME_NET any -> any any (content:"x"; sid:24;)"#);
    assert_eq!(r.proto, RuleProto::Ip);
    assert_eq!(r.unsupported, vec!["header:service (tls)".to_string()]);
}

#[test]
fn priority_is_kept() {
    assert_eq!(rule(r#"alert tcp any any -> any any (priority:4; sid:30;)"#).priority, Some(4));
    assert_eq!(rule(r#"alert tcp any any -> any any (sid:31;)"#).priority, None);
}

#[test]
fn syntax_errors_say_what_is_wrong() {
    for (text, want) in [
        ("alert tcp any any -> any any (content:\"a\"; )", "no sid"),
        ("alert tcp any any -> any any content:\"a\"; sid:1;", "missing '('"),
        ("alert tcp any any -> any any (sid:1;", "missing ')'"),
        ("alert tcp any any -> any any (sid:1;) junk", "after the closing ')'"),
        ("alert tcp any any => any any (sid:1;)", "unknown direction"),
        ("alert foo any any -> any any (sid:1;)", "unknown protocol"),
        ("warn tcp any any -> any any (sid:1;)", "unknown action"),
        ("alert tcp any any -> any 70000 (sid:1;)", "not a port number"),
        ("alert tcp 1.2.3 any -> any any (sid:1;)", "not an IPv4 address"),
        (
            "alert tcp any any -> any any (content:\"abc\",depth 2; sid:1;)",
            "depth (2) is less than the pattern length (3)",
        ),
        (
            "alert tcp any any -> any any (content:\"a\",offset 1,distance 2; sid:1;)",
            "distance can't be used with offset",
        ),
        ("alert tcp any any -> any any (content:\"a\",bogus; sid:1;)", "unknown modifier 'bogus'"),
        ("alert tcp any any -> any any (nocase; sid:1;)", "must follow a content"),
        ("alert tcp any any -> any any (pcre:\"abc\"; sid:1;)", "must start with '/'"),
        ("alert tcp any any -> any any (byte_test:2,~,1,0; sid:1;)", "unknown operator"),
        (
            "alert tcp any any -> any any (content:\"a\",offset n; sid:1;)",
            "neither a number nor a byte_extract variable",
        ),
        ("alert tcp any any -> any any (flow:sideways; sid:1;)", "flow: unknown argument 'sideways'"),
        ("alert tcp any any -> any any (msg:\"unterminated; sid:1;)", "unterminated quoted string"),
        ("alert tcp any any -> any any (sid:x;)", "not a non-negative integer"),
    ] {
        let e = err(text);
        assert!(e.contains(want), "{text}\n  got: {e}\n  want: {want}");
    }
}

#[test]
fn strict_mode_names_file_line_and_problem() {
    let dir = std::env::temp_dir().join(format!("accel-strict-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.rules");
    std::fs::write(
        &path,
        "# a comment\n\nalert tcp any any -> any 80 (msg:\"ok\"; content:\"a\"; sid:1;)\nalert tcp any any -> any 80 (msg:\"bad\"; content:\"abc\",depth 1; sid:2;)\n",
    )
    .unwrap();
    let e = RuleSet::load_strict(&path, &Vars::default()).unwrap_err();
    match &e {
        AccelError::Parse { file, line, problem } => {
            assert_eq!(file, &path.display().to_string());
            assert_eq!(*line, 4);
            assert!(problem.contains("depth (1) is less than the pattern length (3)"), "{problem}");
        }
        other => panic!("wrong error {other:?}"),
    }
    assert_eq!(e.to_string(), format!("{}:4: content: depth (1) is less than the pattern length (3)", path.display()));
    // Lenient mode loads the good rule and reports the bad one.
    let (set, rep) = RuleSet::load(&path, &Vars::default()).unwrap();
    assert_eq!((set.len(), rep.skipped, rep.total), (1, 1, 2));
    assert!(rep.errors[0].to_string().contains("broken.rules:4:"));
    // Duplicate sids are an error in strict mode, skipped in lenient mode.
    let dup = "alert tcp any any -> any any (sid:5;)\nalert tcp any any -> any any (sid:5;)\n";
    let e = RuleSet::parse(dup, "dup.rules", &Vars::default(), true).unwrap_err();
    assert!(e.to_string().starts_with("dup.rules:2: duplicate rule 1:5 (first defined at line 1)"), "{e}");
    let missing = RuleSet::load_strict(&dir.join("nope.rules"), &Vars::default()).unwrap_err();
    assert!(matches!(missing, AccelError::Io { .. }));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn multi_line_rules_and_comments() {
    let text = "# header\nalert tcp any any -> any any ( \\\n  msg:\"two lines\"; \\\n  content:\"x\"; sid:1;)\n   # indented comment\nalert tcp any any -> any any (sid:2;)\n";
    let (set, rep) = RuleSet::parse(text, "m", &Vars::default(), true).unwrap();
    assert_eq!(rep.total, 2);
    assert_eq!(set.rule(1).unwrap().line, 2);
    assert_eq!(set.rule(2).unwrap().line, 6);
}

proptest! {
    #[test]
    fn parser_never_panics_on_random_text(s in "\\PC{0,300}") {
        let _ = parse_rule(&s, 1, &Vars::default());
        let _ = RuleSet::parse(&s, "fuzz", &Vars::default(), false);
    }

    #[test]
    fn parser_never_panics_on_rule_like_text(
        head in prop::sample::select(vec!["alert tcp any any -> any any", "alert udp $HOME_NET [1:2,!3] <> !1.2.3.0/24 $HTTP_PORTS", "drop ip any any -> any any", "alert http"]),
        opts in proptest::collection::vec(prop::sample::select(vec![
            "content:\"", "content:!\"a|0", "|", "\"", ";", ",", "depth ", "offset -", "distance ", "within ", "nocase", "fast_pattern",
            "pcre:\"/", "/Ri\"", "byte_test:", "byte_jump:", "byte_extract:", "isdataat:", "bufferlen:", "flow:", "flowbits:",
            "http_uri", "file_data", "sid:", "1", "99999999999", "-5", "\\", " ", ":", "x", "(", ")", "[", "]",
        ]), 0..40),
    ) {
        let body: String = opts.concat();
        let text = format!("{head} ({body})");
        if let Ok(r) = parse_rule(&text, 1, &Vars::default()) {
            // Whatever parses must also compile and match without panicking.
            let src = format!("{text}\n");
            if let Ok((set, _)) = RuleSet::parse(&src, "p", &Vars::default(), false) {
                let meta = accel::ids::PacketMeta { proto: accel::ids::Proto::Tcp, src: Ipv4Addr::new(1,2,3,4), dst: Ipv4Addr::new(5,6,7,8), src_port: 1, dst_port: 80, to_server: None, established: true };
                let mut out = Vec::new();
                set.match_payload(&meta, b"GET /x HTTP/1.1\r\n\r\nabc", &mut accel::ids::Scratch::new(), &mut out);
            }
            let _ = r;
        }
    }
}

#[test]
fn rule_error_names_line_option_and_reason() {
    let e =
        parse_rule("alert tcp any any -> any any (content:\"abc\",depth 1; sid:1;)", 7, &Vars::default()).unwrap_err();
    assert_eq!(
        e,
        RuleError {
            file: None,
            line: 7,
            option: Some("content".into()),
            reason: Reason::bad_in("content", "depth (1) is less than the pattern length (3)")
        }
    );
    assert_eq!(e.to_string(), "rule text:7: option 'content': content: depth (1) is less than the pattern length (3)");
    let e = e.in_file("local.rules");
    assert!(e.to_string().starts_with("local.rules:7: option 'content': "), "{e}");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("depth (1)"));
    // A header error names no option.
    let h = parse_rule("alert tcp any any => any any (sid:1;)", 3, &Vars::default()).unwrap_err();
    assert_eq!((h.line, h.option.as_deref()), (3, None));
    assert_eq!(h.to_string(), "rule text:3: unknown direction '=>' (expected -> or <>)");
}
