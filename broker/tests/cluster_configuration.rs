//! The cluster configuration is replicated state: a new version proposed through
//! partition 1's leader reaches every broker (those with a replica of partition 1 by
//! applying it, the others by asking their peers), including a broker started beyond
//! `cluster.size` that is not a member yet; a proposal made against a stale version is
//! refused on every replica; and a restarted broker comes back with the latest version.
//!
//! Four broker nodes in one process on loopback TCP, one partition replicated on nodes
//! 0 and 1, plus node 4, started as a StatefulSet scale-up starts one.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use prometheus::Registry;
use rill_broker::cluster::{ClusterConfiguration, Operation};
use rill_broker::testing::ListEngine;
use rill_broker::{BrokerNode, Role};
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};

const SIZE: u32 = 4;
const JOINING: u32 = 4;

struct Nodes {
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    nodes: BTreeMap<u32, BrokerNode<ListEngine>>,
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
        let started = BrokerNode::start_with_exporters(
            self.config(node),
            &Registry::new(),
            rill_broker::single_node_transport(),
            rill_raft::RaftService::new(),
            self.addresses(node),
            |_| ListEngine,
            None,
        )
        .expect("the node starts");
        self.nodes.insert(node, started);
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
