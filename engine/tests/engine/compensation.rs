//! Compensation: boundary events with their handlers, throw and end events with and
//! without `activityRef`, nested subprocesses, multi-instance activities and handlers,
//! an error event subprocess compensating its scope, nothing to compensate, a failing
//! handler and cancelling while handlers run. Records are checked against Zeebe's
//! `COMPENSATION_SUBSCRIPTION` shape; every test ends with a replay of its log.

use rill_engine::ProcessInstanceState;
use rill_protocol::value::{BpmnElementType, BpmnEventType, CompensationSubscriptionRecord};
use rill_protocol::{Command, FailJob, Intent, JsonValue, Key, RecordValue, UpdateJob, ValueType};
use serde_json::json;

use super::breadth::{cancel, resolve, state};
use super::*;

/// `(intent, record)` of every compensation subscription record, in log order.
pub(super) fn subscriptions(
    rule: &EngineRule,
) -> Vec<(Key, Intent, CompensationSubscriptionRecord)> {
    rule.records()
        .of_type(ValueType::CompensationSubscription)
        .records
        .iter()
        .filter_map(|r| match &r.value {
            RecordValue::CompensationSubscription(v) => Some((r.key, r.intent, v.clone())),
            _ => None,
        })
        .collect()
}

/// `(intent, compensable activity)` of every compensation subscription record.
pub(super) fn subscription_steps(rule: &EngineRule) -> Vec<(Intent, String)> {
    subscriptions(rule)
        .into_iter()
        .map(|(_, intent, s)| (intent, s.compensable_activity_id))
        .collect()
}

pub(super) fn steps(pairs: &[(Intent, &str)]) -> Vec<(Intent, String)> {
    pairs.iter().map(|(i, a)| (*i, (*a).to_owned())).collect()
}

pub(super) fn complete_job(rule: &mut EngineRule, job_type: &str) {
    let (key, _) = rule.job(job_type);
    let outcome = rule.complete(key, json!({}));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
}

/// The key of the first activation of an element.
fn element_key(rule: &EngineRule, element: &str) -> Key {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .with_intent(Intent::ElementActivating)
        .records
        .first()
        .map(|r| r.key)
        .unwrap_or_else(|| panic!("{element} was never entered"))
}

fn count(rule: &EngineRule, element: &str, intent: Intent) -> usize {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .with_intent(intent)
        .count()
}

