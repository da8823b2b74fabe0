//! Planning a change: from the current configuration and what the operator asks for
//! (brokers, partition count, replication factor) to the steps that get there, each of
//! which keeps every partition at its replication factor or above.

use std::collections::BTreeSet;

use super::configuration::{ClusterConfiguration, Operation, placement, round_robin};

/// The most partitions a cluster can have: keys carry the partition id in 13 bits.
pub const MAX_PARTITIONS: u16 = 8191;

/// What an operator asks for (`PATCH /actuator/cluster`, `POST /actuator/cluster/brokers`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeRequest {
    /// Brokers to add.
    pub add: Vec<u32>,
    /// Brokers to remove.
    pub remove: Vec<u32>,
    /// The brokers the cluster should consist of (instead of `add`/`remove`).
    pub brokers: Option<Vec<u32>>,
    /// The number of brokers: ids `0..count` (instead of `add`/`remove`).
    pub broker_count: Option<u32>,
    pub partitions_count: Option<u16>,
    pub replication_factor: Option<u16>,
}

/// Why a request cannot be planned (HTTP 400).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidRequest(pub String);

fn invalid(message: impl Into<String>) -> InvalidRequest {
    InvalidRequest(message.into())
}

/// The brokers the cluster should have after `request`, sorted.
fn target_brokers(
    current: &ClusterConfiguration,
    request: &ChangeRequest,
) -> Result<Vec<u32>, InvalidRequest> {
    let explicit =
        usize::from(request.brokers.is_some()) + usize::from(request.broker_count.is_some());
    let relative = !request.add.is_empty() || !request.remove.is_empty();
    if explicit > 1 || (explicit == 1 && relative) {
        return Err(invalid(
            "brokers: give either the brokers to add and remove, or the broker count, not both",
        ));
    }
    let mut brokers: BTreeSet<u32> = current.brokers.keys().copied().collect();
    if let Some(list) = &request.brokers {
        brokers = list.iter().copied().collect();
    } else if let Some(count) = request.broker_count {
        brokers = (0..count).collect();
    } else {
        for id in &request.add {
            if !brokers.insert(*id) {
                return Err(invalid(format!(
                    "brokers.add: broker {id} is already a member of the cluster"
                )));
            }
        }
        for id in &request.remove {
            if request.add.contains(id) {
                return Err(invalid(format!(
                    "brokers: broker {id} is both added and removed"
                )));
            }
            if !brokers.remove(id) {
                return Err(invalid(format!(
                    "brokers.remove: broker {id} is not a member of the cluster"
                )));
            }
        }
    }
    if brokers.is_empty() {
        return Err(invalid("brokers: a cluster needs at least one broker"));
    }
    if let Some(id) = brokers.iter().find(|&&id| id == u32::MAX) {
        return Err(invalid(format!("brokers: {id} is not a valid broker id")));
    }
    Ok(brokers.into_iter().collect())
}

