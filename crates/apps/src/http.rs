//! A minimal HTTP/1.1 static responder: `GET /<n>` or `GET /size/<n>` returns `n` bytes of the
//! deterministic [`crate::pattern`] with a `Content-Length`; `HEAD` the same without the body;
//! anything else 404 (unknown path), 405 (other methods) or 400 (malformed). Keep-alive and
//! pipelining as HTTP/1.1 defines them (`Connection: close` and HTTP/1.0 close after the reply):
//! every complete request on a connection is answered, in order. A request body with a
//! `Content-Length` is read and discarded, so the request after it is answered too; a body of
//! unknown length (`Transfer-Encoding`, an invalid `Content-Length`) closes the connection after
//! the reply. Empty lines before a request line are ignored (RFC 9112 section 2.2).

use crate::pattern;
use crate::tcp_conns::{ConnCounts, ConnSet, Step};
use link::Link;
use net::{NetError, Recv, Stack, TcpHandle};

/// Longest request head accepted (request line and headers).
pub const MAX_REQUEST: usize = 8192;
/// Largest object served (1 TiB).
pub const MAX_OBJECT: u64 = 1 << 40;
/// Send rounds per connection and call at most.
const MAX_ROUNDS: usize = 16;

/// What a request asks for, as far as this server is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Pattern bytes in the body (200 only).
    pub object: u64,
    /// Only the head (HEAD request).
    pub head_only: bool,
    /// Close the connection after this reply.
    pub close: bool,
    /// Bytes of request body after the head, to be discarded before the next request.
    pub body: u64,
}

/// Most header fields a request may have (more: 400).
const MAX_HEADERS: usize = 128;

/// Parse the request at the start of `buf` (with `httparse`): `None` while its head is
/// incomplete, else the bytes its head occupies (with any empty lines before it) and the
/// reply it gets. The body that follows the head is [`Reply::body`] bytes long.
pub fn parse_request(buf: &[u8]) -> Option<(usize, Reply)> {
    let bad = |end| Some((end, Reply { status: 400, object: 0, head_only: false, close: true, body: 0 }));
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let end = match req.parse(buf) {
        Ok(httparse::Status::Complete(end)) => end,
        Ok(httparse::Status::Partial) => return None,
        // Malformed: answered once its head is complete, then the connection closes.
        Err(_) => return bad(buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4),
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else { return bad(end) };
    let mut close = version == 0;
    // `framed`: the body's length is known (none, or a valid Content-Length).
    let mut framed = true;
    let mut content_length: Option<u64> = None;
    for h in req.headers.iter() {
        let Ok(value) = std::str::from_utf8(h.value) else { return bad(end) };
        let value = value.trim().to_ascii_lowercase();
        let name = h.name.to_ascii_lowercase();
        match name.as_str() {
            "connection" if value.contains("close") => close = true,
            "connection" if value.contains("keep-alive") => close = false,
            "content-length" => {
                let n = value.parse::<u64>().ok().filter(|_| value.bytes().all(|b| b.is_ascii_digit()));
                // Several Content-Length fields must agree (RFC 9112 section 6.3).
                match (n, content_length) {
                    (Some(n), None) => content_length = Some(n),
                    (Some(n), Some(m)) if n == m => {}
                    _ => framed = false,
                }
            }
            "transfer-encoding" => framed = false,
            _ => {}
        }
    }
    let length = framed.then(|| content_length.unwrap_or(0));
    let has_body = length != Some(0);
    // A body of known length is skipped; one of unknown length cannot be told apart from the
    // next request, so the connection closes after the reply.
    close |= length.is_none();
    let body = if close { 0 } else { length.unwrap_or(0) };
    let head_only = method == "HEAD";
    let reply = |status, object| Some((end, Reply { status, object, head_only, close, body }));
    if method != "GET" && method != "HEAD" {
        return reply(405, 0);
    }
    if has_body {
        return reply(400, 0);
    }
    let path = target.split('?').next().unwrap_or("");
    let digits = path.strip_prefix("/size/").or_else(|| path.strip_prefix('/')).unwrap_or("");
    match digits.parse::<u64>() {
        Ok(n) if n <= MAX_OBJECT && digits.bytes().all(|b| b.is_ascii_digit()) => reply(200, n),
        _ => reply(404, 0),
    }
}

/// The status line's reason phrase and the short text body of a status.
fn status_text(status: u16) -> (&'static str, &'static str) {
    match status {
        200 => ("OK", ""),
        400 => ("Bad Request", "bad request\n"),
        404 => ("Not Found", "not found: try /<bytes> or /size/<bytes>\n"),
        405 => ("Method Not Allowed", "only GET and HEAD\n"),
        _ => ("Request Header Fields Too Large", "request head too large\n"),
    }
}

/// The head (and, for errors, the short body) of `reply`.
fn render(reply: &Reply) -> Vec<u8> {
    let (reason, text) = status_text(reply.status);
    let len = if reply.status == 200 { reply.object } else { text.len() as u64 };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nServer: linerate\r\nContent-Type: {}\r\nContent-Length: {len}\r\nConnection: {}\r\n",
        reply.status,
        if reply.status == 200 { "application/octet-stream" } else { "text/plain" },
        if reply.close { "close" } else { "keep-alive" },
    );
    if reply.status == 405 {
        head += "Allow: GET, HEAD\r\n";
    }
    head += "\r\n";
    if !reply.head_only {
        head += text;
    }
    head.into_bytes()
}

