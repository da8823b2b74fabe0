//! The cluster configuration: which brokers belong to the cluster, which partitions
//! each holds and with what leader priority, and the change in progress.
//!
//! It is replicated, versioned state (docs/decisions/cluster-scaling.md): every value
//! has a version, a broker only ever moves to a higher one, and a change is a plan of
//! [`Operation`]s that the coordinator applies one after another, each raising the
//! version by one.

use std::collections::{BTreeMap, BTreeSet};

use rill_config::RillConfig;
use rill_protocol::{NodeId, PartitionId};
use serde::{Deserialize, Serialize};

/// The version every cluster starts at, before any change.
pub const INITIAL_VERSION: u64 = 1;

/// A broker's place in the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BrokerState {
    /// Being added: its partitions are joining.
    Joining,
    Active,
    /// Being removed: its replicas are moving off.
    Leaving,
}

/// A replica's state on its broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReplicaState {
    Joining,
    Active,
    Leaving,
}

/// A partition replica on a broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    pub state: ReplicaState,
    /// Leader priority, as in Zeebe: the highest is the preferred leader.
    pub priority: u32,
}

/// A broker of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Broker {
    pub state: BrokerState,
    /// The configuration version that last changed this broker.
    pub version: u64,
    /// When this broker's entry last changed (epoch milliseconds).
    pub last_updated_at: i64,
    /// The partitions it holds a replica of.
    pub partitions: BTreeMap<u16, Replica>,
    /// Where the other brokers reach it (`host:port` of its internal port), for a broker
    /// a change added: the ones the cluster was created with are the contact points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_address: Option<String>,
    /// Where gateways reach its command API (`host:port`), for a broker a change added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_address: Option<String>,
}

/// One step of a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Operation {
    /// The broker becomes a member of the cluster (it holds nothing yet).
    BrokerAdd {
        #[serde(rename = "brokerId")]
        broker: u32,
    },
    /// The broker leaves the cluster; it holds no replica any more.
    BrokerRemove {
        #[serde(rename = "brokerId")]
        broker: u32,
    },
    /// The broker gets a replica of the partition: first a learner that catches up,
    /// then a voter.
    PartitionJoin {
        #[serde(rename = "brokerId")]
        broker: u32,
        #[serde(rename = "partitionId")]
        partition: u16,
        priority: u32,
    },
    /// The broker's replica of the partition leaves its raft group and is deleted.
    PartitionLeave {
        #[serde(rename = "brokerId")]
        broker: u32,
        #[serde(rename = "partitionId")]
        partition: u16,
    },
    /// The replica's leader priority changes.
    PartitionReconfigurePriority {
        #[serde(rename = "brokerId")]
        broker: u32,
        #[serde(rename = "partitionId")]
        partition: u16,
        priority: u32,
    },
    /// A new partition starts on this broker (its first replica, a raft group of one
    /// that the others then join).
    PartitionBootstrap {
        #[serde(rename = "brokerId")]
        broker: u32,
        #[serde(rename = "partitionId")]
        partition: u16,
        priority: u32,
    },
    /// Waits until every deployment made before has reached the partitions added, then
    /// spreads new instances over `1..=desired_partition_count`. Run by the broker
    /// leading partition 1 (`broker` is the one preferred to lead it).
    AwaitRedistributionCompletion {
        #[serde(rename = "brokerId")]
        broker: u32,
        #[serde(rename = "desiredPartitionCount")]
        desired_partition_count: u16,
    },
}

impl Operation {
    /// The broker this step is about.
    pub fn broker(&self) -> u32 {
        match *self {
            Operation::BrokerAdd { broker }
            | Operation::BrokerRemove { broker }
            | Operation::PartitionJoin { broker, .. }
            | Operation::PartitionLeave { broker, .. }
            | Operation::PartitionReconfigurePriority { broker, .. }
            | Operation::PartitionBootstrap { broker, .. }
            | Operation::AwaitRedistributionCompletion { broker, .. } => broker,
        }
    }
}

