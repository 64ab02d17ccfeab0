//! Snort 3 rule text parser.
//!
//! A rules file holds one rule per logical line (a line ending in `\` continues on the next),
//! `#` comment lines and blank lines, and optionally `ipvar`/`portvar`/`var NAME value` lines
//! that set variables for the rules below them. A rule is
//! `action proto src_addr src_port -> dst_addr dst_port ( option; option:value; ... )`
//! (`<>` for both directions), or the Snort 3 service form `action service ( ... )`.
//!
//! Parsing never panics: every problem becomes a message naming the line and the problem.
//! Options the engine cannot evaluate are not errors: they are listed in [`Rule::unsupported`].

use super::rule::*;
use super::vars::Vars;
use crate::prefix::Prefix;
use crate::AccelError;

/// Deepest nesting of variables inside variables before we call it a cycle.
const MAX_VAR_DEPTH: usize = 16;
/// Most `byte_extract` variables one rule may define.
const MAX_RULE_VARS: usize = 8;

/// The result of parsing a rules text leniently: the rules that parsed, and one error per rule
/// that did not.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Rules that parsed (possibly with unsupported options), in file order.
    pub rules: Vec<Rule>,
    /// One `AccelError::Parse` per rule that failed to parse.
    pub errors: Vec<AccelError>,
}

/// Parses a rules text. `source` names it in errors. With `strict`, the first syntax error is
/// returned as `Err`; otherwise errors are collected and the other rules still load.
pub fn parse_rules(text: &str, source: &str, vars: &Vars, strict: bool) -> Result<Parsed, AccelError> {
    let mut out = Parsed::default();
    let mut vars = vars.clone();
    for (line, logical) in logical_lines(text) {
        let t = logical.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let res = if let Some(rest) = strip_keyword(t, &["ipvar", "var"]) {
            set_var(rest, &mut vars, true)
        } else if let Some(rest) = strip_keyword(t, &["portvar"]) {
            set_var(rest, &mut vars, false)
        } else {
            match parse_rule(t, line, &vars) {
                Ok(r) => {
                    out.rules.push(r);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        };
        if let Err(problem) = res {
            let e = AccelError::parse(source, line, problem);
            if strict {
                return Err(e);
            }
            out.errors.push(e);
        }
    }
    Ok(out)
}

/// `text` without a leading keyword (followed by whitespace), if it starts with one of them.
fn strip_keyword<'a>(text: &'a str, kws: &[&str]) -> Option<&'a str> {
    for kw in kws {
        if let Some(rest) = text.strip_prefix(kw) {
            if rest.starts_with(char::is_whitespace) {
                return Some(rest.trim());
            }
        }
    }
    None
}

/// Handles `var NAME value` / `portvar NAME value`.
fn set_var(rest: &str, vars: &mut Vars, net: bool) -> Result<(), String> {
    let mut it = rest.splitn(2, char::is_whitespace);
    let name = it.next().unwrap_or("").trim();
    let value = it.next().unwrap_or("").trim();
    if name.is_empty() || value.is_empty() {
        return Err("variable definition needs a name and a value".into());
    }
    define_var(vars, name, value, net)
}

/// Set variable `name` to `value` after checking the value parses. `net` is false for
/// `portvar`; otherwise a name that mentions PORT is a port variable (Snort's convention for
/// `var`), any other an address variable.
pub(crate) fn define_var(vars: &mut Vars, name: &str, value: &str, net: bool) -> Result<(), String> {
    let name = name.trim_start_matches('$');
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("'{}' is not a variable name (letters, digits, '_')", shorten(name)));
    }
    if net && !name.contains("PORT") {
        parse_addr(value, vars, 0).map_err(|e| format!("{name}: {e}"))?;
        vars.set_net(name, value);
    } else {
        parse_ports(value, vars, 0).map_err(|e| format!("{name}: {e}"))?;
        vars.set_port(name, value);
    }
    Ok(())
}

/// Joins lines ending in a backslash; yields (first line number, logical line).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0usize;
    for (i, raw) in text.lines().enumerate() {
        if cur.is_empty() {
            start = i + 1;
        }
        let l = raw.trim_end();
        if let Some(stripped) = l.strip_suffix('\\') {
            cur.push_str(stripped);
            cur.push(' ');
        } else {
            cur.push_str(l);
            out.push((start, std::mem::take(&mut cur)));
        }
    }
    if !cur.trim().is_empty() {
        out.push((start, cur));
    }
    out
}

/// Parses one rule (a logical line). `line` is recorded in the rule.
pub fn parse_rule(text: &str, line: usize, vars: &Vars) -> Result<Rule, String> {
    let open = find_options_start(text).ok_or("missing '(' that starts the rule options")?;
    let header = text[..open].trim();
    let after = &text[open + 1..];
    let close = after.rfind(')').ok_or("missing ')' at the end of the rule options")?;
    let trailing = after[close + 1..].trim();
    if !trailing.is_empty() {
        return Err(format!("unexpected text '{}' after the closing ')'", shorten(trailing)));
    }
    let body = &after[..close];

    let (mut rule, app) = parse_header(header, line, vars)?;
    parse_options(body, &mut rule)?;
    if let Some(app) = app {
        map_app_proto(&mut rule, app, vars)?;
    }
    if rule.sid == 0 {
        return Err("rule has no sid (every rule needs sid:N with N > 0)".into());
    }
    Ok(rule)
}

/// The byte index of the '(' that starts the options (the first one outside brackets).
fn find_options_start(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '(' if depth <= 0 => return Some(i),
            _ => {}
        }
    }
    None
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Splits a header into whitespace-separated tokens, keeping `[ ... ]` lists whole.
fn header_tokens(h: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    for c in h.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth -= 1;
                cur.push(c);
            }
            c if c.is_whitespace() && depth <= 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c if c.is_whitespace() => {}
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn parse_action(s: &str) -> Result<Action, String> {
    Ok(match s {
        "alert" => Action::Alert,
        "log" => Action::Log,
        "pass" => Action::Pass,
        "drop" => Action::Drop,
        "reject" => Action::Reject,
        "sdrop" => Action::Sdrop,
        "block" => Action::Block,
        other => {
            return Err(format!(
                "unknown action '{}' (expected alert, log, pass, drop, reject, sdrop or block)",
                shorten(other)
            ))
        }
    })
}

