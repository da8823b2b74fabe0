//! What the gateway needs from the brokers: submit a command to a partition, ask a
//! partition a read-only question, hear when jobs become available, and know the
//! topology. The in-process standalone broker implements this directly; a remote
//! cluster client will implement it over the command API.

use std::time::Duration;

use futures::future::BoxFuture;
use rill_protocol::value::IncidentErrorType;
use rill_protocol::{Command, CommandResponse, Key, NodeId, PartitionId, Timestamp};
use tokio::sync::broadcast;

/// Why a request could not be answered by a partition.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
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
    /// Flow control rejected the command; the client should back off and retry.
    #[error("partition {partition} is overloaded")]
    ResourceExhausted { partition: PartitionId },
    /// No answer within the timeout. The command may or may not have been applied.
    #[error("the request timed out")]
    Timeout,
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Shutdown,
    /// Anything else: a broken invariant on the broker side, never bad client input.
    #[error("internal error: {0}")]
    Internal(String),
}

impl BackendError {
    /// Errors after which the same command can safely be sent again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            BackendError::NotLeader { .. } | BackendError::Unavailable { .. }
        )
    }
}

/// Jobs of a type became activatable on a partition (sent by the partition leader after
/// the commit that created, failed or timed out such jobs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobsAvailable {
    pub partition: PartitionId,
    pub job_type: String,
}

/// Read-only questions answered from a partition's state (not from a search engine).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// A process instance, running or finished within the read retention.
    ProcessInstance { process_instance_key: Key },
    /// The incidents (open and, while retained, resolved) of one process instance.
    IncidentsOfInstance { process_instance_key: Key },
    /// One incident by its key.
    Incident { incident_key: Key },
    /// All variables of a process instance, in every scope.
    VariablesOfInstance { process_instance_key: Key },
}

/// The answer to a [`Query`]; `None` / empty when nothing matches.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryResult {
    ProcessInstance(Option<ProcessInstanceView>),
    Incidents(Vec<IncidentView>),
    Incident(Option<IncidentView>),
    Variables(Vec<VariableView>),
}

/// The lifecycle state of a process instance as the REST API reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceState {
    Active,
    Completed,
    Terminated,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProcessInstanceView {
    pub process_instance_key: Key,
    pub bpmn_process_id: String,
    pub process_definition_name: Option<String>,
    pub version: i32,
    pub process_definition_key: Key,
    pub state: InstanceState,
    pub has_incident: bool,
    pub start_date: Timestamp,
    pub end_date: Option<Timestamp>,
    pub parent_process_instance_key: Option<Key>,
    pub parent_element_instance_key: Option<Key>,
    pub tenant_id: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncidentState {
    Active,
    Resolved,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IncidentView {
    pub incident_key: Key,
    pub process_instance_key: Key,
    pub process_definition_key: Key,
    pub bpmn_process_id: String,
    pub element_id: String,
    pub element_instance_key: Key,
    pub job_key: Option<Key>,
    pub error_type: IncidentErrorType,
    pub error_message: String,
    pub creation_time: Timestamp,
    pub state: IncidentState,
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VariableView {
    pub variable_key: Key,
    pub name: String,
    /// The value as JSON text.
    pub value: String,
    pub scope_key: Key,
    pub process_instance_key: Key,
    pub tenant_id: String,
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
    /// True when every partition has a healthy leader.
    pub fn all_partitions_led(&self) -> bool {
        (1..=self.partitions_count).all(|p| {
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

    /// Submits a command to the leader of `partition` and waits up to `timeout` for its
    /// response (for create-and-await: until the instance completes).
    fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<CommandResponse, BackendError>>;

    /// Answers a read-only question from the state of `partition`.
    fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<QueryResult, BackendError>>;

    /// A stream of "jobs of this type became available" notifications, for long polling.
    /// A lagging receiver should treat the lag as a wake-up.
    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsAvailable>;

    /// The cluster topology.
    fn topology(&self) -> BoxFuture<'_, Result<Topology, BackendError>>;
}
