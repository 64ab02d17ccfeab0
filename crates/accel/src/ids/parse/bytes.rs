//! `byte_test`, `byte_jump`, `byte_extract`.

use super::*;

/// Parses the arguments shared by byte_test/byte_jump/byte_extract after the positional ones.
pub(super) fn byte_read_flags(
    args: &[&str],
    what: &'static str,
    read: &mut ByteRead,
    rule: &mut Rule,
    mut extra: impl FnMut(&str, Option<&str>, &mut Rule) -> Result<bool, Reason>,
) -> Result<(), Reason> {
    let mut string = false;
    let mut base: Option<u32> = None;
    for a in args {
        let (k, val) = match a.split_once(char::is_whitespace) {
            Some((k, v)) => (k, Some(v.trim())),
            None => (*a, None),
        };
        match k {
            "relative" => read.relative = true,
            "little" => read.little = true,
            "big" => read.little = false,
            "string" => string = true,
            "hex" => base = Some(16),
            "dec" => base = Some(10),
            "oct" => base = Some(8),
            "dce" => {
                // Byte order from the DCE/RPC header: not available here.
                if !rule.unsupported.iter().any(|u| u == &format!("{what},dce")) {
                    rule.unsupported.push(format!("{what},dce"));
                }
            }
            "bitmask" => {
                let v = val.ok_or_else(|| Reason::NeedsValue { what: "bitmask".into() }.within(what))?;
                let n = parse_int(v, "bitmask")? as u32;
                if n == 0 {
                    return Err(Reason::bad_in(what, "bitmask must not be 0"));
                }
                read.bitmask = Some(n);
            }
            _ => {
                if !extra(k, val, rule)? {
                    return Err(Reason::Unknown { family: what, what: "argument", word: shorten(a) });
                }
            }
        }
    }
    if string {
        read.string_base = Some(base.unwrap_or(10));
        if read.bytes == 0 || read.bytes > 10 {
            return Err(Reason::bad_in(what, "string conversion reads 1 to 10 bytes"));
        }
    } else {
        if base.is_some() {
            return Err(Reason::bad_in(what, "hex/dec/oct need 'string'"));
        }
        if !(1..=4).contains(&read.bytes) {
            return Err(Reason::bad_in(what, "binary extraction reads 1 to 4 bytes"));
        }
    }
    Ok(())
}

pub(super) fn split_args(v: &str) -> Vec<&str> {
    v.split(',').map(str::trim).collect()
}

pub(super) fn parse_byte_test(v: &str, rule: &mut Rule) -> Result<Detect, Reason> {
    let a = split_args(v);
    if a.len() < 4 {
        return Err(Reason::TooFewArguments { family: "byte_test", needs: "bytes, operator, value, offset" });
    }
    let bytes = a[0]
        .parse::<u8>()
        .map_err(|_| Reason::bad_in("byte_test", format!("'{}' is not a byte count", shorten(a[0]))))?;
    let (negated, opstr) = match a[1].strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, a[1]),
    };
    let op = match opstr {
        "<" => ByteOp::Lt,
        ">" => ByteOp::Gt,
        "<=" => ByteOp::Le,
        ">=" => ByteOp::Ge,
        "=" => ByteOp::Eq,
        "&" => ByteOp::And,
        "^" => ByteOp::Xor,
        other => return Err(Reason::Unknown { family: "byte_test", what: "operator", word: shorten(other) }),
    };
    let value = parse_num(a[2], "byte_test value", rule)?;
    let offset = parse_num(a[3], "byte_test offset", rule)?;
    let mut read = ByteRead { bytes, offset, relative: false, little: false, string_base: None, bitmask: None };
    byte_read_flags(&a[4..], "byte_test", &mut read, rule, |_, _, _| Ok(false))?;
    Ok(Detect::ByteTest { read, op, negated, value })
}

