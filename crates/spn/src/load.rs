//! Loading models from files: the linerate JSON format or SPFlow's text export, told apart by
//! the first character (`{` starts JSON).

use crate::{from_json_str, from_spflow_text, to_json_string, Spn, SpnError};
use std::path::Path;

/// Largest model file read (1 GiB).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Load and validate a model from a JSON file or an SPFlow text export.
pub fn load(path: impl AsRef<Path>) -> Result<Spn, SpnError> {
    let path = path.as_ref();
    let io = |source| SpnError::Io { path: path.display().to_string(), source };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > MAX_FILE_BYTES {
        return Err(SpnError::model(format!(
            "{} is {size} bytes, more than the {MAX_FILE_BYTES} read",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    parse(&text).map_err(|e| SpnError::InFile { path: path.display().to_string(), source: Box::new(e) })
}

/// Parse a model from text: JSON if it starts with `{`, SPFlow's text export otherwise. A
/// UTF-8 byte-order mark (as some Windows editors write) is skipped.
pub fn parse(text: &str) -> Result<Spn, SpnError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with('{') {
        from_json_str(text)
    } else {
        from_spflow_text(text)
    }
}

/// Write a model in the JSON format.
pub fn save_json(spn: &Spn, path: impl AsRef<Path>) -> Result<(), SpnError> {
    let path = path.as_ref();
    std::fs::write(path, to_json_string(spn))
        .map_err(|source| SpnError::Io { path: path.display().to_string(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_formats_apart_and_reports_missing_files() {
        assert_eq!(parse("Bernoulli(V0|p=0.5)").unwrap().num_vars(), 1);
        let e = parse("{").unwrap_err().to_string();
        assert!(e.starts_with("model JSON"), "{e}");
        let e = load("/nonexistent/model.json").unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/model.json: "), "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_errors_in_a_file_name_it() {
        let json = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/nips10.json")).unwrap();
        let plain = parse(&json);
        let dir = std::env::temp_dir().join(format!("spn-bom-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let with_bom = dir.join("bom.json");
        std::fs::write(&with_bom, format!("\u{feff}{json}")).unwrap();
        match (plain, load(&with_bom)) {
            (Ok(a), Ok(b)) => assert_eq!(a.num_vars(), b.num_vars()),
            (a, b) => panic!("plain {a:?}, with a BOM {b:?}"),
        }
        let broken = dir.join("broken.json");
        std::fs::write(&broken, "\u{feff}{\"nodes\": [").unwrap();
        let e = load(&broken).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: model JSON", broken.display())), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
