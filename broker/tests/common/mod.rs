//! A small in-process cluster runner: replicas of partition 1 with the test engine, real
//! RocksDB in temporary directories, raft traffic over the loopback network.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rill_broker::testing::{ListCommand, ListEngine, ListResponse, LoopbackNetwork};
use rill_broker::{
    BrokerMetrics, ExporterFactory, Partition, PartitionConfig, PartitionEnv, Role, Runtimes,
};
use rill_config::{RaftConfig, RequestLimitConfig, ThreadsConfig};
use rill_protocol::value::VariableRecord;
use rill_protocol::{Intent, NodeId, PartitionId, Position, RecordType};
use rill_raft::RaftService;

pub fn test_config(
    dir: PathBuf,
    node: NodeId,
    members: BTreeMap<NodeId, String>,
) -> PartitionConfig {
    PartitionConfig {
        partition_id: PartitionId(1),
        partition_count: 1,
        message_partition_count: 1,
        cluster_partition_count: None,
        cluster_engine_version: None,
        node_id: node,
        members,
        preferred_leader: None,
        directory: dir,
        raft: RaftConfig {
            heartbeat_interval: Duration::from_millis(50),
            election_timeout: Duration::from_millis(300),
            ..RaftConfig::default()
        },
        flow_control: RequestLimitConfig::default(),
        snapshot_period: Duration::ZERO,
        request_timeout: Duration::from_secs(5),
        max_inflight_proposals: rill_broker::DEFAULT_MAX_INFLIGHT_PROPOSALS,
        export_backlog_limit: None,
        write_rate: None,
        history: rill_broker::HistorySettings::default(),
        command_limits: Default::default(),
        joining: false,
        priority_rank: None,
        backup: rill_config::BackupConfig::default(),
    }
}

pub struct Cluster {
    pub runtimes: Runtimes,
    pub net: LoopbackNetwork,
    pub dir: tempfile::TempDir,
    pub configs: Vec<PartitionConfig>,
    pub nodes: Vec<Option<Partition<ListEngine>>>,
    metrics: BrokerMetrics,
    /// The exporters each leader runs (`None`: no exporter director).
    pub exporters: Option<ExporterFactory>,
}

impl Cluster {
    /// A cluster of `size` replicas (not started). `tweak` adjusts every replica's config.
    pub fn new(size: u32, tweak: impl Fn(&mut PartitionConfig)) -> Cluster {
        let runtimes = Runtimes::new(&ThreadsConfig {
            cpu_thread_count: 2,
            io_thread_count: 2,
        })
        .expect("runtimes");
        let dir = tempfile::tempdir().expect("temp dir");
        let members: BTreeMap<NodeId, String> = (0..size)
            .map(|i| (NodeId(i), format!("node-{i}")))
            .collect();
        let configs = (0..size)
            .map(|i| {
                let mut config = test_config(
                    dir.path().join(format!("node-{i}")).join("partition-1"),
                    NodeId(i),
                    members.clone(),
                );
                tweak(&mut config);
                config
            })
            .collect();
        Cluster {
            runtimes,
            net: LoopbackNetwork::new(),
            dir,
            configs,
            nodes: (0..size).map(|_| None).collect(),
            metrics: BrokerMetrics::unregistered(),
            exporters: None,
        }
    }

    pub async fn start(&mut self, i: usize) {
        let service = RaftService::new();
        let env = PartitionEnv {
            cpu: self.runtimes.cpu().clone(),
            io: self.runtimes.io().clone(),
            transport: self.net.transport(),
            raft_service: service.clone(),
            metrics: self.metrics.clone(),
            exporters: self.exporters.clone(),
            state: rill_raft::StateOptions::default(),
            disk: rill_broker::DiskUsage::unsampled(std::env::temp_dir()),
        };
        let partition = Partition::start(self.configs[i].clone(), ListEngine, env)
            .await
            .expect("partition starts");
        self.net.connect(NodeId(i as u32), service);
        self.nodes[i] = Some(partition);
    }

    pub async fn start_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.start(i).await;
        }
    }

    /// Stops replica `i` as a crash would look to the others: unreachable at once.
    pub async fn stop(&mut self, i: usize) {
        self.net.disconnect(NodeId(i as u32));
        if let Some(partition) = self.nodes[i].take() {
            partition.shutdown().await;
        }
    }

    /// The registry every replica reports to.
    pub fn metrics(&self) -> &BrokerMetrics {
        &self.metrics
    }

    pub fn node(&self, i: usize) -> &Partition<ListEngine> {
        self.nodes[i].as_ref().expect("node is running")
    }

    pub fn running(&self) -> impl Iterator<Item = (usize, &Partition<ListEngine>)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
    }

    /// The replica that leads (and that every running replica agrees on).
    pub async fn leader(&self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let leaders: Vec<usize> = self
                .running()
                .filter(|(_, p)| p.status().role == Role::Leader)
                .map(|(i, _)| i)
                .collect();
            if let [leader] = leaders.as_slice() {
                return *leader;
            }
            assert!(
                Instant::now() < deadline,
                "no single leader within {timeout:?}: {leaders:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Submits `command` to whichever replica leads, again while the answer says it was
    /// certainly not applied (no leader yet, a leader change): leadership may move at any
    /// time, e.g. when a replica that was down rejoins with a higher term.
    pub async fn submit(&self, command: ListCommand) -> ListResponse {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let leader = self
                .running()
                .find(|(_, p)| p.status().role == Role::Leader)
                .map(|(_, p)| p.clone());
            if let Some(leader) = leader {
                match leader.submit(command.clone()).await {
                    Ok(response) => return response,
                    Err(e) if e.is_definitely_not_applied() => {}
                    Err(e) => panic!("submit failed: {e}"),
                }
            }
            assert!(Instant::now() < deadline, "no leader took {command:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The state digests of every running replica, taken at one applied index.
    pub async fn digests(&self, timeout: Duration) -> BTreeSet<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut at = BTreeSet::new();
            let mut digests = BTreeSet::new();
            for (_, p) in self.running() {
                let digest = p.state_digest().await.expect("state digest");
                at.insert(digest.applied_index);
                digests.insert(digest.digest);
            }
            if at.len() == 1 {
                return digests;
            }
            assert!(
                Instant::now() < deadline,
                "replicas never at one applied index: {at:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until every running replica has applied the same index, and returns it.
    pub async fn converged(&self, timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        loop {
            let applied: Vec<u64> = self
                .running()
                .map(|(_, p)| p.status().applied_index)
                .collect();
            if applied.windows(2).all(|w| w[0] == w[1]) && !applied.is_empty() {
                // Stable for a moment: nothing more in flight.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let again: Vec<u64> = self
                    .running()
                    .map(|(_, p)| p.status().applied_index)
                    .collect();
                if again == applied {
                    return applied[0];
                }
            }
            assert!(
                Instant::now() < deadline,
                "replicas did not converge: {applied:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The ids applied on a replica, in order, read back from its record stream.
pub async fn applied_ids(p: &Partition<ListEngine>) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut from = Position(1);
    loop {
        let records = p.read_records(from, 10_000).await.unwrap();
        let Some(last) = records.last() else { break };
        from = last.position.next();
        for r in &records {
            if r.record_type == RecordType::Event && r.intent == Intent::Created {
                let rill_protocol::RecordValue::Variable(VariableRecord { value, .. }) = &r.value
                else {
                    panic!("unexpected value {:?}", r.value);
                };
                ids.push(value.parse().unwrap());
            }
        }
    }
    ids
}