/// The steps from `current` to what `request` asks for. An empty plan means there is
/// nothing to change.
///
/// Order: new brokers join the cluster; per existing partition, new replicas join (as
/// learners, then voters) before old ones leave, so a partition never has fewer than
/// its replication factor of replicas; then new partitions are bootstrapped on their
/// preferred broker and joined by the others; priorities are set; brokers that hold
/// nothing any more leave last.
pub fn plan(
    current: &ClusterConfiguration,
    request: &ChangeRequest,
) -> Result<Vec<Operation>, InvalidRequest> {
    let brokers = target_brokers(current, request)?;
    let old_partitions = current.partitions_count();
    let partitions = request.partitions_count.unwrap_or(old_partitions);
    if partitions < old_partitions {
        return Err(invalid(format!(
            "partitions.count: is {partitions}, but the cluster has {old_partitions} \
             partitions; the partition count only grows"
        )));
    }
    if partitions > MAX_PARTITIONS {
        return Err(invalid(format!(
            "partitions.count: is {partitions}, at most {MAX_PARTITIONS} partitions are possible"
        )));
    }
    let replication = request
        .replication_factor
        .unwrap_or(current.replication_factor);
    if replication == 0 {
        return Err(invalid("partitions.replicationFactor: must be at least 1"));
    }
    if usize::from(replication) > brokers.len() {
        return Err(invalid(format!(
            "partitions.replicationFactor: is {replication}, but the cluster would have {} \
             broker(s); add brokers or lower the replication factor",
            brokers.len()
        )));
    }
    let target = placement(&brokers, partitions, replication);
    let mut steps = Vec::new();
    for &id in &brokers {
        if !current.brokers.contains_key(&id) {
            steps.push(Operation::BrokerAdd { broker: id });
        }
    }
    let held = |broker: u32, partition: u16| {
        current
            .brokers
            .get(&broker)
            .and_then(|b| b.partitions.get(&partition))
            .copied()
    };
    for partition in 1..=old_partitions {
        for (&broker, placed) in &target {
            if let Some(&priority) = placed.get(&partition)
                && held(broker, partition).is_none()
            {
                steps.push(Operation::PartitionJoin {
                    broker,
                    partition,
                    priority,
                });
            }
        }
        for (&broker, entry) in &current.brokers {
            let stays = target
                .get(&broker)
                .is_some_and(|placed| placed.contains_key(&partition));
            if entry.partitions.contains_key(&partition) && !stays {
                steps.push(Operation::PartitionLeave { broker, partition });
            }
        }
    }
    for partition in old_partitions + 1..=partitions {
        let mut replicas: Vec<(u32, u32)> = target
            .iter()
            .filter_map(|(&b, placed)| placed.get(&partition).map(|&p| (b, p)))
            .collect();
        replicas.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (i, (broker, priority)) in replicas.into_iter().enumerate() {
            steps.push(if i == 0 {
                Operation::PartitionBootstrap {
                    broker,
                    partition,
                    priority,
                }
            } else {
                Operation::PartitionJoin {
                    broker,
                    partition,
                    priority,
                }
            });
        }
    }
    if partitions > old_partitions {
        // New instances go to the added partitions once they have every deployment.
        let coordinator = round_robin(1, &brokers, replication)
            .first()
            .copied()
            .unwrap_or_default();
        steps.push(Operation::AwaitRedistributionCompletion {
            broker: coordinator,
            desired_partition_count: partitions,
        });
    }
    for (&broker, placed) in &target {
        for (&partition, &priority) in placed {
            if let Some(replica) = held(broker, partition)
                && replica.priority != priority
            {
                steps.push(Operation::PartitionReconfigurePriority {
                    broker,
                    partition,
                    priority,
                });
            }
        }
    }
    for &id in current.brokers.keys() {
        if !target.contains_key(&id) {
            steps.push(Operation::BrokerRemove { broker: id });
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rill_config::RillConfig;
    use rill_protocol::PartitionId;

    use super::*;

    fn cluster(size: u32, partitions: u16, replication: u16) -> ClusterConfiguration {
        let mut config = RillConfig::default();
        config.cluster.size = size;
        config.cluster.partitions_count = partitions;
        config.cluster.replication_factor = replication;
        ClusterConfiguration::initial(&config)
    }

    fn finish(current: &ClusterConfiguration, steps: Vec<Operation>) -> ClusterConfiguration {
        current.start_change(steps, 0).expected()
    }

    /// Replicas per partition.
    fn replica_counts(config: &ClusterConfiguration) -> BTreeMap<u16, usize> {
        (1..=config.partitions_count())
            .map(|p| (p, config.replicas_of(PartitionId(p)).len()))
            .collect()
    }

    #[test]
    fn growing_3_to_5_brokers_moves_replicas_onto_the_new_ones_joining_before_leaving() {
        let current = cluster(3, 3, 3);
        let request = ChangeRequest {
            broker_count: Some(5),
            ..ChangeRequest::default()
        };
        let steps = plan(&current, &request).unwrap();
        assert_eq!(steps[0], Operation::BrokerAdd { broker: 3 });
        assert_eq!(steps[1], Operation::BrokerAdd { broker: 4 });
        // Every intermediate configuration keeps every partition at 3 replicas or more.
        let mut now = current.start_change(steps.clone(), 0);
        while now.pending_change.is_some() {
            now = now.complete_next_step(1).unwrap();
            assert!(replica_counts(&now).values().all(|&n| n >= 3), "{now:?}");
        }
        // The end is the round-robin placement over 5 brokers.
        let round_robin = cluster(5, 3, 3);
        for (id, broker) in &round_robin.brokers {
            assert_eq!(now.brokers[id].partitions, broker.partitions, "broker {id}");
        }
        assert!(replica_counts(&now).values().all(|&n| n == 3));
    }

    #[test]
    fn adding_brokers_and_partitions_bootstraps_the_new_partitions_on_their_preferred_broker() {
        let current = cluster(3, 3, 3);
        let request = ChangeRequest {
            add: vec![3, 4],
            partitions_count: Some(6),
            ..ChangeRequest::default()
        };
        let steps = plan(&current, &request).unwrap();
        let bootstraps: Vec<(u16, u32)> = steps
            .iter()
            .filter_map(|s| match *s {
                Operation::PartitionBootstrap {
                    broker, partition, ..
                } => Some((partition, broker)),
                _ => None,
            })
            .collect();
        // Partition p starts on broker (p - 1) % 5.
        assert_eq!(bootstraps, vec![(4, 3), (5, 4), (6, 0)]);
        let end = finish(&current, steps.clone());
        assert_eq!(end.partitions_count(), 6);
        assert_eq!(end.active_partitions(), 6);
        assert_eq!(end.routing.message_partitions, 3);
        // Instances go to the new partitions only once they have every deployment.
        let waits = steps
            .iter()
            .position(|s| matches!(s, Operation::AwaitRedistributionCompletion { .. }))
            .unwrap();
        let last_join = steps
            .iter()
            .rposition(
                |s| matches!(s, Operation::PartitionJoin { partition, .. } if *partition > 3),
            )
            .unwrap();
        assert!(waits > last_join, "{steps:?}");
        let mut during = current.start_change(steps.clone(), 0);
        for _ in 0..waits {
            during = during.complete_next_step(1).unwrap();
        }
        assert_eq!(
            (during.partitions_count(), during.active_partitions()),
            (6, 3)
        );
        assert!(replica_counts(&end).values().all(|&n| n == 3));
    }

    #[test]
    fn removing_a_broker_moves_its_replicas_off_before_it_leaves() {
        let current = cluster(4, 4, 3);
        let request = ChangeRequest {
            remove: vec![0],
            ..ChangeRequest::default()
        };
        let steps = plan(&current, &request).unwrap();
        assert_eq!(steps.last(), Some(&Operation::BrokerRemove { broker: 0 }));
        let end = finish(&current, steps);
        assert!(!end.brokers.contains_key(&0));
        assert!(replica_counts(&end).values().all(|&n| n == 3));
    }

    #[test]
    fn asking_for_what_is_there_plans_nothing() {
        let current = cluster(3, 3, 3);
        let request = ChangeRequest {
            broker_count: Some(3),
            partitions_count: Some(3),
            replication_factor: Some(3),
            ..ChangeRequest::default()
        };
        assert_eq!(plan(&current, &request).unwrap(), Vec::new());
    }

    #[test]
    fn impossible_requests_name_what_is_wrong() {
        let current = cluster(3, 3, 3);
        let error = |request: ChangeRequest| plan(&current, &request).unwrap_err().0;
        assert!(
            error(ChangeRequest {
                partitions_count: Some(2),
                ..ChangeRequest::default()
            })
            .contains("partitions.count: is 2, but the cluster has 3")
        );
        assert!(
            error(ChangeRequest {
                replication_factor: Some(4),
                ..ChangeRequest::default()
            })
            .contains("partitions.replicationFactor: is 4, but the cluster would have 3")
        );
        assert!(
            error(ChangeRequest {
                remove: vec![7],
                ..ChangeRequest::default()
            })
            .contains("brokers.remove: broker 7 is not a member")
        );
        assert!(
            error(ChangeRequest {
                add: vec![1],
                ..ChangeRequest::default()
            })
            .contains("brokers.add: broker 1 is already a member")
        );
        assert!(
            error(ChangeRequest {
                add: vec![4],
                broker_count: Some(5),
                ..ChangeRequest::default()
            })
            .contains("not both")
        );
        assert!(
            error(ChangeRequest {
                broker_count: Some(0),
                ..ChangeRequest::default()
            })
            .contains("at least one broker")
        );
        assert!(
            error(ChangeRequest {
                partitions_count: Some(9000),
                ..ChangeRequest::default()
            })
            .contains("at most 8191")
        );
    }
}
