//! The rule AST: what a parsed Snort 3 rule says, with variables already expanded.

use std::net::Ipv4Addr;

use crate::prefix::Prefix;

/// What the rule asks Snort to do when it matches (kept as metadata: matching reports every rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// `alert`
    Alert,
    /// `log`
    Log,
    /// `pass`
    Pass,
    /// `drop`
    Drop,
    /// `reject`
    Reject,
    /// `sdrop`
    Sdrop,
    /// `block`
    Block,
}

/// The protocol named in a rule header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleProto {
    /// `tcp`
    Tcp,
    /// `udp`
    Udp,
    /// `icmp`
    Icmp,
    /// `ip`: every IPv4 packet, whatever its transport.
    Ip,
}

/// An address expression of a rule header (`any`, a prefix, a list, a negation).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AddrSpec {
    /// `any`
    Any,
    /// One prefix (a bare address is a /32).
    Prefix(Prefix),
    /// `[a,b,!c]`: matches if some positive element matches (or there is none) and no negated one does.
    List(Vec<AddrSpec>),
    /// `!x`
    Not(Box<AddrSpec>),
}

impl AddrSpec {
    /// Whether `ip` satisfies the expression.
    pub fn matches(&self, ip: Ipv4Addr) -> bool {
        match self {
            AddrSpec::Any => true,
            AddrSpec::Prefix(p) => p.contains(u32::from(ip)),
            AddrSpec::Not(inner) => !inner.matches(ip),
            AddrSpec::List(items) => {
                let mut any_pos = false;
                let mut pos_hit = false;
                for it in items {
                    match it {
                        AddrSpec::Not(inner) => {
                            if inner.matches(ip) {
                                return false;
                            }
                        }
                        other => {
                            any_pos = true;
                            pos_hit = pos_hit || other.matches(ip);
                        }
                    }
                }
                pos_hit || !any_pos
            }
        }
    }

    /// Whether the expression is the unrestricted `any`.
    pub fn is_any(&self) -> bool {
        matches!(self, AddrSpec::Any)
    }

    /// Some address that satisfies the expression, if one is easy to find (used by [`super::synth`]).
    pub fn example(&self) -> Option<Ipv4Addr> {
        let probes = [Ipv4Addr::new(10, 1, 2, 3), Ipv4Addr::new(192, 0, 2, 7), Ipv4Addr::new(203, 0, 113, 9)];
        let mut cands: Vec<Ipv4Addr> = probes.to_vec();
        self.collect_prefix_addrs(&mut cands);
        cands.into_iter().find(|&a| self.matches(a))
    }

    fn collect_prefix_addrs(&self, out: &mut Vec<Ipv4Addr>) {
        match self {
            AddrSpec::Any => {}
            AddrSpec::Prefix(p) => out.push(Ipv4Addr::from(p.first())),
            AddrSpec::Not(i) => i.collect_prefix_addrs(out),
            AddrSpec::List(v) => v.iter().for_each(|i| i.collect_prefix_addrs(out)),
        }
    }
}

/// A set of ports as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortSet {
    ranges: Vec<(u16, u16)>,
}

impl PortSet {
    /// Every port (`any`).
    pub fn any() -> PortSet {
        PortSet { ranges: vec![(0, u16::MAX)] }
    }

    /// No port at all (e.g. `!any`).
    pub fn none() -> PortSet {
        PortSet { ranges: Vec::new() }
    }

