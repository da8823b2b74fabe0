//! `POST /v2/signals/broadcast`: taken by any partition, which passes the signal on to
//! every other one.

use axum::Json;
use axum::extract::State;
use rill_protocol::BroadcastSignal;
use serde::{Deserialize, Serialize};

use super::json::{Variables, parse_body};
use super::{Body, SharedState, check_tenant, key_text};
use crate::ops::{self, ClientError};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BroadcastRequest {
    signal_name: String,
    #[serde(default)]
    variables: Variables,
    tenant_id: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastResult {
    tenant_id: String,
    signal_key: String,
}

pub async fn broadcast(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<BroadcastResult>, ClientError> {
    let request: BroadcastRequest = parse_body(&body)?;
    check_tenant("tenantId", request.tenant_id.as_deref())?;
    if request.signal_name.trim().is_empty() {
        return Err(ClientError::invalid_field(
            "signalName",
            "No signalName provided",
        ));
    }
    let signal = BroadcastSignal {
        signal_name: request.signal_name,
        variables: request.variables.checked("variables", &state.settings)?,
    };
    let key = ops::broadcast_signal(&state, signal).await?;
    Ok(Json(BroadcastResult {
        tenant_id: rill_protocol::value::DEFAULT_TENANT.to_owned(),
        signal_key: key_text(key),
    }))
}
