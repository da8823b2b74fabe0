//! Reading request bodies and path keys into typed values, with errors that name the
//! field and say what was expected.

use rill_protocol::{JsonValue, Key};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};

use crate::limits::{MAX_DOCUMENT_DEPTH, Unreadable, check_size, is_recursion_limit, raw_document};
use crate::ops::ApiSettings;
use crate::ops::ClientError;

/// Parses a JSON request body. An empty body is an error (the endpoint needs one).
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ClientError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ClientError::invalid_argument(
            "The request body is empty; expected a JSON object",
        ));
    }
    parse(body)
}

/// Parses a JSON request body that may be left out; an empty body means `{}`.
pub fn parse_optional_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ClientError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return parse(b"{}");
    }
    parse(body)
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ClientError> {
    // Request bodies are objects. Serde would read a struct from an array too, by
    // position; say plainly what is wrong instead.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => ClientError::invalid_argument(format!(
                "Invalid request body: expected a JSON object, but got {}",
                kind_of(&value)
            )),
            Err(e) => {
                ClientError::invalid_argument(format!("The request body is not valid JSON: {e}"))
            }
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        describe(&path, &inner)
    })?;
    deserializer.end().map_err(|e| {
        ClientError::invalid_argument(format!("The request body is not valid JSON: {e}"))
    })?;
    Ok(value)
}

fn describe(path: &str, error: &serde_json::Error) -> ClientError {
    use serde_json::error::Category;
    if is_recursion_limit(error) {
        return ClientError::invalid_argument(format!(
            "The request body nests objects and arrays too deeply (a variable document may \
             nest them at most {MAX_DOCUMENT_DEPTH} levels deep): {error}"
        ));
    }
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            ClientError::invalid_argument(format!("The request body is not valid JSON: {error}"))
        }
        Category::Data if path == "." || path.is_empty() => {
            ClientError::invalid_argument(format!("Invalid request body: {error}"))
        }
        Category::Data => {
            ClientError::invalid_field(path, format!("Invalid value for '{path}': {error}"))
        }
    }
}

/// A key as REST clients send it: a JSON string of digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyString(pub Key);

impl<'de> Deserialize<'de> for KeyString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        match &value {
            serde_json::Value::String(text) => Key::parse(text).map(KeyString).ok_or_else(|| {
                D::Error::custom(format!(
                    "'{text}' is not a valid key; expected a positive number as a string, \
                     e.g. \"2251799813685249\""
                ))
            }),
            other => Err(D::Error::custom(format!(
                "expected a key as a string of digits, e.g. \"2251799813685249\", but got {}",
                kind_of(other)
            ))),
        }
    }
}

/// A 64-bit integer (a duration in ms, a reference). Camunda's npm SDK sends int64
/// values as strings of digits (JavaScript has no 64-bit integers), so both forms are
/// accepted, as Camunda's gateway does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Long(pub i64);

impl<'de> Deserialize<'de> for Long {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let parsed = match &value {
            serde_json::Value::Number(n) => n.as_i64(),
            serde_json::Value::String(text) => text.trim().parse::<i64>().ok(),
            _ => None,
        };
        parsed.map(Long).ok_or_else(|| {
            D::Error::custom(format!(
                "expected a 64-bit integer (a number or a string of digits), but got {}",
                match &value {
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::String(t) => format!("\"{t}\""),
                    other => kind_of(other).to_owned(),
                }
            ))
        })
    }
}

/// `deserialize_with` for an `i64` field that may come as a string of digits.
pub fn long<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    Long::deserialize(deserializer).map(|l| l.0)
}

/// `deserialize_with` for an optional `i64` field (with `#[serde(default)]`).
pub fn optional_long<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    Option::<Long>::deserialize(deserializer).map(|l| l.map(|l| l.0))
}

