//! Strict-mapping checks, as Elasticsearch applies them when it indexes a document into
//! an index created from a template with `"dynamic": "strict"`.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
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

/// A map by name with a fast hash: lookups happen for every field of every document.
pub type FastMap<V> = std::collections::HashMap<String, V, foldhash::fast::RandomState>;

/// An index's mapping, compiled once for checking documents: what each field may hold.
#[derive(Debug, Clone)]
pub enum Mapping {
    /// `"enabled": false`: kept in `_source`, never parsed.
    Ignored,
    /// An object's fields. `strict` is its `dynamic` setting (refuse unknown fields);
    /// `None` inherits the parent's.
    Object {
        strict: Option<bool>,
        properties: FastMap<Mapping>,
    },
    /// A value of a field type (`keyword`, `long`, …; other types accept anything).
    Leaf { type_name: String, kind: LeafKind },
}

/// The field types whose values are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    /// `keyword`, `text`, `wildcard`: anything but an object.
    Text,
    Long,
    Integer,
    Short,
    /// `double`, `float`.
    Float,
    Boolean,
    Date,
    /// Any other type: not checked.
    Unchecked,
}

impl Mapping {
    /// Compiles a root mapping (`{"dynamic":…, "properties":{…}}`); `None` when there is
    /// none at all (everything is dynamic).
    pub fn compile(root: &Value) -> Option<Mapping> {
        if root.get("properties").is_none() && root.get("dynamic").is_none() {
            return None;
        }
        Some(Mapping::object(root))
    }

    fn object(mapping: &Value) -> Mapping {
        let strict = mapping.get("dynamic").map(|d| d.as_str() == Some("strict"));
        let properties = mapping
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(name, field)| (name.clone(), Mapping::field(field)))
            .collect();
        Mapping::Object { strict, properties }
    }

    fn field(mapping: &Value) -> Mapping {
        let enabled = mapping.get("enabled");
        if enabled == Some(&Value::Bool(false)) || enabled.and_then(Value::as_str) == Some("false")
        {
            return Mapping::Ignored;
        }
        let type_name = mapping.get("type").and_then(Value::as_str);
        if mapping.get("properties").is_some() || matches!(type_name, Some("object" | "nested")) {
            return Mapping::object(mapping);
        }
        let type_name = type_name.unwrap_or("object");
        let kind = match type_name {
            "keyword" | "text" | "wildcard" => LeafKind::Text,
            "long" => LeafKind::Long,
            "integer" => LeafKind::Integer,
            "short" => LeafKind::Short,
            "double" | "float" => LeafKind::Float,
            "boolean" => LeafKind::Boolean,
            "date" => LeafKind::Date,
            _ => LeafKind::Unchecked,
        };
        Mapping::Leaf {
            type_name: type_name.to_owned(),
            kind,
        }
    }
}

/// Checks a document's JSON text against its index's mapping (`None`: anything goes)
/// while reading it, without building it: the server keeps the text, so a large bulk
/// costs no allocation per field.
pub fn check_document(text: &str, mapping: Option<&Mapping>) -> Result<(), DocumentError> {
    let failure = RefCell::new(None);
    let checked = match mapping {
        None => serde_json::from_str::<IgnoredAny>(text).map(|_| ()),
        Some(mapping) => {
            let seed = FieldSeed {
                mapping,
                path: None,
                strict: false,
                failure: &failure,
            };
            let mut reader = serde_json::Deserializer::from_str(text);
            seed.deserialize(&mut reader).and_then(|()| reader.end())
        }
    };
    match (checked, failure.into_inner()) {
        (_, Some(mapping_error)) => Err(DocumentError::Mapping(mapping_error)),
        (Err(e), None) => Err(DocumentError::Syntax(e.to_string())),
        (Ok(()), None) => Ok(()),
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

/// Writes an optional path (`None` is the document itself, shown as the given text).
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

/// A field name, borrowed from the document when it has no escapes (serde's own
/// `Cow<str>` always allocates: a `String` per field of every document).
pub(crate) struct FieldName<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for FieldName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> Visitor<'de> for Name {
            type Value = FieldName<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Borrowed(name)))
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
                Ok(FieldName(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// A value (the document, a field, an array item) against its mapping.
struct FieldSeed<'m, 'p> {
    mapping: &'m Mapping,
    path: Option<&'p FieldPath<'p>>,
    /// Whether the enclosing object refuses unknown fields (inherited by objects that
    /// do not say).
    strict: bool,
    failure: &'m RefCell<Option<MappingError>>,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.mapping {
            Mapping::Ignored => deserializer.deserialize_ignored_any(IgnoredAny).map(|_| ()),
            _ => deserializer.deserialize_any(self),
        }
    }
}

