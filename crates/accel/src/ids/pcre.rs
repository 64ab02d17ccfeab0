//! Snort PCRE expressions, compiled to the `regex` crate (byte-oriented, no Unicode, linear
//! time: the fast path) where it can express them, else to PCRE2 itself (the `pcre2` crate,
//! JIT where available), which Snort runs too: backreferences, lookaround, atomic groups,
//! possessive quantifiers and the rest the `regex` crate lacks.
//!
//! Supported flags: `i s m x` (as in PCRE), `G` (ungreedy), `A` (anchored at the search
//! start), `E` (`$` only at the very end), `R` (relative: handled by the engine), `O` (ignored:
//! match limits). Snort 2's HTTP buffer flags (`U I P H D M C K S Y B`) are not Snort 3 and
//! make the option unsupported. Constructs the `regex` crate does not have (backreferences,
//! lookaround, atomic groups, possessive quantifiers, recursion, `\G`, callouts) go to PCRE2;
//! an expression PCRE2 refuses too (or one with `E`, which PCRE2 has no inline flag for) is
//! unsupported, with the reason.
//!
//! Semantics kept from PCRE: without `E`, a `$` outside a class also matches before a final
//! newline (translated to `(?:\n?\z)` when `m` is off, which moves the match end past that
//! newline by one byte).

use regex::bytes::{Regex, RegexBuilder};

/// The engine an expression was compiled for.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// The `regex` crate (the fast path).
    Regex(Regex),
    /// PCRE2, for what the `regex` crate cannot express.
    Pcre2(pcre2::bytes::Regex),
}

impl Matcher {
    /// The first match in `subject` starting at or after `from`. PCRE2 giving up (its match
    /// or depth limit) counts as no match.
    pub fn find_at(&self, subject: &[u8], from: usize) -> Option<std::ops::Range<usize>> {
        match self {
            Matcher::Regex(r) => r.find_at(subject, from).map(|m| m.range()),
            Matcher::Pcre2(r) => r.find_at(subject, from).ok().flatten().map(|m| m.start()..m.end()),
        }
    }

    /// True if PCRE2 runs the expression.
    pub fn is_pcre2(&self) -> bool {
        matches!(self, Matcher::Pcre2(_))
    }
}

/// A compiled PCRE option.
#[derive(Debug, Clone)]
pub struct CompiledPcre {
    /// The compiled expression.
    pub re: Matcher,
    /// `A`: the match must start where the search starts.
    pub anchored: bool,
}

/// Why an expression cannot be used.
pub type Unsupported = String;

/// Compiles `source` with Snort `flags`: for the `regex` crate when it can express it, else
/// for PCRE2.
pub fn compile(source: &str, flags: &str) -> Result<CompiledPcre, Unsupported> {
    match compile_regex(source, flags) {
        Ok(c) => Ok(c),
        Err(why) if why.starts_with("pcre flag") => Err(why),
        Err(why) => compile_pcre2(source, flags).map_err(|e| format!("{why}; PCRE2: {e}")),
    }
}

/// Compiles `source` for PCRE2 with Snort `flags` (byte-oriented, no UTF).
fn compile_pcre2(source: &str, flags: &str) -> Result<CompiledPcre, Unsupported> {
    let mut b = pcre2::bytes::RegexBuilder::new();
    b.jit_if_available(true);
    let mut inline = String::new();
    let mut anchored = false;
    for f in flags.chars() {
        match f {
            'i' => drop(b.caseless(true)),
            's' => drop(b.dotall(true)),
            'm' => drop(b.multi_line(true)),
            'x' => drop(b.extended(true)),
            'G' => inline.push_str("(?U)"),
            'A' => anchored = true,
            'E' => return Err("pcre flag 'E' has no PCRE2 inline equivalent".into()),
            _ => {}
        }
    }
    let re = b.build(&format!("{inline}{source}")).map_err(|e| first_line(&e.to_string()))?;
    Ok(CompiledPcre { re: Matcher::Pcre2(re), anchored })
}

