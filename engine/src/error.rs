//! The crate's one error type.

use rill_engine_api::{EngineError, ProcessingError, StateError};
use rill_protocol::{CodecError, Key};

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
    /// A stored process definition is missing, or no longer defines its process.
    #[error("process definition {key} cannot be loaded: {reason}")]
    Definition { key: Key, reason: String },
    /// The command wrote far more than `engine.max-records-per-command` or
    /// `engine.max-bytes-per-command` allow (see `budget.rs`).
    #[error("{0}")]
    CommandTooLarge(String),
    /// A read sent to the engine, which answers none: the history store answers reads.
    #[error("the engine answers no reads: {0}")]
    NotARead(&'static str),
    /// A stored process definition no longer parses (the parser changed?).
    #[error("process definition {key} cannot be loaded: {source}")]
    Unparsable {
        key: Key,
        #[source]
        source: crate::DeployError,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for EngineError {
    fn from(error: Error) -> Self {
        match error {
            Error::State(e) => EngineError::State(e),
            other => EngineError::Processing(ProcessingError::new(other)),
        }
    }
}

/// Shorthand for an invariant violation.
pub(crate) fn inconsistent(what: impl Into<String>) -> Error {
    Error::Inconsistent(what.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_processing_error_keeps_the_engine_error() {
        let error: EngineError = inconsistent("flow scope 7 not found").into();
        let EngineError::Processing(processing) = &error else {
            panic!("expected a processing error, got {error:?}");
        };
        // The rejection's reason is the engine error's message, as before.
        assert_eq!(
            processing.to_string(),
            "inconsistent state: flow scope 7 not found"
        );
        assert!(matches!(
            processing.get().downcast_ref::<Error>(),
            Some(Error::Inconsistent(_))
        ));
    }
}
