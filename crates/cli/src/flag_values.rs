//! Flag values that are numbers with a meaning beyond their type: nonsense is refused when the
//! command line is parsed, with one sentence saying what is accepted.

/// Smallest IPv4 MTU (RFC 791: every host must take 68-byte datagrams).
pub const MIN_MTU: usize = 68;
/// Largest IPv4 MTU (the total-length field).
pub const MAX_MTU: usize = 65535;

/// Parse an `--mtu` value: an IP MTU in bytes, 68 to 65,535.
pub fn parse_mtu(s: &str) -> Result<usize, String> {
    let v: usize = s.trim().parse().map_err(|_| format!("'{s}' is not an MTU in bytes (e.g. 1500 or 9000)"))?;
    if !(MIN_MTU..=MAX_MTU).contains(&v) {
        return Err(format!("an IPv4 MTU is {MIN_MTU} to {MAX_MTU} bytes, not {v}"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtus_outside_what_ipv4_allows_are_refused() {
        assert_eq!(parse_mtu("1500"), Ok(1500));
        assert_eq!(parse_mtu("68"), Ok(68));
        assert_eq!(parse_mtu("65535"), Ok(65535));
        for bad in ["0", "67", "65536", "-1", "big", ""] {
            assert!(parse_mtu(bad).is_err(), "{bad}");
        }
        assert!(parse_mtu("0").unwrap_err().contains("68 to 65535"));
    }
}
