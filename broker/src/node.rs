//! A broker node: its two runtimes, its metrics, and the partitions it hosts.
//!
//! Which partitions it hosts is the cluster configuration's say (`crate::cluster`). A
//! new cluster's places replicas round-robin as in Zeebe: partition `p` (from 1) lives
//! on the `replication-factor` nodes starting at node `(p - 1) % cluster-size`.

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus::Registry;
use rill_config::RillConfig;
use rill_engine_api::Engine;
use rill_exporter::{AnyExporter, ExporterMetrics};
use rill_protocol::{NodeId, PartitionId};
use rill_raft::{RaftService, RaftTransport};
use tracing::Instrument;

use crate::cluster::ClusterState;
use crate::delivery::{LocalRouter, PartitionRouter};
use crate::error::{Error, Result};
use crate::export::ExporterFactory;
use crate::metrics::BrokerMetrics;
use crate::partition::{Partition, PartitionConfig, PartitionEnv, PartitionStatus, Role};
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

/// A running broker node. Dropping it without [`BrokerNode::shutdown`] stops the
/// runtimes abruptly (as a crash would; the data on disk stays consistent).
pub struct BrokerNode<E: Engine> {
    config: Arc<RillConfig>,
    node_id: NodeId,
    runtimes: Runtimes,
    metrics: BrokerMetrics,
    partitions: BTreeMap<PartitionId, Partition<E>>,
    /// The cluster configuration as this node knows it.
    cluster: ClusterState,
    /// What partitions started later (joined) run on.
    env: PartitionEnv,
    /// Every known node's internal address.
    addresses: BTreeMap<NodeId, String>,
    /// The internal transport, in a cluster of several nodes.
    network: Option<RaftNetwork>,
    /// `node`: the parent of the partitions' spans.
    span: tracing::Span,
}

