//! Compensation in and on ad-hoc subprocesses (Zeebe 8.8): the ad-hoc subprocess is one
//! compensation scope across its inner instances; a throw event inside compensates
//! what completed in any activation (all, or `activityRef`'s); a compensation boundary
//! event on the ad-hoc subprocess; an enclosing throw compensating what completed
//! inside; subprocesses and multi-instance activities inside; termination deleting the
//! subscriptions (of the ad-hoc subprocess, and of an inner instance that compensates);
//! the job-worker implementation; handlers that cannot be activated; an ad-hoc
//! subprocess as a handler; the migration refusal. Every test ends with a replay of
//! its log.

use rill_protocol::value::{
    AdHocSubProcessActivateElement, BpmnElementType, BpmnEventType, IncidentErrorType, JobResult,
    JobResultType, MigrationMappingInstruction,
};
use rill_protocol::{
    ActivateAdHocSubProcessActivities, Command, Intent, JsonValue, Key, MigrateProcessInstance,
    RecordValue, RejectionType, ValueType,
};
use serde_json::json;

use rill_engine::ProcessInstanceState;

use super::breadth::{cancel, state};
use super::compensation::{complete_job, steps, subscription_steps, subscriptions};
use super::*;

/// A process around `body`.
fn process(id: &str, body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="defs" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="{id}" isExecutable="true">
{body}
  </bpmn:process>
</bpmn:definitions>"#
    )
}

fn service(id: &str, job_type: &str, extra: &str) -> String {
    format!(
        r#"<bpmn:serviceTask id="{id}" {extra}><bpmn:extensionElements><zeebe:taskDefinition type="{job_type}" /></bpmn:extensionElements></bpmn:serviceTask>"#
    )
}

