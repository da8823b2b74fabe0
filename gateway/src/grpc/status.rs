//! gRPC's one conversion: a [`ClientError`] as a `Status`, coded as Zeebe's gateway
//! codes its errors: rejections by their type (`INVALID_STATE` is `FAILED_PRECONDITION`),
//! back-pressure `RESOURCE_EXHAUSTED`, a partition without a leader `UNAVAILABLE`, a
//! timeout `DEADLINE_EXCEEDED`. The error's message is the status message.

use rill_protocol::RejectionType;
use tonic::{Code, Status};

use crate::ops::ClientError;

impl From<ClientError> for Status {
    fn from(error: ClientError) -> Status {
        let code = match &error {
            ClientError::Rejected { kind, .. } => match kind {
                // Too large is bad input too: RESOURCE_EXHAUSTED would be retried as
                // back-pressure.
                RejectionType::InvalidArgument | RejectionType::ExceededBatchRecordSize => {
                    Code::InvalidArgument
                }
                RejectionType::NotFound => Code::NotFound,
                RejectionType::InvalidState => Code::FailedPrecondition,
                RejectionType::AlreadyExists => Code::AlreadyExists,
                RejectionType::Unauthorized => Code::PermissionDenied,
                RejectionType::ProcessingError | RejectionType::NullVal => Code::Internal,
            },
            ClientError::InvalidArgument { .. } | ClientError::TooLarge { .. } => {
                Code::InvalidArgument
            }
            ClientError::NotFound { .. } => Code::NotFound,
            ClientError::PartitionUnavailable { .. } | ClientError::Unavailable { .. } => {
                Code::Unavailable
            }
            // Clients back off on it, which is what a source with too many failed logins
            // should do.
            ClientError::ResourceExhausted { .. } | ClientError::TooManyFailedLogins { .. } => {
                Code::ResourceExhausted
            }
            ClientError::DeadlineExceeded => Code::DeadlineExceeded,
            ClientError::Unauthenticated { .. } => Code::Unauthenticated,
            ClientError::Forbidden { .. } => Code::PermissionDenied,
            // Not the caller's permissions but the cluster's setup, and not worth retrying.
            ClientError::HistoryDisabled { .. } => Code::FailedPrecondition,
            ClientError::Internal { .. } => Code::Internal,
        };
        Status::new(code, error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::one_of_each;

    #[test]
    fn every_client_error_has_zeebes_code() {
        let expected = [
            Code::InvalidArgument,
            Code::NotFound,
            Code::FailedPrecondition,
            Code::AlreadyExists,
            Code::PermissionDenied,
            // Too large is bad input: RESOURCE_EXHAUSTED would be retried.
            Code::InvalidArgument,
            Code::Internal,
            Code::Internal,
            Code::NotFound,
            Code::InvalidArgument,
            Code::InvalidArgument,
            Code::Unavailable,
            Code::Unavailable,
            Code::ResourceExhausted,
            Code::DeadlineExceeded,
            Code::FailedPrecondition,
            Code::Unauthenticated,
            Code::PermissionDenied,
            Code::Internal,
            Code::ResourceExhausted,
        ];
        let errors = one_of_each();
        assert_eq!(errors.len(), expected.len());
        for (error, code) in errors.into_iter().zip(expected) {
            let message = error.to_string();
            let status = Status::from(error);
            assert_eq!(status.code(), code, "{message}");
            assert_eq!(status.message(), message);
        }
    }

    #[test]
    fn a_rejection_message_names_the_command() {
        let status = Status::from(ClientError::Rejected {
            intent: "COMPLETE".to_owned(),
            kind: RejectionType::NotFound,
            reason: "no job".to_owned(),
        });
        assert_eq!(status.code(), Code::NotFound);
        assert!(status.message().contains("'COMPLETE'"), "{status:?}");
    }
}
