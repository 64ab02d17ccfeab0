//! The SPN service's request and response records (`apps::spn_service::record`): judging a
//! request never panics and agrees with its header (short and foreign records are dropped, a
//! well-formed one re-encodes to the same bytes), the header-only verdict of a stream agrees
//! with the full one, and response headers round-trip through `decode_response`.
//!
//! Input: 1 byte of vector length, 1 byte of the largest vector count, 1 flag byte (padding,
//! response status), then the record.
#![no_main]

use apps::spn_service::record::{
    check_header, check_request, decode_response, emit_response_header, encode_request, response_len, response_value,
    Drop, Status, Verdict, FLAG_LOG, FLAG_MASK, HEADER_LEN, REQUEST_MAGIC,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let vector_len = usize::from(data[0]) + 1;
    let max_values = usize::from(data[1]);
    let padded = data[2] & 1 != 0;
    let rec = &data[3..];
    let verdict = check_request(rec, vector_len, max_values, padded);
    let header = check_header(rec, vector_len, max_values);
    match verdict {
        Err(Drop::Short) => assert!(rec.len() < HEADER_LEN),
        Err(Drop::BadMagic) => assert!(rec.len() >= HEADER_LEN && rec[..4] != REQUEST_MAGIC),
        Ok(Verdict::Evaluate(h)) => {
            assert_eq!(header, Ok(Verdict::Evaluate(h)));
            assert_eq!(usize::from(h.vector_len), vector_len);
            assert!(h.count >= 1 && usize::from(h.count) <= max_values);
            assert_eq!(h.flags & !(FLAG_LOG | FLAG_MASK), 0);
            let body = rec.len() - HEADER_LEN;
            assert!(if padded { body >= h.body_len() } else { body == h.body_len() });
            // Re-encoding the vectors and masks gives the same record (reserved bytes are zero).
            let nv = usize::from(h.count) * vector_len;
            let vectors = &rec[HEADER_LEN..HEADER_LEN + nv];
            let masks = (h.flags & FLAG_MASK != 0).then(|| &rec[HEADER_LEN + nv..HEADER_LEN + h.body_len()]);
            let mut out = Vec::new();
            encode_request(h.id, vector_len, vectors, masks, h.flags & FLAG_LOG != 0, &mut out)
                .expect("a valid request re-encodes");
            let mut expect = rec[..HEADER_LEN + h.body_len()].to_vec();
            expect[10] = 0;
            expect[11] = 0;
            assert_eq!(out, expect);
            respond(h, Status::Ok, data[2]);
        }
        Ok(Verdict::Reject(h, status)) => {
            assert_ne!(status, Status::Ok);
            match header {
                Ok(Verdict::Evaluate(hh)) => assert_eq!((hh, status), (h, Status::BadLength)),
                Ok(Verdict::Reject(hh, s)) => assert_eq!((hh, s), (h, status)),
                Err(e) => panic!("full verdict rejects but header verdict drops: {e:?}"),
            }
            respond(h, status, data[2]);
        }
    }
    // Any bytes as a response: decoding never panics and agrees with `response_len`.
    if let Ok(r) = decode_response(rec) {
        let n = response_len(rec).expect("a decoded response has a length");
        assert_eq!(n, HEADER_LEN + 8 * usize::from(r.count));
        assert!(n <= rec.len());
        for i in 0..usize::from(r.count) {
            let v = response_value(rec, i);
            assert_eq!(v.to_bits(), f64::from_le_bytes(rec[16 + 8 * i..24 + 8 * i].try_into().unwrap()).to_bits());
        }
    }
});

/// A response header for `h` decodes to what it says.
fn respond(h: apps::spn_service::record::RequestHeader, status: Status, pick: u8) {
    let status = if pick & 2 != 0 { Status::Internal } else { status };
    let ok = status == Status::Ok;
    let count = if ok { usize::from(h.count) } else { 0 };
    let mut out = vec![0u8; HEADER_LEN + 8 * count];
    emit_response_header(&h, status, &mut out);
    let r = decode_response(&out).expect("our own response decodes");
    assert_eq!(r.id, h.id);
    assert_eq!(r.log, h.flags & FLAG_LOG != 0);
    assert_eq!(usize::from(r.count), count);
    assert_eq!(r.status, if ok { Ok(()) } else { Err(status as u16) });
    assert_eq!(Status::from_code(status as u16), Some(status));
    assert_eq!(response_len(&out), Some(out.len()));
}
