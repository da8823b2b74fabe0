//! A broker node: its two runtimes, its metrics, and the partitions it hosts.
//!
//! Which partitions it hosts is the cluster configuration's say (`crate::cluster`). A
//! new cluster's places replicas round-robin as in Zeebe: partition `p` (from 1) lives
//! on the `replication-factor` nodes starting at node `(p - 1) % cluster-size`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;

use prometheus::Registry;
use rill_config::RillConfig;
use rill_engine_api::Engine;
use rill_exporter::{AnyExporter, ExporterMetrics};
use rill_protocol::{NodeId, PartitionId};
use rill_raft::{RaftService, RaftTransport};
use tracing::Instrument;

use crate::cluster::{
    ClusterConfiguration, ClusterState, Discovered, Discovering, HandOverLimits, INITIAL_VERSION,
    LocalCluster, MEMBERSHIP_TIMEOUT, MembershipRequest, Operation, discover, may_initialize,
};
use crate::delivery::LocalRouter;
use crate::error::{Error, Result};
use crate::export::ExporterFactory;
use crate::metrics::BrokerMetrics;
use crate::partition::{
    HandOver, Partition, PartitionConfig, PartitionEnv, PartitionMap, PartitionStatus, Role,
};
use crate::raft_network::RaftNetwork;
use crate::runtime::Runtimes;

/// The nodes holding a replica of `partition`, in placement order.
pub fn replicas_of(
    partition: PartitionId,
    cluster_size: u32,
    replication_factor: u16,
) -> Vec<NodeId> {
    let size = cluster_size.max(1);
    let first = (u32::from(partition.get()).saturating_sub(1)) % size;
    (0..u32::from(replication_factor).min(size))
        .map(|i| NodeId((first + i) % size))
        .collect()
}

/// The partitions `node` holds a replica of.
pub fn partitions_of(node: NodeId, config: &RillConfig) -> Vec<PartitionId> {
    (1..=config.cluster.partitions_count)
        .map(PartitionId)
        .filter(|&p| {
            replicas_of(p, config.cluster.size, config.cluster.replication_factor).contains(&node)
        })
        .collect()
}

/// The raft transport of a node that is the only replica of its partitions (standalone):
/// a raft group of one never sends a message, so any attempt is an error.
pub fn single_node_transport() -> Arc<dyn RaftTransport> {
    struct NoPeers;
    impl RaftTransport for NoPeers {
        fn request(
            &self,
            target: u64,
            _partition: PartitionId,
            _kind: rill_raft::RaftRpcKind,
            _payload: bytes::Bytes,
            _timeout: std::time::Duration,
        ) -> futures::future::BoxFuture<'static, Result<bytes::Bytes, rill_raft::TransportFailure>>
        {
            Box::pin(async move {
                Err(rill_raft::TransportFailure::Unreachable(format!(
                    "node {target}: this is a single-node broker with no peers"
                )))
            })
        }
    }
    Arc::new(NoPeers)
}

/// The exporters `config` asks for, checked now (a mistake fails the start) and made
/// anew for each partition leader.
fn exporter_factory(config: &RillConfig, registry: &Registry) -> Result<ExporterFactory> {
    let metrics = ExporterMetrics::new().map_err(|e| Error::Config(format!("metrics: {e}")))?;
    metrics
        .register(registry)
        .map_err(|e| Error::Config(format!("metrics: {e}")))?;
    let exporters = config.exporters.clone();
    AnyExporter::from_config(&exporters, &metrics)
        .map_err(|e| Error::Config(format!("exporters: {e}")))?;
    Ok(Arc::new(move |_partition| {
        AnyExporter::from_config(&exporters, &metrics).unwrap_or_else(|e| {
            // Called as a partition starts leading, in the partition's span.
            tracing::error!(error = %e, "cannot set up the exporters");
            Vec::new()
        })
    }))
}

