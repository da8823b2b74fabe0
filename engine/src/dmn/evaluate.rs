//! Evaluates a decision of a decision requirements graph: its required decisions
//! first (each once, its result bound to its decision id), then its table or literal
//! expression. Deterministic: the same variables and environment give the same result
//! and the same record of what was evaluated.

use std::cmp::Ordering;

use rill_feel::{Environment, TestInput};
use serde_json::{Map, Value as Json};

use super::model::{
    Aggregation, Decision, DecisionLogic, DecisionRequirements, DecisionTable, HitPolicy, Rule,
};

/// What one evaluation produced: the output of the decision asked for and every
/// decision evaluated on the way, required ones first (as Zeebe records them).
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionEvaluation {
    pub output: Json,
    pub evaluated: Vec<EvaluatedDecision>,
}

/// Why an evaluation failed, with the decisions evaluated before it.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionFailure {
    pub failed_decision_id: String,
    pub message: String,
    /// The decisions evaluated before the failure, the failed one last (without output).
    pub evaluated: Vec<EvaluatedDecision>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EvaluatedDecision {
    pub decision_id: String,
    pub decision_name: String,
    /// `DECISION_TABLE` or `LITERAL_EXPRESSION`.
    pub decision_type: &'static str,
    pub output: Json,
    pub evaluated_inputs: Vec<EvaluatedInput>,
    pub matched_rules: Vec<MatchedRule>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EvaluatedInput {
    pub input_id: String,
    pub input_name: String,
    pub input_value: Json,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchedRule {
    pub rule_id: String,
    /// 1-based.
    pub rule_index: usize,
    pub evaluated_outputs: Vec<EvaluatedOutput>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EvaluatedOutput {
    pub output_id: String,
    pub output_name: String,
    pub output_value: Json,
}

/// Evaluates `decision_id` of `drg` against `variables`.
pub fn evaluate_decision(
    drg: &DecisionRequirements,
    decision_id: &str,
    variables: &Map<String, Json>,
    environment: Environment,
) -> Result<DecisionEvaluation, DecisionFailure> {
    let Some(target) = drg.decisions.iter().position(|d| d.id == decision_id) else {
        return Err(DecisionFailure {
            failed_decision_id: decision_id.to_owned(),
            message: format!(
                "no decision found with id '{decision_id}' in the decision requirements '{}'",
                drg.id
            ),
            evaluated: Vec::new(),
        });
    };
    // Required decisions in dependency order (post-order, each once).
    let mut order = Vec::new();
    let mut seen = vec![false; drg.decisions.len()];
    let mut stack = vec![(target, 0usize)];
    seen[target] = true;
    while let Some((current, next)) = stack.last_mut() {
        let current = *current;
        if let Some(&required) = drg.decisions[current].required.get(*next) {
            *next += 1;
            if !seen[required] {
                seen[required] = true;
                stack.push((required, 0));
            }
        } else {
            order.push(current);
            stack.pop();
        }
    }

    let mut scope = variables.clone();
    let mut evaluated = Vec::new();
    let mut output = Json::Null;
    for index in order {
        let decision = &drg.decisions[index];
        let (record, failure) = evaluate_one(decision, &scope, environment);
        if let Some(message) = failure {
            evaluated.push(record);
            return Err(DecisionFailure {
                failed_decision_id: decision.id.clone(),
                message,
                evaluated,
            });
        }
        output = record.output.clone();
        scope.insert(decision.id.clone(), record.output.clone());
        evaluated.push(record);
    }
    Ok(DecisionEvaluation { output, evaluated })
}

/// The record of one decision, and why it failed if it did.
fn evaluate_one(
    decision: &Decision,
    scope: &Map<String, Json>,
    env: Environment,
) -> (EvaluatedDecision, Option<String>) {
    let mut record = EvaluatedDecision {
        decision_id: decision.id.clone(),
        decision_name: decision.name.clone(),
        decision_type: decision.logic.type_name(),
        output: Json::Null,
        evaluated_inputs: Vec::new(),
        matched_rules: Vec::new(),
    };
    let result = match &decision.logic {
        DecisionLogic::Literal { expression } => expression
            .evaluate(scope, env)
            .map_err(|error| error.to_string()),
        DecisionLogic::Table(table) => evaluate_table(table, scope, env, &mut record),
    };
    let result = result.and_then(|output| match decision.result_type {
        Some(expected) if !expected.admits(&output) => Err(format!(
            "expected '{}' but found '{output}'",
            expected.name()
        )),
        _ => Ok(output),
    });
    match result {
        Ok(output) => {
            record.output = output;
            (record, None)
        }
        Err(reason) => {
            let message = format!("failed to evaluate decision '{}': {reason}", decision.id);
            (record, Some(message))
        }
    }
}

fn evaluate_table(
    table: &DecisionTable,
    scope: &Map<String, Json>,
    env: Environment,
    record: &mut EvaluatedDecision,
) -> Result<Json, String> {
    let mut tests = Vec::with_capacity(table.inputs.len());
    for input in &table.inputs {
        let (test, value) = input
            .expression
            .evaluate_test_input(scope, env)
            .map_err(|e| format!("input '{}': {e}", input.id))?;
        tests.push(test);
        record.evaluated_inputs.push(EvaluatedInput {
            input_id: input.id.clone(),
            input_name: input.name.clone(),
            input_value: value,
        });
    }

    let mut matched: Vec<(&Rule, Vec<Json>)> = Vec::new();
    for rule in &table.rules {
        if !rule_matches(rule, &tests, table, scope, env)? {
            continue;
        }
        let mut values = Vec::with_capacity(rule.output_entries.len());
        for (column, entry) in rule.output_entries.iter().enumerate() {
            let value = match entry {
                Some(expression) => expression.evaluate(scope, env).map_err(|e| {
                    format!(
                        "rule '{}', output '{}': {e}",
                        rule.id, table.outputs[column].id
                    )
                })?,
                None => Json::Null,
            };
            values.push(value);
        }
        matched.push((rule, values));
        if table.hit_policy == HitPolicy::First {
            break;
        }
    }

    let selected = select(table, matched)?;
    for (rule, values) in &selected {
        record.matched_rules.push(MatchedRule {
            rule_id: rule.id.clone(),
            rule_index: rule.index,
            evaluated_outputs: table
                .outputs
                .iter()
                .zip(values)
                .map(|(output, value)| EvaluatedOutput {
                    output_id: output.id.clone(),
                    output_name: output.name.clone(),
                    output_value: value.clone(),
                })
                .collect(),
        });
    }
    let outputs: Vec<Json> = selected
        .iter()
        .map(|(_, values)| rule_output(table, values))
        .collect();
    let single = |outputs: Vec<Json>| outputs.into_iter().next().unwrap_or(Json::Null);
    match table.hit_policy {
        HitPolicy::Unique | HitPolicy::First | HitPolicy::Priority | HitPolicy::Any => {
            Ok(single(outputs))
        }
        HitPolicy::RuleOrder | HitPolicy::OutputOrder | HitPolicy::Collect(None) => {
            Ok(Json::Array(outputs))
        }
        HitPolicy::Collect(Some(Aggregation::Count)) => Ok(Json::from(
            outputs.iter().filter(|value| !value.is_null()).count(),
        )),
        HitPolicy::Collect(Some(_)) => {
            let values: Vec<Json> = outputs.into_iter().filter(|v| !v.is_null()).collect();
            if values.is_empty() {
                return Ok(Json::Null);
            }
            let Some(aggregate) = &table.aggregate else {
                return Ok(Json::Null);
            };
            let mut variables = Map::new();
            variables.insert("values".to_owned(), Json::Array(values));
            aggregate
                .evaluate(&variables, env)
                .map_err(|e| format!("cannot aggregate the matched outputs: {}", e.reason()))
        }
    }
}

fn rule_matches(
    rule: &Rule,
    tests: &[TestInput],
    table: &DecisionTable,
    scope: &Map<String, Json>,
    env: Environment,
) -> Result<bool, String> {
    for (column, (entry, input)) in rule.input_entries.iter().zip(tests).enumerate() {
        if entry.is_any() {
            continue;
        }
        let passed = entry.matches(input, scope, env).map_err(|e| {
            format!(
                "rule '{}', input '{}': {e}",
                rule.id, table.inputs[column].id
            )
        })?;
        if !passed {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A rule's result: the value of a single output, else a context of the outputs.
fn rule_output(table: &DecisionTable, values: &[Json]) -> Json {
    if table.outputs.len() == 1 {
        return values.first().cloned().unwrap_or(Json::Null);
    }
    Json::Object(
        table
            .outputs
            .iter()
            .zip(values)
            .map(|(output, value)| (output.name.clone(), value.clone()))
            .collect(),
    )
}

/// Applies the hit policy's checks and ordering to the matched rules.
fn select<'t>(
    table: &DecisionTable,
    mut matched: Vec<(&'t Rule, Vec<Json>)>,
) -> Result<Vec<(&'t Rule, Vec<Json>)>, String> {
    match table.hit_policy {
        HitPolicy::Unique if matched.len() > 1 => Err(format!(
            "the hit policy UNIQUE allows one matching rule, but {} rules matched: {}",
            matched.len(),
            rule_ids(&matched)
        )),
        HitPolicy::Any if matched.windows(2).any(|pair| pair[0].1 != pair[1].1) => Err(format!(
            "the hit policy ANY needs the matching rules to have equal outputs, but they \
             differ: {}",
            rule_ids(&matched)
        )),
        HitPolicy::Any => {
            matched.truncate(1);
            Ok(matched)
        }
        HitPolicy::Priority => {
            // A stable sort keeps rule order among rules of equal priority.
            matched.sort_by(|a, b| priority_order(table, &a.1, &b.1));
            matched.truncate(1);
            Ok(matched)
        }
        HitPolicy::OutputOrder => {
            matched.sort_by(|a, b| priority_order(table, &a.1, &b.1));
            Ok(matched)
        }
        _ => Ok(matched),
    }
}

fn rule_ids(matched: &[(&Rule, Vec<Json>)]) -> String {
    matched
        .iter()
        .map(|(rule, _)| format!("'{}'", rule.id))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Compares outputs by the position of each value in its column's output values
/// (first column first); a value not listed ranks after the listed ones.
fn priority_order(table: &DecisionTable, a: &[Json], b: &[Json]) -> Ordering {
    for ((output, left), right) in table.outputs.iter().zip(a).zip(b) {
        let rank = |value: &Json| {
            output
                .values
                .iter()
                .position(|listed| listed == value)
                .unwrap_or(output.values.len())
        };
        match rank(left).cmp(&rank(right)) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}
