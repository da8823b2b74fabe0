//! DMN in the engine: deploying `.dmn` resources (DECISION_REQUIREMENTS and DECISION
//! records, versions, duplicates), business rule tasks (DECISION_EVALUATION records,
//! incidents that resolve), and the evaluate-decision command.

use rill_protocol::value::{DecisionEvaluationRecord, IncidentErrorType};
use rill_protocol::{
    Command, DecisionSelector, EvaluateDecision, Intent, JsonValue, RecordValue, RejectionType,
    ValueType,
};
use serde_json::{Value, json};

use super::breadth::{resolve, set_variables};
use super::*;

fn deployment_value(outcome: &Outcome) -> rill_protocol::value::DeploymentRecord {
    match outcome.value() {
        RecordValue::Deployment(deployment) => deployment.clone(),
        other => panic!("expected a deployment, got {other:?}"),
    }
}

fn evaluations(rule: &EngineRule) -> Vec<(Intent, DecisionEvaluationRecord)> {
    rule.records()
        .of_type(ValueType::DecisionEvaluation)
        .events()
        .records
        .into_iter()
        .filter_map(|r| match &r.value {
            RecordValue::DecisionEvaluation(v) => Some((r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

fn business_rule_process(called_decision: &str) -> String {
    String::from_utf8(fixture("dmn/dinner.bpmn"))
        .unwrap()
        .replace(
            "<zeebe:calledDecision decisionId=\"dish\" resultVariable=\"dish\" bindingType=\"deployment\" />",
            called_decision,
        )
}

#[test]
fn a_dmn_resource_deploys_its_decisions_with_versions() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[("dish.dmn", fixture("dmn/dish.dmn"))]);
    let deployment = deployment_value(&outcome);
    assert!(deployment.processes_metadata.is_empty());
    let drg = &deployment.decision_requirements_metadata[0];
    assert_eq!(
        (
            drg.decision_requirements_id.as_str(),
            drg.decision_requirements_version
        ),
        ("DishDecisions", 1)
    );
    assert_eq!(drg.decision_requirements_name, "Dish decisions");
    let decisions: Vec<(&str, i32, bool)> = deployment
        .decisions_metadata
        .iter()
        .map(|d| (d.decision_id.as_str(), d.version, d.is_duplicate))
        .collect();
    assert_eq!(
        decisions,
        [("season", 1, false), ("dish", 1, false), ("menu", 1, false)]
    );
    assert!(deployment.decisions_metadata.iter().all(|d| {
        d.decision_requirements_key == drg.decision_requirements_key
            && d.deployment_key == outcome.key().get()
    }));
    assert_eq!(
        rule.records().events().shape()[..5],
        [
            (ValueType::DecisionRequirements, Intent::Created),
            (ValueType::Decision, Intent::Created),
            (ValueType::Decision, Intent::Created),
            (ValueType::Decision, Intent::Created),
            (ValueType::Deployment, Intent::Created),
        ]
    );

    // The same resource again: duplicates, no new records.
    let before = rule.records().of_type(ValueType::Decision).count();
    let again = deployment_value(&rule.deploy(&[("dish.dmn", fixture("dmn/dish.dmn"))]));
    assert!(
        again
            .decisions_metadata
            .iter()
            .all(|d| d.is_duplicate && d.version == 1)
    );
    assert!(again.decision_requirements_metadata[0].is_duplicate);
    assert_eq!(rule.records().of_type(ValueType::Decision).count(), before);

    // A changed resource: version 2 of the graph and of each decision.
    let changed = String::from_utf8(fixture("dmn/dish.dmn"))
        .unwrap()
        .replace("\"Stew\"", "\"Hot pot\"");
    let third = deployment_value(&rule.deploy(&[("dish.dmn", changed.into_bytes())]));
    assert_eq!(
        third.decision_requirements_metadata[0].decision_requirements_version,
        2
    );
    assert!(
        third
            .decisions_metadata
            .iter()
            .all(|d| d.version == 2 && !d.is_duplicate)
    );
    rule.assert_replay_matches();
}

#[test]
fn an_invalid_table_rejects_the_whole_deployment() {
    let mut rule = EngineRule::new();
    let broken = String::from_utf8(fixture("dmn/dish.dmn"))
        .unwrap()
        .replace("<text>[6..8]</text>", "<text>[6..</text>");
    let outcome = rule.deploy(&[
        ("dinner.bpmn", fixture("dmn/dinner.bpmn")),
        ("dish.dmn", broken.into_bytes()),
    ]);
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("'dish.dmn'"), "{reason}");
    assert!(reason.contains("element 'season'"), "{reason}");
    assert!(
        reason.contains("rule 'Season_Rule_2' (rule 2), input column 'Input_Month'"),
        "{reason}"
    );
    assert_eq!(rule.records().events().count(), 0);

    let outcome = rule.deploy(&[("notes.txt", b"hello".to_vec())]);
    assert!(rejection_of(&outcome).1.contains("'notes.txt'"));
}

#[test]
fn a_business_rule_task_evaluates_the_decision_into_its_result_variable() {
    let mut rule = EngineRule::new();
    let outcome = rule.deploy(&[
        ("dinner.bpmn", fixture("dmn/dinner.bpmn")),
        ("dish.dmn", fixture("dmn/dish.dmn")),
    ]);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let instance = rule.create("dinner", json!({"month": 10, "guestCount": 4}));
    assert_eq!(rule.variables(instance)["dish"], json!("Spareribs"));
    assert_eq!(rule.job("cook").1.process_instance_key, instance.get());

    let evaluations = evaluations(&rule);
    assert_eq!(evaluations.len(), 1);
    let (intent, record) = &evaluations[0];
    assert_eq!(*intent, Intent::Evaluated);
    assert_eq!(record.decision_id, "dish");
    assert_eq!(record.decision_output, "\"Spareribs\"");
    assert_eq!(record.element_id, "DecideDish");
    assert_eq!(record.process_instance_key, instance.get());
    assert_eq!(record.decision_requirements_id, "DishDecisions");
    let evaluated: Vec<(&str, &str, &str)> = record
        .evaluated_decisions
        .iter()
        .map(|d| {
            (
                d.decision_id.as_str(),
                d.decision_type.as_str(),
                d.decision_output.as_str(),
            )
        })
        .collect();
    assert_eq!(
        evaluated,
        [
            ("season", "DECISION_TABLE", "\"Fall\""),
            ("dish", "DECISION_TABLE", "\"Spareribs\"")
        ]
    );
    let dish = &record.evaluated_decisions[1];
    assert!(dish.decision_key > 0 && dish.decision_version == 1);
    let instance_keys: Vec<i64> = record
        .evaluated_decisions
        .iter()
        .map(|d| d.decision_evaluation_instance_key.parse().unwrap())
        .collect();
    assert!(instance_keys[0] > 0 && instance_keys[0] < instance_keys[1]);
    assert_eq!(dish.evaluated_inputs[1].input_name, "How many guests");
    assert_eq!(dish.evaluated_inputs[1].input_value, "4");
    assert_eq!(dish.matched_rules[0].rule_id, "Dish_Rule_1");
    assert_eq!(dish.matched_rules[0].rule_index, 1);
    assert_eq!(
        dish.matched_rules[0].evaluated_outputs[0].output_value,
        "\"Spareribs\""
    );
    rule.assert_replay_matches();
}

#[test]
fn a_failed_evaluation_is_an_incident_that_resolves() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("dmn/hit-policies.dmn");
    rule.deploy_xml(&business_rule_process(
        "<zeebe:calledDecision decisionId=\"unique\" resultVariable=\"category\" />",
    ));
    // Two rules match under UNIQUE.
    let instance = rule.create(
        "dinner",
        json!({"amount": 70, "customer": {"tier": "gold"}}),
    );
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    let incident = &incidents[0];
    assert_eq!(
        incident.record.error_type,
        IncidentErrorType::DecisionEvaluationError
    );
    assert_eq!(incident.record.element_id, "DecideDish");
    assert!(
        incident.record.error_message.contains("UNIQUE"),
        "{}",
        incident.record.error_message
    );
    let (intent, failed) = evaluations(&rule).pop().unwrap();
    assert_eq!(intent, Intent::Failed);
    assert_eq!(failed.failed_decision_id, "unique");
    assert!(
        failed
            .evaluation_failure_message
            .contains("'unique_Rule_1', 'unique_Rule_2'")
    );

    set_variables(&mut rule, instance, json!({"amount": 20}));
    resolve(&mut rule, incident.key);
    assert_eq!(
        rule.variables(instance)["category"],
        json!({"category": "low", "score": 1})
    );
    assert!(rule.incidents(instance).is_empty());
    assert_eq!(evaluations(&rule).pop().unwrap().0, Intent::Evaluated);
    rule.assert_replay_matches();
}

#[test]
fn a_missing_decision_is_an_incident_until_it_is_deployed() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&business_rule_process(
        "<zeebe:calledDecision decisionId=\"=&quot;collect&quot; + suffix\" resultVariable=\"total\" />",
    ));
    let instance = rule.create(
        "dinner",
        json!({"suffix": "Sum", "amount": 700, "customer": {"tier": "gold"}}),
    );
    let incident = rule.incidents(instance).pop().expect("an incident");
    assert_eq!(
        incident.record.error_type,
        IncidentErrorType::CalledDecisionError
    );
    assert!(incident.record.error_message.contains("'collectSum'"));
    rule.deploy_fixture("dmn/hit-policies.dmn");
    resolve(&mut rule, incident.key);
    assert_eq!(rule.variables(instance)["total"], json!(10));
}

