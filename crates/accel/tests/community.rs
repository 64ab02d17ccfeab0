//! Loads the Snort 3 community rules and checks the load report and the synthesized attacks.

use std::path::Path;

use accel::ids::synth::attack_for_rule;
use accel::ids::{FlowBits, Matches, RuleSet, Scratch, Vars};

const RULES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/ids/snort3-community.rules");

fn load() -> (RuleSet, accel::ids::LoadReport) {
    let p = Path::new(RULES);
    if !p.exists() {
        panic!("{RULES} is missing: the community rules belong in data/ids of the repository");
    }
    RuleSet::load(p, &Vars::default()).expect("the community rules file loads")
}

#[test]
fn community_rules_load_with_sensible_counts() {
    let (set, report) = load();
    println!("{report}");
    assert_eq!(report.total, 4004);
    assert_eq!(report.loaded(), set.len());
    assert_eq!(report.fully_supported + report.partial + report.skipped, report.total);
    assert!(report.fully_supported >= 3400, "only {} fully supported", report.fully_supported);
    assert!(report.skipped <= 10, "{} skipped: {:?}", report.skipped, report.errors);
    assert!(report.with_fast_pattern >= 3800);
    assert_eq!(report.per_rule.len(), report.partial);
    for (sid, why) in &report.per_rule {
        assert!(!why.is_empty(), "partial rule {sid} without a reason");
        assert!(!set.is_fully_supported(*sid));
    }
}

#[test]
fn every_synthesizable_rule_matches_its_attack() {
    let (set, _) = load();
    let mut scratch = Scratch::new();
    let mut m = Matches::default();
    let (mut tried, mut with_content, mut failed) = (0usize, 0usize, Vec::new());
    for rule in set.rules() {
        if !rule.fully_supported() || rule.contents().next().is_none() {
            continue;
        }
        with_content += 1;
        // Rules that need a flowbit set by another rule, or never alert, are checked elsewhere.
        if rule.noalert() || rule.flowbits.iter().any(|f| matches!(f, accel::ids::rule::FlowbitsOp::IsSet { .. })) {
            continue;
        }
        let Some(a) = attack_for_rule(rule) else { continue };
        tried += 1;
        let mut flow = FlowBits::new();
        set.match_packet(&a.meta, &a.hdr, &a.payload, &mut flow, &mut scratch, &mut m);
        if !m.confirmed.contains(&rule.sid) {
            failed.push(rule.sid);
        }
    }
    println!("synthesized {tried} of {with_content} fully supported rules with content; {} failed", failed.len());
    for sid in failed.iter().take(10) {
        let r = set.rule(*sid).unwrap();
        let a = attack_for_rule(r).unwrap();
        println!("sid {sid}: {:?}\n  payload {:?}", r.segments, String::from_utf8_lossy(&a.payload));
    }
    assert!(
        failed.is_empty(),
        "{} rules did not match their own attack: {:?}",
        failed.len(),
        &failed[..failed.len().min(50)]
    );
    assert!(tried * 100 >= with_content * 55, "synthesized only {tried} of {with_content}");
}