/// An activity with a compensation boundary event and its handler.
fn compensable(id: &str, handler: &str) -> String {
    let task = service(id, id, "");
    let handler_task = service(handler, handler, r#"isForCompensation="true""#);
    format!(
        r#"{task}
<bpmn:boundaryEvent id="{id}Done" attachedToRef="{id}"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
{handler_task}
<bpmn:association id="{id}Assoc" associationDirection="One" sourceRef="{id}Done" targetRef="{handler}" />"#
    )
}

fn throw(id: &str, activity_ref: Option<&str>) -> String {
    let reference = activity_ref.map_or(String::new(), |r| format!(r#"activityRef="{r}""#));
    format!(
        r#"<bpmn:intermediateThrowEvent id="{id}"><bpmn:compensateEventDefinition {reference} /></bpmn:intermediateThrowEvent>"#
    )
}

fn flow(id: &str, from: &str, to: &str) -> String {
    format!(r#"<bpmn:sequenceFlow id="{id}" sourceRef="{from}" targetRef="{to}" />"#)
}

/// An ad-hoc subprocess `Tools` (BPMN implementation) with `inside`, entered from the
/// start event, then `after` (flows `f2`.. are the caller's).
fn ad_hoc_process(id: &str, ad_hoc_extensions: &str, inside: &str, after: &str) -> String {
    process(
        id,
        &format!(
            r#"<bpmn:startEvent id="Start" />
<bpmn:adHocSubProcess id="Tools"><bpmn:extensionElements>{ad_hoc_extensions}</bpmn:extensionElements>
{inside}
</bpmn:adHocSubProcess>
{after}
{}"#,
            flow("f1", "Start", "Tools")
        ),
    )
}

fn collection(ids: &[&str]) -> String {
    let list = ids
        .iter()
        .map(|id| format!("&#34;{id}&#34;"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(r#"<zeebe:adHoc activeElementsCollection="=[{list}]" />"#)
}

fn deploy(rule: &mut EngineRule, xml: &str) -> Key {
    let outcome = rule.deploy_xml(xml);
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    match outcome.value() {
        RecordValue::Deployment(d) => Key(d.processes_metadata[0].process_definition_key),
        other => panic!("{other:?}"),
    }
}

fn count(rule: &EngineRule, id: &str, intent: Intent) -> usize {
    rule.element_events(id, intent).len()
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

/// The ids of the activatable elements the ad-hoc subprocess offers.
fn offered(rule: &mut EngineRule, instance: Key, ad_hoc: Key) -> Vec<String> {
    rule.scope_variables(instance, ad_hoc)["adHocSubProcessElements"]
        .as_array()
        .expect("list")
        .iter()
        .map(|e| e["elementId"].as_str().expect("id").to_owned())
        .collect()
}

fn two_bookings_then_undo() -> String {
    let inside = format!(
        "{}\n{}\n{}\n{}",
        compensable("BookHotel", "CancelHotel"),
        compensable("BookFlight", "CancelFlight"),
        throw("UndoAll", None),
        flow("f9", "BookFlight", "UndoAll"),
    );
    let after = format!(
        r#"<bpmn:endEvent id="End" />{}"#,
        flow("f2", "Tools", "End")
    );
    ad_hoc_process(
        "adhoc-undo",
        &collection(&["BookHotel", "BookFlight"]),
        &inside,
        &after,
    )
}

#[test]
fn a_throw_inside_compensates_what_completed_in_every_inner_instance_newest_first() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &two_bookings_then_undo());
    let instance = rule.create("adhoc-undo", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    // Handlers are not offered; throw events without incoming flows are.
    assert_eq!(
        offered(&mut rule, instance, ad_hoc),
        ["BookHotel", "BookFlight"]
    );
    complete_job(&mut rule, "BookHotel");
    // The hotel's inner instance is done; the flight's still runs.
    assert_eq!(
        count(&rule, "Tools#innerInstance", Intent::ElementCompleted),
        1
    );
    complete_job(&mut rule, "BookFlight");

    let inner = rule.element_events("Tools#innerInstance", Intent::ElementActivated);
    let hotel = rule.element_events("BookHotel", Intent::ElementActivated)[0].0;
    let undo = rule.element_events("UndoAll", Intent::ElementActivated)[0].0;
    let records = subscriptions(&rule);
    // The ad-hoc subprocess, not the inner instance, is the scope.
    assert_eq!(records[0].1, Intent::Created);
    assert_eq!(records[0].2.compensable_activity_scope_key, ad_hoc.get());
    assert_eq!(records[0].2.compensable_activity_instance_key, hotel.get());
    assert_eq!(records[0].2.compensation_handler_id, "CancelHotel");
    assert_eq!(records[1].2.compensable_activity_scope_key, ad_hoc.get());
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Created, "BookFlight"),
            (Intent::Triggered, "BookFlight"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    assert_eq!(records[3].2.throw_event_id, "UndoAll");
    assert_eq!(records[3].2.throw_event_instance_key, undo.get());
    // The handlers run beside the thrower, in the flight's inner instance.
    for handler in ["CancelFlight", "CancelHotel"] {
        let (_, record) = &rule.element_events(handler, Intent::ElementActivated)[0];
        assert_eq!(record.flow_scope_key, inner[1].0.get(), "{handler}");
        assert_eq!(record.bpmn_event_type, BpmnEventType::Compensation);
    }
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
    for boundary in ["BookHotelDone", "BookFlightDone"] {
        let (_, record) = &rule.element_events(boundary, Intent::ElementCompleted)[0];
        assert_eq!(record.bpmn_element_type, BpmnElementType::BoundaryEvent);
        assert_eq!(record.flow_scope_key, inner[1].0.get());
    }

    // The thrower, its inner instance and the ad-hoc subprocess wait for both.
    complete_job(&mut rule, "CancelFlight");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "CancelHotel");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[
            (Intent::Completed, "BookFlight"),
            (Intent::Completed, "BookHotel"),
        ])
    );
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    // Nothing was left for the ad-hoc subprocess to hold.
    assert_eq!(subscriptions(&rule).len(), 6);
    rule.assert_replay_matches();
}

#[test]
fn activity_ref_inside_compensates_one_activity_and_the_ad_hoc_keeps_the_rest() {
    let mut rule = EngineRule::new();
    let inside = format!(
        "{}\n{}\n{}\n{}",
        compensable("BookHotel", "CancelHotel"),
        compensable("BookFlight", "CancelFlight"),
        throw("UndoHotel", Some("BookHotel")),
        flow("f9", "BookFlight", "UndoHotel"),
    );
    let after = format!(
        r#"{}{}<bpmn:endEvent id="End" />{}"#,
        service("After", "after", ""),
        flow("f2", "Tools", "After"),
        flow("f3", "After", "End"),
    );
    deploy(
        &mut rule,
        &ad_hoc_process(
            "adhoc-ref",
            &collection(&["BookHotel", "BookFlight"]),
            &inside,
            &after,
        ),
    );
    let instance = rule.create("adhoc-ref", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    complete_job(&mut rule, "BookHotel");
    complete_job(&mut rule, "BookFlight");
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Created, "BookFlight"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    assert_eq!(count(&rule, "CancelFlight", Intent::ElementActivating), 0);
    complete_job(&mut rule, "CancelHotel");
    assert_eq!(count(&rule, "UndoHotel", Intent::ElementCompleted), 1);
    // The ad-hoc subprocess completes holding the flight: one subscription without a
    // handler, in the process's scope, as a completed subprocess.
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 1);
    let records = subscriptions(&rule);
    let (_, intent, holder) = &records[4];
    assert_eq!(*intent, Intent::Created);
    assert_eq!(holder.compensable_activity_id, "Tools");
    assert_eq!(holder.compensation_handler_id, "");
    assert_eq!(holder.compensable_activity_instance_key, ad_hoc.get());
    assert_eq!(holder.compensable_activity_scope_key, instance.get());
    // The instance ends: what is left goes.
    complete_job(&mut rule, "after");
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    assert_eq!(
        subscription_steps(&rule)[3..],
        steps(&[
            (Intent::Completed, "BookHotel"),
            (Intent::Created, "Tools"),
            (Intent::Deleted, "BookFlight"),
            (Intent::Deleted, "Tools"),
        ])
    );
    rule.assert_replay_matches();
}

/// `Tools` with a compensation boundary event (handler `UndoTools`), `Work` inside
/// (compensable too when `inner_handler`), then a compensation end event.
fn compensated_ad_hoc(inner_handler: bool) -> String {
    let work = if inner_handler {
        compensable("Work", "UndoWork")
    } else {
        service("Work", "Work", "")
    };
    let after = format!(
        r#"<bpmn:boundaryEvent id="ToolsDone" attachedToRef="Tools"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
{}
<bpmn:association id="ToolsAssoc" associationDirection="One" sourceRef="ToolsDone" targetRef="UndoTools" />
<bpmn:endEvent id="UndoEnd"><bpmn:compensateEventDefinition /></bpmn:endEvent>
{}"#,
        service("UndoTools", "UndoTools", r#"isForCompensation="true""#),
        flow("f2", "Tools", "UndoEnd"),
    );
    ad_hoc_process("adhoc-boundary", &collection(&["Work"]), &work, &after)
}

#[test]
fn a_compensation_boundary_on_the_ad_hoc_subprocess_runs_its_handler_once_it_completed() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &compensated_ad_hoc(false));
    let instance = rule.create("adhoc-boundary", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    // Active: nothing to compensate yet.
    assert!(subscriptions(&rule).is_empty());
    complete_job(&mut rule, "Work");
    let records = subscriptions(&rule);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[(Intent::Created, "Tools"), (Intent::Triggered, "Tools")])
    );
    assert_eq!(records[0].2.compensation_handler_id, "UndoTools");
    assert_eq!(records[0].2.compensable_activity_instance_key, ad_hoc.get());
    assert_eq!(records[0].2.compensable_activity_scope_key, instance.get());
    // CREATED right before the ad-hoc subprocess's ELEMENT_COMPLETED.
    let log = rule.records();
    let all = &log.records;
    let created_at = all
        .iter()
        .position(|r| r.value_type() == ValueType::CompensationSubscription)
        .expect("created");
    let completed_at = all
        .iter()
        .position(|r| r.key == ad_hoc && r.intent == Intent::ElementCompleted)
        .expect("completed");
    assert_eq!(created_at + 1, completed_at);
    let (_, handler) = &rule.element_events("UndoTools", Intent::ElementActivated)[0];
    assert_eq!(handler.bpmn_event_type, BpmnEventType::Compensation);
    assert_eq!(handler.flow_scope_key, instance.get());
    assert_eq!(count(&rule, "ToolsDone", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "UndoEnd", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "UndoTools");
    assert_eq!(count(&rule, "UndoEnd", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule)[2..],
        steps(&[(Intent::Completed, "Tools")])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn compensating_a_completed_ad_hoc_subprocess_compensates_what_completed_inside() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &compensated_ad_hoc(true));
    let instance = rule.create("adhoc-boundary", json!({}));
    complete_job(&mut rule, "Work");
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "Work"),
            (Intent::Created, "Tools"),
            (Intent::Triggered, "Tools"),
            (Intent::Triggered, "Work"),
        ])
    );
    // Both handlers run beside the thrower, in the process's scope.
    for handler in ["UndoTools", "UndoWork"] {
        let (_, record) = &rule.element_events(handler, Intent::ElementActivated)[0];
        assert_eq!(record.flow_scope_key, instance.get(), "{handler}");
    }
    complete_job(&mut rule, "UndoWork");
    assert_eq!(count(&rule, "UndoEnd", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "UndoTools");
    assert_eq!(count(&rule, "UndoEnd", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[(Intent::Completed, "Work"), (Intent::Completed, "Tools")])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn an_enclosing_throw_compensates_inside_a_completed_ad_hoc_without_its_own_handler() {
    let mut rule = EngineRule::new();
    let inside = format!(
        "{}\n{}",
        compensable("BookHotel", "CancelHotel"),
        service("Plain", "Plain", ""),
    );
    let after = format!(
        r#"{}<bpmn:endEvent id="End" />{}{}"#,
        throw("UndoAll", None),
        flow("f2", "Tools", "UndoAll"),
        flow("f3", "UndoAll", "End"),
    );
    deploy(
        &mut rule,
        &ad_hoc_process(
            "adhoc-nested",
            &collection(&["BookHotel", "Plain"]),
            &inside,
            &after,
        ),
    );
    let instance = rule.create("adhoc-nested", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    complete_job(&mut rule, "BookHotel");
    complete_job(&mut rule, "Plain");
    let records = subscriptions(&rule);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Created, "Tools"),
            (Intent::Triggered, "Tools"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    assert_eq!(records[0].2.compensable_activity_scope_key, ad_hoc.get());
    assert_eq!(records[1].2.compensation_handler_id, "");
    let (_, handler) = &rule.element_events("CancelHotel", Intent::ElementActivated)[0];
    assert_eq!(handler.flow_scope_key, instance.get());
    complete_job(&mut rule, "CancelHotel");
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[
            (Intent::Completed, "BookHotel"),
            (Intent::Completed, "Tools"),
        ])
    );
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

/// Two bookings in `Tools` with a one-hour interrupting timer on it, then a throw in
/// the process.
fn bookings_with_timeout() -> String {
    let inside = format!(
        "{}\n{}",
        compensable("BookHotel", "CancelHotel"),
        compensable("BookFlight", "CancelFlight"),
    );
    let after = format!(
        r#"<bpmn:boundaryEvent id="TooSlow" attachedToRef="Tools"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent>
{}<bpmn:endEvent id="End" /><bpmn:endEvent id="GaveUp" />{}{}{}"#,
        throw("UndoAll", None),
        flow("f2", "Tools", "End"),
        flow("f3", "TooSlow", "UndoAll"),
        flow("f4", "UndoAll", "GaveUp"),
    );
    ad_hoc_process(
        "adhoc-timeout",
        &collection(&["BookHotel", "BookFlight"]),
        &inside,
        &after,
    )
}

#[test]
fn an_interrupted_ad_hoc_subprocess_deletes_its_subscriptions() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &bookings_with_timeout());
    let instance = rule.create("adhoc-timeout", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    complete_job(&mut rule, "BookHotel");
    rule.advance(3_600_000);
    rule.fire_due();
    assert_eq!(count(&rule, "Tools", Intent::ElementTerminated), 1);
    let records = subscriptions(&rule);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Deleted, "BookHotel")
        ])
    );
    assert_eq!(records[1].0, records[0].0, "DELETED keeps the key");
    assert_eq!(records[1].2, records[0].2, "DELETED carries the record");
    // Deleted while the ad-hoc subprocess terminates, before its ELEMENT_TERMINATED.
    let log = rule.records();
    let all = &log.records;
    let deleted_at = all
        .iter()
        .position(|r| {
            r.value_type() == ValueType::CompensationSubscription && r.intent == Intent::Deleted
        })
        .expect("deleted");
    let terminated_at = all
        .iter()
        .position(|r| r.key == ad_hoc && r.intent == Intent::ElementTerminated)
        .expect("terminated");
    assert!(deleted_at < terminated_at);
    // The throw on the timeout path finds nothing to compensate.
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementActivating), 0);
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn cancelling_the_instance_deletes_the_subscriptions_inside_an_active_ad_hoc() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &bookings_with_timeout());
    let instance = rule.create("adhoc-timeout", json!({}));
    complete_job(&mut rule, "BookFlight");
    cancel(&mut rule, instance);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookFlight"),
            (Intent::Deleted, "BookFlight")
        ])
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Terminated);
    rule.assert_replay_matches();
}