/// Translates and compiles `source` with Snort `flags` for the `regex` crate.
fn compile_regex(source: &str, flags: &str) -> Result<CompiledPcre, Unsupported> {
    let mut prefix = String::from("(?");
    let mut anchored = false;
    let mut dollar_endonly = false;
    let mut multiline = false;
    for f in flags.chars() {
        match f {
            'i' => prefix.push('i'),
            's' => prefix.push('s'),
            'm' => {
                prefix.push('m');
                multiline = true;
            }
            'x' => prefix.push('x'),
            'G' => prefix.push('U'),
            'A' => anchored = true,
            'E' => dollar_endonly = true,
            'R' | 'O' => {}
            other => return Err(format!("pcre flag '{other}' (Snort 2 HTTP buffer flag)")),
        }
    }
    prefix.push_str("-u)");
    let body = translate(source, !multiline && !dollar_endonly)?;
    let pat = format!("{prefix}{body}");
    let re = RegexBuilder::new(&pat)
        .unicode(false)
        .size_limit(32 << 20)
        .dfa_size_limit(32 << 20)
        .build()
        .map_err(|e| format!("pcre not expressible with the regex crate ({})", first_line(&e.to_string())))?;
    Ok(CompiledPcre { re: Matcher::Regex(re), anchored })
}

fn first_line(s: &str) -> String {
    s.lines().rev().find(|l| l.starts_with("error:")).unwrap_or_else(|| s.lines().next().unwrap_or("")).to_string()
}

