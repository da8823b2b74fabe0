//! `PUT /v2/element-instances/{elementInstanceKey}/variables`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::{Command, JsonValue, SetVariables};
use serde::Deserialize;

use super::{Body, KeyParam, SharedState};
use crate::json::{Variables, optional_long, parse_body};
use crate::problem::Problem;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetVariableRequest {
    variables: Option<Variables>,
    local: Option<bool>,
    /// Accepted and ignored: Rill's records carry no operation reference.
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

pub async fn set_variables(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, Problem> {
    let request: SetVariableRequest = parse_body(&body)?;
    let Some(variables) = request.variables else {
        return Err(Problem::invalid_argument("No variables provided"));
    };
    let partition = state.dispatch.partition_of(key, "element instance")?;
    let command = Command::SetVariables(SetVariables {
        element_instance_key: key,
        variables: JsonValue(variables.into_value()),
        local: request.local.unwrap_or(false),
    });
    state
        .dispatch
        .submit(partition, command, state.settings.request_timeout)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
