//! Issue 23's element kinds, driven through Modeler-shaped fixtures
//! (`tests/fixtures/elements/`): pass-through tasks, throw and link events, script and
//! send tasks, job-based message events, mappings on start and end events.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{BpmnElementType, BpmnEventType, IncidentErrorType};
use rill_protocol::{Command, Intent, JsonValue, Key, RecordValue, ValueType};
use serde_json::{Value, json};

use super::*;

/// `(intent, element type, event type)` of every process-instance event of one
/// element, in log order.
fn element_events(rule: &EngineRule, id: &str) -> Vec<(Intent, BpmnElementType, BpmnEventType)> {
    rule.records()
        .events()
        .of_type(ValueType::ProcessInstance)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) if v.element_id == id => {
                Some((r.intent, v.bpmn_element_type, v.bpmn_event_type))
            }
            _ => None,
        })
        .collect()
}

/// The four lifecycle events of an element that passed through, with its types.
fn passed_through(
    element_type: BpmnElementType,
    event_type: BpmnEventType,
) -> Vec<(Intent, BpmnElementType, BpmnEventType)> {
    [
        Intent::ElementActivating,
        Intent::ElementActivated,
        Intent::ElementCompleting,
        Intent::ElementCompleted,
    ]
    .into_iter()
    .map(|intent| (intent, element_type, event_type))
    .collect()
}

pub(super) fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

pub(super) fn set_variables(rule: &mut EngineRule, scope: Key, variables: Value) {
    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: scope,
        variables: JsonValue::from(variables),
        local: false,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

pub(super) fn resolve(rule: &mut EngineRule, incident_key: Key) {
    let outcome = rule.process(Command::ResolveIncident { incident_key });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

pub(super) fn cancel(rule: &mut EngineRule, instance: Key) {
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

/// Names of the variables ever created, in order (to check what never escaped its scope).
fn created_variables(rule: &EngineRule) -> Vec<String> {
    rule.records()
        .of_type(ValueType::Variable)
        .with_intent(Intent::Created)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Variable(v) => Some(v.name.clone()),
            _ => None,
        })
        .collect()
}

// --- undefined and manual tasks ---

#[test]
fn undefined_and_manual_tasks_pass_through_with_their_mappings() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/tasks.bpmn");
    let instance = rule.create("tasks", json!({"order": {"total": 21}}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance),
        json!({"order": {"total": 21}, "doubled": 42, "status": "signed"}),
        "the input 'amount' stays local to Review; the outputs reach the process"
    );
    assert_eq!(
        created_variables(&rule),
        vec!["order", "amount", "doubled", "status"]
    );
    assert_eq!(
        element_events(&rule, "Review"),
        passed_through(BpmnElementType::Task, BpmnEventType::Unspecified)
    );
    assert_eq!(
        element_events(&rule, "Sign"),
        passed_through(BpmnElementType::ManualTask, BpmnEventType::Unspecified)
    );
    // Nested in a subprocess, the last one (no outgoing flow) completes the subprocess.
    assert_eq!(
        element_events(&rule, "Label"),
        passed_through(BpmnElementType::ManualTask, BpmnEventType::Unspecified)
    );
    assert_eq!(
        element_events(&rule, "Packing").last().map(|e| e.0),
        Some(Intent::ElementCompleted)
    );
    // The boundary timer is armed on entry and cancelled on completion, as for any
    // activity; it never fires.
    let timers = rule.records().of_type(ValueType::Timer).shape();
    assert_eq!(
        timers,
        vec![
            (ValueType::Timer, Intent::Created),
            (ValueType::Timer, Intent::Canceled)
        ]
    );
    assert!(element_events(&rule, "ReviewTooLong").is_empty());
    rule.assert_replay_matches();
}

