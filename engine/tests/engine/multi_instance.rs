//! Multi-instance activities (issue 23, item 2): parallel and sequential, on tasks and
//! subprocesses, with input and output collections, the completion condition and
//! boundary events on the body. Fixture: `tests/fixtures/elements/multi-instance.bpmn`.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{BpmnElementType, BpmnEventType, IncidentErrorType};
use rill_protocol::{Command, Intent, JsonValue, Key, RecordValue, ValueType};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = "elements/multi-instance.bpmn";

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

/// `(intent, element type, key, flow scope key)` of one element id's process-instance
/// events, in log order.
fn events_of(rule: &EngineRule, id: &str) -> Vec<(Intent, BpmnElementType, Key, i64)> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .element(id)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => {
                (r.intent, v.bpmn_element_type, r.key, v.flow_scope_key)
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

fn body_intents(rule: &EngineRule, id: &str) -> Vec<Intent> {
    events_of(rule, id)
        .into_iter()
        .filter(|e| e.1 == BpmnElementType::MultiInstanceBody)
        .map(|e| e.0)
        .collect()
}

fn inner_count(rule: &EngineRule, id: &str, intent: Intent) -> usize {
    events_of(rule, id)
        .into_iter()
        .filter(|e| e.1 != BpmnElementType::MultiInstanceBody && e.0 == intent)
        .count()
}

/// `(name, value, scope)` of the variable records of one name, in log order.
fn variable_records(rule: &EngineRule, name: &str) -> Vec<(Intent, Value, i64)> {
    rule.records()
        .of_type(ValueType::Variable)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Variable(v) if v.name == name => Some((
                r.intent,
                serde_json::from_str(&v.value).expect("json"),
                v.scope_key,
            )),
            _ => None,
        })
        .collect()
}

fn complete_job(rule: &mut EngineRule, key: Key, variables: Value) {
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn cancel(rule: &mut EngineRule, instance: Key) {
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

#[test]
fn a_parallel_service_task_runs_once_per_item_and_collects_outputs_in_input_order() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let lines = json!([{"sku": "a"}, {"sku": "b"}, {"sku": "c"}]);
    let instance = rule.create("mi-parallel", json!({ "lines": lines }));

    // The body: MULTI_INSTANCE_BODY records with the element's id, in the process scope.
    let body = events_of(&rule, "Pick");
    let (intent, element_type, body_key, scope) = body[0];
    assert_eq!(
        (intent, element_type, scope),
        (
            Intent::ElementActivating,
            BpmnElementType::MultiInstanceBody,
            instance.get()
        )
    );
    assert_eq!(
        body_intents(&rule, "Pick"),
        vec![Intent::ElementActivating, Intent::ElementActivated]
    );
    let body_record = rule
        .records()
        .events()
        .element("Pick")
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some(v.clone()),
            _ => None,
        })
        .expect("body record");
    assert_eq!(body_record.bpmn_event_type, BpmnEventType::Unspecified);
    // Three inner SERVICE_TASK instances whose flow scope is the body.
    let inner: Vec<_> = events_of(&rule, "Pick")
        .into_iter()
        .filter(|e| e.0 == Intent::ElementActivated && e.1 == BpmnElementType::ServiceTask)
        .collect();
    assert_eq!(inner.len(), 3);
    assert!(inner.iter().all(|e| e.3 == body_key.get()));
    // Each has its item, its loop counter and its input mapping as locals.
    let counters: Vec<(Value, i64)> = variable_records(&rule, "loopCounter")
        .into_iter()
        .map(|(_, v, scope)| (v, scope))
        .collect();
    let inner_keys: Vec<i64> = inner.iter().map(|e| e.2.get()).collect();
    assert_eq!(
        counters,
        vec![
            (json!(1), inner_keys[0]),
            (json!(2), inner_keys[1]),
            (json!(3), inner_keys[2])
        ]
    );
    let skus: Vec<Value> = variable_records(&rule, "sku")
        .into_iter()
        .map(|v| v.1)
        .collect();
    assert_eq!(skus, vec![json!("a"), json!("b"), json!("c")]);

    // Completed in reverse order, the outputs still follow the input order.
    let jobs = rule.activate("pick", 10);
    assert_eq!(jobs.len(), 3);
    for (key, job) in jobs.iter().rev() {
        let sku = job.variables.to_value()["sku"]
            .as_str()
            .expect("sku")
            .to_owned();
        complete_job(&mut rule, *key, json!({"result": sku.to_uppercase()}));
    }
    assert_eq!(
        body_intents(&rule, "Pick"),
        vec![
            Intent::ElementActivating,
            Intent::ElementActivated,
            Intent::ElementCompleting,
            Intent::ElementCompleted
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let variables = rule.variables(instance);
    assert_eq!(variables["results"], json!(["A", "B", "C"]));
    for local in ["item", "loopCounter", "result", "sku"] {
        assert!(
            variables.get(local).is_none(),
            "{local} leaked: {variables}"
        );
    }
    // The boundary timer belongs to the body: one timer, created and cancelled.
    assert_eq!(
        rule.records().of_type(ValueType::Timer).shape(),
        vec![
            (ValueType::Timer, Intent::Created),
            (ValueType::Timer, Intent::Canceled)
        ]
    );
    rule.assert_replay_matches();
}

#[test]
fn a_sequential_task_runs_the_items_one_after_the_other_in_order() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("mi-sequential", json!({"parcels": ["p1", "p2", "p3"]}));
    for (n, parcel) in ["p1", "p2", "p3"].into_iter().enumerate() {
        let jobs = rule.activate("ship", 10);
        assert_eq!(jobs.len(), 1, "one parcel at a time");
        let (key, job) = &jobs[0];
        assert_eq!(job.variables.to_value()["parcel"], json!(parcel));
        assert_eq!(job.variables.to_value()["loopCounter"], json!(n + 1));
        assert!(
            job.variables.to_value().get("~inputCollection").is_none(),
            "the kept collection is not a variable workers see: {}",
            job.variables.to_value()
        );
        complete_job(&mut rule, *key, json!({"tracking": format!("T{}", n + 1)}));
    }
    let counters: Vec<Value> = variable_records(&rule, "loopCounter")
        .into_iter()
        .map(|v| v.1)
        .collect();
    assert_eq!(counters, vec![json!(1), json!(2), json!(3)]);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance)["receipts"],
        json!([
            {"parcel": "p1", "n": 1, "tracking": "T1"},
            {"parcel": "p2", "n": 2, "tracking": "T2"},
            {"parcel": "p3", "n": 3, "tracking": "T3"}
        ])
    );
    rule.assert_replay_matches();
}

