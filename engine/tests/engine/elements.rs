//! Element behaviour, one small model per case.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::IncidentErrorType;
use rill_protocol::{Command, Intent, JsonValue, Key, RejectionType, ValueType};
use serde_json::{Value, json};

use super::*;

/// Wraps flow elements into a deployable process `p`.
pub fn model(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="p" isExecutable="true">
{body}
  </bpmn:process>
  <bpmn:message id="M" name="msg"><bpmn:extensionElements><zeebe:subscription correlationKey="=key" /></bpmn:extensionElements></bpmn:message>
  <bpmn:error id="E" errorCode="BOOM" />
</bpmn:definitions>"#
    )
}

pub fn task(id: &str, job_type: &str) -> String {
    format!(
        r#"<bpmn:serviceTask id="{id}"><bpmn:extensionElements><zeebe:taskDefinition type="{job_type}" /></bpmn:extensionElements></bpmn:serviceTask>"#
    )
}

pub fn flow(id: &str, from: &str, to: &str) -> String {
    format!(r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}" />"#)
}

pub fn cond_flow(id: &str, from: &str, to: &str, condition: &str) -> String {
    format!(
        r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}"><bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">{condition}</bpmn:conditionExpression></bpmn:sequenceFlow>"#
    )
}

fn start(rule: &mut EngineRule, body: &str, variables: Value) -> Key {
    rule.deploy_xml(&model(body));
    rule.create("p", variables)
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

fn complete_one(rule: &mut EngineRule, job_type: &str, variables: Value) {
    let (key, _) = rule.job(job_type);
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

#[test]
fn none_start_to_none_end_completes_at_once() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f", "s", "e"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({"x": 1}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn exclusive_gateway_picks_the_first_true_condition_or_the_default() {
    let body = |_: ()| {
        [
            r#"<bpmn:startEvent id="s" />"#,
            r#"<bpmn:exclusiveGateway id="g" default="fd" />"#,
            &task("high", "high"),
            &task("mid", "mid"),
            &task("low", "low"),
            &flow("f0", "s", "g"),
            &cond_flow("fh", "g", "high", "=x &gt; 10"),
            &cond_flow("fm", "g", "mid", "=x &gt; 5"),
            &flow("fd", "g", "low"),
        ]
        .concat()
    };
    for (x, expected) in [(11, "high"), (7, "mid"), (1, "low")] {
        let mut rule = EngineRule::new();
        start(&mut rule, &body(()), json!({"x": x}));
        let jobs: Vec<String> = ["high", "mid", "low"]
            .iter()
            .filter(|t| !rule.activate(t, 10).is_empty())
            .map(|t| (*t).to_owned())
            .collect();
        assert_eq!(jobs, vec![expected.to_owned()], "x = {x}");
    }
}

#[test]
fn exclusive_gateway_without_match_raises_an_incident_that_resolves_after_a_fix() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:exclusiveGateway id="g" />"#,
        &task("a", "a"),
        &task("b", "b"),
        &flow("f0", "s", "g"),
        &cond_flow("fa", "g", "a", "=x = 1"),
        &cond_flow("fb", "g", "b", "=x = 2"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({"x": 3}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ConditionError
    );
    assert_eq!(incidents[0].record.element_id, "g");
    assert!(
        incidents[0].record.error_message.contains("'g'"),
        "{}",
        incidents[0].record.error_message
    );

    // Resolving without a fix raises a new incident.
    rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    let again = rule.incidents(instance);
    assert_eq!(again.len(), 1);
    assert_ne!(again[0].key, incidents[0].key);

    let set = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"x": 2})),
        local: false,
    }));
    assert!(!set.is_rejected());
    rule.process(Command::ResolveIncident {
        incident_key: again[0].key,
    });
    assert!(rule.incidents(instance).is_empty());
    complete_one(&mut rule, "b", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_condition_that_is_not_boolean_is_a_condition_error() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:exclusiveGateway id="g" default="fb" />"#,
        &task("a", "a"),
        &task("b", "b"),
        &flow("f0", "s", "g"),
        &cond_flow("fa", "g", "a", "=x"),
        &flow("fb", "g", "b"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({"x": "yes"}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert!(incidents[0].record.error_message.contains("BOOLEAN"));
}

fn fork_join(branches: usize) -> String {
    let mut body = vec![
        r#"<bpmn:startEvent id="s" />"#.to_owned(),
        r#"<bpmn:parallelGateway id="fork" />"#.to_owned(),
        r#"<bpmn:parallelGateway id="join" />"#.to_owned(),
        task("after", "after"),
        r#"<bpmn:endEvent id="e" />"#.to_owned(),
        flow("f0", "s", "fork"),
        flow("fj", "join", "after"),
        flow("fe", "after", "e"),
    ];
    for i in 0..branches {
        body.push(task(&format!("t{i}"), &format!("work{i}")));
        body.push(flow(&format!("in{i}"), "fork", &format!("t{i}")));
        body.push(flow(&format!("out{i}"), &format!("t{i}"), "join"));
    }
    body.concat()
}

#[test]
fn parallel_join_waits_for_every_branch_and_fires_once() {
    let mut rule = EngineRule::new();
    let instance = start(&mut rule, &fork_join(3), json!({}));
    for i in 0..3 {
        assert!(
            rule.activate("after", 10).is_empty(),
            "join fired early after {i} branches"
        );
        complete_one(
            &mut rule,
            &format!("work{i}"),
            json!({ format!("r{i}"): i }),
        );
    }
    assert_eq!(
        rule.records()
            .element("join")
            .with_intent(Intent::ElementActivated)
            .count(),
        1
    );
    complete_one(&mut rule, "after", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance), json!({"r0": 0, "r1": 1, "r2": 2}));
    rule.assert_replay_matches();
}

#[test]
fn a_fork_straight_into_a_join_fires_the_join_once() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:parallelGateway id="fork" />"#,
        r#"<bpmn:parallelGateway id="join" />"#,
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f0", "s", "fork"),
        &flow("a", "fork", "join"),
        &flow("b", "fork", "join"),
        &flow("f1", "join", "e"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.records()
            .element("e")
            .with_intent(Intent::ElementCompleted)
            .count(),
        1
    );
    rule.assert_replay_matches();
}

