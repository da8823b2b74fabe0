//! What the gateway needs from the brokers: submit a command to a partition, ask a
//! partition a read-only question, hear when jobs become available, and know the
//! topology. The in-process standalone broker implements this directly; a remote
//! cluster client will implement it over the command API.

use std::time::Duration;

use futures::future::BoxFuture;
use rill_protocol::{
    ActivateJobs, ApiAnswer, ApiError, CodecError, Command, CommandResponse, NodeId, PartitionId,
    Query, QueryResult,
};
use tokio::sync::broadcast;

/// Why a request could not be answered by a partition.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The addressed broker does not lead the partition (any more). The command was not
    /// accepted, so the gateway retries it within the request timeout.
    #[error("partition {partition} has no reachable leader")]
    NotLeader { partition: PartitionId },
    /// The partition cannot take requests right now (starting, electing a leader, the
    /// connection dropped before sending). The command was not accepted, so the gateway
    /// retries it within the request timeout.
    #[error("partition {partition} is unavailable: {reason}")]
    Unavailable {
        partition: PartitionId,
        reason: String,
    },
    /// Flow control rejected the command, with `limit` requests in flight; the client
    /// should back off and retry.
    #[error("partition {partition} is overloaded ({limit} requests in flight)")]
    ResourceExhausted { partition: PartitionId, limit: u32 },
    /// No answer within the timeout. The command may or may not have been applied.
    #[error("the request timed out")]
    Timeout,
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Shutdown,
    /// The broker could not process the request (a failed partition, a failed query).
    /// The source is the broker's error: its own type in this process, the wire's
    /// [`ApiError`] from another.
    #[error("partition {partition} failed the request: {source}")]
    Failed {
        partition: PartitionId,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A command API message could not be encoded or decoded.
    #[error("{what}: {source}")]
    Codec {
        what: &'static str,
        #[source]
        source: CodecError,
    },
    /// Anything else: a broken invariant, never bad client input.
    #[error("internal error: {0}")]
    Internal(String),
}

impl BackendError {
    /// What the broker's answer `error` to a request for `partition` means here.
    pub fn from_api(partition: PartitionId, error: ApiError) -> BackendError {
        match error {
            ApiError::NotLeader { .. } => BackendError::NotLeader { partition },
            ApiError::ResourceExhausted { limit } => {
                BackendError::ResourceExhausted { partition, limit }
            }
            ApiError::Timeout => BackendError::Timeout,
            ApiError::ShuttingDown => BackendError::Shutdown,
            ApiError::Failed(_) => BackendError::Failed {
                partition,
                source: Box::new(error),
            },
        }
    }

    /// Like [`BackendError::from_api`], for the error of a broker in this process: it
    /// means what it would mean on the wire, and a failure keeps it as its source.
    pub fn from_local<E>(partition: PartitionId, error: E) -> BackendError
    where
        E: std::error::Error + Send + Sync + 'static,
        for<'a> &'a E: Into<ApiError>,
    {
        match (&error).into() {
            ApiError::Failed(_) => BackendError::Failed {
                partition,
                source: Box::new(error),
            },
            wire => BackendError::from_api(partition, wire),
        }
    }

    /// Errors after which the same command can safely be sent again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            BackendError::NotLeader { .. } | BackendError::Unavailable { .. }
        )
    }
}

/// A partition's response to a command, with the raft term of the log entry that carried
/// the command (`None` where the backend cannot tell). An answer from a term the
/// partition has since left may have waited out an election (see `activation`).
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    pub response: CommandResponse,
    pub term: Option<u64>,
}

/// Jobs of a type became activatable on a partition (sent by the partition leader after
/// the commit that created, failed or timed out such jobs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobsAvailable {
    pub partition: PartitionId,
    pub job_type: String,
}

/// What the backend tells long polls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobsNotice {
    Available(JobsAvailable),
    /// Notifications were dropped before they reached this gateway (a broker kept no more
    /// for it): every waiting activation should look again, on every partition.
    Missed,
}

