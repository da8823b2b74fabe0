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
use rill_broker::simulation::{Processor, election_driver};
use rill_config::RaftConfig;
use rill_engine::BpmnEngine;
use rill_protocol::{Command, PartitionId, Timestamp};
use rill_raft::{
    ApplyBatch, ApplyHandler, EntryResponse, NetworkFactory, PartitionStateMachine, Raft,
    RaftService, SnapshotMeta, SnapshotStore, StateOptions, StateStore,
};

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
    /// False once the node crashed: this incarnation applies nothing more.
    alive: Arc<std::sync::atomic::AtomicBool>,
}

impl SimHandler {
    fn apply_now(&self, mut batch: ApplyBatch) -> rill_raft::Result<Vec<EntryResponse>> {
        if !self.alive.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(rill_raft::Error::Handler("the node is down".into()));
        }
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

/// One replica: its storage, which outlives a crash, and its raft while it runs.
pub struct SimNode {
    pub id: NodeId,
    pub state: Arc<StateStore>,
    log: MemLogStore,
    snapshots: Arc<SnapshotStore>,
    network: SimNetwork,
    world: SharedWorld,
    own_clock: bool,
    settings: RaftConfig,
    /// Its place in the priority order (the partition's first member leads by preference).
    rank: u32,
    raft: parking_lot::RwLock<Option<Raft>>,
    /// The running incarnation's processor (for the leader's due work).
    handler: parking_lot::Mutex<Option<Arc<SimHandler>>>,
    /// The running incarnation's switch (see `SimHandler::alive`).
    alive: parking_lot::Mutex<Arc<std::sync::atomic::AtomicBool>>,
}

/// Rill's raft settings: the broker's defaults, with or without the priority election.
pub fn raft_settings(priority_election: bool) -> RaftConfig {
    RaftConfig {
        priority_election,
        ..RaftConfig::default()
    }
}

/// Where a node keeps its state, and how the run treats its storage.
pub struct NodeSetup<'a> {
    pub members: &'a [NodeId],
    pub dir: &'a Path,
    pub state_options: &'a StateOptions,
    pub network: &'a SimNetwork,
    pub world: &'a SharedWorld,
    pub max_sync_ms: u64,
    pub planted: Option<PlantedBug>,
    pub priority_election: bool,
}

impl SimNode {
    /// Opens a new replica's storage and starts it with the partition's first membership.
    pub async fn start(id: NodeId, setup: NodeSetup<'_>) -> Result<SimNode, String> {
        let state = Arc::new(
            StateStore::open_with(&setup.dir.join("state"), setup.state_options)
                .map_err(|e| e.to_string())?,
        );
        let snapshots = Arc::new(
            SnapshotStore::open(
                &setup.dir.join("snapshots"),
                tokio::runtime::Handle::current(),
            )
            .map_err(|e| e.to_string())?,
        );
        let node = SimNode {
            id,
            state,
            log: MemLogStore::new(setup.world.clone(), setup.max_sync_ms),
            snapshots,
            network: setup.network.clone(),
            world: setup.world.clone(),
            own_clock: setup.planted == Some(PlantedBug::ReplicaReadsItsClock)
                && Some(&id) == setup.members.first(),
            settings: raft_settings(setup.priority_election),
            rank: setup.members.iter().position(|&m| m == id).unwrap_or(0) as u32,
            raft: parking_lot::RwLock::new(None),
            alive: Default::default(),
            handler: Default::default(),
        };
        let raft = node.open_raft().await?;
        let voters: BTreeMap<u64, BasicNode> = setup
            .members
            .iter()
            .map(|&m| (m, BasicNode::new(format!("n{m}"))))
            .collect();
        // Every replica proposes the same first membership, as brokers do.
        let _ = raft.initialize(voters).await;
        Ok(node)
    }

