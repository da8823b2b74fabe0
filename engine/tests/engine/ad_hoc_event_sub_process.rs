//! Event subprocesses of ad-hoc subprocesses (Zeebe 8.8): the ad-hoc subprocess holds
//! their triggers and runs a triggered one directly in it, beside its inner instances.
//! A non-interrupting one ends an execution path when it completes (the completion
//! condition, or the job-worker implementation's next job); an interrupting one
//! terminates the inner instances (and the job) and completes the ad-hoc subprocess
//! when it completes. Fixture: `tests/fixtures/elements/ad-hoc-event-subprocess.bpmn`.

use rill_protocol::value::{
    AdHocSubProcessActivateElement, BpmnElementType, IncidentErrorType, JobKind, JobResult,
    JobResultType,
};
use rill_protocol::{
    ActivateAdHocSubProcessActivities, BroadcastSignal, Command, Intent, JsonValue, Key,
    RecordValue, RejectionType, ThrowError, ValueType,
};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = "elements/ad-hoc-event-subprocess.bpmn";
const MINUTE: i64 = 60_000;

fn rule() -> EngineRule {
    let mut rule = EngineRule::new();
    rule.deploy_fixture(FIXTURE);
    rule
}

fn count(rule: &EngineRule, id: &str, intent: Intent) -> usize {
    rule.element_events(id, intent).len()
}

/// The key of the one instance of `id` (ELEMENT_ACTIVATED).
fn key_of(rule: &EngineRule, id: &str) -> Key {
    let activated = rule.element_events(id, Intent::ElementActivated);
    assert_eq!(activated.len(), 1, "{id} activated once");
    activated[0].0
}

