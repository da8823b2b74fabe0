//! A partition: one raft group, its state, and the stream processor that applies its
//! log, behind an async API for the gateway and the command API.
//!
//! ```text
//!   submit ─► [flow control] ─► queue ─► group commit ─► raft.client_write ──┐
//!                                                                            │ replicate,
//!   answer ◄── processor: engine.process per command ◄── committed entries ◄─┘ fsync, commit
//! ```
//!
//! Everything that touches the engine or partition state runs in one ractor actor on the
//! cpu runtime (see `actor`, which also maps its parts). Raft calls into it through the
//! state machine adapter (`raft`).

mod actor;
mod election;
mod leader;
mod map;
mod raft;
mod replica;
mod requests;
mod snapshots;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};
use rill_config::{RaftConfig, RequestLimitConfig, RillConfig};
use rill_engine_api::Engine;
use rill_protocol::{NodeId, PartitionId, Position, Record};
use rill_raft::{Raft, RaftService, RaftTransport};
use tokio::runtime::Handle;
use tokio::sync::{broadcast, oneshot, watch};
use tracing::Instrument;

use crate::delivery::PartitionRouter;
use crate::error::{ActorError, Error, Result};
use crate::export::ExporterFactory;
use crate::history::HistorySettings;
use crate::metrics::BrokerMetrics;
use actor::{Msg, PartitionActor, StartArgs};
pub use map::PartitionMap;
pub use requests::Answered;

/// How a partition is set up.
#[derive(Clone, Debug)]
pub struct PartitionConfig {
    pub partition_id: PartitionId,
    /// The partition count deployments and signals are distributed over, until a
    /// cluster change stores a higher one in the partition's state.
    pub partition_count: u16,
    /// The partition count messages are routed over: the cluster's original one.
    pub message_partition_count: u16,
    /// The partition count the cluster configuration gives, as it changes: a leader
    /// whose state has a lower one proposes it (`CoreCommand::PartitionCount`).
    pub cluster_partition_count: Option<Arc<std::sync::atomic::AtomicU16>>,
    /// This node.
    pub node_id: NodeId,
    /// The replicas (including this node) and their internal addresses.
    pub members: BTreeMap<NodeId, String>,
    /// The replica that should lead when all are up (priority election, as in Zeebe):
    /// the first in placement order, so leadership spreads over the brokers like the
    /// partitions do. The others stand for election a priority step later each, in
    /// placement order (see `election`). `None`: no preference.
    pub preferred_leader: Option<NodeId>,
    /// Where the partition keeps its log, state and snapshots.
    pub directory: PathBuf,
    pub raft: RaftConfig,
    pub flow_control: RequestLimitConfig,
    /// How often a snapshot is taken (and the log purged behind it).
    pub snapshot_period: Duration,
    /// How long a submitted command may wait for its answer.
    pub request_timeout: Duration,
    /// Entries proposed and not yet applied, at most. More commands wait and are batched
    /// into the next entry (group commit).
    pub max_inflight_proposals: usize,
    /// Refuse new work (not its completion) while more records than this wait for
    /// export (`flow-control.write.throttling`); `None` never refuses.
    pub export_backlog_limit: Option<u64>,
    /// The history store (`history.*`).
    pub history: HistorySettings,
    /// The bounds on one command's work this replica stamps into the entries it
    /// proposes as leader (`engine.max-records-per-command`, `engine.max-bytes-per-command`).
    pub command_limits: rill_engine_api::CommandLimits,
    /// This replica joins a running partition (a cluster change adds it): it never
    /// starts the raft group itself, and waits for the leader to add it as a learner.
    pub joining: bool,
    /// This replica's place in the partition's priority order, from the cluster
    /// configuration and changed with it (a cluster change reconfigures priorities).
    /// When set, it replaces the rank derived from `preferred_leader` and `members`.
    pub priority_rank: Option<Arc<std::sync::atomic::AtomicU32>>,
}

