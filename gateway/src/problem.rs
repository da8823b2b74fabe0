//! RFC 9457 problem details, written the way Camunda's REST API writes them:
//! `type` is `about:blank`, `title` a stable code (a rejection type such as
//! `NOT_FOUND`, or `INVALID_ARGUMENT` for bad input), `detail` says what is wrong,
//! `instance` is the request path.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rill_protocol::{Command, RejectionType};
use serde::Serialize;

use crate::backend::BackendError;
use crate::limits::MESSAGE_SIZE_SETTING;

pub const CONTENT_TYPE_PROBLEM: &str = "application/problem+json";

/// An error answer to a REST request.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub status: StatusCode,
    pub title: String,
    pub detail: String,
    /// Filled in from the request path when the response is written.
    pub instance: Option<String>,
    /// Sent as `Retry-After` (whole seconds, at least 1).
    pub retry_after: Option<Duration>,
}

impl Problem {
    pub fn new(status: StatusCode, title: impl Into<String>, detail: impl Into<String>) -> Self {
        Problem {
            status,
            title: title.into(),
            detail: detail.into(),
            instance: None,
            retry_after: None,
        }
    }

    /// Bad input: 400 `INVALID_ARGUMENT`.
    pub fn invalid_argument(detail: impl Into<String>) -> Self {
        Problem::new(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", detail)
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Problem::new(StatusCode::NOT_FOUND, "NOT_FOUND", detail)
    }

    /// A body over `gateway.max-message-size`.
    pub fn payload_too_large(limit: u64) -> Self {
        Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!(
                "The request body is larger than the maximum message size of {limit} bytes \
                 (set by {MESSAGE_SIZE_SETTING})"
            ),
        )
    }

    pub fn with_instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }

    /// A rejected command, with Camunda's detail shape:
    /// `Command 'COMPLETE' rejected with code 'NOT_FOUND': <reason>`.
    pub fn from_rejection(command: &Command, rejection_type: RejectionType, reason: &str) -> Self {
        let (status, title) = match rejection_type {
            RejectionType::InvalidArgument => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
            RejectionType::NotFound => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            RejectionType::InvalidState => (StatusCode::CONFLICT, "INVALID_STATE"),
            RejectionType::AlreadyExists => (StatusCode::CONFLICT, "ALREADY_EXISTS"),
            RejectionType::Unauthorized => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED"),
            // Too many or too large records for one batch: caused by the request's size.
            RejectionType::ExceededBatchRecordSize => {
                (StatusCode::BAD_REQUEST, "EXCEEDED_BATCH_RECORD_SIZE")
            }
            RejectionType::ProcessingError | RejectionType::NullVal => {
                (StatusCode::INTERNAL_SERVER_ERROR, "PROCESSING_ERROR")
            }
        };
        let detail = format!(
            "Command '{}' rejected with code '{}': {}",
            command_intent(command),
            title,
            reason
        );
        Problem::new(status, title, detail)
    }

    /// A failure on the broker's side, never bad client input.
    fn internal(message: impl std::fmt::Display) -> Self {
        Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            format!("Unexpected error while handling the request: {message}"),
        )
    }

    /// A failure to reach or hear from the partition.
    pub fn from_backend(error: &BackendError) -> Self {
        match error {
            BackendError::NotLeader { partition } => Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "PARTITION_UNAVAILABLE",
                format!(
                    "Expected to handle the request, but partition {partition} has no leader \
                     right now; retry later"
                ),
            ),
            BackendError::Unavailable { partition, reason } => Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "PARTITION_UNAVAILABLE",
                format!(
                    "Expected to handle the request, but partition {partition} is unavailable: \
                     {reason}"
                ),
            ),
            BackendError::ResourceExhausted { partition, .. } => Problem {
                retry_after: Some(Duration::from_secs(1)),
                ..Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "RESOURCE_EXHAUSTED",
                    format!(
                        "Expected to handle the request, but partition {partition} is overloaded \
                         (backpressure); retry after a back-off"
                    ),
                )
            },
            BackendError::Timeout => Problem::new(
                StatusCode::GATEWAY_TIMEOUT,
                "DEADLINE_EXCEEDED",
                "Expected to handle the request, but it timed out between gateway and broker; \
                 the command may or may not have been applied",
            ),
            BackendError::Shutdown => Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                "The node is shutting down",
            ),
            BackendError::Failed { source, .. } => Problem::internal(source),
            BackendError::Codec { .. } => Problem::internal(error),
            BackendError::Internal(message) => Problem::internal(message),
        }
    }
}

/// Zeebe's intent name for the command, as rejection details name it.
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
        // Not reached: `inner()` looks through every wrapper.
        Command::Referenced { .. } => "UNKNOWN",
    };
    name.to_owned()
}

#[derive(Serialize)]
struct ProblemBody<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    title: &'a str,
    status: u16,
    detail: &'a str,
    instance: &'a str,
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = ProblemBody {
            kind: "about:blank",
            title: &self.title,
            status: self.status.as_u16(),
            detail: &self.detail,
            instance: self.instance.as_deref().unwrap_or(""),
        };
        // Serializing strings and a number cannot fail; fall back to an empty object.
        let bytes = serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec());
        let mut response = (self.status, bytes).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(CONTENT_TYPE_PROBLEM),
        );
        if let Some(retry_after) = self.retry_after {
            let seconds = retry_after.as_secs().max(1);
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.instance.is_none() {
            // The server's middleware re-renders it with the request path as `instance`.
            response.extensions_mut().insert(self);
        }
        response
    }
}
