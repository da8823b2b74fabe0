//! Variables: `POST /v2/variables/search` (no filter required) and `GET
//! /v2/variables/{variableKey}`, from every partition's history store (the machinery is
//! `history_search`). A variable's entry holds its latest value.

use axum::Json;
use axum::extract::State;
use rill_protocol::Key;
use rill_protocol::history::{HistoricVariable, VARIABLE_TRUNCATE_LIMIT, VariableField as F};
use serde::{Deserialize, Serialize};

use super::history_search::{Kind, SearchEntity, run};
use super::{Body, KeyParam, SharedState, key_text};
use crate::ops::{self, ClientError};

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchParams {
    /// False: whole values. Otherwise values longer than `VARIABLE_TRUNCATE_LIMIT` bytes
    /// are cut there (at a character boundary) with `isTruncated` set.
    truncate_values: Option<bool>,
}

/// Camunda's `VariableSearchResult` (and, with the whole value and no `isTruncated`,
/// `VariableResult`).
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct VariableResult {
    name: String,
    value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_truncated: Option<bool>,
    tenant_id: String,
    variable_key: String,
    scope_key: String,
    process_instance_key: String,
    /// The top instance of its call hierarchy.
    root_process_instance_key: String,
}

impl VariableResult {
    /// The variable's scope key and its process instance's key.
    pub(super) fn scopes(&self) -> (Key, Key) {
        let key = |text: &str| Key(text.parse().unwrap_or(-1));
        (key(&self.scope_key), key(&self.process_instance_key))
    }
}

impl From<HistoricVariable> for VariableResult {
    fn from(variable: HistoricVariable) -> Self {
        VariableResult {
            name: variable.name,
            value: variable.value,
            is_truncated: Some(false),
            tenant_id: variable.tenant_id,
            variable_key: key_text(variable.key),
            scope_key: key_text(variable.scope_key),
            process_instance_key: key_text(variable.process_instance_key),
            root_process_instance_key: key_text(variable.root_process_instance_key),
        }
    }
}

impl VariableResult {
    fn truncate(mut self) -> Self {
        if self.value.len() > VARIABLE_TRUNCATE_LIMIT {
            let mut at = VARIABLE_TRUNCATE_LIMIT;
            while !self.value.is_char_boundary(at) {
                at -= 1;
            }
            self.value.truncate(at);
            self.is_truncated = Some(true);
        }
        self
    }
}

impl SearchEntity for HistoricVariable {
    const KEY_FIELD: F = F::VariableKey;
    type Item = VariableResult;

    fn kind(field: F) -> Kind {
        match field {
            F::Name | F::Value | F::TenantId => Kind::Text,
            F::IsTruncated => Kind::Bool,
            F::VariableKey | F::ScopeKey | F::ProcessInstanceKey => Kind::Key,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariableSearchResult {
    items: Vec<VariableResult>,
    page: super::history_search::PageResult,
}

pub async fn search(
    State(state): State<SharedState>,
    params: Result<axum::extract::Query<SearchParams>, axum::extract::rejection::QueryRejection>,
    Body(body): Body,
) -> Result<Json<VariableSearchResult>, ClientError> {
    search_in(&state, params, &body, None).await
}

/// A variable search with one more condition (a user task's scopes).
pub(super) async fn search_in(
    state: &SharedState,
    params: Result<axum::extract::Query<SearchParams>, axum::extract::rejection::QueryRejection>,
    body: &[u8],
    extra: Option<(F, rill_protocol::history::Condition)>,
) -> Result<Json<VariableSearchResult>, ClientError> {
    let params = params.map_err(|rejection| {
        ClientError::invalid_argument(format!(
            "Invalid query parameters: {}",
            rejection.body_text()
        ))
    })?;
    let result = run::<HistoricVariable>(state, body, extra).await?;
    let truncate = params.0.truncate_values != Some(false);
    Ok(Json(VariableSearchResult {
        items: result
            .items
            .into_iter()
            .map(|v| if truncate { v.truncate() } else { v })
            .collect(),
        page: result.page,
    }))
}

/// `GET /v2/variables/{variableKey}`: the whole value.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<VariableResult>, ClientError> {
    let mut result = VariableResult::from(ops::variable(&state, key).await?);
    result.is_truncated = None;
    Ok(Json(result))
}
