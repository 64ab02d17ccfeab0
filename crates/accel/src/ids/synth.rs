//! Builds traffic that triggers a given rule: a payload laid out from the rule's contents
//! (in order, honouring offset/depth/distance/within and `isdataat`), wrapped in an HTTP
//! request or response when the rule inspects HTTP buffers, plus packet metadata and header
//! fields that satisfy the rule header. Used by tests and to plant attacks in benchmarks.
//!
//! It gives up (`None`) on what it cannot construct: a non-negated `pcre`, `byte_*` options,
//! `bufferlen`, contents that cannot be placed, or HTTP buffers it cannot encode.

use std::net::Ipv4Addr;

use super::engine::{HeaderFields, PacketMeta, Proto};
use super::http::{looks_like_http, normalize_uri};
use super::rule::{BufferKind, Detect, HeaderTest, Num, Rule, RuleProto, Segment};

/// Traffic that should trigger one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attack {
    /// Packet metadata satisfying the rule header and `flow` option.
    pub meta: PacketMeta,
    /// Header fields satisfying the rule's header tests.
    pub hdr: HeaderFields,
    /// The payload.
    pub payload: Vec<u8>,
}

/// Builds metadata, header fields and payload for `rule`.
pub fn attack_for_rule(rule: &Rule) -> Option<Attack> {
    let payload = payload_for_rule(rule)?;
    let meta = meta_for_rule(rule)?;
    let hdr = header_fields_for_rule(rule)?;
    Some(Attack { meta, hdr, payload })
}

/// A payload that satisfies the rule's detection options, if one can be built.
pub fn payload_for_rule(rule: &Rule) -> Option<Vec<u8>> {
    let filler = pick_filler(rule)?;
    let uses_http = rule.segments.iter().any(|s| s.buffer.is_http());
    let http_file = rule.segments.iter().any(|s| s.buffer == BufferKind::FileData)
        && (rule.services.iter().any(|s| s == "http") || rule.services.is_empty() && !uses_pkt(rule));
    let mut payload = if uses_http || (http_file && rule.services.iter().all(|s| s == "http")) {
        if uses_pkt(rule) {
            return None;
        }
        build_http(rule, filler)?
    } else {
        // Everything on the raw payload (pkt_data, raw_data, file_data outside HTTP).
        let segs: Vec<&Segment> = rule.segments.iter().collect();
        let mut buf = Vec::new();
        for s in segs {
            // Each segment restarts at cursor 0 of the same buffer: lay them out one by one and
            // require that later ones fit the bytes already there.
            buf = build_buffer(&s.items, filler, buf)?;
        }
        if buf.is_empty() {
            buf = vec![filler; 8];
        }
        if looks_like_http(&buf) && rule.segments.iter().any(|s| s.buffer == BufferKind::FileData) {
            return None;
        }
        buf
    };
    for t in &rule.header_tests {
        if let HeaderTest::Dsize(r) = t {
            if !r.check(payload.len() as u64) {
                let want = r.example()? as usize;
                if want < payload.len() || want > 65_535 {
                    return None;
                }
                payload.resize(want, filler);
            }
        }
    }
    Some(payload)
}

fn uses_pkt(rule: &Rule) -> bool {
    rule.segments.iter().any(|s| matches!(s.buffer, BufferKind::Pkt | BufferKind::Raw))
}

/// A byte that occurs in no content of the rule (either case).
fn pick_filler(rule: &Rule) -> Option<u8> {
    let used: Vec<u8> = rule.contents().flat_map(|c| c.pattern.iter().map(|b| b.to_ascii_lowercase())).collect();
    b"~#@Qzq=_!0".iter().copied().find(|b| !used.contains(&b.to_ascii_lowercase()))
}

fn lit(n: &Option<Num>) -> Option<Option<i64>> {
    match n {
        None => Some(None),
        Some(Num::Lit(v)) => Some(Some(i64::from(*v))),
        Some(Num::Var(_)) => None,
    }
}

fn compatible(buf: &[u8], at: usize, pat: &[u8], nocase: bool) -> bool {
    pat.iter().enumerate().all(|(i, &p)| match buf.get(at + i) {
        None => true,
        Some(&b) => b == p || (nocase && b.eq_ignore_ascii_case(&p)),
    })
}