#[test]
fn a_compensation_handler_cannot_be_activated() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &two_bookings_then_undo());
    // By the activation command: NOT_FOUND, as an unknown element.
    let instance = rule.create("adhoc-undo", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    let outcome = rule.process(activation(ad_hoc, &["CancelHotel"]));
    let (rejection, reason) = rejection_of(&outcome);
    assert_eq!(rejection, RejectionType::NotFound);
    assert!(reason.contains("[CancelHotel]"), "{reason}");
    cancel(&mut rule, instance);

    // By activeElementsCollection: an incident on the ad-hoc subprocess.
    let inside = compensable("BookHotel", "CancelHotel");
    deploy(
        &mut rule,
        &ad_hoc_process(
            "adhoc-handler",
            &collection(&["CancelHotel"]),
            &inside,
            r#"<bpmn:endEvent id="End" /><bpmn:sequenceFlow id="f2" sourceRef="Tools" targetRef="End" />"#,
        ),
    );
    let instance = rule.create("adhoc-handler", json!({}));
    let incidents = rule.incidents(instance);
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    assert_eq!(incidents[0].record.element_id, "Tools");
    assert_eq!(
        incidents[0].record.error_type,
        IncidentErrorType::ExtractValueError
    );
    assert!(
        incidents[0].record.error_message.contains("CancelHotel"),
        "{}",
        incidents[0].record.error_message
    );
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementActivating), 0);
    rule.assert_replay_matches();
}

