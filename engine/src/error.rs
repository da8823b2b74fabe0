//! The crate's one error type.

use rill_engine_api::{EngineError, StateError};
use rill_protocol::CodecError;

/// Why the engine could not go on with a command. Client mistakes are not errors: they
/// become rejections. These are broken invariants or storage failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    State(#[from] StateError),
    #[error("cannot decode state value: {0}")]
    Codec(#[from] CodecError),
    /// State does not hold what an invariant says it must.
    #[error("inconsistent state: {0}")]
    Inconsistent(String),
    /// A stored process definition no longer parses (the parser changed?).
    #[error("process definition {key} cannot be loaded: {reason}")]
    Definition { key: i64, reason: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for EngineError {
    fn from(error: Error) -> Self {
        match error {
            Error::State(e) => EngineError::State(e),
            other => EngineError::Processing(other.to_string()),
        }
    }
}

/// Shorthand for an invariant violation.
pub(crate) fn inconsistent(what: impl Into<String>) -> Error {
    Error::Inconsistent(what.into())
}