    /// The set of the given inclusive ranges (normalized).
    pub fn from_ranges(mut r: Vec<(u16, u16)>) -> PortSet {
        r.retain(|&(a, b)| a <= b);
        r.sort_unstable();
        let mut out: Vec<(u16, u16)> = Vec::with_capacity(r.len());
        for (a, b) in r {
            match out.last_mut() {
                Some(last) if u32::from(a) <= u32::from(last.1) + 1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        PortSet { ranges: out }
    }

    /// The ranges, sorted and disjoint.
    pub fn ranges(&self) -> &[(u16, u16)] {
        &self.ranges
    }

    /// Whether `port` is in the set.
    pub fn contains(&self, port: u16) -> bool {
        let i = self.ranges.partition_point(|&(a, _)| a <= port);
        i > 0 && self.ranges[i - 1].1 >= port
    }

    /// Whether the set holds every port.
    pub fn is_any(&self) -> bool {
        self.ranges == [(0, u16::MAX)]
    }

    /// Number of ports in the set.
    pub fn count(&self) -> u32 {
        self.ranges.iter().map(|&(a, b)| u32::from(b) - u32::from(a) + 1).sum()
    }

    /// The complement.
    pub fn complement(&self) -> PortSet {
        let mut out = Vec::new();
        let mut next: u32 = 0;
        for &(a, b) in &self.ranges {
            if u32::from(a) > next {
                out.push((next as u16, a - 1));
            }
            next = u32::from(b) + 1;
        }
        if next <= u32::from(u16::MAX) {
            out.push((next as u16, u16::MAX));
        }
        PortSet { ranges: out }
    }

    /// The union with another set.
    pub fn union(&self, other: &PortSet) -> PortSet {
        let mut r = self.ranges.clone();
        r.extend_from_slice(&other.ranges);
        PortSet::from_ranges(r)
    }

    /// The intersection with another set.
    pub fn intersect(&self, other: &PortSet) -> PortSet {
        self.complement().union(&other.complement()).complement()
    }

    /// The lowest port of the set.
    pub fn first(&self) -> Option<u16> {
        self.ranges.first().map(|r| r.0)
    }
}

/// Which buffer a detection option inspects (Snort 3 sticky buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferKind {
    /// The payload as given (`pkt_data`, the default).
    Pkt,
    /// `raw_data`: the payload before any normalization (the same bytes here).
    Raw,
    /// `file_data`: the HTTP message body (de-chunked); the whole payload for non-HTTP data.
    FileData,
    /// `http_uri`: the normalized request URI.
    HttpUri,
    /// `http_raw_uri`: the request URI as sent.
    HttpRawUri,
    /// `http_method`
    HttpMethod,
    /// `http_header`: the header fields (start line excluded).
    HttpHeader,
    /// `http_raw_header`: the header fields as sent.
    HttpRawHeader,
    /// `http_cookie`: the Cookie (request) or Set-Cookie (response) values.
    HttpCookie,
    /// `http_client_body`: the request body (de-chunked).
    HttpClientBody,
    /// `http_stat_code`: the three-digit response status code.
    HttpStatCode,
    /// `http_stat_msg`: the response reason phrase.
    HttpStatMsg,
}

impl BufferKind {
    /// The Snort option name of the buffer.
    pub fn name(self) -> &'static str {
        match self {
            BufferKind::Pkt => "pkt_data",
            BufferKind::Raw => "raw_data",
            BufferKind::FileData => "file_data",
            BufferKind::HttpUri => "http_uri",
            BufferKind::HttpRawUri => "http_raw_uri",
            BufferKind::HttpMethod => "http_method",
            BufferKind::HttpHeader => "http_header",
            BufferKind::HttpRawHeader => "http_raw_header",
            BufferKind::HttpCookie => "http_cookie",
            BufferKind::HttpClientBody => "http_client_body",
            BufferKind::HttpStatCode => "http_stat_code",
            BufferKind::HttpStatMsg => "http_stat_msg",
        }
    }

    /// The buffer named by a sticky-buffer option, if it is one we implement.
    pub fn from_name(name: &str) -> Option<BufferKind> {
        Some(match name {
            "pkt_data" => BufferKind::Pkt,
            "raw_data" => BufferKind::Raw,
            "file_data" => BufferKind::FileData,
            "http_uri" => BufferKind::HttpUri,
            "http_raw_uri" => BufferKind::HttpRawUri,
            "http_method" => BufferKind::HttpMethod,
            "http_header" => BufferKind::HttpHeader,
            "http_raw_header" => BufferKind::HttpRawHeader,
            "http_cookie" => BufferKind::HttpCookie,
            "http_client_body" => BufferKind::HttpClientBody,
            "http_stat_code" => BufferKind::HttpStatCode,
            "http_stat_msg" => BufferKind::HttpStatMsg,
            _ => return None,
        })
    }

    /// Whether the buffer exists only inside a parsed HTTP message.
    pub fn is_http(self) -> bool {
        !matches!(self, BufferKind::Pkt | BufferKind::Raw | BufferKind::FileData)
    }
}

