//! Strict-mapping checks, as Elasticsearch applies them when it indexes a document into
//! an index created from a template with `"dynamic": "strict"`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

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

/// Why a document was not indexed: its text is not JSON, or it does not fit.
#[derive(Debug)]
pub enum DocumentError {
    Syntax(String),
    Mapping(MappingError),
}

/// Checks a document's JSON text against a root mapping (`{"dynamic":…,
/// "properties":{…}}`) while reading it, without building it: the server keeps the text,
/// so a large bulk costs no allocation per field.
pub fn check_document(text: &str, mapping: &Value) -> Result<(), DocumentError> {
    let failure = RefCell::new(None);
    let checked = if mapping.get("properties").is_none() && mapping.get("dynamic").is_none() {
        // No mapping at all: everything is dynamic.
        serde_json::from_str::<IgnoredAny>(text).map(|_| ())
    } else {
        let seed = ObjectSeed {
            mapping,
            path: None,
            inherited_strict: false,
            failure: &failure,
        };
        let mut reader = serde_json::Deserializer::from_str(text);
        seed.deserialize(&mut reader).and_then(|()| reader.end())
    };
    match (checked, failure.into_inner()) {
        (_, Some(mapping_error)) => Err(DocumentError::Mapping(mapping_error)),
        (Err(e), None) => Err(DocumentError::Syntax(e.to_string())),
        (Ok(()), None) => Ok(()),
    }
}

fn is_strict(mapping: &Value, inherited: bool) -> bool {
    match mapping.get("dynamic") {
        Some(Value::String(s)) => s == "strict",
        Some(_) => false,
        None => inherited,
    }
}

/// A field's dotted path, kept as a chain of borrowed names and written out only for an
/// error (building it for every field was the checker's main allocation).
#[derive(Clone, Copy)]
struct FieldPath<'p> {
    parent: Option<&'p FieldPath<'p>>,
    name: &'p str,
}

impl fmt::Display for FieldPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            write!(f, "{parent}.")?;
        }
        f.write_str(self.name)
    }
}

/// Writes an optional path (the root is `None`).
struct Shown<'p>(Option<&'p FieldPath<'p>>, &'static str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => path.fmt(f),
            None => f.write_str(self.1),
        }
    }
}

/// Records a mapping failure and stops reading (the error text itself is not used).
fn fail<E: de::Error>(failure: &RefCell<Option<MappingError>>, error: MappingError) -> E {
    failure.borrow_mut().get_or_insert(error);
    E::custom("mapping")
}

