//! What every replica of a partition does: apply what raft commits, follow raft's view of
//! leadership, answer requests through its [`RequestBook`], take snapshots and publish
//! its status. What only a leader does is in [`LeaderState`], inside [`Leadership`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::ActorRef;
use rill_engine_api::{Action, Engine, EngineError, state_digest};
use rill_protocol::{PartitionId, Position, Record, Term, Timestamp};
use rill_raft::{ApplyBatch, EntryResponse, PartitionStorage, Raft, StateStore};
use tokio::sync::{broadcast, oneshot, watch};

mod upkeep;

use super::ClusterSink;
use super::actor::{Msg, ProposeError, StartArgs};
use super::leader::{Acknowledge, LeaderState, Leadership, QueuedCommand};
use super::raft::RaftView;
use super::requests::{Answered, Reply, RequestBook};
use super::snapshots::Snapshots;
use super::{JobsAvailable, PartitionConfig, PartitionEnv, PartitionStatus, Role, StateDigest};
use crate::backup::{BackupJob, CheckpointApplied, CheckpointOutcome};
use crate::batch::CoreCommand;
use crate::clock;
use crate::delivery::PartitionRouter;
use crate::error::{Error, Result};
use crate::export::ExportDirector;
use crate::flow_control::{RequestLimiter, WriteRateLimiter};
use crate::metrics::{self, PartitionMetrics};
use crate::processor::{PartitionInfo, apply_batch};
use crate::state::{
    Cursor, RocksState, check_data_format, cluster_configuration, exported_floor,
    latest_checkpoint, partition_count as stored_partition_count, read_records,
};

/// The latest checkpoint id in `db`'s state (0: none).
fn stored_checkpoint_id(db: &rill_raft::StateDb) -> Result<u64> {
    Ok(latest_checkpoint(&RocksState::new(db))?.map_or(0, |(id, _)| id))
}

/// The partition actor's state (see `actor` for how messages reach it).
pub(crate) struct Replica<E: Engine> {
    pub(super) config: Arc<PartitionConfig>,
    info: PartitionInfo,
    engine: E,
    state: Arc<StateStore>,
    /// Disk writes of the log and the state machine that fail and are retried.
    faults: rill_raft::WriteFaults,
    /// Log, and the state machine's snapshot store, until raft takes them over.
    pub(super) startup: Option<PartitionStorage>,
    pub(super) raft: Option<Raft>,
    pub(super) env: PartitionEnv,
    /// `partition`, under the node's span: entered for every message but the
    /// per-command ones (see `actor`), and given to the tasks the partition starts.
    pub(super) span: tracing::Span,
    actor: ActorRef<Msg<E>>,
    view: RaftView,
    cursor: Cursor,
    applied_index: u64,
    requests: RequestBook<E::Response>,
    leadership: Leadership<E>,
    /// The write-rate limit of this leadership (`flow-control.write`), if any.
    write_limiter: Option<WriteRateLimiter>,
    last_proposed: Timestamp,
    router: Option<Arc<dyn PartitionRouter<E>>>,
    /// Told every cluster configuration this replica's state stores (partition 1).
    cluster_sink: Option<ClusterSink>,
    /// Sends an acknowledgement back to this actor (for the couriers).
    acknowledge: Acknowledge<E::Command>,
    /// Sends core commands back to this actor (for the director).
    propose_core: Arc<dyn Fn(CoreCommand) + Send + Sync>,
    /// Export entries up to here are deleted (every exporter has them).
    exported: Position,
    /// The partition count in state (deployments and signals go to all of them).
    partition_count: u16,
    /// When this leader proposed a higher partition count not yet applied.
    partition_count_proposed: Option<Instant>,
    /// When this leader proposed a higher engine version not yet applied.
    engine_version_proposed: Option<(Instant, Term)>,
    snapshots: Snapshots,
    /// When the leader next looks for history entries past `history.retention`.
    next_history_expiry: Instant,
    /// When this leader proposed the `ExpireHistory` not yet applied: one at a time.
    history_expiry_proposed: Option<Instant>,
    jobs: broadcast::Sender<JobsAvailable>,
    status: watch::Sender<PartitionStatus>,
    pub(super) metrics: PartitionMetrics,
    pub(super) started: Option<oneshot::Sender<std::result::Result<(), String>>>,
    /// Where this replica takes its part of a backup when it leads at a checkpoint.
    backup_store: Option<crate::backup::Store>,
    /// Checkpoints this leader proposed, waiting to be applied, by backup id.
    pending_checkpoints: Vec<(u64, oneshot::Sender<Result<CheckpointOutcome>>)>,
    /// The partition's latest checkpoint id in applied state (0: none): every command
    /// this partition sends, and every answer it gives to one sent to it, carries it.
    checkpoint_id: u64,
}