#[test]
fn the_collection_is_evaluated_once_when_the_body_is_entered() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("mi-sequential", json!({"parcels": ["p1", "p2"]}));
    let (key, _) = rule.job("ship");
    // Changing the variable does not change the items of a running body.
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"parcels": ["x"]})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    complete_job(&mut rule, key, json!({}));
    let (key, job) = rule.job("ship");
    assert_eq!(job.variables.to_value()["parcel"], json!("p2"));
    complete_job(&mut rule, key, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_empty_collection_completes_the_body_at_once() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("mi-parallel", json!({"lines": []}));
    assert_eq!(
        body_intents(&rule, "Pick"),
        vec![
            Intent::ElementActivating,
            Intent::ElementActivated,
            Intent::ElementCompleting,
            Intent::ElementCompleted
        ]
    );
    assert_eq!(inner_count(&rule, "Pick", Intent::ElementActivating), 0);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["results"], json!([]));

    let instance = rule.create("mi-sequential", json!({"parcels": []}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["receipts"], json!([]));
    rule.assert_replay_matches();
}

#[test]
fn a_collection_that_is_not_a_list_is_an_incident_that_resolves() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("mi-parallel", json!({"lines": "a,b"}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    let incident = &incidents[0];
    assert_eq!(
        incident.record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(incident.record.element_id, "Pick");
    assert_eq!(
        incident.record.error_message,
        "Expected result of the expression 'lines' to be 'ARRAY', but was 'STRING'"
    );
    assert_eq!(body_intents(&rule, "Pick"), vec![Intent::ElementActivating]);
    assert_eq!(
        events_of(&rule, "Pick")[0].2.get(),
        incident.record.element_instance_key,
        "the incident is on the body"
    );
    // Fixed and resolved: the body is entered again.
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"lines": [{"sku": "z"}]})),
        local: false,
    }));
    assert!(!outcome.is_rejected());
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incident.key,
    });
    assert!(!outcome.is_rejected());
    let (key, job) = rule.job("pick");
    assert_eq!(job.variables.to_value()["sku"], json!("z"));
    complete_job(&mut rule, key, json!({"result": 1}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["results"], json!([1]));
    rule.assert_replay_matches();
}

