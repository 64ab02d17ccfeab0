//! Input vectors from a NumPy `.npy` file (format versions 1 to 3): a C-order array of one or
//! two dimensions (one vector, or one vector per row) of uint8, int32, int64, float32 or
//! float64, little-endian; NaN marks a missing value.

/// The values of `bytes` (a whole .npy file) as f64, and the number of values per vector
/// (read by the workspace's one `.npy` reader, [`accel::matrix::read_npy`]).
pub(crate) fn parse(bytes: &[u8], what: &str) -> Result<(Vec<f64>, usize), String> {
    let (values, dims) = accel::matrix::read_npy(what, bytes).map_err(|e| e.to_string())?;
    let vars = match dims[..] {
        [v] | [_, v] => v,
        _ => return Err(format!("{what}: a {}-dimensional array (one or two dimensions expected)", dims.len())),
    };
    if vars == 0 || values.is_empty() {
        return Err(format!("{what}: an empty array"));
    }
    Ok((values, vars))
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
        assert!(parse(&npy("|u1", "(2, 3)", &[1, 2]), "t").unwrap_err().contains("does not match the header"));
        assert!(parse(&npy(">f8", "(1,)", &[0; 8]), "t").unwrap_err().contains("not supported"));
        assert!(parse(b"a,b,c\n1,2,3\n", "t").unwrap_err().contains("not a .npy file"));
    }
}