/// What a node's partitions are made of and run on, shared with the task that starts
/// and stops replicas as the cluster configuration changes.
struct Shared<E: Engine> {
    config: Arc<RillConfig>,
    node_id: NodeId,
    env: PartitionEnv,
    partitions: PartitionMap<E>,
    /// Each hosted partition's priority rank, read by its election driver.
    ranks: parking_lot::Mutex<BTreeMap<PartitionId, Arc<AtomicU32>>>,
    make_engine: Arc<dyn Fn(PartitionId) -> E + Send + Sync>,
    /// Every known node's internal address: the contact points, and the brokers a
    /// change added.
    addresses: parking_lot::RwLock<BTreeMap<NodeId, String>>,
    network: Option<RaftNetwork>,
    cluster: ClusterState,
    /// The cluster as created, from the settings: only its replicas of partitions no
    /// change has moved may start a partition's raft group (`may_initialize`); every
    /// other replica joins a running one.
    initial: ClusterConfiguration,
    /// The partition count of the cluster configuration: each hosted partition's
    /// leader raises its state's count to it.
    partition_count: Arc<AtomicU16>,
    /// The highest engine version every broker of the cluster announced that it applies
    /// (0 while one has not): each hosted partition's leader raises its state's to it.
    engine_version: Arc<AtomicU32>,
    /// Held while replicas start or stop, so that they do so one at a time.
    changing: tokio::sync::Mutex<()>,
    stopping: AtomicBool,
    span: tracing::Span,
}

impl<E: Engine> Shared<E> {
    /// The partitions this node should run under `config`: those it holds, and the one
    /// the change in progress is about to join or bootstrap here.
    fn wanted(&self, config: &ClusterConfiguration) -> BTreeSet<PartitionId> {
        let mut wanted: BTreeSet<PartitionId> =
            config.partitions_of(self.node_id).into_iter().collect();
        if let Some(partition) = self
            .joining_here(config)
            .or(self.bootstrapping_here(config))
        {
            wanted.insert(partition);
        }
        wanted
    }

    /// The partition the change in progress joins here next, if any.
    fn joining_here(&self, config: &ClusterConfiguration) -> Option<PartitionId> {
        match config.next_step() {
            Some(&Operation::PartitionJoin {
                broker, partition, ..
            }) if broker == self.node_id.0 => Some(PartitionId(partition)),
            _ => None,
        }
    }

    /// The partition the change in progress bootstraps here next, if any: its first
    /// replica, which starts the raft group with itself as the only voter.
    fn bootstrapping_here(&self, config: &ClusterConfiguration) -> Option<PartitionId> {
        match config.next_step() {
            Some(&Operation::PartitionBootstrap {
                broker, partition, ..
            }) if broker == self.node_id.0 => Some(PartitionId(partition)),
            _ => None,
        }
    }

    async fn start_replica(
        &self,
        partition_id: PartitionId,
        config: &ClusterConfiguration,
    ) -> Result<Partition<E>> {
        if let Some(running) = self.partitions.get(&partition_id) {
            return Ok(running);
        }
        let replicas = config.replicas_of(partition_id);
        let members = {
            let addresses = self.addresses.read();
            replicas
                .iter()
                .map(|&(node, _)| node)
                .chain([self.node_id])
                .map(|node| {
                    let address = addresses.get(&node).cloned().unwrap_or_default();
                    (node, address)
                })
                .collect::<BTreeMap<_, _>>()
        };
        let mut partition_config =
            PartitionConfig::from_config(&self.config, partition_id, self.node_id, members);
        partition_config.preferred_leader = replicas.first().map(|&(node, _)| node);
        let initializes = may_initialize(&self.initial, config, self.node_id, partition_id);
        partition_config.joining = !initializes;
        if initializes {
            tracing::info!(partition = %partition_id, version = config.version, "starting a replica of partition {partition_id} that may start its raft group");
        } else {
            tracing::info!(partition = %partition_id, version = config.version, "starting a replica of partition {partition_id} that joins it: it waits for the partition's leader to add it");
        }
        // Until its state holds a higher count, a partition distributes over the
        // partitions the cluster was created with (what it did before any change).
        partition_config.partition_count = config.routing.message_partitions;
        partition_config.message_partition_count = config.routing.message_partitions;
        partition_config.cluster_partition_count = Some(self.partition_count.clone());
        // A broker with no peers has none to wait for (the build's own version).
        if self.network.is_some() {
            partition_config.cluster_engine_version = Some(self.engine_version.clone());
        }
        let rank = Arc::new(AtomicU32::new(config.rank_of(partition_id, self.node_id)));
        partition_config.priority_rank = Some(rank.clone());
        let engine = (self.make_engine)(partition_id);
        let partition = Partition::start(partition_config, engine, self.env.clone())
            .instrument(self.span.clone())
            .await?;
        self.ranks.lock().insert(partition_id, rank);
        if partition_id == PartitionId(1) {
            partition.follow_cluster(self.cluster.sink());
        }
        self.partitions.insert(partition.clone());
        Ok(partition)
    }

