//! `GET /v2/topology` and `GET /v2/status`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::SharedState;
use crate::backend::{PartitionHealth, PartitionRole, Topology};
use crate::ops::{self, ClientError};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyResponse {
    brokers: Vec<BrokerInfo>,
    cluster_id: Option<String>,
    cluster_size: u32,
    partitions_count: u16,
    replication_factor: u32,
    gateway_version: &'static str,
    last_completed_change_id: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerInfo {
    node_id: u32,
    broker_id: String,
    host: String,
    port: u16,
    partitions: Vec<PartitionInfo>,
    version: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartitionInfo {
    partition_id: u16,
    role: &'static str,
    health: &'static str,
    state: &'static str,
}

impl From<Topology> for TopologyResponse {
    fn from(topology: Topology) -> Self {
        let brokers = topology
            .brokers
            .into_iter()
            .map(|broker| BrokerInfo {
                node_id: broker.node_id.0,
                broker_id: broker.node_id.to_string(),
                host: broker.host,
                port: broker.port,
                version: broker.version,
                partitions: broker
                    .partitions
                    .into_iter()
                    .map(|p| PartitionInfo {
                        partition_id: p.partition.get(),
                        role: match p.role {
                            PartitionRole::Leader => "leader",
                            PartitionRole::Follower => "follower",
                            PartitionRole::Inactive => "inactive",
                        },
                        health: match p.health {
                            PartitionHealth::Healthy => "healthy",
                            PartitionHealth::Unhealthy => "unhealthy",
                            PartitionHealth::Dead => "dead",
                        },
                        state: match p.role {
                            PartitionRole::Inactive => "inactive",
                            _ => "active",
                        },
                    })
                    .collect(),
            })
            .collect();
        TopologyResponse {
            brokers,
            cluster_id: None,
            cluster_size: topology.cluster_size,
            partitions_count: topology.partitions_count,
            replication_factor: topology.replication_factor,
            gateway_version: env!("CARGO_PKG_VERSION"),
            last_completed_change_id: "-1",
        }
    }
}

pub async fn topology(
    State(state): State<SharedState>,
) -> Result<Json<TopologyResponse>, ClientError> {
    Ok(Json(ops::topology(&state).await?.into()))
}

/// 204 when every partition has a healthy leader, 503 otherwise (as Camunda's status).
pub async fn status(State(state): State<SharedState>) -> Response {
    match ops::status(&state).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => error.into_response(),
    }
}
