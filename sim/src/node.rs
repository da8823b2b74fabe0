//! One simulated replica: the real openraft with Rill's network client and service, Rill's
//! state-machine adapter over a real state database, and the broker's stream processor
//! with the BPMN engine applying what raft commits. The log is in memory.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openraft::{BasicNode, ServerState};
use parking_lot::Mutex;
use rill_broker::simulation::Processor;
use rill_config::RaftConfig;
use rill_engine::{BpmnEngine, EngineOptions};
use rill_protocol::PartitionId;
use rill_raft::{
    ApplyBatch, ApplyHandler, EntryResponse, NetworkFactory, PartitionStateMachine, Raft,
    RaftService, SnapshotMeta, SnapshotStore, StateOptions, StateStore,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::PlantedBug;
use crate::log_store::MemLogStore;
use crate::network::{SimNetwork, SimTransport, TransportHandle};
use crate::rng::{FNV_START, fnv};
use crate::world::{AppliedEntry, NodeId, SharedWorld};

pub const PARTITION: PartitionId = PartitionId(1);

/// The partition side of the state machine: the broker's processor over the state
/// database, and the invariants' bookkeeping.
struct SimHandler {
    node: NodeId,
    state: Arc<StateStore>,
    processor: Mutex<Processor<BpmnEngine>>,
    world: SharedWorld,
    /// `PlantedBug::ReplicaReadsItsClock`: this replica stamps entries with its own clock.
    own_clock: bool,
}

impl SimHandler {
    fn apply_now(&self, mut batch: ApplyBatch) -> rill_raft::Result<Vec<EntryResponse>> {
        if self.own_clock {
            let now = crate::EPOCH_MS + self.world.lock().now_ms() as i64;
            for entry in &mut batch.entries {
                entry.data = entry.data.take().map(|data| restamp(&data, now));
            }
        }
        let db = self.state.current();
        let mut processor = self.processor.lock();
        let before = processor.last_position();
        let applied = processor
            .apply(&db, &batch)
            .map_err(|e| rill_raft::Error::Handler(e.to_string()))?;
        let after = processor.last_position();
        let entries: Vec<AppliedEntry> = batch
            .entries
            .iter()
            .map(|e| AppliedEntry {
                index: e.log_id.index,
                term: e.log_id.leader_id.term,
                leader: e.log_id.leader_id.node_id,
                data: e.data.as_ref().map_or(0, |d| fnv(FNV_START, d)),
            })
            .collect();
        let mut w = self.world.lock();
        w.trace(format_args!(
            "n{} applied {}..={} records {} positions {}..{}",
            self.node,
            entries.first().map_or(0, |e| e.index),
            entries.last().map_or(0, |e| e.index),
            applied.records,
            before.get(),
            after.get()
        ));
        if after.get() - before.get() != applied.records {
            w.violation(format!(
                "node {}: {} records written but positions moved from {} to {}",
                self.node,
                applied.records,
                before.get(),
                after.get()
            ));
        }
        w.applied(self.node, &entries);
        for request in applied.skipped {
            w.skipped.insert(request.0);
        }
        let responses = w.responses.entry(self.node).or_default();
        for (request, response) in applied.responses {
            responses.insert(request.0, response);
        }
        Ok(vec![EntryResponse::default(); batch.entries.len()])
    }
}

/// The entry with `now` in place of the leader's timestamp (bytes 9..17 of a version 3
/// batch, see `rill_broker`'s batch format): the planted bug of a replica that reads its
/// own clock.
fn restamp(data: &bytes::Bytes, now: i64) -> bytes::Bytes {
    let mut bytes = data.to_vec();
    if bytes.len() >= 17 {
        bytes[9..17].copy_from_slice(&now.to_le_bytes());
    }
    bytes.into()
}

impl ApplyHandler for SimHandler {
    fn apply(
        &self,
        batch: ApplyBatch,
    ) -> BoxFuture<'static, rill_raft::Result<Vec<EntryResponse>>> {
        let result = self.apply_now(batch);
        Box::pin(async move { result })
    }

    fn snapshot_installed(&self, _meta: SnapshotMeta) -> BoxFuture<'static, rill_raft::Result<()>> {
        // Snapshots are not taken in the simulation yet (docs/decisions/simulation.md).
        Box::pin(async {
            Err(rill_raft::Error::Handler(
                "no snapshots in the simulation".into(),
            ))
        })
    }
}

pub struct SimNode {
    pub id: NodeId,
    pub raft: Raft,
    pub state: Arc<StateStore>,
}

/// Rill's raft settings (the broker's defaults).
pub fn raft_settings() -> RaftConfig {
    RaftConfig::default()
}