/// A numeric argument that is a literal or a `byte_extract` variable (by index in the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Num {
    /// A literal value.
    Lit(i32),
    /// The value of the rule's n-th `byte_extract` variable.
    Var(u8),
}

/// One `content` option with its modifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The bytes to find (hex blocks and escapes decoded).
    pub pattern: Vec<u8>,
    /// `content:!"..."`: the option matches when the pattern is absent.
    pub negated: bool,
    /// ASCII case-insensitive comparison.
    pub nocase: bool,
    /// `offset`: start of the search window from the start of the buffer.
    pub offset: Option<Num>,
    /// `depth`: length of the search window from `offset`.
    pub depth: Option<Num>,
    /// `distance`: start of the window relative to the end of the previous match.
    pub distance: Option<Num>,
    /// `within`: length of the window from `distance`.
    pub within: Option<Num>,
    /// `fast_pattern`: use this content for the prefilter.
    pub fast_pattern: bool,
    /// `fast_pattern_offset`: the prefilter uses the pattern from this byte.
    pub fp_offset: Option<u16>,
    /// `fast_pattern_length`: the prefilter uses this many bytes of the pattern.
    pub fp_length: Option<u16>,
}

impl Content {
    /// A content with no modifiers.
    pub fn new(pattern: Vec<u8>) -> Content {
        Content {
            pattern,
            negated: false,
            nocase: false,
            offset: None,
            depth: None,
            distance: None,
            within: None,
            fast_pattern: false,
            fp_offset: None,
            fp_length: None,
        }
    }

    /// Whether the search window is relative to the previous match (`distance`/`within`).
    pub fn is_relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }

    /// The part of the pattern the prefilter uses (`fast_pattern_offset/length` applied).
    pub fn fast_slice(&self) -> &[u8] {
        let start = usize::from(self.fp_offset.unwrap_or(0)).min(self.pattern.len());
        let end = match self.fp_length {
            Some(l) => (start + usize::from(l)).min(self.pattern.len()),
            None => self.pattern.len(),
        };
        &self.pattern[start..end]
    }
}

/// A `pcre` option (the regex is compiled by the engine).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcre {
    /// The expression between the delimiters, as written.
    pub source: String,
    /// The flag letters after the closing delimiter.
    pub flags: String,
    /// `pcre:!"..."`
    pub negated: bool,
    /// `R`: search from the cursor (the previous match end).
    pub relative: bool,
}

/// How `byte_test`, `byte_jump` and `byte_extract` read a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRead {
    /// Bytes to read (1..=4 binary, 1..=10 text).
    pub bytes: u8,
    /// Offset of the first byte.
    pub offset: Num,
    /// Offset from the cursor rather than from the buffer start.
    pub relative: bool,
    /// Little-endian binary (default big-endian).
    pub little: bool,
    /// Text number in this base (10, 16 or 8), or `None` for binary.
    pub string_base: Option<u32>,
    /// AND mask applied to the value, which is then shifted right by the mask's trailing zeros.
    pub bitmask: Option<u32>,
}

/// The comparison of a `byte_test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOp {
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `=`
    Eq,
    /// `&`: any bit in common.
    And,
    /// `^`: the values differ in some bit.
    Xor,
}

/// A numeric range test (`dsize`, `bufferlen`, `itype`, `ttl`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeTest {
    /// `N` or `=N`
    Eq(u64),
    /// `!N`
    Ne(u64),
    /// `<N`
    Lt(u64),
    /// `<=N`
    Le(u64),
    /// `>N`
    Gt(u64),
    /// `>=N`
    Ge(u64),
    /// `A<>B`: strictly between.
    Between(u64, u64),
    /// `A<=>B`: between, inclusive.
    BetweenIncl(u64, u64),
}

impl RangeTest {
    /// Whether `v` passes the test.
    pub fn check(&self, v: u64) -> bool {
        match *self {
            RangeTest::Eq(n) => v == n,
            RangeTest::Ne(n) => v != n,
            RangeTest::Lt(n) => v < n,
            RangeTest::Le(n) => v <= n,
            RangeTest::Gt(n) => v > n,
            RangeTest::Ge(n) => v >= n,
            RangeTest::Between(a, b) => v > a && v < b,
            RangeTest::BetweenIncl(a, b) => v >= a && v <= b,
        }
    }