/// `(element type, event type, flow scope key)` of an element's first record.
fn types_of(rule: &EngineRule, element: &str) -> (BpmnElementType, BpmnEventType, i64) {
    rule.records()
        .of_type(ValueType::ProcessInstance)
        .element(element)
        .records
        .iter()
        .find_map(|r| match &r.value {
            RecordValue::ProcessInstance(v) => {
                Some((v.bpmn_element_type, v.bpmn_event_type, v.flow_scope_key))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no record of {element}"))
}

fn travel(rule: &mut EngineRule) -> Key {
    rule.deploy_fixture("elements/compensation-travel.bpmn");
    let instance = rule.create("travel-booking", json!({"trip": 7}));
    complete_job(rule, "book-hotel");
    complete_job(rule, "book-flight");
    instance
}

#[test]
fn a_throw_event_runs_the_handlers_of_completed_activities_newest_first() {
    let mut rule = EngineRule::new();
    let instance = travel(&mut rule);
    let hotel = element_key(&rule, "BookHotel");
    let flight = element_key(&rule, "BookFlight");
    let undo = element_key(&rule, "UndoAll");
    let definition = match rule.records().of_type(ValueType::ProcessInstance).records[0].value {
        RecordValue::ProcessInstance(ref v) => v.process_definition_key,
        _ => unreachable!(),
    };
    // Zeebe's record shape: CREATED when the activity completes, TRIGGERED by the
    // thrower; the flight (completed last) is compensated first.
    let records = subscriptions(&rule);
    let expected_created = CompensationSubscriptionRecord {
        tenant_id: "<default>".into(),
        process_instance_key: instance.get(),
        process_definition_key: definition,
        compensable_activity_id: "BookHotel".into(),
        throw_event_id: String::new(),
        throw_event_instance_key: -1,
        compensation_handler_id: "CancelHotel".into(),
        compensation_handler_instance_key: -1,
        compensable_activity_scope_key: instance.get(),
        compensable_activity_instance_key: hotel.get(),
        variables: JsonValue::from(json!({})),
    };
    assert_eq!(records[0].1, Intent::Created);
    assert_eq!(records[0].2, expected_created);
    assert_eq!(records[1].2.compensable_activity_instance_key, flight.get());
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Created, "BookFlight"),
            (Intent::Triggered, "BookFlight"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    let triggered = &records[3];
    assert_eq!(triggered.0, records[0].0, "the subscription keeps its key");
    assert_eq!(
        triggered.2,
        CompensationSubscriptionRecord {
            throw_event_id: "UndoAll".into(),
            throw_event_instance_key: undo.get(),
            ..expected_created
        }
    );
    // The boundary events pass through beside the thrower; the handlers run there,
    // with the event type COMPENSATION.
    for boundary in ["FlightBooked", "HotelBooked"] {
        assert_eq!(
            types_of(&rule, boundary),
            (
                BpmnElementType::BoundaryEvent,
                BpmnEventType::Compensation,
                instance.get()
            )
        );
        assert_eq!(count(&rule, boundary, Intent::ElementCompleted), 1);
    }
    assert_eq!(
        types_of(&rule, "CancelHotel"),
        (
            BpmnElementType::ServiceTask,
            BpmnEventType::Compensation,
            instance.get()
        )
    );
    assert_eq!(
        types_of(&rule, "UndoAll"),
        (
            BpmnElementType::IntermediateThrowEvent,
            BpmnEventType::Compensation,
            instance.get()
        )
    );
    let entered: Vec<String> = rule
        .records()
        .of_type(ValueType::ProcessInstance)
        .with_intent(Intent::ElementActivating)
        .lifecycle()
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| id.starts_with("Cancel"))
        .collect();
    assert_eq!(entered, ["CancelFlight", "CancelHotel"]);
    // The thrower waits for both handlers.
    complete_job(&mut rule, "cancel-flight");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 0);
    assert!(rule.activate("notify", 10).is_empty());
    complete_job(&mut rule, "cancel-hotel");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[
            (Intent::Completed, "BookFlight"),
            (Intent::Completed, "BookHotel"),
        ])
    );
    complete_job(&mut rule, "notify");
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    // Nothing was left to delete.
    assert_eq!(subscriptions(&rule).len(), 6);
    rule.assert_replay_matches();
}

#[test]
fn activity_ref_compensates_one_activity_then_the_end_event_the_rest() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-activity-ref.bpmn");
    let instance = rule.create("compensation-activity-ref", json!({}));
    // Undefined tasks pass through and become compensable at once.
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "ReserveStock"),
            (Intent::Created, "ChargeCard"),
            (Intent::Triggered, "ReserveStock"),
        ])
    );
    assert!(rule.activate("refund-card", 10).is_empty());
    complete_job(&mut rule, "release-stock");
    assert_eq!(count(&rule, "UndoStock", Intent::ElementCompleted), 1);
    // The end event finds only the card left and waits for its handler.
    assert_eq!(
        subscription_steps(&rule)[3..],
        steps(&[
            (Intent::Completed, "ReserveStock"),
            (Intent::Triggered, "ChargeCard"),
        ])
    );
    assert_eq!(count(&rule, "UndoRest", Intent::ElementActivated), 1);
    assert_eq!(count(&rule, "UndoRest", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "refund-card");
    assert_eq!(count(&rule, "UndoRest", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn nothing_to_compensate_goes_on_and_unused_subscriptions_are_deleted_at_the_end() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-nothing.bpmn");
    let instance = rule.create("compensation-nothing", json!({}));
    assert_eq!(
        rule.records()
            .of_type(ValueType::ProcessInstance)
            .element("UndoTooEarly")
            .lifecycle(),
        lc(&[
            ("UndoTooEarly", Intent::ElementActivating),
            ("UndoTooEarly", Intent::ElementActivated),
            ("UndoTooEarly", Intent::ElementCompleting),
            ("UndoTooEarly", Intent::ElementCompleted),
        ])
    );
    assert!(subscriptions(&rule).is_empty());
    complete_job(&mut rule, "work");
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[(Intent::Created, "Work"), (Intent::Deleted, "Work")])
    );
    assert_eq!(count(&rule, "UndoWork", Intent::ElementActivating), 0);
    rule.assert_replay_matches();
}

