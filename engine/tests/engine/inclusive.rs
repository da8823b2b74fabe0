//! The inclusive gateway (issue 23, item 4): a fork takes every flow whose condition is
//! true (else the default flow), a join waits for every token that can still arrive.
//! Fixture: `tests/fixtures/elements/inclusive-gateway.bpmn`.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{BpmnElementType, IncidentErrorType};
use rill_protocol::{Command, Intent, JsonValue, Key, RecordValue, ValueType};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = "elements/inclusive-gateway.bpmn";

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

/// The intents of one element's process-instance events, in log order.
fn intents(rule: &EngineRule, id: &str) -> Vec<Intent> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .element(id)
        .records
        .iter()
        .map(|r| r.intent)
        .collect()
}

/// The sequence flows taken, in log order.
fn taken(rule: &EngineRule) -> Vec<String> {
    rule.records()
        .events()
        .with_intent(Intent::SequenceFlowTaken)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some(v.element_id.clone()),
            _ => None,
        })
        .collect()
}

fn passed() -> Vec<Intent> {
    vec![
        Intent::ElementActivating,
        Intent::ElementActivated,
        Intent::ElementCompleting,
        Intent::ElementCompleted,
    ]
}

fn complete_one(rule: &mut EngineRule, job_type: &str, variables: Value) {
    let (key, _) = rule.job(job_type);
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn lunch(pasta: bool, salad: bool) -> Value {
    json!({"pasta": pasta, "salad": salad, "dropped": false})
}

#[test]
fn the_fork_takes_every_true_flow_and_the_join_waits_for_both() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("inclusive-gateway", lunch(true, true));
    assert_eq!(intents(&rule, "Split"), passed());
    assert_eq!(taken(&rule), vec!["F1", "ToPasta", "ToSalad"]);
    // The records have Zeebe's shape.
    let split = rule
        .records()
        .events()
        .element("Split")
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => (r.value_type(), v.bpmn_element_type),
            other => panic!("{other:?}"),
        })
        .collect::<Vec<_>>();
    assert!(split.iter().all(|s| *s
        == (
            ValueType::ProcessInstance,
            BpmnElementType::InclusiveGateway
        )));

    complete_one(&mut rule, "pasta", json!({}));
    assert!(
        intents(&rule, "Join").is_empty(),
        "the salad can still arrive: the join waits"
    );
    complete_one(&mut rule, "salad", json!({}));
    assert_eq!(
        intents(&rule, "Join"),
        passed(),
        "entered once, with both tokens"
    );
    complete_one(&mut rule, "eat", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn the_join_does_not_wait_for_a_branch_that_was_not_taken() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    rule.create("inclusive-gateway", lunch(false, true));
    assert_eq!(taken(&rule), vec!["F1", "ToSalad"]);
    complete_one(&mut rule, "salad", json!({}));
    assert_eq!(intents(&rule, "Join"), passed());
    let _ = rule.job("eat");
    rule.assert_replay_matches();
}

#[test]
fn with_no_true_condition_the_default_flow_is_taken_and_the_join_passes_at_once() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    rule.create("inclusive-gateway", lunch(false, false));
    assert_eq!(taken(&rule), vec!["F1", "ToNothing", "F2"]);
    assert_eq!(intents(&rule, "Join"), passed());
    let _ = rule.job("eat");
    rule.assert_replay_matches();
}

#[test]
fn the_join_fires_when_the_other_token_ends_elsewhere() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    rule.create("inclusive-gateway", lunch(true, true));
    complete_one(&mut rule, "pasta", json!({}));
    assert!(intents(&rule, "Join").is_empty());
    // The salad is dropped: its token ends at 'Dropped' and can no longer reach the join.
    complete_one(&mut rule, "salad", json!({"dropped": true}));
    assert_eq!(intents(&rule, "Dropped"), passed());
    assert_eq!(intents(&rule, "Join"), passed());
    let _ = rule.job("eat");
    rule.assert_replay_matches();
}

#[test]
fn a_condition_that_is_not_a_boolean_is_an_incident_that_resolves() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("inclusive-gateway", json!({"pasta": "yes", "salad": false}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ConditionError
    );
    assert_eq!(incidents[0].record.element_id, "Split");
    assert!(
        incidents[0].record.error_message.contains("'BOOLEAN'"),
        "{}",
        incidents[0].record.error_message
    );
    assert_eq!(intents(&rule, "Split"), vec![Intent::ElementActivating]);
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"pasta": true})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected());
    complete_one(&mut rule, "pasta", json!({}));
    complete_one(&mut rule, "eat", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn no_true_condition_and_no_default_is_an_incident_in_a_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create(
        "inclusive-in-subprocess",
        json!({"soup": false, "bread": false}),
    );
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ConditionError
    );
    assert_eq!(incidents[0].record.element_id, "KitchenSplit");
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("no condition of inclusive gateway 'KitchenSplit' was true"),
        "{}",
        incidents[0].record.error_message
    );
    // Cancelling resolves the incident and terminates the subprocess.
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.incidents(instance).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn a_join_in_a_subprocess_completes_the_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create(
        "inclusive-in-subprocess",
        json!({"soup": true, "bread": true}),
    );
    complete_one(&mut rule, "bread", json!({}));
    assert!(intents(&rule, "KitchenJoin").is_empty());
    complete_one(&mut rule, "soup", json!({}));
    assert_eq!(intents(&rule, "KitchenJoin"), passed());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_a_token_waits_at_the_join_leaves_nothing_behind() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("inclusive-gateway", lunch(true, true));
    complete_one(&mut rule, "pasta", json!({}));
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(
        intents(&rule, "Salad").last(),
        Some(&Intent::ElementTerminated)
    );
    assert!(intents(&rule, "Join").is_empty());
    rule.assert_replay_matches();
}

#[test]
fn the_boundary_timer_of_a_subprocess_interrupts_a_waiting_join() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create(
        "inclusive-in-subprocess",
        json!({"soup": true, "bread": true}),
    );
    complete_one(&mut rule, "soup", json!({}));
    rule.advance(3_600_000);
    rule.fire_due();
    assert_eq!(
        intents(&rule, "Kitchen").last(),
        Some(&Intent::ElementTerminated)
    );
    assert_eq!(intents(&rule, "GaveUp"), passed());
    assert!(intents(&rule, "KitchenJoin").is_empty());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}
