//! JSON documents inside records and commands.
//!
//! A [`JsonValue`] is kept as its compact JSON text, checked once where it enters (a
//! client request, a value the engine computes). Variables pass through the gateway, the
//! raft log, the engine's state, job activations and the exporters as that text: only
//! the code that looks inside a document parses it. Binary formats (bincode) carry the
//! text as a string; human-readable ones (the REST API, the exporters' documents) embed
//! it as JSON.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};

use base64::Engine as _;
use serde::de::{Error as _, MapAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// Deepest nesting of arrays and objects a document may have. Below serde_json's own
/// recursion limit, so every stored document can always be parsed again.
pub const MAX_JSON_DEPTH: usize = 100;

/// serde_json's marker for a value written verbatim (what its `RawValue` serializes as).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Why a JSON text was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum JsonTextError {
    #[error("not valid JSON: {0}")]
    Syntax(#[from] serde_json::Error),
    #[error("nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects")]
    TooDeep,
}

/// A JSON document as compact text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct JsonValue(Arc<str>);

static EMPTY_OBJECT: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("{}"));
static NULL: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("null"));

impl JsonValue {
    /// An empty JSON object, the usual "no variables".
    pub fn empty_object() -> JsonValue {
        JsonValue(EMPTY_OBJECT.clone())
    }

    pub fn null() -> JsonValue {
        JsonValue(NULL.clone())
    }

    /// Checks JSON text (syntax and depth) and keeps it without insignificant whitespace.
    pub fn parse(text: &str) -> Result<JsonValue, JsonTextError> {
        serde_json::from_str::<serde::de::IgnoredAny>(text)?;
        Ok(JsonValue(Arc::from(compact(text)?)))
    }

    /// [`Self::parse`] for text serde_json has already read as JSON: only the depth is
    /// checked and the whitespace dropped.
    pub fn from_raw(raw: &RawValue) -> Result<JsonValue, JsonTextError> {
        Ok(JsonValue(Arc::from(compact(raw.get())?)))
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parsed value. The text was checked when it entered, so this only fails for
    /// text that was corrupted in a binary encoding; such text reads as `null`.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }

    /// The parsed object, or `None` for any other JSON value.
    pub fn to_object(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self.to_value() {
            serde_json::Value::Object(map) => Some(map),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        self.0.starts_with('{')
    }

    pub fn is_null(&self) -> bool {
        &*self.0 == "null"
    }

    /// True for `null` and `{}`: nothing to merge.
    pub fn is_empty_document(&self) -> bool {
        matches!(&*self.0, "null" | "{}")
    }

    /// What kind of JSON value this is, for error messages ("an array").
    pub fn kind(&self) -> &'static str {
        match self.0.as_bytes().first() {
            Some(b'{') => "an object",
            Some(b'[') => "an array",
            Some(b'"') => "a string",
            Some(b't' | b'f') => "a boolean",
            Some(b'n') => "null",
            _ => "a number",
        }
    }

    /// The top-level entries of an object document, each value as its JSON text, in
    /// document order; a repeated name keeps its first place and its last value. `null`
    /// has no entries; any other non-object is an error.
    pub fn object_entries(&self) -> Result<Vec<(String, &str)>, JsonTextError> {
        if self.is_null() {
            return Ok(Vec::new());
        }
        let entries: Entries<'_> = serde_json::from_str(&self.0)?;
        Ok(entries.0)
    }

    /// An object document from names and the JSON text of their values (already checked
    /// text, such as stored variables).
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> JsonValue {
        let mut out = String::from("{");
        for (name, value) in entries {
            if out.len() > 1 {
                out.push(',');
            }
            push_json_string(&mut out, name);
            out.push(':');
            out.push_str(value);
        }
        out.push('}');
        JsonValue(Arc::from(out))
    }
}

/// Appends `text` as a JSON string literal.
fn push_json_string(out: &mut String, text: &str) {
    // Writing a string into a String cannot fail.
    let mut buffer = std::mem::take(out).into_bytes();
    let _ = serde_json::to_writer(&mut buffer, text);
    // serde_json writes UTF-8 only.
    *out = String::from_utf8(buffer).unwrap_or_default();
}

/// Checks the nesting depth of valid JSON text and drops whitespace outside strings
/// (copying only once it meets some).
fn compact(text: &str) -> Result<Cow<'_, str>, JsonTextError> {
    let bytes = text.as_bytes();
    let mut copy: Option<Vec<u8>> = None;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (at, &byte) in bytes.iter().enumerate() {
        let keep = if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            true
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => {
                    depth += 1;
                    if depth > MAX_JSON_DEPTH {
                        return Err(JsonTextError::TooDeep);
                    }
                }
                b'}' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
            !matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
        };
        match (&mut copy, keep) {
            (Some(copy), true) => copy.push(byte),
            (None, false) => copy = Some(bytes[..at].to_vec()),
            _ => {}
        }
    }
    Ok(match copy {
        None => Cow::Borrowed(text),
        // Only ASCII whitespace outside strings was left out, so the text stays UTF-8.
        Some(copy) => Cow::Owned(String::from_utf8(copy).unwrap_or_default()),
    })
}