#[test]
fn compensating_a_subprocess_runs_the_handlers_inside_it_nested_too() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-nested.bpmn");
    let instance = rule.create("compensation-nested", json!({}));
    complete_job(&mut rule, "book-hotel");
    complete_job(&mut rule, "book-car");
    let booking = element_key(&rule, "Booking");
    let car = element_key(&rule, "Car");
    let records = subscriptions(&rule);
    let created: Vec<(String, String, i64)> = records
        .iter()
        .filter(|(_, intent, _)| *intent == Intent::Created)
        .map(|(_, _, s)| {
            (
                s.compensable_activity_id.clone(),
                s.compensation_handler_id.clone(),
                s.compensable_activity_scope_key,
            )
        })
        .collect();
    assert_eq!(
        created,
        vec![
            ("BookHotel".into(), "CancelHotel".into(), booking.get()),
            ("BookCar".into(), "CancelCar".into(), car.get()),
            ("Car".into(), String::new(), booking.get()),
            ("Booking".into(), String::new(), instance.get()),
        ]
    );
    // Top down, newest first in each scope.
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[
            (Intent::Triggered, "Booking"),
            (Intent::Triggered, "Car"),
            (Intent::Triggered, "BookCar"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    // The handlers run beside the thrower, in the process scope.
    assert_eq!(types_of(&rule, "CancelCar").2, instance.get());
    complete_job(&mut rule, "cancel-car");
    assert_eq!(
        subscription_steps(&rule)[8..],
        steps(&[(Intent::Completed, "BookCar"), (Intent::Completed, "Car")])
    );
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "cancel-hotel");
    assert_eq!(
        subscription_steps(&rule)[10..],
        steps(&[
            (Intent::Completed, "BookHotel"),
            (Intent::Completed, "Booking")
        ])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_multi_instance_activity_is_compensated_once_by_its_multi_instance_handler() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-multi-instance.bpmn");
    let instance = rule.create("compensation-multi-instance", json!({"items": [1, 2, 3]}));
    // Inner instances make no subscription; the body does, once all completed.
    let charges = rule.activate("charge", 10);
    assert_eq!(charges.len(), 3);
    for (key, _) in &charges[..2] {
        rule.complete(*key, json!({}));
    }
    assert!(subscriptions(&rule).is_empty());
    rule.complete(charges[2].0, json!({}));
    let body = rule
        .records()
        .of_type(ValueType::ProcessInstance)
        .element("Charge")
        .records
        .first()
        .map(|r| r.key)
        .expect("body");
    let records = subscriptions(&rule);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0].2.compensable_activity_instance_key, body.get());
    assert_eq!(records[1].1, Intent::Triggered);
    // The handler's body carries the event type; it runs once per item, one by one.
    assert_eq!(
        types_of(&rule, "Refund"),
        (
            BpmnElementType::MultiInstanceBody,
            BpmnEventType::Compensation,
            instance.get()
        )
    );
    for item in [1, 2, 3] {
        let (key, job) = rule.job("refund");
        assert_eq!(job.variables.to_value()["item"], json!(item));
        assert_eq!(count(&rule, "UndoCharges", Intent::ElementCompleted), 0);
        rule.complete(key, json!({}));
    }
    assert_eq!(subscriptions(&rule)[2].1, Intent::Completed);
    assert_eq!(count(&rule, "UndoCharges", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_error_event_subprocess_compensates_the_scope_it_belongs_to() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-event-subprocess.bpmn");
    let instance = rule.create("compensation-on-error", json!({}));
    complete_job(&mut rule, "book-hotel");
    let (pay, _) = rule.job("pay");
    let outcome = rule.process(Command::ThrowError(rill_protocol::ThrowError {
        job_key: pay,
        error_code: "PAYMENT_FAILED".into(),
        error_message: String::new(),
        variables: JsonValue::from(json!({})),
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    let event_subprocess = element_key(&rule, "OnPaymentFailed");
    let records = subscriptions(&rule);
    assert_eq!(records[1].1, Intent::Triggered);
    assert_eq!(records[1].2.throw_event_id, "UndoBooking");
    // The handler runs inside the event subprocess, beside its end event.
    assert_eq!(types_of(&rule, "CancelHotel").2, event_subprocess.get());
    assert_eq!(count(&rule, "OnPaymentFailed", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "cancel-hotel");
    assert_eq!(count(&rule, "UndoBooking", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "OnPaymentFailed", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn a_handler_that_fails_raises_an_incident_and_compensation_goes_on_once_resolved() {
    let mut rule = EngineRule::new();
    let instance = travel(&mut rule);
    complete_job(&mut rule, "cancel-flight");
    let (job_key, _) = rule.job("cancel-hotel");
    rule.process(Command::FailJob(FailJob {
        job_key,
        retries: 0,
        error_message: "hotel API down".to_owned(),
        retry_backoff: 0,
        variables: JsonValue::null(),
    }));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].record.element_id, "CancelHotel");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 0);
    let outcome = rule.process(Command::UpdateJob(UpdateJob {
        job_key,
        retries: Some(1),
        timeout: None,
    }));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    resolve(&mut rule, incidents[0].key);
    complete_job(&mut rule, "cancel-hotel");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    complete_job(&mut rule, "notify");
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_while_handlers_run_terminates_them_and_deletes_the_subscriptions() {
    let mut rule = EngineRule::new();
    let instance = travel(&mut rule);
    complete_job(&mut rule, "cancel-flight");
    cancel(&mut rule, instance);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "UndoAll", Intent::ElementTerminated), 1);
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[
            (Intent::Completed, "BookFlight"),
            (Intent::Deleted, "BookHotel"),
        ])
    );
    assert!(rule.activate("cancel-hotel", 10).is_empty());
    rule.assert_replay_matches();
}

#[test]
fn cancelling_before_any_throw_deletes_the_subscriptions_of_a_running_subprocess() {
    let mut rule = EngineRule::new();
    rule.deploy_fixture("elements/compensation-nested.bpmn");
    let instance = rule.create("compensation-nested", json!({}));
    complete_job(&mut rule, "book-hotel");
    // The car is still being booked: cancelling ends the subprocess with the hotel's
    // subscription in it.
    cancel(&mut rule, instance);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Deleted, "BookHotel")
        ])
    );
    rule.assert_replay_matches();
}

