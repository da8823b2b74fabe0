//! The partition actor: owns the engine, the state database handle, the request queue
//! and flow control, and applies what raft commits.
//!
//! ```text
//!            ┌──────────────── Submit (leader: admit, queue, propose) ◄── clients
//!            │  ┌───────────── Apply (from raft's state machine) ◄──────── raft
//!            ▼  ▼
//!   ┌─────────────────────┐   Proposed ◄── client_write tasks (one per entry in flight)
//!   │   PartitionActor    │   RaftView ◄── raft metrics watcher (role, leader, term)
//!   └─────────────────────┘   Tick     ◄── timer: request deadlines, due work, snapshots
//! ```
//!
//! Handlers never wait for raft: proposals run in their own tasks and report back, so
//! raft can always call `Apply` while commands are being proposed. Requests are
//! answered when their command is applied, by the replica that proposed them.
//!
//! Leadership loss: commands still queued were never proposed and fail with
//! `NotLeader`. Commands proposed in the lost term may still commit; they stay pending
//! until this replica has applied everything it had in its log when it stepped down
//! (the barrier). Whatever of that term is still pending then was truncated and fails
//! with `NotLeader`, so a client only ever retries what certainly was not applied.
//!
//! Two things make "certainly" hold when leadership comes back quickly. Each batch
//! carries the term it was built in, and every replica skips a batch raft appended in
//! another term (a proposal that reached raft only after its proposer lost and won
//! leadership again), answering its requests with `NotLeader`. And the barrier fails
//! only requests proposed in the terms it closes, not those of the new leadership.

use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use openraft::ServerState;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use rill_engine_api::{Action, Engine, EngineError, RequestId, state_digest};
use rill_protocol::{NodeId, PartitionId, Position, Record, Timestamp};
use rill_raft::{
    ApplyBatch, ApplyHandler, EntryData, EntryResponse, NetworkFactory, PartitionStateMachine,
    PartitionStorage, Raft, SnapshotMeta, StateStore,
};
use tokio::sync::{broadcast, oneshot, watch};

use super::{JobsAvailable, PartitionConfig, PartitionEnv, PartitionStatus, Role, StateDigest};
use crate::batch::{BatchBuilder, CoreCommand};
use crate::clock;
use crate::delivery::{Couriers, PartitionRouter};
use crate::error::{ActorError, Error, Result};
use crate::export::ExportDirector;
use crate::flow_control::{Permit, RequestLimiter};
use crate::metrics::{self, PartitionMetrics};
use crate::processor::{PartitionInfo, apply_batch};
use crate::state::{Cursor, RocksState, exported_floor, read_records};

const TICK: Duration = Duration::from_millis(50);
/// Most due commands proposed at once.
const DUE_LIMIT: usize = 1000;
/// Most outbox entries handed to the couriers at once.
const SEND_LIMIT: usize = 1000;
/// How often the leader looks for sends to deliver again (if any may be lost).
const REDELIVERY_INTERVAL: Duration = Duration::from_secs(1);

pub(crate) enum Msg<E: Engine> {
    Submit {
        command: E::Command,
        /// How long the request may wait for its answer.
        timeout: Duration,
        reply: oneshot::Sender<Result<E::Response>>,
    },
    Query {
        query: E::Query,
        reply: oneshot::Sender<Result<E::QueryResult>>,
    },
    Apply {
        batch: ApplyBatch,
        reply: oneshot::Sender<rill_raft::Result<Vec<EntryResponse>>>,
    },
    SnapshotInstalled {
        reply: oneshot::Sender<rill_raft::Result<()>>,
    },
    RaftStarted(Raft),
    RaftFailed(String),
    RaftView(RaftView),
    Proposed {
        proposal: u64,
        result: std::result::Result<(), String>,
    },
    Tick,
    /// Where to deliver commands for other partitions.
    SetRouter(Arc<dyn PartitionRouter<E>>),
    /// A target took a command this partition sent: propose the engine's acknowledgement.
    Acknowledge(E::Command),
    /// A command of the partition core (from the exporter director) to propose.
    ProposeCore(CoreCommand),
    TakeSnapshot {
        reply: oneshot::Sender<Result<()>>,
    },
    Digest {
        reply: oneshot::Sender<Result<StateDigest>>,
    },
    Records {
        from: Position,
        limit: usize,
        reply: oneshot::Sender<Result<Vec<Record>>>,
    },
    BeginShutdown {
        reply: oneshot::Sender<Option<Raft>>,
    },
}

/// What the partition needs to know from raft's metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RaftView {
    role: Role,
    leader: Option<NodeId>,
    term: u64,
    last_log_index: u64,
    snapshot_index: u64,
}

