//! Decision instances (each decision evaluated by a business rule task or the evaluate
//! API): `POST /v2/decision-instances/search` over every partition and `GET
//! /v2/decision-instances/{decisionEvaluationInstanceKey}` with the inputs and matched
//! rules, from the history store, in Camunda 8.8's shapes.

use axum::Json;
use axum::extract::State;
use rill_protocol::history::{DecisionInstanceField as F, HistoricDecisionInstance};
use serde::Serialize;

use super::history_search::{Kind, SearchEntity, SearchResult, run};
use super::{Body, KeyParam, SharedState, date_text, key_text};
use crate::ops::{self, ClientError};

/// Camunda's `DecisionInstanceResult`; keys without a value are left out.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DecisionInstanceResult {
    decision_evaluation_instance_key: String,
    state: String,
    evaluation_date: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    evaluation_failure: String,
    decision_definition_id: String,
    decision_definition_name: String,
    decision_definition_version: i32,
    decision_definition_type: String,
    result: String,
    tenant_id: String,
    decision_evaluation_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_definition_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_instance_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision_definition_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    element_instance_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    root_decision_definition_key: Option<String>,
}

fn known(key: i64) -> Option<String> {
    (key >= 0).then(|| key.to_string())
}

impl From<HistoricDecisionInstance> for DecisionInstanceResult {
    fn from(instance: HistoricDecisionInstance) -> Self {
        DecisionInstanceResult {
            decision_evaluation_instance_key: key_text(instance.key),
            state: instance.state,
            evaluation_date: date_text(instance.evaluation_date),
            evaluation_failure: instance.evaluation_failure,
            decision_definition_id: instance.decision_id,
            decision_definition_name: instance.decision_name,
            decision_definition_version: instance.decision_version,
            decision_definition_type: instance.decision_type,
            result: instance.result,
            tenant_id: instance.tenant_id,
            decision_evaluation_key: key_text(instance.evaluation_key),
            process_definition_key: known(instance.process_definition_key),
            process_instance_key: known(instance.process_instance_key),
            decision_definition_key: known(instance.decision_key),
            element_instance_key: known(instance.element_instance_key),
            root_decision_definition_key: known(instance.root_decision_key),
        }
    }
}

impl SearchEntity for HistoricDecisionInstance {
    const KEY_FIELD: F = F::DecisionEvaluationInstanceKey;
    const TIME_FIELD: Option<F> = Some(F::EvaluationDate);
    type Item = DecisionInstanceResult;

    fn kind(field: F) -> Kind {
        match field {
            F::DecisionEvaluationInstanceKey
            | F::DecisionEvaluationKey
            | F::ProcessDefinitionKey
            | F::ProcessInstanceKey
            | F::DecisionDefinitionKey
            | F::ElementInstanceKey
            | F::RootDecisionDefinitionKey => Kind::Key,
            F::State => Kind::Enum(HistoricDecisionInstance::STATES),
            F::DecisionDefinitionType => Kind::Enum(HistoricDecisionInstance::TYPES),
            F::EvaluationDate => Kind::Date,
            F::DecisionDefinitionVersion => Kind::Int,
            F::EvaluationFailure
            | F::DecisionDefinitionId
            | F::DecisionDefinitionName
            | F::TenantId => Kind::Text,
        }
    }
}

/// `POST /v2/decision-instances/search`.
pub async fn search(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<SearchResult<DecisionInstanceResult>>, ClientError> {
    run::<HistoricDecisionInstance>(&state, &body, None)
        .await
        .map(Json)
}

/// Camunda's `DecisionInstanceGetQueryResult`: the instance with its inputs and rules.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DecisionInstanceDetail {
    #[serde(flatten)]
    instance: DecisionInstanceResult,
    evaluated_inputs: Vec<EvaluatedInput>,
    matched_rules: Vec<MatchedRule>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct EvaluatedInput {
    input_id: String,
    input_name: String,
    input_value: String,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct MatchedRule {
    rule_id: String,
    rule_index: i32,
    evaluated_outputs: Vec<EvaluatedOutput>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
struct EvaluatedOutput {
    output_id: String,
    output_name: String,
    output_value: String,
}

/// `GET /v2/decision-instances/{decisionEvaluationInstanceKey}`.
pub async fn get(
    State(state): State<SharedState>,
    KeyParam(key): KeyParam,
) -> Result<Json<DecisionInstanceDetail>, ClientError> {
    let mut instance = ops::decision_instance(&state, key).await?;
    let evaluated_inputs = std::mem::take(&mut instance.evaluated_inputs)
        .into_iter()
        .map(|(input_id, input_name, input_value)| EvaluatedInput {
            input_id,
            input_name,
            input_value,
        })
        .collect();
    let matched_rules = std::mem::take(&mut instance.matched_rules)
        .into_iter()
        .map(|(rule_id, rule_index, outputs)| MatchedRule {
            rule_id,
            rule_index,
            evaluated_outputs: outputs
                .into_iter()
                .map(|(output_id, output_name, output_value)| EvaluatedOutput {
                    output_id,
                    output_name,
                    output_value,
                })
                .collect(),
        })
        .collect();
    Ok(Json(DecisionInstanceDetail {
        instance: instance.into(),
        evaluated_inputs,
        matched_rules,
    }))
}
