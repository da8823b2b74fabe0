//! What the gateway needs from the brokers: submit a command to a partition, ask a
//! partition a read-only question, hear when jobs become available, and know the
//! topology. The command-API client (`rill_client::CommandClient`) implements it for a
//! broker's embedded gateway (the standalone's too) and a gateway apart; the REST tests
//! implement it over an engine in the test process.

use std::time::Duration;

use futures::future::BoxFuture;
use rill_client::CommandClient;
pub use rill_client::{
    Answered, BrokerInfo, JobsAvailable, JobsNotice, PartitionHealth, PartitionInfo, PartitionRole,
    Topology,
};
use rill_protocol::{ActivateJobs, Command, PartitionId, Query, QueryResult, Term};
use tokio::sync::broadcast;

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
    ) -> BoxFuture<'_, Result<Answered, rill_client::Error>>;

    /// The raft term `partition` is in as far as the backend knows (the term of the
    /// leader it routes to); `None` if it does not know, and then no answer counts as
    /// coming from a term the partition has left.
    fn current_term(&self, partition: PartitionId) -> Option<Term> {
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
    ) -> BoxFuture<'_, Result<QueryResult, rill_client::Error>>;

    /// A stream of "jobs of this type became available" notifications, for long polling.
    /// A lagging receiver should treat the lag as `JobsNotice::Missed`.
    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice>;

    /// The cluster topology.
    fn topology(&self) -> BoxFuture<'_, Result<Topology, rill_client::Error>>;

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
    ) -> BoxFuture<'_, Result<Option<Answered>, rill_client::Error>> {
        let _ = (stream, wait);
        Box::pin(async move {
            Err(rill_client::Error::Unavailable {
                partition,
                reason: "this backend does not push jobs".to_owned(),
            })
        })
    }
}

/// The command-API client serves a gateway apart (`rill gateway`) and one embedded in a
/// broker, the standalone's included.
impl GatewayBackend for CommandClient {
    fn partition_count(&self) -> u16 {
        CommandClient::partitions_count(self)
    }

    fn message_partition_count(&self) -> u16 {
        CommandClient::message_partitions_count(self)
    }

    fn submit(
        &self,
        partition: PartitionId,
        command: Command,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Answered, rill_client::Error>> {
        Box::pin(CommandClient::submit_answered(
            self, partition, command, timeout,
        ))
    }

    fn current_term(&self, partition: PartitionId) -> Option<Term> {
        CommandClient::current_term(self, partition)
    }

    fn query(
        &self,
        partition: PartitionId,
        query: Query,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<QueryResult, rill_client::Error>> {
        Box::pin(CommandClient::query(self, partition, query, timeout))
    }

    fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsNotice> {
        CommandClient::subscribe_jobs_available(self)
    }

    fn topology(&self) -> BoxFuture<'_, Result<Topology, rill_client::Error>> {
        Box::pin(async move { Ok(CommandClient::topology(self)) })
    }

    fn pushes_jobs(&self) -> bool {
        true
    }

    fn stream_jobs(
        &self,
        partition: PartitionId,
        stream: ActivateJobs,
        wait: Duration,
    ) -> BoxFuture<'_, Result<Option<Answered>, rill_client::Error>> {
        Box::pin(CommandClient::stream_jobs(self, partition, stream, wait))
    }
}
