//! [`ClientError`]: why a client operation failed, whatever API it came through. REST
//! derives its problem document from it (`rest::problem`), gRPC its `Status`
//! (`grpc::status`); each by one conversion, so the two APIs cannot drift apart.
//!
//! The message (`Display`) is the same in both APIs: REST sends it as the problem's
//! `detail`, gRPC as the status message.

use std::fmt;

use rill_protocol::{Command, PartitionId, RecordValue, Rejection, RejectionType};

/// Why a client operation failed.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientError {
    /// The engine rejected the command (Zeebe's rejection type and reason).
    Rejected {
        /// Zeebe's intent name of the command, as the message names it (`COMPLETE`).
        intent: String,
        kind: RejectionType,
        reason: String,
    },
    /// What the request names does not exist.
    NotFound { detail: String },
    /// The request is malformed or a value is out of range; `field` names the field
    /// when the request has one at fault (its path in the request, `variables`).
    InvalidArgument {
        field: Option<String>,
        detail: String,
    },
    /// The request, or a document in it, is larger than a setting allows (bad input
    /// too, never back-pressure).
    TooLarge {
        field: Option<String>,
        detail: String,
    },
    /// The partition has no leader, or cannot take requests right now; nothing was
    /// applied, so the client may retry.
    PartitionUnavailable {
        partition: PartitionId,
        /// Why, when more is known than "no leader".
        reason: Option<String>,
    },
    /// The gateway or the node cannot serve the request right now.
    Unavailable { detail: String },
    /// Flow control refused the command: back off and retry. `reason` says why when it
    /// is not the in-flight limit (the broker's disk is past a watermark).
    ResourceExhausted {
        partition: PartitionId,
        reason: Option<String>,
    },
    /// No answer in time: the command may or may not have been applied.
    DeadlineExceeded,
    /// A read, and the partition's history store (which answers every read) is off:
    /// `history.enabled = false`, as Camunda's engine-only mode (no secondary storage).
    HistoryDisabled { partition: PartitionId },
    /// The caller did not prove who it is: no credentials, malformed ones, or wrong
    /// ones (the detail never says whether a user exists).
    Unauthenticated { detail: String },
    /// Too many failed logins from the caller's address lately: nothing was checked;
    /// try again after `retry_after`.
    TooManyFailedLogins { retry_after: std::time::Duration },
    /// The caller may not do this (for the authorization issue; unused yet).
    Forbidden { detail: String },
    /// A failure on the broker's or gateway's side, never bad client input.
    Internal { detail: String },
}

impl ClientError {
    /// Bad input that is not about one field (an empty body, a missing choice).
    pub fn invalid_argument(detail: impl Into<String>) -> ClientError {
        ClientError::InvalidArgument {
            field: None,
            detail: detail.into(),
        }
    }

    /// Bad input in `field`; `detail` says what is wrong (and names the field too).
    pub fn invalid_field(field: impl Into<String>, detail: impl Into<String>) -> ClientError {
        ClientError::InvalidArgument {
            field: Some(field.into()),
            detail: detail.into(),
        }
    }

    /// Bad input in `field`, worded as Zeebe's gateway words it:
    /// `Property '<field>' is invalid: <reason>`.
    pub fn invalid_property(field: impl Into<String>, reason: impl fmt::Display) -> ClientError {
        let field = field.into();
        let detail = format!("Property '{field}' is invalid: {reason}");
        ClientError::invalid_field(field, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> ClientError {
        ClientError::NotFound {
            detail: detail.into(),
        }
    }

    pub fn internal(detail: impl Into<String>) -> ClientError {
        ClientError::Internal {
            detail: detail.into(),
        }
    }

    /// The engine's rejection of `command`.
    pub fn rejected(command: &Command, rejection: &Rejection) -> ClientError {
        ClientError::Rejected {
            intent: command_intent(command),
            kind: rejection.rejection_type,
            reason: rejection.reason.clone(),
        }
    }

    /// The broker answered a request for `what` with a record of another kind: a bug on
    /// the broker's side.
    pub fn unexpected_answer(what: &str, value: &RecordValue) -> ClientError {
        ClientError::internal(format!(
            "Expected the broker to answer the {what} request with its record, but it \
             answered with a {} record",
            value.value_type().name()
        ))
    }

    /// The broker answered a query for `what` with another kind of result: a bug.
    pub fn wrong_answer(what: &str) -> ClientError {
        ClientError::internal(format!(
            "The broker answered a {what} query with another kind of result"
        ))
    }

    /// Whether the failure passes on its own (no leader yet, back-pressure, a timeout),
    /// so a long-lived request (a job stream) waits and tries again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ClientError::PartitionUnavailable { .. }
                | ClientError::Unavailable { .. }
                | ClientError::ResourceExhausted { .. }
                | ClientError::DeadlineExceeded
        )
    }