/// One connection: the unparsed request bytes and the reply being sent.
#[derive(Default)]
struct Conn {
    req: Vec<u8>,
    head: Vec<u8>,
    head_off: usize,
    body_sent: u64,
    body_len: u64,
    close_after: bool,
    /// Request body bytes still to discard before the next request.
    skip: u64,
}

/// What the server counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpCounts {
    /// Requests answered with 200.
    pub ok: u64,
    /// Requests answered with an error status.
    pub errors: u64,
    /// Body bytes of 200 replies handed to the stack.
    pub body_bytes: u64,
}

/// An HTTP/1.1 server of pattern objects on one port.
pub struct HttpServer {
    conns: ConnSet<Conn>,
    counts: HttpCounts,
}

impl HttpServer {
    /// Listen on `port` of `stack`.
    pub fn listen<L: Link>(stack: &mut Stack<L>, port: u16) -> Result<Self, NetError> {
        Ok(HttpServer { conns: ConnSet::listen(stack, port, 1024)?, counts: HttpCounts::default() })
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.conns.port()
    }

    /// Connections accepted, completed, failed and open.
    pub fn connections(&self) -> ConnCounts {
        self.conns.counts()
    }

    /// Requests and bytes served.
    pub fn counts(&self) -> HttpCounts {
        self.counts
    }

    /// Accept new connections, read requests and send replies (call after each poll).
    /// Returns the work done (0: idle).
    pub fn serve<L: Link>(&mut self, stack: &mut Stack<L>) -> Result<usize, NetError> {
        let counts = &mut self.counts;
        self.conns.serve(stack, Conn::default, |stack, h, c| serve_conn(stack, h, c, counts))
    }
}

