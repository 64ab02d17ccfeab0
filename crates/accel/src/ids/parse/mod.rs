//! Snort 3 rule text parser.
//!
//! A rules file holds one rule per logical line (a line ending in `\` continues on the next),
//! `#` comment lines and blank lines, and optionally `ipvar`/`portvar`/`var NAME value` lines
//! that set variables for the rules below them. A rule is
//! `action proto src_addr src_port -> dst_addr dst_port ( option; option:value; ... )`
//! (`<>` for both directions), or the Snort 3 service form `action service ( ... )`.
//!
//! Parsing never panics: every problem becomes a [`RuleError`] naming the file, the line, the
//! option and the reason. The code is split by family: `header` (action, protocol, addresses),
//! `options` (the option list and its driver), `content`, `pcre`, `bytes` (byte_*),
//! `header_opts` (ip_proto, flags, fragbits), `flow` (flow, flowbits), `addr` and `values`.
//! Options the engine cannot evaluate are not errors: they are listed in [`Rule::unsupported`].

use super::rule::*;
use super::vars::Vars;
use crate::prefix::Prefix;
use crate::AccelError;

mod addr;
mod bytes;
mod content;
mod error;
mod flow;
mod header;
mod header_opts;
mod options;
mod pcre;
mod values;

pub use addr::{parse_addr, parse_ports};
use bytes::*;
pub use content::decode_content;
use content::*;
pub use error::{Reason, RuleError};
use flow::*;
use header::*;
use header_opts::*;
pub use options::UNKNOWN_OPTION;
use options::*;
pub use pcre::parse_pcre;
pub use values::parse_range;
use values::*;

/// Deepest nesting of variables inside variables before we call it a cycle.
pub(super) const MAX_VAR_DEPTH: usize = 16;
/// Most `byte_extract` variables one rule may define.
pub(super) const MAX_RULE_VARS: usize = 8;

/// The result of parsing a rules text leniently: the rules that parsed, and one error per rule
/// that did not.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Rules that parsed (possibly with unsupported options), in file order.
    pub rules: Vec<Rule>,
    /// One `AccelError::Parse` per rule that failed to parse.
    pub errors: Vec<AccelError>,
}

/// Parses a rules text. `source` names it in errors. With `strict`, the first syntax error is
/// returned as `Err`; otherwise errors are collected and the other rules still load.
pub fn parse_rules(text: &str, source: &str, vars: &Vars, strict: bool) -> Result<Parsed, AccelError> {
    let mut out = Parsed::default();
    let mut vars = vars.clone();
    for (line, logical) in logical_lines(text) {
        let t = logical.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let res = if let Some(rest) = strip_keyword(t, &["ipvar", "var"]) {
            set_var(rest, &mut vars, true).map_err(|reason| RuleError::new(line, None, reason))
        } else if let Some(rest) = strip_keyword(t, &["portvar"]) {
            set_var(rest, &mut vars, false).map_err(|reason| RuleError::new(line, None, reason))
        } else {
            parse_rule(t, line, &vars).map(|r| out.rules.push(r))
        };
        if let Err(e) = res {
            let e = AccelError::from(e.in_file(source));
            if strict {
                return Err(e);
            }
            out.errors.push(e);
        }
    }
    Ok(out)
}

/// `text` without a leading keyword (followed by whitespace), if it starts with one of them.
pub(super) fn strip_keyword<'a>(text: &'a str, kws: &[&str]) -> Option<&'a str> {
    for kw in kws {
        if let Some(rest) = text.strip_prefix(kw) {
            if rest.starts_with(char::is_whitespace) {
                return Some(rest.trim());
            }
        }
    }
    None
}

/// Handles `var NAME value` / `portvar NAME value`.
pub(super) fn set_var(rest: &str, vars: &mut Vars, net: bool) -> Result<(), Reason> {
    let mut it = rest.splitn(2, char::is_whitespace);
    let name = it.next().unwrap_or("").trim();
    let value = it.next().unwrap_or("").trim();
    if name.is_empty() || value.is_empty() {
        return Err(Reason::bad("variable definition needs a name and a value"));
    }
    define_var(vars, name, value, net)
}

/// Set variable `name` to `value` after checking the value parses. `net` is false for
/// `portvar`; otherwise a name that mentions PORT is a port variable (Snort's convention for
/// `var`), any other an address variable.
pub(crate) fn define_var(vars: &mut Vars, name: &str, value: &str, net: bool) -> Result<(), Reason> {
    let name = name.trim_start_matches('$');
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Reason::bad(format!("'{}' is not a variable name (letters, digits, '_')", shorten(name))));
    }
    if net && !name.contains("PORT") {
        parse_addr(value, vars, 0).map_err(|e| e.within(name))?;
        vars.set_net(name, value);
    } else {
        parse_ports(value, vars, 0).map_err(|e| e.within(name))?;
        vars.set_port(name, value);
    }
    Ok(())
}

/// Joins lines ending in a backslash; yields (first line number, logical line).
pub(super) fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0usize;
    for (i, raw) in text.lines().enumerate() {
        if cur.is_empty() {
            start = i + 1;
        }
        let l = raw.trim_end();
        if let Some(stripped) = l.strip_suffix('\\') {
            cur.push_str(stripped);
            cur.push(' ');
        } else {
            cur.push_str(l);
            out.push((start, std::mem::take(&mut cur)));
        }
    }
    if !cur.trim().is_empty() {
        out.push((start, cur));
    }
    out
}

/// Parses one rule (a logical line). `line` is recorded in the rule and in its error.
pub fn parse_rule(text: &str, line: usize, vars: &Vars) -> Result<Rule, RuleError> {
    let err = |reason: Reason| RuleError::new(line, None, reason);
    let open = find_options_start(text).ok_or_else(|| err(Reason::bad("missing '(' that starts the rule options")))?;
    let header = text[..open].trim();
    let after = &text[open + 1..];
    let close = after.rfind(')').ok_or_else(|| err(Reason::bad("missing ')' at the end of the rule options")))?;
    let trailing = after[close + 1..].trim();
    if !trailing.is_empty() {
        return Err(err(Reason::bad(format!("unexpected text '{}' after the closing ')'", shorten(trailing)))));
    }
    let body = &after[..close];

    let (mut rule, app) = parse_header(header, line, vars).map_err(err)?;
    parse_options(body, &mut rule)?;
    if let Some(app) = app {
        map_app_proto(&mut rule, app, vars).map_err(err)?;
    }
    if rule.sid == 0 {
        return Err(err(Reason::bad("rule has no sid (every rule needs sid:N with N > 0)")));
    }
    Ok(rule)
}

/// The byte index of the '(' that starts the options (the first one outside brackets).
pub(super) fn find_options_start(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            '(' if depth <= 0 => return Some(i),
            _ => {}
        }
    }
    None
}

pub(super) fn shorten(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}
