//! Input vectors from a NumPy `.npy` file (format versions 1 to 3): a C-order array of one or
//! two dimensions (one vector, or one vector per row) of uint8, int32, int64, float32 or
//! float64, little-endian; NaN marks a missing value.

/// The values of `bytes` (a whole .npy file) as f64, and the number of values per vector.
pub(crate) fn parse(bytes: &[u8], what: &str) -> Result<(Vec<f64>, usize), String> {
    let bad = |why: &str| format!("{what}: {why}");
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (no \\x93NUMPY magic)"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(bad(&format!(".npy format version {v} is not supported"))),
    };
    let header = bytes.get(start..start + header_len).ok_or_else(|| bad("the header is cut short"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("the header is not text"))?;
    let descr = field(header, "descr").ok_or_else(|| bad("the header has no 'descr'"))?;
    let descr = quoted(descr).ok_or_else(|| bad("the header's 'descr' is not a quoted string"))?;
    if field(header, "fortran_order").is_some_and(|f| f.starts_with("True")) {
        return Err(bad("Fortran-order arrays are not supported (save with np.ascontiguousarray)"));
    }
    let shape = field(header, "shape").ok_or_else(|| bad("the header has no 'shape'"))?;
    let dims: Vec<usize> = shape
        .trim_start_matches('(')
        .split(')')
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad(&format!("shape {shape:?} is not a list of sizes"))))
        .collect::<Result<_, _>>()?;
    let (rows, vars) = match dims[..] {
        [v] => (1, v),
        [r, v] => (r, v),
        _ => return Err(bad(&format!("a {}-dimensional array (one or two dimensions expected)", dims.len()))),
    };
    let (size, read): (usize, fn(&[u8]) -> f64) = match descr {
        "|u1" | "<u1" | "u1" => (1, |b| f64::from(b[0])),
        "<i4" => (4, |b| f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        "<i8" => (8, |b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f64),
        "<f4" => (4, |b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        "<f8" => (8, |b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
        d => return Err(bad(&format!("element type {d:?} is not supported (uint8, int32, int64, float32, float64)"))),
    };
    let data = &bytes[start + header_len..];
    let count = rows.checked_mul(vars).ok_or_else(|| bad("the shape is too large"))?;
    if vars == 0 || data.len() != count * size {
        return Err(bad(&format!("{} data bytes for a {rows} x {vars} array of {descr}", data.len())));
    }
    Ok((data.chunks_exact(size).map(read).collect(), vars))
}

/// The quoted string that `text` starts with, without its quotes.
fn quoted(text: &str) -> Option<&str> {
    let q = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    text[1..].split(q).next()
}

/// The text after `'key':` in a .npy header dictionary.
fn field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'"))?;
    Some(header[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(h.len() as u16).to_le_bytes());
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn reads_uint8_and_float64_arrays() {
        let (v, n) = parse(&npy("|u1", "(2, 3)", &[1, 2, 3, 4, 5, 6]), "t").unwrap();
        assert_eq!((v, n), (vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3));
        let f: Vec<u8> = [7.0f64, f64::NAN].iter().flat_map(|x| x.to_le_bytes()).collect();
        let (v, n) = parse(&npy("<f8", "(2,)", &f), "t").unwrap();
        assert_eq!((v[0], v[1].is_nan(), n), (7.0, true, 2));
        assert!(parse(&npy("|u1", "(2, 3)", &[1, 2]), "t").unwrap_err().contains("2 data bytes for a 2 x 3"));
        assert!(parse(&npy(">f8", "(1,)", &[0; 8]), "t").unwrap_err().contains("not supported"));
        assert!(parse(b"a,b,c\n1,2,3\n", "t").unwrap_err().contains("not a .npy file"));
    }
}
