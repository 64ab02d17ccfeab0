//! Packet-header options: `ip_proto`, `flags`, `fragbits`.

use super::*;

pub(super) fn parse_ip_proto(v: &str) -> Result<RangeTest, Reason> {
    let v = v.trim();
    let (prefix, name) = if let Some(r) = v.strip_prefix('!') {
        ("!", r)
    } else if let Some(r) = v.strip_prefix('<') {
        ("<", r)
    } else if let Some(r) = v.strip_prefix('>') {
        (">", r)
    } else {
        ("", v)
    };
    let num = match name.trim() {
        "icmp" => 1,
        "igmp" => 2,
        "tcp" => 6,
        "udp" => 17,
        "gre" => 47,
        "esp" => 50,
        "ah" => 51,
        "sctp" => 132,
        other => other
            .parse::<u8>()
            .map_err(|_| Reason::bad_in("ip_proto", format!("'{}' is not a protocol", shorten(other))))?,
    };
    parse_range(&format!("{prefix}{num}"))
}

pub(super) fn parse_flags(v: &str) -> Result<HeaderTest, Reason> {
    let (main, ignore_s) = match v.split_once(',') {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (v.trim(), None),
    };
    let bit = |c: char| -> Option<u8> {
        Some(match c.to_ascii_uppercase() {
            'F' => 0x01,
            'S' => 0x02,
            'R' => 0x04,
            'P' => 0x08,
            'A' => 0x10,
            'U' => 0x20,
            'E' | '2' => 0x40,
            'C' | '1' => 0x80,
            '0' | 'N' => 0,
            _ => return None,
        })
    };
    let mut mode = '=';
    let mut bits = 0u8;
    for c in main.chars() {
        match c {
            '+' | '*' | '!' => mode = c,
            c => {
                bits |= bit(c).ok_or_else(|| Reason::Unknown { family: "flags", what: "flag", word: c.to_string() })?
            }
        }
    }
    let mut ignore = 0u8;
    if let Some(s) = ignore_s {
        for c in s.chars() {
            ignore |= bit(c).ok_or_else(|| Reason::bad_in("flags", format!("unknown flag '{c}' in the mask")))?;
        }
    }
    Ok(HeaderTest::TcpFlags { mode, bits, ignore })
}

pub(super) fn parse_fragbits(v: &str) -> Result<HeaderTest, Reason> {
    let mut mode = '=';
    let mut bits = 0u8;
    for c in v.trim().chars() {
        match c {
            '+' | '*' | '!' => mode = c,
            'M' | 'm' => bits |= 0x1,
            'D' | 'd' => bits |= 0x2,
            'R' | 'r' => bits |= 0x4,
            c => return Err(Reason::Unknown { family: "fragbits", what: "bit", word: c.to_string() }),
        }
    }
    Ok(HeaderTest::FragBits { mode, bits })
}