/// Top-level object entries, borrowed from the text.
struct Entries<'a>(Vec<(String, &'a str)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de>, A::Error> {
                let mut entries: Vec<(String, &'de str)> = Vec::new();
                while let Some((name, value)) = map.next_entry::<String, &'de RawValue>()? {
                    match entries.iter_mut().find(|(n, _)| *n == name) {
                        Some(entry) => entry.1 = value.get(),
                        None => entries.push((name, value.get())),
                    }
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

impl From<serde_json::Value> for JsonValue {
    fn from(value: serde_json::Value) -> Self {
        JsonValue::from(&value)
    }
}

impl From<&serde_json::Value> for JsonValue {
    fn from(value: &serde_json::Value) -> Self {
        JsonValue(Arc::from(value.to_string()))
    }
}

impl From<serde_json::Map<String, serde_json::Value>> for JsonValue {
    fn from(map: serde_json::Map<String, serde_json::Value>) -> Self {
        JsonValue::from(serde_json::Value::Object(map))
    }
}

impl Default for JsonValue {
    fn default() -> Self {
        JsonValue::null()
    }
}

impl fmt::Debug for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            let mut raw = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
            raw.serialize_field(RAW_VALUE_TOKEN, &*self.0)?;
            raw.end()
        } else {
            serializer.serialize_str(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let raw = Box::<RawValue>::deserialize(deserializer)?;
            JsonValue::from_raw(&raw).map_err(D::Error::custom)
        } else {
            // Binary encodings are Rill's own, written from checked text.
            struct TextVisitor;
            impl Visitor<'_> for TextVisitor {
                type Value = JsonValue;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("JSON text")
                }
                fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<JsonValue, E> {
                    Ok(JsonValue(Arc::from(text)))
                }
            }
            deserializer.deserialize_str(TextVisitor)
        }
    }
}

/// Raw bytes (a deployed resource, a checksum): base64 in human-readable formats, as
/// Zeebe's JSON records do, and plain bytes in binary ones.
#[derive(Clone, PartialEq, Eq, Default, Hash)]
pub struct Blob(pub Vec<u8>);

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blob({} bytes)", self.0.len())
    }
}

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map(Blob)
                .map_err(|e| D::Error::custom(format!("invalid base64: {e}")))
        } else {
            let bytes: serde_bytes_compat::ByteBuf = Deserialize::deserialize(deserializer)?;
            Ok(Blob(bytes.0))
        }
    }
}

/// A minimal owned byte buffer visitor, so binary formats read bytes in one go.
mod serde_bytes_compat {
    use std::fmt;