    /// Starts raft over the node's storage, with a fresh engine and processor continuing
    /// from the state database, as a broker does when it starts.
    async fn open_raft(&self) -> Result<Raft, String> {
        let settings = &self.settings;
        let config = rill_raft::openraft_config(settings, "sim").map_err(|e| e.to_string())?;
        let processor = Processor::new(BpmnEngine::new(), PARTITION, &self.state.current())
            .map_err(|e| e.to_string())?;
        let alive = Arc::new(std::sync::atomic::AtomicBool::new(true));
        *self.alive.lock() = alive.clone();
        let handler = Arc::new(SimHandler {
            alive,
            node: self.id,
            state: self.state.clone(),
            processor: Mutex::new(processor),
            world: self.world.clone(),
            own_clock: self.own_clock,
        });
        *self.handler.lock() = Some(handler.clone());
        let transport = TransportHandle(Arc::new(SimTransport {
            from: self.id,
            network: self.network.clone(),
            world: self.world.clone(),
        }));
        let factory =
            NetworkFactory::new(PARTITION, Arc::new(transport), settings.heartbeat_interval);
        let sm = PartitionStateMachine::new(self.state.clone(), self.snapshots.clone(), handler);
        let raft = Raft::new(self.id, config, factory, self.log.clone(), sm)
            .await
            .map_err(|e| e.to_string())?;
        let service = RaftService::new();
        service.register(PARTITION, raft.clone());
        let better_log = service.better_log_signal(PARTITION);
        self.network.attach(self.id, service);
        tokio::spawn(watch_leadership(raft.clone(), self.id, self.world.clone()));
        let jitter = Duration::from_millis(
            self.world
                .lock()
                .rng
                .below(settings.election_timeout.as_millis() as u64 / 2),
        );
        tokio::spawn(election_driver(
            raft.clone(),
            settings,
            self.rank,
            jitter,
            better_log,
        ));
        *self.raft.write() = Some(raft.clone());
        Ok(raft)
    }

    /// The engine's due commands on this node's state at `now`.
    pub fn due_commands(&self, now: Timestamp) -> Result<Vec<Command>, String> {
        let Some(handler) = self.handler.lock().clone() else {
            return Ok(Vec::new());
        };
        let db = self.state.current();
        let mut processor = handler.processor.lock();
        processor
            .due_commands(&db, now, 100)
            .map_err(|e| e.to_string())
    }

    /// The running raft, if the node is up.
    pub fn raft(&self) -> Option<Raft> {
        self.raft.read().clone()
    }

    /// The term it leads in, if it is up and says it leads.
    pub fn is_leader(&self) -> Option<u64> {
        let raft = self.raft()?;
        let m = raft.metrics().borrow().clone();
        (m.state == ServerState::Leader).then_some(m.current_term)
    }

    /// Its raft stopped by itself (a storage failure is fatal to openraft).
    pub fn is_stopped(&self) -> bool {
        self.raft()
            .is_some_and(|raft| raft.metrics().has_changed().is_err())
    }

    /// The next log sync fails.
    pub fn fail_next_sync(&self) {
        self.log.fail_next_sync();
    }

    /// Crashes the node: raft stops, nothing reaches it, and its log loses what was not
    /// synced. Returns whether it was up.
    pub async fn crash(&self) -> bool {
        let raft = self.raft.write().take();
        let Some(raft) = raft else {
            return false;
        };
        // The power goes at once: no message in or out, nothing more applied or written.
        self.network.detach(self.id);
        self.alive
            .lock()
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let applied = self
            .state
            .applied_state()
            .ok()
            .and_then(|(applied, _)| applied)
            .map_or(0, |id| id.index);
        let lost = self.log.cut_power(applied);
        self.world.lock().trace(format_args!(
            "n{} crashed, {lost} unsynced entries lost, applied {applied}",
            self.id
        ));
        let _ = raft.shutdown().await;
        true
    }

    /// Starts a crashed node again. Returns whether it was down.
    pub async fn restart(&self) -> Result<bool, String> {
        if self.raft.read().is_some() {
            return Ok(false);
        }
        self.world
            .lock()
            .trace(format_args!("n{} restarts", self.id));
        self.log.restore_power();
        self.open_raft().await.map(|_| true)
    }

    pub async fn shutdown(&self) {
        let raft = self.raft.write().take();
        if let Some(raft) = raft {
            let _ = raft.shutdown().await;
        }
    }
}

/// Reports every leader raft's metrics show to the leader checks, and traces each
/// change of role or term.
async fn watch_leadership(raft: Raft, id: NodeId, world: SharedWorld) {
    let mut metrics = raft.metrics();
    let mut last = None;
    loop {
        let (state, term, last_log, applied) = {
            let m = metrics.borrow_and_update();
            (
                m.state,
                m.current_term,
                m.last_log_index,
                m.last_applied.map(|l| l.index),
            )
        };
        if last != Some((state, term)) {
            last = Some((state, term));
            let mut w = world.lock();
            w.trace(format_args!(
                "n{id} {state:?} term {term} last log {last_log:?} applied {applied:?}"
            ));
            if state == ServerState::Leader {
                w.saw_leader(term, id);
            }
        }
        if state == ServerState::Shutdown || metrics.changed().await.is_err() {
            return;
        }
    }
}
