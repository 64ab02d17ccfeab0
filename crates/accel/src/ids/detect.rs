//! Compiled detection options of one rule and their evaluation on buffers.
//!
//! Options run in rule order with a cursor per buffer. When a later option that depends on
//! the cursor fails, earlier `content` and `pcre` options are retried at their next occurrence
//! (Snort's retry), so a rule matches when *some* choice of occurrences satisfies every
//! option. A budget bounds the retries per rule evaluation; running out counts as no match.

use super::bytes::read_number;
use super::content::ContentMatcher;
use super::pcre::{self, CompiledPcre};
use super::rule::{BufferKind, ByteOp, ByteRead, Detect, Num, RangeTest, Segment};

/// Retries allowed in one rule evaluation.
pub const RETRY_BUDGET: u32 = 4096;

/// Number of byte_extract variables a rule may use.
pub const MAX_VARS: usize = 8;

/// One compiled detection option.
#[derive(Debug, Clone)]
pub enum Item {
    /// `content`: matcher, offset-or-distance, depth-or-within.
    Content(Box<ContentMatcher>, Num, Option<Num>),
    /// `pcre`
    Pcre {
        /// The compiled expression.
        re: Box<CompiledPcre>,
        /// `!`
        negated: bool,
        /// `R`
        relative: bool,
    },
    /// `byte_test`
    ByteTest(ByteRead, ByteOp, bool, Num),
    /// `byte_jump`
    ByteJump {
        /// Read description.
        read: ByteRead,
        /// multiplier
        mult: u32,
        /// align to 4
        align: bool,
        /// from_beginning
        from_beginning: bool,
        /// from_end
        from_end: bool,
        /// post_offset
        post: Num,
    },
    /// `byte_extract`
    ByteExtract(ByteRead, u32, u8, u8),
    /// `isdataat`
    IsDataAt(Num, bool, bool),
    /// `bufferlen`
    BufferLen(RangeTest, bool),
}

impl Item {
    /// Whether the option reads the cursor.
    fn relative(&self) -> bool {
        match self {
            Item::Content(m, _, _) => m.relative,
            Item::Pcre { relative, .. } => *relative,
            Item::ByteTest(r, ..) | Item::ByteExtract(r, ..) => r.relative,
            Item::ByteJump { read, from_beginning, from_end, .. } => read.relative || !(*from_beginning || *from_end),
            Item::IsDataAt(_, rel, _) => *rel,
            Item::BufferLen(_, rel) => *rel,
        }
    }
}

/// The compiled options on one buffer.
#[derive(Debug, Clone)]
pub struct CompiledSegment {
    /// The buffer inspected.
    pub buffer: BufferKind,
    /// Options in order.
    pub items: Vec<Item>,
    /// For each option, whether a later option depends on the cursor (worth retrying).
    retry: Vec<bool>,
}

/// Compiles the segments of a rule. Options that cannot be compiled (a pcre the regex crate
/// cannot express) are left out and their reasons returned.
pub fn compile_segments(segs: &[Segment]) -> (Vec<CompiledSegment>, Vec<String>) {
    let mut out = Vec::new();
    let mut unsupported = Vec::new();
    for s in segs {
        let mut items = Vec::new();
        for d in &s.items {
            match d {
                Detect::Content(c) => {
                    let m = ContentMatcher::new(&c.pattern, c.nocase, c.negated, c.is_relative());
                    let (off, lim) = if c.is_relative() {
                        (c.distance.unwrap_or(Num::Lit(0)), c.within)
                    } else {
                        (c.offset.unwrap_or(Num::Lit(0)), c.depth)
                    };
                    items.push(Item::Content(Box::new(m), off, lim));
                }
                Detect::Pcre(p) => match pcre::compile(&p.source, &p.flags) {
                    Ok(re) => items.push(Item::Pcre { re: Box::new(re), negated: p.negated, relative: p.relative }),
                    Err(why) => unsupported.push(why),
                },
                Detect::ByteTest { read, op, negated, value } => {
                    items.push(Item::ByteTest(*read, *op, *negated, *value))
                }
                Detect::ByteJump { read, multiplier, align, from_beginning, from_end, post_offset } => {
                    items.push(Item::ByteJump {
                        read: *read,
                        mult: *multiplier,
                        align: *align,
                        from_beginning: *from_beginning,
                        from_end: *from_end,
                        post: *post_offset,
                    })
                }
                Detect::ByteExtract { read, multiplier, align, var } => {
                    items.push(Item::ByteExtract(*read, *multiplier, *align, *var))
                }
                Detect::IsDataAt { offset, relative, negated } => {
                    items.push(Item::IsDataAt(*offset, *relative, *negated))
                }
                Detect::BufferLen { test, relative } => items.push(Item::BufferLen(*test, *relative)),
            }
        }
        let mut retry = vec![false; items.len()];
        let mut later_relative = false;
        for i in (0..items.len()).rev() {
            retry[i] = later_relative;
            later_relative |= items[i].relative();
        }
        if !items.is_empty() {
            out.push(CompiledSegment { buffer: s.buffer, items, retry });
        }
    }
    (out, unsupported)
}

