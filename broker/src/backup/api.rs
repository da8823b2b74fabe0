//! Zeebe's backup management API on the monitoring port:
//!
//! - `POST /actuator/backups` `{"backupId": N}`: a checkpoint through every partition's
//!   log; 202 once every partition recorded it (the parts are then taken in the
//!   background), 409 when a partition has a backup id as high already;
//! - `GET /actuator/backups/{id}`: the backup's state and each partition's part;
//! - `GET /actuator/backups`: every backup in the store;
//! - `DELETE /actuator/backups/{id}`: removes a backup that is not in progress.
//!
//! Errors are RFC 9457 problem documents with Zeebe's `message`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use rill_protocol::PartitionId;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::metrics::BackupMetrics;
use crate::monitoring::{json_response, problem};

use super::CheckpointOutcome;
use super::store::{BackupState, BackupStore, PartitionBackupStatus, Store, overall_state};

/// How a broker reaches its partitions' leaders to record a checkpoint.
pub trait BackupPartitions: Send + Sync + 'static {
    /// The partitions of the cluster (`1..=count`).
    fn partition_count(&self) -> u16;
    /// Records checkpoint `backup_id` in `partition`'s log through its leader.
    fn checkpoint(
        &self,
        partition: PartitionId,
        backup_id: u64,
    ) -> BoxFuture<'static, Result<CheckpointOutcome, String>>;
    /// Whether this broker's replica of `partition` leads it now (the scheduler runs on
    /// the broker that leads partition 1).
    fn leads(&self, partition: PartitionId) -> bool;
}

#[derive(Clone)]
struct BackupApi {
    store: Option<Store>,
    partitions: Arc<dyn BackupPartitions>,
    metrics: BackupMetrics,
}

/// The routes of the backup management API.
pub fn router(
    store: Option<Store>,
    partitions: Arc<dyn BackupPartitions>,
    metrics: BackupMetrics,
) -> Router {
    Router::new()
        .route("/actuator/backups", get(list).post(take))
        .route("/actuator/backups/{id}", get(status).delete(delete))
        .with_state(BackupApi {
            store,
            partitions,
            metrics,
        })
}

fn no_store() -> Response {
    problem(
        StatusCode::BAD_REQUEST,
        "BACKUP_NOT_CONFIGURED",
        "no backup store is configured (backup.store = none): set backup.store = \
         \"filesystem\" and backup.filesystem.base-path, or backup.store = \"s3\" and \
         backup.s3.bucket, on every broker",
    )
}

fn backup_id(id: &str) -> Result<u64, Box<Response>> {
    match id.parse::<u64>() {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(Box::new(problem(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            format!("backupId: `{id}` is not a backup id (a number above 0)"),
        ))),
    }
}

/// Runs blocking store work off the server's threads; the error is the answer to give.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, Box<Response>> {
    let failed = match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(e)) => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "STORE_UNAVAILABLE",
            format!("the backup store cannot be read: {e}"),
        ),
        Err(e) => problem(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            format!("reading the backup store stopped: {e}"),
        ),
    };
    Err(Box::new(failed))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TakeBody {
    backup_id: u64,
}

/// How long each partition may take to record the checkpoint.
const CHECKPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a backup was not taken.
pub(crate) enum TakeRefused {
    /// The store has a backup with this id.
    Exists,
    /// Partitions have a checkpoint with an id as high (each named with it).
    NotGreater(Vec<String>),
    /// Partitions did not confirm the checkpoint (each named with why).
    Unavailable(Vec<String>),
    /// The store cannot be read.
    Store(Box<Response>),
}

impl TakeRefused {
    /// The reason, for a log line.
    pub(crate) fn reason(&self) -> String {
        match self {
            TakeRefused::Exists => "a backup with this id exists".to_owned(),
            TakeRefused::NotGreater(refused) => {
                format!("backup ids must grow, and {}", refused.join(", "))
            }
            TakeRefused::Unavailable(failed) => format!(
                "not every partition confirmed the checkpoint: {}",
                failed.join("; ")
            ),
            TakeRefused::Store(_) => "the backup store cannot be read".to_owned(),
        }
    }
}