/// A step done, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedOperation {
    #[serde(flatten)]
    pub operation: Operation,
    /// Epoch milliseconds.
    pub completed_at: i64,
}

/// The change in progress: its steps, done and to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingChange {
    pub id: u64,
    /// Epoch milliseconds.
    pub started_at: i64,
    pub completed: Vec<CompletedOperation>,
    pub pending: Vec<Operation>,
}

/// How the last change ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChangeStatus {
    Completed,
    Failed,
    Cancelled,
}

/// The last change that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedChange {
    pub id: u64,
    pub status: ChangeStatus,
    pub started_at: i64,
    pub completed_at: i64,
}

/// Where requests and messages go (Zeebe's routing state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routing {
    /// New instances are spread over partitions `1..=active_partitions`.
    pub active_partitions: u16,
    /// Partitions `1..=partitions` exist: above `active_partitions` while added ones
    /// still receive the deployments made before them (0 in configurations stored
    /// before partitions could be added: then as many as are active).
    #[serde(default)]
    pub partitions: u16,
    /// Messages are routed by correlation-key hash over partitions
    /// `1..=message_partitions`: the count the cluster was created with, so that a
    /// message always meets the subscriptions opened before partitions were added.
    pub message_partitions: u16,
}

/// The cluster configuration at one version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterConfiguration {
    pub version: u64,
    pub brokers: BTreeMap<u32, Broker>,
    /// Replicas each partition should have.
    pub replication_factor: u16,
    pub routing: Routing,
    pub pending_change: Option<PendingChange>,
    pub last_change: Option<CompletedChange>,
    /// The partitions whose replicas a change has moved (joined, left, bootstrapped)
    /// since the cluster was created. `None` in a configuration written before this was
    /// recorded: then any partition may have been changed once the version is past
    /// [`INITIAL_VERSION`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_partitions: Option<BTreeSet<u16>>,
}

/// The brokers holding partition `partition` in round-robin placement over `brokers`
/// (sorted ids), in placement order: the first is the preferred leader. As in Zeebe.
pub fn round_robin(partition: u16, brokers: &[u32], replication_factor: u16) -> Vec<u32> {
    if brokers.is_empty() {
        return Vec::new();
    }
    let first = usize::from(partition.saturating_sub(1)) % brokers.len();
    (0..usize::from(replication_factor).min(brokers.len()))
        .map(|i| brokers[(first + i) % brokers.len()])
        .collect()
}

/// Priorities in placement order: the first replica `replication_factor`, the last 1.
pub fn priority_at(rank: usize, replication_factor: u16) -> u32 {
    u32::from(replication_factor)
        .saturating_sub(rank as u32)
        .max(1)
}

/// The placement of `partitions` partitions over `brokers`: broker → partition →
/// priority.
pub fn placement(
    brokers: &[u32],
    partitions: u16,
    replication_factor: u16,
) -> BTreeMap<u32, BTreeMap<u16, u32>> {
    let mut placed: BTreeMap<u32, BTreeMap<u16, u32>> =
        brokers.iter().map(|&b| (b, BTreeMap::new())).collect();
    for partition in 1..=partitions {
        for (rank, broker) in round_robin(partition, brokers, replication_factor)
            .into_iter()
            .enumerate()
        {
            placed
                .entry(broker)
                .or_default()
                .insert(partition, priority_at(rank, replication_factor));
        }
    }
    placed
}

