//! The rule header: action, protocol or service, addresses, ports, direction.

use super::*;

/// Splits a header into whitespace-separated tokens, keeping `[ ... ]` lists whole.
pub(super) fn header_tokens(h: &str) -> Vec<String> {
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

pub(super) fn parse_action(s: &str) -> Result<Action, Reason> {
    Ok(match s {
        "alert" => Action::Alert,
        "log" => Action::Log,
        "pass" => Action::Pass,
        "drop" => Action::Drop,
        "reject" => Action::Reject,
        "sdrop" => Action::Sdrop,
        "block" => Action::Block,
        other => {
            return Err(Reason::bad(format!(
                "unknown action '{}' (expected alert, log, pass, drop, reject, sdrop or block)",
                shorten(other)
            )))
        }
    })
}

/// Service names Snort 3 accepts in place of a protocol (`alert http ( ... )`).
pub(super) const SERVICES: &[&str] = &[
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
pub(super) const APP_PORTS: &[(&str, &str)] =
    &[("http", "HTTP_PORTS"), ("http2", "HTTP_PORTS"), ("ftp", "FTP_PORTS"), ("ssh", "SSH_PORTS")];

/// A mapped application-protocol header, applied once the options (`flow`) are known.
#[derive(Debug, Clone, Copy)]
pub(super) struct AppProto {
    service: &'static str,
    ports: &'static str,
}

/// `alert http ...` (Snort 2 / Suricata / Snort 3 service rules): TCP, with the server side's
/// port restricted to the service's port variable: the destination, or the source for rules
/// on traffic to the client (`flow:to_client`). Recorded as an approximation (no protocol
/// detection: HTTP on another port is not seen, other traffic on these ports is inspected).
pub(super) fn map_app_proto(rule: &mut Rule, app: AppProto, vars: &Vars) -> Result<(), Reason> {
    let v = vars
        .port(app.ports)
        .ok_or_else(|| Reason::bad(format!("'{}' rules need the port variable ${}", app.service, app.ports)))?;
    let ports = parse_ports(v, vars, 0).map_err(|e| e.within(format!("${}", app.ports)))?;
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
pub(super) fn app_proto(service: &str) -> Option<AppProto> {
    APP_PORTS.iter().find(|(s, _)| *s == service).map(|&(service, ports)| AppProto { service, ports })
}

pub(super) fn parse_header(h: &str, line: usize, vars: &Vars) -> Result<(Rule, Option<AppProto>), Reason> {
    let toks = header_tokens(h);
    let mut app = None;
    let mut rule = blank_rule(line);
    match toks.len() {
        0 => return Err(Reason::bad("empty rule header (expected 'action proto src port -> dst port')")),
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
                return Err(Reason::bad(format!(
                    "'{}' is neither a protocol (tcp, udp, icmp, ip) nor a known service",
                    shorten(p)
                )));
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
                    return Err(Reason::bad(format!(
                        "unknown protocol '{}' (expected tcp, udp, icmp, ip or an application protocol such as http)",
                        shorten(other)
                    )))
                }
            };
            rule.src = parse_addr(&toks[2], vars, 0).map_err(|e| e.within("source address"))?;
            rule.src_ports = parse_ports(&toks[3], vars, 0).map_err(|e| e.within("source port"))?;
            rule.bidirectional = match toks[4].as_str() {
                "->" => false,
                "<>" => true,
                other => {
                    return Err(Reason::bad(format!("unknown direction '{}' (expected -> or <>)", shorten(other))))
                }
            };
            rule.dst = parse_addr(&toks[5], vars, 0).map_err(|e| e.within("destination address"))?;
            rule.dst_ports = parse_ports(&toks[6], vars, 0).map_err(|e| e.within("destination port"))?;
        }
        n => {
            return Err(Reason::bad(format!(
                "rule header has {n} fields; expected 7 ('action proto src port -> dst port') or 2 ('action service')"
            )))
        }
    }
    Ok((rule, app))
}

/// A rule at `line` matching everything, before its header and options are read.
fn blank_rule(line: usize) -> Rule {
    Rule {
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
    }
}