impl PartitionConfig {
    /// The settings of `partition_id` on `node_id` from the node's configuration.
    pub fn from_config(
        config: &RillConfig,
        partition_id: PartitionId,
        node_id: NodeId,
        members: BTreeMap<NodeId, String>,
    ) -> PartitionConfig {
        PartitionConfig {
            partition_id,
            partition_count: config.cluster.partitions_count,
            message_partition_count: config.cluster.partitions_count,
            cluster_partition_count: None,
            node_id,
            members,
            preferred_leader: crate::node::replicas_of(
                partition_id,
                config.cluster.size,
                config.cluster.replication_factor,
            )
            .first()
            .copied(),
            directory: config
                .data
                .directory
                .join(format!("partition-{partition_id}")),
            raft: config.raft.clone(),
            flow_control: config.flow_control.request.clone(),
            snapshot_period: config.data.snapshot_period,
            request_timeout: config.gateway.request_timeout,
            max_inflight_proposals: DEFAULT_MAX_INFLIGHT_PROPOSALS,
            export_backlog_limit: config
                .flow_control
                .write
                .throttling
                .enabled
                .then_some(config.flow_control.write.throttling.acceptable_backlog),
            history: HistorySettings::from_config(config),
            command_limits: rill_engine_api::CommandLimits {
                max_records: config.engine.max_records_per_command,
                max_bytes: config.engine.max_bytes_per_command.bytes(),
            },
            joining: false,
            priority_rank: None,
        }
    }
}

/// Told each cluster configuration (JSON) a partition's state stores, as it applies it.
pub type ClusterSink = Arc<dyn Fn(String) + Send + Sync>;

/// Two entries in flight let the next batch be written while the previous is applied,
/// once a whole batch waits (see `propose`).
pub const DEFAULT_MAX_INFLIGHT_PROPOSALS: usize = 2;

/// Where a partition runs and how it talks to its peers.
#[derive(Clone)]
pub struct PartitionEnv {
    /// The cpu runtime: the partition actor and its raft run here.
    pub cpu: Handle,
    /// The io runtime: disk syncs and snapshot files.
    pub io: Handle,
    /// Carries raft messages to peers.
    pub transport: Arc<dyn RaftTransport>,
    /// Receives raft messages for this node's partitions.
    pub raft_service: RaftService,
    pub metrics: BrokerMetrics,
    /// Makes the exporters a leader runs. `None` runs no exporter director at all, and
    /// records stay in the export column family (tests that read them).
    pub exporters: Option<ExporterFactory>,
    /// What the state databases of this broker's partitions share (their block cache).
    pub state: rill_raft::StateOptions,
}

/// The raft role of this replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
    Candidate,
    /// Not a voter, or raft is not running (yet or any more).
    Inactive,
}

/// What the partition looks like from outside, updated as it changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionStatus {
    pub partition_id: PartitionId,
    pub node_id: NodeId,
    pub role: Role,
    pub leader: Option<NodeId>,
    pub term: u64,
    /// Raft index of the last applied entry.
    pub applied_index: u64,
    /// Position of the last record written.
    pub last_position: Position,
    /// Every exporter has the records up to here (replicated; the export backlog is
    /// `last_position - exported`).
    pub exported: Position,
    /// False once the partition stopped on a fatal error.
    pub healthy: bool,
    pub inflight: u32,
    /// The most requests that were ever in flight at once.
    pub peak_inflight: u32,
    pub limit: u32,
}

/// Jobs of a type became available on a partition: long-polling workers should ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobsAvailable {
    pub partition_id: PartitionId,
    pub job_type: String,
}

/// The state digest of a replica at an applied index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateDigest {
    pub applied_index: u64,
    pub digest: u64,
}

/// A running partition. Cheap to clone; every clone talks to the same actor.
pub struct Partition<E: Engine> {
    actor: ActorRef<Msg<E>>,
    join: Arc<parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>>,
    status: watch::Receiver<PartitionStatus>,
    jobs: broadcast::Sender<JobsAvailable>,
    config: Arc<PartitionConfig>,
    env: PartitionEnv,
    closed: Arc<rill_raft::ClosedSignal>,
    log_stats: Arc<rill_raft::LogStats>,
    /// `partition`, under the span of the node that started it.
    span: tracing::Span,
}

impl<E: Engine> Clone for Partition<E> {
    fn clone(&self) -> Self {
        Partition {
            actor: self.actor.clone(),
            join: self.join.clone(),
            status: self.status.clone(),
            jobs: self.jobs.clone(),
            config: self.config.clone(),
            env: self.env.clone(),
            closed: self.closed.clone(),
            log_stats: self.log_stats.clone(),
            span: self.span.clone(),
        }
    }
}

