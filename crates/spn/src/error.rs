//! Errors of the `spn` crate: every one names what is wrong and where.

/// What can go wrong when loading, validating, compiling or evaluating an SPN.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpnError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// What was wrong with a model file, named.
    #[error("{path}: {source}")]
    InFile {
        /// The file.
        path: String,
        /// What was wrong in it.
        source: Box<SpnError>,
    },
    /// The model file is not well-formed JSON of the documented format.
    #[error("model JSON, line {line} column {column}: {msg}")]
    Json {
        /// 1-based line of the problem (0 if unknown).
        line: usize,
        /// 1-based column of the problem (0 if unknown).
        column: usize,
        /// What the parser expected or found.
        msg: String,
    },
    /// The SPFlow text export could not be parsed.
    #[error("SPFlow text, line {line} column {column}: {msg}")]
    Text {
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What the parser expected or found.
        msg: String,
    },
    /// The model parses but is not a valid SPN; `node` is the index of the offending node.
    #[error("node {node}: {msg}")]
    InvalidNode {
        /// Index of the node in the node list.
        node: usize,
        /// What is wrong with it.
        msg: String,
    },
    /// The model as a whole is not valid (no nodes, bad root, variables missing, ...).
    #[error("invalid model: {0}")]
    InvalidModel(String),
    /// An evaluation input has the wrong shape or size.
    #[error("bad input: {0}")]
    BadInput(String),
    /// A generator or compiler setting is out of range.
    #[error("bad setting: {0}")]
    BadSetting(String),
}

impl SpnError {
    /// A node error.
    pub(crate) fn node(node: usize, msg: impl Into<String>) -> SpnError {
        SpnError::InvalidNode { node, msg: msg.into() }
    }

    /// A model-wide error.
    pub(crate) fn model(msg: impl Into<String>) -> SpnError {
        SpnError::InvalidModel(msg.into())
    }
}
