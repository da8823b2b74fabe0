//! A broker's side of the command API: what gateways (and other brokers) call on
//! `cluster.command-port`, and the router that delivers cross-partition commands to
//! partitions led here or elsewhere.
//!
//! ```text
//!  COMMAND: ApiRequest ──► CommandApi::serve ──► partition (submit / query) ──► ApiAnswer
//!  TOPOLOGY ─────────────► CommandApi::topology (roles, leaders, terms) ───────► NodeTopology
//!  JOBS_AVAILABLE: JobsPoll ► JobsFeed::poll (held open until news) ───────────► JobsNews
//!  COMMAND: StreamJobs ──► JobPushes::stream (held open until jobs are pushed) ► JOB_BATCH
//! ```
//!
//! The messages are `rill_protocol`'s; a broker [`Error`] becomes a wire [`ApiError`]
//! through `From`. The broker's own command-API client (`rill_client::CommandClient`)
//! calls this API in process ([`LocalCommandApi`]) for the partitions led here, and the
//! broker's [`ClusterRouter`] sends through that client to partitions led elsewhere.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use rill_client::{CommandClient, LocalCommandApi};
use rill_config::RillConfig;
use rill_engine_api::Engine;
use rill_protocol::{
    ApiAnswer, ApiError, ApiRequest, BROKER_VERSION, Command, CommandResponse, JOBS_POLL_TIMEOUT,
    JobsNews, JobsPoll, NodeId, NodeTopology, PartitionId, Query, QueryResult, ReplicaRole,
    ReplicaView, codec,
};
use rill_transport::{Handler, ServiceId};
use tokio::sync::{broadcast, watch};

use crate::cluster::ClusterState;
use crate::delivery::{DEFAULT_WINDOW, Delivered, PartitionRouter, deliver_here};
use crate::error::{Error, Result};
use crate::job_push::JobPushes;
use crate::partition::{JobsAvailable, Partition, PartitionMap, Role};

/// An engine whose commands, responses and queries are the protocol's, so that the
/// command API can carry them.
pub trait ProtocolEngine:
    Engine<Command = Command, Response = CommandResponse, Query = Query, QueryResult = QueryResult>
{
}

impl<E> ProtocolEngine for E where
    E: Engine<
            Command = Command,
            Response = CommandResponse,
            Query = Query,
            QueryResult = QueryResult,
        >
{
}

/// Notifications kept for gateways that poll a little late.
const JOBS_RETAINED: usize = 1024;

/// The partitions a broker hosts, as they change (a cluster change adds and removes
/// replicas). Held by the servers instead of the node, so that stopping the node is not
/// held up by the servers that still refer to it.
pub type Partitions<E> = PartitionMap<E>;

impl From<&Error> for ApiError {
    fn from(error: &Error) -> Self {
        match error {
            Error::NotLeader { leader, .. } => ApiError::NotLeader {
                leader: leader.map(|l| l.0),
            },
            Error::ResourceExhausted { limit, .. } => ApiError::ResourceExhausted { limit: *limit },
            Error::Refused { reason, .. } => ApiError::Refused {
                reason: reason.clone(),
            },
            Error::Timeout { .. } => ApiError::Timeout,
            Error::ShuttingDown { .. } => ApiError::ShuttingDown,
            Error::HistoryDisabled => ApiError::HistoryDisabled,
            Error::EngineVersionTooLow {
                required, current, ..
            } => ApiError::EngineVersionTooLow {
                required: *required,
                current: *current,
            },
            // The error's type does not cross the wire; its message does.
            other => ApiError::Failed(other.to_string()),
        }
    }
}

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        ApiError::from(&error)
    }
}

