//! Process definitions: search, get, XML and element statistics, from the history store.
//!
//! Every partition stores every definition (deployments are distributed to all of
//! them, and each one names its instances from its own copy), so searches and reads of
//! definitions ask the deployment partition alone: it takes every deployment first, and
//! asking one partition counts each definition once. Statistics count element instances,
//! which live on the partitions of their process instances: every partition is asked
//! and the counts are added up.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{
    HistoricProcessDefinition, HistoricProcessInstance, ProcessDefinitionField as F,
    ProcessInstanceField,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::history_search::{Kind, SearchEntity, SearchResult, filter, run};
use super::json::parse_optional_body;
use super::user_tasks::FormResult;
use super::{Body, KeyParam, SharedState, key_text};
use crate::ops::{self, ClientError};

/// Camunda's `ProcessDefinitionResult`. A model without a name or version tag has
/// neither field.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ProcessDefinitionResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    resource_name: String,
    version: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_tag: Option<String>,
    process_definition_id: String,
    tenant_id: String,
    process_definition_key: String,
    /// A form is linked on the none start event.
    has_start_form: bool,
}

impl From<HistoricProcessDefinition> for ProcessDefinitionResult {
    fn from(definition: HistoricProcessDefinition) -> Self {
        ProcessDefinitionResult {
            name: definition.name,
            resource_name: definition.resource_name,
            version: definition.version,
            version_tag: definition.version_tag,
            process_definition_id: definition.bpmn_process_id,
            tenant_id: definition.tenant_id,
            process_definition_key: key_text(definition.key),
            has_start_form: definition.start_form_id.is_some(),
        }
    }
}

impl SearchEntity for HistoricProcessDefinition {
    const KEY_FIELD: F = F::ProcessDefinitionKey;
    type Item = ProcessDefinitionResult;

    fn kind(field: F) -> Kind {
        match field {
            F::ProcessDefinitionKey => Kind::Key,
            F::Name | F::ResourceName | F::VersionTag | F::ProcessDefinitionId | F::TenantId => {
                Kind::Text
            }
            F::Version => Kind::Int,
            F::HasStartForm | F::IsLatestVersion => Kind::Bool,
        }
    }
}

/// `POST /v2/process-definitions/search`.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<ProcessDefinitionResult>>, ClientError> {
    run::<HistoricProcessDefinition>(&state, &body, None)
        .await
        .map(Json)
}

/// `GET /v2/process-definitions/{processDefinitionKey}`.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<ProcessDefinitionResult>, ClientError> {
    Ok(Json(ops::process_definition(&state, key).await?.into()))
}

/// `GET /v2/process-definitions/{processDefinitionKey}/xml`: the resource as deployed.
pub async fn xml(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    let xml = ops::process_definition_xml(&state, key).await?;
    Ok(([(header::CONTENT_TYPE, "text/xml; charset=utf-8")], xml).into_response())
}

/// `GET /v2/process-definitions/{processDefinitionKey}/form`: the form linked on the
/// definition's none start event, in its latest version (as Camunda's API serves it,
/// whatever the binding); 204 when the definition links none (an embedded form is not
/// served, as in Camunda) or the form is not deployed, 404 for an unknown definition.
pub async fn form(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    match ops::process_definition_form(&state, key).await? {
        Some(form) => Ok(Json(FormResult::from(form)).into_response()),
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StatisticsBody {
    #[serde(default)]
    filter: Map<String, Value>,
}

/// Filter fields of process instance searches that the statistics filter does not have
/// (the definition is the one in the path).
const NOT_STATISTICS_FIELDS: &[ProcessInstanceField] = &[
    ProcessInstanceField::ProcessDefinitionId,
    ProcessInstanceField::ProcessDefinitionName,
    ProcessInstanceField::ProcessDefinitionVersion,
    ProcessInstanceField::ProcessDefinitionVersionTag,
    ProcessInstanceField::ProcessDefinitionKey,
];

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ElementStatisticsResult {
    element_id: String,
    active: u64,
    canceled: u64,
    incidents: u64,
    completed: u64,
}

#[derive(Serialize, Debug)]
pub struct StatisticsResult {
    items: Vec<ElementStatisticsResult>,
}

/// `POST /v2/process-definitions/{processDefinitionKey}/statistics/element-instances`:
/// per element, its instances by state over the definition's process instances that
/// match the filter (every state unless the filter names one), from every partition.
pub async fn element_statistics(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
    Body(body): Body,
) -> Result<Json<StatisticsResult>, ClientError> {
    let body: StatisticsBody = parse_optional_body(&body)?;
    let conditions = filter::<HistoricProcessInstance>(&body.filter)?;
    if let Some((field, _)) = conditions
        .iter()
        .find(|(field, _)| NOT_STATISTICS_FIELDS.contains(field))
    {
        return Err(ClientError::invalid_argument(format!(
            "The filter field 'filter.{}' is not a field of the statistics filter (the \
             process definition is the one in the path)",
            field.name()
        )));
    }
    let by_element = ops::element_statistics(&state, key, conditions).await?;
    Ok(Json(StatisticsResult {
        items: by_element
            .into_iter()
            .map(|s| ElementStatisticsResult {
                element_id: s.element_id,
                active: s.active,
                canceled: s.canceled,
                incidents: s.incidents,
                completed: s.completed,
            })
            .collect(),
    }))
}
