//! A minimal HTTP/1.x message splitter that produces the buffers of Snort's HTTP sticky
//! options from one direction of a reassembled stream.
//!
//! What it does: request line (method, raw URI), status line (code, reason), header block,
//! Cookie / Set-Cookie values, body by Content-Length or chunked transfer coding (de-chunked),
//! pipelined messages one after another, and a URI normalization (percent and `%u` decoding,
//! `\` to `/`, `//`, `/./` and `/../` removal in the path). What it does not: content
//! decompression (gzip/deflate), header normalization (obfuscated folding), MIME, HTTP/2.

/// Most messages parsed from one payload.
pub const MAX_MESSAGES: usize = 64;

/// The buffers of one HTTP message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpMessage {
    /// Whether this is a request (else a response).
    pub is_request: bool,
    /// Request method.
    pub method: Vec<u8>,
    /// Request URI as sent.
    pub raw_uri: Vec<u8>,
    /// Normalized request URI.
    pub uri: Vec<u8>,
    /// Header block (all header lines, CRLFs included, start line and blank line excluded).
    pub header: Vec<u8>,
    /// Cookie (request) or Set-Cookie (response) values, joined by "; ".
    pub cookie: Vec<u8>,
    /// Message body, de-chunked.
    pub body: Vec<u8>,
    /// Whether `body` differs from the bytes on the wire (it was de-chunked).
    pub body_decoded: bool,
    /// Status code (responses).
    pub stat_code: Vec<u8>,
    /// Reason phrase (responses).
    pub stat_msg: Vec<u8>,
}

/// Whether `data` starts like an HTTP request or response (cheap check).
pub fn looks_like_http(data: &[u8]) -> bool {
    if data.starts_with(b"HTTP/") {
        return true;
    }
    let sp = match data.iter().take(24).position(|&b| b == b' ') {
        Some(i) if i > 0 => i,
        _ => return false,
    };
    data[..sp].iter().all(|b| b.is_ascii_uppercase() || *b == b'-' || *b == b'_')
}

/// Finds `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// The end of the line starting at `from` (index of '\n' or `data.len()`), and the line without CR.
fn line_at(data: &[u8], from: usize) -> (&[u8], usize) {
    let rest = &data[from..];
    let end = memchr::memchr(b'\n', rest).map_or(data.len(), |i| from + i);
    let mut line = &data[from..end];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    (line, end)
}

/// Parses the messages in `data` (one direction of a stream) into `out` (cleared first).
pub fn parse_messages(data: &[u8], out: &mut Vec<HttpMessage>) {
    out.clear();
    let mut pos = 0usize;
    while pos < data.len() && out.len() < MAX_MESSAGES {
        // Skip stray CRLFs between messages.
        while pos < data.len() && (data[pos] == b'\r' || data[pos] == b'\n') {
            pos += 1;
        }
        if pos >= data.len() || !looks_like_http(&data[pos..]) {
            break;
        }
        match parse_one(data, pos) {
            Some((msg, next)) => {
                out.push(msg);
                if next <= pos {
                    break;
                }
                pos = next;
            }
            None => break,
        }
    }
}

