//! Zeebe's cluster management API on the monitoring port:
//!
//! - `GET /actuator/cluster`: the configuration and the change in progress;
//! - `PATCH /actuator/cluster`: brokers to add or remove (or a count), the partition
//!   count and the replication factor;
//! - `POST /actuator/cluster/brokers` (the brokers the cluster should have),
//!   `POST|DELETE /actuator/cluster/brokers/{id}` (add or remove one);
//! - `GET /actuator/partitions`: the replicas this broker hosts, with their raft role
//!   and term (the one per-broker answer: `/actuator/cluster` is the same from every
//!   broker);
//! - `DELETE /actuator/cluster/changes/{changeId}`: cancels the change in progress (the
//!   steps done stay done, the others never run) and answers the topology after; 404
//!   for a change never heard of, 409 for one that is not in progress;
//! - `POST /actuator/rebalance`: moves each partition's leadership to its preferred
//!   replica, one partition at a time, and answers 200 with what it did per partition
//!   (`?dryRun=true`: what it would do, changing nothing; see `super::rebalance`).
//!
//! Every change request takes `?dryRun=true`, which answers 202 with the plan and
//! changes nothing. Without it the change is started through partition 1's leader and
//! answered 202 once it is recorded; the coordinator runs its steps (`coordinator`).
//! Errors are Zeebe's `{"message": ...}`, in an RFC 9457 problem document.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{delete, get, post};
use serde::Deserialize;

use crate::monitoring::{json_response, problem};

use super::{ChangeRequest, ClusterState, Operation, plan, view};
use crate::partition::PartitionStatus;

/// How long a started change may take to be recorded before the request is answered
/// 503 (it may still be recorded later: `GET /actuator/cluster` shows it).
const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The replicas this broker hosts, as they are now.
pub type LocalReplicas = Arc<dyn Fn() -> Vec<PartitionStatus> + Send + Sync>;

/// The routes of the cluster management API.
pub fn router(cluster: ClusterState, local: LocalReplicas) -> Router {
    let replicas = local.clone();
    Router::new()
        .route("/actuator/cluster", get(topology).patch(patch_cluster))
        .route(
            "/actuator/partitions",
            get(move || async move { json_response(StatusCode::OK, view::partitions(&local())) }),
        )
        .route("/actuator/cluster/brokers", post(scale_brokers))
        .route(
            "/actuator/cluster/brokers/{id}",
            post(add_broker).delete(remove_broker),
        )
        .route("/actuator/cluster/changes/{id}", delete(cancel_change))
        .route(
            "/actuator/rebalance",
            post(
                move |State(cluster): State<ClusterState>,
                      Query(query): Query<HashMap<String, String>>| {
                    rebalance(cluster, query, replicas.clone())
                },
            ),
        )
        .with_state(cluster)
}

fn bad_request(message: impl Into<String>) -> Response {
    problem(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
}

async fn topology(State(cluster): State<ClusterState>) -> Response {
    json_response(StatusCode::OK, view::topology(&cluster.current()))
}

/// `?dryRun=true|false`; anything else is named as wrong.
fn dry_run(query: &HashMap<String, String>) -> Result<bool, String> {
    if let Some(unknown) = query.keys().find(|k| k.as_str() != "dryRun") {
        return Err(format!(
            "unknown query parameter `{unknown}` (expected dryRun)"
        ));
    }
    match query.get("dryRun").map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(format!("dryRun: expected true or false, got `{other}`")),
    }
}

/// Hands each partition's leadership to its preferred replica (or plans it).
async fn rebalance(
    cluster: ClusterState,
    query: HashMap<String, String>,
    local: LocalReplicas,
) -> Response {
    let dry_run = match dry_run(&query) {
        Ok(dry_run) => dry_run,
        Err(e) => return bad_request(e),
    };
    if !cluster.runs_changes() {
        // A broker on its own (standalone): its replicas are all there is.
        return json_response(
            StatusCode::OK,
            serde_json::json!({ "dryRun": dry_run, "partitions": cluster.rebalance_alone(&local()) }),
        );
    }
    // In a task of its own: a client that goes away must not cut a hand-over short.
    let partitions = match tokio::spawn(async move { cluster.rebalance(dry_run).await }).await {
        Ok(partitions) => partitions,
        Err(e) => {
            return problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                format!("the rebalance failed: {e}"),
            );
        }
    };
    json_response(
        StatusCode::OK,
        serde_json::json!({ "dryRun": dry_run, "partitions": partitions }),
    )
}

/// Answers a change request once both the query and the body are understood.
async fn checked(
    cluster: &ClusterState,
    query: &HashMap<String, String>,
    request: Result<ChangeRequest, String>,
) -> Response {
    match (dry_run(query), request) {
        (Ok(dry_run), Ok(request)) => answer(cluster, request, dry_run).await,
        (Err(e), _) | (_, Err(e)) => bad_request(e),
    }
}