#[test]
fn terminate_end_event_ends_the_other_branches() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:parallelGateway id="fork" />"#,
        &task("slow", "slow"),
        &task("fast", "fast"),
        r#"<bpmn:endEvent id="stop"><bpmn:terminateEventDefinition /></bpmn:endEvent>"#,
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f0", "s", "fork"),
        &flow("f1", "fork", "slow"),
        &flow("f2", "fork", "fast"),
        &flow("f3", "fast", "stop"),
        &flow("f4", "slow", "e"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({}));
    let (slow, _) = rule.job("slow");
    complete_one(&mut rule, "fast", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(
        rule.records()
            .element("slow")
            .with_intent(Intent::ElementTerminated)
            .exists()
    );
    assert_eq!(
        rule.complete(slow, json!({})).rejection().rejection_type,
        RejectionType::NotFound
    );
    rule.assert_replay_matches();
}

#[test]
fn embedded_subprocess_runs_its_content_and_its_output_mapping() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:subProcess id="sub">
             <bpmn:extensionElements><zeebe:ioMapping>
               <zeebe:input source="=base + 1" target="local" />
               <zeebe:output source="=local * 10" target="result" />
             </zeebe:ioMapping></bpmn:extensionElements>
             <bpmn:startEvent id="ss" />"#,
        &task("inner", "inner"),
        r#"<bpmn:endEvent id="se" />"#,
        &flow("s1", "ss", "inner"),
        &flow("s2", "inner", "se"),
        r#"</bpmn:subProcess>"#,
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f0", "s", "sub"),
        &flow("f1", "sub", "e"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({"base": 1}));
    let (inner, job) = rule.job("inner");
    assert_eq!(job.variables.to_value(), json!({"base": 1, "local": 2}));
    // `local` exists in the subprocess scope: the job's update lands there.
    rule.complete(inner, json!({"local": 5, "fresh": true}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        rule.variables(instance),
        json!({"base": 1, "fresh": true, "result": 50})
    );
    rule.assert_replay_matches();
}