fn raft_view(m: &rill_raft::RaftMetrics) -> RaftView {
    RaftView {
        role: match m.state {
            ServerState::Leader => Role::Leader,
            ServerState::Follower => Role::Follower,
            ServerState::Candidate => Role::Candidate,
            ServerState::Learner | ServerState::Shutdown => Role::Inactive,
        },
        leader: m.current_leader.map(|l| NodeId(l as u32)),
        term: m.current_term,
        last_log_index: m.last_log_index.unwrap_or(0),
        snapshot_index: m.snapshot.map_or(0, |s| s.index),
    }
}

pub(crate) struct StartArgs<E: Engine> {
    pub config: Arc<PartitionConfig>,
    pub engine: E,
    pub storage: PartitionStorage,
    pub env: PartitionEnv,
    pub jobs: broadcast::Sender<JobsAvailable>,
    pub status: watch::Sender<PartitionStatus>,
    pub started: oneshot::Sender<std::result::Result<(), String>>,
}

/// The actor behaviour (stateless; the state is [`PartitionState`]).
pub(crate) struct PartitionActor<E>(PhantomData<fn() -> E>);

impl<E> Default for PartitionActor<E> {
    fn default() -> Self {
        PartitionActor(PhantomData)
    }
}

enum Phase {
    /// Waiting in the queue for the next entry.
    Queued,
    /// In an entry given to raft.
    Proposed,
    /// Applied; the engine answers later (a `Respond` action).
    Applied,
}

struct Pending<R> {
    reply: oneshot::Sender<Result<R>>,
    permit: Permit,
    deadline: Instant,
    phase: Phase,
    /// The term of the batch it was proposed in (once proposed).
    term: u64,
}

/// Commands proposed in terms up to `term` are lost if not applied by `index`.
#[derive(Clone, Copy, Debug)]
struct Barrier {
    index: u64,
    term: u64,
}

enum QueuedCommand<C> {
    Engine(C),
    Core(CoreCommand),
}

struct Queued<C> {
    request: Option<RequestId>,
    command: QueuedCommand<C>,
    /// Due work (timers, deadlines) the partition proposed itself.
    due: bool,
}

struct Proposal {
    started: Instant,
    /// Due commands in this entry.
    internal: usize,
}

pub(crate) struct PartitionState<E: Engine> {
    config: Arc<PartitionConfig>,
    info: PartitionInfo,
    engine: E,
    state: Arc<StateStore>,
    /// Log, and the state machine's snapshot store, until raft takes them over.
    startup: Option<PartitionStorage>,
    raft: Option<Raft>,
    env: PartitionEnv,
    view: RaftView,
    cursor: Cursor,
    applied_index: u64,
    pending: BTreeMap<u64, Pending<E::Response>>,
    queue: VecDeque<Queued<E::Command>>,
    proposals: BTreeMap<u64, Proposal>,
    next_proposal: u64,
    next_request: u64,
    last_proposed: Timestamp,
    /// When commands proposed in a lost term are known lost.
    barrier: Option<Barrier>,
    limiter: RequestLimiter,
    next_wake: Option<Timestamp>,
    due_in_flight: usize,
    router: Option<Arc<dyn PartitionRouter<E>>>,
    /// Present while leading with a router.
    couriers: Option<Couriers<E>>,
    last_redelivery: Option<Instant>,
    /// Sends an acknowledgement back to this actor (for the couriers).
    acknowledge: Arc<dyn Fn(E::Command) + Send + Sync>,
    /// Present while leading, if the node runs exporters.
    director: Option<ExportDirector>,
    /// Export entries up to here are deleted (every exporter has them).
    exported: Position,
    /// Sends core commands back to this actor (for the director).
    propose_core: Arc<dyn Fn(CoreCommand) + Send + Sync>,
    last_snapshot: Instant,
    snapshot_waiters: Vec<oneshot::Sender<Result<()>>>,
    snapshot_target: u64,
    jobs: broadcast::Sender<JobsAvailable>,
    status: watch::Sender<PartitionStatus>,
    metrics: PartitionMetrics,
    started: Option<oneshot::Sender<std::result::Result<(), String>>>,
    failed: Option<String>,
    shutting_down: bool,
}

/// Raft's state machine calls the actor through this.
struct ActorHandler<E: Engine> {
    actor: ActorRef<Msg<E>>,
}

fn actor_gone() -> rill_raft::Error {
    rill_raft::Error::Handler("the partition actor has stopped".into())
}

impl<E: Engine> ApplyHandler for ActorHandler<E> {
    fn apply(
        &self,
        batch: ApplyBatch,
    ) -> BoxFuture<'static, rill_raft::Result<Vec<EntryResponse>>> {
        let (reply, rx) = oneshot::channel();
        let sent = self.actor.send_message(Msg::Apply { batch, reply }).is_ok();
        Box::pin(async move {
            if !sent {
                return Err(actor_gone());
            }
            rx.await.map_err(|_| actor_gone())?
        })
    }

    fn snapshot_installed(&self, _meta: SnapshotMeta) -> BoxFuture<'static, rill_raft::Result<()>> {
        let (reply, rx) = oneshot::channel();
        let sent = self
            .actor
            .send_message(Msg::SnapshotInstalled { reply })
            .is_ok();
        Box::pin(async move {
            if !sent {
                return Err(actor_gone());
            }
            rx.await.map_err(|_| actor_gone())?
        })
    }
}

