//! Compensation at deploy: boundary events find their handler through the association,
//! throw events their `activityRef`; what Zeebe 8.8 refuses is refused with the element
//! id and the reason.

use rill_engine::model::{ElementKind, ThrowEventDefinition, TriggerDefinition};

use super::*;

/// A Modeler-shaped process: `A` (compensable through `Booked` and `Undo`), then the
/// throw event `Compensate`; `{a}`, `{boundary}`, `{handler}`, `{throw}` and `{extra}`
/// are replaced to make it wrong in one way.
const TEMPLATE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="http://bpmn.io/schema/bpmn">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:task id="A"><bpmn:incoming>F1</bpmn:incoming><bpmn:outgoing>F2</bpmn:outgoing></bpmn:task>
    {boundary}
    {handler}
    <bpmn:intermediateThrowEvent id="Compensate"><bpmn:incoming>F2</bpmn:incoming><bpmn:outgoing>F3</bpmn:outgoing>{throw}</bpmn:intermediateThrowEvent>
    <bpmn:endEvent id="End"><bpmn:incoming>F3</bpmn:incoming></bpmn:endEvent>
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="A" />
    <bpmn:sequenceFlow id="F2" sourceRef="A" targetRef="Compensate" />
    <bpmn:sequenceFlow id="F3" sourceRef="Compensate" targetRef="End" />
    {extra}
  </bpmn:process>
</bpmn:definitions>"#;

const BOUNDARY: &str = r#"<bpmn:boundaryEvent id="Booked" attachedToRef="A"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>"#;
const HANDLER: &str = r#"<bpmn:serviceTask id="Undo" isForCompensation="true"><bpmn:extensionElements><zeebe:taskDefinition type="undo" /></bpmn:extensionElements></bpmn:serviceTask>"#;
const THROW: &str = "<bpmn:compensateEventDefinition />";
const ASSOCIATION: &str = r#"<bpmn:association id="As" associationDirection="One" sourceRef="Booked" targetRef="Undo" />"#;

fn model(boundary: &str, handler: &str, throw: &str, extra: &str) -> String {
    TEMPLATE
        .replace("{boundary}", boundary)
        .replace("{handler}", handler)
        .replace("{throw}", throw)
        .replace("{extra}", extra)
}

#[test]
fn the_fixtures_link_boundary_events_to_handlers_and_throw_events_to_activities() {
    let travel = parse_one("elements/compensation-travel.bpmn");
    assert!(travel.has_compensation);
    let ElementKind::BoundaryEvent {
        definition: TriggerDefinition::Compensation { handler },
        attached_to,
        ..
    } = el(&travel, "HotelBooked").kind
    else {
        panic!("HotelBooked is a compensation boundary event");
    };
    assert_eq!(handler, idx(&travel, "CancelHotel"));
    assert_eq!(attached_to, idx(&travel, "BookHotel"));
    assert!(el(&travel, "CancelHotel").for_compensation);
    assert!(!el(&travel, "BookHotel").for_compensation);
    assert_eq!(
        travel.compensation_boundary(idx(&travel, "BookFlight")),
        Some((idx(&travel, "FlightBooked"), idx(&travel, "CancelFlight")))
    );
    let refs = parse_one("elements/compensation-activity-ref.bpmn");
    assert!(matches!(
        el(&refs, "UndoStock").kind,
        ElementKind::IntermediateThrowEvent(ThrowEventDefinition::Compensation {
            activity: Some(a)
        }) if a == idx(&refs, "ReserveStock")
    ));
    assert!(matches!(
        el(&refs, "UndoRest").kind,
        ElementKind::EndEvent(ThrowEventDefinition::Compensation { activity: None })
    ));
    // From an event subprocess, the activity is in the scope it belongs to.
    let on_error = parse_one("elements/compensation-event-subprocess.bpmn");
    assert!(matches!(
        el(&on_error, "UndoBooking").kind,
        ElementKind::EndEvent(ThrowEventDefinition::Compensation { activity: Some(a) })
            if a == idx(&on_error, "BookHotel")
    ));
    for other in [
        "elements/compensation-nested.bpmn",
        "elements/compensation-nothing.bpmn",
        "elements/compensation-multi-instance.bpmn",
    ] {
        assert!(parse_one(other).has_compensation, "{other}");
    }
    // A throw event alone is fine: there is just never anything to compensate.
    let alone = parse_bpmn("alone.bpmn", model("", "", THROW, "").as_bytes()).unwrap();
    assert!(!alone[0].has_compensation);
}

