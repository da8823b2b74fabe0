//! `POST /v2/messages/publication`: routed by the correlation key's hash, as in Zeebe.

use axum::Json;
use axum::extract::State;
use rill_protocol::PublishMessage;
use serde::{Deserialize, Serialize};

use super::json::{Variables, optional_long, parse_body};
use super::{Body, SharedState, check_tenant, key_text, unsupported};
use crate::ops::{self, ClientError};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PublicationRequest {
    name: String,
    correlation_key: Option<String>,
    #[serde(default, deserialize_with = "optional_long")]
    time_to_live: Option<i64>,
    message_id: Option<String>,
    #[serde(default)]
    variables: Variables,
    tenant_id: Option<String>,
    business_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicationResult {
    tenant_id: String,
    message_key: String,
}

pub async fn publish(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<PublicationResult>, ClientError> {
    let request: PublicationRequest = parse_body(&body)?;
    check_tenant("tenantId", request.tenant_id.as_deref())?;
    unsupported(request.business_id.is_some(), "businessId")?;
    if request.name.trim().is_empty() {
        return Err(ClientError::invalid_field("name", "No name provided"));
    }
    let time_to_live = request.time_to_live.unwrap_or(0);
    if time_to_live < 0 {
        return Err(ClientError::invalid_field(
            "timeToLive",
            format!("The value for timeToLive is '{time_to_live}' but must be 0 or greater"),
        ));
    }
    let message = PublishMessage {
        name: request.name,
        correlation_key: request.correlation_key.unwrap_or_default(),
        time_to_live,
        message_id: request.message_id.unwrap_or_default(),
        variables: request.variables.checked("variables", &state.settings)?,
    };
    let key = ops::publish_message(&state, message).await?;
    Ok(Json(PublicationResult {
        tenant_id: rill_protocol::value::DEFAULT_TENANT.to_owned(),
        message_key: key_text(key),
    }))
}
