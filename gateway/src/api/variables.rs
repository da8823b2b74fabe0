//! `POST /v2/variables/search`: the variables of one process instance, from the
//! partition's state.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use rill_protocol::value::DEFAULT_TENANT;
use rill_protocol::{Query, QueryResult, VariableView};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::search::{SearchRequest, SearchResult};
use super::{Body, SharedState, key_text};
use crate::json::parse_optional_body;
use crate::problem::Problem;

/// The fields of a variable result, which are also the filter and sort fields.
const VARIABLE_FIELDS: &[&str] = &[
    "name",
    "value",
    "isTruncated",
    "tenantId",
    "variableKey",
    "scopeKey",
    "processInstanceKey",
    "rootProcessInstanceKey",
];

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchParams {
    /// Values are never truncated here; the parameter is accepted for compatibility.
    #[allow(dead_code)]
    truncate_values: Option<bool>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VariableResult {
    value: String,
    is_truncated: bool,
    name: String,
    tenant_id: String,
    variable_key: String,
    scope_key: String,
    process_instance_key: String,
    root_process_instance_key: Option<String>,
}

impl From<VariableView> for VariableResult {
    fn from(view: VariableView) -> Self {
        VariableResult {
            value: view.value,
            is_truncated: false,
            name: view.name,
            tenant_id: DEFAULT_TENANT.to_owned(),
            variable_key: key_text(view.key),
            scope_key: key_text(view.scope_key),
            process_instance_key: key_text(view.process_instance_key),
            root_process_instance_key: Some(key_text(view.process_instance_key)),
        }
    }
}

pub async fn search(
    State(state): State<SharedState>,
    params: Result<axum::extract::Query<SearchParams>, axum::extract::rejection::QueryRejection>,
    Body(body): Body,
) -> Result<Json<SearchResult>, Problem> {
    params.map_err(|rejection| {
        Problem::invalid_argument(format!(
            "Invalid query parameters: {}",
            rejection.body_text()
        ))
    })?;
    let request: SearchRequest = parse_optional_body(&body)?;
    request.validate(VARIABLE_FIELDS)?;
    let Some(instance) = request.filter_key("processInstanceKey")? else {
        return Err(Problem::invalid_argument(
            "Rill answers variable searches from broker state, not a search index: filter by \
             processInstanceKey",
        ));
    };
    let Ok(partition) = state.dispatch.partition_of(instance, "process instance") else {
        return Ok(Json(request.apply(Vec::new())?));
    };
    let query = Query::Variables {
        process_instance_key: instance,
        scope_key: None,
    };
    let views = match state
        .dispatch
        .query(partition, query, state.settings.request_timeout)
        .await?
    {
        QueryResult::Variables(views) => views,
        _ => {
            return Err(crate::problem::Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "The broker answered a variable query with another kind of result",
            ));
        }
    };
    let items = views
        .into_iter()
        .map(|view| serde_json::to_value(VariableResult::from(view)).unwrap_or(Value::Null))
        .collect();
    Ok(Json(request.apply(items)?))
}