#[test]
fn a_failing_mapping_on_a_manual_task_is_an_incident_that_resolves_or_cancels() {
    let body = r#"<bpmn:startEvent id="s" />
        <bpmn:manualTask id="m"><bpmn:extensionElements><zeebe:ioMapping><zeebe:output source="=total / count" target="share" /></zeebe:ioMapping></bpmn:extensionElements></bpmn:manualTask>
        <bpmn:endEvent id="e" />
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="m" />
        <bpmn:sequenceFlow id="f2" sourceRef="m" targetRef="e" />"#;
    let xml = super::elements::model(body);

    // Fixed and resolved: the task completes and the instance goes on.
    let mut rule = EngineRule::new();
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({"total": 10, "count": 0}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::IoMappingError
    );
    assert_eq!(incidents[0].record.element_id, "m");
    assert_eq!(
        element_events(&rule, "m").last().map(|e| e.0),
        Some(Intent::ElementCompleting),
        "the task waits in ELEMENT_COMPLETING"
    );
    set_variables(&mut rule, instance, json!({"count": 4}));
    resolve(&mut rule, incidents[0].key);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["share"], json!(2.5));
    rule.assert_replay_matches();

    // Cancelled while it waits: terminated, incident resolved.
    let mut rule = EngineRule::new();
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({"total": 10, "count": 0}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.incidents(instance).is_empty());
    assert_eq!(
        element_events(&rule, "m").last().map(|e| e.0),
        Some(Intent::ElementTerminated)
    );
    rule.assert_replay_matches();
}

// --- none and link throw events ---

#[test]
fn a_none_throw_event_passes_through_and_links_jump_within_their_scope() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/throw-events.bpmn");
    let instance = rule.create("throw-events", json!({}));
    assert_eq!(
        element_events(&rule, "Received"),
        passed_through(BpmnElementType::IntermediateThrowEvent, BpmnEventType::None)
    );
    assert_eq!(rule.variables(instance)["received"], json!(true));
    // Inside the subprocess the throw goes to the subprocess's catch event of that
    // name, never to the root's.
    assert_eq!(
        element_events(&rule, "GoSkip"),
        passed_through(BpmnElementType::IntermediateThrowEvent, BpmnEventType::Link)
    );
    assert_eq!(
        element_events(&rule, "Skipped"),
        passed_through(BpmnElementType::IntermediateCatchEvent, BpmnEventType::Link)
    );
    assert!(element_events(&rule, "RootSkip").is_empty());
    assert!(element_events(&rule, "NeverReached").is_empty());

    // Not done: the gateway's default goes to the "Retry" link, back to Work.
    let (job, _) = rule.job("work");
    rule.complete(job, json!({"done": false}));
    let lifecycle = rule.records().lifecycle();
    let thrown = lifecycle
        .iter()
        .position(|e| *e == ("RetryThrow".to_owned(), Intent::ElementCompleted))
        .expect("the link was thrown");
    assert_eq!(
        lifecycle[thrown + 1],
        ("RetryCatch".to_owned(), Intent::ElementActivating),
        "the catch event is entered right after the throw event completes, no flow between"
    );
    let (job, _) = rule.job("work");
    rule.complete(job, json!({"done": true}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        element_events(&rule, "RetryCatch")
            .iter()
            .filter(|e| e.0 == Intent::ElementCompleted)
            .count(),
        1
    );
    rule.assert_replay_matches();
}

#[test]
fn cancelling_after_a_link_loop_terminates_the_waiting_task() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/throw-events.bpmn");
    let instance = rule.create("throw-events", json!({}));
    let (job, _) = rule.job("work");
    rule.complete(job, json!({"done": false}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.activate("work", 10).is_empty());
    assert_eq!(
        element_events(&rule, "Work").last().map(|e| e.0),
        Some(Intent::ElementTerminated)
    );
    rule.assert_replay_matches();
}

// --- script tasks ---

#[test]
fn script_tasks_evaluate_their_expression_and_merge_the_result() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/script-tasks.bpmn");
    let instance = rule.create("script-tasks", json!({"a": 2, "b": 3, "rate": 10}));
    assert_eq!(
        element_events(&rule, "Sum"),
        passed_through(BpmnElementType::ScriptTask, BpmnEventType::Unspecified)
    );
    // As in Zeebe, the result variable is written while the task completes.
    let sum_completing = rule
        .records()
        .records
        .iter()
        .position(|r| {
            r.intent == Intent::ElementCompleting
                && matches!(&r.value, RecordValue::ProcessInstance(v) if v.element_id == "Sum")
        })
        .expect("Sum completes");
    let sum_created = rule
        .records()
        .records
        .iter()
        .position(|r| matches!(&r.value, RecordValue::Variable(v) if v.name == "sum"))
        .expect("sum is written");
    assert!(sum_created > sum_completing);

    // The job-worker variant waits for its job, with its headers.
    let (job, record) = rule.job("script-worker");
    assert_eq!(record.element_id, "Remote");
    assert_eq!(record.retries, 2);
    assert_eq!(
        record.custom_headers.get("script").map(String::as_str),
        Some("a * b")
    );
    rule.complete(job, json!({"remote": "ok"}));

    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance),
        json!({
            "a": 2, "b": 3, "rate": 10,
            "sum": 5,
            "orderFee": 50,
            "remote": "ok",
            "doubled": 10
        }),
        "'fee' stays local to the task that has output mappings; the nested script's \
         result propagates to the process as a job's variables would"
    );
    assert!(created_variables(&rule).contains(&"fee".to_owned()));
    rule.assert_replay_matches();
}