/// Records checkpoint `id` in every partition (the parts are then taken in the
/// background): the API's `POST` and the scheduler both take backups this way.
pub(crate) async fn take_backup(
    store: Store,
    partitions: Arc<dyn BackupPartitions>,
    id: u64,
) -> Result<u16, TakeRefused> {
    let reading = store.clone();
    let exists = blocking(move || reading.partitions(id).map(|parts| !parts.is_empty())).await;
    match exists {
        Err(response) => return Err(TakeRefused::Store(response)),
        Ok(true) => return Err(TakeRefused::Exists),
        Ok(false) => {}
    }
    let count = partitions.partition_count();
    let asked = (1..=count).map(|p| {
        let partitions = partitions.clone();
        async move {
            let outcome = tokio::time::timeout(
                CHECKPOINT_TIMEOUT,
                partitions.checkpoint(PartitionId(p), id),
            )
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no answer within {}s",
                    CHECKPOINT_TIMEOUT.as_secs()
                ))
            });
            (p, outcome)
        }
    });
    let outcomes = futures::future::join_all(asked).await;
    // A partition may have recorded this very checkpoint already, when a command from a
    // partition past it carried it (docs/decisions/backup.md): its part is then in the
    // store, and the checkpoint counts as recorded.
    let carried: Vec<u16> = outcomes
        .iter()
        .filter_map(|(p, outcome)| match outcome {
            Ok(CheckpointOutcome::Refused { latest }) if *latest == id => Some(*p),
            _ => None,
        })
        .collect();
    let taken = if carried.is_empty() {
        Vec::new()
    } else {
        let store = store.clone();
        match blocking(move || store.partitions(id)).await {
            Ok(taken) => taken,
            Err(response) => return Err(TakeRefused::Store(response)),
        }
    };
    let refused: Vec<String> = outcomes
        .iter()
        .filter_map(|(p, outcome)| match outcome {
            Ok(CheckpointOutcome::Refused { latest }) if *latest != id || !taken.contains(p) => {
                Some(format!("partition {p} has backup {latest}"))
            }
            _ => None,
        })
        .collect();
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(|(p, outcome)| {
            outcome
                .as_ref()
                .err()
                .map(|e| format!("partition {p}: {e}"))
        })
        .collect();
    if !refused.is_empty() {
        return Err(TakeRefused::NotGreater(refused));
    }
    if !failed.is_empty() {
        return Err(TakeRefused::Unavailable(failed));
    }
    tracing::info!(
        backup = id,
        partitions = count,
        "backup checkpoint recorded"
    );
    Ok(count)
}

async fn take(State(api): State<BackupApi>, body: Bytes) -> Response {
    let Some(store) = api.store.clone() else {
        return no_store();
    };
    let id = match serde_json::from_slice::<TakeBody>(&body) {
        Ok(body) if body.backup_id > 0 => body.backup_id,
        Ok(_) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "backupId: must be above 0",
            );
        }
        Err(e) => {
            return problem(
                StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                format!("request body: {e} (expected {{\"backupId\": <number>}})"),
            );
        }
    };
    match take_backup(store, api.partitions.clone(), id).await {
        Ok(_) => json_response(
            StatusCode::ACCEPTED,
            json!({
                "message": format!(
                    "A backup with id {id} has been scheduled. Use GET /actuator/backups/{id} \
                     to monitor its status."
                ),
            }),
        ),
        Err(TakeRefused::Store(response)) => *response,
        Err(TakeRefused::Exists) => problem(
            StatusCode::CONFLICT,
            "ALREADY_EXISTS",
            format!("backup {id} exists already: take a backup with a higher id"),
        ),
        Err(TakeRefused::NotGreater(refused)) => problem(
            StatusCode::CONFLICT,
            "BACKUP_ID_NOT_GREATER",
            format!(
                "backup ids must grow, and {}: take the backup with a higher id",
                refused.join(", ")
            ),
        ),
        Err(TakeRefused::Unavailable(failed)) => problem(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            format!(
                "the checkpoint of backup {id} was not confirmed by every partition ({}); \
                 GET /actuator/backups/{id} shows what was taken, and a backup with a \
                 higher id can be taken",
                failed.join("; ")
            ),
        ),
    }
}

