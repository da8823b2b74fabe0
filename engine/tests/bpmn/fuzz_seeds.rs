//! The BPMN fuzzer's own seeds (`fuzz/seeds/bpmn_parse/`) parse, or are rejected with
//! the problems they were written to reach, so a seed that rots stops steering the
//! fuzzer into the syntax it was written for.

use super::*;

fn seed(name: &str) -> Result<Vec<ProcessModel>, DeployError> {
    let full = format!("{}/../fuzz/seeds/bpmn_parse/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&full).unwrap_or_else(|e| panic!("cannot read {full}: {e}"));
    parse_bpmn(name, &bytes)
}

#[test]
fn every_seed_but_the_conditional_one_parses() {
    let directory = format!("{}/../fuzz/seeds/bpmn_parse", env!("CARGO_MANIFEST_DIR"));
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
        ("S", "a start event with a conditionalEventDefinition is not supported"),
        ("C", "an intermediate catch event with a conditionalEventDefinition is not supported"),
        ("B", "a boundary event with a conditionalEventDefinition is not supported"),
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