impl<E: Engine> Partition<E> {
    /// Opens the partition's storage, starts its actor on the cpu runtime and its raft,
    /// and returns once raft is running (not necessarily with a leader yet).
    pub async fn start(
        config: PartitionConfig,
        engine: E,
        env: PartitionEnv,
    ) -> Result<Partition<E>> {
        if !config.joining
            && (config.members.is_empty() || !config.members.contains_key(&config.node_id))
        {
            return Err(Error::Config(format!(
                "partition {}: node {} is not among its replicas {:?}",
                config.partition_id,
                config.node_id,
                config.members.keys().collect::<Vec<_>>()
            )));
        }
        // At error level, so that every event logged at all carries the partition.
        let span = tracing::error_span!("partition", partition = %config.partition_id);
        let config = Arc::new(config);
        let io = env.io.clone();
        let directory = config.directory.clone();
        let state_options = env.state.clone();
        let storage = env
            .io
            .spawn_blocking(move || {
                std::fs::create_dir_all(&directory).map_err(|e| {
                    Error::Config(format!("cannot create {}: {e}", directory.display()))
                })?;
                rill_raft::PartitionStorage::open(&directory, io, &state_options)
                    .map_err(Error::from)
            })
            .await
            .map_err(|e| Error::Actor(ActorError::Task(e)))??;
        let closed = Arc::new(storage.closed_signal());
        let log_stats = storage.log.stats();
        let (jobs, _) = broadcast::channel(1024);
        let (status_tx, status) = watch::channel(PartitionStatus {
            partition_id: config.partition_id,
            node_id: config.node_id,
            role: Role::Inactive,
            leader: None,
            term: 0,
            applied_index: 0,
            last_position: Position::ZERO,
            exported: Position::ZERO,
            healthy: true,
            inflight: 0,
            peak_inflight: 0,
            limit: 0,
        });
        let (started_tx, started_rx) = oneshot::channel();
        let args = StartArgs {
            config: config.clone(),
            engine,
            storage,
            env: env.clone(),
            jobs: jobs.clone(),
            status: status_tx,
            started: started_tx,
            span: span.clone(),
        };
        // ractor spawns on the current runtime: spawn from a task on the cpu runtime.
        let (actor, join) = env
            .cpu
            .spawn(async move { Actor::spawn(None, PartitionActor::<E>::default(), args).await })
            .await
            .map_err(|e| Error::Actor(ActorError::Task(e)))?
            .map_err(|e| Error::Actor(ActorError::Spawn(e)))?;
        let partition = Partition {
            actor,
            join: Arc::new(parking_lot::Mutex::new(Some(join))),
            status,
            jobs,
            config,
            env,
            closed,
            log_stats,
            span,
        };
        match started_rx.await {
            Ok(Ok(())) => Ok(partition),
            Ok(Err(reason)) => {
                partition.shutdown().await;
                Err(Error::Failed {
                    partition: partition.config.partition_id,
                    reason,
                })
            }
            Err(_) => Err(Error::Actor(ActorError::StoppedWhileStarting)),
        }
    }

    pub fn id(&self) -> PartitionId {
        self.config.partition_id
    }

