//! The command API between gateways and brokers: what a gateway (or a broker delivering
//! to another partition) sends a partition leader, what it hears back, and what a broker
//! tells about itself.
//!
//! ```text
//!  gateway ── COMMAND: ApiRequest ──────────► leader of the partition ── ApiAnswer
//!          ── TOPOLOGY ─────────────────────► any broker ─────────────── NodeTopology
//!          ── JOBS_AVAILABLE: JobsPoll ─────► any broker (long poll) ─── JobsNews
//!          ── COMMAND: StreamJobs ──────────► leader of the partition ── jobs it pushed
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Term;
use crate::command::{ActivateJobs, Command, CommandResponse};
use crate::query::{Query, QueryResult};

/// How long a broker holds a jobs-available poll open when nothing happens (the gateway
/// waits a little longer).
pub const JOBS_POLL_TIMEOUT: Duration = Duration::from_secs(10);

/// A request to a broker's command API, for one partition. (Built once per request and
/// encoded at once, so the size of the largest variant costs nothing.)
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ApiRequest {
    Submit {
        command: Command,
        timeout_ms: u64,
    },
    Query {
        query: Query,
    },
    /// A gateway's job stream (its client streams of one job type and activation
    /// settings, aggregated): the leader holds the request for up to `wait_ms`, and
    /// answers it with the jobs it activated for the stream (a `Response` with the
    /// JOB_BATCH), or `StreamIdle` when none came. The gateway asks again at once, so
    /// the stream stays registered while it is open.
    StreamJobs {
        stream: ActivateJobs,
        wait_ms: u64,
    },
    /// A command one partition sends another through its outbox (a broker's courier),
    /// with the sender's latest backup checkpoint id (0: none). A leader whose own
    /// checkpoint is lower records that checkpoint before it applies the command, and
    /// answers with [`ApiAnswer::Delivered`] (docs/decisions/backup.md). (Appended: the
    /// variant order is the wire's encoding.)
    Deliver {
        command: Command,
        checkpoint_id: u64,
        timeout_ms: u64,
    },
}

/// A broker's answer.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ApiAnswer {
    /// A command's response, with the raft term of the log entry that carried the command
    /// (of the leader that answered, for one answered from state). The gateway judges by
    /// it whether the answer outlived its leader's term.
    Response {
        response: CommandResponse,
        term: Term,
    },
    QueryResult(QueryResult),
    Error(ApiError),
    /// A job stream's wait passed with no job for it.
    StreamIdle,
    /// The answer to [`ApiRequest::Deliver`]: the command's response and term, with the
    /// receiving partition's latest checkpoint id, which the sender records before it
    /// records the acknowledgement. (Appended: the variant order is the wire's encoding.)
    Delivered {
        response: CommandResponse,
        term: Term,
        checkpoint_id: u64,
    },
}

/// Why a broker did not answer a request with a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum ApiError {
    /// Not applied: this broker does not lead the partition (`leader` if it knows one).
    #[error("the broker does not lead the partition (leader: {})", leader.map_or("unknown".to_owned(), |l| format!("node {l}")))]
    NotLeader { leader: Option<u32> },
    /// Not applied: flow control refused it, with `limit` requests in flight.
    #[error("the partition has {limit} requests in flight, its current limit")]
    ResourceExhausted { limit: u32 },
    /// No answer in time: it may or may not have been applied.
    #[error("no answer in time; it may or may not have been applied")]
    Timeout,
    /// The broker is shutting down: it may or may not have been applied.
    #[error("the broker is shutting down")]
    ShuttingDown,
    /// Anything else (a failed partition, a failed query), as the broker describes it:
    /// its error type does not cross the wire, its message does.
    #[error("{0}")]
    Failed(String),
    /// A read the history store answers, sent to a broker whose history store is off
    /// (`history.enabled = false`): reads are the history store's alone. (Appended: the
    /// variant order is the wire's encoding.)
    #[error(
        "reads are answered by the history store, which is off on this broker \
         (history.enabled = false)"
    )]
    HistoryDisabled,
    /// Not applied: the partition refuses new commands for a reason other than its
    /// in-flight limit, which `reason` names (its disk is past
    /// `data.disk-usage-command-watermark`, or it cannot write to disk). Clients back
    /// off and retry, as on `ResourceExhausted`. (Appended, as above.)
    #[error("{reason}")]
    Refused { reason: String },
    /// Not applied: the command needs the partition's log at engine version `required`,
    /// and the cluster still runs `current` because a broker does not support `required`
    /// yet (a rolling upgrade in progress). (Appended, as above.)
    #[error(
        "the command needs engine version {required}, and the cluster runs engine version \
         {current}: it rises once every broker runs a release that supports it (finish the \
         rolling upgrade)"
    )]
    EngineVersionTooLow { required: u32, current: u32 },
}

/// The role of a broker for one partition, as it reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaRole {
    Leader,
    Follower,
    Inactive,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplicaView {
    pub partition: u16,
    pub role: ReplicaRole,
    pub leader: Option<u32>,
    pub term: Term,
    pub healthy: bool,
}

/// What a broker tells about itself and its partitions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeTopology {
    pub node_id: u32,
    pub cluster_size: u32,
    pub partitions_count: u16,
    pub replication_factor: u16,
    /// Where clients reach its command API (`host:port`).
    pub command_address: String,
    pub version: String,
    pub partitions: Vec<ReplicaView>,
    /// The version of the cluster configuration `added_brokers` comes from (0: none).
    pub configuration_version: u64,
    /// `(node id, command address)` of the brokers that cluster changes added: a gateway
    /// apart knows the others from its contact points, not these.
    pub added_brokers: Vec<(u32, String)>,
    /// Messages are routed by correlation-key hash over partitions
    /// `1..=message_partitions_count` (the count the cluster was created with), while
    /// `partitions_count` (new instances) grows as partitions are added.
    pub message_partitions_count: u16,
}

/// Asks for notifications after `after` (an epoch from an earlier answer, 0 at first).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobsPoll {
    pub after: u64,
}

/// Notifications since the asked epoch. `lost` says some were dropped (the poller should
/// wake every waiting request).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JobsNews {
    pub epoch: u64,
    pub lost: bool,
    pub events: Vec<(u16, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    #[test]
    fn api_errors_keep_their_encoding() {
        // The variant index follows the format byte; a variant appended later must not
        // move the ones before it.
        let failed = codec::encode(&ApiError::Failed("x".to_owned())).unwrap();
        assert_eq!(failed[1], 4);
        let disabled = codec::encode(&ApiError::HistoryDisabled).unwrap();
        assert_eq!(disabled[1], 5);
        let decoded: ApiError = codec::decode(&disabled).unwrap();
        assert_eq!(decoded, ApiError::HistoryDisabled);
        assert!(decoded.to_string().contains("history.enabled = false"));
    }
}
