//! IPv4 options (RFC 791) checked as a receiving host checks them, the way Linux's
//! `ip_options_compile` does: a malformed option is reported with the offset of the byte at
//! fault (for an ICMP parameter problem), and the options a host acts on are located.

/// End of option list.
pub const EOL: u8 = 0;
/// No operation (padding between options).
pub const NOP: u8 = 1;
/// Record route.
pub const RECORD_ROUTE: u8 = 7;
/// Timestamp.
pub const TIMESTAMP: u8 = 68;
/// Loose source and record route.
pub const LSRR: u8 = 131;
/// Strict source and record route.
pub const SSRR: u8 = 137;

/// What a well-formed option list holds that a host acts on (offsets are within the options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ipv4Options {
    /// Offset of a loose or strict source route option (the packet asks to be routed on).
    pub source_route: Option<usize>,
    /// Offset of the record route option.
    pub record_route: Option<usize>,
    /// Offset of the timestamp option.
    pub timestamp: Option<usize>,
}

/// A malformed option: `offset` is the option byte at fault, counted from the start of the
/// options (add the 20 bytes of the fixed header for an ICMP parameter problem's pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadOption {
    /// Offset of the byte at fault within the options.
    pub offset: usize,
}

/// Check an option list (the bytes between the fixed header and the payload).
///
/// Refused, as Linux refuses them: an option whose length byte is missing, below 2 or runs
/// past the header (offset of the option); record route, source route shorter than 3 bytes
/// or timestamp shorter than 4 (offset of the length); a pointer below its minimum (4 for
/// the routes, 5 for timestamp) or one that leaves a partial slot (offset of the pointer); a
/// second option of the same kind; a full timestamp whose overflow count is 15 (offset of
/// the flags byte). Unknown options are skipped by their length.
pub fn check(options: &[u8]) -> Result<Ipv4Options, BadOption> {
    let mut out = Ipv4Options::default();
    let mut i = 0;
    while i < options.len() {
        let kind = options[i];
        match kind {
            EOL => break,
            NOP => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let bad = |at: usize| Err(BadOption { offset: i + at });
        let Some(&len) = options.get(i + 1) else { return bad(0) };
        let len = usize::from(len);
        if len < 2 || i + len > options.len() {
            return bad(0);
        }
        let opt = &options[i..i + len];
        match kind {
            RECORD_ROUTE | LSRR | SSRR => {
                if len < 3 {
                    return bad(1);
                }
                let ptr = usize::from(opt[2]);
                if ptr < 4 || (ptr <= len && ptr + 3 > len) {
                    return bad(2);
                }
                let slot = if kind == RECORD_ROUTE { &mut out.record_route } else { &mut out.source_route };
                if slot.is_some() {
                    return bad(0);
                }
                *slot = Some(i);
            }
            TIMESTAMP => {
                if len < 4 {
                    return bad(1);
                }
                let ptr = usize::from(opt[2]);
                if ptr < 5 {
                    return bad(2);
                }
                // Stamps only (flag 0) take 4 bytes a slot; address and stamp (1) or
                // prespecified addresses (3) take 8.
                let flag = opt[3] & 0x0f;
                let entry = if flag == 1 || flag == 3 { 8 } else { 4 };
                if ptr <= len {
                    if ptr + entry - 1 > len {
                        return bad(2);
                    }
                } else if flag != 3 && opt[3] >> 4 == 15 {
                    return bad(3);
                }
                if out.timestamp.is_some() {
                    return bad(0);
                }
                out.timestamp = Some(i);
            }
            _ => {}
        }
        i += len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(o: &[u8]) -> usize {
        check(o).unwrap_err().offset
    }

    #[test]
    fn well_formed_lists_are_located() {
        assert_eq!(check(&[]), Ok(Ipv4Options::default()));
        // ping -R: record route with 9 empty slots, then EOL padding.
        let mut rr = vec![NOP, RECORD_ROUTE, 39, 4];
        rr.resize(40, 0);
        assert_eq!(check(&rr).unwrap().record_route, Some(1));
        // A full record route (pointer past the end) is well formed.
        assert_eq!(check(&[RECORD_ROUTE, 7, 8, 1, 2, 3, 4, EOL]).unwrap().record_route, Some(0));
        let lsrr = [LSRR, 7, 4, 10, 0, 0, 1, EOL];
        assert_eq!(check(&lsrr).unwrap().source_route, Some(0));
        let ssrr = [NOP, SSRR, 7, 8, 10, 0, 0, 1];
        assert_eq!(check(&ssrr).unwrap().source_route, Some(1), "exhausted or not, it is a source route");
        // Timestamp, addresses and stamps (flag 1), one slot.
        assert_eq!(check(&[TIMESTAMP, 12, 5, 1, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap().timestamp, Some(0));
        // Router alert (unknown here) is skipped by its length.
        assert_eq!(check(&[148, 4, 0, 0]), Ok(Ipv4Options::default()));
        // Everything after EOL is padding.
        assert_eq!(check(&[EOL, 99, 0, 0]), Ok(Ipv4Options::default()));
    }

    #[test]
    fn malformed_options_name_the_byte_at_fault() {
        assert_eq!(err(&[NOP, RECORD_ROUTE]), 1, "no length byte");
        assert_eq!(err(&[RECORD_ROUTE, 0, 4, 0]), 0, "length 0");
        assert_eq!(err(&[RECORD_ROUTE, 1, 4, 0]), 0, "length 1");
        assert_eq!(err(&[148, 9, 0, 0]), 0, "length past the header");
        assert_eq!(err(&[RECORD_ROUTE, 2, NOP, NOP]), 1, "record route too short for a pointer");
        assert_eq!(err(&[RECORD_ROUTE, 7, 1, 0, 0, 0, 0, EOL]), 2, "pointer 1");
        assert_eq!(err(&[RECORD_ROUTE, 7, 6, 0, 0, 0, 0, EOL]), 2, "pointer leaving a partial slot");
        assert_eq!(err(&[LSRR, 7, 3, 0, 0, 0, 0, EOL]), 2, "source route pointer 3");
        assert_eq!(err(&[RECORD_ROUTE, 3, 4, RECORD_ROUTE, 3, 4, EOL, EOL]), 3, "two record routes");
        assert_eq!(err(&[TIMESTAMP, 3, 5, EOL]), 1, "timestamp too short");
        assert_eq!(err(&[TIMESTAMP, 8, 4, 0, 0, 0, 0, 0]), 2, "timestamp pointer 4");
        assert_eq!(err(&[TIMESTAMP, 8, 9, 0xf0, 0, 0, 0, 0]), 3, "full with overflow 15");
        assert!(check(&[TIMESTAMP, 8, 9, 0xe0, 0, 0, 0, 0]).is_ok(), "full, overflow 14");
        assert_eq!(err(&[TIMESTAMP, 8, 5, 1, 0, 0, 0, 0]), 2, "no room for an address and a stamp");
    }

    #[test]
    fn no_input_panics() {
        // Every list of up to 3 bytes over an alphabet of the interesting values.
        let alphabet = [0u8, 1, 2, 3, 4, 5, 7, 68, 131, 137, 255];
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    let _ = check(&[a]);
                    let _ = check(&[a, b]);
                    let _ = check(&[a, b, c]);
                }
            }
        }
    }
}
