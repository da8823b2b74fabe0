//! The one error type of the broker crate. Errors a client can see carry a stable code
//! ([`Error::code`]) and a message that says what to do.

use std::time::Duration;

use rill_engine_api::StateError;
use rill_protocol::{CodecError, NodeId, PartitionId};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("partition {partition} is not led by this node (leader: {})", leader.map_or("unknown".to_owned(), |l| format!("node {l}")))]
    NotLeader {
        partition: PartitionId,
        leader: Option<NodeId>,
    },
    #[error(
        "RESOURCE_EXHAUSTED: partition {partition} has {limit} requests in flight, its current limit; retry after a short backoff"
    )]
    ResourceExhausted { partition: PartitionId, limit: u32 },
    #[error(
        "request to partition {partition} timed out after {timeout:?}; it may or may not have been applied"
    )]
    Timeout {
        partition: PartitionId,
        timeout: Duration,
    },
    #[error("partition {partition} is shutting down; retry on its next leader")]
    ShuttingDown { partition: PartitionId },
    #[error("partition {partition} stopped after a fatal error: {reason}")]
    Failed {
        partition: PartitionId,
        reason: String,
    },
    #[error("query failed: {0}")]
    QueryFailed(String),
    #[error("a log entry cannot be read: {0}")]
    CorruptEntry(String),
    #[error(transparent)]
    Raft(#[from] rill_raft::Error),
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("cannot start the {what} runtime: {source}")]
    Runtime {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("partition actor: {0}")]
    Actor(String),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("internal network: {0}")]
    Network(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A stable code for clients (gRPC status names; REST maps them to HTTP statuses).
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotLeader { .. } => "NOT_LEADER",
            Error::ResourceExhausted { .. } => "RESOURCE_EXHAUSTED",
            Error::Timeout { .. } => "DEADLINE_EXCEEDED",
            Error::ShuttingDown { .. } => "UNAVAILABLE",
            _ => "INTERNAL",
        }
    }

    /// True when the command certainly was not applied, so a client may retry it.
    pub fn is_definitely_not_applied(&self) -> bool {
        matches!(
            self,
            Error::NotLeader { .. } | Error::ResourceExhausted { .. }
        )
    }
}
