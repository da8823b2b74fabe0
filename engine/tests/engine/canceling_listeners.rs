//! `canceling` task listeners: a Camunda user task whose element is terminated waits in
//! ELEMENT_TERMINATING (`USER_TASK CANCELING`) while they run, one after the other, and
//! whatever waited on the termination goes on after the last one.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{
    IncidentErrorType, JobListenerEventType, JobResult, JobResultCorrections,
};
use rill_protocol::{Command, FailJob, Intent, JsonValue, Key, RecordValue, UpdateJob, ValueType};
use serde_json::json;

use super::elements::{flow, model};
use super::*;

const MINUTE: i64 = 60_000;

/// A Camunda user task `Review` with the listeners `types` on `canceling`, and `extra`
/// inside the same `bpmn:userTask` (boundary events are separate elements).
fn review(types: &[&str]) -> String {
    let listeners: String = types
        .iter()
        .map(|t| format!(r#"<zeebe:taskListener eventType="canceling" type="{t}" />"#))
        .collect();
    format!(
        r#"<bpmn:userTask id="Review"><bpmn:extensionElements><zeebe:userTask />
        <zeebe:taskListeners>{listeners}</zeebe:taskListeners>
        </bpmn:extensionElements></bpmn:userTask>"#
    )
}

/// start → Review → end.
fn simple(types: &[&str]) -> String {
    model(&format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:endEvent id="e" />{}{}"#,
        review(types),
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e")
    ))
}

fn cancel(rule: &mut EngineRule, instance: Key) -> Outcome {
    rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    })
}

fn task_intents(rule: &EngineRule) -> Vec<Intent> {
    rule.records()
        .events()
        .of_type(ValueType::UserTask)
        .records
        .iter()
        .map(|r| r.intent)
        .collect()
}

fn state(rule: &mut EngineRule, instance: Key) -> ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

/// Activates the canceling listener job of `job_type`.
fn canceling_job(rule: &mut EngineRule, job_type: &str) -> Key {
    let (key, job) = rule.job(job_type);
    assert_eq!(
        job.job_listener_event_type,
        JobListenerEventType::Canceling,
        "{job_type}"
    );
    key
}

/// The (value type, intent, element id or job type) of every event from `from` on,
/// for the record kinds a canceling listener's story is told in.
fn story(rule: &EngineRule, from: usize) -> Vec<(ValueType, Intent, String)> {
    rule.records().events().records[from..]
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => {
                Some((ValueType::ProcessInstance, r.intent, v.element_id.clone()))
            }
            RecordValue::UserTask(v) => Some((ValueType::UserTask, r.intent, v.element_id.clone())),
            RecordValue::Job(v) if r.intent != Intent::Activated => {
                Some((ValueType::Job, r.intent, v.job_type.clone()))
            }
            _ => None,
        })
        .collect()
}

fn events_so_far(rule: &EngineRule) -> usize {
    rule.records().events().count()
}

fn pi(intent: Intent, element: &str) -> (ValueType, Intent, String) {
    (ValueType::ProcessInstance, intent, element.to_owned())
}

fn ut(intent: Intent) -> (ValueType, Intent, String) {
    (ValueType::UserTask, intent, "Review".to_owned())
}

fn job(intent: Intent, job_type: &str) -> (ValueType, Intent, String) {
    (ValueType::Job, intent, job_type.to_owned())
}

fn live(rule: &EngineRule, element: &str, intent: Intent) -> bool {
    rule.records().element(element).with_intent(intent).exists()
}

