//! The cluster configuration as a broker knows it (docs/decisions/cluster-scaling.md).
//!
//! ```text
//!   partition 1's log ── CoreCommand::ClusterConfiguration (compare-and-set on version)
//!        │ applied on each replica of partition 1
//!        ▼
//!   ClusterState::offer ──► newer? ──► <data>/cluster/configuration.json, watchers
//!        ▲
//!        └── ClusterSync: every SYNC_INTERVAL, asks each peer for a newer version
//!            (brokers without a replica of partition 1, brokers not yet members)
//! ```
//!
//! The value in partition 1's state is the truth; every broker's copy is the highest
//! version it has seen, so it only ever moves forward, and every broker ends up with the
//! same one.

pub mod api;
mod configuration;
mod coordinator;
mod discovery;
mod plan;
mod rebalance;
mod requests;
mod store;
pub mod view;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};
use rill_transport::{Handler, ServiceId, Transport};
use tokio::sync::watch;
use tracing::Instrument;

pub use configuration::{
    Broker, BrokerState, ChangeStatus, ClusterConfiguration, CompletedChange, CompletedOperation,
    INITIAL_VERSION, Operation, PendingChange, Replica, ReplicaState, Routing, may_initialize,
    placement, round_robin,
};
pub use discovery::{Discovered, Discovering, NOT_CONFIGURED, discover};
pub use plan::{ChangeRequest, InvalidRequest, MAX_PARTITIONS, plan};
pub use rebalance::{HandOverLimits, PartitionRebalance, RebalanceResult};
pub use requests::{Announce, LocalCluster, MEMBERSHIP_TIMEOUT, MembershipRequest};

use crate::error::{Error, Result};
use crate::partition::ClusterSink;

/// How often a broker asks its peers for a newer configuration.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);
const SYNC_TIMEOUT: Duration = Duration::from_secs(2);

struct Inner {
    node: NodeId,
    file: PathBuf,
    current: watch::Sender<ClusterConfiguration>,
    /// Serializes saving, so files are written in version order.
    saving: parking_lot::Mutex<()>,
    /// This broker's addresses, told to every peer with each sync request.
    own: OnceLock<Announce>,
    /// The addresses brokers told with their sync requests, by node id (a broker
    /// beyond `cluster.size` is reached there once a change adds it).
    announced: parking_lot::Mutex<BTreeMap<u32, Announce>>,
    /// The internal transport and this broker's partitions, once the node runs them:
    /// what runs a change (proposals through partition 1, membership changes).
    attached: OnceLock<(Transport, Arc<dyn LocalCluster>)>,
}

/// A broker's view of the cluster configuration: the highest version it has seen, kept
/// on disk. Cheap to clone.
#[derive(Clone)]
pub struct ClusterState {
    inner: Arc<Inner>,
}

impl ClusterState {
    /// The configuration stored under `data.directory`, or, on a broker's first start,
    /// the initial one its settings describe (every broker of a new cluster computes
    /// the same).
    pub fn open(config: &RillConfig) -> Result<ClusterState> {
        ClusterState::open_or(config, || ClusterConfiguration::initial(config))
    }

    /// Whether a configuration is stored under `data.directory`.
    pub fn is_stored(config: &RillConfig) -> Result<bool> {
        let file = store::path(&config.data.directory);
        Ok(store::load(&file).map_err(Error::Config)?.is_some())
    }

    /// The configuration stored under `data.directory`, or, when none is (a new or
    /// wiped data directory), `first()`, stored at once: the one the running cluster's
    /// brokers tell ([`discover`]), else the initial one of the settings.
    pub fn open_or(
        config: &RillConfig,
        first: impl FnOnce() -> ClusterConfiguration,
    ) -> Result<ClusterState> {
        let file = store::path(&config.data.directory);
        let stored = store::load(&file).map_err(Error::Config)?;
        let current = match stored {
            Some(stored) => {
                tracing::info!(
                    version = stored.version,
                    file = %file.display(),
                    "cluster configuration loaded"
                );
                stored
            }
            None => {
                let first = first();
                store::save(&file, &first).map_err(Error::Config)?;
                first
            }
        };
        let (current, _) = watch::channel(current);
        Ok(ClusterState {
            inner: Arc::new(Inner {
                node: NodeId(config.cluster.node_id),
                file,
                current,
                saving: parking_lot::Mutex::new(()),
                own: OnceLock::new(),
                announced: parking_lot::Mutex::new(BTreeMap::new()),
                attached: OnceLock::new(),
            }),
        })
    }