/// Service names Snort 3 accepts in place of a protocol (`alert http ( ... )`).
const SERVICES: &[&str] = &[
    "http",
    "http2",
    "ftp",
    "ftp-data",
    "smtp",
    "pop3",
    "imap",
    "ssl",
    "dns",
    "ssh",
    "telnet",
    "sip",
    "smb",
    "netbios-ssn",
    "dcerpc",
    "sunrpc",
    "snmp",
    "tftp",
    "irc",
    "rdp",
    "mysql",
    "ldap",
    "kerberos",
    "modbus",
    "dnp3",
    "file",
    "nntp",
    "dhcp",
    // Suricata's application-layer protocols (`alert tls any any -> any any (...)`).
    "tls",
    "enip",
    "nfs",
    "ntp",
    "quic",
    "mqtt",
    "pgsql",
    "krb5",
    "ikev2",
    "rfb",
];

/// An application-protocol header the engine maps to TCP on the protocol's port variable:
/// (service, port variable). Other services have no mapping (the rule is partial).
const APP_PORTS: &[(&str, &str)] =
    &[("http", "HTTP_PORTS"), ("http2", "HTTP_PORTS"), ("ftp", "FTP_PORTS"), ("ssh", "SSH_PORTS")];

/// A mapped application-protocol header, applied once the options (`flow`) are known.
#[derive(Debug, Clone, Copy)]
struct AppProto {
    service: &'static str,
    ports: &'static str,
}

/// `alert http ...` (Snort 2 / Suricata / Snort 3 service rules): TCP, with the server side's
/// port restricted to the service's port variable: the destination, or the source for rules
/// on traffic to the client (`flow:to_client`). Recorded as an approximation (no protocol
/// detection: HTTP on another port is not seen, other traffic on these ports is inspected).
fn map_app_proto(rule: &mut Rule, app: AppProto, vars: &Vars) -> Result<(), String> {
    let v =
        vars.port(app.ports).ok_or_else(|| format!("'{}' rules need the port variable ${}", app.service, app.ports))?;
    let ports = parse_ports(v, vars, 0).map_err(|e| format!("${}: {e}", app.ports))?;
    rule.proto = RuleProto::Tcp;
    if rule.flow.to_server == Some(false) {
        rule.src_ports = rule.src_ports.intersect(&ports);
    } else {
        rule.dst_ports = rule.dst_ports.intersect(&ports);
    }
    rule.approximations
        .push(format!("{} header (TCP on ${}, no application-protocol detection)", app.service, app.ports));
    rule.approximations.sort();
    Ok(())
}

/// The mapping of a service name, if it has one.
fn app_proto(service: &str) -> Option<AppProto> {
    APP_PORTS.iter().find(|(s, _)| *s == service).map(|&(service, ports)| AppProto { service, ports })
}

fn parse_header(h: &str, line: usize, vars: &Vars) -> Result<(Rule, Option<AppProto>), String> {
    let toks = header_tokens(h);
    let mut app = None;
    let mut rule = Rule {
        line,
        action: Action::Alert,
        proto: RuleProto::Ip,
        src: AddrSpec::Any,
        src_ports: PortSet::any(),
        bidirectional: false,
        dst: AddrSpec::Any,
        dst_ports: PortSet::any(),
        gid: 1,
        sid: 0,
        rev: 0,
        msg: String::new(),
        classtype: None,
        priority: None,
        services: Vec::new(),
        flow: FlowOpts::default(),
        flowbits: Vec::new(),
        header_tests: Vec::new(),
        segments: Vec::new(),
        vars: Vec::new(),
        unsupported: Vec::new(),
        approximations: Vec::new(),
    };
    match toks.len() {
        0 => return Err("empty rule header (expected 'action proto src port -> dst port')".into()),
        1 => {
            rule.action = parse_action(&toks[0])?;
            rule.unsupported.push("header:no-protocol".into());
        }
        2 => {
            rule.action = parse_action(&toks[0])?;
            let p = toks[1].as_str();
            if SERVICES.contains(&p) {
                rule.services.push(p.to_string());
                app = app_proto(p);
                if app.is_none() {
                    // Without service identification the rule would apply to every flow: partial.
                    rule.unsupported.push(format!("header:service ({p})"));
                }
            } else {
                return Err(format!("'{}' is neither a protocol (tcp, udp, icmp, ip) nor a known service", shorten(p)));
            }
        }
        7 => {
            rule.action = parse_action(&toks[0])?;
            rule.proto = match toks[1].as_str() {
                "tcp" => RuleProto::Tcp,
                "udp" => RuleProto::Udp,
                "icmp" => RuleProto::Icmp,
                "ip" => RuleProto::Ip,
                p if SERVICES.contains(&p) => {
                    // An application-layer protocol in place of the transport (Suricata, Snort 2).
                    rule.services.push(p.to_string());
                    app = app_proto(p);
                    if app.is_none() {
                        rule.unsupported.push(format!("header:service ({p})"));
                    }
                    RuleProto::Ip
                }
                other => {
                    return Err(format!(
                        "unknown protocol '{}' (expected tcp, udp, icmp, ip or an application protocol such as http)",
                        shorten(other)
                    ))
                }
            };
            rule.src = parse_addr(&toks[2], vars, 0).map_err(|e| format!("source address: {e}"))?;
            rule.src_ports = parse_ports(&toks[3], vars, 0).map_err(|e| format!("source port: {e}"))?;
            rule.bidirectional = match toks[4].as_str() {
                "->" => false,
                "<>" => true,
                other => return Err(format!("unknown direction '{}' (expected -> or <>)", shorten(other))),
            };
            rule.dst = parse_addr(&toks[5], vars, 0).map_err(|e| format!("destination address: {e}"))?;
            rule.dst_ports = parse_ports(&toks[6], vars, 0).map_err(|e| format!("destination port: {e}"))?;
        }
        n => {
            return Err(format!(
                "rule header has {n} fields; expected 7 ('action proto src port -> dst port') or 2 ('action service')"
            ))
        }
    }
    Ok((rule, app))
}

