//! Three broker nodes in one process whose replicas talk raft over real loopback TCP,
//! through the internal transport: two partitions, each replicated on all three nodes, so
//! every connection carries both partitions' traffic. Commands are proposed while the node
//! leading partition 1 is killed (dropped without a clean shutdown) and restarted, again
//! and again; afterwards every acknowledged command is applied exactly once, in the same
//! order, on every replica, and the replicas' state digests are equal.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::applied_ids;
use parking_lot::Mutex;
use prometheus::Registry;
use rill_broker::testing::{ListCommand, ListEngine, ListResponse};
use rill_broker::{BrokerNode, Error, Partition, Role};
use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};
use tokio::sync::RwLock;

const NODES: u32 = 3;
const PARTITIONS: u16 = 2;
const KILLS: usize = 3;
/// Ids proposed at least (the clients go on until the last kill is over).
const COMMANDS: u64 = 3_000;
const CLIENTS: usize = 16;

struct TcpCluster {
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    nodes: Vec<Option<BrokerNode<ListEngine>>>,
}

/// Free loopback ports for the nodes' internal listeners. A restarted node binds the
/// same port again (tokio sets SO_REUSEADDR).
fn free_ports(n: u32) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("local address").port())
        .collect()
}

impl TcpCluster {
    fn new() -> TcpCluster {
        TcpCluster {
            dir: tempfile::tempdir().expect("temp dir"),
            ports: free_ports(NODES),
            nodes: (0..NODES).map(|_| None).collect(),
        }
    }

    fn config(&self, node: usize) -> RillConfig {
        let mut config = RillConfig::default();
        config.cluster.node_id = node as u32;
        config.cluster.size = NODES;
        config.cluster.partitions_count = PARTITIONS;
        config.cluster.replication_factor = NODES as u16;
        config.cluster.host = "127.0.0.1".to_owned();
        config.cluster.internal_port = self.ports[node];
        config.data.directory = self.dir.path().join(format!("node-{node}"));
        config.data.snapshot_period = Duration::ZERO;
        config.raft.heartbeat_interval = Duration::from_millis(100);
        config.raft.election_timeout = Duration::from_millis(1000);
        config.gateway.request_timeout = Duration::from_secs(5);
        config.threads.cpu_thread_count = 1;
        config.threads.io_thread_count = 1;
        // The nodes start one after another on this thread: the first would otherwise
        // ask its peers for a configuration until the default timeout.
        config.cluster.configuration_discovery_timeout = Duration::from_millis(300);
        config
    }

    fn addresses(&self) -> BTreeMap<NodeId, String> {
        self.ports
            .iter()
            .enumerate()
            .map(|(i, port)| (NodeId(i as u32), format!("127.0.0.1:{port}")))
            .collect()
    }

    fn running(&self) -> impl Iterator<Item = (usize, &BrokerNode<ListEngine>)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|n| (i, n)))
    }

    /// The replica of `partition` that leads, if a running one says so.
    fn leader(&self, partition: PartitionId) -> Option<(usize, Partition<ListEngine>)> {
        self.running().find_map(|(i, node)| {
            let p = node.partition(partition)?;
            (p.status().role == Role::Leader).then(|| (i, p.clone()))
        })
    }
}

type Shared = Arc<RwLock<TcpCluster>>;

/// Starts node `i` (blocking work: on a blocking thread).
async fn start(cluster: &Shared, i: usize) {
    let (config, addresses) = {
        let c = cluster.read().await;
        (c.config(i), c.addresses())
    };
    let node = tokio::task::spawn_blocking(move || {
        // No exporter director: the test reads every record back.
        BrokerNode::start_with_exporters(
            config,
            &Registry::new(),
            rill_broker::single_node_transport(),
            rill_raft::RaftService::new(),
            addresses,
            |_| ListEngine,
            None,
        )
    })
    .await
    .expect("start task")
    .expect("node starts");
    assert!(
        node.raft_network().is_some(),
        "a cluster node uses the network"
    );
    cluster.write().await.nodes[i] = Some(node);
}

