//! The partition's raft: starting it beside the actor with its election driver, the
//! view of raft's metrics the actor follows, and the adapter through which raft's state
//! machine calls the actor.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use openraft::ServerState;
use ractor::ActorRef;
use rill_engine_api::Engine;
use rill_protocol::{NodeId, Term};
use rill_raft::{
    ApplyBatch, ApplyHandler, EntryResponse, NetworkFactory, PartitionStateMachine,
    PartitionStorage, Raft, RaftTerm, SnapshotMeta,
};
use tokio::sync::oneshot;
use tracing::Instrument;

use super::actor::Msg;
use super::election::{self, ElectionPlan};
use super::{PartitionConfig, PartitionEnv, Role};
use crate::error::{ActorError, Error};
use crate::metrics::PartitionMetrics;

/// What the partition needs to know from raft's metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RaftView {
    pub role: Role,
    pub leader: Option<NodeId>,
    pub term: Term,
    pub last_log_index: u64,
    pub snapshot_index: u64,
}

impl RaftView {
    /// Before raft has said anything.
    pub(crate) const INACTIVE: RaftView = RaftView {
        role: Role::Inactive,
        leader: None,
        term: Term::ZERO,
        last_log_index: 0,
        snapshot_index: 0,
    };

    fn of(m: &rill_raft::RaftMetrics) -> RaftView {
        RaftView {
            role: match m.state {
                ServerState::Leader => Role::Leader,
                ServerState::Follower => Role::Follower,
                ServerState::Candidate => Role::Candidate,
                ServerState::Learner | ServerState::Shutdown => Role::Inactive,
            },
            leader: m.current_leader.map(|l| NodeId(l as u32)),
            term: m.term(),
            last_log_index: m.last_log_index.unwrap_or(0),
            snapshot_index: m.snapshot.map_or(0, |s| s.index),
        }
    }
}

/// Starts raft in its own task: opening it re-applies committed entries through the
/// actor, which must keep running meanwhile. The task then reports `RaftStarted` (or
/// `RaftFailed`) and goes on forwarding raft's view of the partition, in `span`.
pub(crate) fn start<E: Engine>(
    storage: PartitionStorage,
    config: Arc<PartitionConfig>,
    env: PartitionEnv,
    metrics: &PartitionMetrics,
    actor: ActorRef<Msg<E>>,
    span: tracing::Span,
) {
    let gauges = (metrics.snapshot_index.clone(), metrics.purged_index.clone());
    let handler = Arc::new(ActorHandler {
        actor: actor.clone(),
    });
    let metrics = metrics.clone();
    let task = async move {
        let raft = match open(storage, &config, &env, handler, metrics).await {
            Ok(raft) => raft,
            Err(e) => {
                let _ = actor.send_message(Msg::RaftFailed(e.to_string()));
                return;
            }
        };
        let mut metrics = raft.metrics();
        let _ = actor.send_message(Msg::RaftStarted(raft));
        // Forward changes of role, leader, term or snapshot (not every append); the
        // view carries the last log index of that moment.
        let key = |v: &RaftView| (v.role, v.leader, v.term, v.snapshot_index);
        let mut last: Option<RaftView> = None;
        loop {
            let view = {
                let current = metrics.borrow_and_update();
                let (snapshot, purged) = &gauges;
                snapshot.set(current.snapshot.map_or(0, |s| s.index) as i64);
                purged.set(current.purged.map_or(0, |p| p.index) as i64);
                RaftView::of(&current)
            };
            if last.as_ref().map(key) != Some(key(&view)) {
                last = Some(view.clone());
                if actor.send_message(Msg::RaftView(view)).is_err() {
                    break;
                }
            }
            if metrics.changed().await.is_err() {
                break;
            }
        }
    };
    tokio::spawn(task.instrument(span));
}

async fn open<E: Engine>(
    storage: PartitionStorage,
    config: &Arc<PartitionConfig>,
    env: &PartitionEnv,
    handler: Arc<ActorHandler<E>>,
    metrics: PartitionMetrics,
) -> Result<Raft, Error> {
    let raft_config =
        rill_raft::openraft_config(&config.raft, &format!("partition-{}", config.partition_id))?;
    let sm = PartitionStateMachine::new(storage.state.clone(), storage.snapshots.clone(), handler)
        .with_faults(storage.faults.clone());
    let network = NetworkFactory::new(
        config.partition_id,
        env.transport.clone(),
        config.raft.heartbeat_interval,
    );
    let node = u64::from(config.node_id.0);
    let raft = Raft::new(node, raft_config, network, storage.log, sm)
        .await
        .map_err(|e| Error::Actor(ActorError::Raft(Box::new(e))))?;
    env.raft_service.register(config.partition_id, raft.clone());
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|e| Error::Actor(ActorError::Raft(Box::new(e))))?;
    let plan = ElectionPlan::of(config);
    if !initialized && !config.joining {
        tokio::spawn(
            initialize_in_turn(raft.clone(), config.clone(), plan.clone()).in_current_span(),
        );
    }
    let better_log = env.raft_service.better_log_signal(config.partition_id);
    tokio::spawn(election::drive(raft.clone(), plan, better_log, metrics).in_current_span());
    Ok(raft)
}

/// Proposes the partition's first membership, which also starts an election here.
/// Every replica may do so with the same members; one that has a log already refuses.
async fn initialize(raft: &Raft, config: &PartitionConfig) {
    let members: BTreeMap<u64, openraft::BasicNode> = config
        .members
        .iter()
        .map(|(id, addr)| (u64::from(id.0), openraft::BasicNode { addr: addr.clone() }))
        .collect();
    if let Err(e) = raft.initialize(members).await {
        tracing::debug!(error = %e, "raft initialize");
    }
}

/// A new partition starts on one replica, so that its first election is not split: the
/// preferred one (the lowest node id without a preference) at once. Each other replica
/// starts it only if it has heard from no leader after its election patience, when the
/// replicas before it are down.
async fn initialize_in_turn(raft: Raft, config: Arc<PartitionConfig>, plan: ElectionPlan) {
    let first = config
        .preferred_leader
        .or_else(|| config.members.keys().next().copied())
        .is_none_or(|first| first == config.node_id);
    if !first {
        let patience = plan.patience();
        let heard = raft
            .wait(Some(patience))
            .metrics(|m| m.current_leader.is_some(), "a leader")
            .await
            .is_ok();
        if heard || raft.is_initialized().await.unwrap_or(true) {
            return;
        }
        tracing::info!("no leader within {patience:?}; this replica starts the partition");
    }
    initialize(&raft, &config).await;
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
