//! The partition actor: owns the engine, the state database handle, the pending requests
//! and flow control, and applies what raft commits. It only routes messages; the work is
//! done by its parts.
//!
//! ```text
//!            ┌──────────────── Submit (leader: admit, queue, propose) ◄── clients
//!            │  ┌───────────── Apply (from raft's state machine) ◄──────── raft
//!            ▼  ▼
//!   ┌─────────────────────┐   Proposed ◄── client_write tasks (one per entry in flight)
//!   │   PartitionActor    │   RaftView ◄── raft metrics watcher (role, leader, term)
//!   └──────────┬──────────┘   Tick     ◄── timer: request deadlines, due work, snapshots
//!              ▼
//!   Replica (replica.rs): apply, raft view, status ─┬─ RequestBook (requests.rs): every
//!                                                   │    answer but a response
//!                                                   ├─ Snapshots (snapshots.rs)
//!                                                   └─ Leadership (leader.rs)
//!                                                        Follower
//!                                                        Leader(LeaderState): queue and
//!                                                          entries in flight, due work,
//!                                                          couriers, exporter director
//! ```
//!
//! Handlers never wait for raft: proposals run in their own tasks and report back, so
//! raft can always call `Apply` while commands are being proposed (raft itself is
//! started in a task too: `raft.rs`). Requests are answered when their command is
//! applied, by the replica that proposed them.
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
//!
//! Tracing: each message but `Submit`, `Deliver` and `Query` is handled in the
//! partition's span. Those come once per command, where even entering a span costs, so their rare
//! log lines name the span themselves.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{ClientWriteError, RaftError};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use rill_engine_api::Engine;
use rill_protocol::{Position, Term};
use rill_raft::{ApplyBatch, EntryResponse, PartitionStorage, Raft, RaftNodeId};
use tokio::sync::{broadcast, oneshot, watch};

use super::leader::QueuedCommand;
use super::raft::RaftView;
use super::replica::Replica;
use super::requests::Reply;
use super::{JobsAvailable, PartitionConfig, PartitionEnv, PartitionStatus, StateDigest};
use crate::batch::CoreCommand;
use crate::delivery::PartitionRouter;
use crate::error::Result;

const TICK: Duration = Duration::from_millis(50);

/// Why raft did not confirm a proposed entry.
pub(crate) type ProposeError =
    RaftError<RaftNodeId, ClientWriteError<RaftNodeId, openraft::BasicNode>>;

pub(crate) enum Msg<E: Engine> {
    Submit {
        command: E::Command,
        /// How long the request may wait for its answer.
        timeout: Duration,
        reply: Reply<E::Response>,
    },
    /// A command another partition sends through its outbox, with the sender's latest
    /// checkpoint id (docs/decisions/backup.md).
    Deliver {
        command: E::Command,
        checkpoint_id: u64,
        timeout: Duration,
        reply: Reply<E::Response>,
    },
    Query {
        query: E::Query,
        reply: oneshot::Sender<Result<E::QueryResult>>,
    },
    /// The state database to read the history store from, if this replica leads.
    HistoryDb {
        reply: oneshot::Sender<Result<Arc<rill_raft::StateDb>>>,
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
    /// Raft answered the entry `proposal` that the leadership of `term` proposed.
    Proposed {
        term: Term,
        proposal: u64,
        result: std::result::Result<(), Box<ProposeError>>,
    },
    Tick,
    /// Where to deliver commands for other partitions.
    SetRouter(Arc<dyn PartitionRouter<E>>),
    /// Whom to tell the cluster configurations this partition's state stores.
    FollowCluster(super::ClusterSink),
    /// A target took a command this partition sent: propose the engine's acknowledgement,
    /// after the target's latest checkpoint (`checkpoint_id`).
    Acknowledge {
        command: E::Command,
        checkpoint_id: u64,
    },
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
        reply: oneshot::Sender<Result<Vec<rill_protocol::Record>>>,
    },
    BeginShutdown {
        reply: oneshot::Sender<Option<Raft>>,
    },
    /// See [`super::Partition::redistribution`].
    Redistribution {
        first: rill_protocol::PartitionId,
        reply: oneshot::Sender<Result<(u16, usize)>>,
    },
    /// Proposes a checkpoint (leader only); answered once it is applied.
    Checkpoint {
        backup_id: u64,
        reply: oneshot::Sender<Result<crate::backup::CheckpointOutcome>>,
    },
    /// Stops proposing until a deadline (or resumes: `None`) while leading, for a
    /// hand-over; answers whether this replica leads.
    PauseIntake {
        until: Option<std::time::Instant>,
        reply: oneshot::Sender<bool>,
    },
    /// This replica's raft, once it runs (membership changes).
    Raft {
        reply: oneshot::Sender<Option<Raft>>,
    },
}