/// Whether `node`'s replica of `partition`, with no raft state yet, may start the
/// partition's raft group itself (`raft.initialize` with the members `current` lists)
/// rather than wait for the partition's leader to add it
/// (docs/decisions/replica-initialization.md). Only two replicas may:
///
/// - one the cluster was created with (`initial`, from the settings) for a partition no
///   change has moved since (its replicas are still the initial ones): every broker of
///   a new cluster computes the same members, so at most one group forms;
/// - the one the change in progress bootstraps here next (a new partition's first
///   replica).
///
/// Every other replica joins: one a change added (again), even where the initial
/// configuration had placed it, since its group runs elsewhere and a second group with
/// the initial members could elect a second leader.
pub fn may_initialize(
    initial: &ClusterConfiguration,
    current: &ClusterConfiguration,
    node: NodeId,
    partition: PartitionId,
) -> bool {
    let bootstraps_here = matches!(
        current.next_step(),
        Some(&Operation::PartitionBootstrap { broker, partition: p, .. })
            if broker == node.0 && p == partition.get()
    );
    if bootstraps_here {
        return true;
    }
    let members = |config: &ClusterConfiguration| -> BTreeSet<NodeId> {
        config
            .replicas_of(partition)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    let placed_initially = initial.partitions_of(node).contains(&partition);
    let unchanged = !current.partition_changed(partition) && members(current) == members(initial);
    placed_initially && unchanged
}

impl ClusterConfiguration {
    /// What a cluster created with `config`'s settings looks like before any change:
    /// `cluster.size` brokers and `cluster.partitions-count` partitions placed
    /// round-robin. Every broker computes the same value.
    pub fn initial(config: &RillConfig) -> ClusterConfiguration {
        let cluster = &config.cluster;
        let ids: Vec<u32> = (0..cluster.size.max(1)).collect();
        let placed = placement(&ids, cluster.partitions_count, cluster.replication_factor);
        let brokers = placed
            .into_iter()
            .map(|(id, partitions)| {
                let partitions = partitions
                    .into_iter()
                    .map(|(p, priority)| {
                        let replica = Replica {
                            state: ReplicaState::Active,
                            priority,
                        };
                        (p, replica)
                    })
                    .collect();
                let broker = Broker {
                    state: BrokerState::Active,
                    version: INITIAL_VERSION,
                    last_updated_at: 0,
                    partitions,
                    internal_address: None,
                    command_address: None,
                };
                (id, broker)
            })
            .collect();
        ClusterConfiguration {
            version: INITIAL_VERSION,
            brokers,
            replication_factor: cluster.replication_factor,
            routing: Routing {
                active_partitions: cluster.partitions_count,
                partitions: cluster.partitions_count,
                message_partitions: cluster.partitions_count,
            },
            pending_change: None,
            last_change: None,
            changed_partitions: Some(BTreeSet::new()),
        }
    }

    /// Whether a change may have moved `partition`'s replicas since the cluster was
    /// created.
    pub fn partition_changed(&self, partition: PartitionId) -> bool {
        match &self.changed_partitions {
            Some(changed) => changed.contains(&partition.get()),
            None => self.version > INITIAL_VERSION,
        }
    }

    /// Partitions `1..=count` exist.
    pub fn partitions_count(&self) -> u16 {
        self.routing.partitions.max(self.routing.active_partitions)
    }

    /// New instances are spread over partitions `1..=count`.
    pub fn active_partitions(&self) -> u16 {
        self.routing.active_partitions
    }

    pub fn is_member(&self, node: NodeId) -> bool {
        self.brokers.contains_key(&node.0)
    }

    /// The partitions `node` holds a replica of.
    pub fn partitions_of(&self, node: NodeId) -> Vec<PartitionId> {
        self.brokers
            .get(&node.0)
            .map(|b| b.partitions.keys().map(|&p| PartitionId(p)).collect())
            .unwrap_or_default()
    }

    /// This node's place in `partition`'s priority order (0: the preferred leader); a
    /// replica the configuration does not list yet (joining) comes last.
    pub fn rank_of(&self, partition: PartitionId, node: NodeId) -> u32 {
        let replicas = self.replicas_of(partition);
        replicas
            .iter()
            .position(|(n, _)| *n == node)
            .unwrap_or(replicas.len()) as u32
    }

    /// The step a change runs next, if a change is in progress.
    pub fn next_step(&self) -> Option<&Operation> {
        self.pending_change.as_ref().and_then(|c| c.pending.first())
    }

    /// The replicas of `partition`, highest priority first (ties by node id): the
    /// first is the preferred leader.
    pub fn replicas_of(&self, partition: PartitionId) -> Vec<(NodeId, Replica)> {
        let mut replicas: Vec<(NodeId, Replica)> = self
            .brokers
            .iter()
            .filter_map(|(&id, b)| b.partitions.get(&partition.get()).map(|r| (NodeId(id), *r)))
            .collect();
        replicas.sort_by(|(a, ra), (b, rb)| rb.priority.cmp(&ra.priority).then(a.cmp(b)));
        replicas
    }

    /// Applies one step (the coordinator's record that it is done): the result has the
    /// next version. `now` is epoch milliseconds.
    pub fn apply(&self, operation: &Operation, now: i64) -> ClusterConfiguration {
        let mut next = self.clone();
        next.version = self.version + 1;
        let version = next.version;
        let touch = |broker: &mut Broker| {
            broker.version = version;
            broker.last_updated_at = now;
        };
        next.mark_changed(operation);
        match *operation {
            Operation::BrokerAdd { broker } => {
                let entry = next.brokers.entry(broker).or_insert_with(|| Broker {
                    state: BrokerState::Active,
                    version,
                    last_updated_at: now,
                    partitions: BTreeMap::new(),
                    internal_address: None,
                    command_address: None,
                });
                entry.state = BrokerState::Active;
                touch(entry);
            }
            Operation::BrokerRemove { broker } => {
                next.brokers.remove(&broker);
            }
            Operation::PartitionJoin {
                broker,
                partition,
                priority,
            }
            | Operation::PartitionBootstrap {
                broker,
                partition,
                priority,
            } => {
                if let Some(entry) = next.brokers.get_mut(&broker) {
                    entry.partitions.insert(
                        partition,
                        Replica {
                            state: ReplicaState::Active,
                            priority,
                        },
                    );
                    touch(entry);
                }
                if matches!(operation, Operation::PartitionBootstrap { .. }) {
                    next.routing.partitions = next.partitions_count().max(partition);
                }
            }
            Operation::AwaitRedistributionCompletion {
                desired_partition_count,
                ..
            } => {
                next.routing.partitions = next.partitions_count().max(desired_partition_count);
                next.routing.active_partitions =
                    next.routing.active_partitions.max(desired_partition_count);
            }
            Operation::PartitionLeave { broker, partition } => {
                if let Some(entry) = next.brokers.get_mut(&broker) {
                    entry.partitions.remove(&partition);
                    touch(entry);
                }
            }
            Operation::PartitionReconfigurePriority {
                broker,
                partition,
                priority,
            } => {
                if let Some(replica) = next
                    .brokers
                    .get_mut(&broker)
                    .and_then(|b| b.partitions.get_mut(&partition))
                {
                    replica.priority = priority;
                }
                if let Some(entry) = next.brokers.get_mut(&broker) {
                    touch(entry);
                }
            }
        }
        next
    }

    /// Marks the first pending step of the change in progress done, applying it; the
    /// change ends with its last step. `None` without a change in progress.
    pub fn complete_next_step(&self, now: i64) -> Option<ClusterConfiguration> {
        let change = self.pending_change.as_ref()?;
        let Some((step, rest)) = change.pending.split_first() else {
            return Some(self.finish_change(now));
        };
        let mut next = self.apply(step, now);
        let mut change = change.clone();
        change.completed.push(CompletedOperation {
            operation: *step,
            completed_at: now,
        });
        change.pending = rest.to_vec();
        let done = change.pending.is_empty();
        next.pending_change = Some(change);
        if done {
            next.last_change = Some(CompletedChange {
                id: next.pending_change.as_ref().map_or(0, |c| c.id),
                status: ChangeStatus::Completed,
                started_at: next.pending_change.as_ref().map_or(now, |c| c.started_at),
                completed_at: now,
            });
            next.pending_change = None;
        }
        Some(next)
    }

    fn finish_change(&self, now: i64) -> ClusterConfiguration {
        let mut next = self.clone();
        next.version += 1;
        if let Some(change) = next.pending_change.take() {
            next.last_change = Some(CompletedChange {
                id: change.id,
                status: ChangeStatus::Completed,
                started_at: change.started_at,
                completed_at: now,
            });
        }
        next
    }

    /// The configuration once every pending step is done.
    pub fn expected(&self) -> ClusterConfiguration {
        let mut expected = self.clone();
        if let Some(change) = &self.pending_change {
            for step in &change.pending {
                expected = expected.apply(step, 0);
            }
        }
        expected.pending_change = None;
        expected
    }

    /// Ends the change in progress as cancelled (`now`, epoch milliseconds): the steps
    /// done stay done, the others never run. `None` without a change in progress.
    pub fn cancel_change(&self, now: i64) -> Option<ClusterConfiguration> {
        let change = self.pending_change.as_ref()?;
        let mut next = self.clone();
        next.version = self.version + 1;
        next.last_change = Some(CompletedChange {
            id: change.id,
            status: ChangeStatus::Cancelled,
            started_at: change.started_at,
            completed_at: now,
        });
        next.pending_change = None;
        Some(next)
    }

    /// Records that `operation` moves its partition's replicas (a join, a leave, a
    /// bootstrap).
    fn mark_changed(&mut self, operation: &Operation) {
        if let (
            Operation::PartitionJoin { partition, .. }
            | Operation::PartitionLeave { partition, .. }
            | Operation::PartitionBootstrap { partition, .. },
            Some(changed),
        ) = (operation, self.changed_partitions.as_mut())
        {
            changed.insert(*partition);
        }
    }

    /// Starts a change of `steps` (planned by [`crate::cluster::plan`]): its id is the
    /// version it starts at. The partitions it is to move count as changed from now on,
    /// before any step runs.
    pub fn start_change(&self, steps: Vec<Operation>, now: i64) -> ClusterConfiguration {
        let mut next = self.clone();
        next.version = self.version + 1;
        for step in &steps {
            next.mark_changed(step);
        }
        next.pending_change = Some(PendingChange {
            id: next.version,
            started_at: now,
            completed: Vec::new(),
            pending: steps,
        });
        next
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a cluster configuration always encodes")
    }

    pub fn from_json(text: &str) -> Result<ClusterConfiguration, String> {
        serde_json::from_str(text).map_err(|e| format!("malformed cluster configuration: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(size: u32, partitions: u16, replication: u16) -> RillConfig {
        let mut config = RillConfig::default();
        config.cluster.size = size;
        config.cluster.partitions_count = partitions;
        config.cluster.replication_factor = replication;
        config
    }

    #[test]
    fn the_initial_configuration_is_the_round_robin_placement_of_the_settings() {
        let initial = ClusterConfiguration::initial(&config(3, 3, 3));
        assert_eq!(initial.version, INITIAL_VERSION);
        assert_eq!(initial.brokers.len(), 3);
        // Partition 2 starts on broker 1 (priority 3), then 2, then 0.
        let replicas: Vec<(u32, u32)> = initial
            .replicas_of(PartitionId(2))
            .into_iter()
            .map(|(n, r)| (n.0, r.priority))
            .collect();
        assert_eq!(replicas, vec![(1, 3), (2, 2), (0, 1)]);
        // It agrees with the placement partitions were created with.
        for p in 1..=3 {
            let nodes: Vec<NodeId> = initial
                .replicas_of(PartitionId(p))
                .into_iter()
                .map(|(n, _)| n)
                .collect();
            assert_eq!(nodes, crate::node::replicas_of(PartitionId(p), 3, 3));
        }
        assert_eq!(initial.routing.message_partitions, 3);
    }

    #[test]
    fn a_configuration_survives_its_json_form() {
        let initial = ClusterConfiguration::initial(&config(5, 4, 3));
        let changed = initial.start_change(
            vec![Operation::PartitionJoin {
                broker: 4,
                partition: 1,
                priority: 1,
            }],
            1_000,
        );
        assert_eq!(
            ClusterConfiguration::from_json(&changed.to_json()).unwrap(),
            changed
        );
        assert!(
            ClusterConfiguration::from_json("{\"version\": 2}")
                .unwrap_err()
                .contains("malformed cluster configuration")
        );
    }

    #[test]
    fn each_completed_step_raises_the_version_and_the_last_ends_the_change() {
        let initial = ClusterConfiguration::initial(&config(3, 1, 3));
        let steps = vec![
            Operation::BrokerAdd { broker: 3 },
            Operation::PartitionJoin {
                broker: 3,
                partition: 1,
                priority: 1,
            },
            Operation::PartitionLeave {
                broker: 2,
                partition: 1,
            },
        ];
        let mut current = initial.start_change(steps.clone(), 10);
        assert_eq!(current.version, 2);
        let expected = current.expected();
        for (i, step) in steps.iter().enumerate() {
            current = current.complete_next_step(20 + i as i64).unwrap();
            assert_eq!(current.version, 3 + i as u64);
            if i + 1 < steps.len() {
                let change = current.pending_change.as_ref().unwrap();
                assert_eq!(change.completed.last().unwrap().operation, *step);
            }
        }
        assert!(current.pending_change.is_none());
        let last = current.last_change.unwrap();
        assert_eq!((last.id, last.status), (2, ChangeStatus::Completed));
        for (id, broker) in &expected.brokers {
            assert_eq!(
                current.brokers[id].partitions, broker.partitions,
                "broker {id}"
            );
        }
        assert_eq!(
            current.partitions_of(NodeId(3)),
            vec![PartitionId(1)],
            "{current:?}"
        );
        assert!(current.partitions_of(NodeId(2)).is_empty());
        assert!(current.complete_next_step(99).is_none());
    }

    /// Runs every step of a change planned for `request`.
    fn changed(
        current: &ClusterConfiguration,
        request: crate::cluster::ChangeRequest,
    ) -> ClusterConfiguration {
        let steps = crate::cluster::plan(current, &request).unwrap();
        assert!(!steps.is_empty());
        let mut next = current.start_change(steps, 1);
        while next.pending_change.is_some() {
            next = next.complete_next_step(2).unwrap();
        }
        next
    }

    fn brokers(count: u32) -> crate::cluster::ChangeRequest {
        crate::cluster::ChangeRequest {
            broker_count: Some(count),
            ..Default::default()
        }
    }

    #[test]
    fn only_an_initial_replica_of_an_unchanged_partition_may_start_its_raft_group() {
        // 3 brokers, 3 partitions, 2 replicas: 1 on {0,1}, 2 on {1,2}, 3 on {2,0}.
        let initial = ClusterConfiguration::initial(&config(3, 3, 2));
        let may = |current: &ClusterConfiguration, node: u32, partition: u16| {
            may_initialize(&initial, current, NodeId(node), PartitionId(partition))
        };
        assert!(may(&initial, 2, 3));
        assert!(may(&initial, 0, 1));
        // Not placed there initially: joins.
        assert!(!may(&initial, 2, 1));

        // Broker 2 is scaled out: its replicas of 2 and 3 move off.
        let shrunk = changed(&initial, brokers(2));
        assert!(shrunk.partitions_of(NodeId(2)).is_empty());
        // ...and back in: partitions 2 and 3 are placed as initially, but their groups
        // run on brokers 0 and 1 now, so broker 2's replicas join them.
        let grown = changed(&shrunk, brokers(3));
        assert_eq!(
            grown.partitions_of(NodeId(2)),
            initial.partitions_of(NodeId(2))
        );
        assert!(!may(&grown, 2, 3), "{grown:?}");
        assert!(!may(&grown, 2, 2), "{grown:?}");
        // Also during the change, while the step that joins it is next.
        let mut growing =
            shrunk.start_change(crate::cluster::plan(&shrunk, &brokers(3)).unwrap(), 1);
        while let Some(step) = growing.next_step().copied() {
            if let Operation::PartitionJoin {
                broker: 2,
                partition,
                ..
            } = step
            {
                assert!(!may(&growing, 2, partition));
            }
            growing = growing.complete_next_step(2).unwrap();
        }
        // Partition 1 kept its replicas through both changes: a replica of it with no
        // raft state (a broker that never ran) may still start its group.
        assert!(may(&grown, 0, 1) && may(&grown, 1, 1), "{grown:?}");
        // The record survives the JSON form the brokers store and send.
        let stored = ClusterConfiguration::from_json(&grown.to_json()).unwrap();
        assert!(!may(&stored, 2, 3));
    }

    #[test]
    fn a_bootstrapped_partition_starts_on_its_first_replica_only() {
        let initial = ClusterConfiguration::initial(&config(2, 2, 1));
        let request = crate::cluster::ChangeRequest {
            partitions_count: Some(3),
            ..Default::default()
        };
        let mut current =
            initial.start_change(crate::cluster::plan(&initial, &request).unwrap(), 1);
        let mut bootstrapped = Vec::new();
        while let Some(step) = current.next_step().copied() {
            for node in 0..2 {
                if may_initialize(&initial, &current, NodeId(node), PartitionId(3)) {
                    bootstrapped.push((node, step));
                }
            }
            current = current.complete_next_step(2).unwrap();
        }
        assert_eq!(bootstrapped.len(), 1, "{bootstrapped:?}");
        assert!(matches!(
            bootstrapped[0].1,
            Operation::PartitionBootstrap { partition: 3, broker, .. } if broker == bootstrapped[0].0
        ));
        // Once bootstrapped, nobody starts it again.
        assert!((0..2).all(|n| !may_initialize(&initial, &current, NodeId(n), PartitionId(3))));
    }

    #[test]
    fn a_configuration_without_the_record_of_changed_partitions_counts_every_change() {
        let initial = ClusterConfiguration::initial(&config(3, 3, 3));
        let mut legacy = initial.clone();
        legacy.changed_partitions = None;
        assert!(may_initialize(&initial, &legacy, NodeId(0), PartitionId(1)));
        let json = legacy.to_json();
        assert!(!json.contains("changed_partitions"), "{json}");
        let mut older = ClusterConfiguration::from_json(&json).unwrap();
        assert_eq!(older.changed_partitions, None);
        older.version += 1;
        assert!(!may_initialize(&initial, &older, NodeId(0), PartitionId(1)));
        // A change of priorities only moves no replica.
        let mut reprioritized = initial.start_change(
            vec![Operation::PartitionReconfigurePriority {
                broker: 2,
                partition: 1,
                priority: 9,
            }],
            1,
        );
        reprioritized = reprioritized.complete_next_step(2).unwrap();
        assert!(may_initialize(
            &initial,
            &reprioritized,
            NodeId(2),
            PartitionId(1)
        ));
    }

    #[test]
    fn a_cancelled_change_keeps_the_steps_done_and_records_the_cancellation() {
        let initial = ClusterConfiguration::initial(&config(3, 1, 3));
        let steps = vec![
            Operation::BrokerAdd { broker: 3 },
            Operation::PartitionJoin {
                broker: 3,
                partition: 1,
                priority: 1,
            },
        ];
        let running = initial
            .start_change(steps, 10)
            .complete_next_step(20)
            .unwrap();
        let cancelled = running.cancel_change(30).unwrap();
        assert_eq!(cancelled.version, running.version + 1);
        assert!(cancelled.pending_change.is_none());
        assert!(cancelled.is_member(NodeId(3)));
        assert!(cancelled.partitions_of(NodeId(3)).is_empty());
        let last = cancelled.last_change.unwrap();
        assert_eq!(
            (last.id, last.status, last.started_at, last.completed_at),
            (2, ChangeStatus::Cancelled, 10, 30)
        );
        assert!(cancelled.cancel_change(40).is_none());
        assert!(cancelled.next_step().is_none());
    }
}
