//! `content` and its modifiers.

use super::*;

/// Decodes a quoted content string starting at `s` (which begins with `"`): backslash escapes
/// the next character, `|..|` holds hex bytes. Returns the bytes and the text after the quote.
pub fn decode_content(s: &str) -> Result<(Vec<u8>, &str), String> {
    let body = s.strip_prefix('"').ok_or("content must be a quoted string")?;
    let mut out = Vec::new();
    let mut hex = false;
    let mut nib: Option<u8> = None;
    let mut it = body.char_indices();
    while let Some((i, c)) = it.next() {
        if hex {
            match c {
                '|' => {
                    if nib.is_some() {
                        return Err("odd number of hex digits in a |..| block".into());
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
                        return Err("hex byte split by a space in a |..| block".into());
                    }
                }
                '"' => return Err("unterminated |..| hex block".into()),
                other => return Err(format!("'{other}' is not a hex digit in a |..| block")),
            }
            continue;
        }
        match c {
            '\\' => match it.next() {
                Some((_, n)) => {
                    let mut b = [0u8; 4];
                    out.extend_from_slice(n.encode_utf8(&mut b).as_bytes());
                }
                None => return Err("content ends with a lone backslash".into()),
            },
            '|' => hex = true,
            '"' => return Ok((out, &body[i + 1..])),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    Err("unterminated quoted string".into())
}

pub(super) fn parse_content(v: &str, rule: &Rule) -> Result<Content, String> {
    let v = v.trim();
    let (negated, q) = match v.strip_prefix('!') {
        Some(r) => (true, r.trim_start()),
        None => (false, v),
    };
    let (pattern, rest) = decode_content(q).map_err(|e| format!("content: {e}"))?;
    if pattern.is_empty() {
        return Err("content: empty pattern".into());
    }
    let mut c = Content::new(pattern);
    c.negated = negated;
    let rest = rest.trim();
    if !rest.is_empty() {
        let rest = rest
            .strip_prefix(',')
            .ok_or_else(|| format!("content: unexpected '{}' after the pattern", shorten(rest)))?;
        for m in rest.split(',') {
            let m = m.trim();
            if m.is_empty() {
                return Err("content: empty modifier".into());
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

pub(super) fn apply_modifier(c: &mut Content, name: &str, v: Option<&str>, rule: &Rule) -> Result<(), String> {
    fn need<'a>(v: Option<&'a str>, name: &str) -> Result<&'a str, String> {
        v.ok_or_else(|| format!("content: '{name}' needs a value"))
    }
    match name {
        "nocase" => c.nocase = true,
        "fast_pattern" => c.fast_pattern = true,
        "offset" => {
            if c.is_relative() {
                return Err("content: offset can't be used with distance or within".into());
            }
            c.offset = Some(parse_num(need(v, name)?, "offset", rule)?);
        }
        "depth" => {
            if c.is_relative() {
                return Err("content: depth can't be used with distance or within".into());
            }
            c.depth = Some(parse_num(need(v, name)?, "depth", rule)?);
        }
        "distance" => {
            if c.offset.is_some() || c.depth.is_some() {
                return Err("content: distance can't be used with offset or depth".into());
            }
            c.distance = Some(parse_num(need(v, name)?, "distance", rule)?);
        }
        "within" => {
            if c.offset.is_some() || c.depth.is_some() {
                return Err("content: within can't be used with offset or depth".into());
            }
            c.within = Some(parse_num(need(v, name)?, "within", rule)?);
        }
        "fast_pattern_offset" => {
            let n = parse_int(need(v, name)?, "fast_pattern_offset")?;
            c.fp_offset = Some(u16::try_from(n).map_err(|_| "content: fast_pattern_offset out of range".to_string())?);
            c.fast_pattern = true;
        }
        "fast_pattern_length" => {
            let n = parse_int(need(v, name)?, "fast_pattern_length")?;
            c.fp_length = Some(u16::try_from(n).map_err(|_| "content: fast_pattern_length out of range".to_string())?);
            c.fast_pattern = true;
        }
        "rawbytes" => {}
        other => return Err(format!("content: unknown modifier '{}'", shorten(other))),
    }
    Ok(())
}

/// Snort's consistency checks on a content's window.
pub(super) fn check_content(c: &Content) -> Result<(), String> {
    let len = c.pattern.len() as i64;
    if let Some(Num::Lit(d)) = c.depth {
        if i64::from(d) < len {
            return Err(format!("content: depth ({d}) is less than the pattern length ({len})"));
        }
    }
    if let Some(Num::Lit(w)) = c.within {
        if i64::from(w) < len {
            return Err(format!("content: within ({w}) is less than the pattern length ({len})"));
        }
    }
    if let Some(Num::Lit(o)) = c.offset {
        if o < 0 {
            return Err(format!("content: negative offset ({o})"));
        }
    }
    if c.fp_offset.is_some() || c.fp_length.is_some() {
        let o = usize::from(c.fp_offset.unwrap_or(0));
        let l = c.fp_length.map(usize::from).unwrap_or(c.pattern.len().saturating_sub(o));
        if l == 0 || o + l > c.pattern.len() {
            return Err("content: fast_pattern_offset/length point outside the pattern".into());
        }
    }
    Ok(())
}
