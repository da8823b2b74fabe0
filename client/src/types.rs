//! What the client answers: a partition's response with its term, the cluster's
//! topology, jobs-available notices, and why a request failed ([`Error`]). The gateway
//! converts an [`Error`] into its client error, the broker into its own error, each once.

use rill_protocol::{ApiAnswer, ApiError, CodecError, CommandResponse, NodeId, PartitionId, Term};

/// Why a request could not be answered by a partition.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
    /// `reason` says why, when it is not the in-flight limit (a full disk).
    #[error("partition {partition} is overloaded ({})", reason.clone().unwrap_or_else(|| format!("{limit} requests in flight")))]
    ResourceExhausted {
        partition: PartitionId,
        limit: u32,
        reason: Option<String>,
    },
    /// No answer within the timeout. The command may or may not have been applied.
    #[error("the request timed out")]
    Timeout,
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Shutdown,
    /// The broker could not process the request (a failed partition, a failed query).
    /// The source is the broker's answer, [`ApiError::Failed`].
    #[error("partition {partition} failed the request: {source}")]
    Failed {
        partition: PartitionId,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The request is a read, and the partition's history store, which answers every
    /// read, is off on its broker (`history.enabled = false`).
    #[error("partition {partition}: {}", ApiError::HistoryDisabled)]
    HistoryDisabled { partition: PartitionId },
    /// The command needs a higher engine version than the cluster runs (a rolling
    /// upgrade is not finished): nothing was written.
    #[error("partition {partition}: {}", ApiError::EngineVersionTooLow { required: *required, current: *current })]
    EngineVersionTooLow {
        partition: PartitionId,
        required: u32,
        current: u32,
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

impl Error {
    /// What the broker's answer `error` to a request for `partition` means here.
    pub fn from_api(partition: PartitionId, error: ApiError) -> Error {
        match error {
            ApiError::NotLeader { .. } => Error::NotLeader { partition },
            ApiError::ResourceExhausted { limit } => Error::ResourceExhausted {
                partition,
                limit,
                reason: None,
            },
            ApiError::Refused { reason } => Error::ResourceExhausted {
                partition,
                limit: 0,
                reason: Some(reason),
            },
            ApiError::Timeout => Error::Timeout,
            ApiError::ShuttingDown => Error::Shutdown,
            ApiError::HistoryDisabled => Error::HistoryDisabled { partition },
            ApiError::EngineVersionTooLow { required, current } => Error::EngineVersionTooLow {
                partition,
                required,
                current,
            },
            ApiError::Failed(_) => Error::Failed {
                partition,
                source: Box::new(error),
            },
        }
    }

    /// Errors after which the same command can safely be sent again.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::NotLeader { .. } | Error::Unavailable { .. })
    }
}

/// A partition's response to a command, with the raft term of the log entry that carried
/// the command (`None` where the backend cannot tell). An answer from a term the
/// partition has since left may have waited out an election (see `activation`).
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    pub response: CommandResponse,
    pub term: Option<Term>,
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

/// What a broker's answer to a job stream's request means: pushed jobs, none, or why not.
pub fn stream_answer(partition: PartitionId, answer: ApiAnswer) -> Result<Option<Answered>, Error> {
    match answer {
        ApiAnswer::Response { response, term } => Ok(Some(Answered {
            response,
            term: Some(term),
        })),
        ApiAnswer::StreamIdle => Ok(None),
        // A stopping broker hands its partitions on: ask the next leader.
        ApiAnswer::Error(ApiError::ShuttingDown) => Err(Error::Unavailable {
            partition,
            reason: ApiError::ShuttingDown.to_string(),
        }),
        ApiAnswer::Error(error) => Err(Error::from_api(partition, error)),
        ApiAnswer::QueryResult(_) | ApiAnswer::Delivered { .. } => Err(Error::Internal(
            "a broker answered a job stream with a query result or a delivery's answer".to_owned(),
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
            Error::from_api(p, leader),
            Error::NotLeader { partition } if partition == p
        ));
        assert!(matches!(
            Error::from_api(p, ApiError::ResourceExhausted { limit: 9 }),
            Error::ResourceExhausted { partition, limit: 9, reason: None } if partition == p
        ));
        let refused = Error::from_api(
            p,
            ApiError::Refused {
                reason: "the disk is full".to_owned(),
            },
        );
        assert!(
            refused.to_string().ends_with("(the disk is full)"),
            "{refused}"
        );
        assert!(matches!(
            Error::from_api(p, ApiError::Timeout),
            Error::Timeout
        ));
        assert!(matches!(
            Error::from_api(p, ApiError::ShuttingDown),
            Error::Shutdown
        ));
        assert!(matches!(
            Error::from_api(p, ApiError::HistoryDisabled),
            Error::HistoryDisabled { partition } if partition == p
        ));
        let failed = Error::from_api(p, ApiError::Failed("disk full".into()));
        let source = std::error::Error::source(&failed).expect("a source");
        assert_eq!(
            source.downcast_ref::<ApiError>(),
            Some(&ApiError::Failed("disk full".into()))
        );
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