    /// Stops the replica of `partition_id`, which is no longer a member of its raft
    /// group, and deletes its data.
    async fn leave(&self, partition_id: PartitionId) -> Result<()> {
        let directory = self
            .config
            .data
            .directory
            .join(format!("partition-{partition_id}"));
        if let Some(partition) = self.partitions.remove(&partition_id) {
            self.ranks.lock().remove(&partition_id);
            partition.shutdown().instrument(self.span.clone()).await;
        }
        match tokio::fs::remove_dir_all(&directory).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::Config(format!(
                "cannot delete {}: {e}",
                directory.display()
            ))),
        }
    }

    /// Runs the partitions `config` gives this node, stops the others, and points the
    /// transport and the election drivers at what it says.
    async fn follow(&self, config: &ClusterConfiguration) -> Result<()> {
        let _changing = self.changing.lock().await;
        if self.stopping.load(Ordering::Acquire) {
            return Ok(());
        }
        for (&id, broker) in &config.brokers {
            if let Some(address) = &broker.internal_address {
                self.learn_address(NodeId(id), address.clone()).await;
            }
        }
        self.partition_count
            .fetch_max(config.partitions_count(), Ordering::Relaxed);
        let wanted = self.wanted(config);
        for partition in self.partitions.keys() {
            if !wanted.contains(&partition) {
                tracing::info!(%partition, version = config.version, "this broker no longer holds a replica of partition {partition}: stopping it and deleting its data");
                self.leave(partition).await?;
            }
        }
        for &partition in &wanted {
            if !self.partitions.contains_key(&partition) {
                self.start_replica(partition, config).await?;
            }
        }
        for (partition, rank) in self.ranks.lock().iter() {
            rank.store(config.rank_of(*partition, self.node_id), Ordering::Relaxed);
        }
        Ok(())
    }

    async fn learn_address(&self, node: NodeId, address: String) {
        if node == self.node_id || self.addresses.read().get(&node) == Some(&address) {
            return;
        }
        self.addresses.write().insert(node, address.clone());
        if let Some(network) = &self.network {
            network.add_peer(node, address).await;
        }
    }
}

/// What the cluster configuration's coordinator asks of this node's partitions.
struct NodeCluster<E: Engine> {
    shared: Arc<Shared<E>>,
}

impl<E: Engine> LocalCluster for NodeCluster<E> {
    fn leads_partition_1(&self) -> bool {
        self.shared
            .partitions
            .get(&PartitionId(1))
            .is_some_and(|p| p.status().role == Role::Leader)
    }

    fn propose(&self, expected_version: u64, next: &ClusterConfiguration) -> bool {
        match self.shared.partitions.get(&PartitionId(1)) {
            Some(first) if first.status().role == Role::Leader => {
                first.propose_cluster_configuration(expected_version, next.version, next.to_json());
                true
            }
            _ => false,
        }
    }