impl SimNode {
    pub async fn start(
        id: NodeId,
        members: &[NodeId],
        dir: &Path,
        state_options: &StateOptions,
        network: &SimNetwork,
        world: &SharedWorld,
        max_sync_ms: u64,
        planted: Option<PlantedBug>,
    ) -> Result<SimNode, String> {
        let settings = raft_settings();
        let config = rill_raft::openraft_config(&settings, "sim").map_err(|e| e.to_string())?;
        let state = Arc::new(
            StateStore::open_with(&dir.join("state"), state_options).map_err(|e| e.to_string())?,
        );
        let snapshots = Arc::new(
            SnapshotStore::open(&dir.join("snapshots"), tokio::runtime::Handle::current())
                .map_err(|e| e.to_string())?,
        );
        let processor = Processor::new(
            BpmnEngine::new(EngineOptions::default()),
            PARTITION,
            &state.current(),
        )
        .map_err(|e| e.to_string())?;
        let handler = Arc::new(SimHandler {
            node: id,
            state: state.clone(),
            processor: Mutex::new(processor),
            world: world.clone(),
            own_clock: planted == Some(PlantedBug::ReplicaReadsItsClock) && id == members[0],
        });
        let transport = TransportHandle(Arc::new(SimTransport {
            from: id,
            network: network.clone(),
            world: world.clone(),
        }));
        let factory =
            NetworkFactory::new(PARTITION, Arc::new(transport), settings.heartbeat_interval);
        let sm = PartitionStateMachine::new(state.clone(), snapshots, handler);
        let log = MemLogStore::new(world.clone(), max_sync_ms);
        let raft = Raft::new(id, config, factory, log, sm)
            .await
            .map_err(|e| e.to_string())?;
        let service = RaftService::new();
        service.register(PARTITION, raft.clone());
        network.attach(id, service);
        let voters: BTreeMap<u64, BasicNode> = members
            .iter()
            .map(|&m| (m, BasicNode::new(format!("n{m}"))))
            .collect();
        // Every replica proposes the same first membership, as brokers do.
        let _ = raft.initialize(voters).await;
        tokio::spawn(watch_leadership(raft.clone(), id, world.clone()));
        tokio::spawn(drive_elections(raft.clone(), id, world.clone(), settings));
        Ok(SimNode { id, raft, state })
    }

    pub fn is_leader(&self) -> Option<u64> {
        let m = self.raft.metrics().borrow().clone();
        (m.state == ServerState::Leader).then_some(m.current_term)
    }
}

/// Reports every leader raft's metrics show to the one-leader-per-term check.
async fn watch_leadership(raft: Raft, id: NodeId, world: SharedWorld) {
    let mut metrics = raft.metrics();
    loop {
        let (state, term) = {
            let m = metrics.borrow_and_update();
            (m.state, m.current_term)
        };
        if state == ServerState::Leader {
            world.lock().saw_leader(term, id);
        }
        if state == ServerState::Shutdown || metrics.changed().await.is_err() {
            return;
        }
    }
}

/// When this replica last heard from a leader (or voted), as raft keeps it.
async fn last_contact(raft: &Raft) -> Option<Option<Instant>> {
    let (tx, rx) = oneshot::channel();
    raft.external_request(move |state| {
        let _ = tx.send(state.vote_last_modified());
    });
    rx.await.ok()
}

/// openraft's own election timer is off in Rill (see `rill_raft::openraft_config`); the
/// broker's election driver stands after the election timeout without a leader. This one
/// follows the same rule, with a seeded jitter instead of the priority order, so the
/// replicas do not all stand at once. (The broker's driver itself is not covered yet.)
async fn drive_elections(raft: Raft, id: NodeId, world: SharedWorld, settings: RaftConfig) {
    let started = Instant::now();
    let mut stood = started;
    let tick = settings.heartbeat_interval / 2;
    let timeout = settings.election_timeout;
    let jitter = |world: &SharedWorld| {
        Duration::from_millis(world.lock().rng.below(timeout.as_millis() as u64 / 2))
    };
    let mut patience = timeout + jitter(&world);
    loop {
        tokio::time::sleep(tick).await;
        let state = raft.metrics().borrow().state;
        match state {
            ServerState::Shutdown => return,
            ServerState::Follower | ServerState::Candidate => {}
            _ => continue,
        }
        let Some(contact) = last_contact(&raft).await else {
            return;
        };
        let heard = contact.unwrap_or(started).max(stood);
        if Instant::now().duration_since(heard) >= patience {
            world
                .lock()
                .trace(format_args!("n{id} stands for election"));
            let _ = raft.trigger().elect().await;
            stood = Instant::now();
            patience = timeout + jitter(&world);
        }
    }
}