    pub fn node_id(&self) -> NodeId {
        self.inner.node
    }

    pub fn current(&self) -> ClusterConfiguration {
        self.inner.current.borrow().clone()
    }

    pub fn version(&self) -> u64 {
        self.inner.current.borrow().version
    }

    /// Changes from now on (the current value counts as seen).
    pub fn subscribe(&self) -> watch::Receiver<ClusterConfiguration> {
        self.inner.current.subscribe()
    }

    /// Takes `config` if it is newer than the one known: stores it, then tells the
    /// watchers. Returns whether it was taken.
    pub fn offer(&self, config: ClusterConfiguration) -> bool {
        let _saving = self.inner.saving.lock();
        if config.version <= self.version() {
            return false;
        }
        if let Err(e) = store::save(&self.inner.file, &config) {
            // Kept in memory anyway: partition 1 and the peers still have it.
            tracing::error!(error = %e, "cannot store the cluster configuration");
        }
        tracing::info!(version = config.version, "cluster configuration updated");
        self.inner.current.send_replace(config);
        true
    }

    /// [`ClusterState::offer`] for the JSON form; a malformed one is logged and dropped.
    pub fn offer_json(&self, json: &str) -> bool {
        match ClusterConfiguration::from_json(json) {
            Ok(config) => self.offer(config),
            Err(e) => {
                tracing::error!(error = %e, "dropping a cluster configuration");
                false
            }
        }
    }

    /// This broker's configuration if it is newer than `theirs`, else nothing.
    fn newer_than(&self, theirs: u64) -> Bytes {
        let current = self.inner.current.borrow();
        if current.version > theirs {
            Bytes::from(current.to_json())
        } else {
            Bytes::new()
        }
    }

    /// Tells every peer this broker's addresses with each sync request. Only the first
    /// call counts.
    pub fn announce(&self, own: Announce) {
        let _ = self.inner.own.set(own);
    }

    /// The addresses `node` announced, if it did.
    pub fn announced(&self, node: u32) -> Option<Announce> {
        self.inner.announced.lock().get(&node).cloned()
    }

    /// Lets this broker run cluster changes: `transport` reaches the peers, `local` is
    /// this broker's partitions. Starts the coordinator, which runs the steps of a
    /// change while this broker leads partition 1 (on the current runtime). Only the
    /// first call counts.
    pub fn attach(&self, transport: Transport, local: Arc<dyn LocalCluster>) {
        let automatic = local.hand_over_limits().automatic;
        if self.inner.attached.set((transport, local)).is_ok() {
            tokio::spawn(coordinator::run(self.clone()).in_current_span());
            if automatic {
                tokio::spawn(self.clone().rebalance_automatically().in_current_span());
            }
        }
    }

    /// This broker can start and run changes (it is part of a cluster of several).
    pub fn runs_changes(&self) -> bool {
        self.attached().is_some()
    }

    fn attached(&self) -> Option<&(Transport, Arc<dyn LocalCluster>)> {
        self.inner.attached.get()
    }

    /// Partition 1's replica here (the coordinator's, which leads it): its partition
    /// count and the sends to partitions `first` and above not yet acknowledged.
    pub async fn redistribution(
        &self,
        first: PartitionId,
    ) -> std::result::Result<(u16, usize), String> {
        match self.attached() {
            Some((_, local)) => local.redistribution(first).await,
            None => Err("this broker does not run cluster changes".to_owned()),
        }
    }

