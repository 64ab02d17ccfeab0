//! Loading a numeric matrix (samples x features) as `f32` from a `.npy` file (numpy's
//! format, read by `npyz`: 2-D, C order, little-endian uint8/int32/int64/float32/float64) or a CSV file (one sample
//! per line, comma-separated; a first line that is not numeric is taken as a header).

use crate::AccelError;
use std::path::Path;

/// A row-major matrix of `f32`.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// `rows * cols` values, row after row.
    pub data: Vec<f32>,
    /// Number of rows (samples).
    pub rows: usize,
    /// Number of columns (features).
    pub cols: usize,
}

/// Loads `path` by its extension: `.npy`, otherwise CSV.
pub fn load(path: &Path) -> Result<Matrix, AccelError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| AccelError::Io { path: name.clone(), source })?;
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy")) {
        parse_npy(&name, &bytes)
    } else {
        parse_csv(&name, &String::from_utf8_lossy(&bytes))
    }
}

/// The values (as `f64`) and the shape of a `.npy` file's array: the workspace's one reader
/// of numpy's format (the `npyz` crate). C order, little-endian uint8, int32, int64, float32
/// or float64; anything else is refused with one sentence.
pub fn read_npy(name: &str, b: &[u8]) -> Result<(Vec<f64>, Vec<usize>), AccelError> {
    let bad = |m: String| AccelError::parse(name, 1, m);
    if !b.starts_with(b"\x93NUMPY") {
        return Err(bad("not a .npy file (no \\x93NUMPY magic)".into()));
    }
    let f = npyz::NpyFile::new(b).map_err(|e| bad(format!("a bad .npy header ({e})")))?;
    if f.order() == npyz::Order::Fortran {
        return Err(bad("Fortran-order arrays are not supported (save with np.ascontiguousarray)".into()));
    }
    let shape = f
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(format!("the shape {:?} is too large", f.shape()))))
        .collect::<Result<Vec<usize>, _>>()?;
    let npyz::DType::Plain(ts) = f.dtype() else {
        return Err(bad("structured arrays are not supported".into()));
    };
    let widen = |r: std::io::Result<Vec<f64>>| r.map_err(|e| bad(format!("the data does not match the header ({e})")));
    let values = match ts.to_string().as_str() {
        "|u1" | "<u1" => widen(f.into_vec::<u8>().map(|v| v.into_iter().map(f64::from).collect()))?,
        "<i4" => widen(f.into_vec::<i32>().map(|v| v.into_iter().map(f64::from).collect()))?,
        "<i8" => widen(f.into_vec::<i64>().map(|v| v.into_iter().map(|x| x as f64).collect()))?,
        "<f4" => widen(f.into_vec::<f32>().map(|v| v.into_iter().map(f64::from).collect()))?,
        "<f8" => widen(f.into_vec::<f64>())?,
        d => {
            return Err(bad(format!(
                "element type {d:?} is not supported (little-endian uint8, int32, int64, float32 or float64)"
            )))
        }
    };
    Ok((values, shape))
}

/// Writes `m` to `path` as a 2-D little-endian float32 `.npy` file (C order, shape
/// `(rows, cols)`), with `npyz`: the workspace's one writer, the counterpart of [`read_npy`].
pub fn write_npy(path: &Path, m: &Matrix) -> Result<(), AccelError> {
    use npyz::WriterBuilder;
    let name = path.display().to_string();
    if m.data.len() != m.rows * m.cols {
        return Err(AccelError::parse(
            &name,
            1,
            format!("{} values do not make {} x {}", m.data.len(), m.rows, m.cols),
        ));
    }
    let io = |source| AccelError::Io { path: name.clone(), source };
    let file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    let mut w = npyz::WriteOptions::<f32>::new()
        .default_dtype()
        .shape(&[m.rows as u64, m.cols as u64])
        .writer(file)
        .begin_nd()
        .map_err(io)?;
    w.extend(m.data.iter().copied()).map_err(io)?;
    w.finish().map_err(io)
}

/// Parses the bytes of a `.npy` file as a matrix: a 2-D array, or a 1-D one as one column.
pub fn parse_npy(name: &str, b: &[u8]) -> Result<Matrix, AccelError> {
    let (values, dims) = read_npy(name, b)?;
    let (rows, cols) = match dims[..] {
        [r, c] => (r, c),
        [r] => (r, 1),
        _ => return Err(AccelError::parse(name, 1, format!("expected a 2-D array, the shape is {dims:?}"))),
    };
    Ok(Matrix { data: values.into_iter().map(|v| v as f32).collect(), rows, cols })
}

