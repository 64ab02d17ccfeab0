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
    parse(&text)
}

/// Parse a model from text: JSON if it starts with `{`, SPFlow's text export otherwise.
pub fn parse(text: &str) -> Result<Spn, SpnError> {
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
}