    /// Some value that passes the test, if any (used by [`super::synth`]).
    pub fn example(&self) -> Option<u64> {
        let cands = match *self {
            RangeTest::Eq(n) => vec![n],
            RangeTest::Ne(n) => vec![n.wrapping_add(1), 0],
            RangeTest::Lt(n) | RangeTest::Le(n) => vec![n.saturating_sub(1), 0],
            RangeTest::Gt(n) | RangeTest::Ge(n) => vec![n + 1],
            RangeTest::Between(a, _) | RangeTest::BetweenIncl(a, _) => vec![a + 1, a],
        };
        cands.into_iter().find(|&v| self.check(v))
    }
}

/// A detection option that inspects buffer bytes, in rule order.
#[derive(Debug, Clone, PartialEq)]
pub enum Detect {
    /// `content`
    Content(Content),
    /// `pcre`
    Pcre(Pcre),
    /// `byte_test`
    ByteTest {
        /// How to read the value.
        read: ByteRead,
        /// Comparison.
        op: ByteOp,
        /// `!` before the operator.
        negated: bool,
        /// The value compared against.
        value: Num,
    },
    /// `byte_jump`
    ByteJump {
        /// How to read the value.
        read: ByteRead,
        /// `multiplier`
        multiplier: u32,
        /// `align` (round the jump up to 4).
        align: bool,
        /// `from_beginning`
        from_beginning: bool,
        /// `from_end`
        from_end: bool,
        /// `post_offset`
        post_offset: Num,
    },
    /// `byte_extract` into variable `var`.
    ByteExtract {
        /// How to read the value.
        read: ByteRead,
        /// `multiplier`
        multiplier: u32,
        /// `align` 0, 2 or 4.
        align: u8,
        /// Variable index in the rule.
        var: u8,
    },
    /// `isdataat:[!]N[,relative]`
    IsDataAt {
        /// Position to test.
        offset: Num,
        /// From the cursor.
        relative: bool,
        /// `!`: true when there is no data there.
        negated: bool,
    },
    /// `bufferlen`
    BufferLen {
        /// Length test.
        test: RangeTest,
        /// Remaining length after the cursor instead of the whole buffer.
        relative: bool,
    },
}

/// A run of detection options on one buffer (a sticky-buffer option starts a new one).
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The buffer inspected.
    pub buffer: BufferKind,
    /// The options, in rule order.
    pub items: Vec<Detect>,
}

/// `flow:` constraints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowOpts {
    /// `Some(true)`: to_server/from_client; `Some(false)`: to_client/from_server.
    pub to_server: Option<bool>,
    /// `established`
    pub established: bool,
    /// `not_established`
    pub not_established: bool,
    /// `stateless`
    pub stateless: bool,
}

/// One `flowbits` operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowbitsOp {
    /// Set all bits (after the rule matched).
    Set(Vec<String>),
    /// Clear all bits (after the rule matched).
    Unset(Vec<String>),
    /// Toggle all bits (after the rule matched).
    Toggle(Vec<String>),
    /// Condition: every bit (`a&b`) or any bit (`a|b`) is set.
    IsSet {
        /// Bit names.
        bits: Vec<String>,
        /// `|`-separated: any suffices.
        any: bool,
    },
    /// Condition: every bit (`a&b`) or any bit (`a|b`) is clear.
    IsNotSet {
        /// Bit names.
        bits: Vec<String>,
        /// `|`-separated: any suffices.
        any: bool,
    },
    /// `noalert`: the rule never reports a match.
    NoAlert,
}

