//! The option list: splitting it, and the driver that hands each option to its family.

use super::*;

/// Splits the option body at `;` outside quotes; yields (name, value) with both trimmed.
pub(super) fn split_options(body: &str) -> Result<Vec<(String, Option<String>)>, Reason> {
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
        return Err(Reason::bad("unterminated quoted string in the rule options"));
    }
    if !cur.trim().is_empty() {
        return Err(Reason::bad(format!("option '{}' is not terminated by ';'", shorten(cur.trim()))));
    }
    Ok(out)
}

pub(super) fn push_option(out: &mut Vec<(String, Option<String>)>, raw: &str) -> Result<(), Reason> {
    let t = raw.trim();
    if t.is_empty() {
        return Err(Reason::bad("empty option (two ';' in a row?)"));
    }
    let (name, value) = match t.split_once(':') {
        Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
        None => (t, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-') {
        return Err(Reason::bad(format!("'{}' is not an option name", shorten(name))));
    }
    out.push((name.to_string(), value));
    Ok(())
}

/// Options that never change what matches (metadata or actions taken after a match).
pub(super) const IGNORED: &[&str] = &["reference", "metadata", "classtype", "rem", "tag", "replace", "react", "resp"];

/// Matching options we know of but do not evaluate (their presence makes a rule partial).
pub(super) const UNSUPPORTED_BUFFERS: &[&str] = &[
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
pub(super) const KNOWN_UNEVALUATED: &[&str] = &[
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

/// Where detection options go while a rule's option list is read.
#[derive(Default)]
struct Cursor {
    /// Index in `rule.segments` of the segment options go to (None before the first one).
    seg: Option<usize>,
    /// The current buffer is one we do not produce: options are parsed (so errors show) but not kept.
    dead: bool,
    /// The last content kept, as (segment, item), for Snort 2 style modifier options.
    last_content: Option<(usize, usize)>,
    /// A `sid` was seen already.
    seen_sid: bool,
}

impl Cursor {
    /// Appends a detection item to the current segment (opening a `pkt_data` one if needed).
    fn push(&mut self, rule: &mut Rule, d: Detect) {
        if self.dead {
            return;
        }
        let idx = match self.seg {
            Some(i) => i,
            None => {
                rule.segments.push(Segment { buffer: BufferKind::Pkt, items: Vec::new() });
                let i = rule.segments.len() - 1;
                self.seg = Some(i);
                i
            }
        };
        let is_content = matches!(d, Detect::Content(_));
        rule.segments[idx].items.push(d);
        if is_content {
            self.last_content = Some((idx, rule.segments[idx].items.len() - 1));
        }
    }

    /// Makes the following options go nowhere (a buffer we do not produce).
    fn kill(&mut self) {
        self.dead = true;
        self.seg = None;
        self.last_content = None;
    }
}

/// Parses the option list into `rule`; an error names the option that failed.
pub(super) fn parse_options(body: &str, rule: &mut Rule) -> Result<(), RuleError> {
    let opts = split_options(body).map_err(|reason| RuleError::new(rule.line, None, reason))?;
    let mut cur = Cursor::default();
    for (name, value) in opts {
        parse_option(&name, value.as_deref(), rule, &mut cur)
            .map_err(|reason| RuleError::new(rule.line, Some(name.clone()), reason))?;
    }
    // Empty segments (a sticky buffer with nothing after it) are dropped.
    rule.segments.retain(|s| !s.items.is_empty());
    rule.approximations.sort();
    rule.approximations.dedup();
    Ok(())
}

/// Hands one option to its family.
fn parse_option(n: &str, v: Option<&str>, rule: &mut Rule, cur: &mut Cursor) -> Result<(), Reason> {
    if parse_meta(n, v, rule, cur)? || parse_header_option(n, v, rule)? {
        return Ok(());
    }
    if let Some(d) = parse_detect(n, v, rule)? {
        cur.push(rule, d);
        return Ok(());
    }
    match n {
        "nocase"
        | "fast_pattern"
        | "offset"
        | "depth"
        | "distance"
        | "within"
        | "fast_pattern_offset"
        | "fast_pattern_length" => modify_last_content(n, v, rule, cur),
        "rawbytes" => {
            // Snort 2: match the raw packet instead of a normalized buffer; here pkt_data is raw.
            if cur.last_content.is_none() {
                return Err(Reason::bad("'rawbytes' must follow a content option"));
            }
            Ok(())
        }
        _ => {
            other_option(n, v.is_some(), rule, cur);
            Ok(())
        }
    }
}

/// Rule metadata (`msg`, `sid`, `rev`, ...); false if `n` is not one.
fn parse_meta(n: &str, v: Option<&str>, rule: &mut Rule, cur: &mut Cursor) -> Result<bool, Reason> {
    match n {
        "msg" => rule.msg = unquote(v.ok_or_else(|| Reason::bad("msg needs a quoted string"))?)?,
        "sid" => {
            if cur.seen_sid {
                return Err(Reason::bad("sid given twice"));
            }
            cur.seen_sid = true;
            rule.sid = parse_u32(v, "sid")?;
        }
        "rev" => rule.rev = parse_u32(v, "rev")?,
        "gid" => rule.gid = parse_u32(v, "gid")?,
        "classtype" => rule.classtype = v.map(|s| s.to_string()),
        "priority" => rule.priority = Some(parse_u32(v, "priority")?),
        "service" => {
            let v = v.ok_or_else(|| Reason::bad("service needs a list of services"))?;
            rule.services.extend(v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
        }
        _ if IGNORED.contains(&n) => {}
        _ => return Ok(false),
    }
    Ok(true)
}

/// Payload detection options (content, pcre, byte_*, isdataat, bufferlen); None if `n` is not one.
fn parse_detect(n: &str, v: Option<&str>, rule: &mut Rule) -> Result<Option<Detect>, Reason> {
    Ok(Some(match n {
        "content" => {
            Detect::Content(parse_content(v.ok_or_else(|| Reason::bad("content needs a quoted string"))?, rule)?)
        }
        "pcre" => Detect::Pcre(parse_pcre(v.ok_or_else(|| Reason::bad("pcre needs a quoted /expression/flags"))?)?),
        "byte_test" => parse_byte_test(v.ok_or_else(|| Reason::bad("byte_test needs arguments"))?, rule)?,
        "byte_jump" => parse_byte_jump(v.ok_or_else(|| Reason::bad("byte_jump needs arguments"))?, rule)?,
        "byte_extract" => parse_byte_extract(v.ok_or_else(|| Reason::bad("byte_extract needs arguments"))?, rule)?,
        "isdataat" => parse_isdataat(v.ok_or_else(|| Reason::NeedsValue { what: "isdataat".into() })?, rule)?,
        "bufferlen" => parse_bufferlen(v.ok_or_else(|| Reason::NeedsValue { what: "bufferlen".into() })?)?,
        _ => return Ok(None),
    }))
}

/// `isdataat:[!]N[,relative][,rawbytes]`.
fn parse_isdataat(v: &str, rule: &Rule) -> Result<Detect, Reason> {
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
            other => return Err(Reason::Unknown { family: "isdataat", what: "argument", word: shorten(other) }),
        }
    }
    Ok(Detect::IsDataAt { offset, relative, negated })
}

/// `bufferlen:RANGE[,relative]`.
fn parse_bufferlen(v: &str) -> Result<Detect, Reason> {
    let mut parts = v.split(',').map(str::trim);
    let test = parse_range(parts.next().unwrap_or("")).map_err(|e| Reason::bad_in("bufferlen", format!("{e}")))?;
    let mut relative = false;
    for p in parts {
        match p {
            "relative" => relative = true,
            other => return Err(Reason::Unknown { family: "bufferlen", what: "argument", word: shorten(other) }),
        }
    }
    Ok(Detect::BufferLen { test, relative })
}

/// Packet-header and flow options; false if `n` is not one.
fn parse_header_option(n: &str, v: Option<&str>, rule: &mut Rule) -> Result<bool, Reason> {
    match n {
        "dsize" => {
            let t = parse_range(v.ok_or_else(|| Reason::NeedsValue { what: "dsize".into() })?)
                .map_err(|e| e.within("dsize"))?;
            rule.header_tests.push(HeaderTest::Dsize(t));
            rule.approximations.push("dsize (length of the payload given)".into());
        }
        "itype" | "icode" | "icmp_id" | "icmp_seq" | "ttl" | "id" | "seq" | "ack" => {
            let t = parse_range(v.ok_or_else(|| Reason::NeedsValue { what: n.into() })?).map_err(|e| e.within(n))?;
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
        "ip_proto" => rule.header_tests.push(HeaderTest::IpProto(parse_ip_proto(
            v.ok_or_else(|| Reason::NeedsValue { what: "ip_proto".into() })?,
        )?)),
        "flags" => rule.header_tests.push(parse_flags(v.ok_or_else(|| Reason::NeedsValue { what: "flags".into() })?)?),
        "fragbits" => {
            rule.header_tests.push(parse_fragbits(v.ok_or_else(|| Reason::NeedsValue { what: "fragbits".into() })?)?)
        }
        "flow" => parse_flow(v.ok_or_else(|| Reason::NeedsValue { what: "flow".into() })?, rule)?,
        "flowbits" => {
            rule.flowbits.push(parse_flowbits(v.ok_or_else(|| Reason::NeedsValue { what: "flowbits".into() })?)?)
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A Snort 2 style content modifier given as its own option: applies to the previous content.
fn modify_last_content(n: &str, v: Option<&str>, rule: &mut Rule, cur: &Cursor) -> Result<(), Reason> {
    if cur.dead {
        return Ok(());
    }
    let (si, ii) = cur.last_content.ok_or_else(|| Reason::bad(format!("'{n}' must follow a content option")))?;
    let mut c = match rule.segments.get(si).and_then(|s| s.items.get(ii)) {
        Some(Detect::Content(c)) => c.clone(),
        _ => return Err(Reason::bad(format!("'{n}' must follow a content option"))),
    };
    apply_modifier(&mut c, n, v, rule)?;
    check_content(&c)?;
    if let Some(Detect::Content(slot)) = rule.segments.get_mut(si).and_then(|s| s.items.get_mut(ii)) {
        *slot = c;
    }
    Ok(())
}

/// A sticky buffer, or an option the engine does not evaluate (recorded in `rule.unsupported`).
fn other_option(n: &str, has_value: bool, rule: &mut Rule, cur: &mut Cursor) {
    if let Some(b) = BufferKind::from_name(n) {
        if has_value {
            // e.g. http_header:field user-agent selects part of a buffer.
            rule.unsupported.push(format!("{n} with arguments"));
            cur.kill();
        } else {
            rule.segments.push(Segment { buffer: b, items: Vec::new() });
            cur.seg = Some(rule.segments.len() - 1);
            cur.dead = false;
            cur.last_content = None;
        }
    } else if UNSUPPORTED_BUFFERS.contains(&n) {
        rule.unsupported.push(n.to_string());
        cur.kill();
    } else if n.starts_with("http_") {
        rule.unsupported.push(format!("{n} (unknown)"));
        cur.kill();
    } else {
        // Any other option restricts matching in a way we do not evaluate; one Snort does
        // not know at all is named as such.
        let entry = if KNOWN_UNEVALUATED.contains(&n) { n.to_string() } else { format!("{n} {UNKNOWN_OPTION}") };
        if !rule.unsupported.contains(&entry) {
            rule.unsupported.push(entry);
        }
    }
}
