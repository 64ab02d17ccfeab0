//! The request and response records of the SPN service (little-endian throughout).
//!
//! Request: a 16-byte header, then `count` input vectors of `vector_len` bytes each, then
//! (if the mask flag is set) `count` missing-masks of `ceil(vector_len / 8)` bytes each
//! (bit `v % 8` of byte `v / 8` set = input `v` is missing and is marginalised out).
//!
//! ```text
//! offset 0  magic "SPNQ"      offset 4  version (1)     offset 5  flags
//! offset 6  count (u16)       offset 8  vector_len (u16) offset 10 reserved (u16, 0)
//! offset 12 request id (u32, echoed)
//! flags: bit 0 = answer log-likelihoods (else likelihoods), bit 1 = masks follow
//! ```
//!
//! Response: a 16-byte header with magic "SPNR", the same version, flags (bit 0 echoed, bit 7
//! = error), `count`, `status` (u16 at offset 8: 0 = ok, else an [`Status`] code), reserved,
//! the request id; then `count` f64 values, one per vector, in order (none for an error).
//! A record shorter than a header or without the request magic is dropped and counted; any
//! other malformed request is answered with an error record.

/// Magic of a request.
pub const REQUEST_MAGIC: [u8; 4] = *b"SPNQ";
/// Magic of a response.
pub const RESPONSE_MAGIC: [u8; 4] = *b"SPNR";
/// Record format version.
pub const VERSION: u8 = 1;
/// Bytes of a request or response header.
pub const HEADER_LEN: usize = 16;
/// Request flag: answer log-likelihoods instead of likelihoods.
pub const FLAG_LOG: u8 = 1;
/// Request flag: each vector has a missing-mask (after all the vectors).
pub const FLAG_MASK: u8 = 2;
/// Response flag: the record reports an error.
pub const FLAG_ERROR: u8 = 0x80;

/// Status of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Status {
    /// Evaluated; `count` values follow.
    Ok = 0,
    /// The version is not [`VERSION`].
    BadVersion = 1,
    /// Unknown flag bits are set.
    BadFlags = 2,
    /// `vector_len` is not the model's number of inputs.
    WrongVectorLength = 3,
    /// `count` is 0.
    NoVectors = 4,
    /// The answer to `count` vectors would not fit in one response.
    TooManyVectors = 5,
    /// The record's length does not match its header.
    BadLength = 6,
    /// The evaluator failed (should not happen).
    Internal = 7,
}

impl Status {
    /// The status with code `code`, if known.
    pub fn from_code(code: u16) -> Option<Status> {
        use Status::*;
        [Ok, BadVersion, BadFlags, WrongVectorLength, NoVectors, TooManyVectors, BadLength, Internal]
            .into_iter()
            .find(|s| *s as u16 == code)
    }

    /// A short description.
    pub fn describe(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::BadVersion => "unsupported record version",
            Status::BadFlags => "unknown flag bits",
            Status::WrongVectorLength => "vector length differs from the model's inputs",
            Status::NoVectors => "no vectors",
            Status::TooManyVectors => "too many vectors for one response",
            Status::BadLength => "record length does not match its header",
            Status::Internal => "internal evaluation error",
        }
    }
}

/// A parsed request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// Flags ([`FLAG_LOG`], [`FLAG_MASK`]).
    pub flags: u8,
    /// Number of vectors.
    pub count: u16,
    /// Bytes per vector.
    pub vector_len: u16,
    /// Request id, echoed in the response.
    pub id: u32,
}

/// Why a record is dropped without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// Shorter than a header.
    Short,
    /// Not our magic.
    BadMagic,
}

/// How a request is answered: evaluate it, or answer with an error status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Well-formed: evaluate.
    Evaluate(RequestHeader),
    /// Answer with this error (the header as far as it could be read).
    Reject(RequestHeader, Status),
}

impl RequestHeader {
    /// Bytes of one vector's missing-mask.
    pub fn mask_len(&self) -> usize {
        usize::from(self.vector_len).div_ceil(8)
    }

    /// Bytes after the header that the header announces.
    pub fn body_len(&self) -> usize {
        let per = usize::from(self.vector_len) + if self.flags & FLAG_MASK != 0 { self.mask_len() } else { 0 };
        usize::from(self.count) * per
    }

    /// Write the header into `out[..HEADER_LEN]` (needs that much room).
    pub fn emit(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&REQUEST_MAGIC);
        out[4] = VERSION;
        out[5] = self.flags;
        out[6..8].copy_from_slice(&self.count.to_le_bytes());
        out[8..10].copy_from_slice(&self.vector_len.to_le_bytes());
        out[10..12].copy_from_slice(&[0, 0]);
        out[12..16].copy_from_slice(&self.id.to_le_bytes());
    }
}

