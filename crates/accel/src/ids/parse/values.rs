//! Option values shared by the families: strings, integers, numbers or variables, ranges.

use super::*;

/// Unquotes a `msg`-style string (backslash escapes; no hex blocks).
pub(super) fn unquote(v: &str) -> Result<String, Reason> {
    let v = v.trim();
    let inner = match v.strip_prefix('"') {
        Some(r) => r.strip_suffix('"').ok_or_else(|| Reason::bad("unterminated quoted string"))?,
        None => v,
    };
    let mut out = String::new();
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some(n) => out.push(n),
                None => return Err(Reason::bad("string ends with a lone backslash")),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

pub(super) fn parse_u32(v: Option<&str>, what: &str) -> Result<u32, Reason> {
    let v = v.ok_or_else(|| Reason::NeedsValue { what: what.to_string() })?;
    v.trim()
        .parse::<u32>()
        .map_err(|_| Reason::bad(format!("{what} value '{}' is not a non-negative integer", shorten(v))))
}

pub(super) fn parse_int(t: &str, what: &str) -> Result<i32, Reason> {
    let t = t.trim();
    let n = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        t.parse::<i64>().ok()
    };
    match n {
        Some(n) if (-65535..=4_294_967_295).contains(&n) => Ok(n as i32),
        _ => Err(Reason::bad(format!("{what} value '{}' is not an integer in range", shorten(t)))),
    }
}

/// Parses a number or a byte_extract variable name.
pub(super) fn parse_num(t: &str, what: &str, rule: &Rule) -> Result<Num, Reason> {
    let t = t.trim();
    if t.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
        return parse_int(t, what).map(Num::Lit);
    }
    match rule.vars.iter().position(|v| v == t) {
        Some(i) => Ok(Num::Var(i as u8)),
        None => {
            Err(Reason::bad(format!("'{}' is neither a number nor a byte_extract variable of this rule", shorten(t)))
                .within(what))
        }
    }
}

/// Parses `N`, `=N`, `!N`, `<N`, `<=N`, `>N`, `>=N`, `A<>B`, `A<=>B` (also the old `A-B`).
pub fn parse_range(v: &str) -> Result<RangeTest, Reason> {
    let v = v.trim();
    let n = |t: &str| -> Result<u64, Reason> {
        let t = t.trim();
        let r = if let Some(h) = t.strip_prefix("0x") { u64::from_str_radix(h, 16) } else { t.parse::<u64>() };
        r.map_err(|_| Reason::bad(format!("'{}' is not a non-negative integer", shorten(t))))
    };
    if let Some((a, b)) = v.split_once("<=>") {
        return Ok(RangeTest::BetweenIncl(n(a)?, n(b)?));
    }
    if let Some((a, b)) = v.split_once("<>") {
        return Ok(RangeTest::Between(n(a)?, n(b)?));
    }
    if let Some(r) = v.strip_prefix("<=") {
        return Ok(RangeTest::Le(n(r)?));
    }
    if let Some(r) = v.strip_prefix(">=") {
        return Ok(RangeTest::Ge(n(r)?));
    }
    if let Some(r) = v.strip_prefix('<') {
        return Ok(RangeTest::Lt(n(r)?));
    }
    if let Some(r) = v.strip_prefix('>') {
        return Ok(RangeTest::Gt(n(r)?));
    }
    if let Some(r) = v.strip_prefix('!') {
        return Ok(RangeTest::Ne(n(r)?));
    }
    if let Some(r) = v.strip_prefix('=') {
        return Ok(RangeTest::Eq(n(r)?));
    }
    if let Some((a, b)) = v.split_once('-') {
        if !a.trim().is_empty() {
            return Ok(RangeTest::BetweenIncl(n(a)?, n(b)?));
        }
    }
    Ok(RangeTest::Eq(n(v)?))
}
