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
    pub reason: Reason,
}

/// Why a rule, an option or a variable did not parse: the kind of problem, with what it is
/// about. Its text (`Display`) is the sentence `linerate ids check` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Variables that refer to each other too deeply (a cycle).
    VariableCycle,
    /// A `$NAME` used but not defined: its kind (`address`, `port`) and name.
    UndefinedVariable {
        /// `address` or `port`.
        kind: &'static str,
        /// The name, without `$`.
        name: String,
    },
    /// `what` (an option or argument) given without the value it needs.
    NeedsValue {
        /// The option or argument.
        what: String,
    },
    /// A word an option family does not know.
    Unknown {
        /// The option family (`content`, `flow`, `byte_test`, ...).
        family: &'static str,
        /// The kind of word (`argument`, `modifier`, `operator`, `flag`, ...).
        what: &'static str,
        /// The word (shortened if long).
        word: String,
    },
    /// An option given fewer positional arguments than it needs.
    TooFewArguments {
        /// The option family.
        family: &'static str,
        /// The arguments it needs, in order.
        needs: &'static str,
    },
    /// A problem inside one part of the rule: the part (`source address`, `$HTTP_PORTS`, a
    /// variable's name, an option) and the problem.
    In {
        /// The part.
        part: String,
        /// The problem in it.
        inner: Box<Reason>,
    },
    /// Anything else malformed: the option family it is in (None: the rule's frame, an
    /// address, a port, a value) and what is wrong.
    Malformed {
        /// The option family, if in one.
        family: Option<&'static str>,
        /// What is wrong, in one sentence.
        detail: String,
    },
}

impl Reason {
    /// Something malformed outside any option family.
    pub fn bad(detail: impl Into<String>) -> Reason {
        Reason::Malformed { family: None, detail: detail.into() }
    }

    /// Something malformed in option family `family`.
    pub fn bad_in(family: &'static str, detail: impl Into<String>) -> Reason {
        Reason::Malformed { family: Some(family), detail: detail.into() }
    }

    /// This problem, inside `part`.
    pub fn within(self, part: impl Into<String>) -> Reason {
        Reason::In { part: part.into(), inner: Box::new(self) }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::VariableCycle => write!(f, "variables nest too deep (a cycle?)"),
            Reason::UndefinedVariable { kind, name } => write!(f, "undefined {kind} variable '${name}'"),
            Reason::NeedsValue { what } => write!(f, "{what} needs a value"),
            Reason::Unknown { family, what, word } => write!(f, "{family}: unknown {what} '{word}'"),
            Reason::TooFewArguments { family, needs } => write!(f, "{family} needs at least: {needs}"),
            Reason::In { part, inner } => write!(f, "{part}: {inner}"),
            Reason::Malformed { family: Some(family), detail } => write!(f, "{family}: {detail}"),
            Reason::Malformed { family: None, detail } => f.write_str(detail),
        }
    }
}

impl RuleError {
    /// An error at `line` in `option` (None: not in one option), with no file yet.
    pub fn new(line: usize, option: Option<String>, reason: Reason) -> Self {
        RuleError { file: None, line, option, reason }
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
        AccelError::parse(e.file.unwrap_or_default(), e.line, e.reason.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_reads_as_the_sentence_ids_check_prints() {
        let cases = [
            (Reason::VariableCycle, "variables nest too deep (a cycle?)"),
            (Reason::UndefinedVariable { kind: "port", name: "X".into() }, "undefined port variable '$X'"),
            (Reason::NeedsValue { what: "dsize".into() }, "dsize needs a value"),
            (Reason::Unknown { family: "flow", what: "argument", word: "up".into() }, "flow: unknown argument 'up'"),
            (
                Reason::TooFewArguments { family: "byte_jump", needs: "bytes, offset" },
                "byte_jump needs at least: bytes, offset",
            ),
            (Reason::bad("empty port").within("source port"), "source port: empty port"),
            (Reason::bad_in("pcre", "empty expression"), "pcre: empty expression"),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
        let e = RuleError::new(3, Some("flow".into()), Reason::bad("x")).in_file("a.rules");
        assert_eq!(e.to_string(), "a.rules:3: option 'flow': x");
        assert!(matches!(AccelError::from(e), AccelError::Parse { line: 3, .. }));
    }
}