/// Splits `s` at top-level commas (not inside brackets).
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Parses an address expression (`any`, `1.2.3.0/24`, `$VAR`, `[a,!b]`, `!x`).
pub fn parse_addr(s: &str, vars: &Vars, depth: usize) -> Result<AddrSpec, String> {
    if depth > MAX_VAR_DEPTH {
        return Err("variables nest too deep (a cycle?)".into());
    }
    let s = s.trim();
    if s.is_empty() {
        return Err("empty address".into());
    }
    if let Some(rest) = s.strip_prefix('!') {
        return Ok(AddrSpec::Not(Box::new(parse_addr(rest, vars, depth + 1)?)));
    }
    if let Some(name) = s.strip_prefix('$') {
        let v = vars.net(name).ok_or_else(|| format!("undefined address variable '${name}'"))?;
        return parse_addr(v, vars, depth + 1);
    }
    if s == "any" {
        return Ok(AddrSpec::Any);
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or_else(|| format!("unbalanced '[' in '{}'", shorten(s)))?;
        let mut items = Vec::new();
        for part in split_top(inner) {
            items.push(parse_addr(part, vars, depth + 1)?);
        }
        if items.len() == 1 && !matches!(items[0], AddrSpec::Not(_)) {
            return Ok(items.pop().unwrap_or(AddrSpec::Any));
        }
        return Ok(AddrSpec::List(items));
    }
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    if a.contains(':') {
        return Err(format!("IPv6 address '{}' is not supported", shorten(s)));
    }
    let addr: std::net::Ipv4Addr =
        a.parse().map_err(|_| format!("'{}' is not an IPv4 address or prefix", shorten(s)))?;
    let len: u8 = match l {
        None => 32,
        Some(l) => match l.parse::<u8>() {
            Ok(n) if n <= 32 => n,
            _ => return Err(format!("bad prefix length in '{}'", shorten(s))),
        },
    };
    let a = u32::from(addr);
    let masked = if len == 0 { 0 } else { a & (u32::MAX << (32 - u32::from(len))) };
    Ok(AddrSpec::Prefix(Prefix { addr: masked, len }))
}

/// Parses a port expression (`any`, `80`, `1024:`, `:1023`, `1:5`, `$VAR`, `[a,b,!c]`, `!x`).
pub fn parse_ports(s: &str, vars: &Vars, depth: usize) -> Result<PortSet, String> {
    if depth > MAX_VAR_DEPTH {
        return Err("variables nest too deep (a cycle?)".into());
    }
    let s = s.trim();
    if s.is_empty() {
        return Err("empty port".into());
    }
    if let Some(rest) = s.strip_prefix('!') {
        return Ok(parse_ports(rest, vars, depth + 1)?.complement());
    }
    if let Some(name) = s.strip_prefix('$') {
        let v = vars.port(name).ok_or_else(|| format!("undefined port variable '${name}'"))?;
        return parse_ports(v, vars, depth + 1);
    }
    if s == "any" {
        return Ok(PortSet::any());
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or_else(|| format!("unbalanced '[' in '{}'", shorten(s)))?;
        let mut pos: Option<PortSet> = None;
        let mut neg = PortSet::none();
        for part in split_top(inner) {
            let part = part.trim();
            if let Some(n) = part.strip_prefix('!') {
                neg = neg.union(&parse_ports(n, vars, depth + 1)?);
            } else {
                let p = parse_ports(part, vars, depth + 1)?;
                pos = Some(match pos {
                    Some(acc) => acc.union(&p),
                    None => p,
                });
            }
        }
        let pos = pos.unwrap_or_else(PortSet::any);
        return Ok(pos.intersect(&neg.complement()));
    }
    let num = |t: &str| -> Result<u16, String> {
        t.trim().parse::<u16>().map_err(|_| format!("'{}' is not a port number (0..=65535)", shorten(t)))
    };
    if let Some((a, b)) = s.split_once(':') {
        let lo = if a.trim().is_empty() { 0 } else { num(a)? };
        let hi = if b.trim().is_empty() { u16::MAX } else { num(b)? };
        if lo > hi {
            return Err(format!("port range '{s}' is empty (low > high)"));
        }
        return Ok(PortSet::from_ranges(vec![(lo, hi)]));
    }
    let p = num(s)?;
    Ok(PortSet::from_ranges(vec![(p, p)]))
}

/// Splits the option body at `;` outside quotes; yields (name, value) with both trimmed.
fn split_options(body: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_q = false;
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '"' => {
                in_q = !in_q;
                cur.push(c);
            }
            ';' if !in_q => {
                push_option(&mut out, &cur)?;
                cur.clear();
            }
            c => cur.push(c),
        }
    }
    if in_q {
        return Err("unterminated quoted string in the rule options".into());
    }
    if !cur.trim().is_empty() {
        return Err(format!("option '{}' is not terminated by ';'", shorten(cur.trim())));
    }
    Ok(out)
}