/// `X` before the subprocess; inside it `A`, a throw event, `B`, then a wait; a timer on
/// the subprocess interrupts it.
const INSIDE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="x">
  <bpmn:process id="compensation-inside" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:task id="X"><bpmn:incoming>F1</bpmn:incoming><bpmn:outgoing>F2</bpmn:outgoing></bpmn:task>
    <bpmn:boundaryEvent id="XDone" attachedToRef="X"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
    <bpmn:serviceTask id="UndoX" isForCompensation="true"><bpmn:extensionElements><zeebe:taskDefinition type="undo-x" /></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:association id="AsX" sourceRef="XDone" targetRef="UndoX" />
    <bpmn:subProcess id="Sub"><bpmn:incoming>F2</bpmn:incoming><bpmn:outgoing>F3</bpmn:outgoing>
      <bpmn:startEvent id="SubStart"><bpmn:outgoing>S1</bpmn:outgoing></bpmn:startEvent>
      <bpmn:task id="A"><bpmn:incoming>S1</bpmn:incoming><bpmn:outgoing>S2</bpmn:outgoing></bpmn:task>
      <bpmn:boundaryEvent id="ADone" attachedToRef="A"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
      <bpmn:serviceTask id="UndoA" isForCompensation="true"><bpmn:extensionElements><zeebe:taskDefinition type="undo-a" /></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:association id="AsA" sourceRef="ADone" targetRef="UndoA" />
      <bpmn:intermediateThrowEvent id="UndoInside"><bpmn:incoming>S2</bpmn:incoming><bpmn:outgoing>S3</bpmn:outgoing><bpmn:compensateEventDefinition /></bpmn:intermediateThrowEvent>
      <bpmn:task id="B"><bpmn:incoming>S3</bpmn:incoming><bpmn:outgoing>S4</bpmn:outgoing></bpmn:task>
      <bpmn:boundaryEvent id="BDone" attachedToRef="B"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
      <bpmn:task id="UndoB" isForCompensation="true" />
      <bpmn:association id="AsB" sourceRef="BDone" targetRef="UndoB" />
      <bpmn:serviceTask id="Wait"><bpmn:extensionElements><zeebe:taskDefinition type="wait" /></bpmn:extensionElements><bpmn:incoming>S4</bpmn:incoming></bpmn:serviceTask>
      <bpmn:sequenceFlow id="S1" sourceRef="SubStart" targetRef="A" />
      <bpmn:sequenceFlow id="S2" sourceRef="A" targetRef="UndoInside" />
      <bpmn:sequenceFlow id="S3" sourceRef="UndoInside" targetRef="B" />
      <bpmn:sequenceFlow id="S4" sourceRef="B" targetRef="Wait" />
    </bpmn:subProcess>
    <bpmn:boundaryEvent id="TooSlow" attachedToRef="Sub"><bpmn:outgoing>F4</bpmn:outgoing><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
    <bpmn:endEvent id="Done"><bpmn:incoming>F3</bpmn:incoming></bpmn:endEvent>
    <bpmn:endEvent id="GaveUp"><bpmn:incoming>F4</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="X" />
    <bpmn:sequenceFlow id="F2" sourceRef="X" targetRef="Sub" />
    <bpmn:sequenceFlow id="F3" sourceRef="Sub" targetRef="Done" />
    <bpmn:sequenceFlow id="F4" sourceRef="TooSlow" targetRef="GaveUp" />
  </bpmn:process>