    use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};

    pub struct ByteBuf(pub Vec<u8>);

    impl<'de> Deserialize<'de> for ByteBuf {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct BytesVisitor;
            impl<'de> Visitor<'de> for BytesVisitor {
                type Value = ByteBuf;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<ByteBuf, E> {
                    Ok(ByteBuf(v.to_vec()))
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<ByteBuf, E> {
                    Ok(ByteBuf(v))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ByteBuf, A::Error> {
                    let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
                    while let Some(b) = seq.next_element::<u8>()? {
                        out.push(b);
                    }
                    Ok(ByteBuf(out))
                }
            }
            deserializer.deserialize_byte_buf(BytesVisitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::codec;

    #[test]
    fn json_value_is_text_in_binary_and_embedded_in_json() {
        let value = JsonValue::from(json!({"order": {"total": 12.5, "items": [1, 2]}}));
        let bytes = codec::encode(&value).unwrap();
        assert_eq!(codec::decode::<JsonValue>(&bytes).unwrap(), value);
        let text = serde_json::to_string(&json!({"v": 1})).unwrap();
        assert_eq!(text, r#"{"v":1}"#);
        #[derive(Serialize, Deserialize)]
        struct Wrapper {
            variables: JsonValue,
        }
        let wrapped = serde_json::to_string(&Wrapper {
            variables: value.clone(),
        })
        .unwrap();
        assert_eq!(
            wrapped,
            r#"{"variables":{"order":{"total":12.5,"items":[1,2]}}}"#
        );
        let as_value = serde_json::to_value(Wrapper {
            variables: value.clone(),
        })
        .unwrap();
        assert_eq!(as_value["variables"]["order"]["total"], json!(12.5));
        let back: Wrapper = serde_json::from_str(&wrapped).unwrap();
        assert_eq!(back.variables, value);
        let from_value: Wrapper = serde_json::from_value(as_value).unwrap();
        assert_eq!(from_value.variables, value);
    }

    #[test]
    fn parsing_drops_whitespace_outside_strings_and_keeps_it_inside() {
        let value = JsonValue::parse(" {\n \"a b\" : [1, 2],\t\"c\": \"x \\\" y\" } ").unwrap();
        assert_eq!(value.as_str(), r#"{"a b":[1,2],"c":"x \" y"}"#);
        assert_eq!(value.to_value(), json!({"a b": [1, 2], "c": "x \" y"}));
        let embedded: JsonValue = serde_json::from_str("{ \"a\" : 1 }").unwrap();
        assert_eq!(embedded.as_str(), r#"{"a":1}"#);
    }

    #[test]
    fn parsing_refuses_bad_text_and_deep_nesting() {
        assert!(matches!(
            JsonValue::parse("{\"a\": }"),
            Err(JsonTextError::Syntax(_))
        ));
        assert!(matches!(
            JsonValue::parse("[1] x"),
            Err(JsonTextError::Syntax(_))
        ));
        let deep = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH + 1),
            "]".repeat(MAX_JSON_DEPTH + 1)
        );
        assert!(matches!(
            JsonValue::parse(&deep),
            Err(JsonTextError::TooDeep)
        ));
        let ok = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH),
            "]".repeat(MAX_JSON_DEPTH)
        );
        assert!(JsonValue::parse(&ok).unwrap().to_value().is_array());
        // Brackets inside strings do not count.
        let quoted = format!("\"{}\"", "[".repeat(500));
        assert!(JsonValue::parse(&quoted).is_ok());
    }

    #[test]
    fn object_entries_split_a_document_without_parsing_the_values() {
        let value = JsonValue::parse(r#"{"b": {"x": [1, 2]}, "a": "t", "b": 3}"#).unwrap();
        let entries = value.object_entries().unwrap();
        assert_eq!(
            entries,
            vec![("b".to_owned(), "3"), ("a".to_owned(), r#""t""#)]
        );
        assert!(JsonValue::null().object_entries().unwrap().is_empty());
        assert!(JsonValue::parse("[1]").unwrap().object_entries().is_err());
        let rebuilt = JsonValue::from_entries([("q\"uote", "1"), ("n", r#"{"k":[]}"#)]);
        assert_eq!(rebuilt.to_value(), json!({"q\"uote": 1, "n": {"k": []}}));
        assert_eq!(value.kind(), "an object");
        assert!(JsonValue::empty_object().is_empty_document());
    }

    #[test]
    fn blob_is_base64_in_json_and_raw_in_binary() {
        let blob = Blob(b"<xml/>".to_vec());
        assert_eq!(serde_json::to_string(&blob).unwrap(), "\"PHhtbC8+\"");
        let bytes = codec::encode(&blob).unwrap();
        assert_eq!(codec::decode::<Blob>(&bytes).unwrap(), blob);
        assert_eq!(serde_json::from_str::<Blob>("\"PHhtbC8+\"").unwrap(), blob);
    }
}