    /// Waits until the configuration is at `version` or later; false after `timeout`.
    #[must_use]
    pub async fn wait_version(&self, version: u64, timeout: Duration) -> bool {
        let mut watcher = self.subscribe();
        tokio::time::timeout(timeout, watcher.wait_for(|c| c.version >= version))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// What partition 1 tells as it applies configurations.
    pub fn sink(&self) -> ClusterSink {
        let state = self.clone();
        Arc::new(move |json: String| {
            state.offer_json(&json);
        })
    }

    /// Serves the peers' requests for a newer configuration (`ServiceId::CLUSTER`).
    pub fn handler(&self) -> Arc<dyn Handler> {
        Arc::new(self.clone())
    }

    /// Asks every peer (`peers`, and the brokers of the configuration) for a newer
    /// configuration every [`SYNC_INTERVAL`], on the current runtime, until `transport`
    /// shuts down.
    pub fn sync_with_peers(&self, transport: Transport, peers: BTreeSet<NodeId>) {
        let state = self.clone();
        let sync = async move {
            let mut ticker = tokio::time::interval(SYNC_INTERVAL);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let mut targets = peers.clone();
                targets.extend(state.current().brokers.keys().map(|&id| NodeId(id)));
                targets.remove(&state.node_id());
                let payload = requests::encode(&requests::ClusterRequest::Sync {
                    version: state.version(),
                    announce: state.inner.own.get().cloned(),
                });
                let asks = targets.into_iter().map(|peer| {
                    let transport = transport.clone();
                    let payload = payload.clone();
                    async move {
                        transport
                            .request(
                                peer,
                                ServiceId::CLUSTER,
                                PartitionId(0),
                                payload,
                                SYNC_TIMEOUT,
                            )
                            .await
                    }
                });
                for answer in futures::future::join_all(asks).await {
                    match answer {
                        Ok(bytes) if !bytes.is_empty() => {
                            state.offer_json(&String::from_utf8_lossy(&bytes));
                        }
                        Ok(_) => {}
                        Err(rill_transport::TransportError::ShuttingDown) => return,
                        Err(_) => {} // the peer is down; others answer, or it will
                    }
                }
            }
        };
        tokio::spawn(sync.in_current_span());
    }
}

impl Handler for ClusterState {
    /// A sync request (the asker's version, as 8 bytes little endian or in a
    /// `ClusterRequest::Sync`) is answered with this broker's configuration
    /// if it is newer, else empty; the other requests run a change's parts here.
    fn handle(
        &self,
        from: NodeId,
        _service: ServiceId,
        _partition: PartitionId,
        payload: Bytes,
    ) -> BoxFuture<'static, std::result::Result<Bytes, String>> {
        if let Ok(raw) = <[u8; 8]>::try_from(payload.as_ref()) {
            let answer = self.newer_than(u64::from_le_bytes(raw));
            return Box::pin(async move { Ok(answer) });
        }
        let request = match requests::decode(&payload) {
            Ok(request) => request,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        self.serve(from, request)
    }
}

/// The replicas of `partition` by node and their priorities, as the partition starts
/// with them: node → priority.
pub fn members_of(config: &ClusterConfiguration, partition: PartitionId) -> BTreeMap<NodeId, u32> {
    config
        .replicas_of(partition)
        .into_iter()
        .map(|(node, replica)| (node, replica.priority))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(dir: &std::path::Path) -> RillConfig {
        let mut config = RillConfig::default();
        config.data.directory = dir.to_path_buf();
        config.cluster.size = 3;
        config.cluster.partitions_count = 3;
        config.cluster.replication_factor = 3;
        config
    }

    #[test]
    fn a_broker_keeps_the_highest_version_it_was_offered_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let state = ClusterState::open(&settings(dir.path())).unwrap();
        assert_eq!(state.version(), INITIAL_VERSION);
        let newer = state
            .current()
            .start_change(vec![Operation::BrokerAdd { broker: 3 }], 7);
        let watcher = state.subscribe();
        assert!(state.offer(newer.clone()));
        assert!(watcher.has_changed().unwrap());
        // An older or equal version is not taken.
        assert!(!state.offer(ClusterConfiguration::initial(&settings(dir.path()))));
        assert!(!state.offer(newer.clone()));
        assert!(!state.offer_json("not json"));
        drop(state);
        // The settings now say something else: the stored configuration wins.
        let mut changed = settings(dir.path());
        changed.cluster.size = 1;
        changed.cluster.replication_factor = 1;
        let reopened = ClusterState::open(&changed).unwrap();
        assert_eq!(reopened.current(), newer);
    }

    #[tokio::test]
    async fn a_peer_answers_only_with_a_newer_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let state = ClusterState::open(&settings(dir.path())).unwrap();
        let ask = |version: u64| {
            state.handle(
                NodeId(1),
                ServiceId::CLUSTER,
                PartitionId(0),
                Bytes::copy_from_slice(&version.to_le_bytes()),
            )
        };
        let answer = ask(0).await.unwrap();
        assert_eq!(
            ClusterConfiguration::from_json(std::str::from_utf8(&answer).unwrap()).unwrap(),
            state.current()
        );
        assert!(ask(INITIAL_VERSION).await.unwrap().is_empty());
        let malformed = state
            .handle(
                NodeId(1),
                ServiceId::CLUSTER,
                PartitionId(0),
                Bytes::from_static(b"x"),
            )
            .await
            .unwrap_err();
        assert!(
            malformed.contains("malformed cluster request"),
            "{malformed}"
        );
    }
}