#[test]
fn error_end_event_in_a_subprocess_is_caught_by_its_boundary() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:subProcess id="sub"><bpmn:startEvent id="ss" />"#,
        r#"<bpmn:endEvent id="fail"><bpmn:errorEventDefinition errorRef="E" /></bpmn:endEvent>"#,
        &flow("s1", "ss", "fail"),
        r#"</bpmn:subProcess>"#,
        r#"<bpmn:boundaryEvent id="caught" attachedToRef="sub"><bpmn:errorEventDefinition errorRef="E" /></bpmn:boundaryEvent>"#,
        &task("handle", "handle"),
        r#"<bpmn:endEvent id="ok" />"#,
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f0", "s", "sub"),
        &flow("f1", "sub", "ok"),
        &flow("f2", "caught", "handle"),
        &flow("f3", "handle", "e"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({}));
    assert!(
        rule.records()
            .element("sub")
            .with_intent(Intent::ElementTerminated)
            .exists()
    );
    complete_one(&mut rule, "handle", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(!rule.records().element("ok").exists());
    rule.assert_replay_matches();
}

#[test]
fn an_uncaught_error_from_a_job_is_an_incident_and_the_job_can_be_retried() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        &task("t", "t"),
        &flow("f0", "s", "t"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({}));
    let (job, _) = rule.job("t");
    rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key: job,
        error_code: "NOPE".into(),
        error_message: "nobody listens".into(),
        variables: JsonValue::null(),
    }));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::UnhandledErrorEvent
    );
    assert!(incidents[0].record.error_message.contains("'NOPE'"));
    assert!(rule.activate("t", 10).is_empty());
    rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    complete_one(&mut rule, "t", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn non_interrupting_cycle_timer_fires_repeatedly_while_the_task_runs() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        &task("t", "t"),
        r#"<bpmn:boundaryEvent id="tick" cancelActivity="false" attachedToRef="t"><bpmn:timerEventDefinition><bpmn:timeCycle>R2/PT10S</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:boundaryEvent>"#,
        r#"<bpmn:endEvent id="e" />"#,
        r#"<bpmn:endEvent id="te" />"#,
        &flow("f0", "s", "t"),
        &flow("f1", "t", "e"),
        &flow("f2", "tick", "te"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({}));
    for _ in 0..3 {
        rule.advance(10_000);
        rule.fire_due();
    }
    assert_eq!(
        rule.records()
            .element("tick")
            .with_intent(Intent::ElementCompleted)
            .count(),
        2
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    complete_one(&mut rule, "t", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn receive_task_and_message_catch_correlate_with_the_key_evaluated_on_entry() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:receiveTask id="r" messageRef="M" />"#,
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f0", "s", "r"),
        &flow("f1", "r", "e"),
    ]
    .concat();
    rule.deploy_xml(&model(&body));
    let a = rule.create("p", json!({"key": "a"}));
    let b = rule.create("p", json!({"key": 42}));
    rule.publish("msg", "42", 0, json!({"got": "b"}));
    assert_eq!(state(&mut rule, a), ProcessInstanceState::Active);
    assert_eq!(state(&mut rule, b), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(b)["got"], json!("b"));
    rule.publish("msg", "a", 0, json!({}));
    assert_eq!(state(&mut rule, a), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_message_reaches_one_instance_of_a_process_and_a_correlation_key_error_is_an_incident() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:intermediateCatchEvent id="c"><bpmn:messageEventDefinition messageRef="M" /></bpmn:intermediateCatchEvent>"#,
        &flow("f0", "s", "c"),
    ]
    .concat();
    rule.deploy_xml(&model(&body));
    let first = rule.create("p", json!({"key": "k"}));
    let second = rule.create("p", json!({"key": "k"}));
    rule.publish("msg", "k", 60_000, json!({}));
    let done = [first, second]
        .into_iter()
        .filter(|i| rule.instance_state(*i).unwrap().state == ProcessInstanceState::Completed)
        .count();
    assert_eq!(done, 1, "one message, one instance");
    // The buffered message does not reach a later instance of the same process.
    let third = rule.create("p", json!({"key": "k"}));
    assert_eq!(state(&mut rule, third), ProcessInstanceState::Active);

    let bad = rule.create("p", json!({"key": {"not": "a key"}}));
    let incidents = rule.incidents(bad);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    rule.assert_replay_matches();
}

#[test]
fn message_ttl_expiry_and_duplicate_ids() {
    let mut rule = EngineRule::new();
    let publish = |id: &str| {
        Command::PublishMessage(rill_protocol::PublishMessage {
            name: "msg".into(),
            correlation_key: "k".into(),
            time_to_live: 1_000,
            message_id: id.into(),
            variables: JsonValue::null(),
        })
    };
    assert!(!rule.process(publish("m-1")).is_rejected());
    let duplicate = rule.process(publish("m-1"));
    assert_eq!(
        duplicate.rejection().rejection_type,
        RejectionType::AlreadyExists
    );
    assert!(duplicate.rejection().reason.contains("'m-1'"));
    rule.advance(1_000);
    let expired = rule.fire_due();
    assert_eq!(expired.len(), 1);
    assert!(
        rule.records()
            .of_type(ValueType::Message)
            .with_intent(Intent::Expired)
            .exists()
    );
    assert!(
        !rule.process(publish("m-1")).is_rejected(),
        "the id is free again once expired"
    );
    rule.assert_replay_matches();
}

#[test]
fn input_mapping_error_is_an_io_mapping_incident_and_resolving_retries_it() {
    let mut rule = EngineRule::new();
    // A range has no JSON form: evaluating the mapping fails while `x` is a number.
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="t" /><zeebe:ioMapping><zeebe:input source="=if x = 1 then [1..3] else x" target="y" /></zeebe:ioMapping></bpmn:extensionElements></bpmn:serviceTask>"#,
        &flow("f0", "s", "t"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({"x": 1}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::IoMappingError
    );
    assert_eq!(incidents[0].record.element_id, "t");
    assert!(
        rule.activate("t", 10).is_empty(),
        "no job while the mapping fails"
    );
    rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"x": 2})),
        local: false,
    }));
    rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    let (_, job) = rule.job("t");
    assert_eq!(job.variables.to_value()["y"], json!(2));
    rule.assert_replay_matches();
}

