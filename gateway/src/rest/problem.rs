//! RFC 9457 problem details, written the way Camunda's REST API writes them:
//! `type` is `about:blank`, `title` a stable code (a rejection type such as
//! `NOT_FOUND`, or `INVALID_ARGUMENT` for bad input), `detail` says what is wrong,
//! `instance` is the request path.
//!
//! A problem is derived from a [`ClientError`] by one conversion (`From<ClientError>`);
//! only the server's own failures (no such method, a panic) are written directly.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rill_protocol::RejectionType;
use serde::Serialize;

use crate::limits::MESSAGE_SIZE_SETTING;
use crate::ops::{ClientError, rejection_code};

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
    /// Sent as `WWW-Authenticate` (a 401's challenge: how to authenticate).
    pub challenge: Option<HeaderValue>,
}

impl Problem {
    pub fn new(status: StatusCode, title: impl Into<String>, detail: impl Into<String>) -> Self {
        Problem {
            status,
            title: title.into(),
            detail: detail.into(),
            instance: None,
            retry_after: None,
            challenge: None,
        }
    }

    /// With `WWW-Authenticate: <challenge>`.
    pub fn with_challenge(mut self, challenge: Option<HeaderValue>) -> Self {
        self.challenge = challenge;
        self
    }

    pub fn with_instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }
}

/// A body over `gateway.max-message-size`.
pub fn payload_too_large(limit: u64) -> ClientError {
    ClientError::TooLarge {
        field: None,
        detail: format!(
            "The request body is larger than the maximum message size of {limit} bytes \
             (set by {MESSAGE_SIZE_SETTING})"
        ),
    }
}

/// How long a client told to back off waits before it tries again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

impl From<ClientError> for Problem {
    /// REST's one conversion: the status and title by the error's kind (Camunda's
    /// mapping), the error's message as the detail.
    fn from(error: ClientError) -> Problem {
        let (status, title) = match &error {
            ClientError::Rejected { kind, .. } => (
                match kind {
                    RejectionType::InvalidArgument => StatusCode::BAD_REQUEST,
                    RejectionType::NotFound => StatusCode::NOT_FOUND,
                    RejectionType::InvalidState | RejectionType::AlreadyExists => {
                        StatusCode::CONFLICT
                    }
                    RejectionType::Unauthorized => StatusCode::UNAUTHORIZED,
                    // Too many or too large records for one batch: caused by the request.
                    RejectionType::ExceededBatchRecordSize => StatusCode::BAD_REQUEST,
                    RejectionType::ProcessingError | RejectionType::NullVal => {
                        StatusCode::INTERNAL_SERVER_ERROR
                    }
                },
                rejection_code(*kind),
            ),
            ClientError::NotFound { .. } => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            ClientError::InvalidArgument { .. } => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
            ClientError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE"),
            ClientError::PartitionUnavailable { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "PARTITION_UNAVAILABLE")
            }
            ClientError::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
            // Camunda's v2 API: 503 with this title, which its clients back off on.
            ClientError::ResourceExhausted { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "RESOURCE_EXHAUSTED")
            }
            ClientError::DeadlineExceeded => (StatusCode::GATEWAY_TIMEOUT, "DEADLINE_EXCEEDED"),
            // Camunda's engine-only mode (no secondary storage) answers its reads 403.
            ClientError::HistoryDisabled { .. } => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            ClientError::Internal { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
            ClientError::Unauthenticated { .. } => (StatusCode::UNAUTHORIZED, "UNAUTHORIZED"),
            ClientError::Forbidden { .. } => (StatusCode::FORBIDDEN, "FORBIDDEN"),
            ClientError::TooManyFailedLogins { .. } => {
                (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_REQUESTS")
            }
        };
        let retry_after = match &error {
            ClientError::ResourceExhausted { .. } => Some(RETRY_AFTER),
            ClientError::TooManyFailedLogins { retry_after } => Some(*retry_after),
            _ => None,
        };
        Problem {
            retry_after,
            ..Problem::new(status, title, error.to_string())
        }
    }
}

impl IntoResponse for ClientError {
    fn into_response(self) -> Response {
        Problem::from(self).into_response()
    }
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
        if let Some(challenge) = &self.challenge {
            headers.insert(header::WWW_AUTHENTICATE, challenge.clone());
        }
        if self.instance.is_none() {
            // The server's middleware re-renders it with the request path as `instance`.
            response.extensions_mut().insert(self);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::one_of_each;

    #[test]
    fn every_client_error_has_its_status_and_title() {
        let expected = [
            (400, "INVALID_ARGUMENT"),
            (404, "NOT_FOUND"),
            (409, "INVALID_STATE"),
            (409, "ALREADY_EXISTS"),
            (401, "UNAUTHORIZED"),
            (400, "EXCEEDED_BATCH_RECORD_SIZE"),
            (500, "PROCESSING_ERROR"),
            (500, "PROCESSING_ERROR"),
            (404, "NOT_FOUND"),
            (400, "INVALID_ARGUMENT"),
            (413, "PAYLOAD_TOO_LARGE"),
            (503, "PARTITION_UNAVAILABLE"),
            (503, "UNAVAILABLE"),
            (503, "RESOURCE_EXHAUSTED"),
            (504, "DEADLINE_EXCEEDED"),
            (403, "FORBIDDEN"),
            (401, "UNAUTHORIZED"),
            (403, "FORBIDDEN"),
            (500, "INTERNAL"),
            (429, "TOO_MANY_REQUESTS"),
        ];
        let errors = one_of_each();
        assert_eq!(errors.len(), expected.len());
        for (error, (status, title)) in errors.into_iter().zip(expected) {
            let message = error.to_string();
            let exhausted = matches!(
                error,
                ClientError::ResourceExhausted { .. } | ClientError::TooManyFailedLogins { .. }
            );
            let problem = Problem::from(error);
            assert_eq!(problem.status.as_u16(), status, "{message}");
            assert_eq!(problem.title, title, "{message}");
            assert_eq!(problem.detail, message);
            // Only back-pressure and a login throttle tell the client when to come back.
            assert_eq!(problem.retry_after.is_some(), exhausted, "{message}");
        }
    }

    #[test]
    fn a_rejection_detail_is_camundas() {
        let problem = Problem::from(ClientError::Rejected {
            intent: "COMPLETE".to_owned(),
            kind: RejectionType::NotFound,
            reason: "no job".to_owned(),
        });
        assert_eq!(
            problem.detail,
            "Command 'COMPLETE' rejected with code 'NOT_FOUND': no job"
        );
    }

    #[test]
    fn back_pressure_says_when_to_retry() {
        let response = ClientError::ResourceExhausted {
            partition: rill_protocol::PartitionId(1),
            reason: None,
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            CONTENT_TYPE_PROBLEM
        );
    }
}
