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
pub mod support;
pub mod synth;
pub mod vars;

pub use engine::{fast_patterns, FlowBits, HeaderFields, Matches, PacketMeta, Proto, RuleSet, Scratch};
pub use reload::RuleSetHandle;
pub use report::LoadReport;
pub use rule::Rule;
pub use vars::Vars;
