//! The one error type of the broker crate. Errors a client can see carry a stable code
//! ([`Error::code`]) and a message that says what to do.

use std::net::SocketAddr;
use std::time::Duration;

use rill_engine_api::{EngineError, StateError};
use rill_protocol::{CodecError, NodeId, PartitionId};
use rill_raft::RaftNodeId;

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
    /// Not applied: the partition refuses new commands for `reason` (its disk is past
    /// `data.disk-usage-command-watermark`, or it cannot write to disk); retry after a
    /// backoff.
    #[error("RESOURCE_EXHAUSTED: partition {partition} refuses the command: {reason}")]
    Refused {
        partition: PartitionId,
        reason: String,
    },
    /// The state write of an applied batch failed; nothing of the batch was written.
    #[error("cannot write the applied state: {0}")]
    StateWrite(#[source] rill_raft::Error),
    #[error(
        "request to partition {partition} timed out after {timeout:?}; it may or may not have been applied"
    )]
    Timeout {
        partition: PartitionId,
        timeout: Duration,
    },
    #[error("partition {partition} is shutting down; retry on its next leader")]
    ShuttingDown { partition: PartitionId },
    /// Not written: the command needs the partition's log at engine version
    /// `required`, and it is at `current` (a broker of the cluster does not support
    /// `required` yet).
    #[error(
        "partition {partition} refuses the command: it needs engine version {required}, and \
         the cluster runs engine version {current}; it rises once every broker runs a \
         release that supports it (finish the rolling upgrade)"
    )]
    EngineVersionTooLow {
        partition: PartitionId,
        required: u32,
        current: u32,
    },
    /// The log holds a command of an engine version this build does not apply: the
    /// partition stops rather than diverge from the replicas that apply it.
    #[error(
        "partition {partition}: the log entry at index {log_index} needs engine version \
         {required}, and this broker (Rill {}) applies engine versions {supported}: the \
         partition stops here rather than diverge; run a release that supports engine \
         version {required} (a broker is never downgraded once the engine version rose)",
        rill_protocol::BROKER_VERSION
    )]
    EngineVersionUnsupported {
        partition: PartitionId,
        log_index: u64,
        required: u32,
        supported: rill_protocol::version::EngineVersions,
    },
    #[error("partition {partition}: membership change failed: {reason}")]
    Membership {
        partition: PartitionId,
        reason: String,
    },
    #[error("partition {partition} stopped after a fatal error: {reason}")]
    Failed {
        partition: PartitionId,
        reason: String,
    },
    #[error("query failed: {0}")]
    QueryFailed(#[source] EngineError),
    #[error("history: {0}")]
    History(#[from] rill_history::HistoryError),
    #[error("history is off on this broker (history.enabled = false)")]
    HistoryDisabled,
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
    Actor(#[source] ActorError),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("internal network: {0}")]
    Network(#[source] NetworkError),
    /// A cross-partition command could not be handed to the partition's leader on
    /// another broker, for a reason other than the ones above (the command-API client's
    /// error is the source).
    #[error("delivery to partition {partition} failed: {source}")]
    Delivery {
        partition: PartitionId,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Why a partition's actor, or a task it depends on, did not run.
#[derive(Debug, thiserror::Error)]
pub enum ActorError {
    #[error("cannot spawn it: {0}")]
    Spawn(#[source] ractor::SpawnErr),
    #[error("a partition task failed: {0}")]
    Task(#[source] tokio::task::JoinError),
    #[error("it stopped while starting")]
    StoppedWhileStarting,
    /// Boxed: openraft's error is large, and every broker `Result` would carry its size.
    #[error("raft: {0}")]
    Raft(#[source] Box<openraft::error::Fatal<RaftNodeId>>),
}

/// Why the internal network (the transport between nodes) did not start.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error("internal port {listen}: {source}")]
    Transport {
        listen: SocketAddr,
        #[source]
        source: rill_transport::TransportError,
    },
    #[error("transport metrics: {0}")]
    Metrics(#[source] prometheus::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A stable code for clients (gRPC status names; REST maps them to HTTP statuses).
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotLeader { .. } => "NOT_LEADER",
            Error::ResourceExhausted { .. } | Error::Refused { .. } => "RESOURCE_EXHAUSTED",
            Error::EngineVersionTooLow { .. } => "FAILED_PRECONDITION",
            Error::Timeout { .. } => "DEADLINE_EXCEEDED",
            Error::ShuttingDown { .. } => "UNAVAILABLE",
            _ => "INTERNAL",
        }
    }

    /// What the command-API client's failure to deliver a cross-partition command to
    /// `target` within `timeout` means for the sending partition's courier (which
    /// delivers again in any case). The one conversion from the client's error.
    pub fn delivery(target: PartitionId, timeout: Duration, error: rill_client::Error) -> Error {
        use rill_client::Error as Client;
        match error {
            Client::NotLeader { .. } | Client::Unavailable { .. } => Error::NotLeader {
                partition: target,
                leader: None,
            },
            Client::ResourceExhausted { limit, .. } => Error::ResourceExhausted {
                partition: target,
                limit,
            },
            Client::Timeout => Error::Timeout {
                partition: target,
                timeout,
            },
            Client::Shutdown => Error::ShuttingDown { partition: target },
            Client::EngineVersionTooLow {
                required, current, ..
            } => Error::EngineVersionTooLow {
                partition: target,
                required,
                current,
            },
            other => Error::Delivery {
                partition: target,
                source: Box::new(other),
            },
        }
    }

    /// True when the command certainly was not applied, so a client may retry it.
    #[must_use]
    pub fn is_definitely_not_applied(&self) -> bool {
        matches!(
            self,
            Error::NotLeader { .. }
                | Error::ResourceExhausted { .. }
                | Error::Refused { .. }
                | Error::EngineVersionTooLow { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_delivery_keeps_the_limit_and_is_no_timeout_unless_it_timed_out() {
        let target = PartitionId(2);
        let timeout = Duration::from_secs(10);
        let exhausted = rill_client::Error::ResourceExhausted {
            partition: target,
            limit: 12,
            reason: None,
        };
        assert!(matches!(
            Error::delivery(target, timeout, exhausted),
            Error::ResourceExhausted { partition, limit: 12 } if partition == target
        ));
        assert!(matches!(
            Error::delivery(target, timeout, rill_client::Error::Timeout),
            Error::Timeout { timeout: t, .. } if t == timeout
        ));
        let broken = rill_client::Error::Internal("unexpected answer".to_owned());
        match Error::delivery(target, timeout, broken) {
            Error::Delivery { partition, source } => {
                assert_eq!(partition, target);
                assert!(source.to_string().contains("unexpected answer"), "{source}");
            }
            other => panic!("{other:?}"),
        }
    }
}