impl FieldSeed<'_, '_> {
    fn kind(&self) -> Option<LeafKind> {
        match self.mapping {
            Mapping::Leaf { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Ok when `fits`, otherwise the error Elasticsearch gives, showing `value`.
    fn check<E: de::Error>(&self, fits: bool, value: &dyn fmt::Display) -> Result<(), E> {
        if fits {
            return Ok(());
        }
        let path = Shown(self.path, "");
        let reason = match self.mapping {
            Mapping::Leaf { type_name, .. } => {
                format!("failed to parse field [{path}] of type [{type_name}]: {value}")
            }
            _ => format!(
                "object mapping for [{path}] tried to parse field [{path}] as object, but found a concrete value"
            ),
        };
        Err(fail(self.failure, ("document_parsing_exception", reason)))
    }

    /// Whether a number fits: `integer` is the number as an integer, if it is one (or a
    /// float cut to one).
    fn number_fits(&self, integer: Option<i64>) -> bool {
        match self.kind() {
            None | Some(LeafKind::Boolean) => false,
            Some(LeafKind::Integer) => integer.is_some_and(|n| i32::try_from(n).is_ok()),
            Some(LeafKind::Short) => integer.is_some_and(|n| i16::try_from(n).is_ok()),
            Some(LeafKind::Date) => integer.is_some(),
            Some(_) => true,
        }
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        let fits = matches!(
            self.kind(),
            Some(LeafKind::Text | LeafKind::Boolean | LeafKind::Unchecked)
        );
        self.check(fits, &value)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.check(self.number_fits(Some(value)), &value)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        // Above i64::MAX a long takes it as a float, like Elasticsearch's coercion.
        let integer = i64::try_from(value).unwrap_or(value as f64 as i64);
        self.check(self.number_fits(Some(integer)), &value)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        let fits = self.kind() != Some(LeafKind::Date) && self.number_fits(Some(value as i64));
        self.check(fits, &value)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        let fits = match self.kind() {
            None => false,
            Some(LeafKind::Long) => value.trim().parse::<i64>().is_ok(),
            Some(LeafKind::Integer) => value.trim().parse::<i32>().is_ok(),
            Some(LeafKind::Short) => value.trim().parse::<i16>().is_ok(),
            Some(LeafKind::Float) => value.parse::<f64>().is_ok(),
            Some(LeafKind::Boolean) => matches!(value, "true" | "false" | ""),
            Some(_) => true,
        };
        self.check(fits, &format_args!("\"{value}\""))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(FieldSeed { ..self })?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<(), A::Error> {
        let (strict, properties) = match self.mapping {
            Mapping::Object { strict, properties } => (strict.unwrap_or(self.strict), properties),
            _ => {
                while fields.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return self.check(self.kind() == Some(LeafKind::Unchecked), &"an object");
            }
        };
        while let Some(FieldName(name)) = fields.next_key::<FieldName<'de>>()? {
            let field_path = FieldPath {
                parent: self.path,
                name: &name,
            };
            match properties.get(name.as_ref()) {
                Some(mapping) => fields.next_value_seed(FieldSeed {
                    mapping,
                    path: Some(&field_path),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(document: Value, mapping: &Value) -> Result<(), MappingError> {
        match check_document(&document.to_string(), Mapping::compile(mapping).as_ref()) {
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
                    check_document(text, Mapping::compile(&mapping).as_ref()),
                    Err(DocumentError::Syntax(_))
                ),
                "{text}"
            );
            assert!(matches!(
                check_document(text, None),
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
