//! The error type shared by every accelerator kernel.

/// Errors from loading or building an accelerator's tables.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccelError {
    /// A syntax or semantic error in an input file, naming the file, the 1-based line and the problem.
    #[error("{file}:{line}: {problem}")]
    Parse {
        /// The file (or source name) the text came from.
        file: String,
        /// The 1-based line number where the problem starts.
        line: usize,
        /// What is wrong, in one sentence.
        problem: String,
    },
    /// Arrays whose lengths do not fit the declared shape (a kernel's input contract).
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// Reading an input file failed.
    #[error("{path}: {source}")]
    Io {
        /// The path that could not be read.
        path: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl AccelError {
    /// Builds a [`AccelError::Parse`].
    pub fn parse(file: impl Into<String>, line: usize, problem: impl Into<String>) -> Self {
        AccelError::Parse { file: file.into(), line, problem: problem.into() }
    }

    /// Reads a whole file to a string (invalid UTF-8 replaced by U+FFFD), mapping failures to [`AccelError::Io`].
    pub fn read_to_string(path: &std::path::Path) -> Result<String, AccelError> {
        let bytes =
            std::fs::read(path).map_err(|source| AccelError::Io { path: path.display().to_string(), source })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
