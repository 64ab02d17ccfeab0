//! Address and port expressions (`[a,!b]`, `$VAR`, ranges).

use super::*;

/// Splits `s` at top-level commas (not inside brackets).
pub(super) fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Parses an address expression (`any`, `1.2.3.0/24`, `$VAR`, `[a,!b]`, `!x`).
pub fn parse_addr(s: &str, vars: &Vars, depth: usize) -> Result<AddrSpec, Reason> {
    if depth > MAX_VAR_DEPTH {
        return Err(Reason::VariableCycle);
    }
    let s = s.trim();
    if s.is_empty() {
        return Err(Reason::bad("empty address"));
    }
    if let Some(rest) = s.strip_prefix('!') {
        return Ok(AddrSpec::Not(Box::new(parse_addr(rest, vars, depth + 1)?)));
    }
    if let Some(name) = s.strip_prefix('$') {
        let v = vars.net(name).ok_or_else(|| Reason::UndefinedVariable { kind: "address", name: name.to_string() })?;
        return parse_addr(v, vars, depth + 1);
    }
    if s == "any" {
        return Ok(AddrSpec::Any);
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner =
            inner.strip_suffix(']').ok_or_else(|| Reason::bad(format!("unbalanced '[' in '{}'", shorten(s))))?;
        let mut items = Vec::new();
        for part in split_top(inner) {
            items.push(parse_addr(part, vars, depth + 1)?);
        }
        if items.len() == 1 && !matches!(items[0], AddrSpec::Not(_)) {
            return Ok(items.pop().unwrap_or(AddrSpec::Any));
        }
        return Ok(AddrSpec::List(items));
    }
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    if a.contains(':') {
        return Err(Reason::bad(format!("IPv6 address '{}' is not supported", shorten(s))));
    }
    let addr: std::net::Ipv4Addr =
        a.parse().map_err(|_| Reason::bad(format!("'{}' is not an IPv4 address or prefix", shorten(s))))?;
    let len: u8 = match l {
        None => 32,
        Some(l) => match l.parse::<u8>() {
            Ok(n) if n <= 32 => n,
            _ => return Err(Reason::bad(format!("bad prefix length in '{}'", shorten(s)))),
        },
    };
    let a = u32::from(addr);
    let masked = if len == 0 { 0 } else { a & (u32::MAX << (32 - u32::from(len))) };
    Ok(AddrSpec::Prefix(Prefix { addr: masked, len }))
}

/// Parses a port expression (`any`, `80`, `1024:`, `:1023`, `1:5`, `$VAR`, `[a,b,!c]`, `!x`).
pub fn parse_ports(s: &str, vars: &Vars, depth: usize) -> Result<PortSet, Reason> {
    if depth > MAX_VAR_DEPTH {
        return Err(Reason::VariableCycle);
    }
    let s = s.trim();
    if s.is_empty() {
        return Err(Reason::bad("empty port"));
    }
    if let Some(rest) = s.strip_prefix('!') {
        return Ok(parse_ports(rest, vars, depth + 1)?.complement());
    }
    if let Some(name) = s.strip_prefix('$') {
        let v = vars.port(name).ok_or_else(|| Reason::UndefinedVariable { kind: "port", name: name.to_string() })?;
        return parse_ports(v, vars, depth + 1);
    }
    if s == "any" {
        return Ok(PortSet::any());
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner =
            inner.strip_suffix(']').ok_or_else(|| Reason::bad(format!("unbalanced '[' in '{}'", shorten(s))))?;
        let mut pos: Option<PortSet> = None;
        let mut neg = PortSet::none();
        for part in split_top(inner) {
            let part = part.trim();
            if let Some(n) = part.strip_prefix('!') {
                neg = neg.union(&parse_ports(n, vars, depth + 1)?);
            } else {
                let p = parse_ports(part, vars, depth + 1)?;
                pos = Some(match pos {
                    Some(acc) => acc.union(&p),
                    None => p,
                });
            }
        }
        let pos = pos.unwrap_or_else(PortSet::any);
        return Ok(pos.intersect(&neg.complement()));
    }
    let num = |t: &str| -> Result<u16, Reason> {
        t.trim().parse::<u16>().map_err(|_| Reason::bad(format!("'{}' is not a port number (0..=65535)", shorten(t))))
    };
    if let Some((a, b)) = s.split_once(':') {
        let lo = if a.trim().is_empty() { 0 } else { num(a)? };
        let hi = if b.trim().is_empty() { u16::MAX } else { num(b)? };
        if lo > hi {
            return Err(Reason::bad(format!("port range '{s}' is empty (low > high)")));
        }
        return Ok(PortSet::from_ranges(vec![(lo, hi)]));
    }
    let p = num(s)?;
    Ok(PortSet::from_ranges(vec![(p, p)]))
}
