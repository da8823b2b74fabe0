//! Reading request bodies and path keys into typed values, with errors that name the
//! field and say what was expected.

use rill_protocol::{JsonValue, Key};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};

use crate::problem::Problem;

/// Parses a JSON request body. An empty body is an error (the endpoint needs one).
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::invalid_argument(
            "The request body is empty; expected a JSON object",
        ));
    }
    parse(body)
}

/// Parses a JSON request body that may be left out; an empty body means `{}`.
pub fn parse_optional_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return parse(b"{}");
    }
    parse(body)
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, Problem> {
    // Request bodies are objects. Serde would read a struct from an array too, by
    // position; say plainly what is wrong instead.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => Problem::invalid_argument(format!(
                "Invalid request body: expected a JSON object, but got {}",
                kind_of(&value)
            )),
            Err(e) => Problem::invalid_argument(format!("The request body is not valid JSON: {e}")),
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        describe(&path, &inner)
    })?;
    deserializer.end().map_err(|e| {
        Problem::invalid_argument(format!("The request body is not valid JSON: {e}"))
    })?;
    Ok(value)
}

fn describe(path: &str, error: &serde_json::Error) -> Problem {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            Problem::invalid_argument(format!("The request body is not valid JSON: {error}"))
        }
        Category::Data if path == "." || path.is_empty() => {
            Problem::invalid_argument(format!("Invalid request body: {error}"))
        }
        Category::Data => Problem::invalid_argument(format!("Invalid value for '{path}': {error}")),
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

/// Variables: must be a JSON object (`null` is taken as "none"), kept as its checked
/// JSON text.
#[derive(Clone, Debug, PartialEq)]
pub struct Variables(pub JsonValue);

impl Default for Variables {
    fn default() -> Self {
        Variables(JsonValue::empty_object())
    }
}

impl Variables {
    pub fn into_json(self) -> JsonValue {
        self.0
    }
}

impl<'de> Deserialize<'de> for Variables {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let document = JsonValue::deserialize(deserializer)?;
        if document.is_null() {
            Ok(Variables::default())
        } else if document.is_object() {
            Ok(Variables(document))
        } else {
            Err(D::Error::custom(format!(
                "expected a JSON object of variables, e.g. {{\"amount\": 5}}, but got {}",
                document.kind()
            )))
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
pub fn path_key(name: &str, text: &str) -> Result<Key, Problem> {
    Key::parse(text).ok_or_else(|| {
        Problem::invalid_argument(format!(
            "The provided {name} '{text}' is not a valid key; expected a positive number, \
             e.g. 2251799813685249"
        ))
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

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
        let err = parse_body::<Sample>(br#"{"jobKey": 12}"#).unwrap_err();
        assert!(err.detail.contains("'jobKey'"), "{}", err.detail);
        assert!(err.detail.contains("string of digits"), "{}", err.detail);

        let err = parse_body::<Sample>(br#"{"jobKey": "x1"}"#).unwrap_err();
        assert!(
            err.detail.contains("'x1' is not a valid key"),
            "{}",
            err.detail
        );

        let err = parse_body::<Sample>(br#"{"jobKey": "2251799813685249", "variables": [1]}"#)
            .unwrap_err();
        assert!(err.detail.contains("'variables'"), "{}", err.detail);
        assert!(err.detail.contains("an array"), "{}", err.detail);

        let err = parse_body::<Sample>(
            br#"{"jobKey": "2251799813685249", "nested": {"retries": "three"}}"#,
        )
        .unwrap_err();
        assert!(err.detail.contains("'nested.retries'"), "{}", err.detail);

        let err =
            parse_body::<Sample>(br#"{"jobKey": "2251799813685249", "bogus": 1}"#).unwrap_err();
        assert!(
            err.detail.contains("unknown field `bogus`"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn syntax_errors_and_empty_bodies_are_reported() {
        let err = parse_body::<Sample>(b"{\"jobKey\": ").unwrap_err();
        assert!(err.detail.contains("not valid JSON"), "{}", err.detail);
        let err = parse_body::<Sample>(b"  ").unwrap_err();
        assert!(err.detail.contains("empty"), "{}", err.detail);
        let err = parse_body::<Sample>(br#"{"jobKey": "2251799813685249"} trailing"#).unwrap_err();
        assert!(err.detail.contains("not valid JSON"), "{}", err.detail);
    }

    #[test]
    fn null_variables_mean_none() {
        let sample =
            parse_body::<Sample>(br#"{"jobKey": "2251799813685249", "variables": null}"#).unwrap();
        assert_eq!(sample.variables.into_json().as_str(), "{}");
    }

    #[test]
    fn path_keys_must_be_valid_keys() {
        assert_eq!(
            path_key("jobKey", "2251799813685249").unwrap(),
            Key(2251799813685249)
        );
        let err = path_key("jobKey", "abc").unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
        assert!(err.detail.contains("jobKey 'abc'"));
    }
}