/// Plans `request` against the current configuration and answers it.
async fn answer(cluster: &ClusterState, request: ChangeRequest, dry_run: bool) -> Response {
    let current = cluster.current();
    if let Some(change) = &current.pending_change {
        return problem(
            StatusCode::CONFLICT,
            "CONCURRENT_CHANGE",
            format!(
                "change {} is in progress ({} step(s) left); wait until it completes",
                change.id,
                change.pending.len()
            ),
        );
    }
    let steps = match plan(&current, &request) {
        Ok(steps) => steps,
        Err(e) => return bad_request(e.0),
    };
    if steps.is_empty() {
        // Nothing to change: no change is started, so the id is the current version.
        return json_response(
            StatusCode::ACCEPTED,
            view::planned(&current, &steps, current.version),
        );
    }
    if dry_run {
        return json_response(
            StatusCode::ACCEPTED,
            view::planned(&current, &steps, current.version + 1),
        );
    }
    if !cluster.runs_changes() {
        return problem(
            StatusCode::NOT_IMPLEMENTED,
            "NOT_IMPLEMENTED",
            "a broker started alone (rill standalone, or cluster.size = 1) has no internal \
             port and cannot be scaled: start the brokers with cluster.size and \
             cluster.initial-contact-points; ?dryRun=true shows the plan",
        );
    }
    start(cluster, &current, steps).await
}

/// Starts a change of `steps` through partition 1's leader and answers once it is
/// recorded.
async fn start(
    cluster: &ClusterState,
    current: &super::ClusterConfiguration,
    steps: Vec<Operation>,
) -> Response {
    #[allow(clippy::disallowed_methods)] // shown to operators, stamped into the proposal
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let next = current.start_change(steps.clone(), now);
    if let Err(reason) = cluster.propose(current.version, &next).await {
        return problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            format!("the change could not be started: {reason}; try again"),
        );
    }
    if !cluster.wait_version(next.version, START_TIMEOUT).await {
        return problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            format!(
                "the change was proposed but not recorded within {}s; GET /actuator/cluster \
                 shows whether it runs",
                START_TIMEOUT.as_secs()
            ),
        );
    }
    let recorded = cluster.current();
    let ours = |id: u64| id == next.version;
    let started = recorded.pending_change.as_ref().is_some_and(|c| ours(c.id))
        || recorded.last_change.as_ref().is_some_and(|c| ours(c.id));
    if !started {
        return problem(
            StatusCode::CONFLICT,
            "CONCURRENT_CHANGE",
            "another change was recorded first; GET /actuator/cluster shows it",
        );
    }
    json_response(
        StatusCode::ACCEPTED,
        view::planned(current, &steps, next.version),
    )
}

/// How often a cancellation is proposed again when a step was recorded first.
const CANCEL_ATTEMPTS: usize = 5;

#[allow(clippy::disallowed_methods)] // shown to operators, stamped into the proposal
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn cancel_change(
    State(cluster): State<ClusterState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    match dry_run(&query) {
        Err(e) => return bad_request(e),
        Ok(true) => {
            return problem(
                StatusCode::NOT_IMPLEMENTED,
                "NOT_IMPLEMENTED",
                "a cancellation has no dry run: GET /actuator/cluster shows the change",
            );
        }
        Ok(false) => {}
    }
    match id.parse::<u64>() {
        Ok(id) => cancel(&cluster, id).await,
        Err(_) => bad_request(format!("changeId: `{id}` is not a change id (a number)")),
    }
}

/// Cancels change `id` if it is the one in progress, through partition 1's leader, and
/// answers with the topology once the cancellation is recorded.
async fn cancel(cluster: &ClusterState, id: u64) -> Response {
    for _ in 0..CANCEL_ATTEMPTS {
        let current = cluster.current();
        match (&current.pending_change, &current.last_change) {
            (Some(change), _) if change.id == id => {}
            (_, Some(last)) if last.id == id => {
                return problem(
                    StatusCode::CONFLICT,
                    "CHANGE_NOT_IN_PROGRESS",
                    format!(
                        "change {id} is not in progress: it ended {}",
                        serde_json::to_value(last.status)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default()
                    ),
                );
            }
            (pending, _) => {
                let running = pending.as_ref().map_or_else(
                    || "no change is in progress".to_owned(),
                    |c| format!("the change in progress is {}", c.id),
                );
                return problem(
                    StatusCode::NOT_FOUND,
                    "NOT_FOUND",
                    format!("there is no change {id} to cancel: {running}"),
                );
            }
        }
        if !cluster.runs_changes() {
            return problem(
                StatusCode::NOT_IMPLEMENTED,
                "NOT_IMPLEMENTED",
                "this broker runs no cluster change",
            );
        }
        let Some(next) = current.cancel_change(now_millis()) else {
            continue;
        };
        if let Err(reason) = cluster.propose(current.version, &next).await {
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                format!("the cancellation could not be proposed: {reason}; try again"),
            );
        }
        if !cluster.wait_version(next.version, START_TIMEOUT).await {
            return problem(
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                format!(
                    "the cancellation was proposed but not recorded within {}s; GET \
                     /actuator/cluster shows whether it was",
                    START_TIMEOUT.as_secs()
                ),
            );
        }
        let recorded = cluster.current();
        let cancelled = recorded
            .last_change
            .is_some_and(|c| c.id == id && c.status == super::ChangeStatus::Cancelled);
        if cancelled {
            tracing::info!(
                change = id,
                version = recorded.version,
                "cluster change cancelled"
            );
            return json_response(StatusCode::OK, view::topology(&recorded));
        }
        // The coordinator recorded a step first: look again.
    }
    problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "UNAVAILABLE",
        format!("change {id} kept moving on while it was being cancelled; try again"),
    )
}