/// The job-worker implementation: `Agent` decides, with the two bookings and a thrower.
fn agent_with_bookings() -> String {
    let inside = format!(
        "{}\n{}\n{}",
        compensable("BookHotel", "CancelHotel"),
        compensable("BookFlight", "CancelFlight"),
        throw("UndoAll", None),
    );
    process(
        "adhoc-agent",
        &format!(
            r#"<bpmn:startEvent id="Start" />
<bpmn:adHocSubProcess id="Agent"><bpmn:extensionElements><zeebe:taskDefinition type="agent" /></bpmn:extensionElements>
{inside}
</bpmn:adHocSubProcess>
<bpmn:endEvent id="End" />
{}{}"#,
            flow("f1", "Start", "Agent"),
            flow("f2", "Agent", "End"),
        ),
    )
}

fn ad_hoc_result(ids: &[&str], fulfilled: bool) -> JobResult {
    JobResult {
        result_type: JobResultType::AdHocSubProcess,
        activate_elements: ids
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

fn agent_decides(
    rule: &mut EngineRule,
    job_key: Key,
    ids: &[&str],
    fulfilled: bool,
) -> RejectionType {
    let outcome = rule.process(Command::CompleteJob {
        job_key,
        variables: JsonValue::from(json!({})),
        result: ad_hoc_result(ids, fulfilled),
    });
    if outcome.is_rejected() {
        rejection_of(&outcome).0
    } else {
        RejectionType::NullVal
    }
}

#[test]
fn the_job_worker_implementation_compensates_what_its_activations_completed() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &agent_with_bookings());
    let instance = rule.create("adhoc-agent", json!({}));
    let ad_hoc = rule.element_events("Agent", Intent::ElementActivated)[0].0;
    let (job_key, job) = rule.job("agent");
    let variables = job.variables.to_value();
    let offered: Vec<&str> = variables["adHocSubProcessElements"]
        .as_array()
        .expect("list")
        .iter()
        .map(|e| e["elementId"].as_str().expect("id"))
        .collect();
    assert_eq!(offered, ["BookHotel", "BookFlight", "UndoAll"]);
    // A handler is refused like an unknown element, and nothing changes.
    assert_eq!(
        agent_decides(&mut rule, job_key, &["CancelHotel"], false),
        RejectionType::NotFound
    );
    assert_eq!(
        agent_decides(&mut rule, job_key, &["BookHotel", "BookFlight"], false),
        RejectionType::NullVal
    );
    complete_job(&mut rule, "BookHotel");
    complete_job(&mut rule, "BookFlight");
    let (job_key, _) = rule.job("agent");
    assert_eq!(
        agent_decides(&mut rule, job_key, &["UndoAll"], false),
        RejectionType::NullVal
    );
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Created, "BookFlight"),
            (Intent::Triggered, "BookFlight"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    for (_, _, s) in &subscriptions(&rule) {
        assert_eq!(s.compensable_activity_scope_key, ad_hoc.get());
    }
    complete_job(&mut rule, "CancelHotel");
    complete_job(&mut rule, "CancelFlight");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule)[4..],
        steps(&[
            (Intent::Completed, "BookHotel"),
            (Intent::Completed, "BookFlight"),
        ])
    );
    let (job_key, _) = rule.job("agent");
    assert_eq!(
        agent_decides(&mut rule, job_key, &[], true),
        RejectionType::NullVal
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn migration_refuses_compensation_inside_an_ad_hoc_subprocess() {
    let mut rule = EngineRule::new();
    let inside = compensable("BookHotel", "CancelHotel");
    let after = format!(
        r#"{}<bpmn:endEvent id="End" />{}{}"#,
        service("After", "after", ""),
        flow("f2", "Tools", "After"),
        flow("f3", "After", "End"),
    );
    let xml = ad_hoc_process(
        "adhoc-migrate",
        &collection(&["BookHotel"]),
        &inside,
        &after,
    );
    deploy(&mut rule, &xml);
    let instance = rule.create("adhoc-migrate", json!({}));
    complete_job(&mut rule, "BookHotel");
    let target = deploy(&mut rule, &xml.replace("after\"", "after-v2\""));
    let outcome = rule.process(Command::MigrateProcessInstance(MigrateProcessInstance {
        process_instance_key: instance,
        target_process_definition_key: target,
        mapping_instructions: vec![MigrationMappingInstruction {
            source_element_id: "After".into(),
            target_element_id: "After".into(),
        }],
    }));
    let (rejection, reason) = rejection_of(&outcome);
    assert_eq!(rejection, RejectionType::InvalidState);
    assert!(
        reason.contains("'BookHotel' inside the ad-hoc subprocess 'Tools'"),
        "{reason}"
    );
    rule.assert_replay_matches();
}

#[test]
fn an_inner_instance_terminated_while_it_compensates_deletes_what_its_thrower_triggered() {
    let mut rule = EngineRule::new();
    let inside = format!(
        r#"{}
{}
{}
<bpmn:completionCondition xsi:type="bpmn:tFormalExpression">=false</bpmn:completionCondition>"#,
        compensable("BookHotel", "CancelHotel"),
        throw("UndoAll", None),
        service("Plain", "Plain", ""),
    );
    deploy(
        &mut rule,
        &ad_hoc_process(
            "adhoc-interrupted",
            &collection(&["BookHotel"]),
            &inside,
            r#"<bpmn:endEvent id="End" /><bpmn:sequenceFlow id="f2" sourceRef="Tools" targetRef="End" />"#,
        ),
    );
    let instance = rule.create("adhoc-interrupted", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    complete_job(&mut rule, "BookHotel");
    let outcome = rule.process(activation(ad_hoc, &["UndoAll"]));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementActivated), 1);
    // The next activation cancels the running compensation's inner instance.
    let Command::ActivateAdHocSubProcessActivities(mut command) = activation(ad_hoc, &["Plain"])
    else {
        unreachable!()
    };
    command.cancel_remaining_instances = true;
    let outcome = rule.process(Command::ActivateAdHocSubProcessActivities(command));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "UndoAll", Intent::ElementTerminated), 1);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Triggered, "BookHotel"),
            (Intent::Deleted, "BookHotel"),
        ])
    );
    // Nothing is left half-compensated: a new throw finds nothing.
    complete_job(&mut rule, "Plain");
    let outcome = rule.process(activation(ad_hoc, &["UndoAll"]));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(subscriptions(&rule).len(), 3);
    cancel(&mut rule, instance);
    rule.assert_replay_matches();
}

