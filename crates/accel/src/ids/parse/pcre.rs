//! `pcre`.

use super::*;

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
