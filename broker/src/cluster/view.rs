//! The JSON shapes of Zeebe's cluster management API (`/actuator/cluster`), built from
//! a [`ClusterConfiguration`]: the current topology, and the answer to a change request
//! (the change id, the current topology, the planned steps and the expected topology).

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use super::configuration::{ClusterConfiguration, Operation};
use crate::partition::{PartitionStatus, Role};

/// Epoch milliseconds as RFC 3339 (UTC), as Zeebe's API writes times.
fn time(millis: i64) -> Value {
    let at = UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
    Value::String(humantime::format_rfc3339_millis(at).to_string())
}

fn operation(op: &Operation) -> Value {
    serde_json::to_value(op).expect("an operation always encodes")
}

/// The brokers in Zeebe's `BrokerState` shape.
pub fn brokers(config: &ClusterConfiguration) -> Value {
    Value::Array(
        config
            .brokers
            .iter()
            .map(|(id, broker)| {
                json!({
                    "id": id,
                    "state": broker.state,
                    "version": broker.version,
                    "lastUpdatedAt": time(broker.last_updated_at),
                    "partitions": broker.partitions.iter().map(|(p, replica)| json!({
                        "id": p,
                        "state": replica.state,
                        "priority": replica.priority,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// Which partitions take new instances: all, or (while added partitions still receive
/// the deployments made before them) the ones before those.
fn request_handling(config: &ClusterConfiguration) -> Value {
    let active = config.active_partitions();
    let all = config.partitions_count();
    if active >= all {
        return json!({ "strategy": "AllPartitions", "partitionCount": all });
    }
    json!({
        "strategy": "ActivePartitions",
        "basePartitionCount": active,
        "additionalActivePartitions": [],
        "inactivePartitions": (active + 1..=all).collect::<Vec<_>>(),
    })
}

/// `GET /actuator/cluster`: Zeebe's `GetTopologyResponse`.
pub fn topology(config: &ClusterConfiguration) -> Value {
    let mut body = json!({
        "version": config.version,
        "brokers": brokers(config),
        "routing": {
            "version": config.version,
            "requestHandling": request_handling(config),
            "messageCorrelation": {
                "strategy": "HashMod",
                "partitionCount": config.routing.message_partitions,
            },
        },
        "partitionDistribution": { "type": "ROUND_ROBIN" },
    });
    if let Some(last) = &config.last_change {
        body["lastChange"] = json!({
            "id": last.id,
            "status": last.status,
            "startedAt": time(last.started_at),
            "completedAt": time(last.completed_at),
        });
    }
    if let Some(change) = &config.pending_change {
        body["pendingChange"] = json!({
            "id": change.id,
            "status": "IN_PROGRESS",
            "startedAt": time(change.started_at),
            "internalVersion": config.version,
            "completed": change.completed.iter().map(|done| {
                let mut op = operation(&done.operation);
                op["completedAt"] = time(done.completed_at);
                op
            }).collect::<Vec<_>>(),
            "pending": change.pending.iter().map(operation).collect::<Vec<_>>(),
        });
    }
    body
}

/// `GET /actuator/partitions`: each partition hosted here, by id, as Zeebe's
/// partitions endpoint shows it, with the raft term and leader.
pub fn partitions(replicas: &[PartitionStatus]) -> Value {
    let mut body = serde_json::Map::new();
    for replica in replicas {
        body.insert(
            replica.partition_id.get().to_string(),
            json!({
                "role": role_name(replica.role),
                "term": replica.term.0,
                "leader": replica.leader.map(|n| n.0),
                "appliedIndex": replica.applied_index,
                "processedPosition": replica.last_position.get(),
                "exportedPosition": replica.exported.get(),
                "engineVersion": replica.engine_version,
                "health": if replica.healthy { "HEALTHY" } else { "DEAD" },
                "checkpointId": replica.checkpoint_id,
            }),
        );
    }
    Value::Object(body)
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Leader => "LEADER",
        Role::Follower => "FOLLOWER",
        Role::Candidate => "CANDIDATE",
        Role::Inactive => "INACTIVE",
    }
}

/// The answer to a change request: Zeebe's `PlannedOperationsResponse`. `change_id` is
/// the id the change has (or would have, on a dry run).
pub fn planned(current: &ClusterConfiguration, steps: &[Operation], change_id: u64) -> Value {
    let expected = current.start_change(steps.to_vec(), 0).expected();
    json!({
        "changeId": change_id,
        "currentTopology": brokers(current),
        "plannedChanges": steps.iter().map(operation).collect::<Vec<_>>(),
        "expectedTopology": brokers(&expected),
    })
}

#[cfg(test)]
mod tests {
    use rill_config::RillConfig;

    use super::*;

    #[test]
    fn the_topology_has_zeebes_field_names() {
        let mut settings = RillConfig::default();
        settings.cluster.size = 3;
        settings.cluster.partitions_count = 2;
        settings.cluster.replication_factor = 2;
        let config = ClusterConfiguration::initial(&settings).start_change(
            vec![
                Operation::BrokerAdd { broker: 3 },
                Operation::PartitionJoin {
                    broker: 3,
                    partition: 1,
                    priority: 1,
                },
            ],
            1_700_000_000_000,
        );
        let config = config.complete_next_step(1_700_000_001_000).unwrap();
        let body = topology(&config);
        assert_eq!(body["version"], 3);
        assert_eq!(body["brokers"][0]["id"], 0);
        assert_eq!(body["brokers"][0]["state"], "ACTIVE");
        assert_eq!(body["brokers"][0]["partitions"][0]["id"], 1);
        assert_eq!(body["brokers"][0]["partitions"][0]["priority"], 2);
        assert_eq!(body["brokers"][3]["partitions"], json!([]));
        let change = &body["pendingChange"];
        assert_eq!(change["id"], 2);
        assert_eq!(change["status"], "IN_PROGRESS");
        assert_eq!(change["startedAt"], "2023-11-14T22:13:20.000Z");
        assert_eq!(change["completed"][0]["operation"], "BROKER_ADD");
        assert_eq!(change["completed"][0]["brokerId"], 3);
        assert_eq!(change["pending"][0]["operation"], "PARTITION_JOIN");
        assert_eq!(change["pending"][0]["partitionId"], 1);
        assert_eq!(
            body["routing"]["messageCorrelation"],
            json!({"strategy": "HashMod", "partitionCount": 2})
        );
        assert!(body.get("lastChange").is_none());
    }

    #[test]
    fn a_plan_shows_the_topology_before_and_after() {
        let mut settings = RillConfig::default();
        settings.cluster.size = 1;
        settings.cluster.partitions_count = 1;
        let current = ClusterConfiguration::initial(&settings);
        let steps = [
            Operation::BrokerAdd { broker: 1 },
            Operation::PartitionJoin {
                broker: 1,
                partition: 1,
                priority: 1,
            },
        ];
        let body = planned(&current, &steps, 2);
        assert_eq!(body["changeId"], 2);
        assert_eq!(body["currentTopology"].as_array().unwrap().len(), 1);
        assert_eq!(body["expectedTopology"].as_array().unwrap().len(), 2);
        assert_eq!(body["plannedChanges"][1]["operation"], "PARTITION_JOIN");
    }

    fn replica(partition: u16, role: Role, term: u64) -> PartitionStatus {
        PartitionStatus {
            partition_id: rill_protocol::PartitionId(partition),
            node_id: rill_protocol::NodeId(1),
            role,
            leader: (role == Role::Leader).then_some(rill_protocol::NodeId(1)),
            term: rill_protocol::Term(term),
            applied_index: 7,
            last_position: rill_protocol::Position(5),
            engine_version: 2,
            exported: rill_protocol::Position(4),
            healthy: true,
            inflight: 0,
            peak_inflight: 0,
            limit: 1,
            checkpoint_id: 3,
        }
    }

    #[test]
    fn a_broker_lists_its_replicas_with_role_and_term() {
        let replicas = [replica(1, Role::Leader, 4), replica(2, Role::Follower, 9)];
        let listed = partitions(&replicas);
        assert_eq!(listed["1"]["role"], "LEADER");
        assert_eq!(listed["1"]["term"], 4);
        assert_eq!(listed["2"]["role"], "FOLLOWER");
        assert_eq!(listed["1"]["leader"], 1);
        assert_eq!(listed["2"]["term"], 9);
        assert_eq!(listed["2"]["processedPosition"], 5);
        assert_eq!(listed["2"]["exportedPosition"], 4);
        assert_eq!(listed["2"]["health"], "HEALTHY");
        assert_eq!(listed["2"]["checkpointId"], 3);
    }
}
