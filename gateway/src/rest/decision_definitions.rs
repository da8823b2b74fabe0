//! Decision definitions and decision requirements: search, get and XML, from the
//! history store, in Camunda 8.8's shapes. Like process definitions they are the same
//! on every partition, so the deployment partition alone is asked.

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use rill_protocol::history::{
    DecisionDefinitionField as D, DecisionRequirementsField as R, HistoricDecisionDefinition,
    HistoricDecisionRequirements,
};
use serde::Serialize;

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::{Body, KeyParam, SharedState, key_text};
use crate::ops::{self, ClientError};

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

/// `GET /v2/decision-definitions/{decisionDefinitionKey}`.
pub async fn get_definition(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<DecisionDefinitionResult>, ClientError> {
    Ok(Json(ops::decision_definition(&state, key).await?.into()))
}

/// `GET /v2/decision-requirements/{decisionRequirementsKey}`.
pub async fn get_requirements(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<DecisionRequirementsResult>, ClientError> {
    Ok(Json(ops::decision_requirements(&state, key).await?.into()))
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
    Ok(xml_response(
        ops::decision_definition_xml(&state, key).await?,
    ))
}

/// `GET /v2/decision-requirements/{decisionRequirementsKey}/xml`.
pub async fn requirements_xml(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Response, ClientError> {
    Ok(xml_response(
        ops::decision_requirements_xml(&state, key).await?,
    ))
}
