//! The single error type returned by every parser and emitter in this crate.

/// Why a buffer could not be parsed or a header could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The buffer is shorter than the header or the length it announces.
    #[error("buffer too short")]
    Truncated,
    /// The IP version field is not 4.
    #[error("bad IP version")]
    BadVersion,
    /// A header-length field (IHL, TCP data offset) is too small or overruns the buffer.
    #[error("bad header length")]
    BadHeaderLen,
    /// The IPv4 total-length field is inconsistent with the header or the buffer.
    #[error("bad total length")]
    BadTotalLen,
    /// A checksum did not verify.
    #[error("bad checksum")]
    BadChecksum,
    /// A TCP option is malformed (bad length, overruns the header).
    #[error("malformed option")]
    BadOption,
    /// A well-formed header describes something this crate does not handle.
    #[error("unsupported")]
    Unsupported,
    /// A length field (UDP length, ...) is inconsistent with the buffer.
    #[error("bad length")]
    BadLength,
}

impl WireError {
    /// A short snake_case name for this error, suitable as a drop-counter key.
    pub fn reason(&self) -> &'static str {
        match self {
            WireError::Truncated => "truncated",
            WireError::BadVersion => "bad_version",
            WireError::BadHeaderLen => "bad_header_len",
            WireError::BadTotalLen => "bad_total_len",
            WireError::BadChecksum => "bad_checksum",
            WireError::BadOption => "bad_option",
            WireError::Unsupported => "unsupported",
            WireError::BadLength => "bad_length",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_distinct_snake_case() {
        let all = [
            WireError::Truncated,
            WireError::BadVersion,
            WireError::BadHeaderLen,
            WireError::BadTotalLen,
            WireError::BadChecksum,
            WireError::BadOption,
            WireError::Unsupported,
            WireError::BadLength,
        ];
        let mut names: Vec<&str> = all.iter().map(|e| e.reason()).collect();
        for n in &names {
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert_eq!(WireError::BadVersion.reason(), "bad_version");
    }
}
