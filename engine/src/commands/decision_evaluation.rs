//! Finding a deployed decision and evaluating it into a DECISION_EVALUATION record, for
//! the business rule task and the evaluate-decision command alike.
//!
//! DECISION_EVALUATION EVALUATE (the evaluate-decision API): the latest version of a
//! decision id, or a decision key; the answer is the EVALUATED event, or the FAILED
//! event with the failed decision and the message.

use rill_protocol::value::{
    DecisionEvaluationRecord, DecisionRecord, EvaluatedDecisionValue, EvaluatedInputValue,
    EvaluatedOutputValue, MatchedRuleValue,
};
use rill_protocol::{DecisionSelector, EvaluateDecision, Intent, JsonValue, Key};
use serde_json::{Map, Value as Json};

use super::tenant;
use crate::context::Processing;
use crate::dmn::{DecisionFailure, EvaluatedDecision, evaluate_decision};
use crate::error::Result;
use crate::model::CalledBinding;
use crate::outcome::Rejection;

/// The record value of an EVALUATE command before anything is known.
pub(super) fn placeholder() -> DecisionEvaluationRecord {
    DecisionEvaluationRecord {
        decision_key: -1,
        decision_id: String::new(),
        decision_name: String::new(),
        decision_version: -1,
        decision_requirements_id: String::new(),
        decision_requirements_key: -1,
        decision_output: "null".to_owned(),
        variables: JsonValue::empty_object(),
        bpmn_process_id: String::new(),
        process_definition_key: -1,
        process_instance_key: -1,
        element_id: String::new(),
        element_instance_key: -1,
        evaluated_decisions: Vec::new(),
        evaluation_failure_message: String::new(),
        failed_decision_id: String::new(),
        tenant_id: tenant(),
        root_process_instance_key: -1,
    }
}

pub(super) fn evaluate(p: &mut Processing<'_>, command: &EvaluateDecision) -> Result<()> {
    let mut value = placeholder();
    value.variables = command.variables.clone();
    let decision = match &command.decision {
        DecisionSelector::ById(id) => {
            value.decision_id = id.clone();
            p.find_decision(id, &CalledBinding::Latest, None)?
        }
        DecisionSelector::ByKey(key) => {
            value.decision_key = key.get();
            p.read().decision(*key)?
        }
    };
    let Some(decision) = decision else {
        let what = match &command.decision {
            DecisionSelector::ById(id) => format!("with id '{id}'"),
            DecisionSelector::ByKey(key) => format!("with key '{}'", key.get()),
        };
        p.reject(
            Key::NONE,
            Intent::Evaluate,
            value,
            Rejection::not_found(format!(
                "Expected to evaluate decision {what}, but no such decision was found"
            )),
        );
        return Ok(());
    };
    let Some(variables) = command.variables.to_object() else {
        p.reject(
            Key::NONE,
            Intent::Evaluate,
            value,
            Rejection::invalid_argument("Expected the variables to be a JSON object"),
        );
        return Ok(());
    };
    p.command(Key::NONE, Intent::Evaluate, value);
    let (key, record, output) =
        p.evaluate_deployed_decision(&decision, &variables, EvaluationSite::none())?;
    // As in Zeebe, a failed evaluation answers with the FAILED event: the response
    // carries the failed decision and the message.
    let intent = if output.is_some() {
        Intent::Evaluated
    } else {
        Intent::Failed
    };
    p.respond(key, intent, record);
    Ok(())
}

/// Where an evaluation happens: a business rule task's element instance, or nothing
/// (the evaluate-decision API).
#[derive(Default)]
pub(crate) struct EvaluationSite {
    pub bpmn_process_id: String,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub element_id: String,
    pub element_instance_key: i64,
    pub root_process_instance_key: i64,
}

impl EvaluationSite {
    pub fn none() -> EvaluationSite {
        EvaluationSite {
            process_definition_key: -1,
            process_instance_key: -1,
            element_instance_key: -1,
            root_process_instance_key: -1,
            ..EvaluationSite::default()
        }
    }
}

