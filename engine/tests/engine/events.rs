//! Event triggers held by scopes (`behavior/elements/triggers.rs`): message and timer
//! boundary events, interrupting and not; event subprocesses with message, timer and
//! error start events, in the process and in a subprocess; the event-based gateway;
//! escalations (throw and end events, boundary events, event subprocesses, call
//! activities).
//! Modeler-shaped fixtures from `tests/fixtures/elements/`.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{
    BpmnElementType, BpmnEventType, EscalationRecord, ProcessInstanceRecord,
};
use rill_protocol::{Command, Intent, JsonValue, Key, RecordValue, ValueType};
use serde_json::{Value, json};

use super::breadth::{cancel, resolve, set_variables, state};
use super::elements::{flow, model, task};
use super::*;

const MINUTE: i64 = 60_000;

fn complete_job(rule: &mut EngineRule, job_type: &str, variables: Value) {
    let (key, _) = rule.job(job_type);
    let outcome = rule.complete(key, variables);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

/// Completes every activatable job of a type; returns how many.
fn complete_all(rule: &mut EngineRule, job_type: &str) -> usize {
    let jobs = rule.activate(job_type, 10);
    for (key, _) in &jobs {
        let outcome = rule.complete(*key, json!({}));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    }
    jobs.len()
}

fn throw_error(rule: &mut EngineRule, job_type: &str, code: &str) {
    let (job_key, _) = rule.job(job_type);
    let outcome = rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key,
        error_code: code.into(),
        error_message: String::new(),
        variables: JsonValue::from(json!({"reason": "broken"})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

/// The first process-instance record of an element, and its key.
fn first_record(rule: &EngineRule, element: &str) -> (Key, ProcessInstanceRecord) {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => Some((r.key, v.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{element} was never entered"))
}

/// `(intent, record)` of every ESCALATION record, in log order.
fn escalations(rule: &EngineRule) -> Vec<(Intent, EscalationRecord)> {
    rule.records()
        .of_type(ValueType::Escalation)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Escalation(v) => Some((r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

/// The catch events whose subscriptions were closed, sorted.
fn closed_subscriptions(rule: &EngineRule) -> Vec<String> {
    let mut closed: Vec<String> = subscriptions(rule, Intent::Deleted)
        .into_iter()
        .map(|s| s.0)
        .collect();
    closed.sort();
    closed
}

/// How often an element reached `intent`.
fn count(rule: &EngineRule, element: &str, intent: Intent) -> usize {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .with_intent(intent)
        .count()
}

/// `(element id, interrupting)` of the process-side subscriptions written with
/// `intent`, in log order.
fn subscriptions(rule: &EngineRule, intent: Intent) -> Vec<(String, String, bool)> {
    rule.records()
        .of_type(ValueType::ProcessMessageSubscription)
        .with_intent(intent)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::ProcessMessageSubscription(v) => Some((
                v.element_id.clone(),
                v.message_name.clone(),
                v.is_interrupting,
            )),
            _ => None,
        })
        .collect()
}

/// `(target element, intent)` of every timer record, in log order.
fn timers(rule: &EngineRule) -> Vec<(String, Intent)> {
    rule.records()
        .of_type(ValueType::Timer)
        .events()
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::Timer(v) => Some((v.target_element_id.clone(), r.intent)),
            _ => None,
        })
        .collect()
}

/// Timers created and not yet triggered or cancelled.
fn armed_timers(rule: &EngineRule) -> usize {
    let all = timers(rule);
    let created = all.iter().filter(|(_, i)| *i == Intent::Created).count();
    created - (all.len() - created)
}

fn open_message_subscriptions(rule: &EngineRule) -> i64 {
    let opened = rule
        .records()
        .of_type(ValueType::MessageSubscription)
        .with_intent(Intent::Created)
        .count() as i64;
    let closed = rule
        .records()
        .of_type(ValueType::MessageSubscription)
        .with_intent(Intent::Deleted)
        .count() as i64;
    let correlated_interrupting = rule
        .records()
        .of_type(ValueType::MessageSubscription)
        .with_intent(Intent::Correlated)
        .records
        .iter()
        .filter(|r| matches!(&r.value, RecordValue::MessageSubscription(v) if v.is_interrupting))
        .count() as i64;
    opened - closed - correlated_interrupting
}

// --- boundary events ---

#[test]
fn an_interrupting_message_boundary_terminates_the_task_and_closes_its_other_triggers() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-boundary.bpmn");
    let instance = rule.create("message-boundary", json!({"orderId": "o-1"}));
    assert_eq!(
        subscriptions(&rule, Intent::Creating),
        vec![
            ("Cancelled".to_owned(), "order-cancelled".to_owned(), true),
            ("Updated".to_owned(), "order-updated".to_owned(), false),
        ],
        "one subscription per message boundary, named after the boundary event"
    );
    assert_eq!(
        timers(&rule),
        vec![
            ("Reminder".to_owned(), Intent::Created),
            ("Nudge".to_owned(), Intent::Created)
        ]
    );
    // Another key does not reach it.
    rule.publish("order-cancelled", "o-2", 0, json!({}));
    assert_eq!(count(&rule, "Cancelled", Intent::ElementActivated), 0);

    rule.publish("order-cancelled", "o-1", 0, json!({"why": "customer"}));
    assert_eq!(count(&rule, "Work", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "CancelledEnd", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Done", Intent::ElementActivating), 0);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["why"], json!("customer"));
    assert!(
        rule.records()
            .of_type(ValueType::Job)
            .with_intent(Intent::Canceled)
            .exists(),
        "the task's job is cancelled"
    );
    assert_eq!(
        subscriptions(&rule, Intent::Deleted),
        vec![("Updated".to_owned(), "order-updated".to_owned(), false)]
    );
    assert_eq!(open_message_subscriptions(&rule), 0);
    let canceled: Vec<String> = timers(&rule)
        .into_iter()
        .filter(|(_, intent)| *intent == Intent::Canceled)
        .map(|(target, _)| target)
        .collect();
    assert_eq!(canceled, vec!["Reminder", "Nudge"]);
    // The boundary event's element instance is written as Zeebe writes it.
    let (_, boundary) = first_record(&rule, "Cancelled");
    assert_eq!(boundary.bpmn_element_type, BpmnElementType::BoundaryEvent);
    assert_eq!(boundary.bpmn_event_type, BpmnEventType::Message);
    rule.assert_replay_matches();
}

#[test]
fn a_non_interrupting_message_boundary_fires_per_message_while_the_task_runs() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-boundary.bpmn");
    let instance = rule.create("message-boundary", json!({"orderId": "o-1"}));
    rule.publish("order-updated", "o-1", 0, json!({"change": "address"}));
    rule.publish("order-updated", "o-1", 0, json!({"change": "phone"}));
    assert_eq!(count(&rule, "Updated", Intent::ElementCompleted), 2);
    assert_eq!(count(&rule, "Work", Intent::ElementTerminating), 0);
    assert_eq!(rule.variables(instance)["lastChange"], json!("phone"));
    // The subscription stays open: no DELETING until the task is left.
    assert!(subscriptions(&rule, Intent::Deleting).is_empty());
    assert_eq!(complete_all(&mut rule, "apply-update"), 2);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    complete_job(&mut rule, "work", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        closed_subscriptions(&rule),
        vec!["Cancelled", "Updated"],
        "completing the task closes every boundary subscription"
    );
    assert_eq!(open_message_subscriptions(&rule), 0);
    // A message after the task completed finds no subscription.
    rule.publish("order-updated", "o-1", 0, json!({}));
    assert_eq!(count(&rule, "Updated", Intent::ElementCompleted), 2);
    rule.assert_replay_matches();
}

#[test]
fn the_correlation_key_is_the_one_evaluated_when_the_task_was_entered() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-boundary.bpmn");
    let instance = rule.create("message-boundary", json!({"orderId": "first"}));
    set_variables(&mut rule, instance, json!({"orderId": "second"}));
    rule.publish("order-cancelled", "second", 0, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    rule.publish("order-cancelled", "first", 0, json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn non_interrupting_boundary_timers_fire_once_for_a_duration_and_per_cycle_repetition() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-boundary.bpmn");
    let instance = rule.create("message-boundary", json!({"orderId": "o-1"}));
    for _ in 0..70 {
        rule.advance(MINUTE);
        rule.fire_due();
    }
    assert_eq!(count(&rule, "Reminded", Intent::ElementCompleted), 1);
    assert_eq!(
        count(&rule, "Nudged", Intent::ElementCompleted),
        3,
        "R3/PT1M fires three times"
    );
    assert_eq!(count(&rule, "Work", Intent::ElementTerminating), 0);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    assert_eq!(armed_timers(&rule), 0, "no timer is left armed");
    complete_job(&mut rule, "work", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_a_task_waits_closes_its_boundary_subscriptions_and_timers() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/message-boundary.bpmn");
    let instance = rule.create("message-boundary", json!({"orderId": "o-1"}));
    rule.advance(MINUTE);
    rule.fire_due();
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(open_message_subscriptions(&rule), 0);
    assert_eq!(armed_timers(&rule), 0);
    rule.publish("order-cancelled", "o-1", 0, json!({}));
    assert_eq!(count(&rule, "Cancelled", Intent::ElementActivating), 0);
    rule.assert_replay_matches();
}

// --- event subprocesses ---

#[test]
fn an_interrupting_message_event_subprocess_replaces_the_process_flow() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    assert_eq!(
        subscriptions(&rule, Intent::Creating),
        vec![
            ("CancelStart".to_owned(), "cancel".to_owned(), true),
            ("StatusStart".to_owned(), "status".to_owned(), false),
        ]
    );
    assert_eq!(
        timers(&rule),
        vec![("SlowStart".to_owned(), Intent::Created)]
    );
    rule.publish("cancel", "o-1", 0, json!({"reason": "fraud"}));
    assert_eq!(count(&rule, "Work", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "OnCancel", Intent::ElementActivated), 1);
    assert_eq!(count(&rule, "CancelStart", Intent::ElementCompleted), 1);
    // The other event subprocesses' triggers are closed: it starts only once.
    assert_eq!(closed_subscriptions(&rule), vec!["StatusStart"]);
    assert_eq!(
        timers(&rule).last(),
        Some(&("SlowStart".to_owned(), Intent::Canceled))
    );
    rule.publish("cancel", "o-1", 0, json!({}));
    rule.publish("status", "o-1", 0, json!({"status": "late"}));
    assert_eq!(count(&rule, "OnCancel", Intent::ElementActivating), 1);
    assert_eq!(count(&rule, "OnStatus", Intent::ElementActivating), 0);
    // Its variables are the process's (no local scope in between).
    assert_eq!(rule.variables(instance)["reason"], json!("fraud"));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    complete_job(&mut rule, "compensate", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(count(&rule, "Done", Intent::ElementActivating), 0);
    let (_, element) = first_record(&rule, "OnCancel");
    assert_eq!(element.bpmn_element_type, BpmnElementType::EventSubProcess);
    assert_eq!(element.flow_scope_key, instance.get());
    rule.assert_replay_matches();
}

#[test]
fn a_non_interrupting_event_subprocess_runs_beside_the_flow_and_keeps_the_scope_open() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    rule.publish("status", "o-1", 0, json!({"status": "packed"}));
    rule.publish("status", "o-1", 0, json!({"status": "sent"}));
    assert_eq!(count(&rule, "OnStatus", Intent::ElementCompleted), 2);
    assert_eq!(rule.variables(instance)["lastStatus"], json!("sent"));
    // The timer cycle starts its event subprocess twice (R2), each waiting on a job.
    for _ in 0..3 {
        rule.advance(MINUTE);
        rule.fire_due();
    }
    assert_eq!(count(&rule, "OnSlow", Intent::ElementActivated), 2);
    complete_job(&mut rule, "work", json!({}));
    assert_eq!(
        state(&mut rule, instance),
        ProcessInstanceState::Active,
        "the running event subprocesses keep the process open"
    );
    assert_eq!(complete_all(&mut rule, "remind"), 2);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(open_message_subscriptions(&rule), 0);
    assert_eq!(armed_timers(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_event_subprocess_terminates_running_non_interrupting_ones() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    rule.advance(MINUTE);
    rule.fire_due();
    assert_eq!(count(&rule, "OnSlow", Intent::ElementActivated), 1);
    rule.publish("cancel", "o-1", 0, json!({}));
    assert_eq!(count(&rule, "OnSlow", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Remind", Intent::ElementTerminated), 1);
    complete_job(&mut rule, "compensate", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_error_thrown_by_a_job_starts_the_error_event_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    throw_error(&mut rule, "work", "FAILED");
    assert_eq!(count(&rule, "Work", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "FailureEnd", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(rule.variables(instance)["reason"], json!("broken"));
    assert_eq!(open_message_subscriptions(&rule), 0);
    assert_eq!(armed_timers(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn an_error_no_event_subprocess_catches_is_still_an_incident() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    throw_error(&mut rule, "work", "OTHER");
    assert_eq!(rule.incidents(instance).len(), 1);
    assert_eq!(count(&rule, "OnFailure", Intent::ElementActivating), 0);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_closes_the_event_subprocess_triggers_of_the_process() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    rule.publish("status", "o-1", 0, json!({"status": "x"}));
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(open_message_subscriptions(&rule), 0);
    assert_eq!(armed_timers(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn an_event_subprocess_in_a_subprocess_lives_and_interrupts_within_it() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/nested-event-subprocess.bpmn");
    let instance = rule.create("nested-event-subprocess", json!({"limit": "PT10M"}));
    // Its timer is evaluated in the subprocess and belongs to it.
    let (handling, _) = first_record(&rule, "Handling");
    let timer_owner = rule
        .records()
        .of_type(ValueType::Timer)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::Timer(v) if v.target_element_id == "TooSlowStart" => {
                Some(v.element_instance_key)
            }
            _ => None,
        });
    assert_eq!(timer_owner, Some(handling.get()));
    rule.advance(10 * MINUTE);
    rule.fire_due();
    assert_eq!(count(&rule, "Pack", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "TooSlow", Intent::ElementCompleted), 1);
    // The subprocess completes normally once its event subprocess is done.
    assert_eq!(count(&rule, "Handling", Intent::ElementCompleted), 1);
    assert_eq!(rule.variables(instance)["late"], json!(true));
    complete_job(&mut rule, "ship", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_error_event_subprocess_inside_the_scope_wins_over_the_scopes_boundary() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/nested-event-subprocess.bpmn");
    let instance = rule.create("nested-event-subprocess", json!({"limit": "PT10M"}));
    complete_job(&mut rule, "pack", json!({}));
    throw_error(&mut rule, "check", "ANY");
    assert_eq!(count(&rule, "CheckFailed", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "HandlingFailed", Intent::ElementActivating), 0);
    assert_eq!(count(&rule, "Handling", Intent::ElementCompleted), 1);
    // The subprocess's timer went with it.
    assert_eq!(
        timers(&rule).last(),
        Some(&("TooSlowStart".to_owned(), Intent::Canceled))
    );
    complete_job(&mut rule, "ship", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn completing_a_subprocess_closes_its_event_subprocess_timer() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/nested-event-subprocess.bpmn");
    let instance = rule.create("nested-event-subprocess", json!({"limit": "PT10M"}));
    complete_job(&mut rule, "pack", json!({}));
    complete_job(&mut rule, "check", json!({}));
    assert_eq!(
        timers(&rule),
        vec![
            ("TooSlowStart".to_owned(), Intent::Created),
            ("TooSlowStart".to_owned(), Intent::Canceled)
        ]
    );
    rule.advance(10 * MINUTE);
    assert!(rule.fire_due().is_empty());
    complete_job(&mut rule, "ship", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_bad_event_subprocess_timer_is_an_incident_on_its_scope_resolved_after_a_fix() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/nested-event-subprocess.bpmn");
    let instance = rule.create("nested-event-subprocess", json!({"limit": "soon"}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].record.element_id, "Handling");
    assert_eq!(count(&rule, "Pack", Intent::ElementActivating), 0);
    set_variables(&mut rule, instance, json!({"limit": "PT1M"}));
    resolve(&mut rule, incidents[0].key);
    assert_eq!(count(&rule, "Pack", Intent::ElementActivated), 1);
    rule.advance(MINUTE);
    rule.fire_due();
    assert_eq!(count(&rule, "TooSlow", Intent::ElementCompleted), 1);
    rule.assert_replay_matches();
}

// --- event-based gateway ---

#[test]
fn the_first_event_after_an_event_based_gateway_wins_a_message() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-based-gateway.bpmn");
    let instance = rule.create(
        "event-based-gateway",
        json!({"orderId": "o-1", "wait": "PT1H"}),
    );
    assert_eq!(count(&rule, "AwaitPayment", Intent::ElementActivated), 1);
    assert_eq!(
        subscriptions(&rule, Intent::Creating),
        vec![("Paid".to_owned(), "payment".to_owned(), true)]
    );
    assert_eq!(timers(&rule), vec![("Expired".to_owned(), Intent::Created)]);
    rule.publish("payment", "o-1", 0, json!({"amount": 12}));
    assert_eq!(
        rule.records()
            .of_type(ValueType::ProcessInstance)
            .events()
            .lifecycle()
            .into_iter()
            .filter(|(id, _)| id == "AwaitPayment" || id == "F2" || id == "Paid")
            .skip(2)
            .collect::<Vec<_>>(),
        lc(&[
            ("AwaitPayment", Intent::ElementCompleting),
            ("AwaitPayment", Intent::ElementCompleted),
            ("F2", Intent::SequenceFlowTaken),
            ("Paid", Intent::ElementActivating),
            ("Paid", Intent::ElementActivated),
            ("Paid", Intent::ElementCompleting),
            ("Paid", Intent::ElementCompleted),
        ])
    );
    assert_eq!(
        timers(&rule).last(),
        Some(&("Expired".to_owned(), Intent::Canceled))
    );
    assert_eq!(count(&rule, "Expired", Intent::ElementActivating), 0);
    assert_eq!(rule.variables(instance)["paidAmount"], json!(12));
    complete_job(&mut rule, "ship", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(open_message_subscriptions(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn the_first_event_after_an_event_based_gateway_wins_a_timer() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-based-gateway.bpmn");
    let instance = rule.create(
        "event-based-gateway",
        json!({"orderId": "o-1", "wait": "PT1H"}),
    );
    rule.advance(60 * MINUTE);
    rule.fire_due();
    assert_eq!(count(&rule, "Lapsed", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Paid", Intent::ElementActivating), 0);
    assert_eq!(closed_subscriptions(&rule), vec!["Paid"]);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    // A late payment finds nothing to correlate to.
    rule.publish("payment", "o-1", 0, json!({"amount": 1}));
    assert_eq!(count(&rule, "Paid", Intent::ElementActivating), 0);
    assert_eq!(open_message_subscriptions(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_at_an_event_based_gateway_closes_both_triggers() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-based-gateway.bpmn");
    let instance = rule.create(
        "event-based-gateway",
        json!({"orderId": "o-1", "wait": "PT1H"}),
    );
    cancel(&mut rule, instance);
    assert_eq!(count(&rule, "AwaitPayment", Intent::ElementTerminated), 1);
    assert_eq!(open_message_subscriptions(&rule), 0);
    assert_eq!(armed_timers(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn a_buffered_message_wins_at_an_event_based_gateway_as_it_is_entered() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-based-gateway.bpmn");
    rule.publish("payment", "o-1", 60_000, json!({"amount": 5}));
    let instance = rule.create(
        "event-based-gateway",
        json!({"orderId": "o-1", "wait": "PT1H"}),
    );
    assert_eq!(count(&rule, "Paid", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Expired", Intent::ElementActivating), 0);
    assert_eq!(armed_timers(&rule), 0, "the timer was cancelled");
    complete_job(&mut rule, "ship", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_message_started_instance_whose_event_subprocess_timer_fails_resumes_at_its_start() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s"><bpmn:messageEventDefinition messageRef="Go" /></bpmn:startEvent>"#,
        &task("t", "t"),
        r#"<bpmn:endEvent id="e" />"#,
        &flow("f0", "s", "t"),
        &flow("f1", "t", "e"),
        r#"<bpmn:subProcess id="late" triggeredByEvent="true"><bpmn:startEvent id="ls" isInterrupting="false"><bpmn:timerEventDefinition><bpmn:timeDuration>=limit</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:startEvent></bpmn:subProcess>"#,
    ]
    .concat();
    let xml = model(&body).replace(
        "</bpmn:definitions>",
        r#"<bpmn:message id="Go" name="go" /></bpmn:definitions>"#,
    );
    rule.deploy_xml(&xml);
    rule.publish("go", "", 0, json!({"limit": 5}));
    let (instance, _) = first_record(&rule, "p");
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "a number is no duration");
    assert_eq!(count(&rule, "s", Intent::ElementActivating), 0);
    set_variables(&mut rule, instance, json!({"limit": "PT1M"}));
    resolve(&mut rule, incidents[0].key);
    assert_eq!(count(&rule, "s", Intent::ElementCompleted), 1);
    assert_eq!(timers(&rule), vec![("ls".to_owned(), Intent::Created)]);
    rule.advance(MINUTE);
    rule.fire_due();
    assert_eq!(count(&rule, "late", Intent::ElementCompleted), 1);
    complete_job(&mut rule, "t", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

// --- escalations ---

#[test]
fn a_non_interrupting_escalation_boundary_catches_its_code_and_the_thrower_goes_on() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/escalation.bpmn");
    let instance = rule.create("escalation", json!({"code": "LATE", "giveUp": false}));
    assert_eq!(count(&rule, "Late", Intent::ElementCompleted), 1);
    assert_eq!(
        count(&rule, "Abandoned", Intent::ElementActivating),
        0,
        "the code wins"
    );
    assert_eq!(count(&rule, "RaiseLate", Intent::ElementCompleted), 1);
    assert_eq!(rule.variables(instance)["raised"], json!(true));
    let (_, boundary) = first_record(&rule, "Late");
    assert_eq!(boundary.bpmn_event_type, BpmnEventType::Escalation);
    assert_eq!(
        escalations(&rule),
        vec![(
            Intent::Escalated,
            EscalationRecord {
                process_instance_key: instance.get(),
                escalation_code: "LATE".into(),
                throw_element_id: "RaiseLate".into(),
                catch_element_id: "Late".into(),
                tenant_id: "<default>".into(),
            }
        )]
    );
    // The record comes after the thrower's activation, before the catch event's.
    let order: Vec<(ValueType, Intent)> = rule
        .records()
        .events()
        .records
        .iter()
        .filter(|r| {
            r.value_type() == ValueType::Escalation
                || matches!(&r.value, RecordValue::ProcessInstance(v)
                    if (v.element_id == "RaiseLate" && r.intent == Intent::ElementActivated)
                        || (v.element_id == "Late" && r.intent == Intent::ElementActivating))
        })
        .map(|r| (r.value_type(), r.intent))
        .collect();
    assert_eq!(
        order,
        vec![
            (ValueType::ProcessInstance, Intent::ElementActivated),
            (ValueType::Escalation, Intent::Escalated),
            (ValueType::ProcessInstance, Intent::ElementActivating),
        ]
    );
    complete_job(&mut rule, "finish", json!({}));
    assert_eq!(count(&rule, "Review", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    complete_job(&mut rule, "notify", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(rule.incidents(instance).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn an_interrupting_catch_all_escalation_boundary_ends_the_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/escalation.bpmn");
    let instance = rule.create("escalation", json!({"code": "OTHER", "giveUp": false}));
    assert_eq!(count(&rule, "Review", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "RaiseLate", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Finish", Intent::ElementActivating), 0);
    assert_eq!(count(&rule, "AbandonedEnd", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_escalation_end_event_is_caught_around_its_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/escalation.bpmn");
    let instance = rule.create("escalation", json!({"code": "LATE", "giveUp": true}));
    complete_job(&mut rule, "finish", json!({}));
    assert_eq!(count(&rule, "GaveUp", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "Review", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "AbandonedEnd", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Done", Intent::ElementActivating), 0);
    // The earlier non-interrupting branch still runs.
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Active);
    complete_job(&mut rule, "notify", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_escalation_event_subprocess_runs_beside_the_thrower() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/escalation.bpmn");
    let instance = rule.create("escalation-in-process", json!({}));
    assert_eq!(count(&rule, "OnAsk", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Ask", Intent::ElementCompleted), 1);
    assert_eq!(rule.variables(instance)["answered"], json!(true));
    complete_job(&mut rule, "work", json!({}));
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_uncaught_escalation_changes_nothing() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/escalation.bpmn");
    let instance = rule.create("escalation-child", json!({}));
    complete_job(&mut rule, "child-work", json!({}));
    assert_eq!(count(&rule, "ChildEscalates", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert!(rule.incidents(instance).is_empty());
    let written = escalations(&rule);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0].0, Intent::NotEscalated);
    assert_eq!(written[0].1.catch_element_id, "");
    assert_eq!(written[0].1.throw_element_id, "ChildEscalates");
    rule.assert_replay_matches();
}

#[test]
fn an_escalation_a_called_process_does_not_catch_reaches_the_call_activity() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/escalation.bpmn");
    let instance = rule.create("escalation-caller", json!({}));
    complete_job(&mut rule, "child-work", json!({}));
    assert_eq!(count(&rule, "ChildGaveUp", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "KNoted", Intent::ElementCompleted), 1);
    // Non-interrupting: the child ends normally and the call activity completes.
    assert_eq!(count(&rule, "CallChild", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn each_inner_instance_of_a_multi_instance_subprocess_holds_its_event_subprocesses() {
    let mut rule = EngineRule::new();
    let body = [
        r#"<bpmn:startEvent id="s" />"#,
        r#"<bpmn:subProcess id="each"><bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1, 2]" inputElement="item" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>"#,
        r#"<bpmn:startEvent id="is" />"#,
        &task("work", "work"),
        &flow("i0", "is", "work"),
        r#"<bpmn:subProcess id="tick" triggeredByEvent="true"><bpmn:startEvent id="ts" isInterrupting="false"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:startEvent></bpmn:subProcess>"#,
        r#"</bpmn:subProcess>"#,
        r#"<bpmn:boundaryEvent id="stop" attachedToRef="each"><bpmn:messageEventDefinition messageRef="M" /></bpmn:boundaryEvent>"#,
        r#"<bpmn:endEvent id="e" />"#,
        r#"<bpmn:endEvent id="stopped" />"#,
        &flow("f0", "s", "each"),
        &flow("f1", "each", "e"),
        &flow("f2", "stop", "stopped"),
    ]
    .concat();
    rule.deploy_xml(&model(&body));
    let instance = rule.create("p", json!({"key": "k"}));
    assert_eq!(
        timers(&rule),
        vec![
            ("ts".to_owned(), Intent::Created),
            ("ts".to_owned(), Intent::Created)
        ],
        "one timer per inner instance"
    );
    assert_eq!(
        subscriptions(&rule, Intent::Creating),
        vec![("stop".to_owned(), "msg".to_owned(), true)],
        "one subscription, on the body"
    );
    rule.advance(MINUTE);
    rule.fire_due();
    assert_eq!(count(&rule, "tick", Intent::ElementCompleted), 2);
    rule.publish("msg", "k", 0, json!({}));
    assert_eq!(count(&rule, "work", Intent::ElementTerminated), 2);
    assert_eq!(count(&rule, "stopped", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(armed_timers(&rule), 0);
    assert_eq!(open_message_subscriptions(&rule), 0);
    rule.assert_replay_matches();
}

#[test]
fn an_error_inside_a_running_interrupting_event_subprocess_skips_its_scopes_event_subprocesses() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/event-subprocesses.bpmn");
    let instance = rule.create("event-subprocesses", json!({"orderId": "o-1"}));
    rule.publish("cancel", "o-1", 0, json!({}));
    throw_error(&mut rule, "compensate", "FAILED");
    assert_eq!(
        count(&rule, "OnFailure", Intent::ElementActivating),
        0,
        "the process was interrupted once already"
    );
    assert_eq!(rule.incidents(instance).len(), 1);
    rule.assert_replay_matches();
}
