//! Decisions: `POST /v2/decision-definitions/evaluation` (by id or key), and the
//! `decisionDefinition` / `decisionRequirements` entries of a deploy answer, in Camunda
//! 8.8's shapes.

use axum::Json;
use axum::extract::State;
use rill_protocol::DecisionSelector;
use rill_protocol::value::{
    DecisionEvaluationRecord, DecisionRecord, DecisionRequirementsMetadata, EvaluatedDecisionValue,
};
use serde::{Deserialize, Serialize};

use super::json::{KeyString, Variables, parse_body};
use super::{Body, SharedState, check_tenant, key_text};
use crate::ops::{self, ClientError};

/// `DeploymentDecisionResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeploymentDecision {
    decision_definition_id: String,
    version: i32,
    name: String,
    tenant_id: String,
    decision_requirements_id: String,
    decision_definition_key: String,
    decision_requirements_key: String,
}

impl From<&DecisionRecord> for DeploymentDecision {
    fn from(decision: &DecisionRecord) -> Self {
        DeploymentDecision {
            decision_definition_id: decision.decision_id.clone(),
            version: decision.version,
            name: decision.decision_name.clone(),
            tenant_id: decision.tenant_id.clone(),
            decision_requirements_id: decision.decision_requirements_id.clone(),
            decision_definition_key: decision.decision_key.to_string(),
            decision_requirements_key: decision.decision_requirements_key.to_string(),
        }
    }
}

/// `DeploymentDecisionRequirementsResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeploymentDecisionRequirements {
    decision_requirements_id: String,
    decision_requirements_name: String,
    version: i32,
    resource_name: String,
    tenant_id: String,
    decision_requirements_key: String,
}

impl From<&DecisionRequirementsMetadata> for DeploymentDecisionRequirements {
    fn from(drg: &DecisionRequirementsMetadata) -> Self {
        DeploymentDecisionRequirements {
            decision_requirements_id: drg.decision_requirements_id.clone(),
            decision_requirements_name: drg.decision_requirements_name.clone(),
            version: drg.decision_requirements_version,
            resource_name: drg.resource_name.clone(),
            tenant_id: drg.tenant_id.clone(),
            decision_requirements_key: drg.decision_requirements_key.to_string(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EvaluateRequest {
    decision_definition_id: Option<String>,
    decision_definition_key: Option<KeyString>,
    #[serde(default)]
    variables: Variables,
    tenant_id: Option<String>,
}

/// `EvaluateDecisionResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateResult {
    decision_definition_id: String,
    decision_definition_key: String,
    decision_definition_name: String,
    decision_definition_version: i32,
    decision_evaluation_key: String,
    /// Deprecated in 8.8 in favour of `decisionEvaluationKey`; the same key.
    decision_instance_key: String,
    decision_requirements_id: String,
    decision_requirements_key: String,
    evaluated_decisions: Vec<EvaluatedDecisionResult>,
    failed_decision_definition_id: String,
    failure_message: String,
    output: String,
    tenant_id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EvaluatedDecisionResult {
    decision_definition_id: String,
    decision_definition_name: String,
    decision_definition_version: i32,
    decision_definition_type: String,
    output: String,
    tenant_id: String,
    matched_rules: Vec<MatchedRule>,
    evaluated_inputs: Vec<EvaluatedInput>,
    decision_definition_key: String,
    decision_evaluation_instance_key: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MatchedRule {
    rule_id: String,
    rule_index: i32,
    evaluated_outputs: Vec<EvaluatedOutput>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EvaluatedOutput {
    output_id: String,
    output_name: String,
    output_value: String,
    rule_id: String,
    rule_index: i32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EvaluatedInput {
    input_id: String,
    input_name: String,
    input_value: String,
}

fn evaluated_decision(decision: &EvaluatedDecisionValue) -> EvaluatedDecisionResult {
    EvaluatedDecisionResult {
        decision_definition_id: decision.decision_id.clone(),
        decision_definition_name: decision.decision_name.clone(),
        decision_definition_version: decision.decision_version,
        decision_definition_type: decision.decision_type.clone(),
        output: decision.decision_output.clone(),
        tenant_id: decision.tenant_id.clone(),
        matched_rules: decision
            .matched_rules
            .iter()
            .map(|rule| MatchedRule {
                rule_id: rule.rule_id.clone(),
                rule_index: rule.rule_index,
                evaluated_outputs: rule
                    .evaluated_outputs
                    .iter()
                    .map(|output| EvaluatedOutput {
                        output_id: output.output_id.clone(),
                        output_name: output.output_name.clone(),
                        output_value: output.output_value.clone(),
                        rule_id: rule.rule_id.clone(),
                        rule_index: rule.rule_index,
                    })
                    .collect(),
            })
            .collect(),
        evaluated_inputs: decision
            .evaluated_inputs
            .iter()
            .map(|input| EvaluatedInput {
                input_id: input.input_id.clone(),
                input_name: input.input_name.clone(),
                input_value: input.input_value.clone(),
            })
            .collect(),
        decision_definition_key: decision.decision_key.to_string(),
        decision_evaluation_instance_key: decision.decision_evaluation_instance_key.clone(),
    }
}

fn evaluate_result(key: rill_protocol::Key, record: &DecisionEvaluationRecord) -> EvaluateResult {
    EvaluateResult {
        decision_definition_id: record.decision_id.clone(),
        decision_definition_key: record.decision_key.to_string(),
        decision_definition_name: record.decision_name.clone(),
        decision_definition_version: record.decision_version,
        decision_evaluation_key: key_text(key),
        decision_instance_key: key_text(key),
        decision_requirements_id: record.decision_requirements_id.clone(),
        decision_requirements_key: record.decision_requirements_key.to_string(),
        evaluated_decisions: record
            .evaluated_decisions
            .iter()
            .map(evaluated_decision)
            .collect(),
        failed_decision_definition_id: record.failed_decision_id.clone(),
        failure_message: record.evaluation_failure_message.clone(),
        output: record.decision_output.clone(),
        tenant_id: record.tenant_id.clone(),
    }
}

/// `POST /v2/decision-definitions/evaluation`.
pub async fn evaluate(
    State(state): State<SharedState>,
    Body(body): Body,
) -> Result<Json<EvaluateResult>, ClientError> {
    let request: EvaluateRequest = parse_body(&body)?;
    check_tenant("tenantId", request.tenant_id.as_deref())?;
    let decision = match (
        request.decision_definition_id,
        request.decision_definition_key,
    ) {
        (Some(_), Some(_)) => {
            return Err(ClientError::invalid_argument(
                "Only one of [decisionDefinitionId, decisionDefinitionKey] is allowed",
            ));
        }
        (None, None) => {
            return Err(ClientError::invalid_argument(
                "At least one of [decisionDefinitionId, decisionDefinitionKey] is required",
            ));
        }
        (Some(id), None) if id.trim().is_empty() => {
            return Err(ClientError::invalid_field(
                "decisionDefinitionId",
                "No decisionDefinitionId provided",
            ));
        }
        (Some(id), None) => DecisionSelector::ById(id),
        (None, Some(KeyString(key))) => DecisionSelector::ByKey(key),
    };
    let variables = request.variables.checked("variables", &state.settings)?;
    let (key, record) = ops::evaluate_decision(&state, decision, variables).await?;
    Ok(Json(evaluate_result(key, &record)))
}