/// Parses one message at `start`; returns it and the index after it.
fn parse_one(data: &[u8], start: usize) -> Option<(HttpMessage, usize)> {
    let mut m = HttpMessage::default();
    let (first, eol) = line_at(data, start);
    if first.starts_with(b"HTTP/") {
        m.is_request = false;
        let mut parts = first.splitn(3, |&b| b == b' ');
        parts.next();
        m.stat_code = parts.next().unwrap_or_default().to_vec();
        m.stat_msg = parts.next().unwrap_or_default().to_vec();
    } else {
        m.is_request = true;
        let sp1 = memchr::memchr(b' ', first)?;
        m.method = first[..sp1].to_vec();
        let rest = &first[sp1 + 1..];
        let uri_end =
            memchr::memrchr(b' ', rest).filter(|&i| rest[i + 1..].starts_with(b"HTTP/")).unwrap_or(rest.len());
        m.raw_uri = rest[..uri_end].to_vec();
        m.uri = normalize_uri(&m.raw_uri);
    }
    let hdr_start = (eol + 1).min(data.len());
    // The header block ends at the first empty line.
    let (hdr_end, body_start) = if data[hdr_start..].starts_with(b"\r\n") {
        (hdr_start, hdr_start + 2)
    } else if data[hdr_start..].starts_with(b"\n") {
        (hdr_start, hdr_start + 1)
    } else if let Some(i) = find(&data[hdr_start..], b"\r\n\r\n") {
        let lf = find(&data[hdr_start..], b"\n\n").filter(|&j| j < i);
        match lf {
            Some(j) => (hdr_start + j + 1, hdr_start + j + 2),
            None => (hdr_start + i + 2, hdr_start + i + 4),
        }
    } else if let Some(j) = find(&data[hdr_start..], b"\n\n") {
        (hdr_start + j + 1, hdr_start + j + 2)
    } else {
        // Headers not complete: everything is header.
        m.header = data[hdr_start..].to_vec();
        collect_cookies(&mut m);
        return Some((m, data.len()));
    };
    m.header = data[hdr_start..hdr_end].to_vec();
    collect_cookies(&mut m);
    let body_start = body_start.min(data.len());
    let (len, chunked) = body_framing(&m.header);
    let end;
    if chunked {
        let (body, next) = dechunk(data, body_start);
        m.body = body;
        m.body_decoded = true;
        end = next;
    } else if let Some(n) = len {
        end = body_start.saturating_add(n).min(data.len());
        m.body = data[body_start..end].to_vec();
    } else if m.is_request {
        end = body_start;
    } else {
        // A response without length runs to the end of the stream, unless another status line follows.
        let next = find(&data[body_start..], b"\nHTTP/1.").map_or(data.len(), |i| body_start + i + 1);
        end = next;
        m.body = data[body_start..end].to_vec();
    }
    Some((m, end.max(body_start)))
}

/// Iterates over header fields as (name, value) with surrounding spaces trimmed.
fn fields(header: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    header.split(|&b| b == b'\n').filter_map(|l| {
        let l = l.strip_suffix(b"\r").unwrap_or(l);
        let c = memchr::memchr(b':', l)?;
        Some((l[..c].trim_ascii(), l[c + 1..].trim_ascii()))
    })
}

fn collect_cookies(m: &mut HttpMessage) {
    let want: &[u8] = if m.is_request { b"cookie" } else { b"set-cookie" };
    let mut out = Vec::new();
    for (n, v) in fields(&m.header) {
        if n.eq_ignore_ascii_case(want) {
            if !out.is_empty() {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(v);
        }
    }
    m.cookie = out;
}

/// (Content-Length, chunked) from a header block.
fn body_framing(header: &[u8]) -> (Option<usize>, bool) {
    let mut len = None;
    let mut chunked = false;
    for (n, v) in fields(header) {
        if n.eq_ignore_ascii_case(b"content-length") {
            len = std::str::from_utf8(v).ok().and_then(|s| s.trim().parse::<usize>().ok());
        } else if n.eq_ignore_ascii_case(b"transfer-encoding") {
            chunked = v.to_ascii_lowercase().windows(7).any(|w| w == b"chunked");
        }
    }
    (len, chunked)
}

/// De-chunks a body at `start`; returns the body and the index after the last chunk. On a
/// malformed size line the rest of the data is taken as is.
fn dechunk(data: &[u8], start: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut pos = start;
    loop {
        if pos >= data.len() {
            return (out, data.len());
        }
        let (line, eol) = line_at(data, pos);
        let hex = line.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
        let size = std::str::from_utf8(hex).ok().and_then(|s| usize::from_str_radix(s, 16).ok());
        let size = match size {
            Some(s) => s,
            None => {
                out.extend_from_slice(&data[pos..]);
                return (out, data.len());
            }
        };
        let cstart = (eol + 1).min(data.len());
        if size == 0 {
            // Skip trailers up to the empty line.
            let mut p = cstart;
            loop {
                if p >= data.len() {
                    return (out, data.len());
                }
                let (l, e) = line_at(data, p);
                p = (e + 1).min(data.len());
                if l.is_empty() {
                    return (out, p);
                }
            }
        }
        let cend = cstart.saturating_add(size).min(data.len());
        out.extend_from_slice(&data[cstart..cend]);
        pos = cend;
        if data[pos..].starts_with(b"\r\n") {
            pos += 2;
        } else if data[pos..].starts_with(b"\n") {
            pos += 1;
        }
    }
}

fn hexval(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Normalizes a request URI: `%XX` and `%uXXXX` (below 0x80) decoding, `\` to `/`, and in the
/// path (before `?`) removal of `//`, `/./` and `/../` segments.
pub fn normalize_uri(raw: &[u8]) -> Vec<u8> {
    let mut dec = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' {
            if i + 2 < raw.len() {
                if let (Some(h), Some(l)) = (hexval(raw[i + 1]), hexval(raw[i + 2])) {
                    dec.push(h << 4 | l);
                    i += 3;
                    continue;
                }
            }
            if i + 5 < raw.len() && (raw[i + 1] == b'u' || raw[i + 1] == b'U') {
                let d: Option<Vec<u8>> = raw[i + 2..i + 6].iter().map(|&c| hexval(c)).collect();
                if let Some(d) = d {
                    let v = (u32::from(d[0]) << 12) | (u32::from(d[1]) << 8) | (u32::from(d[2]) << 4) | u32::from(d[3]);
                    if v < 0x80 {
                        dec.push(v as u8);
                        i += 6;
                        continue;
                    }
                }
            }
        }
        dec.push(if b == b'\\' { b'/' } else { b });
        i += 1;
    }
    let q = memchr::memchr(b'?', &dec).unwrap_or(dec.len());
    let (path, query) = dec.split_at(q);
    let mut out = simplify_path(path);
    out.extend_from_slice(query);
    out
}