fn push_option(out: &mut Vec<(String, Option<String>)>, raw: &str) -> Result<(), String> {
    let t = raw.trim();
    if t.is_empty() {
        return Err("empty option (two ';' in a row?)".into());
    }
    let (name, value) = match t.split_once(':') {
        Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
        None => (t, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-') {
        return Err(format!("'{}' is not an option name", shorten(name)));
    }
    out.push((name.to_string(), value));
    Ok(())
}

/// Decodes a quoted content string starting at `s` (which begins with `"`): backslash escapes
/// the next character, `|..|` holds hex bytes. Returns the bytes and the text after the quote.
pub fn decode_content(s: &str) -> Result<(Vec<u8>, &str), String> {
    let body = s.strip_prefix('"').ok_or("content must be a quoted string")?;
    let mut out = Vec::new();
    let mut hex = false;
    let mut nib: Option<u8> = None;
    let mut it = body.char_indices();
    while let Some((i, c)) = it.next() {
        if hex {
            match c {
                '|' => {
                    if nib.is_some() {
                        return Err("odd number of hex digits in a |..| block".into());
                    }
                    hex = false;
                }
                c if c.is_ascii_hexdigit() => {
                    let v = c.to_digit(16).unwrap_or(0) as u8;
                    match nib.take() {
                        Some(h) => out.push(h << 4 | v),
                        None => nib = Some(v),
                    }
                }
                c if c == ' ' || c == '\t' => {
                    if nib.is_some() {
                        return Err("hex byte split by a space in a |..| block".into());
                    }
                }
                '"' => return Err("unterminated |..| hex block".into()),
                other => return Err(format!("'{other}' is not a hex digit in a |..| block")),
            }
            continue;
        }
        match c {
            '\\' => match it.next() {
                Some((_, n)) => {
                    let mut b = [0u8; 4];
                    out.extend_from_slice(n.encode_utf8(&mut b).as_bytes());
                }
                None => return Err("content ends with a lone backslash".into()),
            },
            '|' => hex = true,
            '"' => return Ok((out, &body[i + 1..])),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    Err("unterminated quoted string".into())
}

/// Unquotes a `msg`-style string (backslash escapes; no hex blocks).
fn unquote(v: &str) -> Result<String, String> {
    let v = v.trim();
    let inner = match v.strip_prefix('"') {
        Some(r) => r.strip_suffix('"').ok_or("unterminated quoted string")?,
        None => v,
    };
    let mut out = String::new();
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some(n) => out.push(n),
                None => return Err("string ends with a lone backslash".into()),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

fn parse_u32(v: Option<&str>, what: &str) -> Result<u32, String> {
    let v = v.ok_or_else(|| format!("{what} needs a value"))?;
    v.trim().parse::<u32>().map_err(|_| format!("{what} value '{}' is not a non-negative integer", shorten(v)))
}

fn parse_int(t: &str, what: &str) -> Result<i32, String> {
    let t = t.trim();
    let n = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        t.parse::<i64>().ok()
    };
    match n {
        Some(n) if (-65535..=4_294_967_295).contains(&n) => Ok(n as i32),
        _ => Err(format!("{what} value '{}' is not an integer in range", shorten(t))),
    }
}

/// Parses a number or a byte_extract variable name.
fn parse_num(t: &str, what: &str, rule: &Rule) -> Result<Num, String> {
    let t = t.trim();
    if t.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
        return parse_int(t, what).map(Num::Lit);
    }
    match rule.vars.iter().position(|v| v == t) {
        Some(i) => Ok(Num::Var(i as u8)),
        None => Err(format!("{what}: '{}' is neither a number nor a byte_extract variable of this rule", shorten(t))),
    }
}

/// Parses `N`, `=N`, `!N`, `<N`, `<=N`, `>N`, `>=N`, `A<>B`, `A<=>B` (also the old `A-B`).
pub fn parse_range(v: &str) -> Result<RangeTest, String> {
    let v = v.trim();
    let n = |t: &str| -> Result<u64, String> {
        let t = t.trim();
        let r = if let Some(h) = t.strip_prefix("0x") { u64::from_str_radix(h, 16) } else { t.parse::<u64>() };
        r.map_err(|_| format!("'{}' is not a non-negative integer", shorten(t)))
    };
    if let Some((a, b)) = v.split_once("<=>") {
        return Ok(RangeTest::BetweenIncl(n(a)?, n(b)?));
    }
    if let Some((a, b)) = v.split_once("<>") {
        return Ok(RangeTest::Between(n(a)?, n(b)?));
    }
    if let Some(r) = v.strip_prefix("<=") {
        return Ok(RangeTest::Le(n(r)?));
    }
    if let Some(r) = v.strip_prefix(">=") {
        return Ok(RangeTest::Ge(n(r)?));
    }
    if let Some(r) = v.strip_prefix('<') {
        return Ok(RangeTest::Lt(n(r)?));
    }
    if let Some(r) = v.strip_prefix('>') {
        return Ok(RangeTest::Gt(n(r)?));
    }
    if let Some(r) = v.strip_prefix('!') {
        return Ok(RangeTest::Ne(n(r)?));
    }
    if let Some(r) = v.strip_prefix('=') {
        return Ok(RangeTest::Eq(n(r)?));
    }
    if let Some((a, b)) = v.split_once('-') {
        if !a.trim().is_empty() {
            return Ok(RangeTest::BetweenIncl(n(a)?, n(b)?));
        }
    }
    Ok(RangeTest::Eq(n(v)?))
}

/// Options that never change what matches (metadata or actions taken after a match).
const IGNORED: &[&str] = &["reference", "metadata", "classtype", "rem", "tag", "replace", "react", "resp"];

/// Matching options we know of but do not evaluate (their presence makes a rule partial).
const UNSUPPORTED_BUFFERS: &[&str] = &[
    "http_raw_body",
    "http_param",
    "http_true_ip",
    "http_version",
    "http_raw_cookie",
    "http_raw_request",
    "http_raw_status",
    "http_raw_trailer",
    "http_trailer",
    "http_raw_host",
    "http_host",
    "http_version_match",
    "http_num_headers",
    "http_num_trailers",
    "http_max_header_line",
    "http_max_trailer_line",
    "js_data",
    "vba_data",
    "base64_data",
    "dce_stub_data",
    "sip_header",
    "sip_body",
    "ssl_data",
    "script_data",
    "dnp3_data",
    "modbus_data",
    "gtp_info",
    "ber_data",
    "http2_frame_data",
    "mms_data",
    "s7commplus_data",
];

/// Rule options Snort 2, Snort 3 or Suricata define that change what matches but that the
/// engine does not evaluate (a rule using one is partial). An option in no list at all is an
/// unknown keyword.
const KNOWN_UNEVALUATED: &[&str] = &[
    "activated_by",
    "activates",
    "app-layer-event",
    "app-layer-protocol",
    "appids",
    "asn1",
    "base64_decode",
    "ber_skip",
    "byte_math",
    "cip_attribute",
    "cip_class",
    "cip_conn_path_class",
    "cip_instance",
    "cip_req",
    "cip_rsp",
    "cip_service",
    "cip_status",
    "count",
    "cvs",
    "dce_iface",
    "dce_opnum",
    "detection_filter",
    "dnp3_func",
    "dnp3_ind",
    "dnp3_obj",
    "dns.query",
    "dns_query",
    "enable",
    "file_meta",
    "file_type",
    "filemagic",
    "filename",
    "filestore",
    "fragoffset",
    "ftpbounce",
    "gtp_type",
    "gtp_version",
    "icmp",
    "ipopts",
    "logto",
    "md5",
    "mem",
    "modbus_func",
    "modbus_unit",
    "mss",
    "pkt_num",
    "raw_data",
    "regex",
    "rpc",
    "s7commplus_content",
    "s7commplus_func",
    "s7commplus_opcode",
    "sameip",
    "sd_pattern",
    "session",
    "sha256",
    "sha512",
    "sip_method",
    "sip_stat_code",
    "so",
    "soid",
    "ssl_state",
    "ssl_version",
    "stream_reassemble",
    "stream_size",
    "target",
    "threshold",
    "tls.sni",
    "tls_sni",
    "tos",
    "uricontent",
    "urilen",
    "window",
    "wscale",
];

/// The marker after an option name in [`Rule::unsupported`] for a keyword no rule language has.
pub const UNKNOWN_OPTION: &str = "(unknown option)";

/// Parses the option list into `rule`.
fn parse_options(body: &str, rule: &mut Rule) -> Result<(), String> {
    let opts = split_options(body)?;
    // Index in `rule.segments` of the segment options go to, or None for an unsupported buffer.
    let mut cur_seg: Option<usize> = None;
    let mut dead_seg = false;
    let mut last_content: Option<(usize, usize)> = None;
    let mut seen_sid = false;

    macro_rules! push_detect {
        ($d:expr) => {{
            let d = $d;
            if dead_seg {
                // Options on a buffer we do not produce are parsed (so errors show) but not kept.
            } else {
                let idx = match cur_seg {
                    Some(i) => i,
                    None => {
                        rule.segments.push(Segment { buffer: BufferKind::Pkt, items: Vec::new() });
                        let i = rule.segments.len() - 1;
                        cur_seg = Some(i);
                        i
                    }
                };
                rule.segments[idx].items.push(d);
                let is_content = matches!(rule.segments[idx].items.last(), Some(Detect::Content(_)));
                if is_content {
                    last_content = Some((idx, rule.segments[idx].items.len() - 1));
                }
            }
        }};
    }

    for (name, value) in opts {
        let v = value.as_deref();
        let n = name.as_str();
        match n {
            "msg" => rule.msg = unquote(v.ok_or("msg needs a quoted string")?)?,
            "sid" => {
                if seen_sid {
                    return Err("sid given twice".into());
                }
                seen_sid = true;
                rule.sid = parse_u32(v, "sid")?;
            }
            "rev" => rule.rev = parse_u32(v, "rev")?,
            "gid" => rule.gid = parse_u32(v, "gid")?,
            "classtype" => rule.classtype = v.map(|s| s.to_string()),
            "priority" => rule.priority = Some(parse_u32(v, "priority")?),
            "service" => {
                let v = v.ok_or("service needs a list of services")?;
                rule.services.extend(v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
            }
            _ if IGNORED.contains(&n) => {}
            "content" => {
                let c = parse_content(v.ok_or("content needs a quoted string")?, rule)?;
                push_detect!(Detect::Content(c));
            }
            "nocase"
            | "fast_pattern"
            | "offset"
            | "depth"
            | "distance"
            | "within"
            | "fast_pattern_offset"
            | "fast_pattern_length" => {
                // Snort 2 style modifier as its own option: applies to the previous content.
                if dead_seg {
                    continue;
                }
                let (si, ii) = last_content.ok_or_else(|| format!("'{n}' must follow a content option"))?;
                let mut c = match rule.segments.get(si).and_then(|s| s.items.get(ii)) {
                    Some(Detect::Content(c)) => c.clone(),
                    _ => return Err(format!("'{n}' must follow a content option")),
                };
                apply_modifier(&mut c, n, v, rule)?;
                check_content(&c)?;
                if let Some(Detect::Content(slot)) = rule.segments.get_mut(si).and_then(|s| s.items.get_mut(ii)) {
                    *slot = c;
                }
            }
            "rawbytes" => {
                // Snort 2: match the raw packet instead of a normalized buffer; here pkt_data is raw.
                if last_content.is_none() {
                    return Err("'rawbytes' must follow a content option".into());
                }
            }
            "pcre" => {
                let p = parse_pcre(v.ok_or("pcre needs a quoted /expression/flags")?)?;
                push_detect!(Detect::Pcre(p));
            }
            "byte_test" => {
                let d = parse_byte_test(v.ok_or("byte_test needs arguments")?, rule)?;
                push_detect!(d);
            }
            "byte_jump" => {
                let d = parse_byte_jump(v.ok_or("byte_jump needs arguments")?, rule)?;
                push_detect!(d);
            }
            "byte_extract" => {
                let d = parse_byte_extract(v.ok_or("byte_extract needs arguments")?, rule)?;
                push_detect!(d);
            }
            "isdataat" => {
                let v = v.ok_or("isdataat needs a value")?;
                let mut parts = v.split(',').map(str::trim);
                let first = parts.next().unwrap_or("");
                let (negated, num) = match first.strip_prefix('!') {
                    Some(r) => (true, r.trim()),
                    None => (false, first),
                };
                let offset = parse_num(num, "isdataat", rule)?;
                let mut relative = false;
                for p in parts {
                    match p {
                        "relative" => relative = true,
                        "rawbytes" => {}
                        other => return Err(format!("isdataat: unknown argument '{}'", shorten(other))),
                    }
                }
                push_detect!(Detect::IsDataAt { offset, relative, negated });
            }
            "bufferlen" => {
                let v = v.ok_or("bufferlen needs a value")?;
                let mut parts = v.split(',').map(str::trim);
                let test = parse_range(parts.next().unwrap_or("")).map_err(|e| format!("bufferlen: {e}"))?;
                let mut relative = false;
                for p in parts {
                    match p {
                        "relative" => relative = true,
                        other => return Err(format!("bufferlen: unknown argument '{}'", shorten(other))),
                    }
                }
                push_detect!(Detect::BufferLen { test, relative });
            }
            "dsize" => {
                let t = parse_range(v.ok_or("dsize needs a value")?).map_err(|e| format!("dsize: {e}"))?;
                rule.header_tests.push(HeaderTest::Dsize(t));
                rule.approximations.push("dsize (length of the payload given)".into());
            }
            "itype" | "icode" | "icmp_id" | "icmp_seq" | "ttl" | "id" | "seq" | "ack" => {
                let t = parse_range(v.ok_or_else(|| format!("{n} needs a value"))?).map_err(|e| format!("{n}: {e}"))?;
                rule.header_tests.push(match n {
                    "itype" => HeaderTest::IcmpType(t),
                    "icode" => HeaderTest::IcmpCode(t),
                    "icmp_id" => HeaderTest::IcmpId(t),
                    "icmp_seq" => HeaderTest::IcmpSeq(t),
                    "ttl" => HeaderTest::Ttl(t),
                    "id" => HeaderTest::IpId(t),
                    "seq" => HeaderTest::Seq(t),
                    _ => HeaderTest::Ack(t),
                });
            }
            "ip_proto" => {
                let v = v.ok_or("ip_proto needs a value")?;
                let t = parse_ip_proto(v)?;
                rule.header_tests.push(HeaderTest::IpProto(t));
            }
            "flags" => {
                let t = parse_flags(v.ok_or("flags needs a value")?)?;
                rule.header_tests.push(t);
            }
            "fragbits" => {
                let t = parse_fragbits(v.ok_or("fragbits needs a value")?)?;
                rule.header_tests.push(t);
            }
            "flow" => parse_flow(v.ok_or("flow needs a value")?, rule)?,
            "flowbits" => {
                let f = parse_flowbits(v.ok_or("flowbits needs a value")?)?;
                rule.flowbits.push(f);
            }
            _ => {
                if let Some(b) = BufferKind::from_name(n) {
                    if v.is_some() {
                        // e.g. http_header:field user-agent selects part of a buffer.
                        rule.unsupported.push(format!("{n} with arguments"));
                        dead_seg = true;
                        cur_seg = None;
                    } else {
                        rule.segments.push(Segment { buffer: b, items: Vec::new() });
                        cur_seg = Some(rule.segments.len() - 1);
                        dead_seg = false;
                    }
                    last_content = None;
                } else if UNSUPPORTED_BUFFERS.contains(&n) {
                    rule.unsupported.push(n.to_string());
                    dead_seg = true;
                    cur_seg = None;
                    last_content = None;
                } else if n.starts_with("http_") {
                    rule.unsupported.push(format!("{n} (unknown)"));
                    dead_seg = true;
                    cur_seg = None;
                    last_content = None;
                } else {
                    // Any other option restricts matching in a way we do not evaluate; one
                    // Snort does not know at all is named as such.
                    let entry =
                        if KNOWN_UNEVALUATED.contains(&n) { n.to_string() } else { format!("{n} {UNKNOWN_OPTION}") };
                    if !rule.unsupported.contains(&entry) {
                        rule.unsupported.push(entry);
                    }
                }
            }
        }
    }
    // Empty segments (a sticky buffer with nothing after it) are dropped.
    rule.segments.retain(|s| !s.items.is_empty());
    rule.approximations.sort();
    rule.approximations.dedup();
    Ok(())
}

fn parse_content(v: &str, rule: &Rule) -> Result<Content, String> {
    let v = v.trim();
    let (negated, q) = match v.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, v),
    };
    let (pattern, rest) = decode_content(q).map_err(|e| format!("content: {e}"))?;
    if pattern.is_empty() {
        return Err("content: empty pattern".into());
    }
    let mut c = Content::new(pattern);
    c.negated = negated;
    let rest = rest.trim();
    if !rest.is_empty() {
        let rest = rest
            .strip_prefix(',')
            .ok_or_else(|| format!("content: unexpected '{}' after the pattern", shorten(rest)))?;
        for m in rest.split(',') {
            let m = m.trim();
            if m.is_empty() {
                return Err("content: empty modifier".into());
            }
            let (mn, mv) = match m.split_once(char::is_whitespace) {
                Some((a, b)) => (a, Some(b.trim())),
                None => (m, None),
            };
            apply_modifier(&mut c, mn, mv, rule)?;
        }
    }
    check_content(&c)?;
    Ok(c)
}

fn apply_modifier(c: &mut Content, name: &str, v: Option<&str>, rule: &Rule) -> Result<(), String> {
    fn need<'a>(v: Option<&'a str>, name: &str) -> Result<&'a str, String> {
        v.ok_or_else(|| format!("content: '{name}' needs a value"))
    }
    match name {
        "nocase" => c.nocase = true,
        "fast_pattern" => c.fast_pattern = true,
        "offset" => {
            if c.is_relative() {
                return Err("content: offset can't be used with distance or within".into());
            }
            c.offset = Some(parse_num(need(v, name)?, "offset", rule)?);
        }
        "depth" => {
            if c.is_relative() {
                return Err("content: depth can't be used with distance or within".into());
            }
            c.depth = Some(parse_num(need(v, name)?, "depth", rule)?);
        }
        "distance" => {
            if c.offset.is_some() || c.depth.is_some() {
                return Err("content: distance can't be used with offset or depth".into());
            }
            c.distance = Some(parse_num(need(v, name)?, "distance", rule)?);
        }
        "within" => {
            if c.offset.is_some() || c.depth.is_some() {
                return Err("content: within can't be used with offset or depth".into());
            }
            c.within = Some(parse_num(need(v, name)?, "within", rule)?);
        }
        "fast_pattern_offset" => {
            let n = parse_int(need(v, name)?, "fast_pattern_offset")?;
            c.fp_offset = Some(u16::try_from(n).map_err(|_| "content: fast_pattern_offset out of range".to_string())?);
            c.fast_pattern = true;
        }
        "fast_pattern_length" => {
            let n = parse_int(need(v, name)?, "fast_pattern_length")?;
            c.fp_length = Some(u16::try_from(n).map_err(|_| "content: fast_pattern_length out of range".to_string())?);
            c.fast_pattern = true;
        }
        "rawbytes" => {}
        other => return Err(format!("content: unknown modifier '{}'", shorten(other))),
    }
    Ok(())
}