#[test]
fn binding_types_pick_the_version() {
    let mut rule = EngineRule::new();
    let tagged = |tag: &str, dish: &str| {
        String::from_utf8(fixture("dmn/dish.dmn"))
            .unwrap()
            .replace(
                "<decision id=\"dish\" name=\"Dish\">",
                &format!(
                    "<decision id=\"dish\" name=\"Dish\" xmlns:zeebe=\"http://camunda.org/schema/zeebe/1.0\" zeebe:versionTag=\"{tag}\">"
                ),
            )
            .replace("\"Spareribs\"", &format!("\"{dish}\""))
            .into_bytes()
    };
    // The process and version 1 together; version 2 alone.
    rule.deploy(&[
        ("dinner.bpmn", fixture("dmn/dinner.bpmn")),
        ("dish.dmn", tagged("v1", "Ribs one")),
    ]);
    rule.deploy(&[("dish.dmn", tagged("v2", "Ribs two"))]);
    let variables = json!({"month": 10, "guestCount": 4});
    let instance = rule.create("dinner", variables.clone());
    assert_eq!(rule.variables(instance)["dish"], json!("Ribs one"));

    rule.deploy_xml(&business_rule_process(
        "<zeebe:calledDecision decisionId=\"dish\" resultVariable=\"dish\" />",
    ));
    let instance = rule.create("dinner", variables.clone());
    assert_eq!(rule.variables(instance)["dish"], json!("Ribs two"));

    rule.deploy_xml(&business_rule_process(
        "<zeebe:calledDecision decisionId=\"dish\" resultVariable=\"dish\" bindingType=\"versionTag\" versionTag=\"v1\" />",
    ));
    let instance = rule.create("dinner", variables);
    assert_eq!(rule.variables(instance)["dish"], json!("Ribs one"));
}