/// Lays out `items` over `start` (bytes already in the buffer); returns the buffer.
fn build_buffer(items: &[Detect], filler: u8, start: Vec<u8>) -> Option<Vec<u8>> {
    let mut buf = start;
    let mut cursor: usize = 0;
    let mut min_len = 0usize;
    let mut max_len = usize::MAX;
    for d in items {
        match d {
            Detect::Content(c) if c.negated => {
                // Snort: a negated content whose window starts past the buffer end does not
                // match, so keep at least one byte where its window starts.
                let start = if c.is_relative() {
                    cursor as i64 + lit(&c.distance)?.unwrap_or(0)
                } else {
                    lit(&c.offset)?.unwrap_or(0)
                };
                min_len = min_len.max(start.max(0) as usize + 1);
            }
            Detect::Content(c) => {
                let (lo, hi) = if c.is_relative() {
                    let dist = lit(&c.distance)?.unwrap_or(0);
                    let lo = (cursor as i64 + dist).max(0);
                    let hi = lit(&c.within)?.filter(|&w| w != 0).map(|w| lo + w);
                    (lo, hi)
                } else {
                    let lo = lit(&c.offset)?.unwrap_or(0).max(0);
                    let hi = lit(&c.depth)?.filter(|&d| d != 0).map(|d| lo + d);
                    (lo, hi)
                };
                let n = c.pattern.len() as i64;
                let lo = lo as usize;
                let last = match hi {
                    Some(h) => (h - n).max(-1),
                    None => (lo.max(buf.len())) as i64,
                };
                if last < lo as i64 {
                    return None;
                }
                let mut placed = None;
                let upto = (last as usize).min(lo.max(buf.len()));
                for p in lo..=upto {
                    if compatible(&buf, p, &c.pattern, c.nocase) {
                        placed = Some(p);
                        break;
                    }
                }
                let p = placed?;
                if buf.len() < p {
                    buf.resize(p, filler);
                }
                for (i, &b) in c.pattern.iter().enumerate() {
                    if p + i < buf.len() {
                        continue;
                    }
                    buf.push(b);
                }
                cursor = p + c.pattern.len();
            }
            Detect::IsDataAt { offset: Num::Lit(n), relative, negated } => {
                let base = if *relative { cursor as i64 } else { 0 };
                let at = base + i64::from(*n);
                if at < 0 {
                    if !*negated {
                        return None;
                    }
                    continue;
                }
                if *negated {
                    max_len = max_len.min(at as usize);
                } else {
                    min_len = min_len.max(at as usize + 1);
                }
            }
            Detect::Pcre(p) if p.negated => {}
            _ => return None,
        }
    }
    if buf.len() < min_len {
        buf.resize(min_len, filler);
    }
    if buf.len() > max_len {
        return None;
    }
    Some(buf)
}

/// Lays out every segment on buffer `kind` (they share the buffer, each from cursor 0).
fn build_kind(rule: &Rule, kinds: &[BufferKind], filler: u8) -> Option<Option<Vec<u8>>> {
    let mut buf: Option<Vec<u8>> = None;
    for s in rule.segments.iter().filter(|s| kinds.contains(&s.buffer)) {
        buf = Some(build_buffer(&s.items, filler, buf.unwrap_or_default())?);
    }
    Some(buf)
}