/// Snort's consistency checks on a content's window.
fn check_content(c: &Content) -> Result<(), String> {
    let len = c.pattern.len() as i64;
    if let Some(Num::Lit(d)) = c.depth {
        if i64::from(d) < len {
            return Err(format!("content: depth ({d}) is less than the pattern length ({len})"));
        }
    }
    if let Some(Num::Lit(w)) = c.within {
        if i64::from(w) < len {
            return Err(format!("content: within ({w}) is less than the pattern length ({len})"));
        }
    }
    if let Some(Num::Lit(o)) = c.offset {
        if o < 0 {
            return Err(format!("content: negative offset ({o})"));
        }
    }
    if c.fp_offset.is_some() || c.fp_length.is_some() {
        let o = usize::from(c.fp_offset.unwrap_or(0));
        let l = c.fp_length.map(usize::from).unwrap_or(c.pattern.len().saturating_sub(o));
        if l == 0 || o + l > c.pattern.len() {
            return Err("content: fast_pattern_offset/length point outside the pattern".into());
        }
    }
    Ok(())
}

/// Parses `[!]"/re/flags"` (also `m{re}flags` style delimiters).
pub fn parse_pcre(v: &str) -> Result<Pcre, String> {
    let v = v.trim();
    let (negated, v) = match v.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, v),
    };
    let inner =
        v.strip_prefix('"').and_then(|r| r.strip_suffix('"')).ok_or("pcre: the expression must be a quoted string")?;
    let (delim, body) = if let Some(r) = inner.strip_prefix('m') {
        let d = r.chars().next().ok_or("pcre: missing delimiter after 'm'")?;
        if d.is_alphanumeric() || d.is_whitespace() || d == '\\' {
            return Err("pcre: bad delimiter after 'm'".into());
        }
        (d, &r[d.len_utf8()..])
    } else if let Some(r) = inner.strip_prefix('/') {
        ('/', r)
    } else {
        return Err("pcre: the expression must start with '/'".into());
    };
    let end = body.rfind(delim).ok_or("pcre: missing closing delimiter")?;
    let source = &body[..end];
    let flags = &body[end + delim.len_utf8()..];
    if source.is_empty() {
        return Err("pcre: empty expression".into());
    }
    for f in flags.chars() {
        if !"ismxAEGORUIPHDMCKSYB".contains(f) {
            return Err(format!("pcre: unknown flag '{f}'"));
        }
    }
    Ok(Pcre { source: source.to_string(), flags: flags.to_string(), negated, relative: flags.contains('R') })
}