#[test]
fn the_job_worker_variant_is_a_job() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&business_rule_process(
        "<zeebe:taskDefinition type=\"decide\" retries=\"2\" />",
    ));
    let instance = rule.create("dinner", json!({}));
    let (job_key, job) = rule.job("decide");
    assert_eq!(job.element_id, "DecideDish");
    assert_eq!(job.retries, 2);
    rule.complete(job_key, json!({"dish": "Soup"}));
    assert_eq!(rule.variables(instance)["dish"], json!("Soup"));
}

#[test]
fn a_business_rule_task_needs_one_implementation() {
    let mut rule = EngineRule::new();
    for (called, expected) in [
        ("", "needs zeebe:calledDecision"),
        (
            "<zeebe:calledDecision decisionId=\"dish\" />",
            "no resultVariable",
        ),
        (
            "<zeebe:calledDecision decisionId=\"dish\" resultVariable=\"d\" bindingType=\"versionTag\" />",
            "no versionTag",
        ),
    ] {
        let outcome = rule.deploy(&[("p.bpmn", business_rule_process(called).into_bytes())]);
        let (_, reason) = rejection_of(&outcome);
        assert!(
            reason.contains("DecideDish") && reason.contains(expected),
            "{reason}"
        );
    }
}

fn evaluate(rule: &mut EngineRule, decision: DecisionSelector, variables: Value) -> Outcome {
    rule.process(Command::EvaluateDecision(EvaluateDecision {
        decision,
        variables: JsonValue::from(variables),
    }))
}