impl<E: Engine> BrokerNode<E> {
    /// Starts the node's runtimes and its partitions, whose replicas receive raft
    /// messages through `raft_service`.
    ///
    /// `addresses` maps every node to the address of its internal port. With
    /// `cluster.size` above 1 the node listens on its internal port and its replicas talk
    /// to their peers over the internal transport (`raft_network`); `transport` is used
    /// only by a node that is a cluster of its own. Blocks the calling thread until every
    /// partition is open (not necessarily led).
    pub fn start(
        config: RillConfig,
        registry: &Registry,
        transport: Arc<dyn RaftTransport>,
        raft_service: RaftService,
        addresses: BTreeMap<NodeId, String>,
        make_engine: impl Fn(PartitionId) -> E,
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
        make_engine: impl Fn(PartitionId) -> E,
        exporters: Option<ExporterFactory>,
    ) -> Result<BrokerNode<E>> {
        let node_id = NodeId(config.cluster.node_id);
        // At error level, so that every event logged at all carries the node.
        let span = tracing::error_span!("node", node = %node_id);
        let entered = span.enter();
        let runtimes = Runtimes::new(&config.threads)?;
        let metrics = BrokerMetrics::new(registry)?;
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
        };
        let cluster = ClusterState::open(&config)?;
        if let Some(network) = &network {
            network.serve_cluster(cluster.handler());
            let _io = runtimes.io().enter();
            cluster.sync_with_peers(
                network.transport().clone(),
                addresses.keys().copied().collect(),
            );
        }
        let configuration = cluster.current();
        if !configuration.is_member(node_id) {
            tracing::info!(
                version = configuration.version,
                "this broker is not a member of the cluster (yet): it serves nothing until \
                 a cluster change adds it"
            );
        }
        let mut partitions = BTreeMap::new();
        for partition_id in configuration.partitions_of(node_id) {
            let replicas = configuration.replicas_of(partition_id);
            let members = replicas
                .iter()
                .map(|&(node, _)| {
                    let address = addresses.get(&node).cloned().ok_or_else(|| {
                        Error::Config(format!(
                            "no address for node {node}, a replica of partition {partition_id}"
                        ))
                    })?;
                    Ok((node, address))
                })
                .collect::<Result<BTreeMap<_, _>>>()?;
            let mut partition_config =
                PartitionConfig::from_config(&config, partition_id, node_id, members);
            partition_config.preferred_leader = replicas.first().map(|&(node, _)| node);
            let engine = make_engine(partition_id);
            let partition =
                runtimes
                    .io()
                    .block_on(Partition::start(partition_config, engine, env.clone()))?;
            partitions.insert(partition_id, partition);
        }
        // Commands between partitions hosted here go straight to them.
        let router: Arc<dyn PartitionRouter<E>> = Arc::new(LocalRouter::new(partitions.clone()));
        for partition in partitions.values() {
            partition.set_router(router.clone());
        }
        if let Some(first) = partitions.get(&PartitionId(1)) {
            first.follow_cluster(cluster.sink());
        }
        drop(entered);
        Ok(BrokerNode {
            config: Arc::new(config),
            node_id,
            runtimes,
            metrics,
            partitions,
            cluster,
            env,
            addresses,
            network,
            span,
        })
    }

    /// The cluster configuration as this node knows it.
    pub fn cluster(&self) -> &ClusterState {
        &self.cluster
    }

    /// Starts an empty replica of `partition` that joins the running partition: it
    /// waits for the partition's leader to add it as a learner
    /// ([`Partition::add_learner`]), then to make it a voter. `members` are the
    /// partition's replicas after the join, this node among them.
    pub fn join_partition(
        &mut self,
        partition_id: PartitionId,
        members: &[NodeId],
        engine: E,
    ) -> Result<Partition<E>> {
        if let Some(running) = self.partitions.get(&partition_id) {
            return Ok(running.clone());
        }
        let members = members
            .iter()
            .map(|&node| {
                let address = self.addresses.get(&node).cloned().ok_or_else(|| {
                    Error::Config(format!(
                        "no address for node {node}, a replica of partition {partition_id}"
                    ))
                })?;
                Ok((node, address))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        let mut config =
            PartitionConfig::from_config(&self.config, partition_id, self.node_id, members);
        config.preferred_leader = None;
        config.joining = true;
        let started =
            Partition::start(config, engine, self.env.clone()).instrument(self.span.clone());
        let partition = self.runtimes.io().block_on(started)?;
        let router: Arc<dyn PartitionRouter<E>> =
            Arc::new(LocalRouter::new(self.partitions.clone()));
        partition.set_router(router);
        self.partitions.insert(partition_id, partition.clone());
        Ok(partition)
    }

    /// Stops this node's replica of `partition_id`, which is no longer a member of its
    /// raft group, and deletes its data.
    pub fn leave_partition(&mut self, partition_id: PartitionId) -> Result<()> {
        let Some(partition) = self.partitions.remove(&partition_id) else {
            return Ok(());
        };
        let directory = self
            .config
            .data
            .directory
            .join(format!("partition-{partition_id}"));
        self.runtimes
            .io()
            .block_on(partition.shutdown().instrument(self.span.clone()));
        std::fs::remove_dir_all(&directory)
            .map_err(|e| Error::Config(format!("cannot delete {}: {e}", directory.display())))
    }

    /// The internal transport (in a cluster of several nodes).
    pub fn raft_network(&self) -> Option<&RaftNetwork> {
        self.network.as_ref()
    }

    pub fn node_id(&self) -> NodeId {
        self.node_id
    }

    pub fn config(&self) -> &RillConfig {
        &self.config
    }

    pub fn runtimes(&self) -> &Runtimes {
        &self.runtimes
    }

    pub fn metrics(&self) -> &BrokerMetrics {
        &self.metrics
    }

    /// The partitions hosted here, by id.
    pub fn partitions(&self) -> &BTreeMap<PartitionId, Partition<E>> {
        &self.partitions
    }

    pub fn partition(&self, id: PartitionId) -> Option<&Partition<E>> {
        self.partitions.get(&id)
    }

    pub fn statuses(&self) -> Vec<PartitionStatus> {
        self.partitions.values().map(Partition::status).collect()
    }

    /// Every hosted partition is running (no fatal error).
    pub fn is_healthy(&self) -> bool {
        self.partitions.values().all(|p| p.status().healthy)
    }

    /// Every hosted partition is healthy and knows its leader: requests can be served.
    pub fn is_ready(&self) -> bool {
        self.partitions.values().all(|p| {
            let status = p.status();
            status.healthy && status.leader.is_some() && status.role != Role::Inactive
        })
    }

    /// Stops every partition cleanly (waiting requests are answered with
    /// `ShuttingDown`) and waits until their databases are closed, then the internal
    /// transport, then the runtimes (waiting for their threads to end).
    pub fn shutdown(self) {
        self.stop_partitions();
        drop(self.partitions);
        drop(self.network);
        self.runtimes.shutdown();
    }

    /// The graceful part of [`BrokerNode::shutdown`] for a node that is still shared:
    /// stops every partition (waiting until its databases are closed) and the internal
    /// transport; the runtimes keep running until the node is dropped.
    pub fn stop_partitions(&self) {
        let partitions: Vec<_> = self.partitions.values().cloned().collect();
        let network = self.network.clone();
        let stop = async move {
            let stops = partitions.iter().map(|p| p.shutdown());
            futures::future::join_all(stops).await;
            if let Some(network) = network {
                network.shutdown().await;
            }
        };
        self.runtimes
            .io()
            .block_on(stop.instrument(self.span.clone()));
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