impl<E: Engine> Replica<E> {
    pub(super) fn new(
        actor: ActorRef<Msg<E>>,
        args: StartArgs<E>,
    ) -> std::result::Result<Replica<E>, ractor::ActorProcessingErr> {
        let state = args.storage.state.clone();
        let cursor = Cursor::load(&RocksState::new(&state.current()))?;
        let what = format!(
            "the state of partition {} in {}",
            args.config.partition_id,
            args.config.directory.display()
        );
        check_data_format(&RocksState::new(&state.current()), &what)?;
        let supported = rill_protocol::version::supported_engine_versions();
        if cursor.engine_version > supported.max {
            // A downgrade below the engine version the cluster rose to.
            return Err(format!(
                "partition {}: its state is at engine version {}, and this broker (Rill {}) \
                 applies engine versions {supported}: a broker cannot go back to a release \
                 before the engine version rose; run a release that supports engine version {}",
                args.config.partition_id,
                cursor.engine_version,
                rill_protocol::BROKER_VERSION,
                cursor.engine_version
            )
            .into());
        }
        let applied_index = state.applied_state()?.0.map_or(0, |id| id.index);
        let exported = exported_floor(&state.current(), &cursor)?;
        let partition_count = stored_partition_count(&RocksState::new(&state.current()))?
            .unwrap_or(args.config.partition_count);
        let checkpoint_id = stored_checkpoint_id(&state.current())?;
        let metrics = args.env.metrics.partition(args.config.partition_id.get());
        metrics.last_position.set(cursor.last_position.get() as i64);
        metrics.engine_version.set(i64::from(cursor.engine_version));
        metrics
            .export_backlog
            .set(cursor.last_position.get().saturating_sub(exported.get()) as i64);
        let node = u64::from(args.config.node_id.0);
        // Unique across the nodes (high bits) and across restarts of this node (seeded
        // from the clock), so an old entry never answers a new request.
        let id_seed = (node << 48) | (clock::now_micros() & ((1 << 48) - 1));
        let (ack, core) = (actor.clone(), actor.clone());
        Ok(Replica {
            info: PartitionInfo {
                partition_id: args.config.partition_id,
                partition_count: args.config.partition_count,
                message_partition_count: args.config.message_partition_count,
                history: args.config.history.enabled,
            },
            requests: RequestBook::new(
                args.config.partition_id,
                args.config.node_id,
                RequestLimiter::new(&args.config.flow_control),
                id_seed,
            ),
            engine: args.engine,
            state,
            faults: args.storage.faults.clone(),
            startup: Some(args.storage),
            raft: None,
            env: args.env,
            span: args.span,
            actor,
            view: RaftView::INACTIVE,
            cursor,
            applied_index,
            leadership: Leadership::Follower,
            write_limiter: None,
            last_proposed: Timestamp(0),
            router: None,
            cluster_sink: None,
            acknowledge: Arc::new(move |command, checkpoint_id| {
                let _ = ack.send_message(Msg::Acknowledge {
                    command,
                    checkpoint_id,
                });
            }),
            propose_core: Arc::new(move |command| {
                let _ = core.send_message(Msg::ProposeCore(command));
            }),
            exported,
            partition_count,
            partition_count_proposed: None,
            engine_version_proposed: None,
            snapshots: Snapshots::new(),
            next_history_expiry: Instant::now(),
            history_expiry_proposed: None,
            backup_store: crate::backup::configured_store(&args.config.backup).unwrap_or_else(
                |e| {
                    tracing::error!(error = %e, "the backup store cannot be used: this replica takes no backups");
                    None
                },
            ),
            pending_checkpoints: Vec::new(),
            checkpoint_id,
            jobs: args.jobs,
            status: args.status,
            metrics,
            started: Some(args.started),
            config: args.config,
        })
    }

