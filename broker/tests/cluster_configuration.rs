//! The cluster configuration is replicated state: a new version proposed through
//! partition 1's leader reaches every broker (those with a replica of partition 1 by
//! applying it, the others by asking their peers), including a broker started beyond
//! `cluster.size` that is not a member yet; a proposal made against a stale version is
//! refused on every replica; and a restarted broker comes back with the latest version.
//!
//! Four broker nodes in one process on loopback TCP, one partition replicated on nodes
//! 0 and 1, plus node 4, started as a StatefulSet scale-up starts one.
//!
//! And the replica move under a cluster change's `PARTITION_JOIN` and `PARTITION_LEAVE`
//! steps: a replica joins as a learner (catching up from a snapshot), becomes a voter,
//! and the old replica (the leader) leaves, while commands keep being applied.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use prometheus::Registry;
use rill_broker::cluster::{ClusterConfiguration, Operation};
use rill_broker::testing::{ListCommand, ListEngine, ListQuery, ListQueryResult};
use rill_broker::{BrokerNode, Partition, Role};
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};

const SIZE: u32 = 4;
const JOINING: u32 = 4;

struct Nodes {
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    nodes: BTreeMap<u32, BrokerNode<ListEngine>>,
    registries: BTreeMap<u32, Registry>,
    log_retention: u64,
}

fn free_ports(n: u32) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("local address").port())
        .collect()
}

impl Nodes {
    fn config(&self, node: u32) -> RillConfig {
        let mut config = RillConfig::default();
        config.cluster.node_id = node;
        config.cluster.size = SIZE;
        config.cluster.partitions_count = 1;
        config.cluster.replication_factor = 2;
        config.cluster.host = "127.0.0.1".to_owned();
        config.cluster.internal_port = self.ports[node as usize];
        config.data.directory = self.dir.path().join(format!("node-{node}"));
        config.raft.heartbeat_interval = Duration::from_millis(100);
        config.raft.election_timeout = Duration::from_millis(1000);
        config.threads.cpu_thread_count = 1;
        config.threads.io_thread_count = 1;
        config.raft.log_retention_entries = self.log_retention;
        // The nodes start one after another on this thread: the first would otherwise
        // ask its peers for a configuration until the default timeout.
        config.cluster.configuration_discovery_timeout = Duration::from_millis(300);
        config
    }

    /// The contact points every node is given: the brokers of the cluster as created,
    /// and (for the joining node only) its own address.
    fn addresses(&self, node: u32) -> BTreeMap<NodeId, String> {
        (0..SIZE)
            .chain((node >= SIZE).then_some(node))
            .map(|i| (NodeId(i), format!("127.0.0.1:{}", self.ports[i as usize])))
            .collect()
    }

    fn start(&mut self, node: u32) {
        let registry = Registry::new();
        let started = BrokerNode::start_with_exporters(
            self.config(node),
            &registry,
            rill_broker::single_node_transport(),
            rill_raft::RaftService::new(),
            self.addresses(node),
            |_| ListEngine,
            None,
        )
        .expect("the node starts");
        self.nodes.insert(node, started);
        self.registries.insert(node, registry);
    }

    fn leader_of_partition_1(&self) -> Option<u32> {
        self.nodes.iter().find_map(|(&id, node)| {
            let p = node.partition(PartitionId(1))?;
            (p.status().role == Role::Leader).then_some(id)
        })
    }