</bpmn:definitions>"#;

#[test]
fn a_throw_event_in_a_subprocess_stays_inside_and_an_interrupted_subprocess_drops_its_own() {
    let mut rule = EngineRule::new();
    let deployed = rule.deploy_xml(INSIDE);
    assert!(!deployed.is_rejected(), "{:?}", deployed.response);
    let instance = rule.create("compensation-inside", json!({}));
    // Only A, inside the subprocess, is compensated; X outside is not.
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "X"),
            (Intent::Created, "A"),
            (Intent::Triggered, "A"),
        ])
    );
    assert!(rule.activate("undo-x", 10).is_empty());
    complete_job(&mut rule, "undo-a");
    assert_eq!(count(&rule, "UndoInside", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "B", Intent::ElementCompleted), 1);
    // The timer interrupts the subprocess: B's subscription goes with it, X's stays
    // until the instance ends.
    rule.advance(60_000);
    rule.fire_due();
    assert_eq!(count(&rule, "Sub", Intent::ElementTerminated), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        subscription_steps(&rule)[3..],
        steps(&[
            (Intent::Completed, "A"),
            (Intent::Created, "B"),
            (Intent::Deleted, "B"),
            (Intent::Deleted, "X"),
        ])
    );
    assert_eq!(count(&rule, "UndoB", Intent::ElementActivating), 0);
    rule.assert_replay_matches();
}
