//! JSON values inside records and commands.
//!
//! Binary formats such as bincode cannot carry `serde_json::Value` (it needs
//! `deserialize_any`), so [`JsonValue`] is written as JSON text there, and as the value
//! itself in human-readable formats (the REST API, the exporter's documents).

use std::fmt;

use base64::Engine as _;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON value that survives both binary and human-readable encodings.
#[derive(Clone, PartialEq, Default)]
pub struct JsonValue(pub serde_json::Value);

impl JsonValue {
    /// An empty JSON object, the usual "no variables".
    pub fn empty_object() -> JsonValue {
        JsonValue(serde_json::Value::Object(serde_json::Map::new()))
    }

    pub fn null() -> JsonValue {
        JsonValue(serde_json::Value::Null)
    }

    pub fn as_object(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.0.as_object()
    }

    /// True for `null` and `{}`: nothing to merge.
    pub fn is_empty_document(&self) -> bool {
        match &self.0 {
            serde_json::Value::Null => true,
            serde_json::Value::Object(map) => map.is_empty(),
            _ => false,
        }
    }

    pub fn into_inner(self) -> serde_json::Value {
        self.0
    }
}

impl From<serde_json::Value> for JsonValue {
    fn from(value: serde_json::Value) -> Self {
        JsonValue(value)
    }
}

impl fmt::Debug for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for JsonValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            self.0.serialize(serializer)
        } else {
            serializer.serialize_str(&self.0.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            serde_json::Value::deserialize(deserializer).map(JsonValue)
        } else {
            let text = String::deserialize(deserializer)?;
            serde_json::from_str(&text)
                .map(JsonValue)
                .map_err(|e| D::Error::custom(format!("invalid JSON text in record: {e}")))
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
    fn json_value_is_text_in_binary_and_value_in_json() {
        let value = JsonValue(json!({"order": {"total": 12.5, "items": [1, 2]}}));
        let bytes = codec::encode(&value).unwrap();
        assert_eq!(codec::decode::<JsonValue>(&bytes).unwrap(), value);
        let text = serde_json::to_string(&value).unwrap();
        assert_eq!(text, r#"{"order":{"total":12.5,"items":[1,2]}}"#);
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