    fn wait_leader(&self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(leader) = self.leader_of_partition_1() {
                return leader;
            }
            assert!(Instant::now() < deadline, "partition 1 elected no leader");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every running node knows `expected`.
    fn wait_everywhere(&self, expected: &ClusterConfiguration) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let behind: Vec<(u32, u64)> = self
                .nodes
                .iter()
                .filter(|(_, n)| n.cluster().current() != *expected)
                .map(|(&id, n)| (id, n.cluster().version()))
                .collect();
            if behind.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nodes (id, version) {behind:?} did not reach version {}",
                expected.version
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn propose(&self, expected_version: u64, config: &ClusterConfiguration) {
        let leader = self.wait_leader();
        self.nodes[&leader]
            .partition(PartitionId(1))
            .expect("the leader holds partition 1")
            .propose_cluster_configuration(expected_version, config.version, config.to_json());
    }
}

#[test]
fn the_cluster_configuration_reaches_every_broker_and_survives_restarts() {
    let mut nodes = Nodes {
        dir: tempfile::tempdir().expect("temp dir"),
        ports: free_ports(SIZE + 1),
        nodes: BTreeMap::new(),
        registries: BTreeMap::new(),
        log_retention: 1000,
    };
    for node in 0..SIZE {
        nodes.start(node);
    }
    nodes.start(JOINING);
    let initial = nodes.nodes[&0].cluster().current();
    assert_eq!(initial.version, 1);
    assert_eq!(initial.partitions_of(NodeId(0)), vec![PartitionId(1)]);
    assert!(initial.partitions_of(NodeId(2)).is_empty());
    // The joining node is not a member, and hosts nothing.
    assert!(
        !nodes.nodes[&JOINING]
            .cluster()
            .current()
            .is_member(NodeId(JOINING))
    );
    assert!(nodes.nodes[&JOINING].partitions().is_empty());
    for node in nodes.nodes.values() {
        assert_eq!(
            node.cluster().current(),
            initial,
            "every broker starts alike"
        );
    }

    // Version 2: broker 4 is added.
    let added = initial.apply(&Operation::BrokerAdd { broker: JOINING }, 1_000);
    nodes.propose(1, &added);
    nodes.wait_everywhere(&added);
    assert!(
        nodes.nodes[&JOINING]
            .cluster()
            .current()
            .is_member(NodeId(JOINING))
    );

    // A proposal against version 1 is stale now and changes nothing; the one after it,
    // against version 2, is taken.
    let stale = initial.apply(&Operation::BrokerRemove { broker: 3 }, 2_000);
    let stale = ClusterConfiguration {
        version: 3,
        ..stale
    };
    let next = added.apply(
        &Operation::PartitionReconfigurePriority {
            broker: 1,
            partition: 1,
            priority: 5,
        },
        3_000,
    );
    assert_eq!(next.version, 3);
    nodes.propose(1, &stale);
    nodes.propose(2, &next);
    nodes.wait_everywhere(&next);

    // Restarted brokers come back with it, from their own copy: one that holds no
    // replica of partition 1, and the one leading partition 1.
    let restart = |nodes: &mut Nodes, node: u32| {
        nodes.nodes.remove(&node).expect("running").shutdown();
        nodes.start(node);
        assert_eq!(nodes.nodes[&node].cluster().current(), next, "node {node}");
    };
    restart(&mut nodes, 2);
    let leader = nodes.wait_leader();
    restart(&mut nodes, leader);
    nodes.wait_everywhere(&next);
    for (_, node) in std::mem::take(&mut nodes.nodes) {
        node.shutdown();
    }
}

fn partition_1(nodes: &Nodes, node: u32) -> Partition<ListEngine> {
    nodes.nodes[&node]
        .partition(PartitionId(1))
        .expect("the node holds partition 1")
        .clone()
}

async fn append(partition: &Partition<ListEngine>, ids: std::ops::Range<u64>) {
    for id in ids {
        partition
            .submit(ListCommand::Append { id })
            .await
            .unwrap_or_else(|e| panic!("append {id}: {e}"));
    }
}

/// How many snapshots the node with metrics `registry` installed from its leader.
fn snapshots_installed(registry: &Registry) -> f64 {
    registry
        .gather()
        .iter()
        .filter(|family| family.name() == rill_broker::metrics::SNAPSHOTS_INSTALLED)
        .flat_map(|family| {
            family
                .get_metric()
                .iter()
                .map(|m| m.get_counter().get_value())
        })
        .sum()
}

/// Waits until `partition`'s replica knows `expected` as the voters.
async fn wait_voters(partition: &Partition<ListEngine>, expected: &BTreeSet<NodeId>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let voters = partition.voters().await.expect("voters");
        if voters == *expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "voters {voters:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_replica_moves_to_another_broker_while_commands_are_applied() {
    let mut nodes = Nodes {
        dir: tempfile::tempdir().expect("temp dir"),
        ports: free_ports(SIZE),
        nodes: BTreeMap::new(),
        registries: BTreeMap::new(),
        // Snapshots purge the log, so the new replica can only catch up from one.
        log_retention: 5,
    };
    for node in 0..SIZE {
        nodes.start(node);
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let leader = nodes.wait_leader();
    let first = partition_1(&nodes, leader);
    runtime.block_on(async {
        append(&first, 0..200).await;
        for node in [0, 1] {
            partition_1(&nodes, node)
                .take_snapshot()
                .await
                .expect("snapshot");
        }
    });

    // PARTITION_JOIN 2: an empty replica on node 2, added by the leader as a learner
    // (returns once caught up), then made a voter.
    let joined = nodes
        .nodes
        .get_mut(&2)
        .unwrap()
        .join_partition(
            PartitionId(1),
            &[NodeId(0), NodeId(1), NodeId(2)],
            ListEngine,
        )
        .expect("the joining replica starts");
    let address = format!("127.0.0.1:{}", nodes.ports[2]);
    runtime.block_on(async {
        first
            .add_learner(NodeId(2), address.clone())
            .await
            .expect("learner added");
        // Only once it holds the partition: promoted earlier, an empty voter would be
        // needed for a quorum it cannot give until the snapshot has arrived.
        assert!(
            snapshots_installed(&nodes.registries[&2]) >= 1.0,
            "add_learner returned before node 2 had the snapshot"
        );
        // Asked again (a retried step), it proposes nothing and returns at once.
        first
            .add_learner(NodeId(2), address)
            .await
            .expect("learner added again");
        let all = [NodeId(0), NodeId(1), NodeId(2)].into_iter().collect();
        first.change_voters(&all).await.expect("node 2 votes");
        wait_voters(&joined, &all).await;
        // PARTITION_LEAVE 0: the voters without node 0 (the leader, if it led).
        let staying = [NodeId(1), NodeId(2)].into_iter().collect();
        let leader = partition_1(&nodes, nodes.wait_leader());
        leader.change_voters(&staying).await.expect("node 0 leaves");
    });
    nodes
        .nodes
        .get_mut(&0)
        .unwrap()
        .leave_partition(PartitionId(1))
        .expect("node 0 drops its replica");
    assert!(nodes.nodes[&0].partition(PartitionId(1)).is_none());
    assert!(
        !nodes.dir.path().join("node-0/partition-1").exists(),
        "the replica's data is deleted"
    );

    // The partition goes on with nodes 1 and 2, and node 2 has everything.
    let leader = nodes.wait_leader();
    assert!(leader == 1 || leader == 2, "leader {leader}");
    runtime.block_on(async {
        let leader = partition_1(&nodes, leader);
        append(&leader, 200..300).await;
        let count = leader.query(ListQuery::Count).await.expect("count");
        assert_eq!(count, ListQueryResult::Count(300));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let one = partition_1(&nodes, 1).state_digest().await.unwrap();
            let two = joined.state_digest().await.unwrap();
            if one == two {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node 2 {two:?} never matched node 1 {one:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let staying = [NodeId(1), NodeId(2)].into_iter().collect();
        wait_voters(&joined, &staying).await;
    });
    assert!(joined.status().healthy, "{:?}", joined.status());
    // It caught up from a snapshot: the log before it was purged.
    let installed = snapshots_installed(&nodes.registries[&2]);
    assert!(
        installed >= 1.0,
        "snapshots installed on node 2: {installed}"
    );
    for (_, node) in std::mem::take(&mut nodes.nodes) {
        node.shutdown();
    }
}
