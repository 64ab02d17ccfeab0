//! [`RuleError`]: why one rule (or variable line) did not parse, and where.

use std::fmt;

use crate::AccelError;

/// A rule that did not parse: the file, the 1-based line, the option that failed (None for the
/// header or the option list's syntax) and the reason in one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The file (or source name) the rule came from; None for a rule parsed from bare text.
    pub file: Option<String>,
    /// The 1-based line where the rule starts.
    pub line: usize,
    /// The option that failed (`content`, `byte_test`, ...), or None if the header or the
    /// option list itself is malformed.
    pub option: Option<String>,
    /// What is wrong.
    pub reason: String,
}

impl RuleError {
    /// An error at `line` in `option` (None: not in one option), with no file yet.
    pub fn new(line: usize, option: Option<String>, reason: impl Into<String>) -> Self {
        RuleError { file: None, line, option, reason: reason.into() }
    }

    /// The same error, naming the file it came from.
    pub fn in_file(mut self, file: &str) -> Self {
        self.file = Some(file.to_string());
        self
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_deref().unwrap_or("rule text");
        match &self.option {
            Some(o) => write!(f, "{file}:{}: option '{o}': {}", self.line, self.reason),
            None => write!(f, "{file}:{}: {}", self.line, self.reason),
        }
    }
}

impl std::error::Error for RuleError {}

impl From<RuleError> for AccelError {
    /// The loader's error; its problem text is the reason (which names its option's family).
    fn from(e: RuleError) -> Self {
        AccelError::parse(e.file.unwrap_or_default(), e.line, e.reason)
    }
}