/// Evaluation state of one rule.
pub struct EvalState {
    /// byte_extract variable values.
    pub vars: [u32; MAX_VARS],
    /// Retries left.
    pub budget: u32,
}

impl Default for EvalState {
    fn default() -> Self {
        EvalState { vars: [0; MAX_VARS], budget: RETRY_BUDGET }
    }
}

fn num(n: Num, st: &EvalState) -> i64 {
    match n {
        Num::Lit(v) => i64::from(v),
        // Snort converts the unsigned variable to int.
        Num::Var(i) => i64::from(st.vars.get(usize::from(i)).copied().unwrap_or(0) as i32),
    }
}

/// Evaluates a segment on `buf` from cursor 0.
pub fn eval_segment(seg: &CompiledSegment, buf: &[u8], st: &mut EvalState) -> bool {
    eval_from(seg, 0, buf, 0, st)
}

fn eval_from(seg: &CompiledSegment, i: usize, buf: &[u8], cursor: usize, st: &mut EvalState) -> bool {
    let Some(item) = seg.items.get(i) else { return true };
    match item {
        Item::Content(m, off, lim) => {
            let off = num(*off, st);
            let lim = lim.map(|l| num(l, st));
            if m.negated || !seg.retry[i] {
                return match m.eval(buf, cursor, off, lim) {
                    Some(c) => eval_from(seg, i + 1, buf, c, st),
                    None => false,
                };
            }
            let w = match super::content::window(buf.len(), cursor, m.relative, off, lim, m.pattern().len()) {
                super::content::Window::Range(s, e) => (s, e),
                _ => return false,
            };
            let mut from = w.0;
            while let Some(at) = m.find_from(buf, w, from) {
                if eval_from(seg, i + 1, buf, at + m.pattern().len(), st) {
                    return true;
                }
                if st.budget == 0 {
                    return false;
                }
                st.budget -= 1;
                from = at + 1;
            }
            false
        }
        Item::Pcre { re, negated, relative } => {
            let base = if *relative { cursor.min(buf.len()) } else { 0 };
            let subject = &buf[base..];
            let mut from = 0usize;
            loop {
                let found = re.re.find_at(subject, from).filter(|m| !re.anchored || m.start == from);
                if *negated {
                    return found.is_none() && eval_from(seg, i + 1, buf, cursor, st);
                }
                let Some(m) = found else { return false };
                if eval_from(seg, i + 1, buf, base + m.end, st) {
                    return true;
                }
                if !seg.retry[i] || re.anchored || st.budget == 0 {
                    return false;
                }
                st.budget -= 1;
                from = if m.end > m.start { m.end } else { m.end + 1 };
                if from > subject.len() {
                    return false;
                }
            }
        }
        Item::ByteTest(r, op, negated, value) => {
            let base = if r.relative { cursor as i64 } else { 0 };
            let Some((v, _)) = read_number(buf, base + num(r.offset, st), r) else { return false };
            let cmp = num(*value, st) as u32;
            let ok = match op {
                ByteOp::Lt => v < cmp,
                ByteOp::Gt => v > cmp,
                ByteOp::Le => v <= cmp,
                ByteOp::Ge => v >= cmp,
                ByteOp::Eq => v == cmp,
                ByteOp::And => v & cmp != 0,
                ByteOp::Xor => v ^ cmp != 0,
            };
            ok != *negated && eval_from(seg, i + 1, buf, cursor, st)
        }
        Item::ByteJump { read, mult, align, from_beginning, from_end, post } => {
            let base = if read.relative { cursor as i64 } else { 0 };
            let at = base + num(read.offset, st);
            let Some((v, used)) = read_number(buf, at, read) else { return false };
            let mut jump = u64::from(v) * u64::from((*mult).max(1));
            if *align && jump % 4 != 0 {
                jump += 4 - jump % 4;
            }
            let jump = jump.min(u64::from(u32::MAX)) as i64;
            let pos = if *from_beginning {
                jump
            } else if *from_end {
                buf.len() as i64 + jump
            } else {
                at + used as i64 + jump
            } + num(*post, st);
            if pos < 0 || pos > buf.len() as i64 {
                return false;
            }
            eval_from(seg, i + 1, buf, pos as usize, st)
        }
        Item::ByteExtract(r, mult, align, var) => {
            let base = if r.relative { cursor as i64 } else { 0 };
            let at = base + num(r.offset, st);
            let Some((v, used)) = read_number(buf, at, r) else { return false };
            let mut v = v.wrapping_mul(*mult);
            if *align == 4 && v % 4 != 0 {
                v = v.wrapping_add(4 - v % 4);
            } else if *align == 2 && v % 2 != 0 {
                v = v.wrapping_add(1);
            }
            let slot = usize::from(*var).min(MAX_VARS - 1);
            let saved = st.vars[slot];
            st.vars[slot] = v;
            let ok = eval_from(seg, i + 1, buf, (at as usize) + used, st);
            if !ok {
                st.vars[slot] = saved;
            }
            ok
        }
        Item::IsDataAt(off, relative, negated) => {
            let base = if *relative { cursor as i64 } else { 0 };
            let p = base + num(*off, st);
            let there = p >= 0 && p < buf.len() as i64;
            there != *negated && eval_from(seg, i + 1, buf, cursor, st)
        }
        Item::BufferLen(t, relative) => {
            let len = if *relative { buf.len().saturating_sub(cursor) } else { buf.len() };
            t.check(len as u64) && eval_from(seg, i + 1, buf, cursor, st)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::parse::parse_rule;
    use crate::ids::vars::Vars;

    fn rule_matches(opts: &str, buf: &[u8]) -> bool {
        let r = parse_rule(&format!("alert tcp any any -> any any ({opts} sid:1;)"), 1, &Vars::default()).unwrap();
        let (segs, uns) = compile_segments(&r.segments);
        assert!(uns.is_empty(), "{uns:?}");
        let mut st = EvalState::default();
        segs.iter().all(|s| eval_segment(s, buf, &mut st))
    }

    #[test]
    fn retry_finds_a_later_occurrence() {
        // The first "a" is not followed by "b" within 1 byte; the second is.
        assert!(rule_matches(r#"content:"a"; content:"b",distance 0,within 1;"#, b"a_xab"));
        assert!(!rule_matches(r#"content:"a"; content:"b",distance 0,within 1;"#, b"a_xa_b"));
    }

    #[test]
    fn byte_ops() {
        assert!(rule_matches("byte_test:2,>,255,0;", &[0x01, 0x00]));
        assert!(!rule_matches("byte_test:2,>,256,0;", &[0x01, 0x00]));
        assert!(rule_matches("byte_test:2,!&,0x80,0;", &[0x00, 0x7F]));
        assert!(rule_matches(r#"content:"L"; byte_jump:1,0,relative; content:"Z",within 1;"#, b"L\x03abcZ"));
        assert!(rule_matches(r#"byte_extract:1,0,n; content:"x",offset n,depth 1;"#, b"\x02?x"));
        assert!(!rule_matches(r#"byte_extract:1,0,n; content:"x",offset n,depth 1;"#, b"\x01?x"));
        assert!(rule_matches(r#"content:"ab"; isdataat:2,relative;"#, b"abcde"));
        assert!(!rule_matches(r#"content:"ab"; isdataat:3,relative;"#, b"abcde"));
        assert!(rule_matches(r#"content:"ab"; isdataat:!3,relative;"#, b"abcde"));
        assert!(rule_matches("bufferlen:5;", b"abcde"));
        assert!(rule_matches("bufferlen:4<=>6;", b"abcde"));
        assert!(!rule_matches("bufferlen:>5;", b"abcde"));
    }

    #[test]
    fn pcre_relative_anchors_at_cursor() {
        assert!(rule_matches(r#"content:"USER"; pcre:"/^\s+root/R";"#, b"USER  root"));
        assert!(!rule_matches(r#"content:"USER"; pcre:"/^root/R";"#, b"USER  root"));
        assert!(rule_matches(r#"pcre:!"/evil/i";"#, b"good"));
    }
}
