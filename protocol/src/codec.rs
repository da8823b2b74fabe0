//! The one place that knows how Rill encodes values for the log, state and the wire.
//!
//! Every encoded value starts with a format version byte so the codec can be replaced
//! (bincode 3 on crates.io is a stub; 2.0.1 is the last real release) without a flag day:
//! a reader dispatches on the byte, a writer always writes the newest format.
//!
//! Values must be encodable by a non-self-describing format: no `#[serde(untagged)]`,
//! `flatten` or `skip_serializing_if`, and no `serde_json::Value` fields (use
//! [`crate::JsonValue`], which stores JSON as text in binary formats).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Format 1: bincode 2.0.1, serde mode, standard configuration (little endian, varints).
pub const FORMAT_BINCODE_V1: u8 = 1;

/// The format new data is written in.
pub const CURRENT_FORMAT: u8 = FORMAT_BINCODE_V1;

/// Why bytes could not be turned into a value (or the reverse).
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("empty input: expected a format version byte")]
    Empty,
    #[error("unknown codec format version {0} (this build reads version {CURRENT_FORMAT})")]
    UnknownFormat(u8),
    #[error("cannot decode {type_name}: {reason}")]
    Decode {
        type_name: &'static str,
        reason: String,
    },
    #[error("cannot encode {type_name}: {reason}")]
    Encode {
        type_name: &'static str,
        reason: String,
    },
    #[error("{trailing} trailing bytes after {type_name}")]
    Trailing {
        type_name: &'static str,
        trailing: usize,
    },
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes `value` with a leading format byte.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(64);
    encode_into(value, &mut out)?;
    Ok(out)
}

/// Appends the encoding of `value` (with its format byte) to `out`.
pub fn encode_into<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
    out.push(CURRENT_FORMAT);
    bincode::serde::encode_into_std_write(value, out, config()).map_err(|e| {
        CodecError::Encode {
            type_name: std::any::type_name::<T>(),
            reason: e.to_string(),
        }
    })?;
    Ok(())
}

/// The length of `value`'s encoding (format byte included), without writing it.
pub fn encoded_len<T: Serialize + ?Sized>(value: &T) -> Result<usize, CodecError> {
    let mut size = bincode::enc::write::SizeWriter::default();
    bincode::serde::encode_into_writer(value, &mut size, config()).map_err(|e| {
        CodecError::Encode {
            type_name: std::any::type_name::<T>(),
            reason: e.to_string(),
        }
    })?;
    Ok(1 + size.bytes_written)
}

/// Decodes a value written by [`encode`]. The whole input must be consumed.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (&format, body) = bytes.split_first().ok_or(CodecError::Empty)?;
    match format {
        FORMAT_BINCODE_V1 => {
            let (value, read) =
                bincode::serde::decode_from_slice::<T, _>(body, config()).map_err(|e| {
                    CodecError::Decode {
                        type_name: std::any::type_name::<T>(),
                        reason: e.to_string(),
                    }
                })?;
            if read != body.len() {
                return Err(CodecError::Trailing {
                    type_name: std::any::type_name::<T>(),
                    trailing: body.len() - read,
                });
            }
            Ok(value)
        }
        other => Err(CodecError::UnknownFormat(other)),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Sample {
        name: String,
        n: i64,
        tags: Vec<String>,
        choice: Option<Choice>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Choice {
        A,
        B { x: u32 },
    }

    #[test]
    fn round_trips_with_format_byte() {
        let value = Sample {
            name: "x".into(),
            n: -7,
            tags: vec!["a".into()],
            choice: Some(Choice::B { x: 9 }),
        };
        let bytes = encode(&value).unwrap();
        assert_eq!(bytes[0], CURRENT_FORMAT);
        assert_eq!(decode::<Sample>(&bytes).unwrap(), value);
    }

    #[test]
    fn encoded_len_is_the_length_of_the_encoding() {
        let value = Sample {
            name: "a longer name than one byte".into(),
            n: i64::MIN,
            tags: vec!["a".into(), "b".repeat(300)],
            choice: None,
        };
        assert_eq!(encoded_len(&value).unwrap(), encode(&value).unwrap().len());
        assert_eq!(encoded_len(&7_u8).unwrap(), encode(&7_u8).unwrap().len());
    }

    #[test]
    fn rejects_unknown_format_empty_and_trailing() {
        let mut bytes = encode(&5_u32).unwrap();
        assert!(matches!(decode::<u32>(&[]), Err(CodecError::Empty)));
        bytes[0] = 99;
        assert!(matches!(
            decode::<u32>(&bytes),
            Err(CodecError::UnknownFormat(99))
        ));
        let mut bytes = encode(&5_u32).unwrap();
        bytes.push(0);
        assert!(matches!(
            decode::<u32>(&bytes),
            Err(CodecError::Trailing { .. })
        ));
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let bytes = encode(&Sample {
            name: "hello".into(),
            n: 1,
            tags: vec![],
            choice: None,
        })
        .unwrap();
        for cut in 1..bytes.len() {
            assert!(decode::<Sample>(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