/// Kills node `i`: dropped without a clean shutdown, as a crash would look to its peers
/// (connections reset, raft stops mid-flight; its files stay as they were).
async fn kill(cluster: &Shared, i: usize) {
    let node = cluster.write().await.nodes[i].take();
    tokio::task::spawn_blocking(move || drop(node))
        .await
        .expect("kill task");
}

/// Waits until every partition has a leader that all running replicas know.
async fn wait_for_leaders(cluster: &Shared, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let ready = {
            let c = cluster.read().await;
            (1..=PARTITIONS).all(|p| {
                let leader = c.leader(PartitionId(p)).map(|(i, _)| NodeId(i as u32));
                leader.is_some()
                    && c.running().all(|(_, n)| {
                        n.partition(PartitionId(p)).unwrap().status().leader == leader
                    })
            })
        };
        if ready {
            return;
        }
        assert!(Instant::now() < deadline, "no leaders within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until every replica of `partition` has applied the same index.
async fn converged(cluster: &Shared, partition: PartitionId, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let applied: Vec<u64> = {
            let c = cluster.read().await;
            c.running()
                .map(|(_, n)| n.partition(partition).unwrap().status().applied_index)
                .collect()
        };
        if applied.len() == NODES as usize && applied.windows(2).all(|w| w[0] == w[1]) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replicas of partition {partition} did not converge: {applied:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The state digests of every replica of `partition`, taken at one applied index (a
/// leader change may still add an entry after the replicas converged).
async fn digests(cluster: &Shared, partition: PartitionId, timeout: Duration) -> BTreeSet<u64> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut at = BTreeSet::new();
        let mut digests = BTreeSet::new();
        {
            let c = cluster.read().await;
            for (_, node) in c.running() {
                let digest = node.partition(partition).unwrap().state_digest().await;
                let digest = digest.expect("state digest");
                at.insert(digest.applied_index);
                digests.insert(digest.digest);
            }
        }
        if at.len() == 1 {
            return digests;
        }
        assert!(
            Instant::now() < deadline,
            "replicas of partition {partition} never at one applied index: {at:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_over_tcp_apply_every_acknowledged_command_once_across_leader_kills() {
    let cluster: Shared = Arc::new(RwLock::new(TcpCluster::new()));
    for i in 0..NODES as usize {
        start(&cluster, i).await;
    }
    wait_for_leaders(&cluster, Duration::from_secs(30)).await;

    let next_id = Arc::new(AtomicU64::new(1));
    // (partition, id) -> seq it was acknowledged at
    let acked = Arc::new(Mutex::new(BTreeMap::<(u16, u64), u64>::new()));
    let ambiguous = Arc::new(AtomicU64::new(0));
    let chaos_over = Arc::new(AtomicBool::new(false));

    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (cluster, next_id, acked, ambiguous, chaos_over) = (
            cluster.clone(),
            next_id.clone(),
            acked.clone(),
            ambiguous.clone(),
            chaos_over.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut id = next_id.fetch_add(1, Ordering::Relaxed);
            while id <= COMMANDS || !chaos_over.load(Ordering::Relaxed) {
                let partition = PartitionId(1 + (id % u64::from(PARTITIONS)) as u16);
                let leader = cluster.read().await.leader(partition);
                let Some((_, leader)) = leader else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                match leader.submit(ListCommand::Append { id }).await {
                    Ok(ListResponse::Appended { seq, .. }) => {
                        let first = acked.lock().insert((partition.get(), id), seq);
                        assert!(first.is_none(), "id {id} acknowledged twice");
                        id = next_id.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(other) => panic!("unexpected {other:?}"),
                    // Certainly not applied: the same id may be sent again.
                    Err(e) if e.is_definitely_not_applied() => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    // Maybe applied: never send this id again.
                    Err(Error::Timeout { .. } | Error::ShuttingDown { .. }) => {
                        ambiguous.fetch_add(1, Ordering::Relaxed);
                        id = next_id.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
        }));
    }

    // Chaos: kill the node leading partition 1 while commands flow, restart it once the
    // others carry on; repeat.
    let started = Instant::now();
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(700)).await;
        wait_for_leaders(&cluster, Duration::from_secs(30)).await;
        let (victim, _) = cluster
            .read()
            .await
            .leader(PartitionId(1))
            .expect("partition 1 has a leader");
        kill(&cluster, victim).await;
        // The two others elect a new leader and go on without it.
        let deadline = Instant::now() + Duration::from_secs(30);
        while cluster.read().await.leader(PartitionId(1)).is_none() {
            assert!(Instant::now() < deadline, "no new leader for partition 1");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        start(&cluster, victim).await;
    }
    chaos_over.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.expect("client");
    }

    wait_for_leaders(&cluster, Duration::from_secs(30)).await;
    // A last acknowledged command per partition: once it is applied everywhere, so is
    // everything proposed before it (a request that timed out may still have been in
    // flight until now).
    for p in 1..=PARTITIONS {
        let partition = PartitionId(p);
        loop {
            let id = next_id.fetch_add(1, Ordering::Relaxed);
            let leader = cluster.read().await.leader(partition);
            let Some((_, leader)) = leader else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            match leader.submit(ListCommand::Append { id }).await {
                Ok(ListResponse::Appended { seq, .. }) => {
                    acked.lock().insert((p, id), seq);
                    break;
                }
                Ok(other) => panic!("unexpected {other:?}"),
                Err(e) if e.is_definitely_not_applied() => {}
                Err(Error::Timeout { .. } | Error::ShuttingDown { .. }) => {
                    ambiguous.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    }
    let acked = acked.lock().clone();
    let ambiguous = ambiguous.load(Ordering::Relaxed);
    let mut applied_total = 0;
    for p in 1..=PARTITIONS {
        let partition = PartitionId(p);
        converged(&cluster, partition, Duration::from_secs(30)).await;
        let digests = digests(&cluster, partition, Duration::from_secs(30)).await;
        assert_eq!(digests.len(), 1, "partition {p}: state digests differ");
        let c = cluster.read().await;
        let mut streams = Vec::new();
        for (_, node) in c.running() {
            streams.push(applied_ids(&node.partition(partition).unwrap()).await);
        }
        assert!(
            streams.windows(2).all(|w| w[0] == w[1]),
            "partition {p}: replicas applied different sequences"
        );
        let ids = &streams[0];
        let unique: BTreeSet<u64> = ids.iter().copied().collect();
        assert_eq!(
            unique.len(),
            ids.len(),
            "partition {p}: a command applied twice"
        );
        for (&(_, id), &seq) in acked.range((p, 0)..=(p, u64::MAX)) {
            assert_eq!(
                ids.get(seq as usize - 1),
                Some(&id),
                "partition {p}: acknowledged id {id} is not at seq {seq}"
            );
        }
        applied_total += ids.len() as u64;
    }
    assert!(acked.len() as u64 + ambiguous >= COMMANDS);
    assert!(applied_total <= acked.len() as u64 + ambiguous);
    eprintln!(
        "{} acknowledged, {ambiguous} ambiguous, {applied_total} applied, {KILLS} leader kills in {:?}",
        acked.len(),
        started.elapsed()
    );

    // The raft traffic went over every node's internal transport.
    let c = cluster.read().await;
    for (i, node) in c.running() {
        let stats = node.raft_network().unwrap().transport().stats();
        assert!(stats.frames_sent > 0, "node {i} sent nothing");
    }
    drop(c);
    let nodes: Vec<_> = cluster.write().await.nodes.drain(..).flatten().collect();
    tokio::task::spawn_blocking(move || nodes.into_iter().for_each(BrokerNode::shutdown))
        .await
        .expect("shutdown");
}
