//! Arbitrary bytes into the DMN parser, and every decision it accepts evaluated against
//! a few variables: neither may panic, hang or overflow the stack.
//!
//! Run from `fuzz/`: `cargo +nightly fuzz run dmn corpus/dmn ../engine/tests/fixtures/dmn
//!       -- -dict=dmn.dict` (seeds: the fixture decisions).

#![no_main]

use libfuzzer_sys::fuzz_target;
use rill_engine::dmn::{evaluate_decision, parse_dmn};
use rill_feel::Environment;
use serde_json::{Map, Value};

fn variables() -> Map<String, Value> {
    let json = r#"{"season": "Winter", "guestCount": 8, "x": 5, "s": "text",
        "b": true, "n": null, "list": [1, 2, 3], "order": {"total": 1250.5}}"#;
    serde_json::from_str(json).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let drg = match parse_dmn("fuzz.dmn", data) {
        Ok(drg) => drg,
        Err(error) => {
            assert!(!error.problems.is_empty());
            let _ = error.to_string();
            return;
        }
    };
    let variables = variables();
    for decision in &drg.decisions {
        assert!(drg.decision(&decision.id).is_some());
        let _ = evaluate_decision(&drg, &decision.id, &variables, Environment::at(0));
    }
});
