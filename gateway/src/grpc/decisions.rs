//! EvaluateDecision and the decision entries of a deploy answer, in Zeebe's messages.
//! The evaluation is the REST API's (`rest::decisions::submit_evaluation`): one command,
//! answered with the DECISION_EVALUATION event, EVALUATED or FAILED.

use rill_protocol::DecisionSelector;
use rill_protocol::value::{
    DecisionEvaluationRecord, DecisionRecord, DecisionRequirementsMetadata, EvaluatedDecisionValue,
    FormMetadata,
};
use tonic::Status;

use super::convert::{invalid, tenant, tenant_text, variables};
use super::proto;
use crate::ops::{self, ClientError, SharedState};

/// Which decision a request names: a key takes precedence over an id, as in Zeebe.
fn selector(request: &proto::EvaluateDecisionRequest) -> Result<DecisionSelector, Status> {
    if request.decision_key < 0 {
        return Err(invalid(
            "decisionKey",
            format!(
                "expected a key (a positive number), but got {}",
                request.decision_key
            ),
        ));
    }
    if request.decision_key > 0 {
        return Ok(DecisionSelector::ByKey(rill_protocol::Key(
            request.decision_key,
        )));
    }
    if request.decision_id.trim().is_empty() {
        return Err(ClientError::invalid_argument(
            "Expected either a decision key or a decision id, but none provided: give \
             'decisionKey' or 'decisionId'",
        )
        .into());
    }
    Ok(DecisionSelector::ById(request.decision_id.clone()))
}

pub async fn evaluate(
    state: &SharedState,
    request: proto::EvaluateDecisionRequest,
) -> Result<proto::EvaluateDecisionResponse, Status> {
    tenant("tenantId", &request.tenant_id)?;
    let decision = selector(&request)?;
    let variables = variables(
        "variables",
        &request.variables,
        state.settings.max_variable_document_size,
    )?;
    let (key, record) = ops::evaluate_decision(state, decision, variables).await?;
    Ok(evaluation_response(key.get(), record))
}

fn evaluation_response(
    key: i64,
    record: DecisionEvaluationRecord,
) -> proto::EvaluateDecisionResponse {
    proto::EvaluateDecisionResponse {
        decision_key: record.decision_key,
        decision_id: record.decision_id,
        decision_name: record.decision_name,
        decision_version: record.decision_version,
        decision_requirements_id: record.decision_requirements_id,
        decision_requirements_key: record.decision_requirements_key,
        decision_output: record.decision_output,
        evaluated_decisions: record
            .evaluated_decisions
            .into_iter()
            .map(evaluated_decision)
            .collect(),
        failed_decision_id: record.failed_decision_id,
        failure_message: record.evaluation_failure_message,
        tenant_id: tenant_text(record.tenant_id),
        // The deprecated instance key and its successor name the same event.
        decision_instance_key: key,
        decision_evaluation_key: key,
    }
}

fn evaluated_decision(decision: EvaluatedDecisionValue) -> proto::EvaluatedDecision {
    proto::EvaluatedDecision {
        decision_key: decision.decision_key,
        decision_id: decision.decision_id,
        decision_name: decision.decision_name,
        decision_version: decision.decision_version,
        decision_type: decision.decision_type,
        decision_output: decision.decision_output,
        matched_rules: decision
            .matched_rules
            .into_iter()
            .map(|rule| proto::MatchedDecisionRule {
                rule_id: rule.rule_id,
                rule_index: rule.rule_index,
                evaluated_outputs: rule
                    .evaluated_outputs
                    .into_iter()
                    .map(|output| proto::EvaluatedDecisionOutput {
                        output_id: output.output_id,
                        output_name: output.output_name,
                        output_value: output.output_value,
                    })
                    .collect(),
            })
            .collect(),
        evaluated_inputs: decision
            .evaluated_inputs
            .into_iter()
            .map(|input| proto::EvaluatedDecisionInput {
                input_id: input.input_id,
                input_name: input.input_name,
                input_value: input.input_value,
            })
            .collect(),
        tenant_id: tenant_text(decision.tenant_id),
        decision_evaluation_instance_key: decision.decision_evaluation_instance_key,
    }
}

pub fn decision_metadata(decision: DecisionRecord) -> proto::DecisionMetadata {
    proto::DecisionMetadata {
        dmn_decision_id: decision.decision_id,
        dmn_decision_name: decision.decision_name,
        version: decision.version,
        decision_key: decision.decision_key,
        dmn_decision_requirements_id: decision.decision_requirements_id,
        decision_requirements_key: decision.decision_requirements_key,
        tenant_id: tenant_text(decision.tenant_id),
    }
}

pub fn decision_requirements_metadata(
    drg: DecisionRequirementsMetadata,
) -> proto::DecisionRequirementsMetadata {
    proto::DecisionRequirementsMetadata {
        dmn_decision_requirements_id: drg.decision_requirements_id,
        dmn_decision_requirements_name: drg.decision_requirements_name,
        version: drg.decision_requirements_version,
        decision_requirements_key: drg.decision_requirements_key,
        resource_name: drg.resource_name,
        tenant_id: tenant_text(drg.tenant_id),
    }
}

pub fn form_metadata(form: FormMetadata) -> proto::FormMetadata {
    proto::FormMetadata {
        form_id: form.form_id,
        version: form.version,
        form_key: form.form_key,
        resource_name: form.resource_name,
        tenant_id: tenant_text(form.tenant_id),
    }
}