#[test]
fn an_ad_hoc_subprocess_can_be_a_compensation_handler() {
    let mut rule = EngineRule::new();
    let xml = process(
        "adhoc-as-handler",
        &format!(
            r#"<bpmn:startEvent id="Start" />
{}
<bpmn:boundaryEvent id="BookHotelDone" attachedToRef="BookHotel"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
<bpmn:adHocSubProcess id="Undo" isForCompensation="true"><bpmn:extensionElements>{}</bpmn:extensionElements>
{}
{}
</bpmn:adHocSubProcess>
<bpmn:association id="Assoc" associationDirection="One" sourceRef="BookHotelDone" targetRef="Undo" />
<bpmn:endEvent id="UndoEnd"><bpmn:compensateEventDefinition /></bpmn:endEvent>
{}{}"#,
            service("BookHotel", "BookHotel", ""),
            collection(&["Refund", "Apologize"]),
            service("Refund", "Refund", ""),
            service("Apologize", "Apologize", ""),
            flow("f1", "Start", "BookHotel"),
            flow("f2", "BookHotel", "UndoEnd"),
        ),
    );
    deploy(&mut rule, &xml);
    let instance = rule.create("adhoc-as-handler", json!({}));
    complete_job(&mut rule, "BookHotel");
    let (_, undo) = &rule.element_events("Undo", Intent::ElementActivated)[0];
    assert_eq!(undo.bpmn_element_type, BpmnElementType::AdHocSubProcess);
    assert_eq!(undo.bpmn_event_type, BpmnEventType::Compensation);
    assert_eq!(undo.flow_scope_key, instance.get());
    complete_job(&mut rule, "Refund");
    assert_eq!(count(&rule, "UndoEnd", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "Apologize");
    assert_eq!(count(&rule, "Undo", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Triggered, "BookHotel"),
            (Intent::Completed, "BookHotel"),
        ])
    );
    assert_eq!(count(&rule, "UndoEnd", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn subprocesses_and_multi_instance_activities_inside_are_compensated_with_their_content() {
    let mut rule = EngineRule::new();
    let inside = format!(
        r#"<bpmn:subProcess id="Trip">
<bpmn:startEvent id="TripStart" />
{}
<bpmn:endEvent id="TripEnd" />
{}{}
</bpmn:subProcess>
<bpmn:serviceTask id="Seats"><bpmn:extensionElements><zeebe:taskDefinition type="Seats" /></bpmn:extensionElements>
<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements><zeebe:loopCharacteristics inputCollection="=[1, 2]" inputElement="seat" /></bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics>
</bpmn:serviceTask>
<bpmn:boundaryEvent id="SeatsDone" attachedToRef="Seats"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
{}
<bpmn:association id="SeatsAssoc" associationDirection="One" sourceRef="SeatsDone" targetRef="FreeSeats" />
{}
<bpmn:completionCondition xsi:type="bpmn:tFormalExpression">=false</bpmn:completionCondition>"#,
        compensable("BookHotel", "CancelHotel"),
        flow("t1", "TripStart", "BookHotel"),
        flow("t2", "BookHotel", "TripEnd"),
        service("FreeSeats", "FreeSeats", r#"isForCompensation="true""#),
        throw("UndoAll", None),
    );
    deploy(
        &mut rule,
        &ad_hoc_process(
            "adhoc-deep",
            &collection(&["Trip", "Seats"]),
            &inside,
            r#"<bpmn:endEvent id="End" /><bpmn:sequenceFlow id="f2" sourceRef="Tools" targetRef="End" />"#,
        ),
    );
    let instance = rule.create("adhoc-deep", json!({}));
    let ad_hoc = rule.element_events("Tools", Intent::ElementActivated)[0].0;
    complete_job(&mut rule, "BookHotel");
    for (key, _) in rule.activate("Seats", 10) {
        let outcome = rule.complete(key, json!({}));
        assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    }
    let records = subscriptions(&rule);
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Created, "Trip"),
            (Intent::Created, "Seats"),
        ])
    );
    let trip = rule.element_events("Trip", Intent::ElementActivated)[0].0;
    assert_eq!(records[0].2.compensable_activity_scope_key, trip.get());
    assert_eq!(records[1].2.compensable_activity_scope_key, ad_hoc.get());
    assert_eq!(records[2].2.compensable_activity_scope_key, ad_hoc.get());
    let outcome = rule.process(activation(ad_hoc, &["UndoAll"]));
    assert!(!outcome.is_rejected(), "{:?}", outcome.response);
    assert_eq!(
        subscription_steps(&rule)[3..],
        steps(&[
            (Intent::Triggered, "Seats"),
            (Intent::Triggered, "Trip"),
            (Intent::Triggered, "BookHotel"),
        ])
    );
    complete_job(&mut rule, "FreeSeats");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 0);
    complete_job(&mut rule, "CancelHotel");
    assert_eq!(count(&rule, "UndoAll", Intent::ElementCompleted), 1);
    assert_eq!(
        subscription_steps(&rule)[6..],
        steps(&[
            (Intent::Completed, "Seats"),
            (Intent::Completed, "BookHotel"),
            (Intent::Completed, "Trip"),
        ])
    );
    cancel(&mut rule, instance);
    assert_eq!(subscriptions(&rule).len(), 9);
    rule.assert_replay_matches();
}

