//! What a client may hand in: the size of a request, and the size and nesting depth of
//! the variable documents in it. Both APIs refuse more with a message that names the
//! field, the limit and the setting that sets it (docs/decisions/limits.md).

use rill_protocol::{JsonTextError, JsonValue, MAX_JSON_DEPTH};
use serde_json::value::RawValue;

/// The setting that bounds a REST body or a gRPC message.
pub const MESSAGE_SIZE_SETTING: &str = "gateway.max-message-size";

/// The setting that bounds one variable document.
pub const DOCUMENT_SIZE_SETTING: &str = "gateway.max-variable-document-size";

/// Deepest nesting of objects and arrays in a variable document (the document itself is
/// level 1): the protocol's own limit for JSON text.
pub const MAX_DOCUMENT_DEPTH: usize = MAX_JSON_DEPTH;

/// Why a variable document is refused.
#[derive(Debug)]
pub enum DocumentError {
    /// Longer than `gateway.max-variable-document-size`, as JSON text.
    TooLarge {
        size: usize,
        limit: u64,
    },
    Unreadable(Unreadable),
}

/// Why a variable document's text cannot be taken in.
#[derive(Debug)]
pub enum Unreadable {
    /// Nested deeper than [`MAX_DOCUMENT_DEPTH`].
    TooDeep,
    /// Not JSON at all.
    Invalid(serde_json::Error),
}

impl DocumentError {
    /// What is wrong, in a sentence that names `field`.
    pub fn describe(&self, field: &str) -> String {
        match self {
            DocumentError::TooLarge { size, limit } => format!(
                "The variable document '{field}' is {size} bytes, more than the maximum \
                 variable document size of {limit} bytes (set by {DOCUMENT_SIZE_SETTING})"
            ),
            DocumentError::Unreadable(Unreadable::TooDeep) => format!(
                "The variable document '{field}' nests objects and arrays more than \
                 {MAX_DOCUMENT_DEPTH} levels deep"
            ),
            DocumentError::Unreadable(Unreadable::Invalid(error)) => {
                format!("The variable document '{field}' is not JSON ({error})")
            }
        }
    }
}

/// Refuses a document of `size` bytes of JSON text above `limit`.
pub fn check_size(size: usize, limit: u64) -> Result<(), DocumentError> {
    if u64::try_from(size).map_or(true, |size| size > limit) {
        Err(DocumentError::TooLarge { size, limit })
    } else {
        Ok(())
    }
}

/// Checks a variable document's JSON text, refusing one nested too deeply.
pub fn parse_document(text: &str) -> Result<JsonValue, Unreadable> {
    JsonValue::parse(text).map_err(Unreadable::from)
}

/// [`parse_document`] for text serde_json has already read as JSON (a REST body's field).
pub fn raw_document(raw: &RawValue) -> Result<JsonValue, Unreadable> {
    JsonValue::from_raw(raw).map_err(Unreadable::from)
}

impl From<JsonTextError> for Unreadable {
    fn from(error: JsonTextError) -> Self {
        match error {
            JsonTextError::TooDeep => Unreadable::TooDeep,
            JsonTextError::Syntax(error) => Unreadable::Invalid(error),
        }
    }
}

/// serde_json's error for input nested deeper than its limit of 128.
pub fn is_recursion_limit(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
    }

    #[test]
    fn documents_up_to_the_depth_limit_parse_and_deeper_ones_are_refused() {
        let deepest = parse_document(&nested(MAX_DOCUMENT_DEPTH)).expect("at the limit");
        assert!(deepest.is_object());
        assert!(matches!(
            parse_document(&nested(MAX_DOCUMENT_DEPTH + 1)),
            Err(Unreadable::TooDeep)
        ));
        // Deeper than the parser goes: the same answer, not a parse error.
        assert!(matches!(
            parse_document(&nested(10_000)),
            Err(Unreadable::TooDeep)
        ));
        assert!(matches!(
            parse_document("{\"a\": "),
            Err(Unreadable::Invalid(_))
        ));
    }

    #[test]
    fn sizes_above_the_limit_are_refused_with_the_setting_named() {
        assert!(check_size(10, 10).is_ok());
        let error = check_size(11, 10).unwrap_err();
        let text = error.describe("variables");
        assert!(
            text.starts_with("The variable document 'variables' is 11 bytes"),
            "{text}"
        );
        assert!(text.contains("of 10 bytes"), "{text}");
        assert!(text.contains(DOCUMENT_SIZE_SETTING), "{text}");
    }
}
