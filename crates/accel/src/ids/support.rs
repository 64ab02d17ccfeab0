//! Which rules the engine evaluates only in part, and why: the data behind
//! `linerate ids check` and the strict load (`--strict` refuses such rules).

use super::parse::UNKNOWN_OPTION;
use super::{Rule, RuleSet};
use crate::AccelError;

/// One option of a rule the engine does not evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// The option (or header part) as the rule names it.
    pub option: String,
    /// Why it is not evaluated, in a few words.
    pub reason: String,
    /// True when no rule language (Snort 2, Snort 3, Suricata) has this keyword.
    pub unknown: bool,
}

/// A rule that loads but is only partly evaluated (its matches are approximate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialRule {
    /// 1-based line in the rules file.
    pub line: usize,
    /// Generator id.
    pub gid: u32,
    /// Signature id.
    pub sid: u32,
    /// Revision.
    pub rev: u32,
    /// The rule's message.
    pub msg: String,
    /// What is not evaluated.
    pub gaps: Vec<Gap>,
}

/// The option and reason of one entry of [`Rule::unsupported`].
pub fn explain(entry: &str) -> Gap {
    let gap =
        |option: &str, reason: &str| Gap { option: option.to_string(), reason: reason.to_string(), unknown: false };
    if let Some(name) = entry.strip_suffix(UNKNOWN_OPTION) {
        return Gap { unknown: true, ..gap(name.trim(), "unknown keyword: no rule language has this option") };
    }
    if entry == "header:no-protocol" {
        return gap("header", "no protocol or service in the header: the rule would apply to every packet");
    }
    if let Some(svc) = entry.strip_prefix("header:service (").and_then(|s| s.strip_suffix(')')) {
        return gap(
            &format!("header service '{svc}'"),
            "no detection of this application protocol and no port mapping for it: the rule would apply to every flow",
        );
    }
    if let Some(name) = entry.strip_suffix(" with arguments") {
        return gap(name, "a sticky buffer restricted to a field (arguments) is not produced");
    }
    if let Some(name) = entry.strip_suffix(" (unknown)") {
        return gap(name, "unknown HTTP buffer");
    }
    if let Some(what) = entry.strip_suffix(",dce") {
        return gap(&format!("{what}:...,dce"), "byte order from the DCE/RPC header is not decoded");
    }
    if entry.starts_with("pcre ") {
        return gap("pcre", &format!("{entry}: neither the regex crate nor PCRE2 takes it"));
    }
    if entry.starts_with("http_") || entry.ends_with("_data") || entry == "sip_header" || entry == "sip_body" {
        return gap(entry, "a buffer the engine's decoders do not produce");
    }
    gap(entry, "known to Snort or Suricata, not evaluated by this engine")
}

fn partial(r: &Rule) -> PartialRule {
    PartialRule {
        line: r.line,
        gid: r.gid,
        sid: r.sid,
        rev: r.rev,
        msg: r.msg.clone(),
        gaps: r.unsupported.iter().map(|u| explain(u)).collect(),
    }
}

/// Every loaded rule that is not fully supported, in file order.
pub fn partial_rules(set: &RuleSet) -> Vec<PartialRule> {
    let mut v: Vec<PartialRule> = set.rules().filter(|r| !r.fully_supported()).map(partial).collect();
    v.sort_by_key(|p| p.line);
    v
}

/// The strict check: the first rule (in file order) with an unknown keyword or an option the
/// engine does not evaluate, as an error naming `source`, the line, the sid and the option.
pub fn require_full_support(set: &RuleSet, source: &str) -> Result<(), AccelError> {
    let Some(p) = partial_rules(set).into_iter().next() else { return Ok(()) };
    let g = p.gaps.iter().find(|g| g.unknown).unwrap_or(&p.gaps[0]);
    let problem = if g.unknown {
        format!("sid {}: unknown rule option '{}'", p.sid, g.option)
    } else {
        format!("sid {}: option '{}' is not supported ({})", p.sid, g.option, g.reason)
    };
    Err(AccelError::parse(source, p.line, problem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Vars;

    #[test]
    fn partial_rules_are_listed_with_reasons_and_strict_names_the_first() {
        let text = "alert tcp any any -> any any (content:\"a\"; sid:1;)\n\
                    alert tcp any any -> any any (content:\"a\"; ssl_state:client_hello; sid:2;)\n\
                    alert dns (content:\"b\"; sid:3;)\n\
                    alert tcp any any -> any any (content:\"c\"; bogus_kw:1; http_header:field host; sid:4;)\n\
                    alert tcp any any -> any any (pcre:\"/a(?=b)$/E\"; sid:5;)\n\
                    alert tcp any any -> any any (pcre:\"/(a)\\1/\"; sid:6;)\n";
        let (set, report) = RuleSet::parse(text, "t.rules", &Vars::default(), true).unwrap();
        assert_eq!(report.partial, 4);
        let p = partial_rules(&set);
        let sids: Vec<u32> = p.iter().map(|r| r.sid).collect();
        assert_eq!(sids, vec![2, 3, 4, 5]);
        assert_eq!(p[0].line, 2);
        assert_eq!(p[0].gaps, vec![explain("ssl_state")]);
        assert!(p[1].gaps[0].option.contains("dns") && p[1].gaps[0].reason.contains("application protocol"));
        assert!(p[2].gaps.iter().any(|g| g.unknown && g.option == "bogus_kw"));
        assert!(p[2].gaps.iter().any(|g| g.option == "http_header" && g.reason.contains("field")));
        // A lookahead with E takes neither engine; a backreference runs on PCRE2 (sid 6 is full).
        assert!(p[3].gaps[0].option == "pcre" && p[3].gaps[0].reason.contains("lookahead"), "{:?}", p[3].gaps);
        assert!(p[3].gaps[0].reason.contains("PCRE2"), "{:?}", p[3].gaps);
        let e = require_full_support(&set, "t.rules").unwrap_err().to_string();
        assert_eq!(e, "t.rules:2: sid 2: option 'ssl_state' is not supported (known to Snort or Suricata, not evaluated by this engine)");
        let (only_unknown, _) = RuleSet::parse(
            "alert tcp any any -> any any (content:\"c\"; ssl_state:x; bogus_kw; sid:9;)\n",
            "u",
            &Vars::default(),
            true,
        )
        .unwrap();
        assert_eq!(
            require_full_support(&only_unknown, "u").unwrap_err().to_string(),
            "u:1: sid 9: unknown rule option 'bogus_kw'"
        );
        let (full, _) =
            RuleSet::parse("alert tcp any any -> any any (content:\"a\"; sid:1;)\n", "f", &Vars::default(), true)
                .unwrap();
        assert!(require_full_support(&full, "f").is_ok());
    }
}
