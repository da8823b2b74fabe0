//! Decision definitions and decision requirements: search, get and XML, from the
//! history store, in Camunda 8.8's shapes. Like process definitions they are the same
//! on every partition, so the deployment partition alone is asked.

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{
    DecisionDefinitionField as D, DecisionRequirementsField as R, HistoricDecisionDefinition,
    HistoricDecisionRequirements, HistoryQuery, HistoryResult, Page, Search,
};
use rill_protocol::{Key, PartitionId, Query, QueryResult};
use serde::Serialize;

use super::deployments::DEPLOYMENT_PARTITION;
use super::history_search::{Kind, SearchEntity, SearchResult, fetch, run};
use super::{Body, KeyParam, SharedState, key_text};
use crate::ops::ClientError;

/// Camunda's `DecisionDefinitionResult`.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DecisionDefinitionResult {
    decision_definition_id: String,
    name: String,
    version: i32,
    decision_requirements_id: String,
    tenant_id: String,
    decision_definition_key: String,
    decision_requirements_key: String,
}

impl From<HistoricDecisionDefinition> for DecisionDefinitionResult {
    fn from(decision: HistoricDecisionDefinition) -> Self {
        DecisionDefinitionResult {
            decision_definition_id: decision.decision_id,
            name: decision.name,
            version: decision.version,
            decision_requirements_id: decision.decision_requirements_id,
            tenant_id: decision.tenant_id,
            decision_definition_key: key_text(decision.key),
            decision_requirements_key: key_text(decision.decision_requirements_key),
        }
    }
}

impl SearchEntity for HistoricDecisionDefinition {
    const WHAT: &'static str = "decision definition";
    const KEY_FIELD: D = D::DecisionDefinitionKey;
    type Item = DecisionDefinitionResult;

    fn kind(field: D) -> Kind {
        match field {
            D::DecisionDefinitionKey | D::DecisionRequirementsKey => Kind::Key,
            D::DecisionDefinitionId | D::Name | D::DecisionRequirementsId | D::TenantId => {
                Kind::Text
            }
            D::Version => Kind::Int,
        }
    }

    fn query(search: Search<D>) -> Query {
        Query::History(HistoryQuery::SearchDecisionDefinitions(search))
    }

    fn page(result: QueryResult) -> Option<Page<Self>> {
        match result {
            QueryResult::History(HistoryResult::DecisionDefinitions(page)) => Some(page),
            _ => None,
        }
    }

    fn partitions(_count: u16) -> Vec<PartitionId> {
        vec![DEPLOYMENT_PARTITION]
    }
}

/// Camunda's `DecisionRequirementsResult`.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRequirementsResult {
    decision_requirements_name: String,
    version: i32,
    decision_requirements_id: String,
    resource_name: String,
    tenant_id: String,
    decision_requirements_key: String,
}

impl From<HistoricDecisionRequirements> for DecisionRequirementsResult {
    fn from(drg: HistoricDecisionRequirements) -> Self {
        DecisionRequirementsResult {
            decision_requirements_name: drg.name,
            version: drg.version,
            decision_requirements_id: drg.decision_requirements_id,
            resource_name: drg.resource_name,
            tenant_id: drg.tenant_id,
            decision_requirements_key: key_text(drg.key),
        }
    }
}

impl SearchEntity for HistoricDecisionRequirements {
    const WHAT: &'static str = "decision requirements";
    const KEY_FIELD: R = R::DecisionRequirementsKey;
    type Item = DecisionRequirementsResult;

    fn kind(field: R) -> Kind {
        match field {
            R::DecisionRequirementsKey => Kind::Key,
            R::DecisionRequirementsId
            | R::DecisionRequirementsName
            | R::ResourceName
            | R::TenantId => Kind::Text,
            R::Version => Kind::Int,
        }
    }

    fn query(search: Search<R>) -> Query {
        Query::History(HistoryQuery::SearchDecisionRequirements(search))
    }

    fn page(result: QueryResult) -> Option<Page<Self>> {
        match result {
            QueryResult::History(HistoryResult::DecisionRequirementsPage(page)) => Some(page),
            _ => None,
        }
    }

    fn partitions(_count: u16) -> Vec<PartitionId> {
        vec![DEPLOYMENT_PARTITION]
    }
}

/// `POST /v2/decision-definitions/search`.
pub async fn search_definitions(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<DecisionDefinitionResult>>, ClientError> {
    run::<HistoricDecisionDefinition>(&state, &body, None)
        .await
        .map(Json)
}

/// `POST /v2/decision-requirements/search`.
pub async fn search_requirements(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<DecisionRequirementsResult>>, ClientError> {
    run::<HistoricDecisionRequirements>(&state, &body, None)
        .await
        .map(Json)
}

fn definition_not_found(key: Key) -> ClientError {
    ClientError::not_found(format!("Decision definition with key '{key}' not found"))
}

fn requirements_not_found(key: Key) -> ClientError {
    ClientError::not_found(format!("Decision requirements with key '{key}' not found"))
}

/// `GET /v2/decision-definitions/{decisionDefinitionKey}`.
pub async fn get_definition(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<DecisionDefinitionResult>, ClientError> {
    let found = fetch(
        &state,
        key,
        "decision definition",
        HistoryQuery::DecisionDefinition { key },
        |result| match result {
            HistoryResult::DecisionDefinition(found) => Some(found),
            _ => None,
        },
    )
    .await?;
    found
        .map(|d| Json(d.into()))
        .ok_or_else(|| definition_not_found(key))
}

/// `GET /v2/decision-requirements/{decisionRequirementsKey}`.
pub async fn get_requirements(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<DecisionRequirementsResult>, ClientError> {
    let found = fetch(
        &state,
        key,
        "decision requirements",
        HistoryQuery::DecisionRequirements { key },
        |result| match result {
            HistoryResult::DecisionRequirements(found) => Some(found),
            _ => None,
        },
    )
    .await?;
    found
        .map(|d| Json(d.into()))
        .ok_or_else(|| requirements_not_found(key))
}

async fn xml(state: &SharedState, key: Key, what: &str) -> Result<Option<String>, ClientError> {
    fetch(
        state,
        key,
        what,
        HistoryQuery::DecisionXml { key },
        |result| match result {
            HistoryResult::DecisionXml(found) => Some(found),
            _ => None,
        },
    )
    .await
}

fn xml_response(xml: String) -> Response {
    ([(header::CONTENT_TYPE, "text/xml; charset=utf-8")], xml).into_response()
}

/// `GET /v2/decision-definitions/{decisionDefinitionKey}/xml`: the DMN resource the
/// decision was deployed in.
pub async fn definition_xml(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    let found = xml(&state, key, "decision definition").await?;
    // The key of a decision requirements graph also finds its XML: only a decision's.
    let is_decision = fetch(
        &state,
        key,
        "decision definition",
        HistoryQuery::DecisionDefinition { key },
        |result| match result {
            HistoryResult::DecisionDefinition(found) => Some(found),
            _ => None,
        },
    )
    .await?
    .is_some();
    match found {
        Some(xml) if is_decision => Ok(xml_response(xml)),
        _ => Err(definition_not_found(key)),
    }
}

/// `GET /v2/decision-requirements/{decisionRequirementsKey}/xml`.
pub async fn requirements_xml(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    match xml(&state, key, "decision requirements").await? {
        Some(xml) => Ok(xml_response(xml)),
        None => Err(requirements_not_found(key)),
    }
}