/// A broker's role for one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionRole {
    Leader,
    Follower,
    Inactive,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionHealth {
    Healthy,
    Unhealthy,
    Dead,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PartitionInfo {
    pub partition: PartitionId,
    pub role: PartitionRole,
    pub health: PartitionHealth,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BrokerInfo {
    pub node_id: NodeId,
    pub host: String,
    pub port: u16,
    pub version: String,
    pub partitions: Vec<PartitionInfo>,
}

/// The cluster as the gateway currently sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub cluster_size: u32,
    pub partitions_count: u16,
    pub replication_factor: u32,
    pub brokers: Vec<BrokerInfo>,
}

impl Topology {
    /// True when every partition has a healthy leader. A topology that names no
    /// partition (no broker answered yet) is not.
    pub fn all_partitions_led(&self) -> bool {
        self.partitions_count > 0
            && (1..=self.partitions_count).all(|p| {
                self.brokers.iter().any(|b| {
                    b.partitions.iter().any(|info| {
                        info.partition == PartitionId(p)
                            && info.role == PartitionRole::Leader
                            && info.health == PartitionHealth::Healthy
                    })
                })
            })
    }
}

/// The brokers, as seen from the gateway. Object safe, so the binary can hand the
/// gateway an `Arc<dyn GatewayBackend>` for either the in-process broker or a remote
/// cluster.
pub trait GatewayBackend: Send + Sync + 'static {
    /// Partitions are numbered `1..=partition_count()`.
    fn partition_count(&self) -> u16;

    /// Messages are routed by correlation-key hash over partitions
    /// `1..=message_partition_count()`: the count the cluster was created with, which
    /// stays when partitions are added.
    fn message_partition_count(&self) -> u16 {
        self.partition_count()
    }

    /// Submits a command to the leader of `partition` and waits up to `timeout` for its
    /// response (for create-and-await: until the instance completes).
    fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Answered, BackendError>>;

    /// The raft term `partition` is in as far as the backend knows (the term of the
    /// leader it routes to); `None` if it does not know, and then no answer counts as
    /// coming from a term the partition has left.
    fn current_term(&self, partition: PartitionId) -> Option<u64> {
        let _ = partition;
        None
    }

    /// Answers a read-only question from the state of `partition` (the engine's query
    /// API: process instances, incidents, variables).
    fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<QueryResult, BackendError>>;

    /// A stream of "jobs of this type became available" notifications, for long polling.
    /// A lagging receiver should treat the lag as `JobsNotice::Missed`.
    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice>;

    /// The cluster topology.
    fn topology(&self) -> BoxFuture<'_, Result<Topology, BackendError>>;

    /// Whether partition leaders push jobs to job streams ([`GatewayBackend::stream_jobs`]);
    /// without, job streams long-poll.
    fn pushes_jobs(&self) -> bool {
        false
    }

    /// Registers a job stream (`stream`: the activation settings of the client streams it
    /// stands for) with the leader of `partition`, and waits up to `wait` for the jobs it
    /// pushes: the answer to the activation command it proposed for the stream, or
    /// `None` when none came.
    fn stream_jobs(
        &self,
        partition: PartitionId,
        stream: ActivateJobs,
        wait: Duration,
    ) -> BoxFuture<'_, Result<Option<Answered>, BackendError>> {
        let _ = (stream, wait);
        Box::pin(async move {
            Err(BackendError::Unavailable {
                partition,
                reason: "this backend does not push jobs".to_owned(),
            })
        })
    }
}

/// What a broker's answer to a job stream's request means: pushed jobs, none, or why not.
pub fn stream_answer(
    partition: PartitionId,
    answer: ApiAnswer,
) -> Result<Option<Answered>, BackendError> {
    match answer {
        ApiAnswer::Response { response, term } => Ok(Some(Answered {
            response,
            term: Some(term),
        })),
        ApiAnswer::StreamIdle => Ok(None),
        // A stopping broker hands its partitions on: ask the next leader.
        ApiAnswer::Error(ApiError::ShuttingDown) => Err(BackendError::Unavailable {
            partition,
            reason: ApiError::ShuttingDown.to_string(),
        }),
        ApiAnswer::Error(error) => Err(BackendError::from_api(partition, error)),
        ApiAnswer::QueryResult(_) => Err(BackendError::Internal(
            "a broker answered a job stream with a query result".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broker_answer_keeps_its_values_and_a_failure_its_source() {
        let p = PartitionId(2);
        let leader = ApiError::NotLeader { leader: Some(1) };
        assert!(matches!(
            BackendError::from_api(p, leader),
            BackendError::NotLeader { partition } if partition == p
        ));
        assert!(matches!(
            BackendError::from_api(p, ApiError::ResourceExhausted { limit: 9 }),
            BackendError::ResourceExhausted { partition, limit: 9 } if partition == p
        ));
        assert!(matches!(
            BackendError::from_api(p, ApiError::Timeout),
            BackendError::Timeout
        ));
        assert!(matches!(
            BackendError::from_api(p, ApiError::ShuttingDown),
            BackendError::Shutdown
        ));
        let failed = BackendError::from_api(p, ApiError::Failed("disk full".into()));
        let source = std::error::Error::source(&failed).expect("a source");
        assert_eq!(
            source.downcast_ref::<ApiError>(),
            Some(&ApiError::Failed("disk full".into()))
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("the partition stopped")]
    struct Stopped;

    impl From<&Stopped> for ApiError {
        fn from(error: &Stopped) -> ApiError {
            ApiError::Failed(error.to_string())
        }
    }

    #[test]
    fn a_local_failure_keeps_the_broker_error_itself_as_its_source() {
        let error = BackendError::from_local(PartitionId(1), Stopped);
        let source = std::error::Error::source(&error).expect("a source");
        assert!(source.downcast_ref::<Stopped>().is_some(), "{source:?}");
    }

    fn broker(node: u32, led: &[u16]) -> BrokerInfo {
        BrokerInfo {
            node_id: NodeId(node),
            host: "localhost".into(),
            port: 26501,
            version: "test".into(),
            partitions: led
                .iter()
                .map(|&p| PartitionInfo {
                    partition: PartitionId(p),
                    role: PartitionRole::Leader,
                    health: PartitionHealth::Healthy,
                })
                .collect(),
        }
    }

    #[test]
    fn every_partition_needs_a_healthy_leader() {
        let topology = |partitions_count, brokers| Topology {
            cluster_size: 2,
            partitions_count,
            replication_factor: 1,
            brokers,
        };
        assert!(topology(2, vec![broker(0, &[1]), broker(1, &[2])]).all_partitions_led());
        assert!(!topology(2, vec![broker(0, &[1])]).all_partitions_led());
        // Nothing heard from any broker yet: not ready.
        assert!(!topology(0, vec![]).all_partitions_led());
        let mut unhealthy = topology(1, vec![broker(0, &[1])]);
        unhealthy.brokers[0].partitions[0].health = PartitionHealth::Unhealthy;
        assert!(!unhealthy.all_partitions_led());
    }
}