impl<E: Engine> Msg<E> {
    /// Sent once per command or query: handled outside the partition's span.
    fn once_per_command(&self) -> bool {
        matches!(
            self,
            Msg::Submit { .. } | Msg::Deliver { .. } | Msg::Query { .. } | Msg::HistoryDb { .. }
        )
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
    /// The partition's span.
    pub span: tracing::Span,
}

/// The actor behaviour (stateless; the state is [`Replica`]).
pub(crate) struct PartitionActor<E>(PhantomData<fn() -> E>);

impl<E> Default for PartitionActor<E> {
    fn default() -> Self {
        PartitionActor(PhantomData)
    }
}

impl<E: Engine> Actor for PartitionActor<E> {
    type Msg = Msg<E>;
    type State = Replica<E>;
    type Arguments = StartArgs<E>;

    async fn pre_start(
        &self,
        myself: ActorRef<Msg<E>>,
        args: StartArgs<E>,
    ) -> Result<Replica<E>, ActorProcessingErr> {
        let span = args.span.clone();
        let _entered = span.enter();
        Replica::new(myself, args)
    }

    async fn post_start(
        &self,
        myself: ActorRef<Msg<E>>,
        st: &mut Replica<E>,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(storage) = st.startup.take() {
            super::raft::start(
                storage,
                st.config.clone(),
                st.env.clone(),
                &st.metrics,
                myself.clone(),
                st.span.clone(),
            );
        }
        myself.send_interval(TICK, || Msg::Tick);
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<Msg<E>>,
        msg: Msg<E>,
        st: &mut Replica<E>,
    ) -> Result<(), ActorProcessingErr> {
        if msg.once_per_command() {
            dispatch(st, msg);
        } else {
            let span = st.span.clone();
            let _entered = span.enter();
            dispatch(st, msg);
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Msg<E>>,
        st: &mut Replica<E>,
    ) -> Result<(), ActorProcessingErr> {
        st.begin_shutdown();
        st.raft = None;
        st.startup = None;
        Ok(())
    }
}

fn dispatch<E: Engine>(st: &mut Replica<E>, msg: Msg<E>) {
    match msg {
        Msg::Submit {
            command,
            timeout,
            reply,
        } => st.submit(command, timeout, reply),
        Msg::Deliver {
            command,
            checkpoint_id,
            timeout,
            reply,
        } => st.deliver(command, checkpoint_id, timeout, reply),
        Msg::Query { query, reply } => {
            let _ = reply.send(st.query(&query));
        }
        Msg::HistoryDb { reply } => {
            let _ = reply.send(st.history_db());
        }
        Msg::Apply { batch, reply } => {
            let _ = reply.send(st.apply(batch));
        }
        Msg::SnapshotInstalled { reply } => {
            let _ = reply.send(st.reload_after_snapshot());
        }
        Msg::RaftStarted(raft) => st.on_raft_started(raft),
        Msg::RaftFailed(reason) => {
            tracing::error!(%reason, "raft failed to start");
            st.fail(reason.clone());
            if let Some(started) = st.started.take() {
                let _ = started.send(Err(reason));
            }
        }
        Msg::RaftView(view) => st.on_raft_view(view),
        Msg::Proposed {
            term,
            proposal,
            result,
        } => st.on_proposed(term, proposal, result),
        Msg::Tick => st.tick(),
        Msg::SetRouter(router) => st.set_router(router),
        Msg::FollowCluster(sink) => st.follow_cluster(sink),
        Msg::Acknowledge {
            command,
            checkpoint_id,
        } => st.acknowledged(command, checkpoint_id),
        Msg::ProposeCore(command) => st.propose_own(QueuedCommand::Core(command)),
        Msg::TakeSnapshot { reply } => st.take_snapshot(reply),
        Msg::Digest { reply } => {
            let _ = reply.send(st.digest());
        }
        Msg::Records { from, limit, reply } => {
            let _ = reply.send(st.records(from, limit));
        }
        Msg::Raft { reply } => {
            let _ = reply.send(st.raft.clone());
        }
        Msg::PauseIntake { until, reply } => {
            let _ = reply.send(st.pause_intake(until));
        }
        Msg::Checkpoint { backup_id, reply } => st.checkpoint(backup_id, reply),
        Msg::Redistribution { first, reply } => {
            let _ = reply.send(st.redistribution(first));
        }
        Msg::BeginShutdown { reply } => {
            st.begin_shutdown();
            let _ = reply.send(st.raft.clone());
        }
    }
}