/// Calls `notify` with every jobs-available notification of `partitions`, from tasks on
/// the current runtime. Notifications a slow forwarder missed are skipped: long pollers
/// ask the partitions again anyway.
pub fn forward_jobs_available<E: Engine>(
    partitions: &Partitions<E>,
    notify: impl Fn(JobsAvailable) + Clone + Send + 'static,
) {
    // Subscribed before the partitions are listed, so that none added meanwhile is
    // missed (one listed and added is followed twice: harmless, notifications are hints).
    let mut added = partitions.subscribe_added();
    for partition in partitions.values() {
        forward_one(&partition, notify.clone());
    }
    tokio::spawn(async move {
        loop {
            match added.recv().await {
                Ok(partition) => forward_one(&partition, notify.clone()),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

fn forward_one<E: Engine>(
    partition: &Partition<E>,
    notify: impl Fn(JobsAvailable) + Send + 'static,
) {
    let mut rx = partition.subscribe_jobs_available();
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(event) => notify(event),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

/// Recent "jobs available" notifications of this broker's partitions, numbered by epoch.
pub struct JobsFeed {
    events: Mutex<VecDeque<(u64, u16, String)>>,
    epoch: watch::Sender<u64>,
    /// Set at shutdown: polls answer at once instead of being held open.
    closed: watch::Sender<bool>,
}

impl JobsFeed {
    /// Collects the notifications of `partitions` (call inside a runtime).
    pub fn start<E: Engine>(partitions: &Partitions<E>) -> Arc<JobsFeed> {
        let feed = Arc::new(JobsFeed::empty());
        let sink = feed.clone();
        forward_jobs_available(partitions, move |event| {
            sink.push(event.partition_id.get(), event.job_type)
        });
        feed
    }

    fn empty() -> JobsFeed {
        JobsFeed {
            events: Mutex::new(VecDeque::new()),
            epoch: watch::channel(0).0,
            closed: watch::channel(false).0,
        }
    }

    fn push(&self, partition: u16, job_type: String) {
        let mut events = self.events.lock();
        let epoch = *self.epoch.borrow() + 1;
        events.push_back((epoch, partition, job_type));
        if events.len() > JOBS_RETAINED {
            events.pop_front();
        }
        drop(events);
        self.epoch.send_replace(epoch);
    }

    /// Answers every poll held open now or later at once (the broker is stopping, and
    /// its transport waits for running handlers).
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Waits until there is news after `after` (or the poll timeout passes).
    async fn poll(&self, after: u64) -> JobsNews {
        let mut epoch = self.epoch.subscribe();
        let current = *epoch.borrow_and_update();
        if after == 0 && current > 0 {
            // A gateway's first poll: it only wants news from now on. The retained
            // notifications would wake its long polls for job types long since worked.
            return JobsNews {
                epoch: current,
                lost: false,
                events: Vec::new(),
            };
        }
        if after > current {
            // The poller counted on an earlier run of this broker.
            return JobsNews {
                epoch: current,
                lost: true,
                events: Vec::new(),
            };
        }
        if after == current {
            let mut closed = self.closed.subscribe();
            tokio::select! {
                _ = tokio::time::timeout(JOBS_POLL_TIMEOUT, epoch.changed()) => {}
                _ = closed.wait_for(|closed| *closed) => {}
            }
        }
        let events = self.events.lock();
        let epoch = events.back().map_or(current, |(e, _, _)| *e);
        let lost = events
            .front()
            .is_some_and(|(first, _, _)| *first > after + 1);
        let unique: BTreeSet<(u16, String)> = events
            .iter()
            .filter(|(e, _, _)| *e > after)
            .map(|(_, p, t)| (*p, t.clone()))
            .collect();
        JobsNews {
            epoch,
            lost,
            events: unique.into_iter().collect(),
        }
    }
}

/// Serves the command API of a broker.
pub struct CommandApi<E: Engine> {
    pub partitions: Partitions<E>,
    pub config: RillConfig,
    pub jobs: Arc<JobsFeed>,
    /// Job push to the gateways' job streams, for the partitions led here.
    pub push: Arc<JobPushes>,
    /// Where clients reach this API (`host:port`), as reported in the topology.
    pub command_address: String,
    /// The cluster configuration, whose brokers, partitions and replication factor the
    /// topology reports once a change altered them (else the settings').
    pub cluster: Option<ClusterState>,
}

fn answer(value: &ApiAnswer) -> Result<Bytes, String> {
    codec::encode(value)
        .map(Bytes::from)
        .map_err(|e| format!("encoding the answer: {e}"))
}

impl<E: ProtocolEngine> CommandApi<E> {
    pub fn node_id(&self) -> NodeId {
        NodeId(self.config.cluster.node_id)
    }

    /// Answers one request for `partition`. A submitted command enters the partition's
    /// mailbox before this returns, so requests keep their order.
    pub fn serve(
        &self,
        partition: PartitionId,
        request: ApiRequest,
    ) -> BoxFuture<'static, ApiAnswer> {
        let Some(target) = self.partitions.get(&partition) else {
            return Box::pin(async { ApiAnswer::Error(ApiError::NotLeader { leader: None }) });
        };
        match request {
            ApiRequest::Submit {
                command,
                timeout_ms,
            } => {
                let result = target.submit_now(command, Duration::from_millis(timeout_ms));
                Box::pin(async move {
                    match result.await {
                        Ok(answered) => ApiAnswer::Response {
                            response: answered.response,
                            term: answered.term,
                        },
                        Err(e) => ApiAnswer::Error(e.into()),
                    }
                })
            }
            ApiRequest::Deliver {
                command,
                checkpoint_id,
                timeout_ms,
            } => {
                let delivered =
                    target.deliver_now(command, checkpoint_id, Duration::from_millis(timeout_ms));
                Box::pin(async move {
                    match delivered.await {
                        Ok((answered, checkpoint_id)) => ApiAnswer::Delivered {
                            response: answered.response,
                            term: answered.term,
                            checkpoint_id,
                        },
                        Err(e) => ApiAnswer::Error(e.into()),
                    }
                })
            }
            ApiRequest::StreamJobs { stream, wait_ms } => {
                self.push
                    .stream(partition, stream, Duration::from_millis(wait_ms))
            }
            ApiRequest::Query { query } => Box::pin(async move {
                match target.answer(query).await {
                    Ok(result) => ApiAnswer::QueryResult(result),
                    Err(e) => ApiAnswer::Error(e.into()),
                }
            }),
        }
    }

    /// This broker's view of the cluster, as the `TOPOLOGY` service answers it.
    pub fn topology(&self) -> NodeTopology {
        let config = &self.config;
        // New instances go to the active partitions only: an added partition takes
        // them once it has every deployment.
        let (
            cluster_size,
            partitions_count,
            replication_factor,
            message_partitions_count,
            configuration_version,
            added,
        ) = match &self.cluster {
            Some(cluster) => {
                let current = cluster.current();
                let added = current
                    .brokers
                    .iter()
                    .filter_map(|(&id, broker)| Some((id, broker.command_address.clone()?)))
                    .collect();
                (
                    current.brokers.len() as u32,
                    current.active_partitions(),
                    current.replication_factor,
                    current.routing.message_partitions,
                    current.version,
                    added,
                )
            }
            None => (
                config.cluster.size,
                config.cluster.partitions_count,
                config.cluster.replication_factor,
                config.cluster.partitions_count,
                0,
                Vec::new(),
            ),
        };
        NodeTopology {
            node_id: config.cluster.node_id,
            cluster_size,
            partitions_count,
            replication_factor,
            command_address: self.command_address.clone(),
            version: BROKER_VERSION.to_owned(),
            message_partitions_count,
            partitions: self
                .partitions
                .values()
                .iter()
                .map(Partition::status)
                .map(|s| ReplicaView {
                    partition: s.partition_id.get(),
                    role: match s.role {
                        Role::Leader => ReplicaRole::Leader,
                        Role::Follower | Role::Candidate => ReplicaRole::Follower,
                        Role::Inactive => ReplicaRole::Inactive,
                    },
                    leader: s.leader.map(|l| l.0),
                    term: s.term,
                    healthy: s.healthy,
                })
                .collect(),
            configuration_version,
            added_brokers: added,
        }
    }

    fn command(
        &self,
        partition: PartitionId,
        payload: &[u8],
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        let request: ApiRequest = match codec::decode(payload) {
            Ok(request) => request,
            Err(e) => return Box::pin(async move { Err(format!("malformed request: {e}")) }),
        };
        let served = self.serve(partition, request);
        Box::pin(async move { answer(&served.await) })
    }
}

/// The broker's own command-API client asks this broker in process.
impl<E: ProtocolEngine> LocalCommandApi for CommandApi<E> {
    fn node_id(&self) -> NodeId {
        CommandApi::node_id(self)
    }

    fn serve(&self, partition: PartitionId, request: ApiRequest) -> BoxFuture<'static, ApiAnswer> {
        CommandApi::serve(self, partition, request)
    }

    fn topology(&self) -> NodeTopology {
        CommandApi::topology(self)
    }

    fn poll_jobs(&self, after: u64) -> BoxFuture<'static, JobsNews> {
        let jobs = self.jobs.clone();
        Box::pin(async move { jobs.poll(after).await })
    }
}

impl<E: ProtocolEngine> Handler for CommandApi<E> {
    fn handle(
        &self,
        _from: NodeId,
        service: ServiceId,
        partition: PartitionId,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes, String>> {
        match service {
            ServiceId::COMMAND => self.command(partition, &payload),
            ServiceId::TOPOLOGY => {
                let topology = self.topology();
                Box::pin(async move {
                    codec::encode(&topology)
                        .map(Bytes::from)
                        .map_err(|e| e.to_string())
                })
            }
            ServiceId::JOBS_AVAILABLE => {
                let jobs = self.jobs.clone();
                Box::pin(async move {
                    let poll: JobsPoll =
                        codec::decode(&payload).map_err(|e| format!("malformed poll: {e}"))?;
                    let news = jobs.poll(poll.after).await;
                    codec::encode(&news)
                        .map(Bytes::from)
                        .map_err(|e| e.to_string())
                })
            }
            other => Box::pin(async move { Err(format!("unknown service {other}")) }),
        }
    }
}

/// Delivers cross-partition commands: to the partition here when this broker leads it,
/// else through the broker's command-API client to its leader elsewhere.
pub struct ClusterRouter<E: Engine> {
    pub partitions: Partitions<E>,
    pub client: Arc<CommandClient>,
}

impl<E: Engine> ClusterRouter<E> {
    fn led_here(&self, target: PartitionId) -> Option<Partition<E>> {
        self.partitions
            .get(&target)
            .filter(|p| p.status().role == Role::Leader)
    }
}

impl<E: ProtocolEngine> PartitionRouter<E> for ClusterRouter<E> {
    fn deliver(
        &self,
        target: PartitionId,
        command: E::Command,
        checkpoint_id: u64,
        timeout: Duration,
    ) -> BoxFuture<'static, Result<Delivered<E::Response>>> {
        match self.led_here(target) {
            Some(partition) => Box::pin(deliver_here(&partition, command, checkpoint_id, timeout)),
            None => {
                let client = self.client.clone();
                Box::pin(async move {
                    let (response, checkpoint_id) = client
                        .deliver(target, command, checkpoint_id, timeout)
                        .await
                        .map_err(|error| Error::delivery(target, timeout, error))?;
                    Ok(Delivered {
                        response,
                        checkpoint_id,
                    })
                })
            }
        }
    }

    fn window(&self, target: PartitionId) -> usize {
        // Requests over the network may overtake each other: one at a time keeps order.
        if self.led_here(target).is_some() {
            DEFAULT_WINDOW
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_first_poll_gets_the_epoch_and_later_polls_the_news_since() {
        let feed = JobsFeed::empty();
        feed.push(1, "old".to_owned());
        feed.push(2, "old".to_owned());

        let first = feed.poll(0).await;
        assert_eq!((first.epoch, first.lost), (2, false));
        assert!(first.events.is_empty(), "{:?}", first.events);

        feed.push(1, "new".to_owned());
        let next = feed.poll(first.epoch).await;
        assert_eq!((next.epoch, next.lost), (3, false));
        assert_eq!(next.events, vec![(1, "new".to_owned())]);
    }

    #[tokio::test]
    async fn a_poll_past_the_retained_news_is_told_some_was_lost() {
        let feed = JobsFeed::empty();
        for _ in 0..JOBS_RETAINED + 5 {
            feed.push(1, "work".to_owned());
        }
        let news = feed.poll(2).await;
        assert!(news.lost);
        assert_eq!(news.epoch, (JOBS_RETAINED + 5) as u64);
        assert_eq!(news.events, vec![(1, "work".to_owned())]);
    }

    #[test]
    fn broker_errors_keep_their_values_on_the_wire() {
        let partition = PartitionId(3);
        let cases = [
            (
                Error::NotLeader {
                    partition,
                    leader: Some(NodeId(2)),
                },
                ApiError::NotLeader { leader: Some(2) },
            ),
            (
                Error::ResourceExhausted {
                    partition,
                    limit: 17,
                },
                ApiError::ResourceExhausted { limit: 17 },
            ),
            (
                Error::Timeout {
                    partition,
                    timeout: Duration::from_secs(1),
                },
                ApiError::Timeout,
            ),
            (Error::ShuttingDown { partition }, ApiError::ShuttingDown),
            (Error::HistoryDisabled, ApiError::HistoryDisabled),
        ];
        for (error, wire) in cases {
            assert_eq!(ApiError::from(error), wire);
        }
        let failed = Error::Failed {
            partition,
            reason: "disk full".to_owned(),
        };
        let message = failed.to_string();
        assert_eq!(ApiError::from(failed), ApiError::Failed(message));
    }
}
