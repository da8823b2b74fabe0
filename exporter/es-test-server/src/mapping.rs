//! Strict-mapping checks, as Elasticsearch applies them when it indexes a document into
//! an index created from a template with `"dynamic": "strict"`.

use serde_json::{Map, Value};

/// Why a document does not fit its index's mapping: (error type, reason).
pub type MappingError = (&'static str, String);

/// Deep-merges `overlay` into `base` (later templates win, objects merge).
pub fn merge(base: &mut Value, overlay: &Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                match base.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, overlay) => *base = overlay.clone(),
    }
}

/// Checks `document` against a root mapping (`{"dynamic":…, "properties":{…}}`).
pub fn check_document(document: &Value, mapping: &Value) -> Result<(), MappingError> {
    if mapping.get("properties").is_none() && mapping.get("dynamic").is_none() {
        return Ok(()); // no mapping at all: everything is dynamic
    }
    check_object(document, mapping, "", false)
}

fn is_strict(mapping: &Value, inherited: bool) -> bool {
    match mapping.get("dynamic") {
        Some(Value::String(s)) => s == "strict",
        Some(_) => false,
        None => inherited,
    }
}

fn check_object(
    value: &Value,
    mapping: &Value,
    path: &str,
    inherited_strict: bool,
) -> Result<(), MappingError> {
    let strict = is_strict(mapping, inherited_strict);
    let empty = Map::new();
    let properties = mapping
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    match value {
        Value::Null => Ok(()),
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| check_object(item, mapping, path, inherited_strict)),
        Value::Object(fields) => {
            for (name, field_value) in fields {
                let field_path = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                match properties.get(name) {
                    Some(field_mapping) => {
                        check_field(field_value, field_mapping, &field_path, strict)?
                    }
                    None if strict => {
                        return Err((
                            "strict_dynamic_mapping_exception",
                            format!(
                                "mapping set to strict, dynamic introduction of [{name}] within [{}] is not allowed",
                                if path.is_empty() { "_doc" } else { path }
                            ),
                        ));
                    }
                    None => {}
                }
            }
            Ok(())
        }
        _ => Err((
            "document_parsing_exception",
            format!(
                "object mapping for [{path}] tried to parse field [{path}] as object, but found a concrete value"
            ),
        )),
    }
}

fn check_field(
    value: &Value,
    mapping: &Value,
    path: &str,
    strict: bool,
) -> Result<(), MappingError> {
    if mapping.get("enabled") == Some(&Value::Bool(false))
        || mapping.get("enabled") == Some(&Value::String("false".into()))
    {
        return Ok(()); // kept in _source, never parsed
    }
    let field_type = mapping.get("type").and_then(Value::as_str);
    if mapping.get("properties").is_some() || matches!(field_type, Some("object" | "nested")) {
        return check_object(value, mapping, path, strict);
    }
    if let Value::Array(items) = value {
        return items
            .iter()
            .try_for_each(|item| check_field(item, mapping, path, strict));
    }
    if value.is_null() {
        return Ok(());
    }
    let fits = match field_type.unwrap_or("object") {
        "keyword" | "text" | "wildcard" => !value.is_object(),
        "long" => as_integer(value).is_some(),
        "integer" => as_integer(value).is_some_and(|n| i32::try_from(n).is_ok()),
        "short" => as_integer(value).is_some_and(|n| i16::try_from(n).is_ok()),
        "double" | "float" => {
            value.is_number() || value.as_str().is_some_and(|s| s.parse::<f64>().is_ok())
        }
        "boolean" => {
            matches!(value, Value::Bool(_)) || matches!(value.as_str(), Some("true" | "false" | ""))
        }
        "date" => value.is_i64() || value.is_u64() || value.is_string(),
        _ => true,
    };
    if fits {
        Ok(())
    } else {
        Err((
            "document_parsing_exception",
            format!(
                "failed to parse field [{path}] of type [{}]: {value}",
                field_type.unwrap_or("object")
            ),
        ))
    }
}

fn as_integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strict_mapping_refuses_unknown_fields_and_wrong_types() {
        let mapping = json!({"dynamic": "strict", "properties": {
            "key": {"type": "long"},
            "value": {"dynamic": "strict", "properties": {
                "name": {"type": "keyword"},
                "variables": {"enabled": false},
                "retries": {"type": "integer"}
            }}
        }});
        let ok = json!({"key": 5, "value": {"name": "a", "variables": {"x": [1]}, "retries": 3}});
        assert!(check_document(&ok, &mapping).is_ok());
        let unknown = json!({"key": 5, "value": {"nmae": "a"}});
        let (kind, reason) = check_document(&unknown, &mapping).unwrap_err();
        assert_eq!(kind, "strict_dynamic_mapping_exception");
        assert!(reason.contains("[nmae] within [value]"), "{reason}");
        let wrong = json!({"key": "five"});
        assert_eq!(
            check_document(&wrong, &mapping).unwrap_err().0,
            "document_parsing_exception"
        );
        let not_object = json!({"value": 3});
        assert!(check_document(&not_object, &mapping).is_err());
        assert!(check_document(&json!({"anything": 1}), &json!({})).is_ok());
    }

    #[test]
    fn merge_is_deep() {
        let mut base = json!({"mappings": {"properties": {"a": {"type": "long"}}}});
        merge(
            &mut base,
            &json!({"mappings": {"properties": {"b": {"type": "keyword"}}}}),
        );
        assert_eq!(base["mappings"]["properties"]["a"]["type"], "long");
        assert_eq!(base["mappings"]["properties"]["b"]["type"], "keyword");
    }
}
