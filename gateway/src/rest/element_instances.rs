//! Element instances: `PUT /v2/element-instances/{elementInstanceKey}/variables`, and
//! their search and get from every partition's history store (the machinery is
//! `history_search`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rill_protocol::SetVariables;
use rill_protocol::history::{
    ELEMENT_TYPES, ElementInstanceField as F, ElementState, HistoricElementInstance,
    element_type_name,
};
use serde::{Deserialize, Serialize};

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::json::{Variables, optional_long, parse_body};
use super::{Body, KeyParam, SharedState, date_text, key_text, operation_reference};
use crate::ops::{self, ClientError};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetVariableRequest {
    variables: Option<Variables>,
    local: Option<bool>,
    #[serde(default, deserialize_with = "optional_long")]
    operation_reference: Option<i64>,
}

pub async fn set_variables(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Response, ClientError> {
    let request: SetVariableRequest = parse_body(&body)?;
    let Some(variables) = request.variables else {
        return Err(ClientError::invalid_field(
            "variables",
            "No variables provided",
        ));
    };
    let reference = operation_reference(request.operation_reference)?;
    let set = SetVariables {
        element_instance_key: key,
        variables: variables.checked("variables", &state.settings)?,
        local: request.local.unwrap_or(false),
    };
    ops::set_variables(&state, set, reference).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Camunda's `ElementInstanceResult`. `elementName` is the name drawn in the model, or
/// the element id for an element without one (as Camunda shows it).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ElementInstanceResult {
    process_definition_id: String,
    start_date: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_date: Option<String>,
    element_id: String,
    element_name: String,
    #[serde(rename = "type")]
    element_type: &'static str,
    state: &'static str,
    has_incident: bool,
    tenant_id: String,
    element_instance_key: String,
    process_instance_key: String,
    /// The top instance of its call hierarchy.
    root_process_instance_key: String,
    process_definition_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    incident_key: Option<String>,
}

impl From<HistoricElementInstance> for ElementInstanceResult {
    fn from(element: HistoricElementInstance) -> Self {
        let element_name = element.display_name().to_owned();
        ElementInstanceResult {
            process_definition_id: element.bpmn_process_id,
            start_date: date_text(element.start_date),
            end_date: element.end_date.map(date_text),
            element_name,
            element_id: element.element_id,
            element_type: element_type_name(element.element_type),
            state: element.state.name(),
            has_incident: element.incident_key.is_some(),
            tenant_id: element.tenant_id,
            element_instance_key: key_text(element.key),
            process_instance_key: key_text(element.process_instance_key),
            root_process_instance_key: key_text(element.root_process_instance_key),
            process_definition_key: key_text(element.process_definition_key),
            incident_key: element.incident_key.map(key_text),
        }
    }
}

impl SearchEntity for HistoricElementInstance {
    const KEY_FIELD: F = F::ElementInstanceKey;
    const TIME_FIELD: Option<F> = Some(F::StartDate);
    type Item = ElementInstanceResult;

    fn kind(field: F) -> Kind {
        match field {
            F::ElementInstanceKey
            | F::ProcessInstanceKey
            | F::ProcessDefinitionKey
            | F::IncidentKey
            | F::ElementInstanceScopeKey => Kind::Key,
            F::ProcessDefinitionId | F::ElementId | F::ElementName | F::TenantId => Kind::Text,
            F::StartDate | F::EndDate => Kind::Date,
            F::Type => Kind::Enum(ELEMENT_TYPES),
            F::State => Kind::Enum(ElementState::NAMES),
            F::HasIncident => Kind::Bool,
        }
    }
}

/// `POST /v2/element-instances/search`.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<ElementInstanceResult>>, ClientError> {
    run::<HistoricElementInstance>(&state, &body, None)
        .await
        .map(Json)
}

/// `GET /v2/element-instances/{elementInstanceKey}`.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<ElementInstanceResult>, ClientError> {
    Ok(Json(ops::element_instance(&state, key).await?.into()))
}