/// Rewrites PCRE syntax into `regex` syntax; `dollar_nl`: `$` may match before a final newline.
fn translate(src: &str, dollar_nl: bool) -> Result<String, Unsupported> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 8);
    let mut i = 0usize;
    let mut in_class = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let n = *chars.get(i + 1).ok_or("pcre ends with a lone backslash")?;
                i += 2;
                match n {
                    'x' => {
                        // \xH, \xHH or \x{...}
                        if chars.get(i) == Some(&'{') {
                            let close = chars[i..].iter().position(|&c| c == '}').ok_or("unterminated \\x{")?;
                            let hex: String = chars[i + 1..i + close].iter().collect();
                            let v = u32::from_str_radix(&hex, 16).map_err(|_| "bad \\x{..} escape")?;
                            push_byte(&mut out, v)?;
                            i += close + 1;
                        } else {
                            let mut v = 0u32;
                            let mut k = 0;
                            while k < 2 && i < chars.len() && chars[i].is_ascii_hexdigit() {
                                v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                                i += 1;
                                k += 1;
                            }
                            push_byte(&mut out, v)?;
                        }
                    }
                    '0' => {
                        // Octal: \0, \0NN
                        let mut v = 0u32;
                        let mut k = 0;
                        while k < 2 && i < chars.len() && ('0'..='7').contains(&chars[i]) {
                            v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                            i += 1;
                            k += 1;
                        }
                        push_byte(&mut out, v)?;
                    }
                    '1'..='9' => {
                        if in_class {
                            // Octal inside a class.
                            let mut v = n.to_digit(8).ok_or("bad octal escape")?;
                            let mut k = 0;
                            while k < 2 && i < chars.len() && ('0'..='7').contains(&chars[i]) {
                                v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                                i += 1;
                                k += 1;
                            }
                            push_byte(&mut out, v)?;
                        } else {
                            return Err("pcre backreference (\\N)".into());
                        }
                    }
                    'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'b' | 'B' | 'A' | 'z' | 'n' | 'r' | 't' | 'f' | 'v' => {
                        if in_class && (n == 'b' || n == 'B' || n == 'A' || n == 'z') {
                            if n == 'b' {
                                out.push_str("\\x08");
                                continue;
                            }
                            return Err(format!("pcre \\{n} inside a class"));
                        }
                        out.push('\\');
                        out.push(n);
                    }
                    'Z' => out.push_str(if in_class { "Z" } else { "(?:\\n?\\z)" }),
                    'e' => out.push_str("\\x1B"),
                    'a' => out.push_str("\\x07"),
                    'h' => out.push_str(if in_class { "\\t\\x20\\xA0" } else { "[\\t\\x20\\xA0]" }),
                    'R' => out.push_str("(?:\\r\\n|[\\n\\x0B\\x0C\\r\\x85])"),
                    'Q' => {
                        // \Q...\E literal run
                        let rest: String = chars[i..].iter().collect();
                        let end = rest.find("\\E").unwrap_or(rest.len());
                        out.push_str(&regex::escape(&rest[..end]));
                        i += rest[..end].chars().count() + if end < rest.len() { 2 } else { 0 };
                    }
                    'E' => {}
                    'G' | 'K' | 'g' | 'k' | 'X' | 'C' | 'p' | 'P' | 'N' | 'H' | 'V' => {
                        return Err(format!("pcre escape \\{n}"));
                    }
                    n if n.is_ascii_alphanumeric() => return Err(format!("pcre escape \\{n}")),
                    n => {
                        // Escaped punctuation: always literal.
                        let mut buf = [0u8; 4];
                        out.push_str(&escape_char(n.encode_utf8(&mut buf)));
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                i += 1;
                // A ']' right after '[' or '[^' is literal.
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                continue;
            }
            '[' if in_class => {
                // POSIX class [:name:] or a literal '['.
                if chars.get(i + 1) == Some(&':') {
                    let rest: String = chars[i..].iter().collect();
                    if let Some(end) = rest.find(":]") {
                        out.push_str(&rest[..end + 2]);
                        i += rest[..end + 2].chars().count();
                        continue;
                    }
                }
                out.push_str("\\[");
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' | '-' if in_class => {
                // The regex crate treats && / -- / ~~ as class set operators.
                if c == '-' {
                    out.push('-');
                } else {
                    out.push('\\');
                    out.push(c);
                }
            }
            '$' if !in_class && dollar_nl => out.push_str("(?:\\n?\\z)"),
            '{' if !in_class && !is_quantifier(&chars[i..]) => out.push_str("\\{"),
            '}' if !in_class && !closes_quantifier(&chars[..i]) => out.push_str("\\}"),
            '(' if !in_class => {
                if chars.get(i + 1) == Some(&'?') {
                    let n2 = chars.get(i + 2).copied().unwrap_or(' ');
                    let n3 = chars.get(i + 3).copied().unwrap_or(' ');
                    match n2 {
                        '=' | '!' => return Err("pcre lookahead".into()),
                        '<' if n3 == '=' || n3 == '!' => return Err("pcre lookbehind".into()),
                        '>' => return Err("pcre atomic group".into()),
                        '|' => return Err("pcre branch reset group".into()),
                        '(' => return Err("pcre conditional group".into()),
                        'R' | '0'..='9' | '&' | '+' => return Err("pcre recursion".into()),
                        '#' => {
                            // Comment group: drop it.
                            let rest: String = chars[i..].iter().collect();
                            let end = rest.find(')').ok_or("unterminated (?# comment")?;
                            i += rest[..end + 1].chars().count();
                            continue;
                        }
                        _ => {}
                    }
                } else if chars.get(i + 1) == Some(&'*') {
                    return Err("pcre verb (*...)".into());
                }
                out.push('(');
            }
            '+' if !in_class && i > 0 && is_quantifier_end(&chars, i) => {
                return Err("pcre possessive quantifier".into());
            }
            c => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// Whether `s` (starting at '{') is a PCRE quantifier `{n}`, `{n,}` or `{n,m}`; otherwise
/// PCRE reads the brace literally.
fn is_quantifier(s: &[char]) -> bool {
    let Some(close) = s.iter().position(|&c| c == '}') else { return false };
    let body: String = s[1..close].iter().collect();
    let mut parts = body.splitn(2, ',');
    let a = parts.next().unwrap_or("");
    let ok_num = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    match parts.next() {
        None => ok_num(a),
        Some(b) => ok_num(a) && (b.is_empty() || ok_num(b)),
    }
}

