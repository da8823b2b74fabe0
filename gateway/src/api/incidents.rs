//! Incidents: resolve one, read one, and search the incidents of a process instance
//! (answered from the partition's state).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::{Command, IncidentView, Query, QueryResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::search::{SearchRequest, SearchResult};
use super::{Body, KeyParam, SharedState, key_text, optional_key_text};
use crate::json::{optional_long, parse_optional_body};
use crate::problem::Problem;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResolutionRequest {
    /// Accepted and ignored: Rill's records carry no operation reference.
    #[allow(dead_code)]
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

pub async fn resolve(
    State(state): State<SharedState>,
    KeyParam(incident_key): KeyParam,
    Body(body): Body,
) -> Result<Response, Problem> {
    let _: ResolutionRequest = parse_optional_body(&body)?;
    let partition = state.dispatch.partition_of(incident_key, "incident")?;
    state
        .dispatch
        .submit(
            partition,
            Command::ResolveIncident { incident_key },
            state.settings.request_timeout,
        )
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The fields of an incident result, which are also the filter and sort fields.
const INCIDENT_FIELDS: &[&str] = &[
    "processDefinitionId",
    "errorType",
    "errorMessage",
    "elementId",
    "creationTime",
    "state",
    "tenantId",
    "incidentKey",
    "processDefinitionKey",
    "processInstanceKey",
    "rootProcessInstanceKey",
    "elementInstanceKey",
    "jobKey",
];

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentResult {
    process_definition_id: String,
    error_type: Value,
    error_message: String,
    element_id: String,
    /// Not known yet: the engine does not keep when an incident was raised.
    creation_time: Option<String>,
    state: &'static str,
    tenant_id: String,
    incident_key: String,
    process_definition_key: String,
    process_instance_key: String,
    root_process_instance_key: Option<String>,
    element_instance_key: String,
    job_key: Option<String>,
}

impl From<IncidentView> for IncidentResult {
    fn from(view: IncidentView) -> Self {
        let record = view.record;
        IncidentResult {
            process_definition_id: record.bpmn_process_id,
            // Zeebe's error type names, e.g. JOB_NO_RETRIES.
            error_type: serde_json::to_value(record.error_type).unwrap_or(Value::Null),
            error_message: record.error_message,
            element_id: record.element_id,
            creation_time: None,
            // The engine keeps open incidents only; a resolved one is gone.
            state: "ACTIVE",
            tenant_id: record.tenant_id,
            incident_key: key_text(view.key),
            process_definition_key: record.process_definition_key.to_string(),
            process_instance_key: record.process_instance_key.to_string(),
            root_process_instance_key: optional_key_text(record.process_instance_key),
            element_instance_key: record.element_instance_key.to_string(),
            job_key: optional_key_text(record.job_key),
        }
    }
}

pub async fn get(
    State(state): State<SharedState>,
    KeyParam(incident_key): KeyParam,
) -> Result<Json<IncidentResult>, Problem> {
    let not_found = || Problem::not_found(format!("Incident with key '{incident_key}' not found"));
    let partition = state
        .dispatch
        .partition_of(incident_key, "incident")
        .map_err(|_| not_found())?;
    match state
        .dispatch
        .query(
            partition,
            Query::Incident { key: incident_key },
            state.settings.request_timeout,
        )
        .await?
    {
        QueryResult::Incident(Some(view)) => Ok(Json(view.into())),
        QueryResult::Incident(None) => Err(not_found()),
        _ => Err(wrong_result()),
    }
}

/// `POST /v2/incidents/search`: needs a `processInstanceKey` or `incidentKey` filter.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult>, Problem> {
    let request: SearchRequest = parse_optional_body(&body)?;
    run_search(&state, request).await
}

/// `POST /v2/process-instances/{processInstanceKey}/incidents/search`.
pub async fn search_of_instance(
    State(state): State<SharedState>,
    KeyParam(process_instance_key): KeyParam,
    Body(body): Body,
) -> Result<Json<SearchResult>, Problem> {
    let mut request: SearchRequest = parse_optional_body(&body)?;
    if let Some(other) = request.filter_key("processInstanceKey")?
        && other != process_instance_key
    {
        return Err(Problem::invalid_argument(format!(
            "The filter's processInstanceKey '{other}' differs from the path's \
             '{process_instance_key}'"
        )));
    }
    request.filter.insert(
        "processInstanceKey".to_owned(),
        Value::String(key_text(process_instance_key)),
    );
    run_search(&state, request).await
}

async fn run_search(
    state: &SharedState,
    request: SearchRequest,
) -> Result<Json<SearchResult>, Problem> {
    request.validate(INCIDENT_FIELDS)?;
    let timeout = state.settings.request_timeout;
    let views = if let Some(instance) = request.filter_key("processInstanceKey")? {
        let Ok(partition) = state.dispatch.partition_of(instance, "process instance") else {
            return Ok(Json(request.apply(Vec::new())?));
        };
        let query = Query::IncidentsOfInstance {
            process_instance_key: instance,
        };
        match state.dispatch.query(partition, query, timeout).await? {
            QueryResult::Incidents(views) => views,
            _ => return Err(wrong_result()),
        }
    } else if let Some(incident_key) = request.filter_key("incidentKey")? {
        let Ok(partition) = state.dispatch.partition_of(incident_key, "incident") else {
            return Ok(Json(request.apply(Vec::new())?));
        };
        let query = Query::Incident { key: incident_key };
        match state.dispatch.query(partition, query, timeout).await? {
            QueryResult::Incident(view) => view.into_iter().collect(),
            _ => return Err(wrong_result()),
        }
    } else {
        return Err(Problem::invalid_argument(
            "Rill answers incident searches from broker state, not a search index: filter by \
             processInstanceKey or incidentKey",
        ));
    };
    let items = views
        .into_iter()
        .map(|view| serde_json::to_value(IncidentResult::from(view)).unwrap_or(Value::Null))
        .collect();
    Ok(Json(request.apply(items)?))
}

fn wrong_result() -> Problem {
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "INTERNAL",
        "The broker answered an incident query with another kind of result",
    )
}