fn rfc3339(millis: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

fn part_json(part: &PartitionBackupStatus) -> Value {
    let mut value = json!({
        "partitionId": part.partition_id,
        "state": part.state,
        "createdAt": rfc3339(part.created_at),
        "lastUpdatedAt": rfc3339(part.last_updated),
        "checkpointPosition": part.checkpoint_position,
        "brokerId": part.node_id,
        "brokerVersion": part.broker_version,
        "sizeBytes": part.size_bytes,
        "fileCount": part.file_count,
    });
    if let Some(reason) = &part.failure_reason {
        value["failureReason"] = json!(reason);
    }
    value
}

/// A backup as Zeebe's `BackupInfo`, from the store: partitions `1..=count`, and any
/// above that the store has.
pub(crate) fn backup_json(
    store: &dyn BackupStore,
    id: u64,
    count: u16,
) -> Result<(BackupState, Value), String> {
    let mut partitions: Vec<u16> = (1..=count).collect();
    for p in store.partitions(id)? {
        if !partitions.contains(&p) {
            partitions.push(p);
        }
    }
    let mut states = Vec::new();
    let mut details = Vec::new();
    let mut reasons = Vec::new();
    for p in partitions {
        match store.status(id, p)? {
            Some(part) => {
                states.push(Some(part.state));
                if let Some(reason) = &part.failure_reason {
                    reasons.push(format!("partition {p}: {reason}"));
                }
                details.push(part_json(&part));
            }
            None => {
                states.push(None);
                details.push(json!({ "partitionId": p, "state": BackupState::DoesNotExist }));
            }
        }
    }
    let state = overall_state(&states);
    let mut body = json!({ "backupId": id, "state": state, "details": details });
    if !reasons.is_empty() {
        body["failureReason"] = json!(reasons.join("; "));
    }
    Ok((state, body))
}

async fn status(State(api): State<BackupApi>, Path(id): Path<String>) -> Response {
    let Some(store) = api.store.clone() else {
        return no_store();
    };
    let id = match backup_id(&id) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    let count = api.partitions.partition_count();
    match blocking(move || backup_json(store.as_ref(), id, count)).await {
        Ok((BackupState::DoesNotExist, _)) => problem(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("there is no backup {id}"),
        ),
        Ok((_, body)) => json_response(StatusCode::OK, body),
        Err(response) => *response,
    }
}

async fn list(State(api): State<BackupApi>) -> Response {
    let Some(store) = api.store.clone() else {
        return no_store();
    };
    let count = api.partitions.partition_count();
    let listed = blocking(move || {
        store
            .backup_ids()?
            .into_iter()
            .map(|id| backup_json(store.as_ref(), id, count).map(|(_, body)| body))
            .collect::<Result<Vec<Value>, String>>()
    })
    .await;
    match listed {
        Ok(backups) => json_response(StatusCode::OK, Value::Array(backups)),
        Err(response) => *response,
    }
}

async fn delete(State(api): State<BackupApi>, Path(id): Path<String>) -> Response {
    let Some(store) = api.store.clone() else {
        return no_store();
    };
    let id = match backup_id(&id) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    let count = api.partitions.partition_count();
    let found = {
        let store = store.clone();
        blocking(move || backup_json(store.as_ref(), id, count)).await
    };
    match found {
        Err(response) => *response,
        Ok((BackupState::DoesNotExist, _)) => problem(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("there is no backup {id}"),
        ),
        Ok((BackupState::InProgress, _)) => problem(
            StatusCode::CONFLICT,
            "IN_PROGRESS",
            format!("backup {id} is in progress: delete it once it completed or failed"),
        ),
        Ok(_) => match blocking(move || store.delete(id)).await {
            Ok(_) => {
                api.metrics.operation("delete", true);
                tracing::info!(backup = id, "backup deleted");
                StatusCode::NO_CONTENT.into_response()
            }
            Err(response) => {
                api.metrics.operation("delete", false);
                *response
            }
        },
    }
}