/// Parses the arguments shared by byte_test/byte_jump/byte_extract after the positional ones.
fn byte_read_flags(
    args: &[&str],
    what: &str,
    read: &mut ByteRead,
    rule: &mut Rule,
    mut extra: impl FnMut(&str, Option<&str>, &mut Rule) -> Result<bool, String>,
) -> Result<(), String> {
    let mut string = false;
    let mut base: Option<u32> = None;
    for a in args {
        let (k, val) = match a.split_once(char::is_whitespace) {
            Some((k, v)) => (k, Some(v.trim())),
            None => (*a, None),
        };
        match k {
            "relative" => read.relative = true,
            "little" => read.little = true,
            "big" => read.little = false,
            "string" => string = true,
            "hex" => base = Some(16),
            "dec" => base = Some(10),
            "oct" => base = Some(8),
            "dce" => {
                // Byte order from the DCE/RPC header: not available here.
                if !rule.unsupported.iter().any(|u| u == &format!("{what},dce")) {
                    rule.unsupported.push(format!("{what},dce"));
                }
            }
            "bitmask" => {
                let v = val.ok_or_else(|| format!("{what}: bitmask needs a value"))?;
                let n = parse_int(v, "bitmask")? as u32;
                if n == 0 {
                    return Err(format!("{what}: bitmask must not be 0"));
                }
                read.bitmask = Some(n);
            }
            _ => {
                if !extra(k, val, rule)? {
                    return Err(format!("{what}: unknown argument '{}'", shorten(a)));
                }
            }
        }
    }
    if string {
        read.string_base = Some(base.unwrap_or(10));
        if read.bytes == 0 || read.bytes > 10 {
            return Err(format!("{what}: string conversion reads 1 to 10 bytes"));
        }
    } else {
        if base.is_some() {
            return Err(format!("{what}: hex/dec/oct need 'string'"));
        }
        if !(1..=4).contains(&read.bytes) {
            return Err(format!("{what}: binary extraction reads 1 to 4 bytes"));
        }
    }
    Ok(())
}