impl Processing<'_> {
    /// The deployed decision `decision_id` per a binding; `deployment_of` is the
    /// deployment of the calling process (for the `deployment` binding).
    pub(crate) fn find_decision(
        &mut self,
        decision_id: &str,
        binding: &CalledBinding,
        deployment_of: Option<Key>,
    ) -> Result<Option<DecisionRecord>> {
        let key = match binding {
            CalledBinding::Latest => self.read().latest_decision(decision_id)?.map(|(_, k)| k),
            CalledBinding::Deployment => match deployment_of {
                Some(deployment) => self
                    .read()
                    .decision_in_deployment(deployment, decision_id)?,
                None => None,
            },
            CalledBinding::VersionTag(tag) => {
                let latest = self.read().latest_decision(decision_id)?;
                let mut found = None;
                for version in (1..=latest.map_or(0, |(v, _)| v)).rev() {
                    if let Some(key) = self.read().decision_key_by_version(decision_id, version)?
                        && let Some(decision) = self.read().decision(key)?
                        && &decision.version_tag == tag
                    {
                        found = Some(key);
                        break;
                    }
                }
                found
            }
        };
        match key {
            Some(key) => self.read().decision(key),
            None => Ok(None),
        }
    }

    /// Evaluates a deployed decision against `variables` and writes the
    /// DECISION_EVALUATION event (EVALUATED or FAILED). Returns the record and, on
    /// success, the decision's output.
    pub(crate) fn evaluate_deployed_decision(
        &mut self,
        decision: &DecisionRecord,
        variables: &Map<String, Json>,
        site: EvaluationSite,
    ) -> Result<(Key, DecisionEvaluationRecord, Option<Json>)> {
        let drg = self.decision_requirements(Key(decision.decision_requirements_key))?;
        let result = evaluate_decision(&drg, &decision.decision_id, variables, self.feel_env());
        let key = self.next_key()?;
        let (evaluated, output, failure) = match result {
            Ok(evaluation) => (evaluation.evaluated, Some(evaluation.output), None),
            Err(DecisionFailure {
                failed_decision_id,
                message,
                evaluated,
            }) => (evaluated, None, Some((failed_decision_id, message))),
        };
        let mut evaluated_decisions = Vec::with_capacity(evaluated.len());
        for decision_evaluated in evaluated {
            let (key_of, version_of) = self.decision_identity(decision, &decision_evaluated)?;
            // Each evaluated decision is a decision instance with a key of its own (the
            // 8.8 API's `decisionEvaluationInstanceKey` is a key).
            let instance_key = self.next_key()?;
            evaluated_decisions.push(evaluated_value(
                decision_evaluated,
                instance_key.get().to_string(),
                key_of,
                version_of,
            ));
        }
        let (failed_decision_id, failure_message) = failure.clone().unwrap_or_default();
        let record = DecisionEvaluationRecord {
            decision_key: decision.decision_key,
            decision_id: decision.decision_id.clone(),
            decision_name: decision.decision_name.clone(),
            decision_version: decision.version,
            decision_requirements_id: decision.decision_requirements_id.clone(),
            decision_requirements_key: decision.decision_requirements_key,
            decision_output: json_text(output.as_ref().unwrap_or(&Json::Null)),
            variables: JsonValue::empty_object(),
            bpmn_process_id: site.bpmn_process_id,
            process_definition_key: site.process_definition_key,
            process_instance_key: site.process_instance_key,
            element_id: site.element_id,
            element_instance_key: site.element_instance_key,
            root_process_instance_key: site.root_process_instance_key,
            evaluated_decisions,
            evaluation_failure_message: failure_message,
            failed_decision_id,
            tenant_id: tenant(),
        };
        let intent = if failure.is_some() {
            rill_protocol::Intent::Failed
        } else {
            rill_protocol::Intent::Evaluated
        };
        self.event(key, intent, record.clone())?;
        Ok((key, record, output))
    }

    /// The key and version of a decision evaluated on the way: the one asked for, or a
    /// required decision deployed with it.
    fn decision_identity(
        &mut self,
        asked: &DecisionRecord,
        evaluated: &EvaluatedDecision,
    ) -> Result<(i64, i32)> {
        if evaluated.decision_id == asked.decision_id {
            return Ok((asked.decision_key, asked.version));
        }
        let key = self
            .read()
            .decision_in_deployment(Key(asked.deployment_key), &evaluated.decision_id)?;
        match key {
            Some(key) => Ok(self
                .read()
                .decision(key)?
                .map_or((-1, -1), |d| (d.decision_key, d.version))),
            None => Ok((-1, -1)),
        }
    }
}

fn json_text(value: &Json) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn evaluated_value(
    evaluated: EvaluatedDecision,
    instance_key: String,
    decision_key: i64,
    decision_version: i32,
) -> EvaluatedDecisionValue {
    EvaluatedDecisionValue {
        decision_id: evaluated.decision_id,
        decision_evaluation_instance_key: instance_key,
        decision_name: evaluated.decision_name,
        decision_key,
        decision_version,
        decision_type: evaluated.decision_type.to_owned(),
        decision_output: json_text(&evaluated.output),
        evaluated_inputs: evaluated
            .evaluated_inputs
            .into_iter()
            .map(|input| EvaluatedInputValue {
                input_id: input.input_id,
                input_name: input.input_name,
                input_value: json_text(&input.input_value),
            })
            .collect(),
        matched_rules: evaluated
            .matched_rules
            .into_iter()
            .map(|rule| MatchedRuleValue {
                rule_id: rule.rule_id,
                rule_index: i32::try_from(rule.rule_index).unwrap_or(i32::MAX),
                evaluated_outputs: rule
                    .evaluated_outputs
                    .into_iter()
                    .map(|output| EvaluatedOutputValue {
                        output_id: output.output_id,
                        output_name: output.output_name,
                        output_value: json_text(&output.output_value),
                    })
                    .collect(),
            })
            .collect(),
        tenant_id: tenant(),
    }
}