    fn change_membership(
        &self,
        request: MembershipRequest,
    ) -> BoxFuture<'static, std::result::Result<(), String>> {
        let shared = self.shared.clone();
        Box::pin(async move {
            let partition_id = request.partition();
            let partition = shared
                .partitions
                .get(&partition_id)
                .ok_or_else(|| format!("partition {partition_id} has no replica here"))?;
            let status = partition.status();
            if status.role != Role::Leader {
                return Err(format!(
                    "partition {partition_id} is not led here (leader: {:?})",
                    status.leader.map(|l| l.0)
                ));
            }
            let voters = partition.voters().await.map_err(|e| e.to_string())?;
            let changed = match request {
                MembershipRequest::AddVoter { node, address, .. } => {
                    let node = NodeId(node);
                    if voters.contains(&node) {
                        return Ok(());
                    }
                    shared.learn_address(node, address.clone()).await;
                    let catching_up = partition.add_learner(node, address);
                    tokio::time::timeout(MEMBERSHIP_TIMEOUT, catching_up)
                        .await
                        .map_err(|_| format!("node {node} is still catching up"))?
                        .map_err(|e| e.to_string())?;
                    let mut next = voters;
                    next.insert(node);
                    partition.change_voters(&next).await
                }
                MembershipRequest::RemoveVoter { node, .. } => {
                    let node = NodeId(node);
                    if !voters.contains(&node) {
                        return Ok(());
                    }
                    let mut next = voters;
                    next.remove(&node);
                    if next.is_empty() {
                        return Err(format!(
                            "node {node} is partition {partition_id}'s last voter"
                        ));
                    }
                    partition.change_voters(&next).await
                }
            };
            changed.map_err(|e| e.to_string())
        })
    }

    fn address_of(&self, node: NodeId) -> Option<String> {
        self.shared.addresses.read().get(&node).cloned()
    }

    fn hosts(&self, partition: PartitionId) -> bool {
        self.shared.partitions.contains_key(&partition)
    }

    fn bootstrapped(&self, partition_id: PartitionId) -> std::result::Result<(), String> {
        let partition = self
            .shared
            .partitions
            .get(&partition_id)
            .ok_or_else(|| format!("partition {partition_id} has no replica here yet"))?;
        let status = partition.status();
        if status.role != Role::Leader {
            return Err(format!(
                "partition {partition_id}'s replica here does not lead yet ({:?})",
                status.role
            ));
        }
        Ok(())
    }

    fn checkpoint(
        &self,
        partition_id: PartitionId,
        backup_id: u64,
    ) -> BoxFuture<'static, std::result::Result<crate::backup::CheckpointOutcome, String>> {
        let partition = self.shared.partitions.get(&partition_id);
        Box::pin(async move {
            let partition =
                partition.ok_or_else(|| format!("partition {partition_id} has no replica here"))?;
            partition
                .checkpoint(backup_id)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn redistribution(
        &self,
        first: PartitionId,
    ) -> BoxFuture<'static, std::result::Result<(u16, usize), String>> {
        let partition = self.shared.partitions.get(&PartitionId(1));
        Box::pin(async move {
            let partition = partition.ok_or("partition 1 has no replica here")?;
            partition
                .redistribution(first)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn hand_over_limits(&self) -> HandOverLimits {
        let raft = &self.shared.config.raft;
        HandOverLimits {
            // What one append request carries: the successor catches up in a round trip.
            max_lag: raft.max_append_entries.max(1),
            catch_up: raft.election_timeout / 2,
            // A second try after the lease, for partitions of more than three replicas.
            election: raft.election_timeout + rill_raft::leader_lease(raft),
            automatic: raft.auto_rebalance,
        }
    }

    fn hand_over(
        &self,
        partition_id: PartitionId,
        to: NodeId,
        limits: HandOverLimits,
        dry_run: bool,
    ) -> BoxFuture<'static, std::result::Result<HandOver, String>> {
        let partition = self.shared.partitions.get(&partition_id);
        Box::pin(async move {
            let partition =
                partition.ok_or_else(|| format!("partition {partition_id} has no replica here"))?;
            partition
                .hand_over(to, limits.max_lag, limits.catch_up, dry_run)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn stand(
        &self,
        partition_id: PartitionId,
        check_only: bool,
        timeout: Duration,
    ) -> BoxFuture<'static, std::result::Result<Option<u64>, String>> {
        let partition = self.shared.partitions.get(&partition_id);
        Box::pin(async move {
            let partition =
                partition.ok_or_else(|| format!("partition {partition_id} has no replica here"))?;
            if check_only {
                return match partition.status().role {
                    Role::Inactive => Err(format!(
                        "partition {partition_id}'s replica here does not vote (yet)"
                    )),
                    _ => Ok(None),
                };
            }
            partition
                .stand_for_election(timeout)
                .await
                .map(|term| term.map(|t| t.0))
                .map_err(|e| e.to_string())
        })
    }

    fn led_here(&self) -> Vec<PartitionId> {
        self.shared
            .partitions
            .values()
            .into_iter()
            .filter(|p| p.status().role == Role::Leader)
            .map(|p| p.id())
            .collect()
    }
}

/// How often the node looks at what the cluster's brokers announced (a map read, but
/// for a broker not heard from yet).
const ENGINE_VERSION_WATCH_INTERVAL: Duration = Duration::from_millis(250);
/// How long a broker not heard from yet is given to answer the version request.
const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(1);

/// Keeps [`Shared::engine_version`] at the highest engine version every broker of the
/// cluster configuration applies, from what each announced in the version handshake (a
/// broker not heard from yet is asked). One that has not announced, or one of a release
/// before the handshake, holds it at what it applies (docs/decisions/versions.md).
async fn watch_engine_versions<E: Engine>(shared: Arc<Shared<E>>) {
    let Some(network) = shared.network.clone() else {
        return;
    };
    let transport = network.transport().clone();
    let own = transport.announcement().engine.map_or(0, |e| e.max);
    let mut ticker = tokio::time::interval(ENGINE_VERSION_WATCH_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reported = None;
    loop {
        ticker.tick().await;
        if shared.stopping.load(Ordering::Acquire) {
            return;
        }
        let brokers: Vec<NodeId> = shared
            .cluster
            .current()
            .brokers
            .keys()
            .map(|&id| NodeId(id))
            .filter(|&node| node != shared.node_id)
            .collect();
        let mut lowest = own;
        let mut holding = Vec::new();
        for node in brokers {
            let announced = match transport.peer_version(node) {
                Some(announced) => Some(announced),
                None => transport.announce(node, ANNOUNCE_TIMEOUT).await.ok(),
            };
            let max = announced.and_then(|a| a.engine).map_or(0, |e| e.max);
            if max < own {
                holding.push(node.0);
            }
            lowest = lowest.min(max);
        }
        shared.engine_version.store(lowest, Ordering::Relaxed);
        if reported != Some(lowest) {
            reported = Some(lowest);
            if holding.is_empty() {
                tracing::info!(
                    version = lowest,
                    "every broker of the cluster applies engine version {lowest}"
                );
            } else {
                tracing::info!(
                    version = lowest,
                    brokers = ?holding,
                    "the cluster's engine version stays at most {lowest} while brokers {holding:?} \
                     do not announce that they apply {own} (older releases, or not reached yet)"
                );
            }
        }
    }
}

/// A running broker node. Dropping it without [`BrokerNode::shutdown`] stops the
/// runtimes abruptly (as a crash would; the data on disk stays consistent).
pub struct BrokerNode<E: Engine> {
    shared: Arc<Shared<E>>,
    runtimes: Runtimes,
    metrics: BrokerMetrics,
}

impl<E: Engine> BrokerNode<E> {
    /// Starts the node's runtimes and its partitions, whose replicas receive raft
    /// messages through `raft_service`.
    ///
    /// `addresses` maps every node to the address of its internal port. With
    /// `cluster.size` above 1 the node listens on its internal port and its replicas talk
    /// to their peers over the internal transport (`raft_network`); `transport` is used
    /// only by a node that is a cluster of its own. Blocks the calling thread until every
    /// partition is open (not necessarily led). From then on the node follows the
    /// cluster configuration: it starts the replicas a change gives it and stops (and
    /// deletes) the ones a change moves off.
    pub fn start(
        config: RillConfig,
        registry: &Registry,
        transport: Arc<dyn RaftTransport>,
        raft_service: RaftService,
        addresses: BTreeMap<NodeId, String>,
        make_engine: impl Fn(PartitionId) -> E + Send + Sync + 'static,
    ) -> Result<BrokerNode<E>> {
        let exporters = Some(exporter_factory(&config, registry)?);
        BrokerNode::start_with_exporters(
            config,
            registry,
            transport,
            raft_service,
            addresses,
            make_engine,
            exporters,
        )
    }

    /// [`BrokerNode::start`] with the exporters made by `exporters` instead of those of
    /// the configuration; `None` runs no exporter director, so every record stays in
    /// the export column family (for tests that read the records back).
    pub fn start_with_exporters(
        config: RillConfig,
        registry: &Registry,
        transport: Arc<dyn RaftTransport>,
        raft_service: RaftService,
        addresses: BTreeMap<NodeId, String>,
        make_engine: impl Fn(PartitionId) -> E + Send + Sync + 'static,
        exporters: Option<ExporterFactory>,
    ) -> Result<BrokerNode<E>> {
        let node_id = NodeId(config.cluster.node_id);
        // At error level, so that every event logged at all carries the node.
        let span = tracing::error_span!("node", node = %node_id);
        let entered = span.enter();
        let runtimes = Runtimes::new(&config.threads)?;
        let metrics = BrokerMetrics::new(registry)?;
        let state_options = rill_raft::StateOptions::with_cache_size(
            usize::try_from(config.data.state_cache_size.bytes()).unwrap_or(usize::MAX),
        );
        metrics.register_state_cache(state_options.clone())?;
        let disk = crate::disk::DiskUsage::from_config(&config);
        disk.start_sampling(runtimes.io(), registry)?;
        let gate = disk.clone();
        raft_service.set_storage_gate(Arc::new(move || gate.replication_refusal()));
        let network = if config.cluster.size > 1 {
            let started =
                RaftNetwork::start_for_node(&config, &addresses, raft_service.clone(), registry);
            Some(runtimes.io().block_on(started)?)
        } else {
            None
        };
        let transport = network
            .as_ref()
            .map_or(transport, RaftNetwork::raft_transport);
        let env = PartitionEnv {
            cpu: runtimes.cpu().clone(),
            io: runtimes.io().clone(),
            transport,
            raft_service,
            metrics: metrics.clone(),
            exporters,
            state: state_options,
            disk,
        };
        let cluster = match &network {
            Some(network) if !ClusterState::is_stored(&config)? => {
                // Peers asking meanwhile learn that this broker has none either.
                network.serve_cluster(Arc::new(Discovering));
                let contact_points: BTreeMap<NodeId, String> = addresses
                    .iter()
                    .filter(|(node, _)| node.0 < config.cluster.size)
                    .map(|(node, address)| (*node, address.clone()))
                    .collect();
                let asking = discover(
                    network.transport(),
                    node_id,
                    &contact_points,
                    config.cluster.configuration_discovery_timeout,
                );
                let found = runtimes.io().block_on(asking);
                ClusterState::open_or(&config, || first_configuration(&config, found))?
            }
            _ => ClusterState::open(&config)?,
        };
        if let Some(network) = &network {
            network.serve_cluster(cluster.handler());
        }
        let configuration = cluster.current();
        if !configuration.is_member(node_id) {
            tracing::info!(
                version = configuration.version,
                "this broker is not a member of the cluster (yet): it serves nothing until \
                 a cluster change adds it"
            );
        }
        let mut known = addresses;
        for (&id, broker) in &configuration.brokers {
            if let Some(address) = &broker.internal_address {
                known.entry(NodeId(id)).or_insert_with(|| address.clone());
            }
        }
        let partitions = PartitionMap::default();
        let shared = Arc::new(Shared {
            initial: ClusterConfiguration::initial(&config),
            config: Arc::new(config),
            node_id,
            env,
            partitions: partitions.clone(),
            ranks: parking_lot::Mutex::new(BTreeMap::new()),
            make_engine: Arc::new(make_engine),
            addresses: parking_lot::RwLock::new(known),
            network: network.clone(),
            cluster: cluster.clone(),
            partition_count: Arc::new(AtomicU16::new(configuration.partitions_count())),
            engine_version: Arc::new(AtomicU32::new(0)),
            changing: tokio::sync::Mutex::new(()),
            stopping: AtomicBool::new(false),
            span: span.clone(),
        });
        if configuration.version > INITIAL_VERSION {
            remove_left_partitions(&shared.config, &shared.wanted(&configuration));
        }
        for partition_id in shared.wanted(&configuration) {
            runtimes
                .io()
                .block_on(shared.start_replica(partition_id, &configuration))?;
        }
        // Commands between partitions hosted here go straight to them.
        partitions.set_router(Arc::new(LocalRouter::new(partitions.clone())));
        if let Some(network) = &network {
            let _io = runtimes.io().enter();
            let peers = shared.addresses.read().keys().copied().collect();
            cluster.sync_with_peers(network.transport().clone(), peers);
            let local = Arc::new(NodeCluster {
                shared: shared.clone(),
            });
            cluster.attach(network.transport().clone(), local);
            runtimes
                .io()
                .spawn(follow_configuration(shared.clone()).instrument(span.clone()));
            runtimes
                .io()
                .spawn(watch_engine_versions(shared.clone()).instrument(span.clone()));
        }
        drop(entered);
        Ok(BrokerNode {
            shared,
            runtimes,
            metrics,
        })
    }

    /// The cluster configuration as this node knows it.
    pub fn cluster(&self) -> &ClusterState {
        &self.shared.cluster
    }

    /// Starts an empty replica of `partition` that joins the running partition: it
    /// waits for the partition's leader to add it as a learner
    /// ([`Partition::add_learner`]), then to make it a voter. `members` are the
    /// partition's replicas after the join, this node among them.
    pub fn join_partition(
        &self,
        partition_id: PartitionId,
        members: &[NodeId],
        engine: E,
    ) -> Result<Partition<E>> {
        let shared = &self.shared;
        if let Some(running) = shared.partitions.get(&partition_id) {
            return Ok(running);
        }
        let members = members
            .iter()
            .map(|&node| {
                let address = shared.addresses.read().get(&node).cloned().ok_or_else(|| {
                    Error::Config(format!(
                        "no address for node {node}, a replica of partition {partition_id}"
                    ))
                })?;
                Ok((node, address))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        let mut config =
            PartitionConfig::from_config(&shared.config, partition_id, shared.node_id, members);
        config.preferred_leader = None;
        config.joining = true;
        let started =
            Partition::start(config, engine, shared.env.clone()).instrument(shared.span.clone());
        let partition = self.runtimes.io().block_on(started)?;
        shared.partitions.insert(partition.clone());
        Ok(partition)
    }

    /// Stops this node's replica of `partition_id`, which is no longer a member of its
    /// raft group, and deletes its data.
    pub fn leave_partition(&self, partition_id: PartitionId) -> Result<()> {
        self.runtimes.io().block_on(self.shared.leave(partition_id))
    }

    /// The internal transport (in a cluster of several nodes).
    pub fn raft_network(&self) -> Option<&RaftNetwork> {
        self.shared.network.as_ref()
    }

    pub fn node_id(&self) -> NodeId {
        self.shared.node_id
    }

    pub fn config(&self) -> &RillConfig {
        &self.shared.config
    }

    pub fn runtimes(&self) -> &Runtimes {
        &self.runtimes
    }

    pub fn metrics(&self) -> &BrokerMetrics {
        &self.metrics
    }

    /// The partitions hosted here, by id, as they change.
    pub fn partitions(&self) -> &PartitionMap<E> {
        &self.shared.partitions
    }

    pub fn partition(&self, id: PartitionId) -> Option<Partition<E>> {
        self.shared.partitions.get(&id)
    }

    pub fn statuses(&self) -> Vec<PartitionStatus> {
        self.shared
            .partitions
            .values()
            .iter()
            .map(Partition::status)
            .collect()
    }

    /// Every hosted partition is running (no fatal error).
    pub fn is_healthy(&self) -> bool {
        self.statuses().iter().all(|s| s.healthy)
    }

    /// Every hosted partition is healthy and knows its leader: requests can be served.
    pub fn is_ready(&self) -> bool {
        self.statuses()
            .iter()
            .all(|s| s.healthy && s.leader.is_some() && s.role != Role::Inactive)
    }

    /// Stops every partition cleanly (waiting requests are answered with
    /// `ShuttingDown`) and waits until their databases are closed, then the internal
    /// transport, then the runtimes (waiting for their threads to end).
    pub fn shutdown(self) {
        self.stop_partitions();
        self.runtimes.shutdown();
    }

    /// The graceful part of [`BrokerNode::shutdown`] for a node that is still shared:
    /// stops every partition (waiting until its databases are closed) and the internal
    /// transport; the runtimes keep running until the node is dropped.
    pub fn stop_partitions(&self) {
        let shared = self.shared.clone();
        let stop = async move {
            let _changing = shared.changing.lock().await;
            shared.stopping.store(true, Ordering::Release);
            let partitions = shared.partitions.values();
            let stops = partitions.iter().map(|p| p.shutdown());
            futures::future::join_all(stops).await;
            for partition in partitions {
                shared.partitions.remove(&partition.id());
            }
            if let Some(network) = &shared.network {
                network.shutdown().await;
            }
        };
        self.runtimes
            .io()
            .block_on(stop.instrument(self.shared.span.clone()));
    }
}

/// The configuration a broker without a stored one starts from: the running cluster's,
/// if a peer told it, else the initial one of the settings.
fn first_configuration(config: &RillConfig, found: Discovered) -> ClusterConfiguration {
    match found {
        Discovered::Found {
            configuration,
            from,
        } => {
            tracing::info!(
                version = configuration.version,
                %from,
                "no cluster configuration stored here: adopted version {} from node {from}",
                configuration.version
            );
            configuration
        }
        Discovered::Creating => {
            tracing::info!(
                "no cluster configuration stored here, and most contact points have none \
                 either: the cluster is being created; starting from the initial \
                 configuration of the settings"
            );
            ClusterConfiguration::initial(config)
        }
        Discovered::TimedOut => {
            tracing::warn!(
                "no cluster configuration stored here, and no contact point told one within \
                 {} (cluster.configuration-discovery-timeout): starting from the initial \
                 configuration of the settings",
                humantime::format_duration(config.cluster.configuration_discovery_timeout)
            );
            ClusterConfiguration::initial(config)
        }
    }
}

/// Follows the cluster configuration until the node stops: every new version may start
/// or stop replicas here. A failure is tried again a second later.
async fn follow_configuration<E: Engine>(shared: Arc<Shared<E>>) {
    let mut watcher = shared.cluster.subscribe();
    // Partition 1's replica here may have told newer versions while the node started:
    // the first round follows the value as it is now.
    let mut wait = None;
    loop {
        let changed = match wait {
            None => Ok(()),
            Some(false) => watcher.changed().await,
            Some(true) => tokio::time::timeout(Duration::from_secs(1), watcher.changed())
                .await
                .unwrap_or(Ok(())),
        };
        if changed.is_err() || shared.stopping.load(Ordering::Acquire) {
            return;
        }
        let config = watcher.borrow_and_update().clone();
        let failed = match shared.follow(&config).await {
            Ok(()) => false,
            Err(e) => {
                tracing::warn!(error = %e, version = config.version, "cannot follow the cluster configuration yet; trying again");
                true
            }
        };
        wait = Some(failed);
    }
}

/// Deletes the data of partitions this node no longer holds (it was stopped, or killed,
/// between a change moving its replica off and deleting it).
fn remove_left_partitions(config: &RillConfig, wanted: &BTreeSet<PartitionId>) {
    let Ok(entries) = std::fs::read_dir(&config.data.directory) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("partition-"))
            .and_then(|n| n.parse::<u16>().ok())
        else {
            continue;
        };
        if !wanted.contains(&PartitionId(id)) {
            tracing::info!(
                partition = id,
                "deleting the data of a replica this broker no longer holds"
            );
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!(error = %e, path = %entry.path().display(), "cannot delete");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_is_round_robin_like_zeebe() {
        // 3 nodes, 3 partitions, replication 3: every node holds every partition, and
        // each partition starts on a different node.
        assert_eq!(
            replicas_of(PartitionId(1), 3, 3),
            vec![NodeId(0), NodeId(1), NodeId(2)]
        );
        assert_eq!(
            replicas_of(PartitionId(2), 3, 3),
            vec![NodeId(1), NodeId(2), NodeId(0)]
        );
        // 5 nodes, replication 3.
        assert_eq!(
            replicas_of(PartitionId(5), 5, 3),
            vec![NodeId(4), NodeId(0), NodeId(1)]
        );
        // Replication above the cluster size is capped (validation rejects it earlier).
        assert_eq!(replicas_of(PartitionId(1), 1, 3), vec![NodeId(0)]);
    }

    #[test]
    fn every_partition_gets_replication_factor_replicas() {
        let mut config = RillConfig::default();
        config.cluster.size = 5;
        config.cluster.partitions_count = 12;
        config.cluster.replication_factor = 3;
        // Partitions start on nodes 0,1,2,3,4,0,1,2,3,4,0,1; each also covers the next
        // two nodes, so nodes hold 7, 8, 8, 7 and 6 replicas.
        let held: Vec<usize> = (0..5)
            .map(|node| partitions_of(NodeId(node), &config).len())
            .collect();
        assert_eq!(held, vec![7, 8, 8, 7, 6]);
        let total: usize = held.iter().sum();
        assert_eq!(total, 36);
    }
}
