//! The values of DMN: deployed decisions and their requirements graphs, and evaluations.

use serde::{Deserialize, Serialize};

use super::*;

/// DECISION: one decision of a deployed DMN resource (also the entries of a deployment's
/// `decisionsMetadata`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub decision_id: String,
    pub decision_name: String,
    pub version: i32,
    pub decision_key: i64,
    pub decision_requirements_id: String,
    pub decision_requirements_key: i64,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    pub deployment_key: i64,
    /// The decision's version tag, empty without one.
    pub version_tag: String,
}

/// DECISION_REQUIREMENTS: a deployed DMN resource (its decision requirements graph).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRequirementsRecord {
    pub decision_requirements_id: String,
    pub decision_requirements_name: String,
    pub decision_requirements_version: i32,
    pub decision_requirements_key: i64,
    pub namespace: String,
    pub resource_name: String,
    pub checksum: Blob,
    pub resource: Blob,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// A deployment's `decisionRequirementsMetadata` entry: the DRG without its resource.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRequirementsMetadata {
    pub decision_requirements_id: String,
    pub decision_requirements_name: String,
    pub decision_requirements_version: i32,
    pub decision_requirements_key: i64,
    pub namespace: String,
    pub resource_name: String,
    pub checksum: Blob,
    pub is_duplicate: bool,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

/// DECISION_EVALUATION: one evaluation of a decision (by a business rule task or the
/// evaluate-decision API) with every decision evaluated on the way. Outputs and input
/// values are JSON text, as Zeebe writes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionEvaluationRecord {
    pub decision_key: i64,
    pub decision_id: String,
    pub decision_name: String,
    pub decision_version: i32,
    pub decision_requirements_id: String,
    pub decision_requirements_key: i64,
    pub decision_output: String,
    pub variables: JsonValue,
    pub bpmn_process_id: String,
    pub process_definition_key: i64,
    pub process_instance_key: i64,
    pub element_id: String,
    pub element_instance_key: i64,
    pub evaluated_decisions: Vec<EvaluatedDecisionValue>,
    pub evaluation_failure_message: String,
    pub failed_decision_id: String,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
    /// The top-level instance of its call hierarchy: its own process instance's key
    /// unless a call activity created that instance (as Zeebe writes it since 8.9; -1
    /// in records written before Rill filled it).
    #[serde(default = "no_key")]
    pub root_process_instance_key: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluatedDecisionValue {
    pub decision_id: String,
    /// The key of this decision instance (a key of its own, as text).
    pub decision_evaluation_instance_key: String,
    pub decision_name: String,
    pub decision_key: i64,
    pub decision_version: i32,
    pub decision_type: String,
    pub decision_output: String,
    pub evaluated_inputs: Vec<EvaluatedInputValue>,
    pub matched_rules: Vec<MatchedRuleValue>,
    #[serde(default = "default_tenant")]
    pub tenant_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluatedInputValue {
    pub input_id: String,
    pub input_name: String,
    pub input_value: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchedRuleValue {
    pub rule_id: String,
    pub rule_index: i32,
    pub evaluated_outputs: Vec<EvaluatedOutputValue>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluatedOutputValue {
    pub output_id: String,
    pub output_name: String,
    pub output_value: String,
}