fn parse<T: for<'de> Deserialize<'de>>(body: &Bytes) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("request body: {e}"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BrokersPatch {
    #[serde(default)]
    add: Vec<u32>,
    #[serde(default)]
    remove: Vec<u32>,
    count: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PartitionsPatch {
    count: Option<u16>,
    replication_factor: Option<u16>,
}

/// Zeebe's `ClusterConfigPatchRequest`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PatchBody {
    brokers: Option<BrokersPatch>,
    partitions: Option<PartitionsPatch>,
}

async fn patch_cluster(
    State(cluster): State<ClusterState>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let request = parse::<PatchBody>(&body).map(|body| {
        let mut request = ChangeRequest::default();
        if let Some(brokers) = body.brokers {
            request.add = brokers.add;
            request.remove = brokers.remove;
            request.broker_count = brokers.count;
        }
        if let Some(partitions) = body.partitions {
            request.partitions_count = partitions.count;
            request.replication_factor = partitions.replication_factor;
        }
        request
    });
    checked(&cluster, &query, request).await
}

async fn scale_brokers(
    State(cluster): State<ClusterState>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let request = parse::<Vec<u32>>(&body).map(|brokers| ChangeRequest {
        brokers: Some(brokers),
        ..ChangeRequest::default()
    });
    checked(&cluster, &query, request).await
}

fn broker_id(id: &str) -> Result<u32, String> {
    id.parse()
        .map_err(|_| format!("brokerId: `{id}` is not a broker id (0, 1, ...)"))
}

async fn add_broker(
    State(cluster): State<ClusterState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let request = broker_id(&id).map(|id| ChangeRequest {
        add: vec![id],
        ..ChangeRequest::default()
    });
    checked(&cluster, &query, request).await
}

async fn remove_broker(
    State(cluster): State<ClusterState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let request = broker_id(&id).map(|id| ChangeRequest {
        remove: vec![id],
        ..ChangeRequest::default()
    });
    checked(&cluster, &query, request).await
}

#[cfg(test)]
mod tests {
    use rill_config::RillConfig;

    use super::*;
    use crate::cluster::Operation;

    #[tokio::test]
    async fn a_request_while_a_change_runs_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = RillConfig::default();
        settings.data.directory = dir.path().to_path_buf();
        let cluster = ClusterState::open(&settings).unwrap();
        let request = ChangeRequest {
            broker_count: Some(2),
            ..ChangeRequest::default()
        };
        assert_eq!(
            answer(&cluster, request.clone(), true).await.status(),
            StatusCode::ACCEPTED
        );
        // Asking for what is there needs no change, with or without dryRun.
        let same = ChangeRequest {
            broker_count: Some(1),
            ..ChangeRequest::default()
        };
        assert_eq!(
            answer(&cluster, same, false).await.status(),
            StatusCode::ACCEPTED
        );
        // A broker alone runs no change.
        assert_eq!(
            answer(&cluster, request.clone(), false).await.status(),
            StatusCode::NOT_IMPLEMENTED
        );
        let running = cluster
            .current()
            .start_change(vec![Operation::BrokerAdd { broker: 1 }], 1);
        assert!(cluster.offer(running));
        assert_eq!(
            answer(&cluster, request, true).await.status(),
            StatusCode::CONFLICT
        );
    }

    #[tokio::test]
    async fn only_the_change_in_progress_can_be_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = RillConfig::default();
        settings.data.directory = dir.path().to_path_buf();
        let cluster = ClusterState::open(&settings).unwrap();
        let status = |response: Response| response.status();
        let ask = |id: &str, query: &[(&str, &str)]| {
            let query = query
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            cancel_change(State(cluster.clone()), Path(id.to_owned()), Query(query))
        };
        assert_eq!(status(ask("x", &[]).await), StatusCode::BAD_REQUEST);
        assert_eq!(status(ask("2", &[]).await), StatusCode::NOT_FOUND);
        let running = cluster
            .current()
            .start_change(vec![Operation::BrokerAdd { broker: 1 }], 1);
        assert!(cluster.offer(running.clone()));
        assert_eq!(status(ask("3", &[]).await), StatusCode::NOT_FOUND);
        assert_eq!(
            status(ask("2", &[("dryRun", "true")]).await),
            StatusCode::NOT_IMPLEMENTED
        );
        // The change in progress, on a broker alone, which runs no change.
        assert_eq!(status(ask("2", &[]).await), StatusCode::NOT_IMPLEMENTED);
        assert!(cluster.offer(running.cancel_change(5).unwrap()));
        assert_eq!(status(ask("2", &[]).await), StatusCode::CONFLICT);
    }
}