#[test]
fn a_failing_script_is_an_incident_evaluated_again_on_resolve() {
    let body = r#"<bpmn:startEvent id="s" />
        <bpmn:scriptTask id="calc"><bpmn:extensionElements><zeebe:script expression="=total / count" resultVariable="share" /></bpmn:extensionElements></bpmn:scriptTask>
        <bpmn:endEvent id="e" />
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="calc" />
        <bpmn:sequenceFlow id="f2" sourceRef="calc" targetRef="e" />"#;
    let xml = super::elements::model(body);

    let mut rule = EngineRule::new();
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({"total": 10, "count": 0}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(incidents[0].record.element_id, "calc");
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("division by zero"),
        "{}",
        incidents[0].record.error_message
    );
    assert_eq!(
        element_events(&rule, "calc"),
        vec![(
            Intent::ElementActivating,
            BpmnElementType::ScriptTask,
            BpmnEventType::Unspecified
        )],
        "nothing is written before the expression is evaluated"
    );
    set_variables(&mut rule, instance, json!({"count": 4}));
    resolve(&mut rule, incidents[0].key);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["share"], json!(2.5));
    rule.assert_replay_matches();

    let mut rule = EngineRule::new();
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({"total": 10, "count": 0}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.incidents(instance).is_empty());
    rule.assert_replay_matches();
}

// --- send tasks, message throw and message end events (jobs) ---

#[test]
fn send_tasks_and_message_throw_and_end_events_wait_for_their_jobs() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-throw.bpmn");
    let instance = rule.create("message-throw", json!({"orderId": "o-1"}));

    let (job, record) = rule.job("notify");
    assert_eq!(record.element_id, "Notify");
    assert_eq!(
        record.custom_headers.get("topic").map(String::as_str),
        Some("orders")
    );
    rule.complete(job, json!({}));

    // The throw event's job sees its input mapping; the output maps the job's result.
    let (job, record) = rule.job("publish-shipped");
    assert_eq!(record.element_id, "Shipped");
    assert_eq!(record.variables.to_value()["key"], json!("o-1"));
    rule.complete(job, json!({"messageId": "m-7"}));
    assert_eq!(
        element_events(&rule, "Shipped"),
        passed_through(
            BpmnElementType::IntermediateThrowEvent,
            BpmnEventType::Message
        )
    );

    let (job, record) = rule.job("publish-closed");
    assert_eq!((record.element_id.as_str(), record.retries), ("Done", 5));
    assert_eq!(
        record.variables.to_value()["closedOrder"],
        json!("o-1"),
        "a message end event's input mappings are its job's variables"
    );
    assert_eq!(
        element_events(&rule, "Done").last(),
        Some(&(
            Intent::ElementActivated,
            BpmnElementType::EndEvent,
            BpmnEventType::Message
        )),
        "the message end event waits for its job"
    );
    rule.complete(job, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["shippedMessageId"], json!("m-7"));
    assert!(element_events(&rule, "Failed").is_empty());
    rule.assert_replay_matches();
}