/// Two bookings (the condition keeps the ad-hoc subprocess open) and an interrupting
/// timer event subprocess inside that compensates (all, or `activity_ref`).
fn bookings_with_undo_on_timeout(activity_ref: Option<&str>) -> String {
    let inside = format!(
        r#"{}
{}
<bpmn:subProcess id="OnTimeout" triggeredByEvent="true">
<bpmn:startEvent id="Timeout"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1M</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:startEvent>
{}<bpmn:endEvent id="TimedOut" />{}{}
</bpmn:subProcess>
<bpmn:completionCondition>=false</bpmn:completionCondition>"#,
        compensable("BookHotel", "CancelHotel"),
        compensable("BookFlight", "CancelFlight"),
        throw("Undo", activity_ref),
        flow("f5", "Timeout", "Undo"),
        flow("f6", "Undo", "TimedOut"),
    );
    let after = format!(
        r#"<bpmn:endEvent id="End" />{}"#,
        flow("f2", "Tools", "End")
    );
    ad_hoc_process(
        "adhoc-esp-undo",
        &collection(&["BookHotel", "BookFlight"]),
        &inside,
        &after,
    )
}

#[test]
fn a_throw_in_an_event_subprocess_compensates_what_completed_in_the_ad_hoc_subprocess() {
    let mut rule = EngineRule::new();
    deploy(&mut rule, &bookings_with_undo_on_timeout(None));
    let instance = rule.create("adhoc-esp-undo", json!({}));
    complete_job(&mut rule, "BookHotel");
    // The flight is still being booked when the timer interrupts.
    rule.advance(60_000);
    rule.fire_due();
    assert_eq!(count(&rule, "BookFlight", Intent::ElementTerminated), 1);
    assert_eq!(count(&rule, "CancelFlight", Intent::ElementActivating), 0);
    let (undo, _) = rule.element_events("Undo", Intent::ElementActivated)[0].clone();
    let (esp, _) = rule.element_events("OnTimeout", Intent::ElementActivated)[0].clone();
    // The handler runs beside the thrower, in the event subprocess.
    let handler_record = &rule.element_events("CancelHotel", Intent::ElementActivated)[0].1;
    assert_eq!(handler_record.flow_scope_key, esp.get());
    assert_eq!(count(&rule, "Undo", Intent::ElementCompleted), 0, "waits");

    complete_job(&mut rule, "CancelHotel");
    assert_eq!(
        subscription_steps(&rule),
        steps(&[
            (Intent::Created, "BookHotel"),
            (Intent::Triggered, "BookHotel"),
            (Intent::Completed, "BookHotel"),
        ])
    );
    let triggered = &subscriptions(&rule)[1].2;
    assert_eq!(triggered.throw_event_instance_key, undo.get());
    assert_eq!(triggered.compensation_handler_instance_key, -1);
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementCompleted), 1);
    assert_eq!(count(&rule, "Tools", Intent::ElementCompleted), 1);
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}

#[test]
fn activity_ref_in_an_event_subprocess_names_an_activity_of_the_ad_hoc_subprocess() {
    let mut rule = EngineRule::new();
    deploy(
        &mut rule,
        &bookings_with_undo_on_timeout(Some("BookFlight")),
    );
    let instance = rule.create("adhoc-esp-undo", json!({}));
    complete_job(&mut rule, "BookHotel");
    complete_job(&mut rule, "BookFlight");
    rule.advance(60_000);
    rule.fire_due();
    assert_eq!(count(&rule, "CancelHotel", Intent::ElementActivating), 0);
    complete_job(&mut rule, "CancelFlight");
    assert_eq!(count(&rule, "CancelFlight", Intent::ElementCompleted), 1);
    let flight: Vec<Intent> = subscriptions(&rule)
        .into_iter()
        .filter(|(_, _, s)| s.compensable_activity_id == "BookFlight")
        .map(|(_, intent, _)| intent)
        .collect();
    assert_eq!(
        flight,
        vec![Intent::Created, Intent::Triggered, Intent::Completed]
    );
    assert_eq!(state(&mut rule, instance), ProcessInstanceState::Completed);
    rule.assert_replay_matches();
}
