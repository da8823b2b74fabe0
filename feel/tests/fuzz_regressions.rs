//! Replays every input under `fuzz/seeds/feel/` (the fuzzer's starting points and each
//! crash it found, named `crash-*`) through the same calls as the fuzz target, so a
//! fixed crash stays fixed without nightly or cargo-fuzz.

use std::path::Path;

use rill_feel::{Environment, Expression, temporal};
use serde_json::{Map, Value};

fn replay(text: &str) {
    let variables: Map<String, Value> = serde_json::from_str(
        r#"{"x": 5, "s": "text", "list": [3, 1, null], "order": {"total": 10}}"#,
    )
    .unwrap_or_default();
    let _ = temporal::parse_duration(text);
    let _ = temporal::parse_date_time(text);
    let _ = temporal::parse_cycle(text);
    if let Ok(expression) = Expression::compile(text) {
        for now in [0, 1_796_032_800_000, i64::MAX, i64::MIN] {
            let _ = expression.evaluate(&variables, now);
            let _ = expression.evaluate_condition(&variables, now);
            let _ = expression.evaluate_duration(&variables, now);
            let _ = expression.evaluate_date_time(&variables, now);
        }
        let _ = expression.evaluate(&variables, Environment::for_entry(0, u32::MAX, u64::MAX, 1));
    }
}

#[test]
fn fuzz_inputs_do_not_panic() {
    // The runner's variable first: a test binary built from another checkout of the
    // same sources is reused by cargo, and its compiled-in path may be gone.
    let package = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
    let directory = Path::new(&package).join("../fuzz/seeds/feel");
    let entries = std::fs::read_dir(&directory)
        .unwrap_or_else(|e| panic!("reading {}: {e}", directory.display()));
    let mut replayed = 0;
    let mut crashes = 0;
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let text = String::from_utf8_lossy(&bytes);
        let source = text.split('\0').next().unwrap_or_default();
        replay(source);
        replayed += 1;
        if path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("crash-"))
        {
            crashes += 1;
        }
    }
    assert!(
        replayed >= 24,
        "only {replayed} inputs in {}",
        directory.display()
    );
    assert!(
        crashes >= 1,
        "the crash inputs are missing from {}",
        directory.display()
    );
}
