//! `content` and its modifiers.

use super::*;

/// Decodes a quoted content string starting at `s` (which begins with `"`): backslash escapes
/// the next character, `|..|` holds hex bytes. Returns the bytes and the text after the quote.
pub fn decode_content(s: &str) -> Result<(Vec<u8>, &str), Reason> {
    let body = s.strip_prefix('"').ok_or_else(|| Reason::bad("content must be a quoted string"))?;
    let mut out = Vec::new();
    let mut hex = false;
    let mut nib: Option<u8> = None;
    let mut it = body.char_indices();
    while let Some((i, c)) = it.next() {
        if hex {
            match c {
                '|' => {
                    if nib.is_some() {
                        return Err(Reason::bad("odd number of hex digits in a |..| block"));
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
                        return Err(Reason::bad("hex byte split by a space in a |..| block"));
                    }
                }
                '"' => return Err(Reason::bad("unterminated |..| hex block")),
                other => return Err(Reason::bad(format!("'{other}' is not a hex digit in a |..| block"))),
            }
            continue;
        }
        match c {
            '\\' => match it.next() {
                Some((_, n)) => {
                    let mut b = [0u8; 4];
                    out.extend_from_slice(n.encode_utf8(&mut b).as_bytes());
                }
                None => return Err(Reason::bad("content ends with a lone backslash")),
            },
            '|' => hex = true,
            '"' => return Ok((out, &body[i + 1..])),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    Err(Reason::bad("unterminated quoted string"))
}

pub(super) fn parse_content(v: &str, rule: &Rule) -> Result<Content, Reason> {
    let v = v.trim();
    let (negated, q) = match v.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, v),
    };
    let (pattern, rest) = decode_content(q).map_err(|e| e.within("content"))?;
    if pattern.is_empty() {
        return Err(Reason::bad_in("content", "empty pattern"));
    }
    let mut c = Content::new(pattern);
    c.negated = negated;
    let rest = rest.trim();
    if !rest.is_empty() {
        let rest = rest
            .strip_prefix(',')
            .ok_or_else(|| Reason::bad_in("content", format!("unexpected '{}' after the pattern", shorten(rest))))?;
        for m in rest.split(',') {
            let m = m.trim();
            if m.is_empty() {
                return Err(Reason::bad_in("content", "empty modifier"));
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

pub(super) fn apply_modifier(c: &mut Content, name: &str, v: Option<&str>, rule: &Rule) -> Result<(), Reason> {
    fn need<'a>(v: Option<&'a str>, name: &str) -> Result<&'a str, Reason> {
        v.ok_or_else(|| Reason::NeedsValue { what: format!("'{name}'") }.within("content"))
    }
    match name {
        "nocase" => c.nocase = true,
        "fast_pattern" => c.fast_pattern = true,
        "offset" => {
            if c.is_relative() {
                return Err(Reason::bad_in("content", "offset can't be used with distance or within"));
            }
            c.offset = Some(parse_num(need(v, name)?, "offset", rule)?);
        }
        "depth" => {
            if c.is_relative() {
                return Err(Reason::bad_in("content", "depth can't be used with distance or within"));
            }
            c.depth = Some(parse_num(need(v, name)?, "depth", rule)?);
        }
        "distance" => {
            if c.offset.is_some() || c.depth.is_some() {
                return Err(Reason::bad_in("content", "distance can't be used with offset or depth"));
            }
            c.distance = Some(parse_num(need(v, name)?, "distance", rule)?);
        }
        "within" => {
            if c.offset.is_some() || c.depth.is_some() {
                return Err(Reason::bad_in("content", "within can't be used with offset or depth"));
            }
            c.within = Some(parse_num(need(v, name)?, "within", rule)?);
        }
        "fast_pattern_offset" => {
            let n = parse_int(need(v, name)?, "fast_pattern_offset")?;
            c.fp_offset =
                Some(u16::try_from(n).map_err(|_| Reason::bad_in("content", "fast_pattern_offset out of range"))?);
            c.fast_pattern = true;
        }
        "fast_pattern_length" => {
            let n = parse_int(need(v, name)?, "fast_pattern_length")?;
            c.fp_length =
                Some(u16::try_from(n).map_err(|_| Reason::bad_in("content", "fast_pattern_length out of range"))?);
            c.fast_pattern = true;
        }
        "rawbytes" => {}
        other => return Err(Reason::Unknown { family: "content", what: "modifier", word: shorten(other) }),
    }
    Ok(())
}

/// Snort's consistency checks on a content's window.
pub(super) fn check_content(c: &Content) -> Result<(), Reason> {
    let len = c.pattern.len() as i64;
    if let Some(Num::Lit(d)) = c.depth {
        if i64::from(d) < len {
            return Err(Reason::bad_in("content", format!("depth ({d}) is less than the pattern length ({len})")));
        }
    }
    if let Some(Num::Lit(w)) = c.within {
        if i64::from(w) < len {
            return Err(Reason::bad_in("content", format!("within ({w}) is less than the pattern length ({len})")));
        }
    }
    if let Some(Num::Lit(o)) = c.offset {
        if o < 0 {
            return Err(Reason::bad_in("content", format!("negative offset ({o})")));
        }
    }
    if c.fp_offset.is_some() || c.fp_length.is_some() {
        let o = usize::from(c.fp_offset.unwrap_or(0));
        let l = c.fp_length.map(usize::from).unwrap_or(c.pattern.len().saturating_sub(o));
        if l == 0 || o + l > c.pattern.len() {
            return Err(Reason::bad_in("content", "fast_pattern_offset/length point outside the pattern"));
        }
    }
    Ok(())
}