fn complete_job(rule: &mut EngineRule, job_type: &str, variables: Value) {
    let (key, _) = rule.job(job_type);
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn publish(rule: &mut EngineRule, name: &str) {
    let outcome = rule.publish(name, "o-1", 0, json!({}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

fn state(rule: &mut EngineRule, instance: Key) -> rill_engine::ProcessInstanceState {
    rule.instance_state(instance).expect("instance").state
}

fn activation(key: Key, ids: &[&str]) -> Command {
    Command::ActivateAdHocSubProcessActivities(ActivateAdHocSubProcessActivities {
        ad_hoc_sub_process_instance_key: key,
        elements: ids
            .iter()
            .map(|id| AdHocSubProcessActivateElement {
                element_id: (*id).to_owned(),
                variables: JsonValue::from(json!({})),
            })
            .collect(),
        cancel_remaining_instances: false,
    })
}

/// The position of an element's first event with `intent` in the lifecycle.
fn at(rule: &EngineRule, id: &str, intent: Intent) -> usize {
    rule.records()
        .lifecycle()
        .iter()
        .position(|(element, i)| element == id && *i == intent)
        .unwrap_or_else(|| panic!("no {intent:?} of {id}"))
}

#[test]
fn a_non_interrupting_message_event_subprocess_runs_beside_the_inner_instances() {
    let mut rule = rule();
    let instance = rule.create(
        "esp-message",
        json!({"tools": ["Search"], "orderId": "o-1"}),
    );
    let tools = key_of(&rule, "Tools");
    // The ad-hoc subprocess holds both event subprocesses' subscriptions.
    let opened: Vec<(i64, String)> = rule
        .records()
        .events()
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::ProcessMessageSubscription(v) => {
                (v.element_instance_key, v.element_id.clone())
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        opened,
        vec![
            (tools.get(), "Note".to_owned()),
            (tools.get(), "Stop".to_owned())
        ]
    );

    publish(&mut rule, "note");
    let on_note = rule.element_events("OnNote", Intent::ElementActivated);
    assert_eq!(on_note.len(), 1);
    assert_eq!(on_note[0].1.flow_scope_key, tools.get());
    assert_eq!(
        on_note[0].1.bpmn_element_type,
        BpmnElementType::EventSubProcess
    );
    assert_eq!(count(&rule, "Search", Intent::ElementTerminated), 0);

    // The event subprocess ends first: the inner instance keeps the ad-hoc open.
    complete_job(&mut rule, "record", json!({}));
    assert_eq!(count(&rule, "OnNote", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 0);

    complete_job(&mut rule, "search", json!({"result": "found"}));
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "After", Intent::ElementActivated), 1);
    // Only inner instances add to the output collection.
    assert_eq!(rule.variables(instance)["results"], json!(["found"]));
    let deleted = rule
        .records()
        .events()
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(Intent::Deleted)
        .count();
    assert_eq!(deleted, 2, "closed with the ad-hoc subprocess");
    complete_job(&mut rule, "after", json!({}));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn the_last_path_to_end_may_be_the_event_subprocess() {
    let mut rule = rule();
    rule.create(
        "esp-message",
        json!({"tools": ["Search"], "orderId": "o-1"}),
    );
    publish(&mut rule, "note");
    complete_job(&mut rule, "search", json!({"result": "found"}));
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "record", json!({}));
    assert!(
        at(&rule, "OnNote", Intent::ElementCompleted)
            < at(&rule, "Tools", Intent::ElementCompleted)
    );
    assert_eq!(count(&rule, "After", Intent::ElementActivated), 1);
    rule.assert_replay_matches();
}

#[test]
fn a_non_interrupting_timer_event_subprocess_fires_beside_and_closes_with_the_ad_hoc() {
    let mut rule = rule();
    let instance = rule.create("esp-timer", json!({}));
    let watch = key_of(&rule, "Watch");
    rule.advance(MINUTE);
    rule.fire_due();
    let reminder = rule.element_events("OnReminder", Intent::ElementActivated);
    assert_eq!(reminder.len(), 1);
    assert_eq!(reminder[0].1.flow_scope_key, watch.get());
    assert_eq!(count(&rule, "Check", Intent::ElementTerminated), 0);
    complete_job(&mut rule, "remind", json!({}));
    assert_eq!(count(&rule, "Watch", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "check", json!({}));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );

    // Done before the timer is due: the timer is cancelled with the ad-hoc subprocess.
    let second = rule.create("esp-timer", json!({}));
    complete_job(&mut rule, "check", json!({}));
    assert_eq!(
        state(&mut rule, second),
        rill_engine::ProcessInstanceState::Completed
    );
    let canceled = rule
        .records()
        .events()
        .of_type(ValueType::Timer)
        .with_intent(Intent::Canceled)
        .count();
    assert_eq!(canceled, 1);
    rule.advance(MINUTE);
    assert!(rule.fire_due().is_empty());
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_message_event_subprocess_terminates_the_inner_instances_then_completes() {
    let mut rule = rule();
    let instance = rule.create(
        "esp-message",
        json!({"tools": ["Search", "Fetch"], "orderId": "o-1"}),
    );
    let tools = key_of(&rule, "Tools");
    publish(&mut rule, "stop");
    for id in ["Search", "Fetch"] {
        assert_eq!(count(&rule, id, Intent::ElementTerminated), 1, "{id}");
    }
    assert_eq!(
        count(&rule, "Tools#innerInstance", Intent::ElementTerminated),
        2
    );
    let jobs_canceled = rule
        .records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(Intent::Canceled)
        .count();
    assert_eq!(jobs_canceled, 2);
    // The inner instances are gone before the event subprocess starts.
    assert!(
        at(&rule, "Tools#innerInstance", Intent::ElementTerminated)
            < at(&rule, "OnStop", Intent::ElementActivating)
    );
    let on_stop = rule.element_events("OnStop", Intent::ElementActivated);
    assert_eq!(on_stop[0].1.flow_scope_key, tools.get());
    // The other event subprocess's subscription is closed.
    let closed: Vec<String> = rule
        .records()
        .events()
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(Intent::Deleted)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::ProcessMessageSubscription(v) => v.element_id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(closed, vec!["Note".to_owned()]);

    // Nothing more is activated in an interrupted ad-hoc subprocess.
    let (kind, reason) = rejection_of(&rule.process(activation(tools, &["Search"])));
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(reason.contains("'Tools'"), "{reason}");
    assert!(
        reason.contains("interrupted by an event sub-process"),
        "{reason}"
    );
    assert_eq!(count(&rule, "Search", Intent::ElementActivating), 1);

    // It completes with its event subprocess, completion condition or not.
    complete_job(&mut rule, "wrap", json!({}));
    assert_eq!(count(&rule, "OnStop", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 1);
    assert_eq!(rule.variables(instance)["results"], json!([]));
    complete_job(&mut rule, "after", json!({}));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn an_error_thrown_by_a_job_inside_starts_the_interrupting_error_event_subprocess() {
    let mut rule = rule();
    let instance = rule.create("esp-error", json!({}));
    let attempt = key_of(&rule, "Attempt");
    let (risky, _) = rule.job("risky");
    let outcome = rule.process(Command::ThrowError(ThrowError {
        job_key: risky,
        error_code: "FAILED".to_owned(),
        error_message: "no luck".to_owned(),
        variables: JsonValue::from(json!({"reason": "timeout"})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "Risky", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Safe", Intent::ElementTerminated), 1);
    let on_failure = rule.element_events("OnFailure", Intent::ElementActivated);
    assert_eq!(on_failure.len(), 1);
    assert_eq!(on_failure[0].1.flow_scope_key, attempt.get());
    assert!(rule.incidents(instance).is_empty());
    // The error's variables arrive with the event subprocess's start event.
    assert_eq!(rule.variables(instance)["reason"], json!("timeout"));
    complete_job(&mut rule, "recover", json!({}));
    assert_eq!(count(&rule, "Attempt", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn an_escalation_thrown_inside_starts_the_non_interrupting_escalation_event_subprocess() {
    let mut rule = rule();
    let instance = rule.create("esp-escalation", json!({}));
    let deliver = key_of(&rule, "Deliver");
    complete_job(&mut rule, "work", json!({}));
    assert_eq!(count(&rule, "RunningLate", Intent::ElementCompleted), 1);
    let on_late = rule.element_events("OnLate", Intent::ElementActivated);
    assert_eq!(on_late.len(), 1);
    assert_eq!(on_late[0].1.flow_scope_key, deliver.get());
    // The throwing path ended; the event subprocess keeps the ad-hoc open.
    assert_eq!(
        count(&rule, "Deliver#innerInstance", Intent::ElementCompleted),
        1
    );
    assert_eq!(count(&rule, "Deliver", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "apologize", json!({}));
    assert_eq!(count(&rule, "Deliver", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn a_signal_starts_the_interrupting_signal_event_subprocess() {
    let mut rule = rule();
    let instance = rule.create("esp-signal", json!({}));
    let explore = key_of(&rule, "Explore");
    let opened = rule
        .records()
        .events()
        .of_type(ValueType::SignalSubscription)
        .with_intent(Intent::Created)
        .records
        .iter()
        .map(|r| match &r.value {
            RecordValue::SignalSubscription(v) => {
                (v.catch_event_instance_key, v.catch_event_id.clone())
            }
            other => panic!("{other:?}"),
        })
        .collect::<Vec<_>>();
    assert_eq!(opened, vec![(explore.get(), "Halt".to_owned())]);
    let outcome = rule.process(Command::BroadcastSignal(BroadcastSignal {
        signal_name: "halt".to_owned(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "Look", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Halted", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "OnHalt", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Explore", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    let deleted = rule
        .records()
        .events()
        .of_type(ValueType::SignalSubscription)
        .with_intent(Intent::Deleted)
        .count();
    assert_eq!(deleted, 1);
    rule.assert_replay_matches();
}

#[test]
fn the_completion_condition_is_evaluated_when_a_non_interrupting_event_subprocess_completes() {
    let mut rule = rule();
    let instance = rule.create(
        "esp-condition",
        json!({"tools": ["Ask"], "done": false, "orderId": "o-1"}),
    );
    publish(&mut rule, "finish");
    complete_job(&mut rule, "decide", json!({"done": true}));
    // It holds: the inner instance still active is terminated, and the ad-hoc completes.
    assert_eq!(count(&rule, "Ask", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Gather", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );

    // It does not hold: the ad-hoc subprocess waits, even with nothing left in it.
    let mut rule = self::rule();
    let instance = rule.create(
        "esp-condition",
        json!({"tools": [], "done": false, "orderId": "o-1"}),
    );
    let gather = key_of(&rule, "Gather");
    publish(&mut rule, "finish");
    complete_job(&mut rule, "decide", json!({"done": false}));
    assert_eq!(count(&rule, "OnFinish", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Gather", Intent::ElementCompleted), 0);
    let outcome = rule.process(activation(gather, &["Ask"]));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    complete_job(&mut rule, "ask", json!({"done": true}));
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn a_failing_completion_condition_is_an_incident_on_the_event_subprocess() {
    let mut rule = rule();
    let instance = rule.create("esp-condition", json!({"tools": [], "orderId": "o-1"}));
    publish(&mut rule, "finish");
    complete_job(&mut rule, "decide", json!({"done": "maybe"}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].record.element_id, "OnFinish");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert_eq!(count(&rule, "OnFinish", Intent::ElementCompleted), 0);

    let outcome = rule.process(Command::SetVariables(rill_protocol::SetVariables {
        element_instance_key: instance,
        variables: JsonValue::from(json!({"done": true})),
        local: false,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let outcome = rule.process(Command::ResolveIncident {
        incident_key: incidents[0].key,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "OnFinish", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

/// The ad-hoc subprocess's current job (the worker's next decision).
fn agent_job(rule: &mut EngineRule) -> Key {
    let (key, job) = rule.job("agent");
    assert_eq!(job.job_kind, JobKind::AdHocSubProcess);
    key
}

fn agent_result(activate: &[&str], fulfilled: bool) -> JobResult {
    JobResult {
        result_type: JobResultType::AdHocSubProcess,
        activate_elements: activate
            .iter()
            .map(|id| AdHocSubProcessActivateElement {
                element_id: (*id).to_owned(),
                variables: JsonValue::from(json!({})),
            })
            .collect(),
        completion_condition_fulfilled: fulfilled,
        ..JobResult::default()
    }
}

fn complete_agent(rule: &mut EngineRule, key: Key, result: JobResult) -> Outcome {
    rule.process(Command::CompleteJob {
        job_key: key,
        variables: JsonValue::from(json!({})),
        result,
    })
}

fn agent_jobs(rule: &EngineRule, intent: Intent) -> Vec<Key> {
    rule.records()
        .events()
        .of_type(ValueType::Job)
        .with_intent(intent)
        .records
        .iter()
        .filter(|r| matches!(&r.value, RecordValue::Job(j) if j.job_type == "agent"))
        .map(|r| r.key)
        .collect()
}

#[test]
fn job_worker_a_completed_non_interrupting_event_subprocess_replaces_the_job() {
    let mut rule = rule();
    let instance = rule.create("esp-agent", json!({"orderId": "o-1"}));
    let first = agent_job(&mut rule);
    publish(&mut rule, "note");
    assert_eq!(count(&rule, "OnHint", Intent::ElementActivated), 1);
    assert!(
        agent_jobs(&rule, Intent::Canceled).is_empty(),
        "triggering asks nothing"
    );

    complete_job(&mut rule, "take-hint", json!({}));
    assert_eq!(agent_jobs(&rule, Intent::Canceled), vec![first]);
    let created = agent_jobs(&rule, Intent::Created);
    assert_eq!(created.len(), 2);
    let second = agent_job(&mut rule);
    assert_eq!(second, created[1]);
    let (kind, _) = rejection_of(&complete_agent(&mut rule, first, agent_result(&[], true)));
    assert_eq!(kind, RejectionType::NotFound);

    let outcome = complete_agent(&mut rule, second, agent_result(&[], true));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "Agent", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn job_worker_an_interrupting_event_subprocess_cancels_the_job_and_the_inner_instances() {
    let mut rule = rule();
    let instance = rule.create("esp-agent", json!({"orderId": "o-1"}));
    let first = agent_job(&mut rule);
    let outcome = complete_agent(&mut rule, first, agent_result(&["Lookup", "Lookup"], false));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let lookups = rule.activate("lookup", 10);
    assert_eq!(lookups.len(), 2);
    let outcome = rule.complete(lookups[0].0, json!({}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let second = agent_job(&mut rule);

    publish(&mut rule, "stop");
    assert_eq!(agent_jobs(&rule, Intent::Canceled), vec![second]);
    assert_eq!(count(&rule, "Lookup", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "OnAbort", Intent::ElementActivated), 1);
    let (kind, _) = rejection_of(&complete_agent(
        &mut rule,
        second,
        agent_result(&["Lookup"], false),
    ));
    assert_eq!(kind, RejectionType::NotFound);

    complete_job(&mut rule, "clean-up", json!({}));
    assert_eq!(count(&rule, "Agent", Intent::ElementCompleted), 1);
    assert_eq!(
        agent_jobs(&rule, Intent::Created).len(),
        2,
        "no job after the interruption"
    );
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}

#[test]
fn an_event_subprocess_is_not_an_element_to_activate() {
    let mut rule = rule();
    // activeElementsCollection: an incident naming it, as for an unknown element.
    let instance = rule.create(
        "esp-message",
        json!({"tools": ["OnNote"], "orderId": "o-1"}),
    );
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].record.element_id, "Tools");
    assert!(
        incidents[0]
            .record
            .error_message
            .contains("[OnNote] do not exist"),
        "{}",
        incidents[0].record.error_message
    );

    // The activation command: NOT_FOUND.
    let other = rule.create("esp-message", json!({"tools": [], "orderId": "o-2"}));
    let tools = rule
        .element_events("Tools", Intent::ElementActivated)
        .into_iter()
        .find(|(_, r)| r.process_instance_key == other.get())
        .expect("tools")
        .0;
    let (kind, reason) = rejection_of(&rule.process(activation(tools, &["OnStop"])));
    assert_eq!(kind, RejectionType::NotFound);
    assert!(reason.contains("[OnStop] do not exist"), "{reason}");

    // The job result's activateElements: NOT_FOUND.
    rule.create("esp-agent", json!({"orderId": "o-3"}));
    let job = agent_job(&mut rule);
    let (kind, reason) = rejection_of(&complete_agent(
        &mut rule,
        job,
        agent_result(&["OnHint"], false),
    ));
    assert_eq!(kind, RejectionType::NotFound);
    assert!(reason.contains("[OnHint] do not exist"), "{reason}");
    assert_eq!(count(&rule, "OnHint", Intent::ElementActivating), 0);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_the_instance_while_the_event_subprocess_runs_waits_for_its_canceling_listener() {
    let mut rule = rule();
    let instance = rule.create("esp-user-task", json!({"orderId": "o-1"}));
    publish(&mut rule, "note");
    assert_eq!(count(&rule, "Answer", Intent::ElementActivated), 1);
    let outcome = rule.process(Command::CancelProcessInstance {
        process_instance_key: instance,
    });
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    // The user task waits for its listener; the ad-hoc subprocess and the process wait.
    assert_eq!(count(&rule, "Answer", Intent::ElementTerminated), 0);
    assert_eq!(count(&rule, "File", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Desk", Intent::ElementTerminated), 0);
    complete_job(&mut rule, "on-cancel", json!({}));
    for id in ["Answer", "OnQuestion", "Desk", "esp-user-task"] {
        assert_eq!(count(&rule, id, Intent::ElementTerminated), 1, "{id}");
    }
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Terminated
    );
    rule.assert_replay_matches();
}

#[test]
fn modification_inside_an_event_subprocess_of_an_ad_hoc_subprocess_is_refused() {
    let mut rule = rule();
    let instance = rule.create("esp-message", json!({"tools": [], "orderId": "o-1"}));
    publish(&mut rule, "note");
    let outcome = rule.process(Command::ModifyProcessInstance(
        rill_protocol::ModifyProcessInstance {
            process_instance_key: instance,
            activate_instructions: vec![rill_protocol::ActivateInstruction {
                element_id: "Record".into(),
                ancestor_element_instance_key: Key::NONE,
                variable_instructions: Vec::new(),
            }],
            terminate_instructions: Vec::new(),
        },
    ));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(
        reason.contains("inside an ad-hoc subprocess ('Tools')"),
        "{reason}"
    );
    let on_note = key_of(&rule, "OnNote");
    let outcome = rule.process(Command::ModifyProcessInstance(
        rill_protocol::ModifyProcessInstance {
            process_instance_key: instance,
            activate_instructions: Vec::new(),
            terminate_instructions: vec![on_note],
        },
    ));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidArgument);
    assert!(reason.contains("inside an ad-hoc subprocess"), "{reason}");

    // Migration refuses the ad-hoc subprocess first.
    let definition = rule.element_events("Tools", Intent::ElementActivated)[0]
        .1
        .process_definition_key;
    let mapping = ["Tools", "OnNote", "Record"]
        .iter()
        .map(|id| rill_protocol::value::MigrationMappingInstruction {
            source_element_id: (*id).to_owned(),
            target_element_id: (*id).to_owned(),
        })
        .collect();
    let outcome = rule.process(Command::MigrateProcessInstance(
        rill_protocol::MigrateProcessInstance {
            process_instance_key: instance,
            target_process_definition_key: Key(definition),
            mapping_instructions: mapping,
        },
    ));
    let (kind, reason) = rejection_of(&outcome);
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(reason.contains("is not supported"), "{reason}");
    rule.assert_replay_matches();
}

/// An ad-hoc subprocess whose Camunda user task `Review` has a canceling listener, and
/// an interrupting message event subprocess.
const HELD_UP: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:message id="m-stop" name="stop">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=orderId" /></bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="held-up" isExecutable="true">
    <bpmn:startEvent id="s"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="Desk">
      <bpmn:extensionElements><zeebe:adHoc activeElementsCollection="=[&#34;Review&#34;]" /></bpmn:extensionElements>
      <bpmn:incoming>f1</bpmn:incoming><bpmn:outgoing>f2</bpmn:outgoing>
      <bpmn:userTask id="Review">
        <bpmn:extensionElements><zeebe:userTask />
          <zeebe:taskListeners><zeebe:taskListener eventType="canceling" type="on-cancel" /></zeebe:taskListeners>
        </bpmn:extensionElements>
      </bpmn:userTask>
      <bpmn:subProcess id="OnStop" triggeredByEvent="true">
        <bpmn:startEvent id="Stop"><bpmn:outgoing>f3</bpmn:outgoing>
          <bpmn:messageEventDefinition messageRef="m-stop" />
        </bpmn:startEvent>
        <bpmn:serviceTask id="Wrap">
          <bpmn:extensionElements><zeebe:taskDefinition type="wrap" /></bpmn:extensionElements>
          <bpmn:incoming>f3</bpmn:incoming>
        </bpmn:serviceTask>
        <bpmn:sequenceFlow id="f3" sourceRef="Stop" targetRef="Wrap" />
      </bpmn:subProcess>
    </bpmn:adHocSubProcess>
    <bpmn:endEvent id="e"><bpmn:incoming>f2</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="Desk" />
    <bpmn:sequenceFlow id="f2" sourceRef="Desk" targetRef="e" />
  </bpmn:process>
</bpmn:definitions>"#;

#[test]
fn an_interruption_held_up_by_a_canceling_listener_already_refuses_activations() {
    let mut rule = EngineRule::new();
    rule.deploy_xml(HELD_UP);
    let instance = rule.create("held-up", json!({"orderId": "o-1"}));
    let desk = key_of(&rule, "Desk");
    publish(&mut rule, "stop");
    // The user task waits for its canceling listener; the event subprocess waits too.
    assert_eq!(count(&rule, "Review", Intent::ElementTerminating), 1);
    assert_eq!(count(&rule, "OnStop", Intent::ElementActivating), 0);
    let (kind, reason) = rejection_of(&rule.process(activation(desk, &["Review"])));
    assert_eq!(kind, RejectionType::InvalidState);
    assert!(
        reason.contains("interrupted by an event sub-process"),
        "{reason}"
    );

    complete_job(&mut rule, "on-cancel", json!({}));
    assert_eq!(count(&rule, "Review", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "OnStop", Intent::ElementActivated), 1);
    complete_job(&mut rule, "wrap", json!({}));
    assert_eq!(count(&rule, "Desk", Intent::ElementCompleted), 1);
    assert_eq!(
        state(&mut rule, instance),
        rill_engine::ProcessInstanceState::Completed
    );
    rule.assert_replay_matches();
}
