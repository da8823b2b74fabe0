//! The fuzzers' own seeds (`fuzz/seeds/bpmn_parse/`, `fuzz/seeds/dmn/`) parse, or are
//! rejected with the problems they were written to reach: a seed that stopped parsing
//! would no longer lead the fuzzer into the syntax it was written for.

use super::*;

/// `fuzz/seeds/<kind>`, found from the runner's `CARGO_MANIFEST_DIR` first: a test
/// binary built from another checkout of the same sources is reused by cargo, and its
/// compiled-in path may be gone.
fn seeds(kind: &str) -> String {
    let package = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
    format!("{package}/../fuzz/seeds/{kind}")
}

fn seed(name: &str) -> Result<Vec<ProcessModel>, DeployError> {
    let full = format!("{}/{name}", seeds("bpmn_parse"));
    let bytes = std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"));
    parse_bpmn(name, &bytes)
}

#[test]
fn every_seed_but_the_conditional_one_parses() {
    let directory = seeds("bpmn_parse");
    let mut parsed = 0;
    for entry in std::fs::read_dir(&directory).unwrap_or_else(|e| panic!("{directory}: {e}")) {
        let name = entry
            .unwrap_or_else(|e| panic!("{e}"))
            .file_name()
            .into_string()
            .unwrap_or_else(|name| panic!("{name:?} is not UTF-8"));
        if name == "conditional-events.bpmn" {
            continue;
        }
        let models = seed(&name).unwrap_or_else(|e| panic!("{name} should parse:\n{e}"));
        assert!(!models.is_empty(), "{name}");
        parsed += 1;
    }
    assert!(parsed >= 8, "only {parsed} seeds in {directory}");
}

#[test]
fn conditional_events_are_rejected_by_element() {
    let Err(error) = seed("conditional-events.bpmn") else {
        panic!("conditional events are not supported");
    };
    for (element, message) in [
        (
            "S",
            "a start event with a conditionalEventDefinition is not supported",
        ),
        (
            "C",
            "an intermediate catch event with a conditionalEventDefinition is not supported",
        ),
        (
            "B",
            "a boundary event with a conditionalEventDefinition is not supported",
        ),
    ] {
        assert!(
            error
                .problems
                .iter()
                .any(|p| p.element_id.as_deref() == Some(element) && p.message.contains(message)),
            "no problem '{message}' on '{element}' in:\n{error}"
        );
    }
}

fn dmn_seed(name: &str) -> Result<rill_engine::dmn::DecisionRequirements, DeployError> {
    let full = format!("{}/{name}", seeds("dmn"));
    let bytes = std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"));
    rill_engine::dmn::parse_dmn(name, &bytes)
}

#[test]
fn the_dmn_seeds_parse_and_evaluate() {
    // The variables of `fuzz_targets/dmn.rs`.
    let variables: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
        r#"{"season": "Winter", "guestCount": 8, "x": 5, "s": "text", "b": true,
            "list": [1, 2, 3], "order": {"total": 1250.5}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let evaluate = |name: &str, decision: &str| {
        let drg = dmn_seed(name).unwrap_or_else(|e| panic!("{name} should parse:\n{e}"));
        rill_engine::dmn::evaluate_decision(
            &drg,
            decision,
            &variables,
            rill_feel::Environment::at(0),
        )
        .unwrap_or_else(|e| panic!("{name} '{decision}': {e:?}"))
        .output
    };
    assert_eq!(
        evaluate("literal-chain.dmn", "total"),
        serde_json::json!(1125.45)
    );
    // Rule R1 only: `]1..5]` holds 5, `[1..5[` does not. 338 (4 December) + 11 months.
    assert_eq!(evaluate("collect-sum.dmn", "fees"), serde_json::json!(349));
    assert_eq!(
        evaluate("priority.dmn", "level"),
        serde_json::json!({"level": "high", "seats": null})
    );
    assert_eq!(
        evaluate("priority.dmn", "all"),
        serde_json::json!(["two", "many"])
    );
}

#[test]
fn the_dmn_requirement_cycle_seed_is_rejected() {
    let Err(error) = dmn_seed("requirement-cycle.dmn") else {
        panic!("a requirement cycle must be rejected");
    };
    assert!(
        error.mentions("the required decision '#missing' is not a decision of this model"),
        "{error}"
    );
    assert!(
        error.mentions("the decision requires 'a', which requires it in turn"),
        "{error}"
    );
}
