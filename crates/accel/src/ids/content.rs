//! `content` matching on one buffer with Snort 3's window rules.
//!
//! For a content at cursor `c` (the end of the previous match in this buffer, 0 at the start):
//! the window starts at `offset` (absolute) or `c + distance` (relative), clamped to 0, and is
//! `depth`/`within` bytes long (unbounded when absent or 0), cut at the buffer end. The pattern
//! must lie entirely inside the window. A negated content matches when the pattern is not in
//! the window, provided the window start is inside the buffer (Snort: a negated content
//! evaluated past the end of the buffer does not match). After a match the cursor moves to
//! the end of the matched bytes.

use memchr::memmem;

/// A content compiled for searching.
#[derive(Debug, Clone)]
pub struct ContentMatcher {
    /// The pattern as written (case preserved).
    pattern: Vec<u8>,
    /// ASCII-lowercased pattern, for nocase comparison.
    lower: Vec<u8>,
    /// Case-sensitive searcher.
    finder: memmem::Finder<'static>,
    /// ASCII case-insensitive comparison.
    pub nocase: bool,
    /// `!`: the content matches when absent.
    pub negated: bool,
    /// Window relative to the cursor (`distance`/`within`).
    pub relative: bool,
}

/// Where a content may match: `start..end` of the buffer, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The pattern must lie inside `start..end`.
    Range(usize, usize),
    /// The window is too small for the pattern but starts inside the buffer.
    TooSmall,
    /// The window starts at or past the end of the buffer.
    OutOfBounds,
}

/// Computes a content's search window (Snort 3 `uniSearchReal`): `off` is the offset or
/// distance, `len_limit` the depth or within (`None` or 0 = unbounded).
pub fn window(
    buf_len: usize,
    cursor: usize,
    relative: bool,
    off: i64,
    len_limit: Option<i64>,
    pat_len: usize,
) -> Window {
    let base = if relative { cursor as i64 } else { 0 };
    let pos = (base + off).max(0);
    let len = buf_len as i64 - pos;
    let depth = match len_limit {
        Some(d) if d != 0 && d <= len => d,
        _ => len,
    };
    let end = pos + pat_len as i64;
    if end > buf_len as i64 || end > pos + depth {
        return if depth > 0 { Window::TooSmall } else { Window::OutOfBounds };
    }
    Window::Range(pos as usize, (pos + depth) as usize)
}

impl ContentMatcher {
    /// Compiles a pattern.
    pub fn new(pattern: &[u8], nocase: bool, negated: bool, relative: bool) -> ContentMatcher {
        ContentMatcher {
            pattern: pattern.to_vec(),
            lower: pattern.to_ascii_lowercase(),
            finder: memmem::Finder::new(pattern).into_owned(),
            nocase,
            negated,
            relative,
        }
    }

    /// The pattern bytes.
    pub fn pattern(&self) -> &[u8] {
        &self.pattern
    }

    /// The first match start in `hay` (the whole window slice), if any.
    pub fn find_in(&self, hay: &[u8]) -> Option<usize> {
        if !self.nocase {
            return self.finder.find(hay);
        }
        let n = self.lower.len();
        if n == 0 || hay.len() < n {
            return if n == 0 { Some(0) } else { None };
        }
        let first = self.lower[0];
        let upper = first.to_ascii_uppercase();
        let last_start = hay.len() - n;
        let mut from = 0usize;
        while from <= last_start {
            let i = from + memchr::memchr2(first, upper, &hay[from..=last_start])?;
            if hay[i + 1..i + n].eq_ignore_ascii_case(&self.lower[1..]) {
                return Some(i);
            }
            from = i + 1;
        }
        None
    }

    /// The first match start at or after `from` inside window `w` of `buf`.
    pub fn find_from(&self, buf: &[u8], w: (usize, usize), from: usize) -> Option<usize> {
        let (s, e) = w;
        let s = s.max(from);
        if s >= e || e > buf.len() {
            return None;
        }
        self.find_in(&buf[s..e]).map(|i| s + i)
    }