fn split_args(v: &str) -> Vec<&str> {
    v.split(',').map(str::trim).collect()
}

fn parse_byte_test(v: &str, rule: &mut Rule) -> Result<Detect, String> {
    let a = split_args(v);
    if a.len() < 4 {
        return Err("byte_test needs at least: bytes, operator, value, offset".into());
    }
    let bytes = a[0].parse::<u8>().map_err(|_| format!("byte_test: '{}' is not a byte count", shorten(a[0])))?;
    let (negated, opstr) = match a[1].strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, a[1]),
    };
    let op = match opstr {
        "<" => ByteOp::Lt,
        ">" => ByteOp::Gt,
        "<=" => ByteOp::Le,
        ">=" => ByteOp::Ge,
        "=" => ByteOp::Eq,
        "&" => ByteOp::And,
        "^" => ByteOp::Xor,
        other => return Err(format!("byte_test: unknown operator '{}'", shorten(other))),
    };
    let value = parse_num(a[2], "byte_test value", rule)?;
    let offset = parse_num(a[3], "byte_test offset", rule)?;
    let mut read = ByteRead { bytes, offset, relative: false, little: false, string_base: None, bitmask: None };
    byte_read_flags(&a[4..], "byte_test", &mut read, rule, |_, _, _| Ok(false))?;
    Ok(Detect::ByteTest { read, op, negated, value })
}

