//! Incidents: resolve one, read one, and search them (open and resolved), from every
//! partition's history store.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{
    Condition, FieldValue, HistoricIncident, INCIDENT_ERROR_TYPES, IncidentField as F,
    IncidentState, incident_error_type_name,
};
use serde::{Deserialize, Serialize};

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::json::{optional_long, parse_optional_body};
use super::{Body, KeyParam, SharedState, date_text, key_text, operation_reference};
use crate::ops::{self, ClientError};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResolutionRequest {
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

pub async fn resolve(
    State(state): State<SharedState>,
    KeyParam(incident_key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: ResolutionRequest = parse_optional_body(&body)?;
    let reference = operation_reference(request.operation_reference)?;
    ops::resolve_incident(&state, incident_key, reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Camunda's `IncidentResult`. Optional fields without a value are left out.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct IncidentResult {
    process_definition_id: String,
    error_type: &'static str,
    error_message: String,
    element_id: String,
    creation_time: String,
    state: &'static str,
    tenant_id: String,
    incident_key: String,
    process_definition_key: String,
    process_instance_key: String,
    /// The top instance of its call hierarchy.
    root_process_instance_key: String,
    element_instance_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    job_key: Option<String>,
}

impl From<HistoricIncident> for IncidentResult {
    fn from(incident: HistoricIncident) -> Self {
        IncidentResult {
            process_definition_id: incident.bpmn_process_id,
            error_type: incident_error_type_name(incident.error_type),
            error_message: incident.error_message,
            element_id: incident.element_id,
            creation_time: date_text(incident.creation_time),
            state: incident.state.name(),
            tenant_id: incident.tenant_id,
            incident_key: key_text(incident.key),
            process_definition_key: key_text(incident.process_definition_key),
            process_instance_key: key_text(incident.process_instance_key),
            root_process_instance_key: key_text(incident.root_process_instance_key),
            element_instance_key: key_text(incident.element_instance_key),
            job_key: incident.job_key.map(key_text),
        }
    }
}

impl SearchEntity for HistoricIncident {
    const KEY_FIELD: F = F::IncidentKey;
    const TIME_FIELD: Option<F> = Some(F::CreationTime);
    type Item = IncidentResult;

    fn kind(field: F) -> Kind {
        match field {
            F::ProcessDefinitionId | F::ErrorMessage | F::ElementId | F::TenantId => Kind::Text,
            F::ErrorType => Kind::Enum(INCIDENT_ERROR_TYPES),
            F::CreationTime => Kind::Date,
            F::State => Kind::Enum(IncidentState::NAMES),
            F::IncidentKey
            | F::ProcessDefinitionKey
            | F::ProcessInstanceKey
            | F::ElementInstanceKey
            | F::JobKey => Kind::Key,
        }
    }
}

/// `GET /v2/incidents/{incidentKey}`: open or resolved, from the history store.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(incident_key): KeyParam,
) -> Result<Json<IncidentResult>, ClientError> {
    Ok(Json(ops::get_incident(&state, incident_key).await?.into()))
}

/// `POST /v2/incidents/search`: every state, no filter required.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<IncidentResult>>, ClientError> {
    run::<HistoricIncident>(&state, &body, None).await.map(Json)
}

/// `POST /v2/process-instances/{processInstanceKey}/incidents/search`: a 404 for an
/// instance the history store does not know.
pub async fn search_of_instance(
    State(state): State<SharedState>,
    KeyParam(process_instance_key): KeyParam,
    Body(body): Body,
) -> Result<Json<SearchResult<IncidentResult>>, ClientError> {
    if !ops::instance_known(&state, process_instance_key).await? {
        return Err(ClientError::not_found(format!(
            "Process instance with key '{process_instance_key}' not found"
        )));
    }
    let only = (
        F::ProcessInstanceKey,
        Condition::Eq(FieldValue::Int(process_instance_key.get())),
    );
    run::<HistoricIncident>(&state, &body, Some(only))
        .await
        .map(Json)
}