/// Percent-encodes a normalized URI so that our normalization gives it back.
fn encode_uri(u: &[u8]) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    for &b in u {
        if b.is_ascii_alphanumeric() || b"/?&=.-_~:;,+!*()$@".contains(&b) {
            raw.push(b);
        } else {
            raw.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    (normalize_uri(&raw) == u).then_some(raw)
}

fn build_http(rule: &Rule, filler: u8) -> Option<Vec<u8>> {
    let has = |k: BufferKind| rule.segments.iter().any(|s| s.buffer == k);
    let response = has(BufferKind::HttpStatCode)
        || has(BufferKind::HttpStatMsg)
        || (rule.flow.to_server == Some(false)
            && !has(BufferKind::HttpUri)
            && !has(BufferKind::HttpRawUri)
            && !has(BufferKind::HttpMethod)
            && !has(BufferKind::HttpClientBody));
    let header = build_kind(rule, &[BufferKind::HttpHeader, BufferKind::HttpRawHeader], filler)?;
    let cookie = build_kind(rule, &[BufferKind::HttpCookie], filler)?;
    let body = build_kind(rule, &[BufferKind::HttpClientBody, BufferKind::FileData], filler)?;
    let mut out = Vec::new();
    if response {
        let code = build_kind(rule, &[BufferKind::HttpStatCode], filler)?.unwrap_or_else(|| b"200".to_vec());
        let msg = build_kind(rule, &[BufferKind::HttpStatMsg], filler)?.unwrap_or_else(|| b"OK".to_vec());
        if code.contains(&b' ') || code.contains(&b'\n') || msg.contains(&b'\n') || msg.contains(&b'\r') {
            return None;
        }
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(&code);
        out.push(b' ');
        out.extend_from_slice(&msg);
        out.extend_from_slice(b"\r\n");
    } else {
        let method = build_kind(rule, &[BufferKind::HttpMethod], filler)?.unwrap_or_else(|| b"GET".to_vec());
        if method.is_empty() || !method.iter().all(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let raw = match (
            build_kind(rule, &[BufferKind::HttpUri], filler)?,
            build_kind(rule, &[BufferKind::HttpRawUri], filler)?,
        ) {
            (Some(_), Some(_)) => return None,
            (Some(u), None) => encode_uri(&u)?,
            (None, Some(r)) => r,
            (None, None) => b"/index.html".to_vec(),
        };
        if raw.iter().any(|&b| b == b' ' || b == b'\r' || b == b'\n') {
            return None;
        }
        out.extend_from_slice(&method);
        out.push(b' ');
        out.extend_from_slice(&raw);
        out.extend_from_slice(b" HTTP/1.1\r\n");
    }
    let mut hdr = header.unwrap_or_default();
    // A header buffer that starts with a line break needs a line before it.
    if hdr.starts_with(b"\r\n") {
        hdr.splice(0..0, b"X-Synth: 1".iter().copied());
    } else if hdr.starts_with(b"\n") {
        hdr.splice(0..0, b"X-Synth: 1\r".iter().copied());
    }
    if !hdr.is_empty() && !hdr.ends_with(b"\r\n") {
        hdr.extend_from_slice(b"\r\n");
    }
    if hdr.windows(2).any(|w| w == b"\n\n") || hdr.windows(4).any(|w| w == b"\r\n\r\n") {
        return None;
    }
    out.extend_from_slice(&hdr);
    if let Some(c) = cookie {
        if c.contains(&b'\n') || c.contains(&b'\r') {
            return None;
        }
        out.extend_from_slice(if response { b"Set-Cookie: " } else { b"Cookie: " });
        out.extend_from_slice(&c);
        out.extend_from_slice(b"\r\n");
    }
    let body = body.unwrap_or_default();
    let lower = hdr.to_ascii_lowercase();
    let declared_chunked = memchr::memmem::find(&lower, b"chunked").is_some();
    let no_length = rule.segments.iter().flat_map(|s| s.items.iter()).any(|d| {
        matches!(d, Detect::Content(c) if c.negated && c.pattern.eq_ignore_ascii_case(b"content-length")
            || matches!(d, Detect::Content(c) if c.negated && c.pattern.to_ascii_lowercase().starts_with(b"content-")))
    });
    let chunked = declared_chunked || (!body.is_empty() && !response && no_length);
    if chunked && !declared_chunked {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    } else if !chunked && !body.is_empty() && !response {
        out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if chunked {
        if !body.is_empty() {
            out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            out.extend_from_slice(&body);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(&body);
    }
    Some(out)
}

/// Packet metadata that satisfies the rule header and `flow`.
pub fn meta_for_rule(rule: &Rule) -> Option<PacketMeta> {
    let proto = match rule.proto {
        RuleProto::Tcp => Proto::Tcp,
        RuleProto::Udp => Proto::Udp,
        RuleProto::Icmp => Proto::Icmp,
        RuleProto::Ip => Proto::Tcp,
    };
    let src = rule.src.example()?;
    let dst = rule.dst.example().filter(|&d| d != src || rule.dst.matches(Ipv4Addr::new(198, 51, 100, 1)))?;
    let pick = |p: &super::rule::PortSet, default: u16| -> Option<u16> {
        if p.contains(default) {
            Some(default)
        } else {
            p.first()
        }
    };
    Some(PacketMeta {
        proto,
        src,
        dst,
        src_port: pick(&rule.src_ports, 40000)?,
        dst_port: pick(&rule.dst_ports, 80)?,
        to_server: rule.flow.to_server,
        established: !rule.flow.not_established,
    })
}

/// Header fields that satisfy the rule's header tests.
pub fn header_fields_for_rule(rule: &Rule) -> Option<HeaderFields> {
    let mut h = HeaderFields::default();
    for t in &rule.header_tests {
        match t {
            HeaderTest::Dsize(_) => {}
            HeaderTest::IcmpType(r) => h.icmp_type = Some(u8::try_from(r.example()?).ok()?),
            HeaderTest::IcmpCode(r) => h.icmp_code = Some(u8::try_from(r.example()?).ok()?),
            HeaderTest::IcmpId(r) => h.icmp_id = Some(u16::try_from(r.example()?).ok()?),
            HeaderTest::IcmpSeq(r) => h.icmp_seq = Some(u16::try_from(r.example()?).ok()?),
            HeaderTest::Ttl(r) => h.ttl = Some(u8::try_from(r.example()?).ok()?),
            HeaderTest::IpId(r) => h.ip_id = Some(u16::try_from(r.example()?).ok()?),
            HeaderTest::Seq(r) => h.seq = Some(u32::try_from(r.example()?).ok()?),
            HeaderTest::Ack(r) => h.ack = Some(u32::try_from(r.example()?).ok()?),
            HeaderTest::IpProto(r) => h.ip_proto = Some(u8::try_from(r.example()?).ok()?),
            HeaderTest::TcpFlags { mode, bits, .. } => {
                h.tcp_flags = Some(match mode {
                    '!' => !bits & 0x3F & !*bits,
                    _ => *bits,
                })
            }
            HeaderTest::FragBits { mode, bits } => {
                h.frag_bits = Some(match mode {
                    '!' => !bits & 0x7,
                    _ => *bits,
                })
            }
        }
    }
    Some(h)
}