fn parse_byte_jump(v: &str, rule: &mut Rule) -> Result<Detect, String> {
    let a = split_args(v);
    if a.len() < 2 {
        return Err("byte_jump needs at least: bytes, offset".into());
    }
    let bytes = a[0].parse::<u8>().map_err(|_| format!("byte_jump: '{}' is not a byte count", shorten(a[0])))?;
    let offset = parse_num(a[1], "byte_jump offset", rule)?;
    let mut read = ByteRead { bytes, offset, relative: false, little: false, string_base: None, bitmask: None };
    let mut multiplier = 1u32;
    let mut align = false;
    let mut from_beginning = false;
    let mut from_end = false;
    let mut post: Option<String> = None;
    byte_read_flags(&a[2..], "byte_jump", &mut read, rule, |k, val, _| {
        match k {
            "multiplier" => {
                let n = parse_int(val.ok_or("byte_jump: multiplier needs a value")?, "multiplier")?;
                if !(1..=65535).contains(&n) {
                    return Err("byte_jump: multiplier must be 1..65535".into());
                }
                multiplier = n as u32;
            }
            "align" => align = true,
            "from_beginning" => from_beginning = true,
            "from_end" => from_end = true,
            "post_offset" => post = Some(val.ok_or("byte_jump: post_offset needs a value")?.to_string()),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if from_beginning && from_end {
        return Err("byte_jump: from_beginning and from_end together".into());
    }
    let post_offset = match post {
        Some(p) => parse_num(&p, "byte_jump post_offset", rule)?,
        None => Num::Lit(0),
    };
    Ok(Detect::ByteJump { read, multiplier, align, from_beginning, from_end, post_offset })
}

fn parse_byte_extract(v: &str, rule: &mut Rule) -> Result<Detect, String> {
    let a = split_args(v);
    if a.len() < 3 {
        return Err("byte_extract needs at least: bytes, offset, name".into());
    }
    let bytes = a[0].parse::<u8>().map_err(|_| format!("byte_extract: '{}' is not a byte count", shorten(a[0])))?;
    let offset = parse_num(a[1], "byte_extract offset", rule)?;
    let name = a[2];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("byte_extract: the variable name must start with a letter".into());
    }
    let mut read = ByteRead { bytes, offset, relative: false, little: false, string_base: None, bitmask: None };
    let mut multiplier = 1u32;
    let mut align = 0u8;
    byte_read_flags(&a[3..], "byte_extract", &mut read, rule, |k, val, _| {
        match k {
            "multiplier" => {
                let n = parse_int(val.ok_or("byte_extract: multiplier needs a value")?, "multiplier")?;
                if !(1..=65535).contains(&n) {
                    return Err("byte_extract: multiplier must be 1..65535".into());
                }
                multiplier = n as u32;
            }
            "align" => {
                let n = parse_int(val.ok_or("byte_extract: align needs a value")?, "align")?;
                if ![0, 2, 4].contains(&n) {
                    return Err("byte_extract: align must be 2 or 4".into());
                }
                align = n as u8;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let var = match rule.vars.iter().position(|v| v == name) {
        Some(i) => i,
        None => {
            if rule.vars.len() >= MAX_RULE_VARS {
                return Err(format!("byte_extract: more than {MAX_RULE_VARS} variables in one rule"));
            }
            rule.vars.push(name.to_string());
            rule.vars.len() - 1
        }
    };
    Ok(Detect::ByteExtract { read, multiplier, align, var: var as u8 })
}

fn parse_ip_proto(v: &str) -> Result<RangeTest, String> {
    let v = v.trim();
    let (prefix, name) = if let Some(r) = v.strip_prefix('!') {
        ("!", r)
    } else if let Some(r) = v.strip_prefix('<') {
        ("<", r)
    } else if let Some(r) = v.strip_prefix('>') {
        (">", r)
    } else {
        ("", v)
    };
    let num = match name.trim() {
        "icmp" => 1,
        "igmp" => 2,
        "tcp" => 6,
        "udp" => 17,
        "gre" => 47,
        "esp" => 50,
        "ah" => 51,
        "sctp" => 132,
        other => other.parse::<u8>().map_err(|_| format!("ip_proto: '{}' is not a protocol", shorten(other)))?,
    };
    parse_range(&format!("{prefix}{num}"))
}

fn parse_flags(v: &str) -> Result<HeaderTest, String> {
    let (main, ignore_s) = match v.split_once(',') {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (v.trim(), None),
    };
    let bit = |c: char| -> Option<u8> {
        Some(match c.to_ascii_uppercase() {
            'F' => 0x01,
            'S' => 0x02,
            'R' => 0x04,
            'P' => 0x08,
            'A' => 0x10,
            'U' => 0x20,
            'E' | '2' => 0x40,
            'C' | '1' => 0x80,
            '0' | 'N' => 0,
            _ => return None,
        })
    };
    let mut mode = '=';
    let mut bits = 0u8;
    for c in main.chars() {
        match c {
            '+' | '*' | '!' => mode = c,
            c => bits |= bit(c).ok_or_else(|| format!("flags: unknown flag '{c}'"))?,
        }
    }
    let mut ignore = 0u8;
    if let Some(s) = ignore_s {
        for c in s.chars() {
            ignore |= bit(c).ok_or_else(|| format!("flags: unknown flag '{c}' in the mask"))?;
        }
    }
    Ok(HeaderTest::TcpFlags { mode, bits, ignore })
}

fn parse_fragbits(v: &str) -> Result<HeaderTest, String> {
    let mut mode = '=';
    let mut bits = 0u8;
    for c in v.trim().chars() {
        match c {
            '+' | '*' | '!' => mode = c,
            'M' | 'm' => bits |= 0x1,
            'D' | 'd' => bits |= 0x2,
            'R' | 'r' => bits |= 0x4,
            c => return Err(format!("fragbits: unknown bit '{c}'")),
        }
    }
    Ok(HeaderTest::FragBits { mode, bits })
}

fn parse_flow(v: &str, rule: &mut Rule) -> Result<(), String> {
    for p in v.split(',').map(str::trim) {
        match p {
            "to_server" | "from_client" => rule.flow.to_server = Some(true),
            "to_client" | "from_server" => rule.flow.to_server = Some(false),
            "established" => rule.flow.established = true,
            "not_established" => rule.flow.not_established = true,
            "stateless" => rule.flow.stateless = true,
            "no_stream" | "only_stream" | "no_frag" | "only_frag" => {
                rule.approximations.push(format!("flow:{p} (not checked: the caller decides what it passes)"));
            }
            other => return Err(format!("flow: unknown argument '{}'", shorten(other))),
        }
    }
    Ok(())
}

fn parse_flowbits(v: &str) -> Result<FlowbitsOp, String> {
    let mut it = v.splitn(2, ',');
    let cmd = it.next().unwrap_or("").trim();
    let arg = it.next().map(str::trim);
    let bits = |need: bool| -> Result<(Vec<String>, bool), String> {
        let a = match arg {
            Some(a) if !a.is_empty() => a,
            _ if need => return Err(format!("flowbits:{cmd} needs a bit name")),
            _ => return Ok((Vec::new(), false)),
        };
        // Snort 3 allows a group name after the bits (`set,a,group`): the group is ignored.
        let a = a.split(',').next().unwrap_or("").trim();
        let any = a.contains('|');
        if any && a.contains('&') {
            return Err("flowbits: cannot mix '|' and '&'".into());
        }
        let names: Vec<String> = a.split(['|', '&']).map(|s| s.trim().to_string()).collect();
        if names.iter().any(|n| n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))) {
            return Err(format!("flowbits: bad bit name in '{}'", shorten(a)));
        }
        Ok((names, any))
    };
    Ok(match cmd {
        "set" => FlowbitsOp::Set(bits(true)?.0),
        "unset" => FlowbitsOp::Unset(bits(true)?.0),
        "toggle" => FlowbitsOp::Toggle(bits(true)?.0),
        "isset" => {
            let (b, any) = bits(true)?;
            FlowbitsOp::IsSet { bits: b, any }
        }
        "isnotset" => {
            let (b, any) = bits(true)?;
            FlowbitsOp::IsNotSet { bits: b, any }
        }
        "noalert" => FlowbitsOp::NoAlert,
        other => return Err(format!("flowbits: unknown command '{}'", shorten(other))),
    })
}