/// Whether the '}' ending `before` closes a quantifier.
fn closes_quantifier(before: &[char]) -> bool {
    match before.iter().rposition(|&c| c == '{') {
        Some(open) => {
            let mut s: Vec<char> = before[open..].to_vec();
            s.push('}');
            is_quantifier(&s) && !(open > 0 && before[open - 1] == '\\')
        }
        None => false,
    }
}

/// Whether the '+' at `i` follows a quantifier (making it possessive: `a++`, `a*+`, `a{2}+`).
fn is_quantifier_end(chars: &[char], i: usize) -> bool {
    let p = chars[i - 1];
    if p == '*' || p == '?' || p == '}' {
        // `?+` after a group start is not a quantifier; `\*+` is an escaped star then '+'.
        return !(i >= 2 && chars[i - 2] == '\\');
    }
    if p == '+' {
        return !(i >= 2 && (chars[i - 2] == '\\' || chars[i - 2] == '+'));
    }
    false
}

fn push_byte(out: &mut String, v: u32) -> Result<(), Unsupported> {
    if v > 0xFF {
        return Err("pcre code point above 0xFF".into());
    }
    out.push_str(&format!("\\x{v:02X}"));
    Ok(())
}

fn escape_char(s: &str) -> String {
    regex::escape(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(src: &str, flags: &str, hay: &[u8]) -> bool {
        compile(src, flags).unwrap().re.find_at(hay, 0).is_some()
    }

    #[test]
    fn translations() {
        assert!(m("^USER\\s+w0rm", "ims", b"user  W0RM"));
        assert!(m("\\x2E\\x2e\\/", "", b"../"));
        assert!(m("a\\x9z", "", b"a\tz"));
        assert!(m("[\\x80-\\xff]{2}", "", &[0x90, 0xFF]));
        assert!(m("foo$", "", b"foo\n"));
        assert!(!m("foo$", "E", b"foo\n"));
        assert!(m("a.b", "s", b"a\nb"));
        assert!(!m("a.b", "", b"a\nb"));
        assert!(m("[^\\]]+\\]", "", b"abc]"));
        assert!(m("a(?#comment)b", "", b"ab"));
        assert!(m("\\/etc\\/passwd", "", b"/etc/passwd"));
        assert!(m("a{,5}b", "", b"a{,5}b"));
        assert!(m("x{2}", "", b"xx"));
        assert!(m("\\{abc}", "", b"{abc}"));
    }

    #[test]
    fn what_regex_cannot_express_runs_on_pcre2() {
        for (src, flags, yes, no) in [
            ("(a)\\1", "", &b"xaa"[..], &b"xab"[..]),
            ("a(?=b)", "", b"ab", b"ac"),
            ("(?<!a)b", "", b"cb", b"ab"),
            ("a++b", "", b"aab", b"aac"),
            ("(?>a)b", "i", b"AB", b"AC"),
            ("^(\\w+) \\1$", "m", b"x\nfoo foo\ny", b"foo bar"),
        ] {
            let c = compile(src, flags).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert!(c.re.is_pcre2(), "{src}");
            assert!(c.re.find_at(yes, 0).is_some(), "{src} on {yes:?}");
            assert!(c.re.find_at(no, 0).is_none(), "{src} on {no:?}");
        }
        // The fast path keeps what `regex` can do.
        assert!(!compile("^USER\\s+w0rm", "ims").unwrap().re.is_pcre2());
        // The match position is where the search starts or later.
        let c = compile("(a)\\1", "").unwrap();
        assert_eq!(c.re.find_at(b"aa-aa", 1), Some(3..5));
    }

    #[test]
    fn unsupported_constructs() {
        // Neither engine: a lookahead with E (no PCRE2 inline flag), a broken expression.
        let e = compile("a(?=b)$", "E").unwrap_err();
        assert!(e.contains("lookahead") && e.contains("PCRE2"), "{e}");
        let e = compile("(a\\1", "").unwrap_err();
        assert!(e.contains("PCRE2"), "{e}");
        assert!(compile("a", "U").unwrap_err().contains("Snort 2"));
    }
}