/// Judge a received request for a model with `vector_len` inputs, where responses may carry at
/// most `max_values` values. `padded` allows bytes after the body (raw Ethernet pads short
/// frames); otherwise the length must match exactly.
pub fn check_request(rec: &[u8], vector_len: usize, max_values: usize, padded: bool) -> Result<Verdict, Drop> {
    let v = check_header(rec, vector_len, max_values)?;
    let Verdict::Evaluate(h) = v else { return Ok(v) };
    let body = rec.len() - HEADER_LEN;
    if body < h.body_len() || (!padded && body != h.body_len()) {
        return Ok(Verdict::Reject(h, Status::BadLength));
    }
    Ok(Verdict::Evaluate(h))
}

/// Judge a request by its header alone (the first [`HEADER_LEN`] bytes of `rec`; the body is
/// not looked at): what a stream transport knows before the body has arrived.
pub fn check_header(rec: &[u8], vector_len: usize, max_values: usize) -> Result<Verdict, Drop> {
    if rec.len() < HEADER_LEN {
        return Err(Drop::Short);
    }
    if rec[..4] != REQUEST_MAGIC {
        return Err(Drop::BadMagic);
    }
    let u16_at = |i: usize| u16::from_le_bytes([rec[i], rec[i + 1]]);
    let h = RequestHeader {
        flags: rec[5],
        count: u16_at(6),
        vector_len: u16_at(8),
        id: u32::from_le_bytes([rec[12], rec[13], rec[14], rec[15]]),
    };
    let reject = |s| Ok(Verdict::Reject(h, s));
    if rec[4] != VERSION {
        return reject(Status::BadVersion);
    }
    if h.flags & !(FLAG_LOG | FLAG_MASK) != 0 {
        return reject(Status::BadFlags);
    }
    if usize::from(h.vector_len) != vector_len {
        return reject(Status::WrongVectorLength);
    }
    if h.count == 0 {
        return reject(Status::NoVectors);
    }
    if usize::from(h.count) > max_values {
        return reject(Status::TooManyVectors);
    }
    Ok(Verdict::Evaluate(h))
}

/// Bytes of the response record that starts `rec` (at least a header's worth), as its header
/// announces; `None` if `rec` does not start with a response header.
pub fn response_len(rec: &[u8]) -> Option<usize> {
    if rec.len() < HEADER_LEN || rec[..4] != RESPONSE_MAGIC {
        return None;
    }
    Some(HEADER_LEN + 8 * usize::from(u16::from_le_bytes([rec[6], rec[7]])))
}

/// Write a response header for request `h` with `status` into `out[..HEADER_LEN]`.
pub fn emit_response_header(h: &RequestHeader, status: Status, out: &mut [u8]) {
    let ok = status == Status::Ok;
    out[..4].copy_from_slice(&RESPONSE_MAGIC);
    out[4] = VERSION;
    out[5] = (h.flags & FLAG_LOG) | if ok { 0 } else { FLAG_ERROR };
    let count = if ok { h.count } else { 0 };
    out[6..8].copy_from_slice(&count.to_le_bytes());
    out[8..10].copy_from_slice(&(status as u16).to_le_bytes());
    out[10..12].copy_from_slice(&[0, 0]);
    out[12..16].copy_from_slice(&h.id.to_le_bytes());
}

/// Build a request for `vectors` (`vector_len` bytes each) with optional masks into `out`.
pub fn encode_request(
    id: u32,
    vector_len: usize,
    vectors: &[u8],
    masks: Option<&[u8]>,
    log: bool,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if vector_len == 0 || vector_len > usize::from(u16::MAX) || !vectors.len().is_multiple_of(vector_len) {
        return Err(format!("{} bytes is not a whole number of {vector_len}-byte vectors", vectors.len()));
    }
    let count = vectors.len() / vector_len;
    if count == 0 || count > usize::from(u16::MAX) {
        return Err(format!("{count} vectors (1..=65535 per request)"));
    }
    let flags = if log { FLAG_LOG } else { 0 } | if masks.is_some() { FLAG_MASK } else { 0 };
    let h = RequestHeader { flags, count: count as u16, vector_len: vector_len as u16, id };
    if let Some(m) = masks {
        if m.len() != count * h.mask_len() {
            return Err(format!("masks are {} bytes, expected {count} × {}", m.len(), h.mask_len()));
        }
    }
    out.clear();
    out.resize(HEADER_LEN, 0);
    h.emit(out);
    out.extend_from_slice(vectors);
    if let Some(m) = masks {
        out.extend_from_slice(m);
    }
    Ok(())
}