/// A variable document: must be a JSON object (`null` is taken as "none"), nested at
/// most [`MAX_DOCUMENT_DEPTH`] levels. Its size is checked against the setting with
/// [`Variables::checked`], the only way to take the variables out.
#[derive(Clone, Debug, PartialEq)]
pub struct Variables {
    document: JsonValue,
    /// Bytes of JSON text the client sent for it.
    size: usize,
}

impl Default for Variables {
    fn default() -> Self {
        Variables {
            document: JsonValue::empty_object(),
            size: 0,
        }
    }
}

impl Variables {
    /// The document, if it is within the size limit; `field` names it in the problem
    /// otherwise (413 `PAYLOAD_TOO_LARGE`, naming the limit and the setting).
    pub fn checked(self, field: &str, settings: &ApiSettings) -> Result<JsonValue, ClientError> {
        check_size(self.size, settings.max_variable_document_size).map_err(|error| {
            ClientError::TooLarge {
                field: Some(field.to_owned()),
                detail: error.describe(field),
            }
        })?;
        Ok(self.document)
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.document.as_str() == "{}"
    }
}

impl<'de> Deserialize<'de> for Variables {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The text as sent, to measure it; request bodies are always JSON.
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        let size = raw.get().len();
        match raw_document(&raw) {
            Ok(document) if document.is_object() => Ok(Variables { document, size }),
            Ok(document) if document.is_null() => Ok(Variables::default()),
            Ok(other) => Err(D::Error::custom(format!(
                "expected a JSON object of variables, e.g. {{\"amount\": 5}}, but got {}",
                other.kind()
            ))),
            Err(Unreadable::TooDeep) => Err(D::Error::custom(format!(
                "it nests objects and arrays more than {MAX_DOCUMENT_DEPTH} levels deep"
            ))),
            // The raw capture has read it as JSON already.
            Err(Unreadable::Invalid(error)) => Err(D::Error::custom(error)),
        }
    }
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Parses a key from a path segment, naming the parameter when it is not one.
pub fn path_key(name: &str, text: &str) -> Result<Key, ClientError> {
    Key::parse(text).ok_or_else(|| {
        ClientError::invalid_field(
            name,
            format!(
                "The provided {name} '{text}' is not a valid key; expected a positive number, \
             e.g. 2251799813685249"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::rest::Problem;

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Sample {
        #[allow(dead_code)]
        job_key: KeyString,
        #[serde(default)]
        #[allow(dead_code)]
        variables: Variables,
        #[serde(default)]
        #[allow(dead_code)]
        nested: Option<Nested>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Nested {
        #[allow(dead_code)]
        retries: Option<i32>,
    }

    #[test]
    fn errors_name_the_field() {
        let err = Problem::from(parse_body::<Sample>(br#"{"jobKey": 12}"#).unwrap_err());
        assert!(err.detail.contains("'jobKey'"), "{}", err.detail);
        assert!(err.detail.contains("string of digits"), "{}", err.detail);

        let err = Problem::from(parse_body::<Sample>(br#"{"jobKey": "x1"}"#).unwrap_err());
        assert!(
            err.detail.contains("'x1' is not a valid key"),
            "{}",
            err.detail
        );

        let err = Problem::from(
            parse_body::<Sample>(br#"{"jobKey": "2251799813685249", "variables": [1]}"#)
                .unwrap_err(),
        );
        assert!(err.detail.contains("'variables'"), "{}", err.detail);
        assert!(err.detail.contains("an array"), "{}", err.detail);

        let err = Problem::from(
            parse_body::<Sample>(
                br#"{"jobKey": "2251799813685249", "nested": {"retries": "three"}}"#,
            )
            .unwrap_err(),
        );
        assert!(err.detail.contains("'nested.retries'"), "{}", err.detail);

        let err = Problem::from(
            parse_body::<Sample>(br#"{"jobKey": "2251799813685249", "bogus": 1}"#).unwrap_err(),
        );
        assert!(
            err.detail.contains("unknown field `bogus`"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn syntax_errors_and_empty_bodies_are_reported() {
        let err = Problem::from(parse_body::<Sample>(b"{\"jobKey\": ").unwrap_err());
        assert!(err.detail.contains("not valid JSON"), "{}", err.detail);
        let err = Problem::from(parse_body::<Sample>(b"  ").unwrap_err());
        assert!(err.detail.contains("empty"), "{}", err.detail);
        let err = Problem::from(
            parse_body::<Sample>(br#"{"jobKey": "2251799813685249"} trailing"#).unwrap_err(),
        );
        assert!(err.detail.contains("not valid JSON"), "{}", err.detail);
    }

    #[test]
    fn null_variables_mean_none() {
        let sample =
            parse_body::<Sample>(br#"{"jobKey": "2251799813685249", "variables": null}"#).unwrap();
        assert!(sample.variables.is_empty());
    }

    fn settings(max_variable_document_size: u64) -> ApiSettings {
        ApiSettings {
            request_timeout: std::time::Duration::from_secs(1),
            long_polling_timeout: std::time::Duration::from_secs(1),
            max_request_timeout: std::time::Duration::from_secs(1),
            max_message_size: 1 << 20,
            max_variable_document_size,
        }
    }

    #[test]
    fn variables_are_measured_as_sent_and_refused_over_the_limit() {
        // `{ "a" : [1, 2] }`: 16 bytes of text, inner spaces included.
        let body = br#"{"jobKey": "2251799813685249", "variables": { "a" : [1, 2] }  }"#;
        let sample = parse_body::<Sample>(body).unwrap();
        let value = sample
            .variables
            .clone()
            .checked("variables", &settings(16))
            .unwrap();
        assert_eq!(value.as_str(), r#"{"a":[1,2]}"#);
        let problem = Problem::from(
            sample
                .variables
                .checked("variables", &settings(15))
                .unwrap_err(),
        );
        assert_eq!(problem.status.as_u16(), 413);
        assert_eq!(problem.title, "PAYLOAD_TOO_LARGE");
        for fragment in [
            "'variables' is 16 bytes",
            "15 bytes",
            "gateway.max-variable-document-size",
        ] {
            assert!(problem.detail.contains(fragment), "{}", problem.detail);
        }
    }

    #[test]
    fn deep_variables_are_refused_naming_the_field() {
        let deep = |levels: usize| {
            format!(
                r#"{{"jobKey": "2251799813685249", "variables": {{"a": {}1{}}}}}"#,
                "[".repeat(levels - 1),
                "]".repeat(levels - 1)
            )
        };
        assert!(parse_body::<Sample>(deep(MAX_DOCUMENT_DEPTH).as_bytes()).is_ok());
        for levels in [MAX_DOCUMENT_DEPTH + 1, 1000] {
            let err = Problem::from(parse_body::<Sample>(deep(levels).as_bytes()).unwrap_err());
            assert_eq!(err.status.as_u16(), 400);
            assert!(err.detail.contains("'variables'"), "{}", err.detail);
            assert!(
                err.detail.contains("more than 100 levels"),
                "{}",
                err.detail
            );
        }
        // Deep elsewhere in the body: the parser's limit, said plainly.
        let body = format!(r#"{{"jobKey": {}1{}}}"#, "[".repeat(200), "]".repeat(200));
        let err = Problem::from(parse_body::<Sample>(body.as_bytes()).unwrap_err());
        assert!(err.detail.contains("too deeply"), "{}", err.detail);
    }

    #[test]
    fn path_keys_must_be_valid_keys() {
        assert_eq!(
            path_key("jobKey", "2251799813685249").unwrap(),
            Key(2251799813685249)
        );
        let err = Problem::from(path_key("jobKey", "abc").unwrap_err());
        assert_eq!(err.status.as_u16(), 400);
        assert!(err.detail.contains("jobKey 'abc'"));
    }
}