/// Removes empty, `.` and `..` segments from a path, keeping a leading and trailing `/`.
fn simplify_path(path: &[u8]) -> Vec<u8> {
    if !path.contains(&b'/') {
        return path.to_vec();
    }
    let lead = path.first() == Some(&b'/');
    let trail = path.len() > 1 && path.last() == Some(&b'/');
    let mut segs: Vec<&[u8]> = Vec::new();
    for s in path.split(|&b| b == b'/') {
        match s {
            b"" | b"." => {}
            b".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut out = Vec::with_capacity(path.len());
    if lead {
        out.push(b'/');
    }
    for (i, s) in segs.iter().enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        out.extend_from_slice(s);
    }
    if trail && !segs.is_empty() {
        out.push(b'/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_buffers() {
        let d = b"POST /a/./b//c/../d.php?x=%41 HTTP/1.1\r\nHost: h\r\nCookie: s=1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n";
        let mut v = Vec::new();
        parse_messages(d, &mut v);
        assert_eq!(v.len(), 2);
        let m = &v[0];
        assert_eq!(m.method, b"POST");
        assert_eq!(m.raw_uri, b"/a/./b//c/../d.php?x=%41");
        assert_eq!(m.uri, b"/a/b/d.php?x=A");
        assert_eq!(m.cookie, b"s=1");
        assert_eq!(m.body, b"hello");
        assert!(m.header.starts_with(b"Host: h\r\n"));
        assert_eq!(v[1].method, b"GET");
    }

    #[test]
    fn response_and_chunks() {
        let d = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=b\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n";
        let mut v = Vec::new();
        parse_messages(d, &mut v);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].stat_code, b"404");
        assert_eq!(v[0].stat_msg, b"Not Found");
        assert_eq!(v[0].body, b"abcde");
        assert_eq!(v[0].cookie, b"a=b");
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let mut v = Vec::new();
        for d in [
            &b""[..],
            b"GET",
            b"GET ",
            b"HTTP/",
            b"GET /%",
            b"GET /%u12 HTTP/1.1\n\n",
            b"HTTP/1.1 200\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            parse_messages(d, &mut v);
        }
        assert_eq!(normalize_uri(b"%"), b"%");
        assert_eq!(normalize_uri(b"/%2"), b"/%2");
        assert_eq!(normalize_uri(b"\\..\\..\\x"), b"/x");
    }
}