    fn partition(&self) -> PartitionId {
        self.info.partition_id
    }

    /// The answer to what only a leader takes, when this replica does not lead.
    fn refusal(&self) -> Error {
        self.requests.refusal(self.view.leader)
    }

    pub(super) fn submit(
        &mut self,
        command: E::Command,
        timeout: Duration,
        reply: Reply<E::Response>,
    ) {
        self.take(command, None, timeout, reply);
    }

    /// Takes a command another partition sent, with the sender's latest checkpoint id:
    /// applied only once this partition has recorded that checkpoint, which the leader
    /// proposes first if it has not (docs/decisions/backup.md).
    pub(super) fn deliver(
        &mut self,
        command: E::Command,
        checkpoint_id: u64,
        timeout: Duration,
        reply: Reply<E::Response>,
    ) {
        self.take(command, Some(checkpoint_id), timeout, reply);
    }

    /// A command from a client (`carried_checkpoint` none) or from another partition.
    fn take(
        &mut self,
        command: E::Command,
        carried_checkpoint: Option<u64>,
        timeout: Duration,
        reply: Reply<E::Response>,
    ) {
        self.metrics.received.inc();
        let Some(term) = self.leadership.term() else {
            let _ = reply.send(Err(self.refusal()));
            return;
        };
        if let Err(refused) = self.engine_version_allows(E::required_engine_version(&command)) {
            self.metrics.dropped.inc();
            let _ = reply.send(Err(refused));
            return;
        }
        // A delivered command always goes through the log, after the checkpoint it carries.
        if carried_checkpoint.is_none()
            && let Some(response) = self.answer_from_state(&command)
        {
            self.metrics.answered_from_state.inc();
            let _ = reply.send(Ok(Answered { response, term }));
            return;
        }
        let never_rejected = E::is_never_rejected(&command);
        if let Some(reason) = self.intake_refusal(E::passes_disk_watermark(&command)) {
            self.metrics.dropped.inc();
            let _ = reply.send(Err(Error::Refused {
                partition: self.partition(),
                reason,
            }));
            return;
        }
        if !never_rejected && self.export_backlog_exceeded() {
            self.metrics.dropped.inc();
            let _ = reply.send(Err(self.requests.exhausted()));
            return;
        }
        let now = Instant::now();
        let partition = self.partition();
        if !never_rejected
            && let Some(limiter) = &mut self.write_limiter
            && !limiter.try_acquire(now)
        {
            self.metrics.dropped.inc();
            let _ = reply.send(Err(Error::Refused {
                partition,
                reason: limiter.refusal(now),
            }));
            return;
        }
        let Some(request) = self.requests.admit(reply, timeout, never_rejected, now) else {
            self.metrics.dropped.inc();
            return;
        };
        let mut checkpoint_first = false;
        if let Some(leader) = self.leadership.leader() {
            match carried_checkpoint {
                None => leader.enqueue(Some(request), QueuedCommand::Engine(command)),
                Some(carried) => {
                    checkpoint_first = leader.enqueue_after_checkpoint(
                        Some(request),
                        carried,
                        self.checkpoint_id,
                        command,
                    );
                }
            }
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
        if checkpoint_first {
            // Per command: no span is entered here (see `actor`); name it.
            tracing::info!(
                parent: &self.span,
                backup = carried_checkpoint,
                recorded = self.checkpoint_id,
                "a command from another partition carries a later checkpoint: recording it first"
            );
        }
    }

    /// A courier's target took a command this partition sent: proposes the engine's
    /// acknowledgement, after the target's latest checkpoint `checkpoint_id` (so that
    /// a target whose cut came before it took the command is not recorded as having
    /// it by this partition's cut for the same backup).
    pub(super) fn acknowledged(&mut self, command: E::Command, checkpoint_id: u64) {
        if let Some(leader) = self.leadership.leader() {
            if leader.enqueue_after_checkpoint(None, checkpoint_id, self.checkpoint_id, command) {
                tracing::info!(
                    backup = checkpoint_id,
                    recorded = self.checkpoint_id,
                    "another partition acknowledged after a later checkpoint: recording it first"
                );
            }
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
    }

    /// Refuses what needs a higher engine version than the partition's log is at, or
    /// will be at once the raise this leader queues ahead of it is applied: a replica of
    /// an older release could not read it (docs/decisions/versions.md). A raise the
    /// cluster allows goes into the log ahead of any command, so that a command sent
    /// right after a start is applied under the version the cluster runs.
    fn engine_version_allows(&mut self, required: u32) -> Result<()> {
        let current = self.cursor.engine_version;
        let raisable = self.raisable_engine_version();
        if raisable > current {
            self.propose_engine_version(Instant::now(), true);
        }
        if required > current.max(raisable) {
            return Err(Error::EngineVersionTooLow {
                partition: self.partition(),
                required,
                current,
            });
        }
        Ok(())
    }

    /// Why the disk refuses the command, if it does: while a disk write fails, every
    /// command (it could not be written either); while the disk is past the command
    /// watermark, those that do not finish work or let instances end. Decided here,
    /// before the log, so the engine never sees the disk.
    fn intake_refusal(&self, passes_watermark: bool) -> Option<String> {
        if let Some(failing) = self.faults.failing() {
            return Some(format!(
                "it cannot write to disk ({failing}); it resumes by itself once writes \
                 succeed again"
            ));
        }
        if passes_watermark {
            return None;
        }
        self.env.disk.command_refusal()
    }

    /// The engine's answer from applied state, for a command that then needs no log entry
    /// (`Engine::answer_from_state`). A failed read only sends the command through the log.
    fn answer_from_state(&mut self, command: &E::Command) -> Option<E::Response> {
        let db = self.state.current();
        match self
            .engine
            .answer_from_state(&RocksState::new(&db), command)
        {
            Ok(answer) => answer,
            Err(e) => {
                // Per command: no span is entered here (see `actor`); name it.
                tracing::debug!(parent: &self.span, error = %e, "cannot answer from state; proposing");
                None
            }
        }
    }

    /// Proposes a command of the partition's own (an acknowledgement from a courier, an
    /// exported position from the director); dropped unless leading.
    pub(super) fn propose_own(&mut self, command: QueuedCommand<E::Command>) {
        if let Some(leader) = self.leadership.leader() {
            leader.enqueue(None, command);
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
    }

    pub(super) fn on_proposed(
        &mut self,
        term: Term,
        proposal: u64,
        result: std::result::Result<(), Box<ProposeError>>,
    ) {
        if let Err(e) = result {
            // The entry may still commit under a new leader: its requests wait for the
            // barrier (see the actor's module comment), or for their deadline.
            tracing::debug!(error = %e, "proposal not confirmed");
        }
        if let Some(leader) = self.leadership.leader() {
            leader.on_proposed(term, proposal, &self.metrics);
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
    }

    pub(super) fn query(&mut self, query: &E::Query) -> Result<E::QueryResult> {
        if !self.leadership.is_leader() {
            return Err(self.refusal());
        }
        let db = self.state.current();
        self.engine
            .query(&RocksState::new(&db), query)
            .map_err(|e| match e {
                EngineError::State(e) => Error::State(e),
                e => Error::QueryFailed(e),
            })
    }

    /// The state database, for a history query, if this replica leads.
    pub(super) fn history_db(&self) -> Result<Arc<rill_raft::StateDb>> {
        if !self.leadership.is_leader() {
            return Err(self.refusal());
        }
        Ok(self.state.current())
    }

    /// Proposes checkpoint `backup_id` (leader only) and answers once it is applied.
    pub(super) fn checkpoint(
        &mut self,
        backup_id: u64,
        reply: oneshot::Sender<Result<CheckpointOutcome>>,
    ) {
        if !self.leadership.is_leader() {
            let _ = reply.send(Err(self.refusal()));
            return;
        }
        let checkpoint = CoreCommand::Checkpoint { backup_id };
        if let Err(refused) = self.engine_version_allows(checkpoint.required_engine_version()) {
            let _ = reply.send(Err(refused));
            return;
        }
        self.pending_checkpoints.push((backup_id, reply));
        if let Some(leader) = self.leadership.leader() {
            leader.enqueue_checkpoint(backup_id);
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
    }

    /// Applies what raft committed. A batch carrying a checkpoint is applied and written
    /// in two parts, up to the entry carrying it and after, so that the state between
    /// them is the backup's cut (docs/decisions/backup.md).
    pub(super) fn apply(&mut self, batch: ApplyBatch) -> rill_raft::Result<Vec<EntryResponse>> {
        let mut responses = Vec::with_capacity(batch.entries.len());
        let mut next = Some(batch);
        while let Some(batch) = next.take() {
            let cut = batch.entries.iter().position(|entry| {
                entry.data.as_ref().is_some_and(|data| {
                    crate::batch::BatchView::parse(data)
                        .and_then(crate::batch::BatchView::has_checkpoint)
                        .unwrap_or(false)
                })
            });
            let (part, rest) = match cut {
                Some(cut) => batch.split_after(cut + 1),
                None => (batch, None),
            };
            responses.extend(self.apply_part(part)?);
            next = rest;
        }
        Ok(responses)
    }

    fn apply_part(&mut self, batch: ApplyBatch) -> rill_raft::Result<Vec<EntryResponse>> {
        if let Some(reason) = self.requests.failure() {
            return Err(rill_raft::Error::Handler(reason.to_owned()));
        }
        let entries = batch.entries.len();
        let started = Instant::now();
        let db = self.state.current();
        let keep_records = self
            .leadership
            .director()
            .is_some_and(ExportDirector::wants_records);
        let mut applied = match apply_batch(
            &mut self.engine,
            &db,
            self.info,
            &mut self.cursor,
            &batch,
            keep_records,
        ) {
            Ok(applied) => applied,
            Err(Error::StateWrite(e)) if e.is_retryable_write_failure() => {
                // Nothing of the batch was written: caches may hold what it would have.
                // Raft's state machine hands the same batch again after a backoff.
                self.engine.reset_caches();
                self.publish_status();
                return Err(rill_raft::Error::DiskWrite(e.to_string()));
            }
            Err(e) => {
                // Nothing of the batch was written: caches may hold what it would have.
                self.engine.reset_caches();
                let reason = format!("applying up to {}: {e}", batch.last_applied());
                tracing::error!(%reason, "stream processing stopped");
                self.fail(reason.clone());
                return Err(rill_raft::Error::Handler(reason));
            }
        };
        drop(db);
        self.applied_index = batch.last_applied().index;
        self.metrics
            .processing
            .observe(started.elapsed().as_secs_f64());
        if let (Some(json), Some(sink)) = (applied.cluster.take(), &self.cluster_sink) {
            sink(json);
        }
        self.metrics.commands.inc_by(applied.commands);
        self.metrics.records.inc_by(applied.records);
        self.metrics.errors.inc_by(applied.errors);
        if applied.history_expiries > 0 {
            self.history_expiry_applied(applied.history_expiries, applied.history_expired);
        }
        if let Some(exported) = applied.exported {
            self.exported = exported;
        }
        for checkpoint in std::mem::take(&mut applied.checkpoints) {
            self.checkpoint_applied(checkpoint);
        }
        if let Some(carried) = applied.behind_checkpoint {
            tracing::info!(
                carried,
                recorded = self.checkpoint_id,
                "commands carrying a checkpoint not recorded here were refused; they come again"
            );
            if let Some(leader) = self.leadership.leader() {
                leader.checkpoint_not_ahead(self.checkpoint_id);
            }
        }
        for request in std::mem::take(&mut applied.refused_behind_checkpoint) {
            self.requests.reject(
                request,
                Error::Refused {
                    partition: self.partition(),
                    reason: "it carries a backup checkpoint this partition had not recorded \
                             yet; deliver it again"
                        .to_owned(),
                },
            );
        }
        if let Some(version) = applied.engine_version {
            tracing::info!(
                version,
                "engine version raised to {version}: commands that need it are taken from now on"
            );
            self.engine_version_proposed = None;
        }
        self.metrics
            .engine_version
            .set(i64::from(self.cursor.engine_version));
        if let Some(count) = applied.partition_count {
            tracing::info!(count, "partition count raised");
            self.partition_count = count;
            self.partition_count_proposed = None;
        }
        self.update_position_metrics();
        if let Some(director) = self.leadership.director() {
            director.written(
                self.cursor.last_position,
                std::mem::take(&mut applied.written),
            );
        }
        for event in &applied.events {
            self.metrics
                .engine_event(event.kind, event.action, event.count);
        }
        self.metrics.applied.set(self.applied_index as i64);

        for (request, response) in applied.responses {
            self.requests.respond(request, response);
        }
        for request in applied.skipped {
            self.requests.not_applied(request, self.view.leader);
        }
        for request in applied.deferred {
            self.requests.applied_later(request);
        }
        // One notification per job type and batch: each wakes a waiting activation, and
        // the first activation after this batch finds all of the batch's jobs.
        let mut available: Vec<String> = Vec::new();
        let checkpoint_id = self.checkpoint_id;
        let mut leader = self.leadership.leader();
        for action in applied.actions {
            match (action, &mut leader) {
                // Answering is not a side effect on state: whoever holds the request does.
                (Action::Respond { request, response }, _) => {
                    self.requests.respond(request, response)
                }
                (Action::JobsAvailable { job_type }, Some(_)) if !available.contains(&job_type) => {
                    available.push(job_type);
                }
                (Action::WakeAt { due }, Some(leader)) => leader.wake_at(due),
                (Action::Send { partition, command }, Some(leader)) => {
                    leader.send(partition, command, checkpoint_id)
                }
                _ => {}
            }
        }
        for job_type in available {
            let _ = self.jobs.send(JobsAvailable {
                partition_id: self.partition(),
                job_type,
            });
        }
        self.requests.applied(self.applied_index, self.view.leader);
        self.snapshots.finish(self.view.snapshot_index);
        self.publish_status();
        if let Some(leader) = self.leadership.leader() {
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
        Ok(vec![EntryResponse::default(); entries])
    }

    /// A checkpoint was applied (the state is now at its cut): the leader takes its
    /// part of the backup and answers whoever proposed it.
    fn checkpoint_applied(&mut self, checkpoint: CheckpointApplied) {
        let CheckpointApplied {
            backup_id,
            timestamp,
            outcome,
        } = checkpoint;
        let (answered, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_checkpoints)
            .into_iter()
            .partition(|(id, _)| *id == backup_id);
        self.pending_checkpoints = waiting;
        let answer = move || {
            for (_, reply) in answered {
                let _ = reply.send(Ok(outcome));
            }
        };
        match outcome {
            CheckpointOutcome::Created {
                position,
                log_index,
            } => {
                tracing::info!(backup = backup_id, %position, log_index, "checkpoint recorded");
                self.checkpoint_id = backup_id;
                if self.leadership.is_leader()
                    && let Some(store) = &self.backup_store
                {
                    // Answered once the part shows in the store as in progress.
                    crate::backup::start_backup(
                        BackupJob {
                            store: store.clone(),
                            metrics: self.env.metrics.backup().clone(),
                            backup_id,
                            partition_id: self.partition().get(),
                            node_id: self.config.node_id.0,
                            partition_count: self.partition_count,
                            checkpoint_position: position.get(),
                            log_index,
                            checkpoint_timestamp: timestamp,
                        },
                        self.state.current(),
                        Box::new(answer),
                    );
                    return;
                }
            }
            // Recorded before, when a command from another partition carried it.
            CheckpointOutcome::Refused { latest } if latest == backup_id => {
                tracing::info!(backup = backup_id, "checkpoint recorded already");
            }
            CheckpointOutcome::Refused { latest } => {
                tracing::info!(
                    backup = backup_id,
                    latest,
                    "checkpoint refused: its id is not above the latest"
                );
            }
        }
        answer();
    }

    pub(super) fn on_raft_started(&mut self, raft: Raft) {
        self.raft = Some(raft);
        // Raft's views come after this, so leadership normally starts there.
        if self.view.role == Role::Leader && !self.leadership.is_leader() {
            self.lead();
        }
        if let Some(started) = self.started.take() {
            let _ = started.send(Ok(()));
        }
        self.publish_status();
    }

    pub(super) fn on_raft_view(&mut self, view: RaftView) {
        let leads = view.role == Role::Leader;
        let last_log_index = view.last_log_index;
        self.view = view;
        self.metrics.role.set(match self.view.role {
            Role::Leader => metrics::ROLE_LEADER,
            Role::Candidate => metrics::ROLE_CANDIDATE,
            _ => metrics::ROLE_FOLLOWER,
        });
        self.metrics.term.set(self.view.term.0 as i64);
        self.metrics
            .snapshot_index
            .set(self.view.snapshot_index as i64);
        // Views can skip states: leading again in a later term means the old term was
        // lost in between.
        if let Some(term) = self.leadership.term()
            && (!leads || self.view.term != term)
        {
            tracing::info!(%term, "no longer leader");
            // Never proposed: certainly not applied.
            for request in self.leadership.step_down() {
                self.requests.not_applied(request, self.view.leader);
            }
            // A checkpoint proposed in the lost term may still be applied; whoever asked
            // is told now that it was not confirmed (the backup's status shows the rest).
            self.pending_checkpoints.clear();
            self.requests
                .step_down(term, last_log_index, self.applied_index, self.view.leader);
        }
        if leads && !self.leadership.is_leader() {
            self.lead();
        }
        self.snapshots.finish(self.view.snapshot_index);
        self.publish_status();
    }

    /// Starts leading in the view's term, unless the partition failed or shuts down.
    fn lead(&mut self) {
        let Some(raft) = self.raft.clone() else {
            return;
        };
        if self.requests.is_closed() {
            return;
        }
        tracing::info!(term = %self.view.term, "became leader");
        let director = self.env.exporters.as_ref().map(|factory| {
            ExportDirector::start(
                self.partition(),
                factory(self.partition()),
                self.state.clone(),
                self.cursor.last_position,
                self.propose_core.clone(),
                &self.env.io,
            )
        });
        let mut leader = LeaderState::new(
            self.view.term,
            raft,
            self.actor.clone(),
            self.acknowledge.clone(),
            director,
        );
        if let Some(router) = &self.router {
            leader.set_router(self.partition(), router.clone(), self.env.io.clone());
        }
        self.leadership = Leadership::Leader(Box::new(leader));
        // The write rate ramps up anew with each leadership.
        self.write_limiter = self
            .config
            .write_rate
            .map(|rate| WriteRateLimiter::new(rate, Instant::now()));
    }

    /// Stops proposing until `until` (or resumes, `None`) while this replica leads: a
    /// hand-over of leadership. False when it does not lead.
    pub(super) fn pause_intake(&mut self, until: Option<Instant>) -> bool {
        let Some(leader) = self.leadership.leader() else {
            return false;
        };
        leader.pause(until);
        if until.is_none() {
            leader.propose(&self.config, &mut self.requests, &mut self.last_proposed);
        }
        true
    }

    /// Where to deliver commands for other partitions; a leader's couriers start anew.
    pub(super) fn set_router(&mut self, router: Arc<dyn PartitionRouter<E>>) {
        if let Some(leader) = self.leadership.leader() {
            leader.set_router(self.info.partition_id, router.clone(), self.env.io.clone());
        }
        self.router = Some(router);
    }

    pub(super) fn follow_cluster(&mut self, sink: ClusterSink) {
        self.cluster_sink = Some(sink);
        self.offer_stored_cluster_configuration();
    }

    /// Tells the cluster sink the configuration in state (after a start or a snapshot).
    fn offer_stored_cluster_configuration(&self) {
        let Some(sink) = &self.cluster_sink else {
            return;
        };
        match cluster_configuration(&RocksState::new(&self.state.current())) {
            Ok(Some((_, json))) => sink(json),
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "cannot read the cluster configuration"),
        }
    }

    /// See [`super::Partition::redistribution`].
    pub(super) fn redistribution(&mut self, first: PartitionId) -> Result<(u16, usize)> {
        let db = self.state.current();
        let mut sends = Vec::new();
        self.engine
            .pending_sends(&RocksState::new(&db), usize::MAX, &mut sends)
            .map_err(Error::QueryFailed)?;
        let pending = sends.iter().filter(|(target, _)| *target >= first).count();
        Ok((self.partition_count, pending))
    }

    /// The last position and the export backlog, as gauges.
    fn update_position_metrics(&self) {
        let last = self.cursor.last_position.get();
        self.metrics.last_position.set(last as i64);
        self.metrics
            .export_backlog
            .set(last.saturating_sub(self.exported.get()) as i64);
    }

    /// Records written and not yet exported by every exporter, past the acceptable
    /// backlog: new work is refused until the exporters catch up.
    fn export_backlog_exceeded(&self) -> bool {
        self.config.export_backlog_limit.is_some_and(|limit| {
            self.cursor
                .last_position
                .get()
                .saturating_sub(self.exported.get())
                > limit
        })
    }

    /// A snapshot was requested: answer once one covers the applied index of now.
    pub(super) fn take_snapshot(&mut self, reply: oneshot::Sender<Result<()>>) {
        if self.raft.is_none() {
            let _ = reply.send(Err(self.refusal()));
            return;
        }
        self.snapshots.request(self.applied_index, reply);
        self.snapshots.finish(self.view.snapshot_index);
        self.snapshots.trigger(self.raft.as_ref());
    }

    pub(super) fn digest(&self) -> Result<StateDigest> {
        let db = self.state.current();
        state_digest(&RocksState::new(&db))
            .map(|digest| StateDigest {
                applied_index: self.applied_index,
                digest,
            })
            .map_err(Error::from)
    }

    pub(super) fn records(&self, from: Position, limit: usize) -> Result<Vec<Record>> {
        read_records(&self.state.current(), from, limit)
    }

    /// The state database was replaced by a snapshot.
    pub(super) fn reload_after_snapshot(&mut self) -> rill_raft::Result<()> {
        let db = self.state.current();
        let what = format!(
            "the snapshot of partition {} installed from the leader",
            self.partition()
        );
        if let Err(reason) = check_data_format(&RocksState::new(&db), &what) {
            tracing::error!(%reason, "partition stopped");
            self.fail(reason.clone());
            return Err(rill_raft::Error::Handler(reason));
        }
        self.cursor = Cursor::load(&RocksState::new(&db))
            .map_err(|e| rill_raft::Error::Handler(e.to_string()))?;
        self.applied_index = db.applied_state()?.0.map_or(0, |id| id.index);
        // The snapshot's export entries, not the ones this replica had: a stale floor
        // would throttle (or fail to throttle) new work once this replica leads.
        self.exported = exported_floor(&db, &self.cursor)
            .map_err(|e| rill_raft::Error::Handler(e.to_string()))?;
        self.partition_count = stored_partition_count(&RocksState::new(&db))
            .map_err(|e| rill_raft::Error::Handler(e.to_string()))?
            .unwrap_or(self.info.partition_count);
        self.checkpoint_id =
            stored_checkpoint_id(&db).map_err(|e| rill_raft::Error::Handler(e.to_string()))?;
        self.update_position_metrics();
        self.metrics
            .engine_version
            .set(i64::from(self.cursor.engine_version));
        self.engine.reset_caches();
        self.offer_stored_cluster_configuration();
        self.requests.snapshot_installed(self.applied_index);
        self.publish_status();
        self.metrics.snapshots_installed.inc();
        tracing::info!(
            applied = self.applied_index,
            "installed a snapshot from the leader"
        );
        Ok(())
    }

    /// Stops the partition after a fatal error: every request fails, and it stops leading.
    pub(super) fn fail(&mut self, reason: String) {
        self.requests.fail_all(reason);
        self.leadership.step_down();
        self.publish_status();
    }

    /// Answers every waiting request and snapshot with `ShuttingDown`, and stops leading.
    pub(super) fn begin_shutdown(&mut self) {
        self.leadership.step_down();
        self.requests.shut_down();
        self.snapshots.shut_down(self.partition());
    }

    pub(super) fn publish_status(&self) {
        let limiter = self.requests.limiter();
        let write_failing = self.faults.failing().is_some();
        self.metrics.write_failing.set(i64::from(write_failing));
        let status = PartitionStatus {
            partition_id: self.partition(),
            node_id: self.config.node_id,
            role: if self.raft.is_some() {
                self.view.role
            } else {
                Role::Inactive
            },
            leader: self.view.leader,
            term: self.view.term,
            applied_index: self.applied_index,
            last_position: self.cursor.last_position,
            engine_version: self.cursor.engine_version,
            exported: self.exported,
            healthy: self.requests.failure().is_none() && !write_failing,
            inflight: limiter.inflight(),
            peak_inflight: limiter.peak_inflight(),
            limit: limiter.limit(),
            checkpoint_id: self.checkpoint_id,
        };
        self.status.send_if_modified(|current| {
            if *current == status {
                false
            } else {
                *current = status;
                true
            }
        });
    }
}