#[test]
fn an_error_from_a_message_end_events_job_is_caught_around_its_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-throw.bpmn");
    let instance = rule.create("message-throw", json!({"orderId": "o-1"}));
    for job_type in ["notify", "publish-shipped"] {
        let (job, _) = rule.job(job_type);
        rule.complete(job, json!({}));
    }
    let (job, _) = rule.job("publish-closed");
    let thrown = rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key: job,
        error_code: "PUBLISH_FAILED".to_owned(),
        error_message: "broker down".to_owned(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!thrown.is_rejected(), "{:?}", thrown.response);
    assert_eq!(
        element_events(&rule, "Done").last().map(|e| e.0),
        Some(Intent::ElementTerminated)
    );
    assert_eq!(
        element_events(&rule, "Failed").last().map(|e| e.0),
        Some(Intent::ElementCompleted)
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_a_message_throw_waits_cancels_its_job() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-throw.bpmn");
    let instance = rule.create("message-throw", json!({"orderId": "o-1"}));
    let (job, _) = rule.job("notify");
    rule.complete(job, json!({}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .count(),
        1
    );
    assert!(rule.activate("publish-shipped", 10).is_empty());
    assert_eq!(
        element_events(&rule, "Shipped").last().map(|e| e.0),
        Some(Intent::ElementTerminated)
    );
    rule.assert_replay_matches();
}

// --- mappings on start and end events ---

#[test]
fn start_and_end_events_apply_their_output_mappings() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/start-end-mappings.bpmn");
    let instance = rule.create("start-end-mappings", json!({"items": ["a", "b", "c"]}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance),
        json!({
            "items": ["a", "b", "c"],
            "itemCount": 3,
            "order": {"state": "closed"},
            "price": 31
        }),
        "the subprocess start event wrote its local 'subTotal' (30), the end events \
         their outputs; 'order.state' merged into 'order' twice"
    );
    assert!(
        !rule
            .variables(instance)
            .as_object()
            .is_some_and(|v| v.contains_key("subTotal"))
    );
    for (id, event_type) in [
        ("Start", BpmnEventType::None),
        ("PricingStart", BpmnEventType::None),
    ] {
        assert_eq!(
            element_events(&rule, id),
            passed_through(BpmnElementType::StartEvent, event_type),
            "{id}"
        );
    }
    assert_eq!(
        element_events(&rule, "End"),
        passed_through(BpmnElementType::EndEvent, BpmnEventType::Terminate)
    );
    rule.assert_replay_matches();
}

#[test]
fn a_failing_start_event_output_is_an_incident_on_the_start_event() {
    let body = r#"<bpmn:startEvent id="s"><bpmn:extensionElements><zeebe:ioMapping><zeebe:output source="=total / count" target="share" /></zeebe:ioMapping></bpmn:extensionElements></bpmn:startEvent>
        <bpmn:endEvent id="e" />
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e" />"#;
    let mut rule = EngineRule::new();
    rule.deploy_xml(&super::elements::model(body));
    let instance = rule.create("p", json!({"total": 1, "count": 0}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(incidents[0].record.element_id, "s");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::IoMappingError
    );
    set_variables(&mut rule, instance, json!({"count": 2}));
    resolve(&mut rule, incidents[0].key);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["share"], json!(0.5));
    rule.assert_replay_matches();
}

#[test]
fn uuid_and_random_number_differ_per_evaluation_and_replay_the_same() {
    let body = r#"<bpmn:startEvent id="s" />
        <bpmn:scriptTask id="id"><bpmn:extensionElements><zeebe:script expression="=uuid()" resultVariable="id" /></bpmn:extensionElements></bpmn:scriptTask>
        <bpmn:scriptTask id="dice"><bpmn:extensionElements><zeebe:script expression="=[random number(), random number()]" resultVariable="dice" /></bpmn:extensionElements></bpmn:scriptTask>
        <bpmn:endEvent id="e" />
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="id" />
        <bpmn:sequenceFlow id="f2" sourceRef="id" targetRef="dice" />
        <bpmn:sequenceFlow id="f3" sourceRef="dice" targetRef="e" />"#;
    let mut rule = EngineRule::new();
    rule.deploy_xml(&super::elements::model(body));
    let first = rule.create("p", json!({}));
    let second = rule.create("p", json!({}));
    let (a, b) = (rule.variables(first), rule.variables(second));
    let id = a["id"].as_str().expect("a uuid string");
    assert_eq!(id.len(), 36, "{id}");
    assert_ne!(a["id"], b["id"], "two instances get two uuids");
    assert_ne!(a["dice"], b["dice"]);
    assert_ne!(
        a["dice"][0], a["dice"][1],
        "two draws in one expression differ"
    );
    // The seed is the entry's (partition, position, evaluation), never the machine's, so
    // every replica processing the command draws the same values.
    rule.assert_replay_matches();
}
