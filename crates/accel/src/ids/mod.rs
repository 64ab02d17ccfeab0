//! Snort 3 rule IDS engine in the Pigasus style.
//!
//! - [`parse`] reads rule text into the [`rule`] AST, expanding [`vars`].
//! - [`engine`] compiles a [`RuleSet`]: a fast-pattern [`prefilter`] (one multi-string
//!   matcher over every rule's fast pattern, plus port groups for rules without one), then,
//!   as Pigasus does, the port-group stage ([`gate`]: protocol, addresses, ports and flow of
//!   each candidate, once per distinct header per packet) and the non-fast-pattern filter
//!   ([`nfp`]: the rule's other contents present in the payload), then full verification of
//!   what is left ([`detect`], [`content`], [`pcre`], [`bytes`], with HTTP sticky buffers
//!   from [`http`]). Both filters are exact necessary conditions: alerts are the same with
//!   them off ([`RuleSet::set_filters`]).
//! - [`report`] says what loaded and what is unsupported, [`support`] which rules are partial
//!   and why (and the strict check); [`classtype`] holds Snort's default classifications;
//!   [`reload`] swaps rule sets at run time; [`synth`] builds payloads that trigger a given rule.
//! - [`stream`] keeps the fast patterns of a growing stream (each new piece scanned once), so
//!   a reassembling caller evaluates the whole stream with [`RuleSet::match_stream`] without
//!   scanning it again at every segment.
//!
//! # Cost per packet
//!
//! Instructions per packet counted by callgrind on the benchmark's trace (the first 5,000
//! packets of `ids_bench --mb 10`: 64..1460 bytes, half HTTP-like, half random, 1% planted
//! attacks; TCP to port 80; the community rules), the machine's load does not change them:
//!
//! ```text
//! cargo build --release -p accel --example ids_bench
//! valgrind --tool=callgrind --toggle-collect='*engine_pass*' target/release/examples/ids_bench --mb 10 --cost 5000
//! ```
//!
//! | stage (inclusive, per packet) | before the filters | with the filters |
//! | --- | --- | --- |
//! | whole engine (`match_payload`) | 62,594 | 50,099 |
//! | prefilter scan and candidate collection | 40,658 | 42,173 |
//! | sorting the candidates | 9,335 | 194 |
//! | address checks of candidates' headers | 3,408 | ~0 (memoised) |
//! | non-fast-pattern filter | — | 558 |
//! | HTTP parsing and normalization | 2,367 | 2,363 |
//! | detection options (`detect`) | 1,209 | 1,192 |
//! | the prefilter alone (`prefilter_pass`), for reference | 38,652 | 38,652 |
//!
//! The engine costs 1.30x its prefilter alone (1.62x before): the filters halved the work
//! past the prefilter, chiefly by queueing fewer candidates (less to sort, no header check
//! of rules whose port group cannot match); the candidates are sorted as plain integers.
//! Wall clock, one core, `ids_bench --features hyperscan --mb 30 --reps 9` (each figure the
//! median of 9 alternated runs; four such runs on a shared, busy machine): the engine runs
//! at 0.73-0.99x Hyperscan's prefilter alone on the same patterns and traffic (0.87x the
//! median of the four), 0.64-0.81x with the filters off in the same runs (filters on / off:
//! 1.06-1.45x); our prefilter alone at 1.02-1.37x Hyperscan. The wall-clock gain is smaller
//! than the instruction count's: the work left past the prefilter is memory-bound (rule
//! data, HTTP buffers), and the machine's load moves every ratio by +-20%.
//!
//! Then each fast pattern's rules were grouped by header ([`gate::PatternGroups`]: one
//! port-group verdict per group instead of one per rule): whole engine 50,149 -> 49,688
//! instructions per packet, prefilter scan and candidate collection 42,170 -> 41,682 (50,149
//! is the count of the build just before the change; the table's 50,099 is an earlier
//! build's). Wall clock, same command, three alternated pairs of runs of the builds before
//! and after the grouping in one session: the engine at 1.01-1.03x and 1.00-1.02x
//! Hyperscan's prefilter alone (no difference beyond the noise), our prefilter alone at
//! 1.32-1.42x Hyperscan; over the session's twelve runs the engine was at 0.89-1.03x (median
//! 1.02x) — the earlier 0.87x median was taken on a busier machine.
//!
//! Streams: the middlebox's IDS unit used to scan the whole reassembled direction again at
//! every segment; with [`stream`] each segment's bytes are scanned once and
//! [`RuleSet::match_stream`] takes the stream's pattern set: `middlebox_cost ids` 29,458 ->
//! 23,217 instructions per frame (the table in the middlebox crate docs).

pub mod bytes;
pub mod classtype;
pub mod content;
pub mod detect;
pub mod engine;
pub mod gate;
pub mod http;
pub mod memo;
pub mod mpm;
pub mod nfp;
pub mod parse;
pub mod pcre;
pub mod prefilter;
pub mod reload;
pub mod report;
pub mod rule;
pub mod stream;
pub mod support;
pub mod synth;
pub mod vars;

pub use engine::{fast_patterns, FlowBits, HeaderFields, Matches, PacketMeta, Proto, RuleSet, Scratch};
pub use reload::RuleSetHandle;
pub use report::LoadReport;
pub use rule::Rule;
pub use stream::StreamPatterns;
pub use vars::Vars;
