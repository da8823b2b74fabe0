//! Deployed resources: `POST /v2/resources/{resourceKey}/deletion` (process definitions,
//! forms and decision requirements).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::json::{optional_long, parse_optional_body};
use super::{Body, KeyParam, SharedState, operation_reference};
use crate::ops::{self, ClientError};

/// Camunda 8.8's `DeleteResourceRequest`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DeleteRequest {
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

/// 200 with no body once the resource is deleted on the partition that took it (the
/// other partitions follow through the outbox). A process definition with running
/// instances is deleted once they end; no new instance of it starts from now on.
pub async fn delete(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: DeleteRequest = parse_optional_body(&body)?;
    let reference = operation_reference(request.operation_reference)?;
    ops::delete_resource(&state, key, reference).await?;
    Ok(StatusCode::OK.into_response())
}