#[test]
fn cancelling_terminates_every_inner_instance_and_the_body() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create(
        "mi-parallel",
        json!({"lines": [{"sku": "a"}, {"sku": "b"}]}),
    );
    let jobs = rule.activate("pick", 10);
    complete_job(&mut rule, jobs[0].0, json!({"result": "A"}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(inner_count(&rule, "Pick", Intent::ElementTerminated), 1);
    assert_eq!(
        body_intents(&rule, "Pick").last(),
        Some(&Intent::ElementTerminated)
    );
    assert_eq!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .count(),
        1
    );
    assert!(rule.variables(instance).get("results").is_none());
    rule.assert_replay_matches();

    // Sequential, cancelled while the second instance waits.
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("mi-sequential", json!({"parcels": ["p1", "p2"]}));
    let (key, _) = rule.job("ship");
    complete_job(&mut rule, key, json!({}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(inner_count(&rule, "Ship", Intent::ElementTerminated), 1);
    rule.assert_replay_matches();
}

#[test]
fn a_boundary_timer_on_the_body_interrupts_every_inner_instance() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create(
        "mi-parallel",
        json!({"lines": [{"sku": "a"}, {"sku": "b"}]}),
    );
    let jobs = rule.activate("pick", 10);
    complete_job(&mut rule, jobs[0].0, json!({"result": "A"}));
    rule.advance(3_600_000);
    rule.fire_due();
    assert_eq!(
        body_intents(&rule, "Pick").last(),
        Some(&Intent::ElementTerminated)
    );
    assert_eq!(inner_count(&rule, "Pick", Intent::ElementTerminated), 1);
    assert_eq!(events_of(&rule, "GaveUp").len(), 4);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(
        rule.variables(instance).get("results").is_none(),
        "no partial output after an interrupting boundary event"
    );
    rule.assert_replay_matches();
}

#[test]
fn a_subprocess_ends_early_when_the_completion_condition_holds() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let instance = rule.create("mi-subprocess", json!({"voters": ["ann", "bob", "cid"]}));
    let jobs = rule.activate("vote", 10);
    assert_eq!(jobs.len(), 3);
    assert_eq!(
        events_of(&rule, "Ballot")
            .iter()
            .filter(|e| e.0 == Intent::ElementActivated && e.1 == BpmnElementType::SubProcess)
            .count(),
        3
    );
    // The third voter first, then the first: two completed, the second is terminated.
    complete_job(&mut rule, jobs[2].0, json!({"vote": "yes"}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    complete_job(&mut rule, jobs[0].0, json!({"vote": "no"}));
    assert_eq!(inner_count(&rule, "Ballot", Intent::ElementTerminated), 1);
    assert_eq!(inner_count(&rule, "Vote", Intent::ElementTerminated), 1);
    assert_eq!(
        body_intents(&rule, "Ballot").last(),
        Some(&Intent::ElementCompleted)
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance)["votes"],
        json!(["no", null, "yes"]),
        "outputs at their loop counter, null where an instance did not complete"
    );
    rule.assert_replay_matches();
}

#[test]
fn a_condition_that_is_not_a_boolean_is_an_incident_on_the_inner_instance() {
    let body = r#"<bpmn:startEvent id="s" />
        <bpmn:task id="t"><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1, 2]" /></bpmn:extensionElements><bpmn:completionCondition>=loopCounter</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics></bpmn:task>
        <bpmn:endEvent id="e" />
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t" />
        <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e" />"#;
    let mut rule = EngineRule::new();
    rule.deploy_xml(&super::elements::model(body));
    let instance = rule.create("p", json!({}));
    // Each inner instance completes at once and stops in ELEMENT_COMPLETING.
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 2, "{incidents:?}");
    for incident in &incidents {
        assert_eq!(
            incident.record.error_type,
            IncidentErrorType::ExtractValueError
        );
        assert_eq!(incident.record.element_id, "t");
        assert_eq!(
            incident.record.error_message,
            "Expected result of the expression 'loopCounter' to be 'BOOLEAN', but was 'NUMBER'"
        );
    }
    assert_eq!(inner_count(&rule, "t", Intent::ElementCompleting), 2);
    cancel(&mut rule, instance);
    assert!(rule.incidents(instance).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn ten_thousand_items_run_parallel_and_sequential() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    let numbers: Vec<i64> = (1..=10_000).collect();
    let instance = rule.create("mi-script", json!({ "numbers": numbers }));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    let expected: Vec<i64> = numbers.iter().map(|n| n * n).collect();
    let variables = rule.variables(instance);
    assert_eq!(variables["squares"], json!(expected));
    assert_eq!(variables["orderedSquares"], json!(expected));
    assert_eq!(
        inner_count(&rule, "Square", Intent::ElementCompleted),
        10_000
    );
    assert_eq!(
        inner_count(&rule, "SquareInOrder", Intent::ElementCompleted),
        10_000
    );
    // The output collection is written once per body, not once per instance.
    assert_eq!(
        variable_records(&rule, "squares")
            .iter()
            .filter(|v| v.2 == instance.get())
            .count(),
        1
    );
}