/// A value where the mapping has an object (`properties`, `object`, `nested`).
struct ObjectSeed<'m, 'p> {
    mapping: &'m Value,
    path: Option<&'p FieldPath<'p>>,
    inherited_strict: bool,
    failure: &'m RefCell<Option<MappingError>>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ObjectSeed<'_, '_> {
    fn concrete<E: de::Error>(&self) -> E {
        let path = Shown(self.path, "");
        fail(
            self.failure,
            (
                "document_parsing_exception",
                format!(
                    "object mapping for [{path}] tried to parse field [{path}] as object, but found a concrete value"
                ),
            ),
        )
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(self.concrete())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(self.concrete())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(self.concrete())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(self.concrete())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(self.concrete())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items
            .next_element_seed(ObjectSeed {
                mapping: self.mapping,
                path: self.path,
                inherited_strict: self.inherited_strict,
                failure: self.failure,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<(), A::Error> {
        let strict = is_strict(self.mapping, self.inherited_strict);
        let properties = self.mapping.get("properties").and_then(Value::as_object);
        while let Some(name) = fields.next_key::<std::borrow::Cow<'de, str>>()? {
            let field_path = FieldPath {
                parent: self.path,
                name: &name,
            };
            match properties.and_then(|p| p.get(name.as_ref())) {
                Some(field_mapping) => fields.next_value_seed(FieldSeed {
                    mapping: field_mapping,
                    path: &field_path,
                    strict,
                    failure: self.failure,
                })?,
                None if strict => {
                    let within = Shown(self.path, "_doc");
                    return Err(fail(
                        self.failure,
                        (
                            "strict_dynamic_mapping_exception",
                            format!(
                                "mapping set to strict, dynamic introduction of [{name}] within [{within}] is not allowed"
                            ),
                        ),
                    ));
                }
                None => {
                    fields.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A field's value against the field's mapping (`type`, `enabled`, `properties`).
struct FieldSeed<'m, 'p> {
    mapping: &'m Value,
    path: &'p FieldPath<'p>,
    strict: bool,
    failure: &'m RefCell<Option<MappingError>>,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let enabled = self.mapping.get("enabled");
        if enabled == Some(&Value::Bool(false)) || enabled.and_then(Value::as_str) == Some("false")
        {
            // Kept in _source, never parsed.
            return deserializer.deserialize_ignored_any(IgnoredAny).map(|_| ());
        }
        let field_type = self.mapping.get("type").and_then(Value::as_str);
        if self.mapping.get("properties").is_some()
            || matches!(field_type, Some("object" | "nested"))
        {
            return deserializer.deserialize_any(ObjectSeed {
                mapping: self.mapping,
                path: Some(self.path),
                inherited_strict: self.strict,
                failure: self.failure,
            });
        }
        deserializer.deserialize_any(self)
    }
}

impl FieldSeed<'_, '_> {
    fn field_type(&self) -> &str {
        self.mapping
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("object")
    }

    /// Ok when `fits`, otherwise the error Elasticsearch gives, showing `value`.
    fn check<E: de::Error>(&self, fits: bool, value: &dyn fmt::Display) -> Result<(), E> {
        if fits {
            return Ok(());
        }
        let (path, field_type) = (&self.path, self.field_type());
        Err(fail(
            self.failure,
            (
                "document_parsing_exception",
                format!("failed to parse field [{path}] of type [{field_type}]: {value}"),
            ),
        ))
    }

    fn number_fits(&self, integer: Option<i64>) -> bool {
        match self.field_type() {
            "integer" => integer.is_some_and(|n| i32::try_from(n).is_ok()),
            "short" => integer.is_some_and(|n| i16::try_from(n).is_ok()),
            "boolean" => false,
            "date" => integer.is_some(),
            _ => true,
        }
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a value of type {}", self.field_type())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        let fits = matches!(
            self.field_type(),
            "keyword" | "text" | "wildcard" | "boolean"
        ) || !is_known_type(self.field_type());
        self.check(fits, &value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.check(self.number_fits(Some(value)), &value)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        // Above i64::MAX a long takes it as a float, like Elasticsearch's coercion.
        let integer = i64::try_from(value).ok().or(Some(value as f64 as i64));
        self.check(self.number_fits(integer), &value)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        let fits = match self.field_type() {
            "date" => false,
            _ => self.number_fits(Some(value as i64)),
        };
        self.check(fits, &value)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        let fits = match self.field_type() {
            "long" => value.trim().parse::<i64>().is_ok(),
            "integer" => value.trim().parse::<i32>().is_ok(),
            "short" => value.trim().parse::<i16>().is_ok(),
            "double" | "float" => value.parse::<f64>().is_ok(),
            "boolean" => matches!(value, "true" | "false" | ""),
            _ => true,
        };
        self.check(fits, &format_args!("\"{value}\""))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items
            .next_element_seed(FieldSeed {
                mapping: self.mapping,
                path: self.path,
                strict: self.strict,
                failure: self.failure,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<(), A::Error> {
        while fields.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        let fits = !is_known_type(self.field_type());
        self.check(fits, &"an object")
    }
}

/// The field types whose values are checked; any other accepts anything.
fn is_known_type(field_type: &str) -> bool {
    matches!(
        field_type,
        "keyword"
            | "text"
            | "wildcard"
            | "long"
            | "integer"
            | "short"
            | "double"
            | "float"
            | "boolean"
            | "date"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(document: Value, mapping: &Value) -> Result<(), MappingError> {
        match check_document(&document.to_string(), mapping) {
            Ok(()) => Ok(()),
            Err(DocumentError::Mapping(e)) => Err(e),
            Err(DocumentError::Syntax(e)) => panic!("syntax error in {document}: {e}"),
        }
    }

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
        assert!(check(ok, &mapping).is_ok());
        let unknown = json!({"key": 5, "value": {"nmae": "a"}});
        let (kind, reason) = check(unknown, &mapping).unwrap_err();
        assert_eq!(kind, "strict_dynamic_mapping_exception");
        assert!(reason.contains("[nmae] within [value]"), "{reason}");
        let (kind, reason) = check(json!({"key": "five"}), &mapping).unwrap_err();
        assert_eq!(kind, "document_parsing_exception");
        assert!(reason.contains("[key] of type [long]"), "{reason}");
        let not_object = json!({"value": 3});
        assert!(check(not_object, &mapping).is_err());
        assert!(check(json!({"anything": 1}), &json!({})).is_ok());
    }

    #[test]
    fn values_are_coerced_like_elasticsearch_does() {
        let mapping = json!({"dynamic": "strict", "properties": {
            "long": {"type": "long"}, "int": {"type": "integer"}, "short": {"type": "short"},
            "double": {"type": "double"}, "flag": {"type": "boolean"}, "date": {"type": "date"},
            "word": {"type": "keyword"}, "any": {"type": "geo_point"},
            "items": {"properties": {"n": {"type": "long"}}}
        }});
        for fits in [
            json!({"long": "12", "int": 7, "short": "-3", "double": "1.5", "flag": "true"}),
            json!({"long": 1.9, "double": 2, "date": 1_700_000_000_000u64, "int": null}),
            json!({"word": 5, "flag": false, "any": {"lat": 1, "lon": 2}, "date": "2026-12-01"}),
            json!({"items": [{"n": 1}, {"n": "2"}], "long": [1, 2, null], "word": true}),
        ] {
            assert!(check(fits.clone(), &mapping).is_ok(), "{fits}");
        }
        for (misfit, field) in [
            (json!({"int": 3_000_000_000u64}), "[int]"),
            (json!({"short": 70000}), "[short]"),
            (json!({"flag": 1}), "[flag]"),
            (json!({"date": 1.5}), "[date]"),
            (json!({"double": "x"}), "[double]"),
            (json!({"word": {"a": 1}}), "[word]"),
            (json!({"items": [{"n": "two"}]}), "[items.n]"),
            (json!({"items": 4}), "[items]"),
        ] {
            let (kind, reason) = check(misfit.clone(), &mapping).unwrap_err();
            assert_eq!(kind, "document_parsing_exception", "{misfit}");
            assert!(reason.contains(field), "{misfit}: {reason}");
        }
    }

    #[test]
    fn text_that_is_not_json_is_a_syntax_error() {
        let mapping = json!({"dynamic": "strict", "properties": {"key": {"type": "long"}}});
        for text in [r#"{"key": 1"#, r#"{"key": 1} x"#, "nope"] {
            assert!(
                matches!(
                    check_document(text, &mapping),
                    Err(DocumentError::Syntax(_))
                ),
                "{text}"
            );
            assert!(matches!(
                check_document(text, &json!({})),
                Err(DocumentError::Syntax(_))
            ));
        }
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
