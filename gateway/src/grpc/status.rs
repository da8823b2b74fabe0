//! Errors as gRPC statuses, mapped as Zeebe's gateway maps them: rejections by their
//! type (`INVALID_STATE` is `FAILED_PRECONDITION`), back-pressure `RESOURCE_EXHAUSTED`,
//! a partition without a leader `UNAVAILABLE`, a timeout `DEADLINE_EXCEEDED`.
//!
//! Both APIs share one dispatch path, which answers a [`Problem`] whose title is a stable
//! code; that code chooses the status here, and the problem's detail is the message.

use tonic::{Code, Status};

use crate::problem::Problem;

pub fn from_problem(problem: Problem) -> Status {
    let code = match problem.title.as_str() {
        // Too large is bad input too: RESOURCE_EXHAUSTED would be retried as back-pressure.
        "INVALID_ARGUMENT" | "EXCEEDED_BATCH_RECORD_SIZE" | "PAYLOAD_TOO_LARGE" => {
            Code::InvalidArgument
        }
        "NOT_FOUND" => Code::NotFound,
        "INVALID_STATE" => Code::FailedPrecondition,
        "ALREADY_EXISTS" => Code::AlreadyExists,
        "UNAUTHORIZED" => Code::PermissionDenied,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "PARTITION_UNAVAILABLE" | "UNAVAILABLE" => Code::Unavailable,
        _ => Code::Internal,
    };
    Status::new(code, problem.detail)
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use rill_protocol::{Command, Key, RejectionType};

    use super::*;
    use crate::backend::BackendError;

    fn code_of(problem: Problem) -> Code {
        from_problem(problem).code()
    }

    #[test]
    fn rejections_map_as_in_zeebe() {
        let command = Command::CompleteJob {
            job_key: Key(1),
            variables: Default::default(),
            result: Default::default(),
        };
        let rejected = |kind| Problem::from_rejection(&command, kind, "why");
        assert_eq!(code_of(rejected(RejectionType::NotFound)), Code::NotFound);
        assert_eq!(
            code_of(rejected(RejectionType::InvalidState)),
            Code::FailedPrecondition
        );
        assert_eq!(
            code_of(rejected(RejectionType::InvalidArgument)),
            Code::InvalidArgument
        );
        assert_eq!(
            code_of(rejected(RejectionType::AlreadyExists)),
            Code::AlreadyExists
        );
        let status = from_problem(rejected(RejectionType::NotFound));
        assert!(status.message().contains("'COMPLETE'"), "{status:?}");
    }

    #[test]
    fn backend_failures_map_as_in_zeebe() {
        let partition = rill_protocol::PartitionId(2);
        let backend = |error| code_of(Problem::from_backend(&error));
        assert_eq!(
            backend(BackendError::ResourceExhausted {
                partition,
                limit: 3
            }),
            Code::ResourceExhausted
        );
        assert_eq!(
            backend(BackendError::NotLeader { partition }),
            Code::Unavailable
        );
        assert_eq!(backend(BackendError::Timeout), Code::DeadlineExceeded);
        assert_eq!(backend(BackendError::Shutdown), Code::Unavailable);
        assert_eq!(backend(BackendError::Internal("x".into())), Code::Internal);
        assert_eq!(
            code_of(Problem::new(StatusCode::IM_A_TEAPOT, "SOMETHING_NEW", "?")),
            Code::Internal
        );
        assert_eq!(
            code_of(Problem::payload_too_large(10)),
            Code::InvalidArgument
        );
    }
}