#[test]
fn what_zeebe_refuses_is_refused_with_the_element_and_the_reason() {
    let cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "no association",
            model(BOUNDARY, HANDLER, THROW, ""),
            "Booked",
            "needs an association to its compensation handler",
        ),
        (
            "an outgoing flow on the boundary event",
            model(
                r#"<bpmn:boundaryEvent id="Booked" attachedToRef="A"><bpmn:outgoing>F9</bpmn:outgoing><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>"#,
                HANDLER,
                THROW,
                &format!(
                    r#"{ASSOCIATION}<bpmn:sequenceFlow id="F9" sourceRef="Booked" targetRef="End" />"#
                ),
            ),
            "Booked",
            "cannot have an outgoing sequence flow",
        ),
        (
            "a handler that is not marked",
            model(
                BOUNDARY,
                r#"<bpmn:serviceTask id="Undo"><bpmn:extensionElements><zeebe:taskDefinition type="undo" /></bpmn:extensionElements></bpmn:serviceTask>"#,
                THROW,
                ASSOCIATION,
            ),
            "Booked",
            "set isForCompensation=\"true\" on it",
        ),
        (
            "a handler with an incoming flow",
            model(
                BOUNDARY,
                r#"<bpmn:task id="Undo" isForCompensation="true"><bpmn:incoming>F9</bpmn:incoming></bpmn:task>"#,
                THROW,
                &format!(
                    r#"{ASSOCIATION}<bpmn:sequenceFlow id="F9" sourceRef="Start" targetRef="Undo" />"#
                ),
            ),
            "Undo",
            "a compensation handler cannot have an incoming sequence flow",
        ),
        (
            "a gateway as handler",
            model(
                BOUNDARY,
                r#"<bpmn:exclusiveGateway id="Undo" isForCompensation="true" />"#,
                THROW,
                ASSOCIATION,
            ),
            "Undo",
            "cannot be a compensation handler",
        ),
        (
            "waitForCompletion false",
            model(
                BOUNDARY,
                HANDLER,
                r#"<bpmn:compensateEventDefinition waitForCompletion="false" />"#,
                ASSOCIATION,
            ),
            "Compensate",
            "waitForCompletion=\"false\"",
        ),
        (
            "an activityRef that does not exist",
            model(
                BOUNDARY,
                HANDLER,
                r#"<bpmn:compensateEventDefinition activityRef="Ghost" />"#,
                ASSOCIATION,
            ),
            "Compensate",
            "the activity to compensate 'Ghost' (activityRef) does not exist",
        ),
        (
            "an activityRef without a compensation boundary event",
            model(
                BOUNDARY,
                HANDLER,
                r#"<bpmn:compensateEventDefinition activityRef="End" />"#,
                ASSOCIATION,
            ),
            "Compensate",
            "must have a compensation boundary event or be a subprocess",
        ),
        (
            "two compensation boundary events",
            model(
                &format!(
                    r#"{BOUNDARY}<bpmn:boundaryEvent id="Again" attachedToRef="A"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>"#
                ),
                HANDLER,
                THROW,
                &format!(
                    r#"{ASSOCIATION}<bpmn:association id="As2" sourceRef="Again" targetRef="Undo" />"#
                ),
            ),
            "Again",
            "already has the compensation boundary event 'Booked'",
        ),
        (
            "a compensation event subprocess",
            model(
                "",
                "",
                THROW,
                r#"<bpmn:subProcess id="Esp" triggeredByEvent="true"><bpmn:startEvent id="OnCompensate"><bpmn:compensateEventDefinition /></bpmn:startEvent></bpmn:subProcess>"#,
            ),
            "OnCompensate",
            "an event subprocess started by a compensateEventDefinition is not supported",
        ),
        (
            "a compensation catch event in the flow",
            model(
                "",
                "",
                THROW,
                r#"<bpmn:intermediateCatchEvent id="Catch"><bpmn:compensateEventDefinition /></bpmn:intermediateCatchEvent>"#,
            ),
            "Catch",
            "an intermediate catch event with a compensateEventDefinition is not supported",
        ),
    ];
    let mut failures = Vec::new();
    for (what, xml, element, fragment) in cases {
        match parse_bpmn("compensation.bpmn", xml.as_bytes()) {
            Ok(_) => failures.push(format!("{what}: deployed")),
            Err(error) => {
                let found = error.problems.iter().any(|p| {
                    p.element_id.as_deref() == Some(element) && p.message.contains(fragment)
                });
                if !found {
                    failures.push(format!(
                        "{what}: expected '{fragment}' on {element}: {error}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_activity_ref_must_be_in_the_scope_of_the_throw_event() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="D" targetNamespace="x">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:task id="A"><bpmn:incoming>F1</bpmn:incoming><bpmn:outgoing>F2</bpmn:outgoing></bpmn:task>
    <bpmn:boundaryEvent id="Booked" attachedToRef="A"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
    <bpmn:task id="Undo" isForCompensation="true" />
    <bpmn:association id="As" sourceRef="Booked" targetRef="Undo" />
    <bpmn:subProcess id="Sub"><bpmn:incoming>F2</bpmn:incoming>
      <bpmn:startEvent id="SubStart"><bpmn:outgoing>S1</bpmn:outgoing></bpmn:startEvent>
      <bpmn:endEvent id="SubEnd"><bpmn:incoming>S1</bpmn:incoming><bpmn:compensateEventDefinition activityRef="A" /></bpmn:endEvent>
      <bpmn:sequenceFlow id="S1" sourceRef="SubStart" targetRef="SubEnd" />
    </bpmn:subProcess>
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="A" />
    <bpmn:sequenceFlow id="F2" sourceRef="A" targetRef="Sub" />
  </bpmn:process>
</bpmn:definitions>"#;
    let error = parse_bpmn("scope.bpmn", xml.as_bytes()).unwrap_err();
    assert!(
        error
            .problems
            .iter()
            .any(|p| p.element_id.as_deref() == Some("SubEnd")
                && p.message
                    .contains("must be in the same scope as the compensation throw event")),
        "{error}"
    );
}

#[test]
fn compensation_in_and_on_an_ad_hoc_subprocess_deploys_and_handlers_are_not_offered() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="D" targetNamespace="x">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:startEvent id="Start"><bpmn:outgoing>F1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:adHocSubProcess id="Tools"><bpmn:incoming>F1</bpmn:incoming><bpmn:outgoing>F2</bpmn:outgoing>
      <bpmn:task id="A"><bpmn:outgoing>S1</bpmn:outgoing></bpmn:task>
      <bpmn:boundaryEvent id="Booked" attachedToRef="A"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
      <bpmn:task id="Undo" isForCompensation="true" />
      <bpmn:association id="As" sourceRef="Booked" targetRef="Undo" />
      <bpmn:intermediateThrowEvent id="UndoA"><bpmn:incoming>S1</bpmn:incoming><bpmn:compensateEventDefinition activityRef="A" /></bpmn:intermediateThrowEvent>
      <bpmn:intermediateThrowEvent id="UndoAll"><bpmn:compensateEventDefinition /></bpmn:intermediateThrowEvent>
      <bpmn:sequenceFlow id="S1" sourceRef="A" targetRef="UndoA" />
    </bpmn:adHocSubProcess>
    <bpmn:boundaryEvent id="ToolsDone" attachedToRef="Tools"><bpmn:compensateEventDefinition /></bpmn:boundaryEvent>
    <bpmn:adHocSubProcess id="UndoTools" isForCompensation="true"><bpmn:task id="Refund" /></bpmn:adHocSubProcess>
    <bpmn:association id="As2" sourceRef="ToolsDone" targetRef="UndoTools" />
    <bpmn:endEvent id="End"><bpmn:incoming>F2</bpmn:incoming><bpmn:compensateEventDefinition activityRef="Tools" /></bpmn:endEvent>
    <bpmn:sequenceFlow id="F1" sourceRef="Start" targetRef="Tools" />
    <bpmn:sequenceFlow id="F2" sourceRef="Tools" targetRef="End" />
  </bpmn:process>
</bpmn:definitions>"#;
    let models = parse_bpmn("ad-hoc.bpmn", xml.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let model = &models[0];
    assert!(model.has_compensation);
    let ElementKind::AdHocSubProcess(definition) = &el(model, "Tools").kind else {
        panic!("Tools is an ad-hoc subprocess");
    };
    // The handler and the boundary event are not offered; the unconnected thrower is.
    assert_eq!(ids(model, &definition.activatable), ["A", "UndoAll"]);
    assert_eq!(
        model.compensation_boundary(idx(model, "A")),
        Some((idx(model, "Booked"), idx(model, "Undo")))
    );
    assert_eq!(
        model.compensation_boundary(idx(model, "Tools")),
        Some((idx(model, "ToolsDone"), idx(model, "UndoTools")))
    );
    assert!(el(model, "UndoTools").for_compensation);
    let ElementKind::EndEvent(ThrowEventDefinition::Compensation { activity }) =
        &el(model, "End").kind
    else {
        panic!("End is a compensation end event");
    };
    assert_eq!(*activity, Some(idx(model, "Tools")));
}