/// Parses CSV text (with the `csv` crate): comma-separated numbers, one sample per line;
/// blank lines and `#` comments are skipped, a first line that is not numeric is a header.
pub fn parse_csv(name: &str, text: &str) -> Result<Matrix, AccelError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut data = Vec::new();
    let (mut rows, mut cols) = (0usize, None);
    for record in reader.records() {
        let record = record
            .map_err(|e| AccelError::parse(name, e.position().map_or(1, |p| p.line() as usize), e.to_string()))?;
        let line = record.position().map_or(1, |p| p.line() as usize);
        if record.iter().all(str::is_empty) {
            continue;
        }
        let vals: Result<Vec<f32>, _> = record.iter().map(str::parse::<f32>).collect();
        let vals = match vals {
            Ok(v) => v,
            Err(_) if rows == 0 && cols.is_none() => {
                cols = Some(record.len());
                continue; // a header
            }
            Err(_) => return Err(AccelError::parse(name, line, "a field is not a number")),
        };
        match cols {
            Some(c) if c != vals.len() => {
                return Err(AccelError::parse(name, line, format!("{} fields where {c} were expected", vals.len())))
            }
            _ => cols = Some(vals.len()),
        }
        data.extend(vals);
        rows += 1;
    }
    if rows == 0 {
        return Err(AccelError::parse(name, 1, "no data rows"));
    }
    Ok(Matrix { data, rows, cols: cols.unwrap_or(0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend_from_slice(&(h.len() as u16).to_le_bytes());
        v.extend_from_slice(h.as_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn npy_float32_float64_and_int() {
        let body: Vec<u8> = [1.5f32, 2.0, -3.0, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let m = parse_npy("a.npy", &npy("<f4", "(2, 3)", &body)).unwrap();
        assert_eq!((m.rows, m.cols, m.data), (2, 3, vec![1.5, 2.0, -3.0, 4.0, 5.0, 6.0]));
        let body: Vec<u8> = [1.0f64, 2.5].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(parse_npy("b.npy", &npy("<f8", "(2,)", &body)).unwrap().data, vec![1.0, 2.5]);
        let body: Vec<u8> = [7i64, -2].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(parse_npy("c.npy", &npy("<i8", "(1, 2)", &body)).unwrap().data, vec![7.0, -2.0]);
    }

    #[test]
    fn written_npy_reads_back_the_same() {
        let path = std::env::temp_dir().join(format!("accel-matrix-{}.npy", std::process::id()));
        let m = Matrix { data: vec![1.5, -2.25, 3.0, f32::MAX, 0.0, 1e-7], rows: 3, cols: 2 };
        write_npy(&path, &m).unwrap();
        let back = load(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(back.unwrap(), m);
        let bad = Matrix { data: vec![1.0; 5], rows: 3, cols: 2 };
        assert!(write_npy(&path, &bad).is_err());
    }

    #[test]
    fn npy_errors_are_reported() {
        assert!(parse_npy("x", b"hello").is_err());
        assert!(parse_npy("x", &npy("<f4", "(2, 3)", &[0; 8])).is_err(), "truncated data");
        assert!(parse_npy("x", &npy(">f4", "(1, 1)", &[0; 4])).is_err(), "big-endian");
        assert!(parse_npy("x", &npy("<f4", "(1, 1, 1)", &[0; 4])).is_err(), "3-D");
        let mut bad = npy("<f4", "(1, 1)", &[0; 4]);
        bad[8] = 0xff; // header length beyond the file
        assert!(parse_npy("x", &bad).is_err());
    }

    #[test]
    fn csv_with_and_without_header() {
        let m = parse_csv("a.csv", "x,y\n1,2\n3, 4.5\n\n").unwrap();
        assert_eq!((m.rows, m.cols, m.data), (2, 2, vec![1.0, 2.0, 3.0, 4.5]));
        assert_eq!(parse_csv("b.csv", "1\n2\n").unwrap().rows, 2);
        let e = parse_csv("c.csv", "1,2\n3\n").unwrap_err().to_string();
        assert!(e.contains("c.csv:2"), "{e}");
        assert!(parse_csv("d.csv", "1,2\nx,y\n").is_err());
        assert!(parse_csv("e.csv", "a,b\n").is_err());
        let m = parse_csv("f.csv", "# a comment\n\"x\",\"y\"\n1,2\n").unwrap();
        assert_eq!((m.rows, m.cols), (1, 2), "comments skipped, a quoted header");
    }
}