/// A decoded response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The request id it answers.
    pub id: u32,
    /// Ok, or the error.
    pub status: Result<(), u16>,
    /// True if the values are log-likelihoods.
    pub log: bool,
    /// One value per vector (empty for an error).
    pub count: u16,
}

/// Decode a response header; the values are [`response_value`]`(rec, i)` for `i < count`.
/// Trailing bytes (Ethernet padding) are allowed.
pub fn decode_response(rec: &[u8]) -> Result<Response, String> {
    if rec.len() < HEADER_LEN || rec[..4] != RESPONSE_MAGIC {
        return Err("not a response record".into());
    }
    if rec[4] != VERSION {
        return Err(format!("response version {}", rec[4]));
    }
    let count = u16::from_le_bytes([rec[6], rec[7]]);
    let status = u16::from_le_bytes([rec[8], rec[9]]);
    let id = u32::from_le_bytes([rec[12], rec[13], rec[14], rec[15]]);
    if rec.len() < HEADER_LEN + usize::from(count) * 8 {
        return Err(format!("response announces {count} values but has {} bytes", rec.len()));
    }
    Ok(Response { id, status: if status == 0 { Ok(()) } else { Err(status) }, log: rec[5] & FLAG_LOG != 0, count })
}

/// Value `i` of a response already checked by [`decode_response`].
pub fn response_value(rec: &[u8], i: usize) -> f64 {
    let at = HEADER_LEN + 8 * i;
    rec.get(at..at + 8).and_then(|b| b.try_into().ok()).map_or(f64::NAN, f64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip_and_verdicts() {
        let mut rec = Vec::new();
        encode_request(7, 3, &[1, 2, 3, 4, 5, 6], Some(&[0, 4]), true, &mut rec).unwrap();
        assert_eq!(rec.len(), 16 + 6 + 2);
        let Ok(Verdict::Evaluate(h)) = check_request(&rec, 3, 100, false) else { panic!() };
        assert_eq!((h.id, h.count, h.vector_len, h.flags), (7, 2, 3, FLAG_LOG | FLAG_MASK));
        assert_eq!(check_request(&rec[..10], 3, 100, false), Err(Drop::Short));
        let reject = |r: &[u8], vl, max, padded| match check_request(r, vl, max, padded) {
            Ok(Verdict::Reject(_, s)) => Some(s),
            _ => None,
        };
        assert_eq!(reject(&rec, 4, 100, false), Some(Status::WrongVectorLength));
        assert_eq!(reject(&rec, 3, 1, false), Some(Status::TooManyVectors));
        assert_eq!(reject(&rec[..20], 3, 100, false), Some(Status::BadLength));
        let mut padded = rec.clone();
        padded.extend_from_slice(&[0; 10]);
        assert_eq!(reject(&padded, 3, 100, false), Some(Status::BadLength));
        assert!(matches!(check_request(&padded, 3, 100, true), Ok(Verdict::Evaluate(_))));
        let mut bad = rec.clone();
        bad[0] = b'X';
        assert_eq!(check_request(&bad, 3, 100, false), Err(Drop::BadMagic));
        bad = rec.clone();
        bad[4] = 9;
        assert_eq!(reject(&bad, 3, 100, false), Some(Status::BadVersion));
        bad = rec.clone();
        bad[5] = 0x10;
        assert_eq!(reject(&bad, 3, 100, false), Some(Status::BadFlags));
        bad = rec.clone();
        bad[6] = 0;
        bad[7] = 0;
        assert_eq!(reject(&bad, 3, 100, false), Some(Status::NoVectors));
    }

    #[test]
    fn response_header() {
        let h = RequestHeader { flags: FLAG_LOG, count: 2, vector_len: 3, id: 9 };
        let mut rec = vec![0u8; 32];
        emit_response_header(&h, Status::Ok, &mut rec);
        rec[16..24].copy_from_slice(&(-1.5f64).to_le_bytes());
        let r = decode_response(&rec).unwrap();
        assert_eq!((r.id, r.status, r.log, r.count), (9, Ok(()), true, 2));
        assert_eq!(response_value(&rec, 0), -1.5);
        emit_response_header(&h, Status::BadLength, &mut rec);
        let r = decode_response(&rec[..16]).unwrap();
        assert_eq!((r.status, r.count), (Err(6), 0));
        assert_eq!(Status::from_code(6), Some(Status::BadLength));
    }
}