    /// The field at fault, for bad input that names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ClientError::InvalidArgument { field, .. } | ClientError::TooLarge { field, .. } => {
                field.as_deref()
            }
            _ => None,
        }
    }
}

/// The stable code of a rejection type, as Camunda's REST titles and the rejection
/// message name it.
pub fn rejection_code(kind: RejectionType) -> &'static str {
    match kind {
        RejectionType::InvalidArgument => "INVALID_ARGUMENT",
        RejectionType::NotFound => "NOT_FOUND",
        RejectionType::InvalidState => "INVALID_STATE",
        RejectionType::AlreadyExists => "ALREADY_EXISTS",
        RejectionType::Unauthorized => "UNAUTHORIZED",
        RejectionType::ExceededBatchRecordSize => "EXCEEDED_BATCH_RECORD_SIZE",
        RejectionType::ProcessingError | RejectionType::NullVal => "PROCESSING_ERROR",
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Camunda's shape: `Command 'COMPLETE' rejected with code 'NOT_FOUND': <reason>`.
            ClientError::Rejected {
                intent,
                kind,
                reason,
            } => write!(
                f,
                "Command '{intent}' rejected with code '{}': {reason}",
                rejection_code(*kind)
            ),
            ClientError::PartitionUnavailable {
                partition,
                reason: None,
            } => write!(
                f,
                "Expected to handle the request, but partition {partition} has no leader right \
                 now; retry later"
            ),
            ClientError::PartitionUnavailable {
                partition,
                reason: Some(reason),
            } => write!(
                f,
                "Expected to handle the request, but partition {partition} is unavailable: \
                 {reason}"
            ),
            ClientError::ResourceExhausted {
                partition,
                reason: None,
            } => write!(
                f,
                "Expected to handle the request, but partition {partition} is overloaded \
                 (backpressure); retry after a back-off"
            ),
            ClientError::ResourceExhausted {
                partition,
                reason: Some(reason),
            } => write!(
                f,
                "Expected to handle the request, but partition {partition} refuses it: \
                 {reason}; retry after a back-off"
            ),
            ClientError::DeadlineExceeded => f.write_str(
                "Expected to handle the request, but it timed out between gateway and broker; \
                 the command may or may not have been applied",
            ),
            ClientError::HistoryDisabled { partition } => write!(
                f,
                "Expected to read from the history store, but it is off on the broker leading \
                 partition {partition} (history.enabled = false); reads need history.enabled = \
                 true"
            ),
            ClientError::TooManyFailedLogins { retry_after } => write!(
                f,
                "Too many failed logins from this address; try again in {} s",
                retry_after.as_secs().max(1)
            ),
            ClientError::NotFound { detail }
            | ClientError::InvalidArgument { detail, .. }
            | ClientError::TooLarge { detail, .. }
            | ClientError::Unavailable { detail }
            | ClientError::Unauthenticated { detail }
            | ClientError::Forbidden { detail }
            | ClientError::Internal { detail } => f.write_str(detail),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<rill_client::Error> for ClientError {
    /// A failure to reach or hear from the partition.
    fn from(error: rill_client::Error) -> ClientError {
        let unexpected = |message: &dyn fmt::Display| {
            ClientError::internal(format!(
                "Unexpected error while handling the request: {message}"
            ))
        };
        match error {
            rill_client::Error::NotLeader { partition } => ClientError::PartitionUnavailable {
                partition,
                reason: None,
            },
            rill_client::Error::Unavailable { partition, reason } => {
                ClientError::PartitionUnavailable {
                    partition,
                    reason: Some(reason),
                }
            }
            rill_client::Error::ResourceExhausted {
                partition, reason, ..
            } => ClientError::ResourceExhausted { partition, reason },
            rill_client::Error::Timeout => ClientError::DeadlineExceeded,
            rill_client::Error::HistoryDisabled { partition } => {
                ClientError::HistoryDisabled { partition }
            }
            error @ rill_client::Error::EngineVersionTooLow { .. } => ClientError::Unavailable {
                detail: error.to_string(),
            },
            rill_client::Error::Shutdown => ClientError::Unavailable {
                detail: "The node is shutting down".to_owned(),
            },
            rill_client::Error::Failed { source, .. } => unexpected(&source),
            error @ rill_client::Error::Codec { .. } => unexpected(&error),
            rill_client::Error::Internal(message) => unexpected(&message),
        }
    }
}

/// Zeebe's intent name for the command, as rejection messages name it.
fn command_intent(command: &Command) -> String {
    let name = match command.inner() {
        Command::Deploy { .. } => "CREATE",
        Command::CreateProcessInstance(c) if c.await_result => "CREATE_WITH_AWAITING_RESULT",
        Command::CreateProcessInstance(_) => "CREATE",
        Command::CancelProcessInstance { .. } => "CANCEL",
        Command::ActivateJobs(_) => "ACTIVATE",
        Command::CompleteJob { .. } => "COMPLETE",
        Command::FailJob(_) => "FAIL",
        Command::ThrowError(_) => "THROW_ERROR",
        Command::UpdateJob(_) => "UPDATE",
        Command::PublishMessage(_) => "PUBLISH",
        Command::ResolveIncident { .. } => "RESOLVE",
        Command::SetVariables(_) => "UPDATE",
        Command::TriggerTimer { .. } => "TRIGGER",
        Command::TimeOutJob { .. } => "TIME_OUT",
        Command::RecurJob { .. } => "RECUR_AFTER_BACKOFF",
        Command::YieldJob { .. } => "YIELD",
        Command::ExpireMessage { .. } => "EXPIRE",
        Command::ExpireInstanceSummary { .. } => "DELETE",
        Command::FromPartition(c) => return c.intent.name(),
        Command::AcknowledgeSend { .. } => "ACKNOWLEDGE",
        Command::BroadcastSignal(_) => "BROADCAST",
        Command::UserTask(rill_protocol::UserTaskCommand::Assign {
            allow_override: false,
            ..
        }) => "CLAIM",
        Command::UserTask(rill_protocol::UserTaskCommand::Assign { .. }) => "ASSIGN",
        Command::UserTask(rill_protocol::UserTaskCommand::Update { .. }) => "UPDATE",
        Command::UserTask(rill_protocol::UserTaskCommand::Complete { .. }) => "COMPLETE",
        Command::EvaluateDecision(_) => "EVALUATE",
        Command::ModifyProcessInstance(_) => "MODIFY",
        Command::DeleteResource { .. } => "DELETE",
        Command::RedistributeDeployments { .. } => "DISTRIBUTE",
        Command::MigrateProcessInstance(_) => "MIGRATE",
        Command::ActivateAdHocSubProcessActivities(_) => "ACTIVATE",
        Command::User(c) => return c.intent().name(),
        // Not reached: `inner()` looks through every wrapper.
        Command::Referenced { .. } => "UNKNOWN",
    };
    name.to_owned()
}

/// One error of every kind (each rejection type once), for the tests of the two
/// conversions. The match below stops compiling when a variant is added without an
/// example here.
#[cfg(test)]
pub(crate) fn one_of_each() -> Vec<ClientError> {
    let partition = PartitionId(2);
    let rejected = |kind| ClientError::Rejected {
        intent: "COMPLETE".to_owned(),
        kind,
        reason: "why".to_owned(),
    };
    let each = vec![
        rejected(RejectionType::InvalidArgument),
        rejected(RejectionType::NotFound),
        rejected(RejectionType::InvalidState),
        rejected(RejectionType::AlreadyExists),
        rejected(RejectionType::Unauthorized),
        rejected(RejectionType::ExceededBatchRecordSize),
        rejected(RejectionType::ProcessingError),
        rejected(RejectionType::NullVal),
        ClientError::not_found("no such job"),
        ClientError::invalid_property("jobKey", "expected a key"),
        ClientError::TooLarge {
            field: Some("variables".to_owned()),
            detail: "too large".to_owned(),
        },
        ClientError::PartitionUnavailable {
            partition,
            reason: None,
        },
        ClientError::Unavailable {
            detail: "The node is shutting down".to_owned(),
        },
        ClientError::ResourceExhausted {
            partition,
            reason: None,
        },
        ClientError::DeadlineExceeded,
        ClientError::HistoryDisabled { partition },
        ClientError::Unauthenticated {
            detail: "no token".to_owned(),
        },
        ClientError::Forbidden {
            detail: "not allowed".to_owned(),
        },
        ClientError::internal("broken"),
        ClientError::TooManyFailedLogins {
            retry_after: std::time::Duration::from_secs(30),
        },
    ];
    for error in &each {
        match error {
            ClientError::Rejected { .. }
            | ClientError::NotFound { .. }
            | ClientError::InvalidArgument { .. }
            | ClientError::TooLarge { .. }
            | ClientError::PartitionUnavailable { .. }
            | ClientError::Unavailable { .. }
            | ClientError::ResourceExhausted { .. }
            | ClientError::DeadlineExceeded
            | ClientError::HistoryDisabled { .. }
            | ClientError::Unauthenticated { .. }
            | ClientError::Forbidden { .. }
            | ClientError::TooManyFailedLogins { .. }
            | ClientError::Internal { .. } => {}
        }
    }
    each
}

#[cfg(test)]
mod tests {
    use rill_protocol::{Key, PartitionId};

    use super::*;

    #[test]
    fn backend_failures_become_client_errors_that_say_what_happened() {
        let partition = PartitionId(3);
        assert_eq!(
            ClientError::from(rill_client::Error::NotLeader { partition }).to_string(),
            "Expected to handle the request, but partition 3 has no leader right now; retry \
             later"
        );
        let unavailable = ClientError::from(rill_client::Error::Unavailable {
            partition,
            reason: "starting".into(),
        });
        assert!(
            unavailable
                .to_string()
                .ends_with("is unavailable: starting"),
            "{unavailable}"
        );
        assert!(unavailable.is_transient());
        assert_eq!(
            ClientError::from(rill_client::Error::ResourceExhausted {
                partition,
                limit: 7,
                reason: None,
            }),
            ClientError::ResourceExhausted {
                partition,
                reason: None
            }
        );
        let disk_full = ClientError::from(rill_client::Error::ResourceExhausted {
            partition,
            limit: 0,
            reason: Some("the disk of the data directory /data is 98.0% full".to_owned()),
        });
        assert!(
            disk_full
                .to_string()
                .contains("refuses it: the disk of the data directory /data is 98.0% full"),
            "{disk_full}"
        );
        assert_eq!(
            ClientError::from(rill_client::Error::Timeout),
            ClientError::DeadlineExceeded
        );
        let internal = ClientError::from(rill_client::Error::Internal("lost".into()));
        assert_eq!(
            internal.to_string(),
            "Unexpected error while handling the request: lost"
        );
        assert!(!internal.is_transient());
    }

    #[test]
    fn a_rejection_names_the_intent_and_its_code() {
        let command = Command::CompleteJob {
            job_key: Key(1),
            variables: Default::default(),
            result: Default::default(),
        };
        let error = ClientError::rejected(
            &command,
            &Rejection::new(RejectionType::InvalidState, "it is failed"),
        );
        assert_eq!(
            error.to_string(),
            "Command 'COMPLETE' rejected with code 'INVALID_STATE': it is failed"
        );
    }

    #[test]
    fn bad_input_keeps_its_field() {
        let error = ClientError::invalid_property("retries", "expected at least 1");
        assert_eq!(error.field(), Some("retries"));
        assert_eq!(
            error.to_string(),
            "Property 'retries' is invalid: expected at least 1"
        );
        assert_eq!(ClientError::invalid_argument("empty").field(), None);
    }
}
