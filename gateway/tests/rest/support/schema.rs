//! A small JSON-schema checker for the response-shape tests: the subset the API's
//! result schemas use (`type`, `properties`, `required`, `enum`, `nullable`, `items`,
//! `format`), written here so the schemas in `shapes.rs` can say what Camunda 8.8's spec
//! says of each field. Properties a schema does not name are allowed, as in the spec.

use serde_json::Value;

/// Every way `value` breaks `schema`, each naming the path (`$.items[0].state`).
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(schema, value, "$", &mut found);
    found
}

/// Fails the test with every violation listed.
#[track_caller]
pub fn assert_matches(what: &str, schema: &Value, value: &Value) {
    let found = violations(schema, value);
    assert!(
        found.is_empty(),
        "{what} breaks its schema:\n  {}\nin {value:#}",
        found.join("\n  ")
    );
}

fn check(schema: &Value, value: &Value, path: &str, found: &mut Vec<String>) {
    if value.is_null() {
        if schema["nullable"] != Value::Bool(true) {
            found.push(format!("{path}: null, but the field is not nullable"));
        }
        return;
    }
    let expected = schema["type"].as_str().unwrap_or("any");
    let type_ok = match expected {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    };
    if !type_ok {
        found.push(format!("{path}: expected {expected}, got {value}"));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        found.push(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let (Some(format), Some(text)) = (schema["format"].as_str(), value.as_str())
        && let Some(problem) = format_problem(format, text)
    {
        found.push(format!("{path}: {problem}"));
    }
    if let Some(required) = schema["required"].as_array() {
        for name in required.iter().filter_map(Value::as_str) {
            if value.get(name).is_none() {
                found.push(format!("{path}: the required field '{name}' is missing"));
            }
        }
    }
    if let (Some(properties), Some(object)) = (schema["properties"].as_object(), value.as_object())
    {
        for (name, field) in object {
            if let Some(property) = properties.get(name) {
                check(property, field, &format!("{path}.{name}"), found);
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (i, item) in array.iter().enumerate() {
            check(items, item, &format!("{path}[{i}]"), found);
        }
    }
}

fn format_problem(format: &str, text: &str) -> Option<String> {
    let ok = match format {
        // Keys are 64-bit integers written as strings.
        "key" => text.parse::<i64>().is_ok(),
        "date-time" => humantime::parse_rfc3339_weak(text).is_ok() && text.ends_with('Z'),
        // Cursors: padded standard base64, as the spec's pattern has it.
        "base64" => {
            use base64::Engine as _;
            text.len() >= 2
                && base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .is_ok()
        }
        _ => true,
    };
    (!ok).then(|| format!("'{text}' is not a {format}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::violations;

    #[test]
    fn the_checker_finds_what_breaks_a_schema() {
        let schema = json!({
            "type": "object",
            "required": ["key", "state"],
            "properties": {
                "key": {"type": "string", "format": "key"},
                "state": {"type": "string", "enum": ["ACTIVE"]},
                "end": {"type": "string", "format": "date-time"},
                "tag": {"type": "string", "nullable": true},
                "list": {"type": "array", "items": {"type": "integer"}}
            }
        });
        let good = json!({"key": "12", "state": "ACTIVE", "end": "2025-01-02T03:04:05.006Z",
                          "tag": null, "list": [1, 2], "extra": null});
        assert!(
            violations(&schema, &good).is_empty(),
            "{:?}",
            violations(&schema, &good)
        );
        let bad = json!({"key": "x1", "state": "DONE", "end": null, "list": [1, "2"]});
        let found = violations(&schema, &bad);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found.iter().any(|v| v.contains("$.end: null")), "{found:?}");
        assert!(found.iter().any(|v| v.contains("$.list[1]")), "{found:?}");
        let missing = violations(&schema, &json!({"key": "1"}));
        assert_eq!(missing, vec!["$: the required field 'state' is missing"]);
    }
}