/// A test on packet header fields, which the caller supplies in [`super::engine::HeaderFields`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderTest {
    /// `dsize` (payload length).
    Dsize(RangeTest),
    /// `itype`
    IcmpType(RangeTest),
    /// `icode`
    IcmpCode(RangeTest),
    /// `icmp_id`
    IcmpId(RangeTest),
    /// `icmp_seq`
    IcmpSeq(RangeTest),
    /// `ttl`
    Ttl(RangeTest),
    /// `id` (IP identification)
    IpId(RangeTest),
    /// `seq` (TCP sequence number)
    Seq(RangeTest),
    /// `ack` (TCP acknowledgement number)
    Ack(RangeTest),
    /// `ip_proto`
    IpProto(RangeTest),
    /// `flags`: mode, wanted bits, bits to ignore (FIN=0x01 ... CWR=0x80).
    TcpFlags {
        /// `+` (all of, others allowed), `*` (any of), `!` (none of), or exact (`=`).
        mode: char,
        /// Flag bits named.
        bits: u8,
        /// Bits masked out before the test.
        ignore: u8,
    },
    /// `fragbits`: mode and bits (Reserved=0x4, DF=0x2, MF=0x1).
    FragBits {
        /// `+`, `*`, `!` or exact (`=`).
        mode: char,
        /// Bits named.
        bits: u8,
    },
}

/// A parsed rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// 1-based line of the rule in its source.
    pub line: usize,
    /// Action.
    pub action: Action,
    /// Protocol of the header.
    pub proto: RuleProto,
    /// Source addresses.
    pub src: AddrSpec,
    /// Source ports.
    pub src_ports: PortSet,
    /// `<>`: the rule also applies with source and destination swapped.
    pub bidirectional: bool,
    /// Destination addresses.
    pub dst: AddrSpec,
    /// Destination ports.
    pub dst_ports: PortSet,
    /// `gid` (default 1).
    pub gid: u32,
    /// `sid`
    pub sid: u32,
    /// `rev`
    pub rev: u32,
    /// `msg`
    pub msg: String,
    /// `classtype`
    pub classtype: Option<String>,
    /// `priority` (overrides the classtype's priority in alerts).
    pub priority: Option<u32>,
    /// `service` names (metadata for matching: the header ports decide, see the module docs).
    pub services: Vec<String>,
    /// `flow`
    pub flow: FlowOpts,
    /// `flowbits`, in rule order.
    pub flowbits: Vec<FlowbitsOp>,
    /// Header field tests.
    pub header_tests: Vec<HeaderTest>,
    /// Detection options grouped by buffer, in rule order.
    pub segments: Vec<Segment>,
    /// Names of `byte_extract` variables, by index.
    pub vars: Vec<String>,
    /// Matching options present in the rule that the engine does not evaluate (the rule is then
    /// only "partially supported": see [`super::report`]).
    pub unsupported: Vec<String>,
    /// Options evaluated with a documented approximation (counted in the load report).
    pub approximations: Vec<String>,
}

impl Rule {
    /// Every content option of the rule, in order.
    pub fn contents(&self) -> impl Iterator<Item = &Content> {
        self.segments.iter().flat_map(|s| s.items.iter()).filter_map(|d| match d {
            Detect::Content(c) => Some(c),
            _ => None,
        })
    }

    /// The classtype's description (for alerts), if the rule has a default classtype.
    pub fn classification(&self) -> Option<&'static str> {
        self.classtype.as_deref().and_then(super::classtype::classification).map(|c| c.0)
    }

    /// The alert priority: the rule's `priority`, else its classtype's, else 0 (none given,
    /// as Snort prints it).
    pub fn priority(&self) -> u32 {
        self.priority
            .or_else(|| self.classtype.as_deref().and_then(super::classtype::classification).map(|c| c.1))
            .unwrap_or(0)
    }

    /// Whether the rule never reports (`flowbits:noalert`).
    pub fn noalert(&self) -> bool {
        self.flowbits.iter().any(|f| matches!(f, FlowbitsOp::NoAlert))
    }

    /// Whether every matching option is evaluated by the engine.
    pub fn fully_supported(&self) -> bool {
        self.unsupported.is_empty()
    }

    /// The content the prefilter uses: the one marked `fast_pattern`, else the longest
    /// non-negated content (the first of equal length). `None` if no content qualifies.
    pub fn fast_pattern(&self) -> Option<&Content> {
        let mut best: Option<&Content> = None;
        for c in self.contents().filter(|c| !c.negated && !c.pattern.is_empty()) {
            if c.fast_pattern {
                return Some(c);
            }
            if best.is_none_or(|b| c.pattern.len() > b.pattern.len()) {
                best = Some(c);
            }
        }
        best
    }
}