    /// Evaluates the content once (first occurrence) at `cursor`; returns the new cursor on a
    /// match. Negated contents keep the cursor.
    pub fn eval(&self, buf: &[u8], cursor: usize, off: i64, len_limit: Option<i64>) -> Option<usize> {
        let w = window(buf.len(), cursor, self.relative, off, len_limit, self.pattern.len());
        match w {
            Window::Range(s, e) => {
                let hit = self.find_from(buf, (s, e), s);
                match (hit, self.negated) {
                    (Some(at), false) => Some(at + self.pattern.len()),
                    (Some(_), true) => None,
                    (None, false) => None,
                    (None, true) => Some(cursor),
                }
            }
            Window::TooSmall => self.negated.then_some(cursor),
            Window::OutOfBounds => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (pattern, nocase, negated, relative, offset-or-distance, depth-or-within)
    type Spec<'a> = (&'a str, bool, bool, bool, i64, Option<i64>);

    /// Evaluates a chain of contents in order, first occurrence each (no retry).
    fn chain(buf: &[u8], items: &[Spec<'_>]) -> bool {
        let mut cur = 0;
        for &(p, nocase, neg, rel, off, lim) in items {
            let m = ContentMatcher::new(p.as_bytes(), nocase, neg, rel);
            match m.eval(buf, cur, off, lim) {
                Some(c) => cur = c,
                None => return false,
            }
        }
        true
    }

    #[test]
    fn offset_and_depth() {
        let b = b"0123456789abcdef";
        assert!(chain(b, &[("abc", false, false, false, 0, None)]));
        assert!(chain(b, &[("abc", false, false, false, 10, Some(3))]));
        assert!(!chain(b, &[("abc", false, false, false, 10, Some(2))]));
        assert!(!chain(b, &[("abc", false, false, false, 11, None)]));
        assert!(chain(b, &[("0123", false, false, false, 0, Some(4))]));
        assert!(!chain(b, &[("1234", false, false, false, 0, Some(4))]));
        // The window is cut at the buffer end.
        assert!(chain(b, &[("def", false, false, false, 13, Some(100))]));
    }

    #[test]
    fn distance_and_within() {
        let b = b"GET /index.html HTTP/1.1";
        assert!(chain(b, &[("GET", false, false, false, 0, None), ("/index", false, false, true, 1, Some(6))]));
        assert!(!chain(b, &[("GET", false, false, false, 0, None), ("/index", false, false, true, 2, None)]));
        assert!(!chain(b, &[("GET", false, false, false, 0, None), ("index", false, false, true, 0, Some(5))]));
        assert!(chain(b, &[("GET", false, false, false, 0, None), ("index", false, false, true, 0, Some(7))]));
        // Negative distance looks back.
        assert!(chain(b, &[("HTTP", false, false, false, 0, None), ("html", false, false, true, -9, Some(5))]));
        // distance 0 right after the previous match.
        assert!(chain(b, &[("GET ", false, false, false, 0, None), ("/", false, false, true, 0, Some(1))]));
    }

    #[test]
    fn nocase() {
        let b = b"xxUsEr root";
        assert!(chain(b, &[("user", true, false, false, 0, None)]));
        assert!(!chain(b, &[("user", false, false, false, 0, None)]));
        assert!(chain(b, &[("USER", true, false, false, 2, Some(4)), ("ROOT", true, false, true, 1, Some(4))]));
    }

    #[test]
    fn negation() {
        let b = b"abcdef";
        assert!(chain(b, &[("xyz", false, true, false, 0, None)]));
        assert!(!chain(b, &[("cd", false, true, false, 0, None)]));
        assert!(chain(b, &[("cd", false, true, false, 3, None)]));
        // Window too small but inside the buffer: a negated content matches.
        assert!(chain(b, &[("abc", false, false, false, 0, None), ("defg", false, true, true, 0, None)]));
        // Window past the end: it does not.
        assert!(!chain(b, &[("def", false, false, false, 0, None), ("x", false, true, true, 0, None)]));
    }

    #[test]
    fn window_rules() {
        assert_eq!(window(10, 0, false, 2, Some(3), 3), Window::Range(2, 5));
        assert_eq!(window(10, 4, true, -10, Some(3), 2), Window::Range(0, 3));
        assert_eq!(window(10, 4, true, 0, None, 2), Window::Range(4, 10));
        assert_eq!(window(10, 9, true, 0, None, 2), Window::TooSmall);
        assert_eq!(window(10, 10, true, 0, None, 1), Window::OutOfBounds);
        assert_eq!(window(0, 0, false, 0, None, 1), Window::OutOfBounds);
    }
}
