//! Compiling and evaluating any text must never panic, hang or overflow the stack.
//! Input: the expression, optionally followed by a NUL and a JSON object of variables.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rill_feel::{Environment, Expression, temporal};
use serde_json::{Map, Value};

fn default_variables() -> Map<String, Value> {
    let json = r#"{"x": 5, "y": -2.5, "s": "text", "b": true, "n": null,
        "big": 1e300, "list": [3, 1, 2, "a", null, [1]],
        "order": {"total": 1250.5, "id": "o-1", "items": [{"qty": 2, "price": 9.99}],
                  "placed": "2026-11-28T09:30:00Z"}}"#;
    serde_json::from_str(json).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (source, variables) = match text.split_once('\0') {
        Some((source, json)) => (
            source,
            serde_json::from_str::<Map<String, Value>>(json)
                .unwrap_or_else(|_| default_variables()),
        ),
        None => (text, default_variables()),
    };
    let _ = temporal::parse_duration(source);
    let _ = temporal::parse_date_time(source);
    let _ = temporal::parse_cycle(source);
    let Ok(expression) = Expression::compile(source) else {
        return;
    };
    let _ = expression.variable_names();
    for now in [0, i64::MAX, i64::MIN] {
        let _ = expression.evaluate(&variables, now);
    }
    let now = 1_796_032_800_000;
    let _ = expression.evaluate(&variables, now);
    // `random number()` and `uuid()` draw from the seed: extreme entry coordinates too.
    let _ = expression.evaluate(
        &variables,
        Environment::for_entry(now, u32::MAX, u64::MAX, u64::MAX),
    );
    let _ = expression.evaluate_condition(&variables, now);
    let _ = expression.evaluate_correlation_key(&variables, now);
    let _ = expression.evaluate_integer(&variables, now);
    if let Ok(duration) = expression.evaluate_duration(&variables, now) {
        let _ = temporal::add_duration(now, duration);
    }
    let _ = expression.evaluate_date_time(&variables, now);
    let _ = expression.evaluate_cycle(&variables, now);
});
