//! The two ways a command or an element step ends without doing its work, as values
//! with their type:
//!
//! - a [`Rejection`]: a validator refused the command (nothing changes, the client hears
//!   the rejection type and reason);
//! - a [`Failure`]: an expression could not be evaluated, which becomes an incident of
//!   its [`IncidentErrorType`] on the element.
//!
//! Element steps return [`Evaluated`], whose error is either such a failure or an
//! [`Error`] that aborts the command; one place per lifecycle step turns the failure into
//! an incident.

use rill_protocol::RejectionType;
use rill_protocol::value::IncidentErrorType;

use crate::error::Error;

/// Why a command is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub kind: RejectionType,
    pub reason: String,
}

impl Rejection {
    pub fn new(kind: RejectionType, reason: impl Into<String>) -> Rejection {
        Rejection {
            kind,
            reason: reason.into(),
        }
    }

    pub fn not_found(reason: impl Into<String>) -> Rejection {
        Rejection::new(RejectionType::NotFound, reason)
    }

    pub fn invalid_state(reason: impl Into<String>) -> Rejection {
        Rejection::new(RejectionType::InvalidState, reason)
    }

    pub fn invalid_argument(reason: impl Into<String>) -> Rejection {
        Rejection::new(RejectionType::InvalidArgument, reason)
    }

    pub fn already_exists(reason: impl Into<String>) -> Rejection {
        Rejection::new(RejectionType::AlreadyExists, reason)
    }
}

impl From<Rejection> for rill_protocol::Rejection {
    fn from(rejection: Rejection) -> Self {
        rill_protocol::Rejection::new(rejection.kind, rejection.reason)
    }
}

/// Why an element step could not go on: it becomes an incident of `error_type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    pub error_type: IncidentErrorType,
    pub message: String,
}

impl Failure {
    pub fn new(error_type: IncidentErrorType, message: impl Into<String>) -> Failure {
        Failure {
            error_type,
            message: message.into(),
        }
    }

    /// An input or output mapping failed.
    pub fn io_mapping(message: impl Into<String>) -> Failure {
        Failure::new(IncidentErrorType::IoMappingError, message)
    }

    /// A value an element needs (job type, message name, timer, error code) failed.
    pub fn extract_value(message: impl Into<String>) -> Failure {
        Failure::new(IncidentErrorType::ExtractValueError, message)
    }

    /// A gateway's condition failed, or none held and there is no default flow.
    pub fn condition(message: impl Into<String>) -> Failure {
        Failure::new(IncidentErrorType::ConditionError, message)
    }
}

/// Why an element step stopped early.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The step's input could not be evaluated: raise an incident, the command goes on.
    Failed(Failure),
    /// The command cannot go on at all.
    Error(Error),
}

impl From<Error> for Halt {
    fn from(error: Error) -> Self {
        Halt::Error(error)
    }
}

impl From<Failure> for Halt {
    fn from(failure: Failure) -> Self {
        Halt::Failed(failure)
    }
}

/// The result of evaluating what an element step needs.
pub(crate) type Evaluated<T = ()> = Result<T, Halt>;

/// The value, or `None` when it could not be evaluated; errors still abort the command.
pub(crate) fn ignore_failure<T>(evaluated: Evaluated<T>) -> Result<Option<T>, Error> {
    match evaluated {
        Ok(value) => Ok(Some(value)),
        Err(Halt::Failed(_)) => Ok(None),
        Err(Halt::Error(error)) => Err(error),
    }
}
