//! `pcre`.

use super::*;

/// Parses `[!]"/re/flags"` (also `m{re}flags` style delimiters).
pub fn parse_pcre(v: &str) -> Result<Pcre, Reason> {
    let v = v.trim();
    let (negated, v) = match v.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, v),
    };
    let inner = v
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or_else(|| Reason::bad_in("pcre", "the expression must be a quoted string"))?;
    let (delim, body) = if let Some(r) = inner.strip_prefix('m') {
        let d = r.chars().next().ok_or_else(|| Reason::bad_in("pcre", "missing delimiter after 'm'"))?;
        if d.is_alphanumeric() || d.is_whitespace() || d == '\\' {
            return Err(Reason::bad_in("pcre", "bad delimiter after 'm'"));
        }
        (d, &r[d.len_utf8()..])
    } else if let Some(r) = inner.strip_prefix('/') {
        ('/', r)
    } else {
        return Err(Reason::bad_in("pcre", "the expression must start with '/'"));
    };
    let end = body.rfind(delim).ok_or_else(|| Reason::bad_in("pcre", "missing closing delimiter"))?;
    let source = &body[..end];
    let flags = &body[end + delim.len_utf8()..];
    if source.is_empty() {
        return Err(Reason::bad_in("pcre", "empty expression"));
    }
    for f in flags.chars() {
        if !"ismxAEGORUIPHDMCKSYB".contains(f) {
            return Err(Reason::Unknown { family: "pcre", what: "flag", word: f.to_string() });
        }
    }
    Ok(Pcre { source: source.to_string(), flags: flags.to_string(), negated, relative: flags.contains('R') })
}
