//! The HTTP/1.1 request parser (`apps::http::parse_request`) on arbitrary bytes, taken as a
//! pipelined stream the way the server reads it: it never panics; it answers exactly when a
//! request head is complete (empty lines before it skipped, then up to and including the
//! first `\r\n\r\n`); it answers a status the server knows; the head alone gets the same
//! answer (the next pipelined request changes nothing); a body is only ever skipped on a
//! connection that stays open; and the bytes consumed add up.
#![no_main]

use apps::http::{parse_request, MAX_OBJECT};
use libfuzzer_sys::fuzz_target;

fn head_end(b: &[u8]) -> Option<usize> {
    let lead = b.iter().take_while(|&&c| c == b'\r' || c == b'\n').count();
    b[lead..].windows(4).position(|w| w == b"\r\n\r\n").map(|p| lead + p + 4)
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let mut requests = 0usize;
    while let Some((used, reply)) = parse_request(rest) {
        assert_eq!(Some(used), head_end(rest), "a request head ends at its first blank line");
        assert!(matches!(reply.status, 200 | 400 | 404 | 405), "status {}", reply.status);
        if reply.status == 200 {
            assert!(reply.object <= MAX_OBJECT);
        } else {
            assert_eq!(reply.object, 0);
        }
        if reply.body > 0 {
            assert!(!reply.close, "a body is skipped only on a connection that stays open");
        }
        if reply.head_only {
            let lead = rest.iter().take_while(|&&c| c == b'\r' || c == b'\n').count();
            assert!(rest[lead..].starts_with(b"HEAD "));
        }
        assert_eq!(parse_request(&rest[..used]), Some((used, reply)), "the head alone parses the same");
        requests += 1;
        if reply.close {
            return;
        }
        let skip = usize::try_from(reply.body).unwrap_or(usize::MAX).min(rest.len() - used);
        rest = &rest[used + skip..];
    }
    assert_eq!(head_end(rest), None, "an incomplete head gets no answer");
    assert!(requests <= data.len() / 4);
});