/// Send what is pending on one connection, then take the next request, until the send buffer
/// is full, no request is complete, or the connection is finished.
fn serve_conn<L: Link>(
    stack: &mut Stack<L>,
    h: TcpHandle,
    c: &mut Conn,
    counts: &mut HttpCounts,
) -> Result<Step, NetError> {
    let mut moved = 0;
    for _ in 0..MAX_ROUNDS {
        if c.head_off < c.head.len() {
            let n = stack.tcp_send(h, &c.head[c.head_off..])?;
            c.head_off += n;
            moved += n;
            if c.head_off < c.head.len() {
                return Ok(Step::Open(moved));
            }
        }
        if c.body_sent < c.body_len {
            let run = pattern::run_at(c.body_sent);
            let want = run.len().min((c.body_len - c.body_sent) as usize);
            let n = stack.tcp_send(h, &run[..want])?;
            c.body_sent += n as u64;
            counts.body_bytes += n as u64;
            moved += n;
            if n < want {
                return Ok(Step::Open(moved));
            }
            continue;
        }
        if c.close_after {
            return Ok(Step::Finished(moved));
        }
        if c.skip > 0 {
            let n = c.skip.min(c.req.len() as u64);
            c.req.drain(..n as usize);
            c.skip -= n;
        }
        let parsed = match c.skip {
            0 => match parse_request(&c.req) {
                None if c.req.len() >= MAX_REQUEST => {
                    Some((c.req.len(), Reply { status: 431, object: 0, head_only: false, close: true, body: 0 }))
                }
                p => p,
            },
            _ => None,
        };
        if let Some((used, reply)) = parsed {
            c.req.drain(..used);
            if reply.status == 200 {
                counts.ok += 1;
            } else {
                counts.errors += 1;
            }
            c.head = render(&reply);
            c.head_off = 0;
            c.body_sent = 0;
            c.body_len = if reply.status == 200 && !reply.head_only { reply.object } else { 0 };
            c.close_after = reply.close;
            c.skip = reply.body;
            continue;
        }
        let old = c.req.len();
        c.req.resize(MAX_REQUEST, 0);
        let r = stack.tcp_recv(h, &mut c.req[old..]);
        c.req.truncate(old + if let Ok(Recv::Data(n)) = r { n } else { 0 });
        match r? {
            Recv::Data(n) => moved += n,
            Recv::WouldBlock => return Ok(Step::Open(moved)),
            Recv::Eof => return Ok(Step::Finished(moved)),
        }
    }
    Ok(Step::Open(moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Option<(usize, Reply)> {
        parse_request(s.as_bytes())
    }

    #[test]
    fn routes_sizes_errors_and_keep_alive() {
        let (n, r) = parse("GET /size/1000 HTTP/1.1\r\nHost: x\r\n\r\nGET /").unwrap();
        assert_eq!(n, 36);
        assert_eq!(r, Reply { status: 200, object: 1000, head_only: false, close: false, body: 0 });
        assert_eq!(
            parse("GET /5 HTTP/1.0\r\n\r\n").unwrap().1,
            Reply { status: 200, object: 5, head_only: false, close: true, body: 0 }
        );
        assert!(parse("HEAD /7 HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap().1.close);
        assert_eq!(parse("GET /nope HTTP/1.1\r\n\r\n").unwrap().1.status, 404);
        assert_eq!(parse("GET /+5 HTTP/1.1\r\n\r\n").unwrap().1.status, 404);
        assert_eq!(parse("GET /99999999999999999999 HTTP/1.1\r\n\r\n").unwrap().1.status, 404);
        assert_eq!(parse("POST /5 HTTP/1.1\r\n\r\n").unwrap().1.status, 405);
        assert_eq!(
            parse("POST /5 HTTP/1.1\r\nContent-Length: 1\r\n\r\n").unwrap().1,
            Reply { status: 405, object: 0, head_only: false, close: false, body: 1 }
        );
        assert_eq!(parse("GET /5 HTTP/1.1\r\nContent-Length: 3\r\n\r\n").unwrap().1.status, 400);
        // Bodies of unknown length close the connection; Content-Length fields must agree.
        for unknown in [
            "POST /5 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST /5 HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
            "POST /5 HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ] {
            let r = parse(unknown).unwrap().1;
            assert!(r.close && r.body == 0, "{unknown:?}: {r:?}");
        }
        assert_eq!(parse("POST /5 HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n").unwrap().1.body, 2);
        // Empty lines before the request line are skipped (RFC 9112 section 2.2).
        assert_eq!(
            parse("\r\n\r\nGET /5 HTTP/1.1\r\n\r\n"),
            Some((23, Reply { status: 200, object: 5, head_only: false, close: false, body: 0 }))
        );
        assert_eq!(parse("\r\n\r\n"), None);
        assert_eq!(parse("GARBAGE\r\n\r\n").unwrap().1.status, 400);
        assert_eq!(parse("GET /5 HTTP/1.1\r\nHost"), None);
        assert!(parse_request(b"GET /\xff HTTP/1.1\r\n\r\n").unwrap().1.close);
    }

    #[test]
    fn renders_content_length() {
        let head =
            String::from_utf8(render(&Reply { status: 200, object: 42, head_only: false, close: false, body: 0 }))
                .unwrap();
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n")
                && head.contains("Content-Length: 42\r\n")
                && head.ends_with("\r\n\r\n")
        );
        let nf = String::from_utf8(render(&Reply { status: 404, object: 0, head_only: false, close: false, body: 0 }))
            .unwrap();
        let body = nf.split("\r\n\r\n").nth(1).unwrap();
        assert!(nf.contains(&format!("Content-Length: {}\r\n", body.len())));
    }
}