#[test]
fn cancelling_the_instance_waits_for_the_canceling_listener() {
    let mut rule = EngineRule::new();
    let deployed = rule.deploy_xml(&simple(&["on-cancel"]));
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    let from = events_so_far(&rule);

    let canceled = cancel(&mut rule, instance);
    assert!(!canceled.is_rejected(), "{:?}", canceled.response);
    assert_eq!(
        story(&rule, from),
        vec![
            pi(Intent::ElementTerminating, "p"),
            pi(Intent::ElementTerminating, "Review"),
            ut(Intent::Canceling),
            job(Intent::Created, "on-cancel"),
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    rule.assert_replay_matches();

    let (job_key, listener) = rule.job("on-cancel");
    assert_eq!(
        listener.job_listener_event_type,
        JobListenerEventType::Canceling
    );
    let task_key = rule
        .records()
        .events()
        .of_type(ValueType::UserTask)
        .with_intent(Intent::Canceling)
        .records[0]
        .key;
    assert_eq!(
        listener.custom_headers["io.camunda.zeebe:userTaskKey"],
        task_key.get().to_string()
    );
    let from = events_so_far(&rule);
    let done = rule.complete(job_key, json!({}));
    assert!(!done.is_rejected(), "{:?}", done.response);
    assert_eq!(
        story(&rule, from),
        vec![
            job(Intent::Completed, "on-cancel"),
            ut(Intent::Canceled),
            pi(Intent::ElementTerminated, "Review"),
            pi(Intent::ElementTerminated, "p"),
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn two_canceling_listeners_run_one_after_the_other() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&simple(&["first", "second"]));
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    assert!(
        rule.activate("second", 1).is_empty(),
        "second waits for first"
    );
    let first = canceling_job(&mut rule, "first");
    rule.complete(first, json!({}));
    assert!(!live(&rule, "Review", Intent::ElementTerminated));
    let second = canceling_job(&mut rule, "second");
    rule.complete(second, json!({}));
    assert_eq!(
        task_intents(&rule),
        vec![
            Intent::Creating,
            Intent::Created,
            Intent::Canceling,
            Intent::Canceled
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_timer_boundary_event_waits_for_the_listener() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />{}
        <bpmn:boundaryEvent id="Late" attachedToRef="Review"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
        <bpmn:serviceTask id="Escalate"><bpmn:extensionElements><zeebe:taskDefinition type="escalate" /></bpmn:extensionElements></bpmn:serviceTask>
        <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />{}{}{}{}"#,
        review(&["on-cancel"]),
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e"),
        flow("f3", "Late", "Escalate"),
        flow("f4", "Escalate", "e2")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    rule.advance(MINUTE);
    rule.fire_due();
    // The task is held up; the boundary event is not entered yet.
    assert!(live(&rule, "Review", Intent::ElementTerminating));
    assert!(!live(&rule, "Review", Intent::ElementTerminated));
    assert!(!live(&rule, "Late", Intent::ElementActivating));
    assert!(
        !rule
            .records()
            .of_type(ValueType::ProcessEvent)
            .with_intent(Intent::Triggered)
            .exists()
    );
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    let from = events_so_far(&rule);
    rule.complete(job_key, json!({}));
    let after = story(&rule, from);
    assert_eq!(
        after[..4],
        [
            job(Intent::Completed, "on-cancel"),
            ut(Intent::Canceled),
            pi(Intent::ElementTerminated, "Review"),
            pi(Intent::ElementActivating, "Late"),
        ]
    );
    assert!(
        rule.records()
            .of_type(ValueType::ProcessEvent)
            .with_intent(Intent::Triggered)
            .exists()
    );
    // The process goes on along the boundary event's flow.
    let (escalate, _) = rule.job("escalate");
    rule.complete(escalate, json!({}));
    assert!(live(&rule, "e2", Intent::ElementCompleted));
    assert!(!live(&rule, "e", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_message_boundary_event_on_a_subprocess_waits_and_keeps_its_variables() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:subProcess id="Sub"><bpmn:startEvent id="ss" />{}<bpmn:endEvent id="se" />{}{}</bpmn:subProcess>
        <bpmn:boundaryEvent id="Stop" attachedToRef="Sub"><bpmn:messageEventDefinition messageRef="M" /></bpmn:boundaryEvent>
        <bpmn:endEvent id="e" /><bpmn:endEvent id="stopped" />{}{}{}"#,
        review(&["on-cancel"]),
        flow("sf1", "ss", "Review"),
        flow("sf2", "Review", "se"),
        flow("f1", "s", "Sub"),
        flow("f2", "Sub", "e"),
        flow("f3", "Stop", "stopped")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({"key": "k1"}));
    rule.publish("msg", "k1", 0, json!({"reason": "withdrawn"}));
    assert!(live(&rule, "Sub", Intent::ElementTerminating));
    assert!(!live(&rule, "Sub", Intent::ElementTerminated));
    assert!(!live(&rule, "Stop", Intent::ElementActivating));
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    let lifecycle = rule.records().lifecycle();
    let position = |element: &str, intent: Intent| {
        lifecycle
            .iter()
            .position(|(e, i)| e == element && *i == intent)
            .unwrap_or_else(|| panic!("no {element} {intent:?} in {lifecycle:?}"))
    };
    assert!(
        position("Review", Intent::ElementTerminated) < position("Sub", Intent::ElementTerminated)
    );
    assert!(
        position("Sub", Intent::ElementTerminated) < position("Stop", Intent::ElementActivating)
    );
    assert!(live(&rule, "stopped", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    // The message's variables arrived with the boundary event.
    assert_eq!(rule.variables(instance)["reason"], "withdrawn");
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_event_subprocess_starts_once_the_listener_completed() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />{}<bpmn:endEvent id="e" />
        <bpmn:subProcess id="OnError" triggeredByEvent="true">
          <bpmn:startEvent id="es"><bpmn:messageEventDefinition messageRef="M" /></bpmn:startEvent>
          <bpmn:endEvent id="ee" />{}
        </bpmn:subProcess>{}{}"#,
        review(&["on-cancel"]),
        flow("ef", "es", "ee"),
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({"key": "k1"}));
    rule.publish("msg", "k1", 0, json!({"why": "stop"}));
    assert!(live(&rule, "Review", Intent::ElementTerminating));
    assert!(!live(&rule, "OnError", Intent::ElementActivating));
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(live(&rule, "Review", Intent::ElementTerminated));
    assert!(live(&rule, "OnError", Intent::ElementCompleted));
    assert!(!live(&rule, "e", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["why"], "stop");
    rule.assert_replay_matches();
}

#[test]
fn an_embedded_subprocess_stays_terminating_until_the_listener_completed() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:subProcess id="Sub"><bpmn:startEvent id="ss" />{}
          <bpmn:userTask id="Other"><bpmn:extensionElements><zeebe:userTask /></bpmn:extensionElements></bpmn:userTask>
          <bpmn:parallelGateway id="fork" />{}{}{}</bpmn:subProcess>
        <bpmn:endEvent id="e" />{}{}"#,
        review(&["on-cancel"]),
        flow("sf1", "ss", "fork"),
        flow("sf2", "fork", "Review"),
        flow("sf3", "fork", "Other"),
        flow("f1", "s", "Sub"),
        flow("f2", "Sub", "e")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    // The sibling without listeners is terminated at once; the task and its
    // ancestors wait.
    assert!(live(&rule, "Other", Intent::ElementTerminated));
    assert!(live(&rule, "Sub", Intent::ElementTerminating));
    assert!(!live(&rule, "Sub", Intent::ElementTerminated));
    assert!(!live(&rule, "p", Intent::ElementTerminated));
    // Cancelling again changes nothing: the listener still runs.
    cancel(&mut rule, instance);
    assert_eq!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Created)
            .count(),
        1
    );
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    let tail: Vec<_> = rule
        .records()
        .lifecycle()
        .into_iter()
        .rev()
        .take(3)
        .collect();
    assert_eq!(
        tail,
        lc(&[
            ("p", Intent::ElementTerminated),
            ("Sub", Intent::ElementTerminated),
            ("Review", Intent::ElementTerminated),
        ])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn a_called_instance_holds_up_its_call_activity_and_the_parent() {
    let mut rule = EngineRule::new();
    let child = simple(&["on-cancel"]).replace(r#"id="p""#, r#"id="c""#);
    let parent = model(&format!(
        r#"<bpmn:startEvent id="s" /><bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement processId="c" /></bpmn:extensionElements></bpmn:callActivity><bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Call"),
        flow("f2", "Call", "e")
    ));
    let deployed = rule.deploy(&[
        ("parent.bpmn", parent.into_bytes()),
        ("child.bpmn", child.into_bytes()),
    ]);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    assert!(live(&rule, "Call", Intent::ElementTerminating));
    assert!(!live(&rule, "Call", Intent::ElementTerminated));
    assert!(!live(&rule, "c", Intent::ElementTerminated));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    let tail: Vec<_> = rule
        .records()
        .lifecycle()
        .into_iter()
        .rev()
        .take(4)
        .collect();
    assert_eq!(
        tail,
        lc(&[
            ("p", Intent::ElementTerminated),
            ("Call", Intent::ElementTerminated),
            ("c", Intent::ElementTerminated),
            ("Review", Intent::ElementTerminated),
        ])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn a_canceling_listener_can_neither_deny_nor_correct() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&simple(&["on-cancel"]));
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    let job_key = canceling_job(&mut rule, "on-cancel");
    let complete = |result: JobResult| Command::CompleteJob {
        job_key,
        variables: JsonValue::from(json!({})),
        result,
    };
    let denied = rule.process(complete(JobResult {
        denied: true,
        denied_reason: "no".to_owned(),
        ..JobResult::default()
    }));
    let (kind, reason) = rejection_of(&denied);
    assert_eq!(kind, rill_protocol::RejectionType::InvalidArgument);
    assert!(
        reason.contains("canceling listener cannot deny"),
        "{reason}"
    );
    let corrected = rule.process(complete(JobResult {
        corrected_attributes: vec!["assignee".to_owned()],
        corrections: JobResultCorrections {
            assignee: "ann".to_owned(),
            ..JobResultCorrections::default()
        },
        ..JobResult::default()
    }));
    let (kind, reason) = rejection_of(&corrected);
    assert_eq!(kind, rill_protocol::RejectionType::InvalidArgument);
    assert!(reason.contains("cannot correct"), "{reason}");
    // Nothing changed: a plain completion ends the cancellation.
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    rule.complete(job_key, json!({}));
    assert_eq!(
        task_intents(&rule),
        vec![
            Intent::Creating,
            Intent::Created,
            Intent::Canceling,
            Intent::Canceled
        ]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn a_failed_canceling_listener_raises_an_incident_and_resolving_it_goes_on() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&simple(&["on-cancel"]));
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.process(Command::FailJob(FailJob {
        job_key,
        retries: 0,
        error_message: "audit down".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::from(json!({})),
    }));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::TaskListenerNoRetries
    );
    assert_eq!(incidents[0].record.job_key, job_key.get());
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    rule.assert_replay_matches();

    rule.process(Command::UpdateJob(UpdateJob {
        job_key,
        retries: Some(1),
        timeout: None,
    }));
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!resolved.is_rejected(), "{:?}", resolved.response);
    let again = canceling_job(&mut rule, "on-cancel");
    assert_eq!(again, job_key);
    rule.complete(again, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert!(rule.incidents(instance).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn a_terminate_end_event_completes_its_scope_after_the_listener() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" /><bpmn:parallelGateway id="fork" />{}
        <bpmn:serviceTask id="Work"><bpmn:extensionElements><zeebe:taskDefinition type="work" /></bpmn:extensionElements></bpmn:serviceTask>
        <bpmn:endEvent id="stop"><bpmn:terminateEventDefinition /></bpmn:endEvent>
        <bpmn:endEvent id="e" />{}{}{}{}{}"#,
        review(&["on-cancel"]),
        flow("f1", "s", "fork"),
        flow("f2", "fork", "Review"),
        flow("f3", "fork", "Work"),
        flow("f4", "Work", "stop"),
        flow("f5", "Review", "e")
    ));
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({}));
    let (work, _) = rule.job("work");
    rule.complete(work, json!({}));
    assert!(live(&rule, "stop", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(live(&rule, "p", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_multi_instance_completion_condition_waits_for_the_listener() {
    let mut rule = EngineRule::new();
    let task = review(&["on-cancel"]).replace(
        "</bpmn:extensionElements></bpmn:userTask>",
        r#"</bpmn:extensionElements><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1,2]" inputElement="i" /></bpmn:extensionElements><bpmn:completionCondition>=true</bpmn:completionCondition></bpmn:multiInstanceLoopCharacteristics></bpmn:userTask>"#,
    );
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />{task}<bpmn:endEvent id="e" />{}{}"#,
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    let first = rule
        .records()
        .events()
        .of_type(ValueType::UserTask)
        .with_intent(Intent::Created)
        .records[0]
        .key;
    rule.process(Command::UserTask(
        rill_protocol::UserTaskCommand::Complete {
            user_task_key: first,
            variables: JsonValue::from(json!({})),
            action: String::new(),
        },
    ));
    // The other inner instance is canceled; the body waits for its listener.
    assert!(!live(&rule, "e", Intent::ElementActivating));
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(live(&rule, "e", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_caught_error_waits_for_a_sibling_held_up_by_its_listener() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:subProcess id="Sub"><bpmn:startEvent id="ss" /><bpmn:parallelGateway id="fork" />{}
          <bpmn:serviceTask id="Work"><bpmn:extensionElements><zeebe:taskDefinition type="work" /></bpmn:extensionElements></bpmn:serviceTask>
          {}{}{}</bpmn:subProcess>
        <bpmn:boundaryEvent id="Failed" attachedToRef="Sub"><bpmn:errorEventDefinition errorRef="E" /></bpmn:boundaryEvent>
        <bpmn:endEvent id="e" /><bpmn:endEvent id="failed" />{}{}{}"#,
        review(&["on-cancel"]),
        flow("sf1", "ss", "fork"),
        flow("sf2", "fork", "Review"),
        flow("sf3", "fork", "Work"),
        flow("f1", "s", "Sub"),
        flow("f2", "Sub", "e"),
        flow("f3", "Failed", "failed")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    let (work, _) = rule.job("work");
    let thrown = rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key: work,
        error_code: "BOOM".to_owned(),
        error_message: "broken".to_owned(),
        variables: JsonValue::from(json!({"cause": "disk"})),
    }));
    assert!(!thrown.is_rejected(), "{:?}", thrown.response);
    assert!(live(&rule, "Work", Intent::ElementTerminated));
    assert!(live(&rule, "Sub", Intent::ElementTerminating));
    assert!(!live(&rule, "Failed", Intent::ElementActivating));
    // The error's trigger is kept with the subprocess until then.
    assert!(
        rule.records()
            .of_type(ValueType::ProcessEvent)
            .with_intent(Intent::Triggering)
            .exists()
    );
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(live(&rule, "Sub", Intent::ElementTerminated));
    assert!(live(&rule, "failed", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["cause"], "disk");
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_a_boundary_event_waits_drops_the_boundary_event() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />{}
        <bpmn:boundaryEvent id="Late" attachedToRef="Review"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
        <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />{}{}{}"#,
        review(&["on-cancel"]),
        flow("f1", "s", "Review"),
        flow("f2", "Review", "e"),
        flow("f3", "Late", "e2")
    ));
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({}));
    rule.advance(MINUTE);
    rule.fire_due();
    cancel(&mut rule, instance);
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(!live(&rule, "Late", Intent::ElementActivating));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn an_ad_hoc_subprocess_completes_once_what_it_cancels_is_gone() {
    let mut rule = EngineRule::new();
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" />
        <bpmn:adHocSubProcess id="Work">
          <bpmn:extensionElements><zeebe:adHoc activeElementsCollection="=[&#34;Review&#34;, &#34;ask&#34;]" /></bpmn:extensionElements>
          {}
          <bpmn:serviceTask id="ask"><bpmn:extensionElements><zeebe:taskDefinition type="ask" /></bpmn:extensionElements></bpmn:serviceTask>
          <bpmn:completionCondition xsi:type="bpmn:tFormalExpression">=true</bpmn:completionCondition>
        </bpmn:adHocSubProcess>
        <bpmn:endEvent id="e" />{}{}"#,
        review(&["on-cancel"]),
        flow("f1", "s", "Work"),
        flow("f2", "Work", "e")
    ));
    let deployed = rule.deploy_xml(&xml);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    let (ask, _) = rule.job("ask");
    rule.complete(ask, json!({}));
    // The condition holds; the remaining task is canceled, and its listener holds
    // the subprocess in ELEMENT_COMPLETING.
    assert!(live(&rule, "Work", Intent::ElementCompleting));
    assert!(!live(&rule, "Work", Intent::ElementCompleted));
    rule.assert_replay_matches();
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(live(&rule, "Work", Intent::ElementCompleted));
    assert!(live(&rule, "e", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_modification_that_terminates_the_task_waits_for_its_listener() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(&simple(&["on-cancel"]));
    let instance = rule.create("p", json!({}));
    let review_key = rule
        .records()
        .element("Review")
        .with_intent(Intent::ElementActivating)
        .records[0]
        .key;
    let modified = rule.process(Command::ModifyProcessInstance(
        rill_protocol::ModifyProcessInstance {
            process_instance_key: instance,
            activate_instructions: Vec::new(),
            terminate_instructions: vec![review_key],
        },
    ));
    assert!(!modified.is_rejected(), "{:?}", modified.response);
    // The instance is left empty: it terminates with the task, after its listener.
    assert!(live(&rule, "p", Intent::ElementTerminating));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn an_instance_whose_task_is_canceling_cannot_be_migrated() {
    let mut rule = EngineRule::new();
    let xml = |name: &str| {
        model(&format!(
            r#"<bpmn:startEvent id="s" name="{name}" />{}
            <bpmn:boundaryEvent id="Late" attachedToRef="Review"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
            <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />{}{}{}"#,
            review(&["on-cancel"]),
            flow("f1", "s", "Review"),
            flow("f2", "Review", "e"),
            flow("f3", "Late", "e2")
        ))
    };
    rule.deploy_xml(&xml("v1"));
    let instance = rule.create("p", json!({}));
    let v2 = rule.deploy_xml(&xml("v2"));
    let RecordValue::Deployment(deployment) = v2.value() else {
        panic!("{:?}", v2.response)
    };
    let target = Key(deployment.processes_metadata[0].process_definition_key);
    rule.advance(MINUTE);
    rule.fire_due();
    let migrated = rule.process(Command::MigrateProcessInstance(
        rill_protocol::MigrateProcessInstance {
            process_instance_key: instance,
            target_process_definition_key: target,
            mapping_instructions: vec![rill_protocol::value::MigrationMappingInstruction {
                source_element_id: "Review".to_owned(),
                target_element_id: "Review".to_owned(),
            }],
        },
    ));
    let (kind, reason) = rejection_of(&migrated);
    assert_eq!(kind, rill_protocol::RejectionType::InvalidState);
    assert!(reason.contains("'Review' is being terminated"), "{reason}");
    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    assert!(live(&rule, "e2", Intent::ElementCompleted));
    rule.assert_replay_matches();
}

#[test]
fn a_canceling_listener_type_that_fails_raises_an_incident_on_the_task() {
    let mut rule = EngineRule::new();
    let xml = simple(&["on-cancel"]).replace(r#"type="on-cancel""#, r#"type="=kind""#);
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].record.element_id, "Review");
    rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"kind": "audit"})),
        local: false,
    }));
    let resolved = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!resolved.is_rejected(), "{:?}", resolved.response);
    let job_key = canceling_job(&mut rule, "audit");
    rule.complete(job_key, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn a_timer_on_a_call_activity_waits_for_the_called_instances_listener() {
    let mut rule = EngineRule::new();
    let child = simple(&["on-cancel"]).replace(r#"id="p""#, r#"id="c""#);
    let parent = model(&format!(
        r#"<bpmn:startEvent id="s" /><bpmn:callActivity id="Call"><bpmn:extensionElements><zeebe:calledElement processId="c" /></bpmn:extensionElements></bpmn:callActivity>
        <bpmn:boundaryEvent id="Late" attachedToRef="Call"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
        <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />{}{}{}"#,
        flow("f1", "s", "Call"),
        flow("f2", "Call", "e"),
        flow("f3", "Late", "e2")
    ));
    let deployed = rule.deploy(&[
        ("parent.bpmn", parent.into_bytes()),
        ("child.bpmn", child.into_bytes()),
    ]);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("p", json!({}));
    rule.advance(MINUTE);
    rule.fire_due();
    assert!(live(&rule, "Call", Intent::ElementTerminating));
    assert!(!live(&rule, "Late", Intent::ElementActivating));
    rule.assert_replay_matches();

    let job_key = canceling_job(&mut rule, "on-cancel");
    rule.complete(job_key, json!({}));
    let lifecycle = rule.records().lifecycle();
    let at = |element: &str, intent: Intent| {
        lifecycle
            .iter()
            .position(|(e, i)| e == element && *i == intent)
            .unwrap_or_else(|| panic!("no {element} {intent:?} in {lifecycle:?}"))
    };
    assert!(at("c", Intent::ElementTerminated) < at("Call", Intent::ElementTerminated));
    assert!(at("Call", Intent::ElementTerminated) < at("Late", Intent::ElementActivating));
    assert!(live(&rule, "e2", Intent::ElementCompleted));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn the_instance_ends_only_when_every_held_up_task_is_canceled() {
    let mut rule = EngineRule::new();
    let second = review(&["audit"]).replace(r#"id="Review""#, r#"id="Check""#);
    let xml = model(&format!(
        r#"<bpmn:startEvent id="s" /><bpmn:parallelGateway id="fork" />{}{second}
        <bpmn:endEvent id="e" /><bpmn:endEvent id="e2" />{}{}{}{}{}"#,
        review(&["on-cancel"]),
        flow("f1", "s", "fork"),
        flow("f2", "fork", "Review"),
        flow("f3", "fork", "Check"),
        flow("f4", "Review", "e"),
        flow("f5", "Check", "e2")
    ));
    rule.deploy_xml(&xml);
    let instance = rule.create("p", json!({}));
    cancel(&mut rule, instance);
    let audit = canceling_job(&mut rule, "audit");
    rule.complete(audit, json!({}));
    assert!(live(&rule, "Check", Intent::ElementTerminated));
    assert!(!live(&rule, "p", Intent::ElementTerminated));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    rule.assert_replay_matches();
    let on_cancel = canceling_job(&mut rule, "on-cancel");
    rule.complete(on_cancel, json!({}));
    assert!(live(&rule, "p", Intent::ElementTerminated));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

/// Canceling listeners came after the first release: under engine version 1 the
/// deployment is refused, naming the task.
#[test]
fn canceling_listeners_need_engine_version_2() {
    let mut rule = EngineRule::new();
    rule.engine_version = rill_protocol::version::ENGINE_VERSION_1;
    let outcome = rule.deploy(&[("test.bpmn", simple(&["on-cancel"]).into_bytes())]);
    let (_, reason) = rejection_of(&outcome);
    assert!(
        reason.contains("the canceling task listener of user task 'Review' needs engine version 2"),
        "{reason}"
    );
    // A user task without one deploys under engine version 1.
    let outcome = rule.deploy_xml(&simple(&[]));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}