#[test]
fn the_evaluate_command_answers_with_the_evaluation() {
    let mut rule = EngineRule::new();
    let deployment = deployment_value(&rule.deploy_fixture("dmn/dish.dmn"));
    let outcome = evaluate(
        &mut rule,
        DecisionSelector::ById("menu".into()),
        json!({"month": 1, "guestCount": 12}),
    );
    let RecordValue::DecisionEvaluation(record) = outcome.value() else {
        panic!("an evaluation");
    };
    assert_eq!(record.decision_output, "\"Winter menu: Stew\"");
    assert_eq!(record.evaluated_decisions.len(), 3);
    assert_eq!(record.process_instance_key, -1);
    let evaluation_key = outcome.key().get();
    let first: i64 = record.evaluated_decisions[0]
        .decision_evaluation_instance_key
        .parse()
        .unwrap();
    assert!(first > evaluation_key, "a key of its own");

    let season_key = deployment.decisions_metadata[0].decision_key;
    let by_key = evaluate(
        &mut rule,
        DecisionSelector::ByKey(rill_protocol::Key(season_key)),
        json!({"month": 7}),
    );
    let RecordValue::DecisionEvaluation(record) = by_key.value() else {
        panic!("an evaluation");
    };
    assert_eq!(record.decision_output, "\"Summer\"");

    let missing = evaluate(&mut rule, DecisionSelector::ById("nope".into()), json!({}));
    assert_eq!(rejection_of(&missing).0, RejectionType::NotFound);

    let failing = evaluate(
        &mut rule,
        DecisionSelector::ById("season".into()),
        json!({"month": "May"}),
    );
    let RecordValue::DecisionEvaluation(record) = failing.value() else {
        panic!("an evaluation");
    };
    assert_eq!(record.failed_decision_id, "season");
    assert!(record.evaluation_failure_message.contains("Season_Rule_1"));
    assert_eq!(record.decision_output, "null");
    assert_eq!(evaluations(&rule).pop().unwrap().0, Intent::Failed);
    rule.assert_replay_matches();
}

#[test]
fn decisions_are_distributed_with_their_keys_and_versions() {
    let mut first = EngineRule::on_partition(1, 2);
    let mut second = EngineRule::on_partition(2, 2);
    let deployed = first.deploy(&[
        ("dinner.bpmn", fixture("dmn/dinner.bpmn")),
        ("dish.dmn", fixture("dmn/dish.dmn")),
    ]);
    let sent: Vec<Command> = deployed
        .actions
        .iter()
        .filter_map(|action| match action {
            rill_engine_api::Action::Send { command, .. } => Some(command.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    let applied = second.process(sent[0].clone());
    assert!(!applied.is_rejected(), "{:?}", applied.response);
    let shape = second.records().events().shape();
    assert!(shape.contains(&(ValueType::DecisionRequirements, Intent::Created)));
    assert_eq!(
        second
            .records()
            .of_type(ValueType::Decision)
            .events()
            .count(),
        3
    );

    let instance = second.create("dinner", json!({"month": 4, "guestCount": 2}));
    assert_eq!(
        second.variables(instance)["dish"],
        json!("Dry Aged Gourmet Steak")
    );
    let on_first = deployment_value(&deployed).decisions_metadata[1].decision_key;
    let (_, record) = evaluations(&second).pop().unwrap();
    assert_eq!(record.decision_key, on_first);
    second.assert_replay_matches();
}