#[test]
fn timer_and_job_expressions_are_evaluated_on_entry() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>=delay</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#,
        r#"<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="=kind + &quot;-job&quot;" retries="=tries" /></bpmn:extensionElements></bpmn:serviceTask>"#,
        &flow("f0", "s", "w"),
        &flow("f1", "w", "t"),
    ]
    .concat();
    let instance = start(
        &mut rule,
        &body,
        json!({"delay": "PT5S", "kind": "mail", "tries": 7}),
    );
    assert_eq!(rule.next_due().map(|d| d.millis()), Some(rule.now + 5_000));
    rule.advance(5_000);
    rule.fire_due();
    let (_, job) = rule.job("mail-job");
    assert_eq!(job.retries, 7);
    // A bad duration is an incident on the catch event.
    let bad = rule.create("p", json!({"delay": "soon"}));
    let incidents = rule.incidents(bad);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(incidents[0].record.element_id, "w");
    let _ = instance;
}

#[test]
fn cancel_terminates_every_element_and_cancels_jobs_and_timers() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:parallelGateway id="fork" />"#,
        &task("t", "t"),
        r#"<bpmn:intermediateCatchEvent id="wait"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>"#,
        r#"<bpmn:receiveTask id="r" messageRef="M" />"#,
        &flow("f0", "s", "fork"),
        &flow("f1", "fork", "t"),
        &flow("f2", "fork", "wait"),
        &flow("f3", "fork", "r"),
    ]
    .concat();
    let instance = start(&mut rule, &body, json!({"key": "k"}));
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .exists()
    );
    assert!(
        rule.records()
            .of_type(ValueType::Timer)
            .with_intent(Intent::Canceled)
            .exists()
    );
    assert!(
        rule.records()
            .of_type(ValueType::MessageSubscription)
            .with_intent(Intent::Deleted)
            .exists()
    );
    assert!(rule.activate("t", 10).is_empty());
    assert_eq!(
        rule.next_due(),
        None,
        "nothing is left due: the timer and the job went with the instance"
    );
    let again = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert_eq!(again.rejection().rejection_type, RejectionType::NotFound);
    rule.assert_replay_matches();
}
