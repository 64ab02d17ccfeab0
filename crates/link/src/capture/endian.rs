//! Byte order of a capture file: both formats are written in the writer's native order and
//! read in whichever order the file declares.

/// A byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

impl Endian {
    /// This machine's byte order.
    pub(crate) fn native() -> Endian {
        if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }
    }

    /// The u16 at `at` (the caller checked the bounds).
    pub(crate) fn u16(self, b: &[u8], at: usize) -> u16 {
        let v = [b[at], b[at + 1]];
        match self {
            Endian::Little => u16::from_le_bytes(v),
            Endian::Big => u16::from_be_bytes(v),
        }
    }

    /// The u32 at `at` (the caller checked the bounds).
    pub(crate) fn u32(self, b: &[u8], at: usize) -> u32 {
        let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        match self {
            Endian::Little => u32::from_le_bytes(v),
            Endian::Big => u32::from_be_bytes(v),
        }
    }

    /// The u64 at `at` (the caller checked the bounds).
    pub(crate) fn u64(self, b: &[u8], at: usize) -> u64 {
        let (hi, lo) = match self {
            Endian::Little => (self.u32(b, at + 4), self.u32(b, at)),
            Endian::Big => (self.u32(b, at), self.u32(b, at + 4)),
        };
        (u64::from(hi) << 32) | u64::from(lo)
    }

    /// Append `v` in this order.
    pub(crate) fn put_u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }

    /// Append `v` in this order.
    pub(crate) fn put_u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }

    /// Append `v` in this order.
    pub(crate) fn put_u64(self, out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        });
    }
}