impl<E: Engine> Actor for PartitionActor<E> {
    type Msg = Msg<E>;
    type State = PartitionState<E>;
    type Arguments = StartArgs<E>;

    async fn pre_start(
        &self,
        myself: ActorRef<Msg<E>>,
        args: StartArgs<E>,
    ) -> Result<PartitionState<E>, ActorProcessingErr> {
        let state = args.storage.state.clone();
        let cursor = Cursor::load(&RocksState::new(&state.current()))?;
        let applied_index = state.applied_state()?.0.map_or(0, |id| id.index);
        let exported = exported_floor(&state.current(), &cursor)?;
        let me = myself.clone();
        let metrics = args.env.metrics.partition(args.config.partition_id.get());
        metrics.last_position.set(cursor.last_position.get() as i64);
        metrics
            .export_backlog
            .set(cursor.last_position.get().saturating_sub(exported.get()) as i64);
        let node = u64::from(args.config.node_id.0);
        Ok(PartitionState {
            info: PartitionInfo {
                partition_id: args.config.partition_id,
                partition_count: args.config.partition_count,
            },
            limiter: RequestLimiter::new(&args.config.flow_control),
            engine: args.engine,
            state,
            startup: Some(args.storage),
            raft: None,
            env: args.env,
            view: RaftView {
                role: Role::Inactive,
                leader: None,
                term: 0,
                last_log_index: 0,
                snapshot_index: 0,
            },
            cursor,
            applied_index,
            pending: BTreeMap::new(),
            queue: VecDeque::new(),
            proposals: BTreeMap::new(),
            next_proposal: 1,
            // Unique across the nodes (high bits) and across restarts of this node
            // (seeded from the clock), so an old entry never answers a new request.
            next_request: (node << 48) | (clock::now_micros() & ((1 << 48) - 1)),
            last_proposed: Timestamp(0),
            barrier: None,
            next_wake: None,
            due_in_flight: 0,
            router: None,
            couriers: None,
            last_redelivery: None,
            acknowledge: Arc::new(move |command| {
                let _ = myself.send_message(Msg::Acknowledge(command));
            }),
            director: None,
            exported,
            propose_core: Arc::new(move |command| {
                let _ = me.send_message(Msg::ProposeCore(command));
            }),
            last_snapshot: Instant::now(),
            snapshot_waiters: Vec::new(),
            snapshot_target: 0,
            jobs: args.jobs,
            status: args.status,
            metrics,
            started: Some(args.started),
            failed: None,
            shutting_down: false,
            config: args.config,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Msg<E>>,
        st: &mut PartitionState<E>,
    ) -> Result<(), ActorProcessingErr> {
        st.start_raft(&myself);
        myself.send_interval(TICK, || Msg::Tick);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Msg<E>>,
        msg: Msg<E>,
        st: &mut PartitionState<E>,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            Msg::Submit {
                command,
                timeout,
                reply,
            } => st.submit(&myself, command, timeout, reply),
            Msg::Query { query, reply } => {
                let _ = reply.send(st.query(&query));
            }
            Msg::Apply { batch, reply } => {
                let result = st.apply(&myself, batch);
                let _ = reply.send(result);
            }
            Msg::SnapshotInstalled { reply } => {
                let reloaded = st.reload_after_snapshot();
                if reloaded.is_ok() {
                    st.metrics.snapshots_installed.inc();
                    tracing::info!(
                        partition = %st.info.partition_id,
                        applied = st.applied_index,
                        "installed a snapshot from the leader"
                    );
                }
                let _ = reply.send(reloaded);
            }
            Msg::RaftStarted(raft) => {
                st.raft = Some(raft);
                st.update_couriers();
                st.update_director();
                if let Some(started) = st.started.take() {
                    let _ = started.send(Ok(()));
                }
                st.publish_status();
            }
            Msg::RaftFailed(reason) => {
                tracing::error!(partition = %st.info.partition_id, %reason, "raft failed to start");
                st.fail(reason.clone());
                if let Some(started) = st.started.take() {
                    let _ = started.send(Err(reason));
                }
            }
            Msg::RaftView(view) => st.on_raft_view(view),
            Msg::Proposed { proposal, result } => st.on_proposed(&myself, proposal, result),
            Msg::Tick => st.tick(&myself),
            Msg::SetRouter(router) => {
                st.router = Some(router);
                // Couriers of the old router go; new ones start with a redelivery.
                st.couriers = None;
                st.update_couriers();
            }
            Msg::Acknowledge(command) => {
                if st.is_leader() {
                    st.queue.push_back(Queued {
                        request: None,
                        command: QueuedCommand::Engine(command),
                        due: false,
                    });
                    st.propose(&myself);
                }
            }
            Msg::ProposeCore(command) => {
                if st.is_leader() {
                    st.queue.push_back(Queued {
                        request: None,
                        command: QueuedCommand::Core(command),
                        due: false,
                    });
                    st.propose(&myself);
                }
            }
            Msg::TakeSnapshot { reply } => st.take_snapshot(reply),
            Msg::Digest { reply } => {
                let db = st.state.current();
                let digest = state_digest(&RocksState::new(&db))
                    .map(|digest| StateDigest {
                        applied_index: st.applied_index,
                        digest,
                    })
                    .map_err(Error::from);
                let _ = reply.send(digest);
            }
            Msg::Records { from, limit, reply } => {
                let _ = reply.send(read_records(&st.state.current(), from, limit));
            }
            Msg::BeginShutdown { reply } => {
                st.begin_shutdown();
                let _ = reply.send(st.raft.clone());
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Msg<E>>,
        st: &mut PartitionState<E>,
    ) -> Result<(), ActorProcessingErr> {
        st.begin_shutdown();
        st.raft = None;
        st.startup = None;
        Ok(())
    }
}

impl<E: Engine> PartitionState<E> {
    fn partition(&self) -> PartitionId {
        self.info.partition_id
    }

    fn is_leader(&self) -> bool {
        self.view.role == Role::Leader
            && self.raft.is_some()
            && self.failed.is_none()
            && !self.shutting_down
    }

    fn not_leader(&self) -> Error {
        if self.shutting_down {
            return Error::ShuttingDown {
                partition: self.partition(),
            };
        }
        if let Some(reason) = &self.failed {
            return Error::Failed {
                partition: self.partition(),
                reason: reason.clone(),
            };
        }
        Error::NotLeader {
            partition: self.partition(),
            leader: self.view.leader.filter(|l| *l != self.config.node_id),
        }
    }

    /// Starts raft in its own task: opening it re-applies committed entries through this
    /// actor, which must keep running meanwhile.
    fn start_raft(&mut self, myself: &ActorRef<Msg<E>>) {
        let Some(storage) = self.startup.take() else {
            return;
        };
        let config = self.config.clone();
        let env = self.env.clone();
        let me = myself.clone();
        let gauges = (
            self.metrics.snapshot_index.clone(),
            self.metrics.purged_index.clone(),
        );
        let handler = Arc::new(ActorHandler {
            actor: myself.clone(),
        });
        tokio::spawn(async move {
            let result = async {
                let raft_config = rill_raft::openraft_config(
                    &config.raft,
                    &format!("partition-{}", config.partition_id),
                )?;
                let sm = PartitionStateMachine::new(
                    storage.state.clone(),
                    storage.snapshots.clone(),
                    handler,
                );
                let network = NetworkFactory::new(config.partition_id, env.transport.clone());
                let node = u64::from(config.node_id.0);
                let raft = Raft::new(node, raft_config, network, storage.log, sm)
                    .await
                    .map_err(|e| Error::Actor(ActorError::Raft(Box::new(e))))?;
                env.raft_service.register(config.partition_id, raft.clone());
                let initialized = raft
                    .is_initialized()
                    .await
                    .map_err(|e| Error::Actor(ActorError::Raft(Box::new(e))))?;
                let holds_back = config.members.len() > 1
                    && config.preferred_leader.is_some_and(|p| p != config.node_id);
                if holds_back {
                    raft.runtime_config().elect(false);
                    tokio::spawn(hold_back_election(
                        raft.clone(),
                        config.clone(),
                        !initialized,
                    ));
                } else if !initialized {
                    initialize_raft(&raft, &config).await;
                }
                Ok::<_, Error>(raft)
            }
            .await;
            match result {
                Ok(raft) => {
                    let mut metrics = raft.metrics();
                    let _ = me.send_message(Msg::RaftStarted(raft));
                    // Forward changes of role, leader, term or snapshot (not every
                    // append); the view carries the last log index of that moment.
                    let key = |v: &RaftView| (v.role, v.leader, v.term, v.snapshot_index);
                    let mut last: Option<RaftView> = None;
                    loop {
                        let view = {
                            let current = metrics.borrow_and_update();
                            let (snapshot, purged) = &gauges;
                            snapshot.set(current.snapshot.map_or(0, |s| s.index) as i64);
                            purged.set(current.purged.map_or(0, |p| p.index) as i64);
                            raft_view(&current)
                        };
                        if last.as_ref().map(key) != Some(key(&view)) {
                            last = Some(view.clone());
                            if me.send_message(Msg::RaftView(view)).is_err() {
                                break;
                            }
                        }
                        if metrics.changed().await.is_err() {
                            break;
                        }
                    }
                }
                Err(e) => {
                    let _ = me.send_message(Msg::RaftFailed(e.to_string()));
                }
            }
        });
    }

    fn submit(
        &mut self,
        myself: &ActorRef<Msg<E>>,
        command: E::Command,
        timeout: Duration,
        reply: oneshot::Sender<Result<E::Response>>,
    ) {
        self.metrics.received.inc();
        if !self.is_leader() {
            let _ = reply.send(Err(self.not_leader()));
            return;
        }
        if let Some(response) = self.answer_from_state(&command) {
            self.metrics.answered_from_state.inc();
            let _ = reply.send(Ok(response));
            return;
        }
        let now = Instant::now();
        let never_rejected = E::is_never_rejected(&command);
        if !never_rejected && self.export_backlog_exceeded() {
            self.metrics.dropped.inc();
            let _ = reply.send(Err(Error::ResourceExhausted {
                partition: self.partition(),
                limit: self.limiter.limit(),
            }));
            return;
        }
        let Some(permit) = self.limiter.try_acquire(never_rejected, now) else {
            self.metrics.dropped.inc();
            let _ = reply.send(Err(Error::ResourceExhausted {
                partition: self.partition(),
                limit: self.limiter.limit(),
            }));
            return;
        };
        self.next_request += 1;
        let id = self.next_request;
        self.pending.insert(
            id,
            Pending {
                reply,
                permit,
                deadline: now + timeout,
                phase: Phase::Queued,
                term: 0,
            },
        );
        self.queue.push_back(Queued {
            request: Some(RequestId(id)),
            command: QueuedCommand::Engine(command),
            due: false,
        });
        self.propose(myself);
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
                tracing::debug!(partition = %self.partition(), error = %e, "cannot answer from state; proposing");
                None
            }
        }
    }

    /// Group commit: while fewer than `max_inflight_proposals` entries are in flight,
    /// turn the queue into entries of up to `max-batch-commands` / `max-batch-size` (a
    /// second entry only once a whole batch waits).
    fn propose(&mut self, myself: &ActorRef<Msg<E>>) {
        let Some(raft) = self.raft.clone() else {
            return;
        };
        if !self.is_leader() {
            return;
        }
        let max_commands = self.config.raft.max_batch_commands.max(1);
        let max_bytes = self.config.raft.max_batch_size.0 as usize;
        while self.proposals.len() < self.config.max_inflight_proposals.max(1)
            && !self.queue.is_empty()
        {
            // With an entry in flight, the next waits until the queue fills a whole batch:
            // at moderate load it then carries more commands (fewer log syncs, replication
            // rounds and applies per command, measured faster end to end); at saturation
            // entries are still pipelined.
            if !self.proposals.is_empty() && self.queue.len() < max_commands {
                break;
            }
            // The leader's clock, never behind an earlier entry.
            let timestamp = clock::now().max(self.last_proposed);
            self.last_proposed = timestamp;
            // Raft may append it in a later term than this one (see the module
            // comment); every replica then skips it.
            let term = self.view.term;
            let mut builder = BatchBuilder::new(timestamp, term);
            let mut internal = 0;
            while (builder.count() as usize) < max_commands && builder.len_bytes() < max_bytes {
                let Some(queued) = self.queue.pop_front() else {
                    break;
                };
                let pushed = match &queued.command {
                    QueuedCommand::Engine(command) => builder.push(queued.request, command),
                    QueuedCommand::Core(command) => builder.push_core(command),
                };
                match pushed {
                    Ok(()) => {
                        if let Some(RequestId(id)) = queued.request
                            && let Some(p) = self.pending.get_mut(&id)
                        {
                            p.phase = Phase::Proposed;
                            p.term = term;
                        }
                        if queued.due {
                            internal += 1;
                        }
                    }
                    Err(e) => {
                        if let Some(RequestId(id)) = queued.request {
                            self.answer(id, Err(e), true);
                        }
                    }
                }
            }
            if builder.count() == 0 {
                continue;
            }
            let proposal = self.next_proposal;
            self.next_proposal += 1;
            self.proposals.insert(
                proposal,
                Proposal {
                    started: Instant::now(),
                    internal,
                },
            );
            let data = EntryData(Bytes::from(builder.finish()));
            let raft = raft.clone();
            let me = myself.clone();
            tokio::spawn(async move {
                let result = raft
                    .client_write(data)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                let _ = me.send_message(Msg::Proposed { proposal, result });
            });
        }
    }

    fn on_proposed(
        &mut self,
        myself: &ActorRef<Msg<E>>,
        proposal: u64,
        result: std::result::Result<(), String>,
    ) {
        if let Some(p) = self.proposals.remove(&proposal) {
            self.metrics
                .commit
                .observe(p.started.elapsed().as_secs_f64());
            if p.internal > 0 {
                self.due_in_flight = self.due_in_flight.saturating_sub(p.internal);
                if self.due_in_flight == 0 {
                    // look again: more may be due, or the proposal was lost
                    self.next_wake = Some(Timestamp(0));
                }
            }
        }
        if let Err(reason) = result {
            // The entry may still commit under a new leader: its requests wait for the
            // barrier (see the module comment), or for their deadline.
            tracing::debug!(partition = %self.partition(), %reason, "proposal not confirmed");
        }
        self.propose(myself);
    }

    /// Removes a pending request and answers it.
    fn answer(&mut self, id: u64, result: Result<E::Response>, dropped: bool) {
        if let Some(p) = self.pending.remove(&id) {
            self.limiter.release(p.permit, Instant::now(), dropped);
            let _ = p.reply.send(result);
        }
    }

    fn apply(
        &mut self,
        myself: &ActorRef<Msg<E>>,
        batch: ApplyBatch,
    ) -> rill_raft::Result<Vec<EntryResponse>> {
        if let Some(reason) = &self.failed {
            return Err(rill_raft::Error::Handler(reason.clone()));
        }
        let entries = batch.entries.len();
        let started = Instant::now();
        let db = self.state.current();
        let keep_records = self
            .director
            .as_ref()
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
            Err(e) => {
                // Nothing of the batch was written: caches may hold what it would have.
                self.engine.reset_caches();
                let reason = format!("applying up to {}: {e}", batch.last_applied());
                tracing::error!(partition = %self.partition(), %reason, "stream processing stopped");
                self.fail(reason.clone());
                return Err(rill_raft::Error::Handler(reason));
            }
        };
        drop(db);
        self.applied_index = batch.last_applied().index;
        self.metrics
            .processing
            .observe(started.elapsed().as_secs_f64());
        self.metrics.commands.inc_by(applied.commands);
        self.metrics.records.inc_by(applied.records);
        self.metrics.errors.inc_by(applied.errors);
        if let Some(exported) = applied.exported {
            self.exported = exported;
        }
        self.update_position_metrics();
        if let Some(director) = &self.director {
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

        for (RequestId(id), response) in applied.responses {
            self.answer(id, Ok(response), false);
        }
        for RequestId(id) in applied.skipped {
            let err = Error::NotLeader {
                partition: self.partition(),
                leader: self.view.leader,
            };
            self.answer(id, Err(err), true);
        }
        for RequestId(id) in applied.deferred {
            if let Some(p) = self.pending.get_mut(&id) {
                p.phase = Phase::Applied;
            }
        }
        let leader = self.is_leader();
        // One notification per job type and batch: each wakes a waiting activation, and
        // the first activation after this batch finds all of the batch's jobs.
        let mut available: Vec<String> = Vec::new();
        for action in applied.actions {
            match action {
                // Answering is not a side effect on state: whoever holds the request does.
                Action::Respond { request, response } => {
                    self.answer(request.0, Ok(response), false)
                }
                Action::JobsAvailable { job_type } if leader && !available.contains(&job_type) => {
                    available.push(job_type);
                }
                Action::WakeAt { due } if leader => {
                    self.next_wake = Some(self.next_wake.map_or(due, |w| w.min(due)));
                }
                Action::Send { partition, command } if leader => {
                    if let Some(couriers) = &mut self.couriers {
                        couriers.send(partition, command, &self.acknowledge);
                    }
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
        self.check_barrier();
        self.finish_snapshot_waiters();
        self.publish_status();
        if leader {
            self.propose(myself);
        }
        Ok(vec![EntryResponse::default(); entries])
    }

    /// Once the barrier is applied, requests proposed in the terms it closes and not
    /// applied by then were truncated: certainly not applied.
    fn check_barrier(&mut self) {
        if let Some(barrier) = self.barrier
            && self.applied_index >= barrier.index
        {
            self.barrier = None;
            self.fail_proposed_requests(barrier.term);
        }
    }

    fn fail_proposed_requests(&mut self, up_to_term: u64) {
        let lost: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| matches!(p.phase, Phase::Proposed) && p.term <= up_to_term)
            .map(|(id, _)| *id)
            .collect();
        for id in lost {
            let err = Error::NotLeader {
                partition: self.partition(),
                leader: self.view.leader,
            };
            self.answer(id, Err(err), true);
        }
    }

    fn on_raft_view(&mut self, view: RaftView) {
        let was_leader = self.view.role == Role::Leader;
        let is_leader = view.role == Role::Leader;
        let last_log_index = view.last_log_index;
        let old_term = self.view.term;
        // Views can skip states: leading again in a later term means the old term was
        // lost in between.
        let lost_term = was_leader && (!is_leader || view.term != old_term);
        self.view = view;
        self.metrics.role.set(match self.view.role {
            Role::Leader => metrics::ROLE_LEADER,
            Role::Candidate => metrics::ROLE_CANDIDATE,
            _ => metrics::ROLE_FOLLOWER,
        });
        self.metrics
            .snapshot_index
            .set(self.view.snapshot_index as i64);
        if lost_term {
            tracing::info!(partition = %self.partition(), term = old_term, "no longer leader");
            // Never proposed: certainly not applied.
            while let Some(queued) = self.queue.pop_front() {
                if let Some(RequestId(id)) = queued.request {
                    let err = self.not_leader();
                    self.answer(id, Err(err), true);
                }
            }
            self.barrier = Some(match self.barrier {
                None => Barrier {
                    index: last_log_index,
                    term: old_term,
                },
                Some(b) => Barrier {
                    index: b.index.max(last_log_index),
                    term: b.term.max(old_term),
                },
            });
            self.check_barrier();
            self.next_wake = None;
            self.due_in_flight = 0;
        }
        self.update_couriers();
        self.update_director();
        self.finish_snapshot_waiters();
        if is_leader && (!was_leader || lost_term) {
            tracing::info!(partition = %self.partition(), term = self.view.term, "became leader");
            // Recover timers and other due work from state.
            self.next_wake = Some(Timestamp(0));
        }
        self.publish_status();
    }

    fn tick(&mut self, myself: &ActorRef<Msg<E>>) {
        let now = Instant::now();
        // Requests past their deadline: the client has given up.
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            let err = Error::Timeout {
                partition: self.partition(),
                timeout: self.config.request_timeout,
            };
            self.answer(id, Err(err), true);
        }
        if self.is_leader() {
            self.propose_due_work(myself);
            self.redeliver();
        }
        if !self.config.snapshot_period.is_zero()
            && self.last_snapshot.elapsed() >= self.config.snapshot_period
        {
            self.last_snapshot = now;
            self.trigger_snapshot();
        }
        self.metrics
            .inflight
            .set(i64::from(self.limiter.inflight()));
        self.metrics
            .limit
            .set(i64::from(self.limiter.limit().min(i32::MAX as u32)));
    }

    fn propose_due_work(&mut self, myself: &ActorRef<Msg<E>>) {
        let now = clock::now();
        if !matches!(self.next_wake, Some(due) if due <= now && self.due_in_flight == 0) {
            return;
        }
        let db = self.state.current();
        let mut commands = Vec::new();
        match self
            .engine
            .due_commands(&RocksState::new(&db), now, DUE_LIMIT, &mut commands)
        {
            Ok(next) => self.next_wake = next,
            Err(e) => {
                tracing::warn!(partition = %self.partition(), error = %e, "cannot list due work");
                self.next_wake = Some(now.plus_millis(1000));
                return;
            }
        }
        self.due_in_flight += commands.len();
        for command in commands {
            self.queue.push_back(Queued {
                request: None,
                command: QueuedCommand::Engine(command),
                due: true,
            });
        }
        self.propose(myself);
    }

    /// Couriers run while this replica leads and knows where to deliver; a new leader
    /// starts with a redelivery of its whole outbox.
    fn update_couriers(&mut self) {
        match (&self.router, self.is_leader()) {
            (Some(router), true) => {
                if self.couriers.is_none() {
                    self.couriers = Some(Couriers::new(
                        self.partition(),
                        router.clone(),
                        self.env.io.clone(),
                    ));
                    self.last_redelivery = None;
                }
            }
            _ => self.couriers = None,
        }
    }

    /// The exporter director runs while this replica leads.
    fn update_director(&mut self) {
        match (&self.env.exporters, self.is_leader()) {
            (Some(factory), true) => {
                if self.director.is_none() {
                    self.director = Some(ExportDirector::start(
                        self.partition(),
                        factory(self.partition()),
                        self.state.clone(),
                        self.cursor.last_position,
                        self.propose_core.clone(),
                        &self.env.io,
                    ));
                }
            }
            _ => self.director = None,
        }
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

    /// Hands the outbox to the couriers again when sends may have been lost.
    fn redeliver(&mut self) {
        let Some(couriers) = &mut self.couriers else {
            return;
        };
        if let Some(last) = self.last_redelivery
            && (last.elapsed() < REDELIVERY_INTERVAL || !couriers.take_redelivery_due())
        {
            return;
        }
        self.last_redelivery = Some(Instant::now());
        let db = self.state.current();
        let mut sends = Vec::new();
        if let Err(e) = self
            .engine
            .pending_sends(&RocksState::new(&db), SEND_LIMIT, &mut sends)
        {
            tracing::warn!(partition = %self.partition(), error = %e, "cannot list the outbox");
            return;
        }
        for (target, command) in sends {
            couriers.send(target, command, &self.acknowledge);
        }
    }

    fn query(&mut self, query: &E::Query) -> Result<E::QueryResult> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        let db = self.state.current();
        self.engine
            .query(&RocksState::new(&db), query)
            .map_err(|e| match e {
                EngineError::State(e) => Error::State(e),
                e => Error::QueryFailed(e),
            })
    }

    fn trigger_snapshot(&self) {
        if let Some(raft) = self.raft.clone() {
            tokio::spawn(async move {
                if let Err(e) = raft.trigger().snapshot().await {
                    tracing::warn!(error = %e, "cannot trigger a snapshot");
                }
            });
        }
    }

    /// A snapshot was requested: answer once one covers the applied index of now.
    fn take_snapshot(&mut self, reply: oneshot::Sender<Result<()>>) {
        if self.raft.is_none() {
            let _ = reply.send(Err(self.not_leader()));
            return;
        }
        self.snapshot_target = self.snapshot_target.max(self.applied_index);
        self.snapshot_waiters.push(reply);
        self.finish_snapshot_waiters();
        self.trigger_snapshot();
        self.last_snapshot = Instant::now();
    }

    fn finish_snapshot_waiters(&mut self) {
        if self.snapshot_waiters.is_empty() {
            return;
        }
        if self.view.snapshot_index >= self.snapshot_target {
            for waiter in self.snapshot_waiters.drain(..) {
                let _ = waiter.send(Ok(()));
            }
        }
    }

    /// The state database was replaced by a snapshot.
    fn reload_after_snapshot(&mut self) -> rill_raft::Result<()> {
        let db = self.state.current();
        self.cursor = Cursor::load(&RocksState::new(&db))
            .map_err(|e| rill_raft::Error::Handler(e.to_string()))?;
        self.applied_index = db.applied_state()?.0.map_or(0, |id| id.index);
        // The snapshot's export entries, not the ones this replica had: a stale floor
        // would throttle (or fail to throttle) new work once this replica leads.
        self.exported = exported_floor(&db, &self.cursor)
            .map_err(|e| rill_raft::Error::Handler(e.to_string()))?;
        self.update_position_metrics();
        self.engine.reset_caches();
        if let Some(barrier) = self.barrier
            && self.applied_index >= barrier.index
        {
            // Their entries, if committed, are inside the snapshot and were never applied
            // here: the outcome is unknown, which a timeout says.
            self.barrier = None;
            let unknown: Vec<u64> = self
                .pending
                .iter()
                .filter(|(_, p)| matches!(p.phase, Phase::Proposed) && p.term <= barrier.term)
                .map(|(id, _)| *id)
                .collect();
            for id in unknown {
                let err = Error::Timeout {
                    partition: self.partition(),
                    timeout: self.config.request_timeout,
                };
                self.answer(id, Err(err), true);
            }
        }
        self.publish_status();
        Ok(())
    }

    fn fail(&mut self, reason: String) {
        self.failed = Some(reason.clone());
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for id in ids {
            let err = Error::Failed {
                partition: self.partition(),
                reason: reason.clone(),
            };
            self.answer(id, Err(err), true);
        }
        self.queue.clear();
        self.publish_status();
    }

    fn begin_shutdown(&mut self) {
        self.shutting_down = true;
        self.couriers = None;
        self.director = None;
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for id in ids {
            let err = Error::ShuttingDown {
                partition: self.partition(),
            };
            self.answer(id, Err(err), true);
        }
        self.queue.clear();
        for waiter in self.snapshot_waiters.drain(..) {
            let _ = waiter.send(Err(Error::ShuttingDown {
                partition: self.info.partition_id,
            }));
        }
    }

    fn publish_status(&self) {
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
            exported: self.exported,
            healthy: self.failed.is_none(),
            inflight: self.limiter.inflight(),
            peak_inflight: self.limiter.peak_inflight(),
            limit: self.limiter.limit(),
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

/// Proposes the partition's first membership, which also starts an election here.
/// Every replica may do so with the same members; one that has a log already refuses.
async fn initialize_raft(raft: &Raft, config: &PartitionConfig) {
    let members: BTreeMap<u64, openraft::BasicNode> = config
        .members
        .iter()
        .map(|(id, addr)| (u64::from(id.0), openraft::BasicNode { addr: addr.clone() }))
        .collect();
    if let Err(e) = raft.initialize(members).await {
        tracing::debug!(partition = %config.partition_id, error = %e, "raft initialize");
    }
}

/// Priority election on a replica that is not the preferred leader: it does not stand
/// for election (nor start a fresh group) until it has seen a leader, so the preferred
/// replica, which starts at once, wins when all are up. If no leader shows up within
/// three election timeouts (the preferred replica is down), it elects like any other.
async fn hold_back_election(raft: Raft, config: Arc<PartitionConfig>, uninitialized: bool) {
    let grace = config.raft.election_timeout * 3;
    let saw_leader = raft
        .wait(Some(grace))
        .metrics(|m| m.current_leader.is_some(), "a leader")
        .await
        .is_ok();
    raft.runtime_config().elect(true);
    if !saw_leader {
        tracing::info!(
            partition = %config.partition_id,
            preferred = ?config.preferred_leader,
            "no leader within {grace:?}; this replica stands for election too"
        );
        if uninitialized && !raft.is_initialized().await.unwrap_or(true) {
            initialize_raft(&raft, &config).await;
        }
    }
}
