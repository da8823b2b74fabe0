//! Deployed resources: `POST /v2/resources/{resourceKey}/deletion` (process definitions,
//! forms and decision requirements), and `GET /v2/resources/{resourceKey}` and its
//! `/content` for the other resources a deployment holds (RPA scripts).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rill_protocol::history::HistoricResource;
use serde::{Deserialize, Serialize};

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

/// Camunda's `ResourceResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceResult {
    resource_name: String,
    version: i32,
    version_tag: Option<String>,
    resource_id: String,
    tenant_id: String,
    resource_key: String,
}

impl From<HistoricResource> for ResourceResult {
    fn from(resource: HistoricResource) -> Self {
        ResourceResult {
            resource_name: resource.resource_name,
            version: resource.version,
            version_tag: (!resource.version_tag.is_empty()).then_some(resource.version_tag),
            resource_id: resource.resource_id,
            tenant_id: resource.tenant_id,
            resource_key: resource.key.to_string(),
        }
    }
}

/// `GET /v2/resources/{resourceKey}`: a deployed RPA script's metadata.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<ResourceResult>, ClientError> {
    Ok(Json(ops::resource(&state, key).await?.into()))
}

/// `GET /v2/resources/{resourceKey}/content`: the script as it was deployed.
pub async fn content(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    let resource = ops::resource(&state, key).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        resource.content,
    )
        .into_response())
}