    fn gone(&self) -> Error {
        Error::ShuttingDown {
            partition: self.config.partition_id,
        }
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Msg<E>,
        timeout: Duration,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.actor.send_message(make(tx)).map_err(|_| self.gone())?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) => Err(self.gone()),
            Err(_) => Err(Error::Timeout {
                partition: self.config.partition_id,
                timeout,
            }),
        }
    }

    /// Submits a command to the leader and waits for its answer.
    ///
    /// Errors: `NotLeader` (not applied; ask the leader named), `ResourceExhausted` (not
    /// applied; back off and retry), `Timeout` and `ShuttingDown` (may or may not have
    /// been applied).
    pub async fn submit(&self, command: E::Command) -> Result<E::Response> {
        self.submit_with_timeout(command, self.config.request_timeout)
            .await
    }

    /// [`Partition::submit`] with its own timeout (a create-and-await request waits
    /// as long as its client asked).
    pub async fn submit_with_timeout(
        &self,
        command: E::Command,
        timeout: Duration,
    ) -> Result<E::Response> {
        self.submit_answered(command, timeout)
            .await
            .map(|answered| answered.response)
    }

    /// [`Partition::submit_with_timeout`], with the term of the entry that carried the
    /// command.
    pub async fn submit_answered(
        &self,
        command: E::Command,
        timeout: Duration,
    ) -> Result<Answered<E::Response>> {
        // A little more than the actor's own deadline, which answers with Timeout itself.
        self.ask(
            |reply| Msg::Submit {
                command,
                timeout,
                reply,
            },
            timeout + Duration::from_millis(500),
        )
        .await?
    }

    /// Like [`Partition::submit_answered`], but the command is in the partition's
    /// mailbox when this returns, so commands arrive in the order of the calls.
    pub fn submit_now(
        &self,
        command: E::Command,
        timeout: Duration,
    ) -> impl Future<Output = Result<Answered<E::Response>>> + Send + 'static {
        let partition = self.config.partition_id;
        let (reply, rx) = oneshot::channel();
        let sent = self
            .actor
            .send_message(Msg::Submit {
                command,
                timeout,
                reply,
            })
            .is_ok();
        async move {
            if !sent {
                return Err(Error::ShuttingDown { partition });
            }
            match tokio::time::timeout(timeout + Duration::from_millis(500), rx).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(_)) => Err(Error::ShuttingDown { partition }),
                Err(_) => Err(Error::Timeout { partition, timeout }),
            }
        }
    }

    /// Tells the partition where to deliver the commands its engine sends to other
    /// partitions. Until then they wait in the engine's outbox.
    pub fn set_router(&self, router: Arc<dyn PartitionRouter<E>>) {
        let _ = self.actor.send_message(Msg::SetRouter(router));
    }

    /// Tells `sink` the cluster configuration this partition's state holds now, and each
    /// one it stores from now on (partition 1 carries it; docs/decisions/cluster-scaling.md).
    pub fn follow_cluster(&self, sink: ClusterSink) {
        let _ = self.actor.send_message(Msg::FollowCluster(sink));
    }

    /// Proposes the next cluster configuration, `json` at `version`, to be stored if the
    /// stored one is still at `expected_version`. Only a leader proposes; whether it was
    /// stored shows in what [`Partition::follow_cluster`]'s sink is told.
    pub fn propose_cluster_configuration(&self, expected_version: u64, version: u64, json: String) {
        let _ = self.actor.send_message(Msg::ProposeCore(
            crate::batch::CoreCommand::ClusterConfiguration {
                expected_version,
                version,
                json,
            },
        ));
    }

    /// How far handing this partition's deployments to added partitions got: the
    /// partition count its state has, and how many sends to partitions `first` and
    /// above wait in its outbox (not yet acknowledged).
    pub async fn redistribution(&self, first: PartitionId) -> Result<(u16, usize)> {
        self.ask(
            |reply| Msg::Redistribution { first, reply },
            Duration::from_secs(10),
        )
        .await?
    }

    async fn raft(&self) -> Result<Raft> {
        self.ask(|reply| Msg::Raft { reply }, Duration::from_secs(10))
            .await?
            .ok_or_else(|| self.gone())
    }

    /// The voters of the partition's raft group as this replica knows them.
    pub async fn voters(&self) -> Result<BTreeSet<NodeId>> {
        let raft = self.raft().await?;
        let voters = raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .voter_ids()
            .map(|id| NodeId(id as u32))
            .collect();
        Ok(voters)
    }

    /// Leader only: adds `node` (reached at `address`) as a learner and returns once it
    /// has caught up with the log as it was when this was called (openraft sends a
    /// snapshot if the log was purged). Asking again for a node that is a member already
    /// proposes nothing and only waits.
    pub async fn add_learner(&self, node: NodeId, address: String) -> Result<()> {
        let raft = self.raft().await?;
        let id = u64::from(node.0);
        let started = std::time::Instant::now();
        let member = raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .get_node(&id)
            .is_some();
        if !member {
            // Not blocking: openraft's own wait counts a learner within 5,000 entries of
            // the leader as caught up, which for a new replica of a partition with a
            // short log is at once, before it has anything.
            raft.add_learner(id, openraft::BasicNode { addr: address }, false)
                .await
                .map_err(|e| self.membership_error(e))?;
            tracing::info!(partition = %self.config.partition_id, %node, "replica move: added node {node} as a learner");
        }
        // Proposing the learner again would append a membership entry, and openraft
        // restarts every replication stream on one, a snapshot transfer with them: a
        // retried step only waits.
        let (target, snapshot) = {
            let metrics = raft.metrics();
            let metrics = metrics.borrow();
            (
                metrics.last_log_index.unwrap_or(0),
                metrics.snapshot.map_or(0, |s| s.index),
            )
        };
        let mut metrics = raft.metrics();
        let mut reached_first = false;
        loop {
            let matched = {
                let current = metrics.borrow_and_update();
                let Some(replication) = &current.replication else {
                    return Err(self.membership_error(format!(
                        "this replica no longer leads (node {node} was being added)"
                    )));
                };
                replication.get(&id).copied().flatten().map(|log| log.index)
            };
            if let Some(index) = matched {
                if !reached_first {
                    reached_first = true;
                    tracing::info!(
                        partition = %self.config.partition_id,
                        %node,
                        index,
                        snapshot,
                        target,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "replica move: learner node {node} holds the partition up to index {index}"
                    );
                }
                if index >= target {
                    tracing::info!(
                        partition = %self.config.partition_id,
                        %node,
                        index,
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "replica move: learner node {node} caught up"
                    );
                    return Ok(());
                }
            }
            if metrics.changed().await.is_err() {
                return Err(self.gone());
            }
        }
    }

    /// Leader only: makes `voters` the partition's voters (openraft's joint consensus:
    /// a quorum of the old and of the new voters at every step). A voter left out
    /// stops being a member; a leader left out steps down once the change commits.
    pub async fn change_voters(&self, voters: &BTreeSet<NodeId>) -> Result<()> {
        let raft = self.raft().await?;
        let started = std::time::Instant::now();
        let ids: BTreeSet<u64> = voters.iter().map(|n| u64::from(n.0)).collect();
        raft.change_membership(ids.clone(), false)
            .await
            .map_err(|e| self.membership_error(e))?;
        tracing::info!(
            partition = %self.config.partition_id,
            voters = ?ids,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "replica move: voters changed"
        );
        Ok(())
    }

    fn membership_error(&self, error: impl std::fmt::Display) -> Error {
        Error::Membership {
            partition: self.config.partition_id,
            reason: error.to_string(),
        }
    }

    /// Answers a read-only query from the leader's applied state.
    pub async fn query(&self, query: E::Query) -> Result<E::QueryResult> {
        self.ask(
            |reply| Msg::Query { query, reply },
            self.config.request_timeout,
        )
        .await?
    }

    /// The live state database, for reading the history store, once this replica is
    /// known to lead (as for [`Partition::query`]).
    pub(crate) async fn history_db(&self) -> Result<Arc<rill_raft::StateDb>> {
        if !self.config.history.enabled {
            return Err(Error::HistoryDisabled);
        }
        self.ask(
            |reply| Msg::HistoryDb { reply },
            self.config.request_timeout,
        )
        .await?
    }

    /// The io runtime (blocking reads).
    pub(crate) fn io(&self) -> &Handle {
        &self.env.io
    }

    /// Notifications that jobs became available (leader only).
    pub fn subscribe_jobs_available(&self) -> broadcast::Receiver<JobsAvailable> {
        self.jobs.subscribe()
    }

    /// Counters of the raft log's disk work (appends, WAL syncs).
    pub fn log_stats(&self) -> Arc<rill_raft::LogStats> {
        self.log_stats.clone()
    }

    pub fn status(&self) -> PartitionStatus {
        self.status.borrow().clone()
    }

    pub fn watch_status(&self) -> watch::Receiver<PartitionStatus> {
        self.status.clone()
    }

    /// Builds a snapshot now (and purges the log behind it, keeping the retention).
    pub async fn take_snapshot(&self) -> Result<()> {
        self.ask(|reply| Msg::TakeSnapshot { reply }, Duration::from_secs(60))
            .await?
    }

    /// The digest of this replica's state and the applied index it belongs to.
    pub async fn state_digest(&self) -> Result<StateDigest> {
        self.ask(|reply| Msg::Digest { reply }, Duration::from_secs(60))
            .await?
    }

    /// Records from `from` on, at most `limit`, from this replica's export column family.
    pub async fn read_records(&self, from: Position, limit: usize) -> Result<Vec<Record>> {
        self.ask(
            |reply| Msg::Records { from, limit, reply },
            Duration::from_secs(60),
        )
        .await?
    }

    /// Stops the partition: answers waiting requests with `ShuttingDown`, shuts raft
    /// down, stops the actor and waits until its databases are closed.
    pub async fn shutdown(&self) {
        self.stop().instrument(self.span.clone()).await
    }

    async fn stop(&self) {
        let raft = self
            .ask(
                |reply| Msg::BeginShutdown { reply },
                Duration::from_secs(10),
            )
            .await
            .ok()
            .flatten();
        self.env.raft_service.unregister(self.config.partition_id);
        if let Some(raft) = raft
            && let Err(e) = raft.shutdown().await
        {
            tracing::warn!(error = %e, "raft did not shut down cleanly");
        }
        self.actor.stop(None);
        let join = self.join.lock().take();
        if let Some(join) = join {
            let _ = join.await;
        }
        if !self.closed.wait(Duration::from_secs(30)).await {
            tracing::warn!("storage still open 30 s after shutdown");
        }
    }
}
