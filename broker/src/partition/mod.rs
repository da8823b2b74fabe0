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
mod config;
mod election;
#[cfg(feature = "simulation")]
pub(crate) use election::{ElectionPlan, drive as drive_elections};
mod leader;
mod map;
mod membership;
mod raft;
mod replica;
mod requests;
mod snapshots;
mod transfer;

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};
use rill_engine_api::Engine;
use rill_protocol::{NodeId, PartitionId, Position, Record, Term};
use rill_raft::{Raft, RaftService, RaftTransport};
use tokio::runtime::Handle;
use tokio::sync::{broadcast, oneshot, watch};
use tracing::Instrument;

use crate::delivery::PartitionRouter;
use crate::error::{ActorError, Error, Result};
use crate::export::ExporterFactory;
use crate::metrics::BrokerMetrics;
use actor::{Msg, PartitionActor, StartArgs};
pub use config::{DEFAULT_MAX_INFLIGHT_PROPOSALS, PartitionConfig};
pub use map::PartitionMap;
pub use requests::Answered;
pub use transfer::HandOver;

/// Told each cluster configuration (JSON) a partition's state stores, as it applies it.
pub type ClusterSink = Arc<dyn Fn(String) + Send + Sync>;

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
    /// The data directory's disk usage: past its command watermark, leaders refuse new
    /// commands.
    pub disk: crate::disk::DiskUsage,
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
    pub term: Term,
    /// Raft index of the last applied entry.
    pub applied_index: u64,
    /// Position of the last record written.
    pub last_position: Position,
    /// The partition's replicated engine version (what may be written to its log).
    pub engine_version: u32,
    /// Every exporter has the records up to here (replicated; the export backlog is
    /// `last_position - exported`).
    pub exported: Position,
    /// False once the partition stopped on a fatal error, and while a disk write fails
    /// (and is retried).
    pub healthy: bool,
    pub inflight: u32,
    /// The most requests that were ever in flight at once.
    pub peak_inflight: u32,
    pub limit: u32,
    /// The latest backup checkpoint id in this replica's applied state (0: none).
    pub checkpoint_id: u64,
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
    /// Disk writes that fail and are retried; retrying stops at shutdown.
    faults: rill_raft::WriteFaults,
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
            faults: self.faults.clone(),
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
        let faults = storage.faults.clone();
        let (jobs, _) = broadcast::channel(1024);
        let (status_tx, status) = watch::channel(PartitionStatus {
            partition_id: config.partition_id,
            node_id: config.node_id,
            role: Role::Inactive,
            leader: None,
            term: Term::ZERO,
            applied_index: 0,
            last_position: Position::ZERO,
            engine_version: crate::INITIAL_ENGINE_VERSION,
            exported: Position::ZERO,
            healthy: true,
            inflight: 0,
            peak_inflight: 0,
            limit: 0,
            checkpoint_id: 0,
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
            faults,
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

    /// Hands the partition a command another partition sent, with the sender's latest
    /// checkpoint id; like [`Partition::submit_now`], it is in the mailbox when this
    /// returns. The answer carries this replica's latest checkpoint id once the command
    /// was applied (never below the one it was applied after).
    pub fn deliver_now(
        &self,
        command: E::Command,
        checkpoint_id: u64,
        timeout: Duration,
    ) -> impl Future<Output = Result<(Answered<E::Response>, u64)>> + Send + 'static {
        let partition = self.config.partition_id;
        let (reply, rx) = oneshot::channel();
        let sent = self
            .actor
            .send_message(Msg::Deliver {
                command,
                checkpoint_id,
                timeout,
                reply,
            })
            .is_ok();
        let status = self.status.clone();
        async move {
            if !sent {
                return Err(Error::ShuttingDown { partition });
            }
            let answered =
                match tokio::time::timeout(timeout + Duration::from_millis(500), rx).await {
                    Ok(Ok(answer)) => answer?,
                    Ok(Err(_)) => return Err(Error::ShuttingDown { partition }),
                    Err(_) => return Err(Error::Timeout { partition, timeout }),
                };
            // Read after the answer: the id the command was applied after, or a later one.
            let checkpoint_id = status.borrow().checkpoint_id;
            Ok((answered, checkpoint_id))
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

    /// Records checkpoint `backup_id` in the partition's log through this replica, if it
    /// leads, and answers once it is applied (a leader then takes its part of the backup).
    pub async fn checkpoint(&self, backup_id: u64) -> Result<crate::backup::CheckpointOutcome> {
        self.ask(
            |reply| Msg::Checkpoint { backup_id, reply },
            self.config.request_timeout,
        )
        .await?
    }

    async fn raft(&self) -> Result<Raft> {
        self.ask(|reply| Msg::Raft { reply }, Duration::from_secs(10))
            .await?
            .ok_or_else(|| self.gone())
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
        // A write retried while the disk is full would hold raft's shutdown forever.
        self.faults.close();
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