pub(super) fn parse_byte_jump(v: &str, rule: &mut Rule) -> Result<Detect, Reason> {
    let a = split_args(v);
    if a.len() < 2 {
        return Err(Reason::TooFewArguments { family: "byte_jump", needs: "bytes, offset" });
    }
    let bytes = a[0]
        .parse::<u8>()
        .map_err(|_| Reason::bad_in("byte_jump", format!("'{}' is not a byte count", shorten(a[0]))))?;
    let offset = parse_num(a[1], "byte_jump offset", rule)?;
    let mut read = ByteRead { bytes, offset, relative: false, little: false, string_base: None, bitmask: None };
    let mut multiplier = 1u32;
    let mut align = false;
    let mut from_beginning = false;
    let mut from_end = false;
    let mut post: Option<String> = None;
    byte_read_flags(&a[2..], "byte_jump", &mut read, rule, |k, val, _| {
        match k {
            "multiplier" => {
                let n = parse_int(
                    val.ok_or_else(|| Reason::NeedsValue { what: "multiplier".into() }.within("byte_jump"))?,
                    "multiplier",
                )?;
                if !(1..=65535).contains(&n) {
                    return Err(Reason::bad_in("byte_jump", "multiplier must be 1..65535"));
                }
                multiplier = n as u32;
            }
            "align" => align = true,
            "from_beginning" => from_beginning = true,
            "from_end" => from_end = true,
            "post_offset" => {
                post = Some(
                    val.ok_or_else(|| Reason::NeedsValue { what: "post_offset".into() }.within("byte_jump"))?
                        .to_string(),
                )
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if from_beginning && from_end {
        return Err(Reason::bad_in("byte_jump", "from_beginning and from_end together"));
    }
    let post_offset = match post {
        Some(p) => parse_num(&p, "byte_jump post_offset", rule)?,
        None => Num::Lit(0),
    };
    Ok(Detect::ByteJump { read, multiplier, align, from_beginning, from_end, post_offset })
}

pub(super) fn parse_byte_extract(v: &str, rule: &mut Rule) -> Result<Detect, Reason> {
    let a = split_args(v);
    if a.len() < 3 {
        return Err(Reason::TooFewArguments { family: "byte_extract", needs: "bytes, offset, name" });
    }
    let bytes = a[0]
        .parse::<u8>()
        .map_err(|_| Reason::bad_in("byte_extract", format!("'{}' is not a byte count", shorten(a[0]))))?;
    let offset = parse_num(a[1], "byte_extract offset", rule)?;
    let name = a[2];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Reason::bad_in("byte_extract", "the variable name must start with a letter"));
    }
    let mut read = ByteRead { bytes, offset, relative: false, little: false, string_base: None, bitmask: None };
    let mut multiplier = 1u32;
    let mut align = 0u8;
    byte_read_flags(&a[3..], "byte_extract", &mut read, rule, |k, val, _| {
        match k {
            "multiplier" => {
                let n = parse_int(
                    val.ok_or_else(|| Reason::NeedsValue { what: "multiplier".into() }.within("byte_extract"))?,
                    "multiplier",
                )?;
                if !(1..=65535).contains(&n) {
                    return Err(Reason::bad_in("byte_extract", "multiplier must be 1..65535"));
                }
                multiplier = n as u32;
            }
            "align" => {
                let n = parse_int(
                    val.ok_or_else(|| Reason::NeedsValue { what: "align".into() }.within("byte_extract"))?,
                    "align",
                )?;
                if ![0, 2, 4].contains(&n) {
                    return Err(Reason::bad_in("byte_extract", "align must be 2 or 4"));
                }
                align = n as u8;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let var = match rule.vars.iter().position(|v| v == name) {
        Some(i) => i,
        None => {
            if rule.vars.len() >= MAX_RULE_VARS {
                return Err(Reason::bad_in("byte_extract", format!("more than {MAX_RULE_VARS} variables in one rule")));
            }
            rule.vars.push(name.to_string());
            rule.vars.len() - 1
        }
    };
    Ok(Detect::ByteExtract { read, multiplier, align, var: var as u8 })
}
